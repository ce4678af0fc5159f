//! `etcd-lease`: a lease kept alive over the keep-alive stream and a revision-ordered lock.
