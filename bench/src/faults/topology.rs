//! Servers a case starts for itself because its fault destroys them: a Redis primary with an
//! asynchronous replica (for `failover`; optionally with a delayed replication link, as across
//! zones), or a 3-member etcd cluster / ZooKeeper ensemble (for `leader_kill`). Dropped with the case.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use lockbench_reports::model::ServerInfo;
use lockbench_servers::redis::info_field;
use lockbench_servers::{Direction, EtcdCluster, Fault, Proxy, RedisPair, ZkEnsemble};

use super::proxies::ClientProxies;
use crate::backends::stats::StatsSource;
use crate::backends::{EndpointAddrs, ServerKind};

const LINK_TIMEOUT: Duration = Duration::from_secs(10);
const LEADER_TIMEOUT: Duration = Duration::from_secs(10);

/// The servers of one case.
#[derive(Debug)]
pub(crate) enum CaseServers {
    /// Primary + replica; `lag` is the proxy on the replication link when it is delayed.
    RedisPair {
        /// The pair (boxed: it is much larger than the other variants).
        pair: Box<RedisPair>,
        /// The replication link's proxy (primary → replica delayed), when a lag was asked.
        lag: Option<Proxy>,
    },
    /// A 3-member etcd cluster.
    Etcd(EtcdCluster),
    /// A 3-node ZooKeeper ensemble.
    ZooKeeper(ZkEnsemble),
}

/// What a failover found and did.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct FailoverReport {
    /// The killed primary.
    pub old_primary: SocketAddr,
    /// The promoted replica.
    pub new_primary: SocketAddr,
    /// Replication stream bytes the primary had written that the replica never got.
    pub unreplicated_bytes: Option<u64>,
    /// Keys the primary had just before it died: how many.
    pub primary_keys: usize,
    /// Of those, how many the promoted replica lacks.
    pub missing_keys: usize,
    /// Of those, how many it has with another value (an older owner, a smaller fencing counter).
    pub stale_keys: usize,
}

/// Every key of a (small, test) database with a printable form of its value (strings and hashes;
/// other types by their type name).
fn snapshot(server: &lockbench_servers::RedisServer) -> BTreeMap<String, String> {
    let keys = server.command(&["KEYS", "*"]).unwrap_or_default();
    keys.lines()
        .filter(|k| !k.is_empty())
        .map(|key| {
            let value = match server.command(&["TYPE", key]).as_deref() {
                Ok("string") => server.command(&["GET", key]).unwrap_or_default(),
                Ok("hash") => server.command(&["HGETALL", key]).unwrap_or_default(),
                Ok(other) => other.to_owned(),
                Err(_) => String::new(),
            };
            (key.to_owned(), value)
        })
        .collect()
}

fn info_u64(info: &str, field: &str) -> Option<u64> {
    info_field(info, field).and_then(|v| v.parse().ok())
}

impl CaseServers {
    /// Starts a primary + replica; with a `replication_lag`, the replica replicates through a proxy
    /// that delays the primary's stream by it. Blocking (about 0.2 s).
    pub(crate) fn redis_pair(replication_lag: Duration) -> Result<Self, String> {
        let pair = RedisPair::start().map_err(|e| format!("redis primary + replica: {e}"))?;
        let lag = if replication_lag.is_zero() {
            None
        } else {
            let proxy = Proxy::start(pair.primary().addr())
                .map_err(|e| format!("replication link proxy: {e}"))?;
            let port = proxy.addr().port().to_string();
            pair.replica()
                .command(&["REPLICAOF", "127.0.0.1", &port])
                .map_err(|e| format!("REPLICAOF through the link proxy: {e}"))?;
            wait_for_link(&pair, proxy.addr().port())?;
            // Delay only once the link is up, so the handshake is not slowed down.
            proxy.set(Direction::Downstream, Fault::Delay(replication_lag));
            Some(proxy)
        };
        Ok(CaseServers::RedisPair {
            pair: Box::new(pair),
            lag,
        })
    }

    /// Starts a 3-member cluster of `kind` (etcd or ZooKeeper). Blocking (seconds).
    pub(crate) fn cluster(kind: ServerKind) -> Result<Self, String> {
        match kind {
            ServerKind::Etcd => EtcdCluster::start(3)
                .map(CaseServers::Etcd)
                .map_err(|e| format!("3-member etcd cluster: {e}")),
            ServerKind::ZooKeeper => ZkEnsemble::start(3)
                .map(CaseServers::ZooKeeper)
                .map_err(|e| format!("3-node ZooKeeper ensemble: {e}")),
            other => Err(format!("no cluster of {} servers", other.name())),
        }
    }

