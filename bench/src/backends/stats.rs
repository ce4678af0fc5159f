//! Server cost: counters read from a server before and after a case (each kind reads its own, in
//! its `kinds/<kind>/counters.rs`: Redis `INFO commandstats` and `INFO cpu`, etcd `/metrics`,
//! ZooKeeper `mntr`, PostgreSQL `pg_stat_statements`), plus the CPU time of servers lockbench
//! started. A strategy gets this for free once its registry entry names its server.

use std::collections::BTreeMap;
use std::net::SocketAddr;

use lockbench_reports::model::ServerCost;
use lockers::address::Credentials;

use super::{Backend, ServerKind};
use crate::kinds::ServerKindExt;
pub use crate::kinds::counters::StatsSnapshot;

/// Where a server's counters are read: cheap to clone, so the blocking reads can run on another
/// thread.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatsSource {
    kind: ServerKind,
    socket: SocketAddr,
    pid: Option<u32>,
    /// The ACL user Redis counters are read as.
    auth: Option<Credentials>,
    /// The server speaks TLS only: the plain probes cannot read it, so there are no counters.
    tls: bool,
    /// Redlock's other independent masters (`RedisNodes`), summed with the first.
    more_nodes: Vec<(SocketAddr, Option<u32>)>,
}

impl Backend {
    /// Where its counters are read.
    pub fn stats_source(&self) -> Option<StatsSource> {
        Some(StatsSource {
            kind: self.kind(),
            socket: self.socket()?,
            pid: self.pid(),
            auth: self.credentials(),
            tls: self.is_tls(),
            more_nodes: self.nodes().into_iter().skip(1).collect(),
        })
    }
}

impl StatsSource {
    /// The counters of the `kind` server at `socket`; with `pid`, its CPU time comes from `/proc`.
    pub fn new(kind: ServerKind, socket: SocketAddr, pid: Option<u32>) -> Self {
        StatsSource {
            kind,
            socket,
            pid,
            auth: None,
            tls: false,
            more_nodes: Vec::new(),
        }
    }

    /// Which server.
    pub fn kind(&self) -> ServerKind {
        self.kind
    }

    /// Its address.
    pub fn socket(&self) -> SocketAddr {
        self.socket
    }

    /// The user and password probes authenticate with (Redis ACL users).
    pub fn auth(&self) -> Option<(&str, &str)> {
        self.auth
            .as_ref()
            .map(|c| (c.user.as_str(), c.password.as_str()))
    }

    /// Its address and those of the other nodes it sums (Redlock's masters).
    pub fn sockets(&self) -> Vec<SocketAddr> {
        std::iter::once(self.socket)
            .chain(self.more_nodes.iter().map(|&(socket, _)| socket))
            .collect()
    }

    /// Whether the server speaks TLS only (plain probes cannot read it).
    pub fn is_tls(&self) -> bool {
        self.tls
    }

    /// Reads the server's counters (blocking; a few milliseconds) as its kind's entry says
    /// ([`ServerEntry::counters`](crate::kinds::ServerEntry)). `None` if it does not answer, has no
    /// counters, or speaks TLS only (not read: the figures are reported as not available).
    pub fn snapshot(&self) -> Option<StatsSnapshot> {
        if self.tls {
            return None;
        }
        let server = self.kind.server()?;
        let nodes: Vec<(SocketAddr, Option<u32>)> = std::iter::once((self.socket, self.pid))
            .chain(self.more_nodes.iter().copied())
            .collect();
        (server.counters)(&nodes, self.auth())
    }

    /// [`snapshot`](Self::snapshot) on a blocking thread.
    pub async fn snapshot_async(&self) -> Option<StatsSnapshot> {
        let source = self.clone();
        tokio::task::spawn_blocking(move || source.snapshot())
            .await
            .ok()
            .flatten()
    }
}

/// The cost of a case: `after - before`, over `seconds`.
pub fn delta(
    kind: ServerKind,
    before: &StatsSnapshot,
    after: &StatsSnapshot,
    seconds: f64,
) -> ServerCost {
    let by_command: BTreeMap<String, u64> = after
        .requests
        .iter()
        .map(|(name, n)| {
            (
                name.clone(),
                n.saturating_sub(before.requests.get(name).copied().unwrap_or(0)),
            )
        })
        .filter(|(_, n)| *n > 0)
        .collect();
    let requests = by_command.values().sum();
    ServerCost {
        client_requests: before
            .client_requests
            .zip(after.client_requests)
            .map(|(b, a)| a.saturating_sub(b)),
        renew_calls: before
            .renew_calls
            .zip(after.renew_calls)
            .map(|(b, a)| a.saturating_sub(b)),
        scripts: BTreeMap::new(),
        kind: kind.name().to_owned(),
        cpu_seconds: before
            .cpu_seconds
            .zip(after.cpu_seconds)
            .map(|(b, a)| (a - b).max(0.0)),
        requests,
        requests_per_s: if seconds > 0.0 {
            requests as f64 / seconds
        } else {
            0.0
        },
        by_command,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deltas_drop_unchanged_commands() {
        let before = StatsSnapshot {
            requests: BTreeMap::from([("get".into(), 5), ("set".into(), 1)]),
            client_requests: Some(3),
            renew_calls: None,
            cpu_seconds: Some(1.0),
        };
        let after = StatsSnapshot {
            requests: BTreeMap::from([("get".into(), 15), ("set".into(), 1), ("del".into(), 2)]),
            client_requests: Some(7),
            renew_calls: None,
            cpu_seconds: Some(1.5),
        };
        let cost = delta(ServerKind::Redis, &before, &after, 2.0);
        assert_eq!(cost.requests, 12);
        assert_eq!(cost.requests_per_s, 6.0);
        assert_eq!(cost.by_command.len(), 2);
        assert_eq!(cost.cpu_seconds, Some(0.5));
        assert_eq!(cost.client_requests, Some(4));
    }
}
