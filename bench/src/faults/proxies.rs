//! TCP proxies between the clients and the server: one per client and server address, so a network
//! fault can hit one client (the holder) or all of them, and a failover can re-point every client at
//! once. Each client is given its proxies' addresses instead of the server's.

use std::net::SocketAddr;

use lockbench_servers::{Direction, Fault, Proxy};

use crate::backends::{EndpointAddrs, ServerKind, address};
use crate::workload::faults::Directions;

/// Every client's proxies, in front of the servers of one kind.
#[derive(Debug)]
pub(crate) struct ClientProxies {
    clients: Vec<Vec<Proxy>>,
}

impl ClientProxies {
    /// Starts a proxy per client and per `kind` server address in `base`; returns them and each
    /// client's endpoints (the proxies' addresses in place of the servers').
    pub(crate) fn start(
        clients: u32,
        kind: ServerKind,
        base: &EndpointAddrs,
    ) -> Result<(Self, Vec<EndpointAddrs>), String> {
        let sockets = server_sockets(kind, base)?;
        let mut all = Vec::new();
        let mut endpoints = Vec::new();
        for _ in 0..clients {
            let proxies = sockets
                .iter()
                .map(|s| Proxy::start(*s).map_err(|e| format!("cannot start a proxy: {e}")))
                .collect::<Result<Vec<_>, _>>()?;
            let addrs: Vec<SocketAddr> = proxies.iter().map(Proxy::addr).collect();
            endpoints.push(rewrite(kind, base, &addrs));
            all.push(proxies);
        }
        Ok((ClientProxies { clients: all }, endpoints))
    }

    /// The proxies of `client` (none for an unknown index).
    pub(crate) fn of(&self, client: u32) -> &[Proxy] {
        self.clients
            .get(client as usize)
            .map(Vec::as_slice)
            .unwrap_or_default()
    }

    /// Every proxy.
    pub(crate) fn all(&self) -> impl Iterator<Item = &Proxy> {
        self.clients.iter().flatten()
    }
}

/// Sets `fault` on `directions` of `proxy`.
pub(crate) fn set(proxy: &Proxy, directions: Directions, fault: Fault) {
    match directions {
        Directions::Upstream => proxy.set(Direction::Upstream, fault),
        Directions::Downstream => proxy.set(Direction::Downstream, fault),
        Directions::Both => proxy.set_both(fault),
    }
}

/// The server sockets of `kind` in `base`, in order.
fn server_sockets(kind: ServerKind, base: &EndpointAddrs) -> Result<Vec<SocketAddr>, String> {
    let missing = || format!("no {} address to put a proxy in front of", kind.name());
    match kind {
        ServerKind::Redis => {
            let url = base.redis.as_deref().ok_or_else(missing)?;
            if address::is_sentinel(url) {
                return Err(
                    "a proxy cannot stand between clients and the primary their Sentinels \
                            name: network faults need a direct Redis address"
                        .into(),
                );
            }
            if address::is_cluster(url) {
                return Err(
                    "a proxy cannot stand between clients and a cluster's nodes (MOVED answers \
                     name the nodes themselves): network faults need a direct Redis address"
                        .into(),
                );
            }
            Ok(vec![address::redis_socket(url)?])
        }
        ServerKind::RedisNodes if !base.redis_nodes.is_empty() => base
            .redis_nodes
            .iter()
            .map(|url| address::redis_socket(url))
            .collect(),
        ServerKind::Etcd if !base.etcd.is_empty() => address::etcd_sockets(&base.etcd.join(",")),
        ServerKind::ZooKeeper => {
            address::zk_sockets(base.zookeeper.as_deref().ok_or_else(missing)?)
        }
        _ => Err(missing()),
    }
}

/// `base` with the `kind` addresses replaced by `proxies` (same order), keeping what surrounds them (a
/// Redis URL's credentials and database, a ZooKeeper chroot).
fn rewrite(kind: ServerKind, base: &EndpointAddrs, proxies: &[SocketAddr]) -> EndpointAddrs {
    let mut out = base.clone();
    match kind {
        ServerKind::Redis => {
            if let (Some(url), Some(proxy)) = (&base.redis, proxies.first()) {
                out.redis = Some(redis_url_via(url, *proxy));
            }
        }
        ServerKind::RedisNodes => {
            out.redis_nodes = base
                .redis_nodes
                .iter()
                .zip(proxies)
                .map(|(url, proxy)| redis_url_via(url, *proxy))
                .collect();
        }
        ServerKind::Etcd => {
            out.etcd = base
                .etcd
                .iter()
                .zip(proxies)
                .map(|(endpoint, proxy)| {
                    let endpoint = if endpoint.contains("://") {
                        endpoint.clone()
                    } else {
                        format!("http://{endpoint}")
                    };
                    address_via(&endpoint, *proxy)
                })
                .collect();
        }
        ServerKind::ZooKeeper => {
            if let Some(connect) = &base.zookeeper {
                // Digest credentials before the hosts, a chroot after them.
                let (credentials, hosts) = match connect.rfind('@') {
                    Some(at) => connect.split_at(at + 1),
                    None => ("", connect.as_str()),
                };
                let chroot = hosts.find('/').map(|i| &hosts[i..]).unwrap_or("");
                let proxies: Vec<String> = proxies.iter().map(SocketAddr::to_string).collect();
                out.zookeeper = Some(format!("{credentials}{}{chroot}", proxies.join(",")));
            }
        }
        _ => {}
    }
    out
}

