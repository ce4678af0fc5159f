//! The Redis set-ups a case starts for itself because its fault destroys them: a primary with an
//! asynchronous replica (`failover`; optionally with a delayed replication link, as across zones),
//! the same pair watched by 3 Sentinels (`sentinel_failover`), a Redis Cluster of 3 masters and 3
//! replicas (`cluster_master_kill`, `cluster_failover`), and one restartable Redis with or without
//! durable persistence (`server_restart`). Each runs Redis or Valkey ([`Flavor`]): the Valkey kind
//! offers the same set-ups (`VALKEY_STARTS`).

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use lockbench_reports::model::ServerInfo;
use lockbench_servers::redis::info_field;
use lockbench_servers::{
    Durability, Flavor, OnRestart, Proxy, RedisCluster, RedisNode, RedisNodeOptions, RedisOptions,
    RedisPair, RedisSentinels, RedisServer,
};

use crate::kinds::case_servers::{
    CaseServers, CaseStarts, FailoverReport, Start, case_info, fail_over_pair, lag_link, lag_words,
    promoted,
};
use crate::kinds::{EndpointAddrs, ServerKind};

const LINK_TIMEOUT: Duration = Duration::from_secs(10);
/// How long the Sentinels get to promote the replica (they need `down-after` plus an election).
const PROMOTION_TIMEOUT: Duration = Duration::from_secs(20);

/// The set-ups of `$flavor`'s servers, with how long each takes to start and stop.
macro_rules! starts {
    ($flavor:expr) => {
        CaseStarts {
            // A primary + replica (failover; measured 170-260 ms in all).
            pair: Some(Start {
                start: |lag| Ok(Box::new(Pair::start($flavor, lag)?)),
                takes: Duration::from_millis(300),
            }),
            // A primary + replica watched by 3 Sentinels (Sentinel failover; measured 2.3 s: the
            // Sentinels find each other through the primary's hello channel, every 2 s).
            sentinels: Some(Start {
                start: |()| Ok(Box::new(Sentinels::start($flavor)?)),
                takes: Duration::from_secs(3),
            }),
            // A cluster of 3 masters + 3 replicas (cluster failovers; measured 2.08-2.11 s: six
            // servers, slot assignment, `CLUSTER MEET` gossip and the replicas' first sync).
            sharded: Some(Start {
                start: |()| Ok(Box::new(Cluster::start($flavor)?)),
                takes: Duration::from_millis(2500),
            }),
            cluster: None,
            nodes: None,
            // One restartable server, as long as a primary + replica.
            restartable: Some(Start {
                start: |durability| Ok(Box::new(Restartable::start($flavor, durability)?)),
                takes: Duration::from_millis(300),
            }),
            namespaced: None,
        }
    };
}

/// The Redis set-ups.
pub(super) const STARTS: CaseStarts = starts!(Flavor::Redis);

/// The same set-ups on Valkey.
pub(crate) const VALKEY_STARTS: CaseStarts = starts!(Flavor::Valkey);

/// The kind of `flavor`'s servers.
fn kind_of(flavor: Flavor) -> ServerKind {
    match flavor {
        Flavor::Redis => ServerKind::Redis,
        Flavor::Valkey => ServerKind::Valkey,
    }
}

/// `redis` (the Redis fields of a run's addresses) as the addresses of `flavor`'s servers.
fn endpoints_of(flavor: Flavor, mut redis: EndpointAddrs) -> EndpointAddrs {
    if flavor == Flavor::Valkey {
        redis.swap_valkey_with_redis();
    }
    redis
}

/// The endpoints of a replicated set-up of `flavor` whose clients connect at `url` (Redisson's
/// modes then `WAIT` for the replicas), with the replicas' own addresses where clients are given them.
fn replicated_endpoints(flavor: Flavor, url: String, replicas: Vec<String>) -> EndpointAddrs {
    endpoints_of(
        flavor,
        EndpointAddrs {
            redis: Some(url),
            redis_replicated: true,
            redis_replicas: replicas,
            ..EndpointAddrs::default()
        },
    )
}

/// `redis`, or the lower-case name of `flavor` in its place (`valkey primary + replica`).
fn named(flavor: Flavor, what: &str) -> String {
    match flavor {
        Flavor::Redis => what.to_owned(),
        Flavor::Valkey => what.replacen("redis", "valkey", 1),
    }
}

/// A primary + replica; `lag` is the proxy on the replication link when it is delayed.
#[derive(Debug)]
struct Pair {
    pair: RedisPair,
    lag: Option<Proxy>,
    flavor: Flavor,
}

