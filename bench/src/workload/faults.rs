//! What a scenario asks to inject: the `[[faults]]` tables of a scenario file (or `--fault` flags),
//! checked into [`FaultSpec`]s. Every field is checked against the fault's kind, so a misspelt or
//! misplaced setting is one error line naming it.
//!
//! ```toml
//! [[faults]]
//! kind = "pause_worker"   # what (see FaultKind)
//! at = "1s"               # when, after the case starts (warm-up included)
//! duration = "2500ms"     # how long, for faults that are lifted
//! target = "holder"       # whom: holder | client:N | all | server
//! ```
//!
//! Every timing may be relative to the case (see [`crate::base::duration::parse_timing`]): `at = "0.5ttl"`,
//! `duration = "2ttl"` pause the holder for twice the TTL, whatever the TTL.
//!
//! The same fault as a flag: `--fault "pause_worker at=1s duration=2500ms target=holder"`.

use std::fmt;
use std::time::Duration;

use lockbench_servers::Durability;
use serde::Deserialize;

use crate::backends::ServerKind;
use crate::base::duration::{Units, format_duration, parse_timing};
use crate::kinds::{self, CaseStarts, ServerKindExt};
use crate::workload::TimeScale;

/// A fault as written in a scenario file: every field optional, unknown fields rejected.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FaultFile {
    /// The fault's kind (see [`FaultKind`]).
    pub kind: Option<String>,
    /// When it starts, after the case start.
    pub at: Option<String>,
    /// How long it lasts (lifted faults).
    pub duration: Option<String>,
    /// Whom it hits: `holder`, `client:N`, `all`, `server`.
    pub target: Option<String>,
    /// Repeat period of an instantaneous fault (`pubsub_kill`, `proxy_reset`) during `duration`.
    pub every: Option<String>,
    /// Faults on the `holder` (network faults, `busy_script`): start this long after the holder's
    /// acquire instead of at it (aims the fault at a renewal: e.g. 0.7 of the renewal period).
    pub after_acquire: Option<String>,
    /// Added latency (`proxy_delay`).
    pub delay: Option<String>,
    /// `upstream`, `downstream` or `both` (proxy faults).
    pub direction: Option<String>,
    /// Delay of the replication link from the primary to the replica (`failover`).
    pub replication_lag: Option<String>,
    /// Busy threads (`cpu_hog`).
    pub threads: Option<u32>,
    /// CPU time allowed per period (`cgroup_quota`).
    pub quota: Option<String>,
    /// Quota period (`cgroup_quota`).
    pub period: Option<String>,
    /// Redlock node indices, comma-separated (`node_kill`, `node_restart`, `clock_jump`).
    pub nodes: Option<String>,
    /// How many times as fast the node's wall clock runs (`clock_jump`, default 10).
    pub rate: Option<u32>,
    /// What the server keeps across a restart: `none` or `aof-always` (`server_restart`).
    pub durability: Option<String>,
}

/// What is injected.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) enum FaultKind {
    /// SIGSTOP a client process, SIGCONT it after `duration` (a GC pause).
    PauseWorker,
    /// SIGKILL a client process that holds a lock; recovery = until another client gets the key.
    CrashWorker,
    /// Block every runtime worker thread of a client process for `duration`.
    StarveWorker,
    /// `threads` busy-looping threads in a client process for `duration`, competing for the cores.
    CpuHog,
    /// Move a client process into a cgroup with a CPU quota for `duration`.
    CgroupQuota,
    /// SIGSTOP the server process, SIGCONT after `duration`.
    PauseServer,
    /// Redis `CLIENT PAUSE <duration> ALL`.
    ClientPause,
    /// Redis `CLIENT KILL TYPE pubsub`, once or `every` period during `duration`.
    PubsubKill,
    /// A Lua script that keeps Redis busy for `duration`, with `busy-reply-threshold` lowered to
    /// 100 ms so other commands get `BUSY` errors meanwhile (redisson#3332).
    BusyScript,
    /// The TCP proxy delays the bytes of `direction` by `delay` for `duration`.
    ProxyDelay,
    /// The TCP proxy drops the bytes of `direction` for `duration` (a partition).
    ProxyBlackhole,
    /// The TCP proxy resets the target's connections, once or `every` period during `duration`.
    ProxyReset,
    /// Drop the target's packets silently both ways for `duration`, inside the network namespace of a
    /// PostgreSQL or MariaDB the case starts for itself (nf_tables): the server notices only by TCP keepalive.
    KeepalivePartition,
    /// Kill the Redis primary, promote its replica, point the clients at it.
    Failover,
    /// Kill the Redis primary watched by 3 Sentinels; they agree it is down, promote its replica,
    /// and the clients find the new primary by asking them.
    SentinelFailover,
    /// SIGKILL the master of a Redis Cluster serving the target's lock (key 0 for `target =
    /// "server"`); the other masters fail it and its replica takes over.
    ClusterMasterKill,
    /// `CLUSTER FAILOVER` on the replica of the master serving the target's lock: the roles swap
    /// once the replica has every write.
    ClusterFailover,
    /// Kill the leader of the 3-member etcd cluster or ZooKeeper ensemble.
    LeaderKill,
    /// SIGKILL Redlock nodes (`nodes`); restart them after `duration` if given (their data dir kept:
    /// without persistence they come back empty).
    NodeKill,
    /// Kill Redlock nodes and start them again at once, without persistence: they come back empty.
    NodeRestart,
    /// Run one Redlock node's wall clock `rate` times as fast (libfaketime) for the whole case: its
    /// keys expire early.
    ClockJump,
    /// Kill the Redis server and restart it on its data dir, with or without durable persistence
    /// (`durability`).
    ServerRestart,
    /// End the holder's PostgreSQL session from the server (`pg_terminate_backend`, what an
    /// administrator or a session timeout does), `after_acquire` after its acquire.
    TerminateSession,
}

