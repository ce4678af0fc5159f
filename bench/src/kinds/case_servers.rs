//! Servers a case starts for itself because its fault destroys them, as the kinds share them: what
//! every such set-up answers ([`CaseServers`]: where clients connect, where its cost is read, what
//! the results say of it) and the faults it may offer (a failover, a leader kill, node kills and
//! restarts, a restart, a silent partition), each refusing where the set-up has no such thing; the
//! table of set-ups a kind can start ([`CaseStarts`]); and what a failover found
//! ([`FailoverReport`]). Each kind's own set-ups live in its `case_servers.rs`.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use lockbench_reports::model::ServerInfo;
use lockbench_servers::{Durability, Keepalives, Partition, Proxy};

use super::{EndpointAddrs, ServerKind};

/// How long a cluster gets to elect a new leader (and to name its first).
pub const LEADER_TIMEOUT: Duration = Duration::from_secs(10);

/// The servers of one case, whichever kind and set-up. A fault a set-up does not offer answers why
/// (the defaults).
pub trait CaseServers: Send + Sync + std::fmt::Debug {
    /// The server kind.
    fn kind(&self) -> ServerKind;

    /// Where clients connect: the primary; every member.
    fn endpoints(&self) -> EndpointAddrs;

    /// Where the case's server cost is read (its socket and process): the primary (its counters die
    /// with it in a failover), or a member that was not the leader at the start (so a leader kill
    /// leaves it standing). `None` where no figure read there would be the clients' alone.
    fn stats_at(&self) -> Option<(SocketAddr, Option<u32>)>;

    /// What the results say about these servers.
    fn info(&self) -> ServerInfo;

    /// The process to pause for `pause_server`: the primary, or the current leader. Blocking.
    fn serving_pid(&self) -> Option<(u32, String)>;

    /// The Redis primary's address (for `CLIENT PAUSE`, `CLIENT KILL`).
    fn redis_primary(&self) -> Option<SocketAddr> {
        None
    }

    /// Kills the primary and promotes the replica, as an automatic failover behind a virtual IP or
    /// a DNS name does: the delayed replication link is cut first (what it still carried is lost,
    /// as a crashed primary's unsent stream is), `redirect` is told the replica's address before the
    /// primary dies (the clients' proxies send new connections there), then the primary dies and
    /// the replica is promoted. Blocking.
    fn fail_over(&self, redirect: &dyn Fn(SocketAddr)) -> Result<FailoverReport, String> {
        let _ = redirect;
        Err("failover needs a primary + replica".into())
    }

    /// Kills the primary and waits until the Sentinels have promoted the replica. Blocking.
    fn sentinel_failover(&self) -> Result<FailoverReport, String> {
        Err("sentinel_failover needs a primary + replica watched by Sentinels".into())
    }

    /// Fails over the master serving `slot_key`'s slot, by killing it (`kill`) or by `CLUSTER
    /// FAILOVER` on its replica. Blocking.
    fn cluster_failover(&self, slot_key: &str, kill: bool) -> Result<FailoverReport, String> {
        let _ = (slot_key, kill);
        Err("cluster faults need a Redis Cluster".into())
    }

    /// Kills the current leader, then watches the survivors until one reports itself leader: the
    /// killed leader's description and how long the election took (`None`: no new leader within
    /// [`LEADER_TIMEOUT`]). Blocking.
    fn kill_leader(&self) -> Result<(String, Option<Duration>), String> {
        Err("these servers have no leader election".into())
    }

    /// Kills independent nodes `nodes`; an error naming any that was not running. Blocking.
    fn kill_nodes(&self, nodes: &[usize]) -> Result<String, String> {
        let _ = nodes;
        Err(NO_NODES.into())
    }

    /// (Re)starts independent nodes `nodes` on their ports and data dirs. Blocking.
    fn restart_nodes(&self, nodes: &[usize]) -> Result<String, String> {
        let _ = nodes;
        Err(NO_NODES.into())
    }

