//! Servers a case starts for itself because its fault destroys them ([`Topology`]), started through
//! the strategy's kind: each kind offers its set-ups (a primary with a replica, a consensus cluster, independent
//! nodes...) in its entry ([`CaseStarts`]) and builds them in its own `kinds/<kind>/case_servers.rs`.
//! What every set-up shares lives here: starting the one a case's faults name, pointing the
//! clients' proxies at a promoted replica, and where the case's server cost is read. Dropped with
//! the case.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use super::proxies::ClientProxies;
use crate::backends::ServerKind;
use crate::backends::stats::StatsSource;
use crate::kinds::{self, CaseServers, CaseStarts, FailoverReport, ServerKindExt};
use lockbench_servers::Durability;

/// A server set-up a case starts for itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Topology {
    /// A primary with one asynchronous replica: Redis or PostgreSQL, whichever the strategy uses.
    Pair,
    /// A Redis primary and replica watched by 3 Sentinels.
    RedisSentinel,
    /// A Redis Cluster of 3 masters with one replica each.
    RedisCluster,
    /// A 3-member etcd cluster or 3-node ZooKeeper ensemble (whichever the strategy uses).
    Cluster,
    /// Redlock's 5 independent Redis nodes, optionally one (index) with a wall clock running
    /// `rate` times as fast.
    RedisNodes {
        /// `(node, rate)`.
        fake_clock: Option<(usize, u32)>,
    },
    /// One restartable Redis server with this durability.
    RedisNode(Durability),
    /// One PostgreSQL or MariaDB (whichever the strategy uses) in a network namespace of its own,
    /// with short TCP keepalive settings.
    SqlNamespace,
}

impl Topology {
    /// How long a kind offering `starts` takes to start this set-up for a case (the suite's plan
    /// adds it to each such case); `None` where the kind does not offer it.
    pub(crate) fn takes(self, starts: &CaseStarts) -> Option<Duration> {
        match self {
            Topology::Pair => starts.pair.map(|s| s.takes),
            Topology::RedisSentinel => starts.sentinels.map(|s| s.takes),
            Topology::RedisCluster => starts.sharded.map(|s| s.takes),
            Topology::Cluster => starts.cluster.map(|s| s.takes),
            Topology::RedisNodes { .. } => starts.nodes.map(|s| s.takes),
            Topology::RedisNode(_) => starts.restartable.map(|s| s.takes),
            Topology::SqlNamespace => starts.namespaced.map(|s| s.takes),
        }
    }

    /// The server kinds this topology replaces the run's shared servers for: those that offer it.
    pub(crate) fn replaces(self) -> Vec<ServerKind> {
        kinds::all()
            .filter(|k| self.takes(&k.faults().own).is_some())
            .collect()
    }
}

/// Starts the set-up `topology` of the strategy's `kind`, the replica of a pair replicating with a
/// `replication_lag`. Blocking (seconds).
pub(crate) fn start(
    topology: Topology,
    kind: ServerKind,
    replication_lag: Duration,
) -> Result<Arc<dyn CaseServers>, String> {
    let own = kind.faults().own;
    let none = |what: &str| format!("no {what} of {} servers", kind.name());
    let started = match topology {
        Topology::Pair => {
            (own.pair.ok_or_else(|| none("primary + replica"))?.start)(replication_lag)
        }
        Topology::RedisSentinel => (own.sentinels.ok_or_else(|| none("Sentinels"))?.start)(()),
        Topology::RedisCluster => (own.sharded.ok_or_else(|| none("sharded cluster"))?.start)(()),
        Topology::Cluster => (own.cluster.ok_or_else(|| none("cluster"))?.start)(()),
        Topology::RedisNodes { fake_clock } => {
            (own.nodes.ok_or_else(|| none("independent nodes"))?.start)(fake_clock)
        }
        Topology::RedisNode(durability) => (own
            .restartable
            .ok_or_else(|| none("restartable server"))?
            .start)(durability),
        Topology::SqlNamespace => (own
            .namespaced
            .ok_or_else(|| none("namespaced server"))?
            .start)(()),
    };
    started.map(Arc::from)
}

/// Kills the primary, promotes the replica and points every client proxy at it, as an automatic
/// failover behind a virtual IP or a DNS name does: the proxies send new connections to the replica
/// first (a Redis client reconnecting in the few milliseconds before the promotion gets `READONLY`
/// errors and retries; a PostgreSQL one, read-only transaction errors), then the primary dies, the
/// replica is promoted and the clients' old connections are reset. Blocking.
pub(crate) fn failover(
    own: &dyn CaseServers,
    proxies: Option<&ClientProxies>,
) -> Result<FailoverReport, String> {
    let redirect = |replica: SocketAddr| {
        for proxy in proxies.iter().flat_map(|p| p.all()) {
            proxy.set_upstream(replica);
        }
    };
    let report = own.fail_over(&redirect)?;
    for proxy in proxies.iter().flat_map(|p| p.all()) {
        proxy.reset_all();
    }
    Ok(report)
}

/// Where the case's server cost is read ([`CaseServers::stats_at`]).
pub(crate) fn stats_source(own: &dyn CaseServers) -> Option<StatsSource> {
    own.stats_at()
        .map(|(socket, pid)| StatsSource::new(own.kind(), socket, pid))
}
