//! `zookeeper`: the ephemeral-sequential lock recipe, with the session as the lease.