impl FaultKind {
    /// Every kind, in listing order.
    pub(crate) const ALL: [FaultKind; 23] = [
        FaultKind::PauseWorker,
        FaultKind::CrashWorker,
        FaultKind::StarveWorker,
        FaultKind::CpuHog,
        FaultKind::CgroupQuota,
        FaultKind::PauseServer,
        FaultKind::ClientPause,
        FaultKind::PubsubKill,
        FaultKind::BusyScript,
        FaultKind::ProxyDelay,
        FaultKind::ProxyBlackhole,
        FaultKind::ProxyReset,
        FaultKind::KeepalivePartition,
        FaultKind::Failover,
        FaultKind::SentinelFailover,
        FaultKind::ClusterMasterKill,
        FaultKind::ClusterFailover,
        FaultKind::LeaderKill,
        FaultKind::NodeKill,
        FaultKind::NodeRestart,
        FaultKind::ClockJump,
        FaultKind::ServerRestart,
        FaultKind::TerminateSession,
    ];

    /// The name in scenario files and results.
    pub(crate) fn name(self) -> &'static str {
        match self {
            FaultKind::PauseWorker => "pause_worker",
            FaultKind::CrashWorker => "crash_worker",
            FaultKind::StarveWorker => "starve_worker",
            FaultKind::CpuHog => "cpu_hog",
            FaultKind::CgroupQuota => "cgroup_quota",
            FaultKind::PauseServer => "pause_server",
            FaultKind::ClientPause => "client_pause",
            FaultKind::PubsubKill => "pubsub_kill",
            FaultKind::BusyScript => "busy_script",
            FaultKind::ProxyDelay => "proxy_delay",
            FaultKind::ProxyBlackhole => "proxy_blackhole",
            FaultKind::ProxyReset => "proxy_reset",
            FaultKind::KeepalivePartition => "keepalive_partition",
            FaultKind::Failover => "failover",
            FaultKind::SentinelFailover => "sentinel_failover",
            FaultKind::ClusterMasterKill => "cluster_master_kill",
            FaultKind::ClusterFailover => "cluster_failover",
            FaultKind::LeaderKill => "leader_kill",
            FaultKind::NodeKill => "node_kill",
            FaultKind::NodeRestart => "node_restart",
            FaultKind::ClockJump => "clock_jump",
            FaultKind::ServerRestart => "server_restart",
            FaultKind::TerminateSession => "terminate_session",
        }
    }

    /// Whether the fault can make a lock unavailable, so the time until the next acquire is worth
    /// recording (a CPU hog, a slow network or dropped pub/sub connections slow things down; they do
    /// not take a lock away by themselves).
    pub(crate) fn measures_recovery(self) -> bool {
        !matches!(
            self,
            FaultKind::CpuHog | FaultKind::ProxyDelay | FaultKind::PubsubKill
        )
    }

    /// How long after the fault's window the case must still run so that what it did to the lock
    /// can be seen: for a fault that can take a lock away, half the watchdog TTL `ttl` (a watchdog
    /// renews every third of it, so a renewal or a re-acquire follows the fault within that); none
    /// for one that only slows things down, nor for a clock that runs fast the whole case (there is
    /// no window after it).
    pub(crate) fn recovery(self, ttl: Duration) -> Duration {
        match self {
            FaultKind::CpuHog
            | FaultKind::ProxyDelay
            | FaultKind::PubsubKill
            | FaultKind::ClockJump => Duration::ZERO,
            FaultKind::PauseWorker
            | FaultKind::CrashWorker
            | FaultKind::StarveWorker
            | FaultKind::CgroupQuota
            | FaultKind::PauseServer
            | FaultKind::ClientPause
            | FaultKind::BusyScript
            | FaultKind::ProxyBlackhole
            | FaultKind::ProxyReset
            | FaultKind::KeepalivePartition
            | FaultKind::Failover
            | FaultKind::SentinelFailover
            | FaultKind::ClusterMasterKill
            | FaultKind::ClusterFailover
            | FaultKind::LeaderKill
            | FaultKind::NodeKill
            | FaultKind::NodeRestart
            | FaultKind::ServerRestart
            | FaultKind::TerminateSession => ttl / 2,
        }
    }

    /// What acts on what: a client process, the proxies, or the server.
    pub(crate) fn scope(self) -> FaultScope {
        match self {
            FaultKind::PauseWorker
            | FaultKind::CrashWorker
            | FaultKind::StarveWorker
            | FaultKind::CpuHog
            | FaultKind::CgroupQuota => FaultScope::WorkerProcess,
            FaultKind::ProxyDelay
            | FaultKind::ProxyBlackhole
            | FaultKind::ProxyReset
            | FaultKind::KeepalivePartition => FaultScope::Network,
            FaultKind::PauseServer
            | FaultKind::ClientPause
            | FaultKind::PubsubKill
            | FaultKind::BusyScript
            | FaultKind::Failover
            | FaultKind::SentinelFailover
            | FaultKind::ClusterMasterKill
            | FaultKind::ClusterFailover
            | FaultKind::LeaderKill
            | FaultKind::NodeKill
            | FaultKind::NodeRestart
            | FaultKind::ClockJump
            | FaultKind::ServerRestart
            | FaultKind::TerminateSession => FaultScope::Server,
        }
    }

    /// The settings this kind takes besides `kind`, `at` and `target`; `duration` is required when
    /// listed first in [`FaultKind::required`].
    fn allowed(self) -> &'static [&'static str] {
        match self {
            FaultKind::PauseWorker
            | FaultKind::StarveWorker
            | FaultKind::PauseServer
            | FaultKind::ClientPause => &["duration"],
            FaultKind::CrashWorker
            | FaultKind::LeaderKill
            | FaultKind::SentinelFailover
            | FaultKind::ClusterMasterKill
            | FaultKind::ClusterFailover => &[],
            FaultKind::CpuHog => &["duration", "threads"],
            FaultKind::CgroupQuota => &["duration", "quota", "period"],
            FaultKind::PubsubKill => &["duration", "every"],
            FaultKind::BusyScript => &["duration", "after_acquire"],
            FaultKind::ProxyReset => &["duration", "every", "after_acquire"],
            FaultKind::ProxyDelay => &["duration", "delay", "direction", "after_acquire"],
            FaultKind::ProxyBlackhole => &["duration", "direction", "after_acquire"],
            FaultKind::KeepalivePartition => &["duration", "after_acquire"],
            FaultKind::Failover => &["replication_lag"],
            FaultKind::NodeKill => &["duration", "nodes"],
            FaultKind::NodeRestart => &["nodes"],
            FaultKind::ClockJump => &["nodes", "rate"],
            FaultKind::ServerRestart => &["durability"],
            FaultKind::TerminateSession => &["after_acquire"],
        }
    }

    /// The settings this kind cannot do without.
    fn required(self) -> &'static [&'static str] {
        match self {
            FaultKind::PauseWorker
            | FaultKind::StarveWorker
            | FaultKind::PauseServer
            | FaultKind::ClientPause
            | FaultKind::CpuHog
            | FaultKind::CgroupQuota
            | FaultKind::BusyScript
            | FaultKind::ProxyBlackhole
            | FaultKind::KeepalivePartition => &["duration"],
            FaultKind::ProxyDelay => &["duration", "delay"],
            FaultKind::NodeKill | FaultKind::NodeRestart | FaultKind::ClockJump => &["nodes"],
            FaultKind::CrashWorker
            | FaultKind::PubsubKill
            | FaultKind::ProxyReset
            | FaultKind::Failover
            | FaultKind::SentinelFailover
            | FaultKind::ClusterMasterKill
            | FaultKind::ClusterFailover
            | FaultKind::LeaderKill
            | FaultKind::ServerRestart
            | FaultKind::TerminateSession => &[],
        }
    }
}