    /// How far independent node `node`'s wall clock is ahead of the real one, in ms. Blocking.
    fn node_clock_ahead_ms(&self, node: usize) -> Result<f64, String> {
        let _ = node;
        Err(NO_NODES.into())
    }

    /// Kills the restartable server and starts it again on its data dir. Blocking.
    fn restart_server(&self) -> Result<String, String> {
        Err("no restartable redis".into())
    }

    /// How long the server keeps a silent client's connection (its TCP keepalive), when it is in a
    /// network namespace of its own.
    fn keepalive_limit(&self) -> Option<Duration> {
        None
    }

    /// Drops every packet of the connections from this side's `ports` inside the server's network
    /// namespace, silently, both ways, until the partition is dropped. Blocking.
    fn partition(&self, ports: &[u16]) -> Result<Partition, String> {
        let _ = ports;
        Err(NOT_NAMESPACED.into())
    }

    /// A watch on the server's sessions from this side's `ports`. Blocking.
    fn watch_sessions(&self, ports: &[u16]) -> Result<Box<dyn SessionWatch>, String> {
        let _ = ports;
        Err(NOT_NAMESPACED.into())
    }
}

/// The TCP keepalive a server in a network namespace of its own applies to its clients' connections
/// (PostgreSQL's and MariaDB's alike): a silent client is given up 3 s after its last packet.
pub const NAMESPACED_KEEPALIVES: Keepalives = Keepalives {
    idle: Duration::from_secs(1),
    interval: Duration::from_secs(1),
    count: 2,
};

const NO_NODES: &str = "no independent redis nodes";
const NOT_NAMESPACED: &str = "these servers are not in a network namespace";

/// A server's sessions from some client ports, watched on one session of its own kept open.
pub trait SessionWatch: Send + std::fmt::Debug {
    /// How many of the watched sessions are live, and how many times the server's log has said a
    /// client's connection timed out since the watch began. Blocking.
    fn read(&mut self) -> Result<(u64, usize), String>;

    /// What the server's log says when keepalive gave up a client's connection.
    fn timed_out_line(&self) -> &'static str;
}

/// One set-up a kind can start for a case, from `A` (a replication lag, a fake clock, a
/// durability).
#[derive(Debug, Clone, Copy)]
pub struct Start<A> {
    /// Starts it. Blocking.
    pub start: fn(A) -> Result<Box<dyn CaseServers>, String>,
    /// How long starting and stopping it takes (the suite's plan adds it to each such case).
    pub takes: Duration,
}

/// The set-ups a kind can start for a case of its own, each the capability a fault needs.
#[derive(Debug, Clone, Copy, Default)]
pub struct CaseStarts {
    /// A primary with one asynchronous replica, replicating through a delaying proxy given a lag
    /// (`failover`).
    pub pair: Option<Start<Duration>>,
    /// A primary and replica watched by 3 Sentinels (`sentinel_failover`).
    pub sentinels: Option<Start<()>>,
    /// A sharded cluster of 3 masters with one replica each (`cluster_master_kill`,
    /// `cluster_failover`).
    pub sharded: Option<Start<()>>,
    /// A 3-member consensus cluster (`leader_kill`).
    pub cluster: Option<Start<()>>,
    /// Independent nodes, optionally one (index) with a wall clock running `rate` times as fast
    /// (`node_kill`, `node_restart`, `clock_jump`).
    pub nodes: Option<Start<Option<(usize, u32)>>>,
    /// One restartable server with a durability (`server_restart`).
    pub restartable: Option<Start<Durability>>,
    /// One server in a network namespace of its own with short TCP keepalives
    /// (`keepalive_partition`).
    pub namespaced: Option<Start<()>>,
}

/// What a failover found and did.
#[derive(Debug, Clone, PartialEq)]
pub struct FailoverReport {
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
    /// Through Sentinel or in a cluster: from the kill (or `CLUSTER FAILOVER`) until the replica
    /// answered as the master (named so by a majority of the Sentinels; serving the slot with every
    /// node reporting `cluster_state:ok`).
    pub promoted_after: Option<Duration>,
}