    /// The server kind.
    pub(crate) fn kind(&self) -> ServerKind {
        match self {
            CaseServers::RedisPair { .. } => ServerKind::Redis,
            CaseServers::Etcd(_) => ServerKind::Etcd,
            CaseServers::ZooKeeper(_) => ServerKind::ZooKeeper,
        }
    }

    /// Where clients connect: the primary; every member.
    pub(crate) fn endpoints(&self) -> EndpointAddrs {
        let mut out = EndpointAddrs::default();
        match self {
            CaseServers::RedisPair { pair, .. } => {
                out.redis = Some(pair.primary().url());
                out.redis_replicated = true;
            }
            CaseServers::Etcd(c) => out.etcd = c.endpoints(),
            CaseServers::ZooKeeper(z) => out.zookeeper = Some(z.connect_string()),
        }
        out
    }

    /// Where the case's server cost is read: the primary (its counters die with it in a failover),
    /// or a member that was not the leader at the start (so a leader kill leaves it standing).
    pub(crate) fn stats_source(&self) -> Option<StatsSource> {
        match self {
            CaseServers::RedisPair { pair, .. } => Some(StatsSource::new(
                ServerKind::Redis,
                pair.primary().addr(),
                Some(pair.primary().pid()),
            )),
            CaseServers::Etcd(c) => {
                let i = (c.leader().unwrap_or(0) + 1) % c.len();
                let m = c.member(i);
                Some(StatsSource::new(
                    ServerKind::Etcd,
                    m.client_addr(),
                    Some(m.pid()),
                ))
            }
            CaseServers::ZooKeeper(z) => {
                let i = (z.leader().unwrap_or(0) + 1) % z.len();
                let n = z.node(i);
                Some(StatsSource::new(
                    ServerKind::ZooKeeper,
                    n.addr(),
                    Some(n.pid()),
                ))
            }
        }
    }

    /// What the results say about these servers.
    pub(crate) fn info(&self) -> ServerInfo {
        let (version, address, startup) = match self {
            CaseServers::RedisPair { pair, lag } => (
                pair.primary().version().to_owned(),
                format!(
                    "primary + replica started per case{}",
                    if lag.is_some() {
                        " (replication through a delaying proxy)"
                    } else {
                        ""
                    }
                ),
                pair.startup(),
            ),
            CaseServers::Etcd(c) => (
                c.member(0).version().to_owned(),
                "3-member cluster started per case".to_owned(),
                c.startup(),
            ),
            CaseServers::ZooKeeper(z) => (
                z.node(0).version().to_owned(),
                "3-node ensemble started per case".to_owned(),
                z.startup(),
            ),
        };
        ServerInfo {
            kind: self.kind().name().to_owned(),
            version: (!version.is_empty()).then_some(version),
            address,
            managed: true,
            startup_ms: Some(startup.as_secs_f64() * 1e3),
        }
    }

    /// The process to pause for `pause_server`: the primary, or the current leader. Blocking.
    pub(crate) fn serving_pid(&self) -> Option<(u32, String)> {
        match self {
            CaseServers::RedisPair { pair, .. } => Some((
                pair.primary().pid(),
                format!("redis primary {}", pair.primary().addr()),
            )),
            CaseServers::Etcd(c) => c.wait_for_leader(LEADER_TIMEOUT).map(|i| {
                (
                    c.member(i).pid(),
                    format!("etcd leader {}", c.member(i).client_addr()),
                )
            }),
            CaseServers::ZooKeeper(z) => z.wait_for_leader(LEADER_TIMEOUT).map(|i| {
                (
                    z.node(i).pid(),
                    format!("zookeeper leader {}", z.node(i).addr()),
                )
            }),
        }
    }

    /// The Redis primary's address (for `CLIENT PAUSE`, `CLIENT KILL`).
    pub(crate) fn redis_primary(&self) -> Option<SocketAddr> {
        match self {
            CaseServers::RedisPair { pair, .. } => Some(pair.primary().addr()),
            _ => None,
        }
    }