/// A Redis URL (`redis://[user:pass@]host:port[/db][?query]` or `host:port`) with its host and port
/// replaced.
fn redis_url_via(url: &str, proxy: SocketAddr) -> String {
    let url = if url.contains("://") {
        url.to_owned()
    } else {
        format!("redis://{url}")
    };
    let via = address_via(&url, proxy);
    // redis-rs wants a path; `host:port` alone means database 0.
    let Some((scheme, rest)) = via.split_once("://") else {
        return via;
    };
    let (before_query, query) = match rest.split_once('?') {
        Some((before, query)) => (before, Some(query)),
        None => (rest, None),
    };
    match (before_query.contains('/'), query) {
        (true, _) => via,
        (false, Some(query)) => format!("{scheme}://{before_query}/?{query}"),
        (false, None) => format!("{scheme}://{rest}/"),
    }
}

/// One address (`[scheme://][user:pass@]host:port[/path][?query]`) with its host and port replaced by
/// `proxy`, keeping the scheme, credentials, path and query (TLS files): a proxy on 127.0.0.1 still
/// matches a certificate issued for 127.0.0.1.
fn address_via(address: &str, proxy: SocketAddr) -> String {
    let (scheme, rest) = match address.find("://") {
        Some(i) => address.split_at(i + 3),
        None => ("", address),
    };
    let end = rest.find(['/', '?']).unwrap_or(rest.len());
    let credentials = rest[..end].rfind('@').map(|at| &rest[..=at]).unwrap_or("");
    format!("{scheme}{credentials}{proxy}{}", &rest[end..])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_are_rewritten_in_place() {
        let p1: SocketAddr = "127.0.0.1:9001".parse().expect("addr");
        let p2: SocketAddr = "127.0.0.1:9002".parse().expect("addr");
        assert_eq!(
            redis_url_via("redis://u:pw@127.0.0.1:6379/3", p1),
            "redis://u:pw@127.0.0.1:9001/3"
        );
        assert_eq!(
            redis_url_via("127.0.0.1:6379", p1),
            "redis://127.0.0.1:9001/"
        );
        assert_eq!(
            redis_url_via("rediss://u:pw@127.0.0.1:6379?ca=/tmp/ca.pem", p1),
            "rediss://u:pw@127.0.0.1:9001/?ca=/tmp/ca.pem"
        );
        assert_eq!(
            address_via("https://root:pw@127.0.0.1:2379?ca=/c.pem", p2),
            "https://root:pw@127.0.0.1:9002?ca=/c.pem"
        );
        let base = EndpointAddrs {
            redis: None,
            redis_nodes: vec!["redis://127.0.0.1:1/".into(), "redis://127.0.0.1:2/".into()],
            etcd: vec!["http://127.0.0.1:1".into(), "http://127.0.0.1:2".into()],
            zookeeper: Some("127.0.0.1:1,127.0.0.1:2/locks".into()),
            redis_replicated: false,
            redis_replicas: Vec::new(),
        };
        let etcd = rewrite(ServerKind::Etcd, &base, &[p1, p2]);
        assert_eq!(
            etcd.etcd,
            ["http://127.0.0.1:9001", "http://127.0.0.1:9002"]
        );
        assert_eq!(etcd.zookeeper, base.zookeeper, "other servers untouched");
        let nodes = rewrite(ServerKind::RedisNodes, &base, &[p1, p2]);
        assert_eq!(
            nodes.redis_nodes,
            ["redis://127.0.0.1:9001/", "redis://127.0.0.1:9002/"]
        );
        let zk = rewrite(ServerKind::ZooKeeper, &base, &[p1, p2]);
        assert_eq!(
            zk.zookeeper.as_deref(),
            Some("127.0.0.1:9001,127.0.0.1:9002/locks")
        );
        let secured = EndpointAddrs {
            zookeeper: Some("app:pw@127.0.0.1:1/locks".into()),
            ..base.clone()
        };
        let zk = rewrite(ServerKind::ZooKeeper, &secured, &[p1]);
        assert_eq!(zk.zookeeper.as_deref(), Some("app:pw@127.0.0.1:9001/locks"));
        assert_eq!(
            server_sockets(ServerKind::ZooKeeper, &base)
                .expect("sockets")
                .len(),
            2
        );
        assert!(server_sockets(ServerKind::Redis, &base).is_err());
    }
}
