//! Cluster addresses: `redis+cluster://[user:pass@]host:port[,host:port…]` and its TLS form
//! `rediss+cluster://…[?ca=…]`, parsed into the seeds to ask first, the credentials and the TLS files.

use crate::address::{self, Credentials, TlsFiles};
use crate::error::LockError;

/// The scheme of a cluster address.
pub(crate) const SCHEME: &str = "redis+cluster://";
/// The scheme of a cluster address over TLS.
pub(crate) const TLS_SCHEME: &str = "rediss+cluster://";

/// Whether `url` names a Redis Cluster.
pub(crate) fn is_cluster(url: &str) -> bool {
    url.starts_with(SCHEME) || url.starts_with(TLS_SCHEME)
}
/// The port a node listens on unless the address says otherwise.
const DEFAULT_PORT: u16 = 6379;

/// A parsed cluster address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ClusterAddress {
    /// `host:port` of each seed, in the order to ask them.
    pub seeds: Vec<String>,
    /// The user and password every node is logged in to with.
    pub credentials: Option<Credentials>,
    /// TLS to every node (`rediss+cluster://`), with these files (none: the system's roots).
    pub tls: Option<TlsFiles>,
}

impl ClusterAddress {
    /// Parses `url` if it is a cluster address (`None` for any other scheme).
    pub(crate) fn parse(url: &str) -> Result<Option<Self>, LockError> {
        if !is_cluster(url) {
            return Ok(None);
        }
        let shown = address::redact(url);
        let bad = |why: &str| LockError::Config(format!("cluster address {shown:?}: {why}"));
        let parts = address::split(url)?;
        let over_tls = url.starts_with(TLS_SCHEME);
        if !over_tls && !parts.tls.is_empty() {
            return Err(bad("ca=, cert= and key= need a rediss+cluster:// address"));
        }
        let scheme = if over_tls { TLS_SCHEME } else { SCHEME };
        let rest = &parts.bare[scheme.len()..];
        if rest.contains('?') {
            return Err(bad("unknown query parameters"));
        }
        let hosts = match rest.split_once('/') {
            None => rest,
            Some((hosts, "" | "0")) => hosts,
            Some(_) => return Err(bad("a Redis Cluster has only database 0")),
        };
        let seeds = hosts
            .split(',')
            .map(|host| match host.rsplit_once(':') {
                Some((name, port)) if !name.is_empty() && port.parse::<u16>().is_ok() => {
                    Ok(host.to_owned())
                }
                None if !host.is_empty() => Ok(format!("{host}:{DEFAULT_PORT}")),
                _ => Err(bad("each node must be host or host:port")),
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Some(ClusterAddress {
            seeds,
            credentials: parts.credentials,
            tls: over_tls.then_some(parts.tls),
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cluster_addresses_parse() {
        let parsed = ClusterAddress::parse("redis+cluster://app:p%40w@10.0.0.1:7000,h2/")
            .expect("valid")
            .expect("a cluster address");
        assert_eq!(parsed.seeds, ["10.0.0.1:7000", "h2:6379"]);
        assert_eq!(parsed.credentials.expect("credentials").password, "p@w");
        assert!(
            ClusterAddress::parse("redis://h:1")
                .expect("other")
                .is_none()
        );
        let tls = ClusterAddress::parse("rediss+cluster://h1:7000,h2:7001?ca=/tmp/ca.pem")
            .expect("valid")
            .expect("a cluster address");
        assert_eq!(tls.seeds, ["h1:7000", "h2:7001"]);
        assert_eq!(
            tls.tls.and_then(|files| files.ca),
            Some(std::path::PathBuf::from("/tmp/ca.pem"))
        );
        for bad in [
            "redis+cluster://u:secret@h:1/3",
            "redis+cluster://u:secret@h:x",
            "redis+cluster://u:secret@h:1?ca=/tmp/ca.pem",
            "redis+cluster://u:secret@h:1,",
        ] {
            let error = ClusterAddress::parse(bad).expect_err(bad).to_string();
            assert!(!error.contains("secret"), "{error}");
        }
    }
}