impl FailoverReport {
    /// What the primary (`old`) held just before it died against what the replica (`new`) holds.
    pub fn compare(
        (old, before): (SocketAddr, &BTreeMap<String, String>),
        (new, after): (SocketAddr, &BTreeMap<String, String>),
        unreplicated_bytes: Option<u64>,
    ) -> Self {
        FailoverReport {
            old_primary: old,
            new_primary: new,
            unreplicated_bytes,
            primary_keys: before.len(),
            missing_keys: before.keys().filter(|k| !after.contains_key(*k)).count(),
            stale_keys: before
                .iter()
                .filter(|(k, v)| after.get(*k).is_some_and(|a| a != *v))
                .count(),
            promoted_after: None,
        }
    }
}

/// A pair's [`CaseServers::fail_over`]: cuts the delayed replication link `lag`, tells `redirect`
/// the `replica`'s address, then kills the primary and promotes the replica (`kill_and_promote`).
pub fn fail_over_pair(
    lag: Option<&Proxy>,
    replica: SocketAddr,
    redirect: &dyn Fn(SocketAddr),
    kill_and_promote: impl FnOnce() -> Result<FailoverReport, String>,
) -> Result<FailoverReport, String> {
    if let Some(lag) = lag {
        lag.refuse(true);
        lag.reset_all();
    }
    redirect(replica);
    kill_and_promote()
}

/// Promotes a pair's replica: the promotion's error, said so.
pub fn promoted(done: lockbench_servers::Result<()>) -> Result<(), String> {
    done.map_err(|e| format!("promoting the replica: {e}"))
}

/// A cluster's [`CaseServers::kill_leader`]: waits for its leader (`leader`), kills it (`kill`),
/// and waits for the next; `describe` names a member.
pub fn kill_leader_of(
    leader: impl Fn() -> Option<usize>,
    kill: impl FnOnce(usize) -> std::io::Result<()>,
    describe: impl FnOnce(usize) -> String,
) -> Result<(String, Option<Duration>), String> {
    let i = leader().ok_or_else(|| format!("no leader within {LEADER_TIMEOUT:?}"))?;
    kill(i).map_err(|e| format!("killing the leader: {e}"))?;
    let killed_at = Instant::now();
    let what = describe(i);
    Ok((what, leader().map(|_| killed_at.elapsed())))
}

/// What the results say about a case's own servers of `kind`: `version` (empty: unknown), how they
/// were set up (`address`), and how long they took to start.
pub fn case_info(
    kind: ServerKind,
    version: String,
    address: String,
    startup: Duration,
) -> ServerInfo {
    ServerInfo {
        kind: kind.name().to_owned(),
        version: (!version.is_empty()).then_some(version),
        address,
        managed: true,
        startup_ms: Some(startup.as_secs_f64() * 1e3),
    }
}

/// ` (replication through a delaying proxy)` when a pair replicates through `lag`.
pub fn lag_words(lag: Option<&Proxy>) -> &'static str {
    if lag.is_some() {
        " (replication through a delaying proxy)"
    } else {
        ""
    }
}

/// Starts a proxy on a pair's replication link from `primary`, for a replication `lag` (none for a
/// zero lag): `link` points the replica at it, and the proxy delays the stream only once the link
/// is up, so the handshake is not slowed down. Blocking.
pub fn lag_link(
    primary: SocketAddr,
    lag: Duration,
    link: impl FnOnce(&Proxy) -> Result<(), String>,
) -> Result<Option<Proxy>, String> {
    if lag.is_zero() {
        return Ok(None);
    }
    let proxy = Proxy::start(primary).map_err(|e| format!("replication link proxy: {e}"))?;
    link(&proxy)?;
    proxy.set(
        lockbench_servers::Direction::Downstream,
        lockbench_servers::Fault::Delay(lag),
    );
    Ok(Some(proxy))
}
