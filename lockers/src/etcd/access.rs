//! How an `etcd-lease` client reaches its cluster: endpoints as users write them
//! (`https://user:pass@host:2379?ca=ca.pem[&cert=c.pem&key=c.key]`, see [`crate::address`]) become the
//! bare endpoints and the connect options (user/password authentication, TLS through rustls).
//!
//! All endpoints of one cluster share one user and one set of TLS files: they may be written on every
//! endpoint or on one; two different ones are a `Config` error. `https://` needs `ca=` (no system roots
//! are built in).

use std::time::Duration;

use etcd_client::{Certificate, ConnectOptions, Identity, TlsOptions};

use crate::address::{self, Credentials, TlsFiles};
use crate::error::LockError;

/// The endpoints without credentials or TLS parameters, and the options that carry them.
pub(super) fn connect_options(
    endpoints: &[String],
    timeout: Duration,
) -> Result<(Vec<String>, ConnectOptions), LockError> {
    let mut bare = Vec::with_capacity(endpoints.len());
    let mut credentials: Option<Credentials> = None;
    let mut tls = TlsFiles::default();
    for endpoint in endpoints {
        let parts = address::split(endpoint)?;
        let conflict = || {
            LockError::Config(format!(
                "etcd endpoints {:?}: every endpoint must use the same user and TLS files",
                address::redact(&endpoints.join(","))
            ))
        };
        if let Some(given) = parts.credentials {
            match &credentials {
                Some(known) if *known != given => return Err(conflict()),
                _ => credentials = Some(given),
            }
        }
        if !parts.tls.is_empty() {
            if !tls.is_empty() && tls != parts.tls {
                return Err(conflict());
            }
            tls = parts.tls;
        }
        bare.push(parts.bare);
    }
    let mut options = ConnectOptions::new().with_connect_timeout(timeout);
    if let Some(credentials) = credentials {
        options = options.with_user(credentials.user, credentials.password);
    }
    if !tls.is_empty() {
        if bare.iter().any(|e| !e.starts_with("https://")) {
            return Err(LockError::Config(
                "etcd endpoints: ca=, cert= and key= need https:// endpoints".into(),
            ));
        }
        let mut config = TlsOptions::new();
        if let Some(ca) = tls.read_ca()? {
            config = config.ca_certificate(Certificate::from_pem(ca));
        }
        if let Some(identity) = tls.read_client()? {
            config = config.identity(Identity::from_pem(identity.cert, identity.key));
        }
        options = options.with_tls(config);
    }
    Ok((bare, options))
}