impl Pair {
    /// Starts a primary + replica; with a `replication_lag`, the replica replicates through a proxy
    /// that delays the primary's stream by it. Blocking (about 0.2 s).
    fn start(flavor: Flavor, replication_lag: Duration) -> Result<Self, String> {
        let pair = RedisPair::start_with(RedisOptions::of(flavor))
            .map_err(|e| format!("{}: {e}", named(flavor, "redis primary + replica")))?;
        let lag = lag_link(pair.primary().addr(), replication_lag, |proxy| {
            let port = proxy.addr().port().to_string();
            pair.replica()
                .command(&["REPLICAOF", "127.0.0.1", &port])
                .map_err(|e| format!("REPLICAOF through the link proxy: {e}"))?;
            wait_for_link(&pair, proxy.addr().port())
        })?;
        Ok(Pair { pair, lag, flavor })
    }
}

impl CaseServers for Pair {
    fn kind(&self) -> ServerKind {
        kind_of(self.flavor)
    }

    fn endpoints(&self) -> EndpointAddrs {
        replicated_endpoints(
            self.flavor,
            self.pair.primary().url(),
            vec![self.pair.replica().url()],
        )
    }

    fn stats_at(&self) -> Option<(SocketAddr, Option<u32>)> {
        Some(primary_stats(&self.pair))
    }

    fn info(&self) -> ServerInfo {
        case_info(
            self.kind(),
            self.pair.primary().version().to_owned(),
            format!(
                "primary + replica started per case{}",
                lag_words(self.lag.as_ref())
            ),
            self.pair.startup(),
        )
    }

    fn serving_pid(&self) -> Option<(u32, String)> {
        Some(primary_pid(&self.pair))
    }

    fn redis_primary(&self) -> Option<SocketAddr> {
        Some(self.pair.primary().addr())
    }

    fn fail_over(&self, redirect: &dyn Fn(SocketAddr)) -> Result<FailoverReport, String> {
        let pair = &self.pair;
        fail_over_pair(self.lag.as_ref(), pair.replica().addr(), redirect, || {
            let report = kill_pair_primary(pair.primary(), pair.replica())?;
            promoted(pair.promote_replica())?;
            Ok(report)
        })
    }
}

/// A primary + replica watched by 3 Sentinels; clients connect through the Sentinels.
#[derive(Debug)]
struct Sentinels(RedisSentinels, Flavor);

impl Sentinels {
    /// Starts a primary + replica and 3 Sentinels, and waits until the Sentinels know the replica
    /// and each other. Blocking (a few seconds).
    fn start(flavor: Flavor) -> Result<Self, String> {
        RedisSentinels::start_with(RedisOptions::of(flavor))
            .map(|sentinels| Sentinels(sentinels, flavor))
            .map_err(|e| {
                let what = named(flavor, "redis primary + replica + 3 sentinels");
                format!("{what}: {e}")
            })
    }
}

impl CaseServers for Sentinels {
    fn kind(&self) -> ServerKind {
        kind_of(self.1)
    }

    fn endpoints(&self) -> EndpointAddrs {
        replicated_endpoints(self.1, self.0.url(), Vec::new())
    }

    fn stats_at(&self) -> Option<(SocketAddr, Option<u32>)> {
        Some(primary_stats(self.0.pair()))
    }

    fn info(&self) -> ServerInfo {
        case_info(
            self.kind(),
            self.0.pair().primary().version().to_owned(),
            "primary + replica + 3 Sentinels started per case".to_owned(),
            self.0.startup(),
        )
    }

    fn serving_pid(&self) -> Option<(u32, String)> {
        Some(primary_pid(self.0.pair()))
    }

    fn redis_primary(&self) -> Option<SocketAddr> {
        Some(self.0.pair().primary().addr())
    }

    /// Nothing tells the clients: they find the new primary through the Sentinels, as they would
    /// in production. Blocking (about the Sentinels' `down-after` plus an election).
    fn sentinel_failover(&self) -> Result<FailoverReport, String> {
        let (primary, replica) = (self.0.pair().primary(), self.0.pair().replica());
        let killed_at = Instant::now();
        let report = kill_pair_primary(primary, replica)?;
        let (promoted, seen_at) = self
            .0
            .wait_for_new_primary(primary.addr(), PROMOTION_TIMEOUT)
            .ok_or_else(|| {
                format!("the Sentinels promoted no replica within {PROMOTION_TIMEOUT:?}")
            })?;
        Ok(FailoverReport {
            new_primary: promoted,
            promoted_after: Some(seen_at - killed_at),
            ..report
        })
    }
}