    /// Kills the primary, promotes the replica and points every client proxy at it, as an automatic
    /// failover does: the proxies send new connections to the replica first (a client reconnecting
    /// in the few milliseconds before the promotion gets `READONLY` errors and retries), then the
    /// primary dies, the replica is promoted and the clients' old connections are reset. The delayed
    /// replication link is cut first: what it still carried is lost, as a crashed primary's unsent
    /// stream is. Blocking.
    pub(crate) fn failover(
        &self,
        proxies: Option<&ClientProxies>,
    ) -> Result<FailoverReport, String> {
        let CaseServers::RedisPair { pair, lag } = self else {
            return Err("failover needs a Redis primary + replica".into());
        };
        let primary = pair.primary();
        let replica = pair.replica();
        if let Some(lag) = lag {
            lag.refuse(true);
            lag.reset_all();
        }
        if let Some(proxies) = proxies {
            for proxy in proxies.all() {
                proxy.set_upstream(replica.addr());
            }
        }
        let before = snapshot(primary);
        let written = primary
            .command(&["INFO", "replication"])
            .ok()
            .and_then(|i| info_u64(&i, "master_repl_offset"));
        primary
            .kill()
            .map_err(|e| format!("killing the primary: {e}"))?;
        let received = replica
            .command(&["INFO", "replication"])
            .ok()
            .and_then(|i| info_u64(&i, "slave_repl_offset"));
        let after = snapshot(replica);
        pair.promote_replica()
            .map_err(|e| format!("promoting the replica: {e}"))?;
        if let Some(proxies) = proxies {
            for proxy in proxies.all() {
                proxy.reset_all();
            }
        }
        Ok(FailoverReport {
            old_primary: primary.addr(),
            new_primary: replica.addr(),
            unreplicated_bytes: written.zip(received).map(|(w, r)| w.saturating_sub(r)),
            primary_keys: before.len(),
            missing_keys: before.keys().filter(|k| !after.contains_key(*k)).count(),
            stale_keys: before
                .iter()
                .filter(|(k, v)| after.get(*k).is_some_and(|a| a != *v))
                .count(),
        })
    }

    /// Kills the current leader, then watches the survivors until one reports itself leader.
    /// Returns the killed leader's description and how long the election took (`None`: no new
    /// leader within 10 s). Blocking.
    pub(crate) fn kill_leader(&self) -> Result<(String, Option<Duration>), String> {
        let none = || format!("no leader within {LEADER_TIMEOUT:?}");
        let (what, killed_at) = match self {
            CaseServers::Etcd(c) => {
                let i = c.wait_for_leader(LEADER_TIMEOUT).ok_or_else(none)?;
                c.kill(i).map_err(|e| format!("killing the leader: {e}"))?;
                (
                    format!("etcd member {i} (leader) {}", c.member(i).client_addr()),
                    Instant::now(),
                )
            }
            CaseServers::ZooKeeper(z) => {
                let i = z.wait_for_leader(LEADER_TIMEOUT).ok_or_else(none)?;
                z.kill(i).map_err(|e| format!("killing the leader: {e}"))?;
                (
                    format!("zookeeper node {i} (leader) {}", z.node(i).addr()),
                    Instant::now(),
                )
            }
            CaseServers::RedisPair { .. } => {
                return Err("a Redis pair has no leader election".into());
            }
        };
        let elected = match self {
            CaseServers::Etcd(c) => c.wait_for_leader(LEADER_TIMEOUT),
            CaseServers::ZooKeeper(z) => z.wait_for_leader(LEADER_TIMEOUT),
            CaseServers::RedisPair { .. } => None,
        };
        Ok((what, elected.map(|_| killed_at.elapsed())))
    }
}

/// Waits until the replica's link to `port` is up and it has caught up with the primary.
fn wait_for_link(pair: &RedisPair, port: u16) -> Result<(), String> {
    let deadline = Instant::now() + LINK_TIMEOUT;
    loop {
        let replica = pair
            .replica()
            .command(&["INFO", "replication"])
            .unwrap_or_default();
        let up = info_field(&replica, "master_link_status") == Some("up")
            && info_u64(&replica, "master_port") == Some(u64::from(port));
        if up {
            let primary = pair
                .primary()
                .command(&["INFO", "replication"])
                .unwrap_or_default();
            let written = info_u64(&primary, "master_repl_offset");
            if written.is_some() && written <= info_u64(&replica, "slave_repl_offset") {
                return Ok(());
            }
        }
        if Instant::now() >= deadline {
            return Err(format!(
                "the replica did not replicate through the link proxy within {LINK_TIMEOUT:?}"
            ));
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}
