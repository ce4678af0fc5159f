//! TCP proxies between the clients and the server: one per client and server address, so a network
//! fault can hit one client (the holder) or all of them, and a failover can re-point every client at
//! once. Each client is given its proxies' addresses instead of the server's.

use std::net::SocketAddr;

use lockbench_servers::{Direction, Fault, Proxy};

use crate::backends::{EndpointAddrs, ServerKind};
use crate::kinds::ServerKindExt;

/// Which way a proxy fault acts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Directions {
    /// Client → server (requests).
    Upstream,
    /// Server → client (replies, events).
    Downstream,
    /// Both.
    Both,
}

impl std::fmt::Display for Directions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Directions::Upstream => "upstream",
            Directions::Downstream => "downstream",
            Directions::Both => "both",
        })
    }
}

/// Parses a direction as written.
pub(crate) fn parse_directions(text: &str) -> Result<Directions, String> {
    match text.trim() {
        "upstream" => Ok(Directions::Upstream),
        "downstream" => Ok(Directions::Downstream),
        "both" => Ok(Directions::Both),
        other => Err(format!(
            "expected upstream, downstream or both, got {other:?}"
        )),
    }
}

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
    match kind.server() {
        Some(server) => (server.proxied_sockets)(base),
        None => Err(format!(
            "no {} address to put a proxy in front of",
            kind.name()
        )),
    }
}

/// `base` with the `kind` addresses replaced by `proxies` (same order), keeping what surrounds them (a
/// Redis URL's credentials and database, a ZooKeeper chroot).
fn rewrite(kind: ServerKind, base: &EndpointAddrs, proxies: &[SocketAddr]) -> EndpointAddrs {
    let mut out = base.clone();
    if let Some(server) = kind.server() {
        (server.via_proxies)(&mut out, proxies);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kinds::address::{address_via, redis_url_via};

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
            postgres: Some("postgres://app:pw@127.0.0.1:3/db?sslmode=disable".into()),
            mysql: Some("mysql://app:pw@127.0.0.1:4/db?ca=/c.pem".into()),
            ..EndpointAddrs::default()
        };
        let postgres = rewrite(ServerKind::Postgres, &base, &[p1]);
        assert_eq!(
            postgres.postgres.as_deref(),
            Some("postgres://app:pw@127.0.0.1:9001/db?sslmode=disable")
        );
        let mysql = rewrite(ServerKind::Mysql, &base, &[p2]);
        assert_eq!(
            mysql.mysql.as_deref(),
            Some("mysql://app:pw@127.0.0.1:9002/db?ca=/c.pem")
        );
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