impl fmt::Display for FaultKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for FaultKind {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        let wanted = text.trim().replace('-', "_");
        FaultKind::ALL
            .into_iter()
            .find(|k| k.name() == wanted)
            .ok_or_else(|| {
                let names: Vec<&str> = FaultKind::ALL.iter().map(|k| k.name()).collect();
                format!("unknown fault kind {text:?}; known: {}", names.join(", "))
            })
    }
}

/// Where a fault acts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FaultScope {
    /// A client process (needs `workers = "processes"`).
    WorkerProcess,
    /// The TCP proxies between the clients and the server.
    Network,
    /// The server.
    Server,
}

/// Whom a fault hits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Target {
    /// The first client to acquire a lock at or after the fault's `at` (so it holds when hit). For
    /// `failover`: fail over right after that acquire.
    Holder,
    /// This client.
    Client(u32),
    /// Every client (network faults).
    All,
    /// The server (server faults).
    Server,
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Target::Holder => f.write_str("holder"),
            Target::Client(n) => write!(f, "client:{n}"),
            Target::All => f.write_str("all"),
            Target::Server => f.write_str("server"),
        }
    }
}

fn parse_target(text: &str) -> Result<Target, String> {
    match text.trim() {
        "holder" => Ok(Target::Holder),
        "all" => Ok(Target::All),
        "server" => Ok(Target::Server),
        other => other
            .strip_prefix("client:")
            .and_then(|n| n.parse().ok())
            .map(Target::Client)
            .ok_or_else(|| {
                format!("expected holder, client:<index>, all or server, got {other:?}")
            }),
    }
}

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

impl fmt::Display for Directions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Directions::Upstream => "upstream",
            Directions::Downstream => "downstream",
            Directions::Both => "both",
        })
    }
}