/// 3 masters and 3 replicas in one cluster; clients connect with every node as a seed.
#[derive(Debug)]
struct Cluster(RedisCluster, Flavor);

impl Cluster {
    /// Starts a cluster of 3 masters and 3 replicas. Blocking (about 2 s).
    fn start(flavor: Flavor) -> Result<Self, String> {
        RedisCluster::start_with(RedisOptions::of(flavor))
            .map(|cluster| Cluster(cluster, flavor))
            .map_err(|e| {
                let what = named(flavor, "redis cluster of 3 masters + 3 replicas");
                format!("{what}: {e}")
            })
    }
}

impl CaseServers for Cluster {
    fn kind(&self) -> ServerKind {
        kind_of(self.1)
    }

    fn endpoints(&self) -> EndpointAddrs {
        replicated_endpoints(self.1, self.0.url(), Vec::new())
    }

    /// A failover changes roles: a demoted master's counters take in the new master's replicated
    /// writes, and the fault's own probes (`CLUSTER NODES`, `CLUSTER INFO`) land on the masters; no
    /// figure read there would be the clients' alone.
    fn stats_at(&self) -> Option<(SocketAddr, Option<u32>)> {
        None
    }

    fn info(&self) -> ServerInfo {
        case_info(
            self.kind(),
            node_version(&self.0.nodes()[0]),
            "cluster of 3 masters + 3 replicas started per case".to_owned(),
            self.0.startup(),
        )
    }

    fn serving_pid(&self) -> Option<(u32, String)> {
        let node = &self.0.nodes()[0];
        node.pid().map(|pid| {
            (
                pid,
                named(self.1, &format!("redis cluster master {}", node.addr())),
            )
        })
    }

    /// Waits until the slot is served by the new master and every node reports
    /// `cluster_state:ok`. Nothing tells the clients: they follow `MOVED` answers and read the
    /// layout again after errors. Blocking (about 2 s after a kill).
    fn cluster_failover(&self, slot_key: &str, kill: bool) -> Result<FailoverReport, String> {
        let cluster = &self.0;
        let master = cluster
            .master_of(slot_key)
            .ok_or_else(|| format!("no master serves {slot_key:?}"))?;
        let replica = cluster
            .replica_of(master)
            .ok_or_else(|| format!("the master {} has no replica", master.addr()))?;
        let began = Instant::now();
        let report = if kill {
            let (raddr, timeout) = (replica.addr(), Duration::from_secs(2));
            let on_replica = move |args: &[&str]| {
                lockbench_servers::probe::resp_commands_as(
                    raddr,
                    None,
                    &[&["READONLY"], args],
                    timeout,
                )
            };
            kill_primary(
                (master.addr(), &|args| master.command(args)),
                (replica.addr(), &on_replica),
                &|| master.kill(),
            )?
        } else {
            replica
                .command(&["CLUSTER", "FAILOVER"])
                .map_err(|e| format!("CLUSTER FAILOVER on {}: {e}", replica.addr()))?;
            FailoverReport {
                old_primary: master.addr(),
                new_primary: replica.addr(),
                unreplicated_bytes: None,
                primary_keys: 0,
                missing_keys: 0,
                stale_keys: 0,
                promoted_after: None,
            }
        };
        let (promoted, seen_at) = cluster
            .wait_for_new_master(slot_key, master.addr(), PROMOTION_TIMEOUT)
            .ok_or_else(|| format!("no replica took over within {PROMOTION_TIMEOUT:?}"))?;
        Ok(FailoverReport {
            new_primary: promoted,
            promoted_after: Some(seen_at - began),
            ..report
        })
    }
}

/// One restartable Redis.
#[derive(Debug)]
struct Restartable(RedisNode);

impl Restartable {
    /// Starts one restartable Redis with `durability`; a durable one keeps its AOF on the real disk
    /// (the system temp dir), so fsync costs what it costs there, not on `/dev/shm`. Blocking.
    fn start(flavor: Flavor, durability: Durability) -> Result<Self, String> {
        let options = RedisNodeOptions {
            redis: RedisOptions::of(flavor),
            durability,
            data_parent: (durability == Durability::AofAlways).then(std::env::temp_dir),
            ..RedisNodeOptions::default()
        };
        RedisNode::start(options)
            .map(Restartable)
            .map_err(|e| format!("{}: {e}", named(flavor, "restartable redis")))
    }

    fn flavor(&self) -> Flavor {
        self.0.options().redis.flavor
    }
}

impl CaseServers for Restartable {
    fn kind(&self) -> ServerKind {
        kind_of(self.flavor())
    }