fn parse_directions(text: &str) -> Result<Directions, String> {
    match text.trim() {
        "upstream" => Ok(Directions::Upstream),
        "downstream" => Ok(Directions::Downstream),
        "both" => Ok(Directions::Both),
        other => Err(format!(
            "expected upstream, downstream or both, got {other:?}"
        )),
    }
}

/// A checked fault.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct FaultSpec {
    /// What.
    pub kind: FaultKind,
    /// When, after the case start.
    pub at: Duration,
    /// Whom.
    pub target: Target,
    /// How long (lifted and repeated faults); `None` for one-shot faults.
    pub duration: Option<Duration>,
    /// Repeat period (`pubsub_kill`, `proxy_reset`).
    pub every: Option<Duration>,
    /// Faults on the holder (network faults, `busy_script`): the wait from its acquire to the fault.
    pub after_acquire: Option<Duration>,
    /// Added latency (`proxy_delay`).
    pub delay: Duration,
    /// Proxy direction.
    pub direction: Directions,
    /// Replication link delay (`failover`).
    pub replication_lag: Duration,
    /// Busy threads (`cpu_hog`).
    pub threads: u32,
    /// CPU quota per period (`cgroup_quota`).
    pub quota: Duration,
    /// Quota period (`cgroup_quota`).
    pub period: Duration,
    /// Redlock node indices (`node_kill`, `node_restart`, `clock_jump`).
    pub nodes: Vec<usize>,
    /// Clock rate (`clock_jump`).
    pub rate: u32,
    /// What survives a restart (`server_restart`).
    pub durability: Durability,
}

/// How many nodes a Redlock case starts for itself.
pub(crate) const REDLOCK_NODES: usize = lockbench_servers::RedisNodes::DEFAULT_COUNT;

fn parse_nodes(text: &str) -> Result<Vec<usize>, String> {
    let nodes = text
        .split(',')
        .map(|n| {
            n.trim()
                .parse::<usize>()
                .ok()
                .filter(|i| *i < REDLOCK_NODES)
                .ok_or_else(|| {
                    format!(
                        "expected node indices 0..{} separated by commas, got {text:?}",
                        REDLOCK_NODES - 1
                    )
                })
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(nodes)
}

fn parse_durability(text: &str) -> Result<Durability, String> {
    match text.trim().replace('_', "-").as_str() {
        "none" => Ok(Durability::None),
        "aof-always" => Ok(Durability::AofAlways),
        other => Err(format!("expected none or aof-always, got {other:?}")),
    }
}

fn durability_name(d: Durability) -> &'static str {
    match d {
        Durability::None => "none",
        Durability::AofAlways => "aof-always",
    }
}

const MAX_HOG_THREADS: u32 = 256;

/// The timing `text` of field `name`, relative timings (`2ttl`) taken in `units`.
fn timing(name: &str, text: &Option<String>, units: Units) -> Result<Option<Duration>, String> {
    text.as_deref()
        .map(|t| parse_timing(t, units).map_err(|e| format!("{name}: {e}")))
        .transpose()
}

/// `d`, refused when it is zero.
fn positive(name: &str, d: Option<Duration>) -> Result<Option<Duration>, String> {
    match d {
        Some(d) if d.is_zero() => Err(format!("{name}: must be longer than 0")),
        other => Ok(other),
    }
}

/// Refuses a field `kind` does not take and a missing one it requires.
fn check_fields(kind: FaultKind, file: &FaultFile) -> Result<(), String> {
    let given: [(&str, bool); 12] = [
        ("duration", file.duration.is_some()),
        ("every", file.every.is_some()),
        ("after_acquire", file.after_acquire.is_some()),
        ("delay", file.delay.is_some()),
        ("direction", file.direction.is_some()),
        ("replication_lag", file.replication_lag.is_some()),
        ("threads", file.threads.is_some()),
        ("quota", file.quota.is_some()),
        ("period", file.period.is_some()),
        ("nodes", file.nodes.is_some()),
        ("rate", file.rate.is_some()),
        ("durability", file.durability.is_some()),
    ];
    for (name, set) in given {
        if set && !kind.allowed().contains(&name) {
            return Err(format!("{name}: does not apply to {kind}"));
        }
    }
    for name in kind.required() {
        if !given.iter().any(|(n, set)| n == name && *set) {
            return Err(format!("{name}: missing (required by {kind})"));
        }
    }
    Ok(())
}

/// The fault's target (by default the server for a server fault, the holder otherwise), when `kind`
/// can strike it (and `after_acquire`, if given, aims at a holder).
fn resolve_target(
    kind: FaultKind,
    text: Option<&str>,
    after_acquire: Option<Duration>,
) -> Result<Target, String> {
    let target = match text {
        Some(t) => parse_target(t).map_err(|e| format!("target: {e}"))?,
        None if kind.scope() == FaultScope::Server => Target::Server,
        None => Target::Holder,
    };
    let target_ok = match kind.scope() {
        FaultScope::WorkerProcess => matches!(target, Target::Holder | Target::Client(_)),
        FaultScope::Network => target != Target::Server,
        // A failover may strike right after a client acquired (its lock is then the newest,
        // least replicated write); a holder's session is a holder's only.
        FaultScope::Server if kind == FaultKind::TerminateSession => target == Target::Holder,
        FaultScope::Server => {
            target == Target::Server
                || (matches!(
                    kind,
                    FaultKind::Failover
                        | FaultKind::SentinelFailover
                        | FaultKind::ClusterMasterKill
                        | FaultKind::ClusterFailover
                        | FaultKind::BusyScript
                ) && target == Target::Holder)
        }
    };
    if !target_ok {
        return Err(format!("target: {target} does not apply to {kind}"));
    }
    if after_acquire.is_some() && target != Target::Holder {
        return Err(format!(
            "after_acquire: applies to target = \"holder\" only, not {target}"
        ));
    }
    Ok(target)
}

/// The CPU hog's threads and the cgroup's CPU period and quota, defaults filled in, within bounds.
fn cpu_settings(file: &FaultFile, units: Units) -> Result<(u32, Duration, Duration), String> {
    let threads = file.threads.unwrap_or(4);
    if threads == 0 || threads > MAX_HOG_THREADS {
        return Err(format!(
            "threads: must be 1..={MAX_HOG_THREADS}, got {threads}"
        ));
    }
    let period = positive("period", timing("period", &file.period, units)?)?
        .unwrap_or(Duration::from_millis(100));
    if period < Duration::from_millis(1) || period > Duration::from_secs(1) {
        return Err(format!(
            "period: must be 1ms..=1s (the kernel's bounds), got {}",
            format_duration(period)
        ));
    }
    let quota = positive("quota", timing("quota", &file.quota, units)?)?
        .unwrap_or(Duration::from_millis(5));
    if quota < Duration::from_millis(1) {
        return Err(format!(
            "quota: must be at least 1ms (the kernel's bound), got {}",
            format_duration(quota)
        ));
    }
    Ok((threads, period, quota))
}

impl FaultSpec {
    /// Checks a fault as written, its relative timings (`2ttl`) taken in `units`; the error is one
    /// line naming the field.
    pub(crate) fn resolve(file: &FaultFile, units: Units) -> Result<Self, String> {
        let kind: FaultKind = file
            .kind
            .as_deref()
            .ok_or("kind: missing (e.g. kind = \"pause_worker\")")?
            .parse()
            .map_err(|e| format!("kind: {e}"))?;
        check_fields(kind, file)?;
        let at = timing("at", &file.at, units)?.unwrap_or_default();
        let length = positive("duration", timing("duration", &file.duration, units)?)?;
        let every = positive("every", timing("every", &file.every, units)?)?;
        if every.is_some() && length.is_none() {
            return Err(format!("every: needs a duration (how long {kind} repeats)"));
        }
        let after_acquire = timing("after_acquire", &file.after_acquire, units)?;
        let target = resolve_target(kind, file.target.as_deref(), after_acquire)?;
        let (threads, period, quota) = cpu_settings(file, units)?;
        let nodes = file
            .nodes
            .as_deref()
            .map(parse_nodes)
            .transpose()
            .map_err(|e| format!("nodes: {e}"))?
            .unwrap_or_default();
        if kind == FaultKind::ClockJump && nodes.len() != 1 {
            return Err("nodes: clock_jump takes one node".into());
        }
        let rate = file.rate.unwrap_or(10);
        if !(2..=1000).contains(&rate) {
            return Err(format!("rate: must be 2..=1000, got {rate}"));
        }
        let durability = file
            .durability
            .as_deref()
            .map(parse_durability)
            .transpose()
            .map_err(|e| format!("durability: {e}"))?
            .unwrap_or_default();
        Ok(FaultSpec {
            kind,
            at,
            target,
            duration: length,
            every,
            after_acquire,
            delay: positive("delay", timing("delay", &file.delay, units)?)?.unwrap_or_default(),
            direction: file
                .direction
                .as_deref()
                .map(parse_directions)
                .transpose()
                .map_err(|e| format!("direction: {e}"))?
                .unwrap_or(Directions::Both),
            replication_lag: timing("replication_lag", &file.replication_lag, units)?
                .unwrap_or_default(),
            threads,
            quota,
            period,
            nodes,
            rate,
            durability,
        })
    }

    /// The fault's settings by name, for the results (`at` and `target` excluded: they are the
    /// window's start and target).
    pub(crate) fn parameters(&self) -> Vec<(&'static str, serde_json::Value)> {
        let ms = |d: Duration| serde_json::Value::from(d.as_secs_f64() * 1e3);
        let mut out = Vec::new();
        if let Some(d) = self.duration {
            out.push(("duration_ms", ms(d)));
        }
        if let Some(every) = self.every {
            out.push(("every_ms", ms(every)));
        }
        if let Some(after) = self.after_acquire {
            out.push(("after_acquire_ms", ms(after)));
        }
        match self.kind {
            FaultKind::ProxyDelay => {
                out.push(("delay_ms", ms(self.delay)));
                out.push(("direction", self.direction.to_string().into()));
            }
            FaultKind::ProxyBlackhole => {
                out.push(("direction", self.direction.to_string().into()));
            }
            FaultKind::Failover => out.push(("replication_lag_ms", ms(self.replication_lag))),
            FaultKind::CpuHog => out.push(("threads", self.threads.into())),
            FaultKind::CgroupQuota => {
                out.push(("quota_ms", ms(self.quota)));
                out.push(("period_ms", ms(self.period)));
            }
            FaultKind::NodeKill | FaultKind::NodeRestart => {
                out.push(("nodes", self.nodes_text().into()))
            }
            FaultKind::ClockJump => {
                out.push(("nodes", self.nodes_text().into()));
                out.push(("rate", self.rate.into()));
            }
            FaultKind::ServerRestart => {
                out.push(("durability", durability_name(self.durability).into()));
            }
            FaultKind::PauseWorker
            | FaultKind::CrashWorker
            | FaultKind::StarveWorker
            | FaultKind::PauseServer
            | FaultKind::ClientPause
            | FaultKind::PubsubKill
            | FaultKind::BusyScript
            | FaultKind::ProxyReset
            | FaultKind::KeepalivePartition
            | FaultKind::SentinelFailover
            | FaultKind::ClusterMasterKill
            | FaultKind::ClusterFailover
            | FaultKind::LeaderKill
            | FaultKind::TerminateSession => {}
        }
        out
    }
}

impl FaultSpec {
    /// The same fault with every timing divided by `factor` (`--time-scale`); counts, targets and
    /// kinds kept.
    pub(crate) fn scaled(&self, factor: TimeScale) -> Self {
        FaultSpec {
            at: self.at / factor,
            duration: self.duration.map(|d| d / factor),
            every: self.every.map(|d| d / factor),
            after_acquire: self.after_acquire.map(|d| d / factor),
            delay: self.delay / factor,
            replication_lag: self.replication_lag / factor,
            quota: self.quota / factor,
            period: self.period / factor,
            ..self.clone()
        }
    }

    /// The node indices as written (`3,4`).
    /// When the fault's window, and the recovery after it ([`FaultKind::recovery`]), end at the
    /// latest, from the case start: `at`; for a fault aimed at a holder after the start, the wait for
    /// the next acquire (`next_acquire`: at most the longest task and the think time after it, when
    /// every client waits on one key); the wait after that acquire; the window's `duration`; the
    /// recovery. At 0 a holder fault takes the case's first acquire.
    pub(crate) fn planned_end(&self, ttl: Duration, next_acquire: Duration) -> Duration {
        let pick = if self.target == Target::Holder && !self.at.is_zero() {
            next_acquire
        } else {
            Duration::ZERO
        };
        self.at
            + pick
            + self.after_acquire.unwrap_or_default()
            + self.duration.unwrap_or_default()
            + self.kind.recovery(ttl)
    }

    pub(crate) fn nodes_text(&self) -> String {
        let nodes: Vec<String> = self.nodes.iter().map(usize::to_string).collect();
        nodes.join(",")
    }
}

impl fmt::Display for FaultSpec {
    /// The `--fault` text form, which [`parse_fault_text`] reads back.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} at={} target={}",
            self.kind,
            format_duration(self.at),
            self.target
        )?;
        let allowed = self.kind.allowed();
        let mut put = |name: &str, value: String| -> fmt::Result {
            if allowed.contains(&name) {
                write!(f, " {name}={value}")?;
            }
            Ok(())
        };
        if let Some(d) = self.duration {
            put("duration", format_duration(d))?;
        }
        if let Some(every) = self.every {
            put("every", format_duration(every))?;
        }
        if let Some(after) = self.after_acquire {
            put("after_acquire", format_duration(after))?;
        }
        if self.kind == FaultKind::ProxyDelay {
            put("delay", format_duration(self.delay))?;
        }
        put("direction", self.direction.to_string())?;
        put("replication_lag", format_duration(self.replication_lag))?;
        put("threads", self.threads.to_string())?;
        put("quota", format_duration(self.quota))?;
        put("period", format_duration(self.period))?;
        put("nodes", self.nodes_text())?;
        put("rate", self.rate.to_string())?;
        put("durability", durability_name(self.durability).to_owned())
    }
}