    fn endpoints(&self) -> EndpointAddrs {
        let redis = EndpointAddrs {
            redis: Some(self.0.url()),
            ..EndpointAddrs::default()
        };
        endpoints_of(self.flavor(), redis)
    }

    /// None: a restart resets the counters.
    fn stats_at(&self) -> Option<(SocketAddr, Option<u32>)> {
        None
    }

    fn info(&self) -> ServerInfo {
        let durability = match self.0.options().durability {
            Durability::None => "no persistence",
            Durability::AofAlways => "appendonly yes, appendfsync always",
        };
        case_info(
            self.kind(),
            node_version(&self.0),
            format!("restartable server started per case ({durability})"),
            self.0.startup(),
        )
    }

    fn serving_pid(&self) -> Option<(u32, String)> {
        self.0
            .pid()
            .map(|pid| (pid, format!("{} {}", self.kind().name(), self.0.addr())))
    }

    fn redis_primary(&self) -> Option<SocketAddr> {
        Some(self.0.addr())
    }

    fn restart_server(&self) -> Result<String, String> {
        self.0
            .restart(OnRestart::KeepData)
            .map_err(|e| format!("restarting {}: {e}", self.kind().name()))?;
        Ok(format!("{} {}", self.kind().name(), self.0.addr()))
    }
}

/// Sends one command to a server and answers its reply as text.
type Ask<'a> = &'a dyn Fn(&[&str]) -> lockbench_servers::Result<String>;

/// Kills the primary (`kill`, asked through `primary`) and compares what it held just before with
/// what the replica (asked through `replica`) holds right after (before any promotion, so nothing
/// has written to it yet). Client writes are paused first (`CLIENT PAUSE … WRITE`), so that the
/// snapshot is what the primary held when it died: without it, a release between the snapshot and
/// the kill counted as a key the replica lacked.
fn kill_primary(
    (old, primary): (SocketAddr, Ask<'_>),
    (new, replica): (SocketAddr, Ask<'_>),
    kill: &dyn Fn() -> std::io::Result<()>,
) -> Result<FailoverReport, String> {
    primary(&["CLIENT", "PAUSE", "60000", "WRITE"])
        .map_err(|e| format!("pausing the primary's writes: {e}"))?;
    let before = snapshot(primary);
    let written = primary(&["INFO", "replication"])
        .ok()
        .and_then(|i| info_u64(&i, "master_repl_offset"));
    kill().map_err(|e| format!("killing the primary: {e}"))?;
    let received = replica(&["INFO", "replication"])
        .ok()
        .and_then(|i| info_u64(&i, "slave_repl_offset"));
    let after = snapshot(replica);
    Ok(FailoverReport::compare(
        (old, &before),
        (new, &after),
        written.zip(received).map(|(w, r)| w.saturating_sub(r)),
    ))
}

/// [`kill_primary`] for a pair's primary and replica.
fn kill_pair_primary(
    primary: &RedisServer,
    replica: &RedisServer,
) -> Result<FailoverReport, String> {
    kill_primary(
        (primary.addr(), &|args| primary.command(args)),
        (replica.addr(), &|args| replica.command(args)),
        &|| primary.kill(),
    )
}

/// Every key of a (small, test) database with a printable form of its value (strings and hashes;
/// other types by their type name).
fn snapshot(server: Ask<'_>) -> BTreeMap<String, String> {
    let keys = server(&["KEYS", "*"]).unwrap_or_default();
    keys.lines()
        .filter(|k| !k.is_empty())
        .map(|key| {
            let value = match server(&["TYPE", key]).as_deref() {
                Ok("string") => server(&["GET", key]).unwrap_or_default(),
                Ok("hash") => server(&["HGETALL", key]).unwrap_or_default(),
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

/// Where a pair's server cost is read: its primary as started.
fn primary_stats(pair: &RedisPair) -> (SocketAddr, Option<u32>) {
    (pair.primary().addr(), Some(pair.primary().pid()))
}

/// The process `pause_server` stops in a pair: its primary as started.
fn primary_pid(pair: &RedisPair) -> (u32, String) {
    (
        pair.primary().pid(),
        named(
            pair.primary().flavor(),
            &format!("redis primary {}", pair.primary().addr()),
        ),
    )
}

/// The version a Redis (or Valkey) node reports (empty when it does not answer).
pub(crate) fn node_version(node: &RedisNode) -> String {
    let field = node.options().redis.flavor.version_field();
    node.command(&["INFO", "server"])
        .ok()
        .and_then(|info| info_field(&info, field).map(str::to_owned))
        .unwrap_or_default()
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