/// Parses the `--fault` text form: the kind, then `name=value` settings separated by spaces, e.g.
/// `pause_worker at=1s duration=2s`.
pub(crate) fn parse_fault_text(text: &str) -> Result<FaultFile, String> {
    let mut words = text.split_whitespace();
    let kind = words
        .next()
        .ok_or("empty fault (expected e.g. \"pause_worker at=1s duration=2s\")")?;
    let mut file = FaultFile {
        kind: Some(kind.to_owned()),
        ..FaultFile::default()
    };
    for word in words {
        let (name, value) = word
            .split_once('=')
            .ok_or_else(|| format!("expected name=value, got {word:?}"))?;
        let value = value.to_owned();
        let slot = match name {
            "at" => &mut file.at,
            "duration" => &mut file.duration,
            "target" => &mut file.target,
            "every" => &mut file.every,
            "after_acquire" => &mut file.after_acquire,
            "delay" => &mut file.delay,
            "direction" => &mut file.direction,
            "replication_lag" => &mut file.replication_lag,
            "quota" => &mut file.quota,
            "period" => &mut file.period,
            "nodes" => &mut file.nodes,
            "durability" => &mut file.durability,
            "rate" => {
                file.rate = Some(
                    value
                        .parse()
                        .map_err(|_| format!("rate: expected a number, got {value:?}"))?,
                );
                continue;
            }
            "threads" => {
                file.threads = Some(
                    value
                        .parse()
                        .map_err(|_| format!("threads: expected a count, got {value:?}"))?,
                );
                continue;
            }
            other => return Err(format!("unknown fault setting {other:?}")),
        };
        *slot = Some(value);
    }
    Ok(file)
}

/// Whether a fault of `kind` needs the clients in worker processes.
pub(crate) fn needs_processes(kind: FaultKind) -> bool {
    kind.scope() == FaultScope::WorkerProcess
}

/// Whether a fault of `kind` needs the clients' connections to go through TCP proxies.
pub(crate) fn needs_proxies(kind: FaultKind) -> bool {
    kind.scope() == FaultScope::Network || kind == FaultKind::Failover
}

/// The servers a fault must have a case start for itself (it destroys them or needs them set up
/// its way), if any.
pub(crate) fn own_topology(spec: &FaultSpec) -> Option<Topology> {
    match spec.kind {
        FaultKind::Failover => Some(Topology::Pair),
        FaultKind::SentinelFailover => Some(Topology::RedisSentinel),
        FaultKind::ClusterMasterKill | FaultKind::ClusterFailover => Some(Topology::RedisCluster),
        FaultKind::LeaderKill => Some(Topology::Cluster),
        FaultKind::NodeKill | FaultKind::NodeRestart => {
            Some(Topology::RedisNodes { fake_clock: None })
        }
        FaultKind::ClockJump => Some(Topology::RedisNodes {
            fake_clock: spec.nodes.first().map(|n| (*n, spec.rate)),
        }),
        FaultKind::ServerRestart => Some(Topology::RedisNode(spec.durability)),
        FaultKind::KeepalivePartition => Some(Topology::PostgresNamespace),
        FaultKind::PauseWorker
        | FaultKind::CrashWorker
        | FaultKind::StarveWorker
        | FaultKind::CpuHog
        | FaultKind::CgroupQuota
        | FaultKind::PauseServer
        | FaultKind::ClientPause
        | FaultKind::PubsubKill
        | FaultKind::BusyScript
        | FaultKind::ProxyDelay
        | FaultKind::ProxyBlackhole
        | FaultKind::ProxyReset
        | FaultKind::TerminateSession => None,
    }
}

/// The servers a case with `specs` starts for itself: the first fault's topology, with the fake
/// clock of a `clock_jump` merged into Redlock nodes.
pub(crate) fn case_topology(specs: &[FaultSpec]) -> Option<Topology> {
    let mut topology = specs.iter().find_map(own_topology)?;
    if let Topology::RedisNodes { fake_clock } = &mut topology {
        *fake_clock = specs.iter().filter_map(own_topology).find_map(|t| match t {
            Topology::RedisNodes { fake_clock } => fake_clock,
            Topology::Pair
            | Topology::RedisSentinel
            | Topology::RedisCluster
            | Topology::Cluster
            | Topology::RedisNode(_)
            | Topology::PostgresNamespace => None,
        });
    }
    Some(topology)
}

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
    PostgresNamespace,
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
            Topology::PostgresNamespace => starts.namespaced.map(|s| s.takes),
        }
    }

    /// The server kinds this topology replaces the run's shared servers for: those that offer it.
    pub(crate) fn replaces(self) -> Vec<ServerKind> {
        kinds::all()
            .filter(|k| self.takes(&k.faults().own).is_some())
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const UNITS: Units = Units {
        ttl: Duration::from_millis(1500),
        task: Duration::from_millis(40),
    };

    fn resolve(text: &str) -> Result<FaultSpec, String> {
        FaultSpec::resolve(&parse_fault_text(text)?, UNITS)
    }

    #[test]
    fn timings_in_ttl_units_and_scaled() {
        let f = resolve("pause_worker at=0.5ttl duration=2ttl").expect("valid");
        assert_eq!(f.at, Duration::from_millis(750));
        assert_eq!(f.duration, Some(Duration::from_secs(3)));
        assert_eq!(
            f.to_string(),
            "pause_worker at=750ms target=holder duration=3s"
        );
        let p = resolve("pubsub_kill at=1ttl duration=3ttl every=0.1ttl").expect("valid");
        assert_eq!(p.every, Some(Duration::from_millis(150)));
        let d = resolve("proxy_delay at=2task duration=1s delay=0.25ttl").expect("valid");
        assert_eq!(
            (d.at, d.delay),
            (Duration::from_millis(80), Duration::from_millis(375))
        );
        let s = d.scaled(TimeScale::parse("5").expect("scale"));
        assert_eq!(
            (s.at, s.duration, s.delay),
            (
                Duration::from_millis(16),
                Some(Duration::from_millis(200)),
                Duration::from_millis(75)
            )
        );
        assert_eq!(
            (s.kind, s.target, s.direction),
            (d.kind, d.target, d.direction)
        );
        let err = resolve("pause_worker duration=-2ttl").expect_err("negative");
        assert!(
            err.starts_with("duration: ") && err.contains("negative"),
            "{err}"
        );
    }

    #[test]
    fn defaults_and_round_trip() {
        let f = resolve("pause-worker at=1s duration=2500ms").expect("valid");
        assert_eq!(f.kind, FaultKind::PauseWorker);
        assert_eq!(f.target, Target::Holder);
        assert_eq!(f.at, Duration::from_secs(1));
        assert_eq!(f.duration, Some(Duration::from_millis(2500)));
        assert_eq!(resolve(&f.to_string()), Ok(f.clone()));
        let s = resolve("failover at=2s replication_lag=300ms").expect("valid");
        assert_eq!(s.target, Target::Server);
        assert_eq!(resolve(&s.to_string()), Ok(s));
        let d =
            resolve("proxy_delay at=1s duration=1s delay=200ms direction=downstream target=all")
                .expect("valid");
        assert_eq!(d.direction, Directions::Downstream);
        assert_eq!(resolve(&d.to_string()), Ok(d.clone()));
        assert!(
            d.parameters()
                .iter()
                .any(|(n, v)| *n == "delay_ms" && v.as_f64() == Some(200.0))
        );
    }

    #[test]
    fn a_keepalive_partition_strikes_a_client_on_a_namespaced_postgres() {
        let f = resolve("keepalive_partition duration=5s").expect("valid");
        assert_eq!(f.target, Target::Holder);
        assert_eq!(f.duration, Some(Duration::from_secs(5)));
        assert_eq!(resolve(&f.to_string()), Ok(f.clone()));
        assert_eq!(own_topology(&f), Some(Topology::PostgresNamespace));
        assert_eq!(
            Topology::PostgresNamespace.replaces(),
            vec![ServerKind::Postgres, ServerKind::Mysql]
        );
        assert!(
            needs_proxies(f.kind),
            "the holder's connections are found by its proxies"
        );
        let why = resolve("keepalive_partition duration=5s target=server").expect_err("server");
        assert!(why.contains("target"), "{why}");
        let why = resolve("keepalive_partition").expect_err("no duration");
        assert!(why.contains("duration"), "{why}");
        assert!(resolve("keepalive_partition duration=5s direction=both").is_err());
    }

    #[test]
    fn node_and_restart_faults_round_trip() {
        for text in [
            "node_kill at=1s nodes=3,4 duration=2s",
            "node_restart at=1200ms nodes=2",
            "clock_jump nodes=2 rate=10",
            "server_restart at=1s durability=aof-always",
        ] {
            let f = resolve(text).expect(text);
            assert_eq!(f.target, Target::Server, "{text}");
            assert_eq!(resolve(&f.to_string()), Ok(f.clone()), "{text}");
        }
        let jump = resolve("clock_jump nodes=2 rate=10").expect("valid");
        assert_eq!(
            own_topology(&jump),
            Some(Topology::RedisNodes {
                fake_clock: Some((2, 10))
            })
        );
        let restart = resolve("node_restart nodes=3,4").expect("valid");
        assert_eq!(
            case_topology(&[restart, jump]),
            Some(Topology::RedisNodes {
                fake_clock: Some((2, 10))
            })
        );
        let durable = resolve("server_restart durability=aof_always").expect("valid");
        assert_eq!(durable.durability, Durability::AofAlways);
        assert_eq!(
            own_topology(&durable),
            Some(Topology::RedisNode(Durability::AofAlways))
        );
        for (text, needle) in [
            ("node_kill at=1s", "nodes: missing"),
            ("node_restart nodes=5", "nodes: expected node indices 0..4"),
            ("clock_jump nodes=1,2", "nodes: clock_jump takes one node"),
            ("clock_jump nodes=1 rate=1", "rate: must be"),
            ("server_restart durability=fast", "durability: expected"),
            ("server_restart nodes=1", "nodes: does not apply"),
        ] {
            let err = resolve(text).expect_err(text);
            assert!(err.contains(needle), "{text}: {err}");
        }
    }

    #[test]
    fn every_bad_setting_is_named() {
        for (text, needle) in [
            ("", "empty fault"),
            ("nap at=1s", "kind: unknown fault kind"),
            ("pause_worker at=1s", "duration: missing"),
            (
                "pause_worker duration=0s",
                "duration: must be longer than 0",
            ),
            (
                "pause_worker duration=1s delay=5ms",
                "delay: does not apply",
            ),
            ("crash_worker duration=1s", "duration: does not apply"),
            (
                "crash_worker target=server",
                "target: server does not apply",
            ),
            ("failover target=all", "target: all does not apply"),
            ("leader_kill target=holder", "target: holder does not apply"),
            ("proxy_delay duration=1s", "delay: missing"),
            ("proxy_reset every=100ms", "every: needs a duration"),
            (
                "pause_worker at=soon duration=1s",
                "at: expected a duration",
            ),
            (
                "pause_worker duration=1s target=client:x",
                "target: expected",
            ),
            ("cpu_hog duration=1s threads=0", "threads: must be"),
            ("cgroup_quota duration=1s period=2s", "period: must be"),
            (
                "proxy_blackhole duration=1s direction=sideways",
                "direction:",
            ),
            ("pause_worker colour=blue", "unknown fault setting"),
            ("pause_worker duration", "expected name=value"),
        ] {
            let err = resolve(text).expect_err(text);
            assert!(err.contains(needle), "{text}: {err}");
            assert!(!err.contains('\n'), "{text}: one line");
        }
    }
}
