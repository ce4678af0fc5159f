//! The kinds of fault, each in its family: a [`FaultKind`] names its family and the kind within it
//! (`FaultKind::Worker(WorkerFault::Pause)` is `pause_worker`). What a family's kinds need, take and
//! do lives in the family's own file (its [`Profile`](super::spec::Profile), its settings and its
//! injection); this file only names them, and the terms a family describes its kinds in
//! ([`Targets`], [`Aftermath`], [`Needs`]).

use std::fmt;
use std::time::Duration;

use crate::kinds::ServerFault;

/// What is injected: a kind of one family.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) enum FaultKind {
    /// A fault on one client's worker process (`worker_process.rs`).
    Worker(WorkerFault),
    /// SIGSTOP the server process, SIGCONT after `duration` (`server_pause.rs`).
    PauseServer,
    /// A Redis command to the run's primary (`redis_commands.rs`).
    RedisCommand(RedisCommand),
    /// A fault on the network between the clients and the server (`network.rs`).
    Network(NetworkFault),
    /// A primary's failover to its replica, on servers started for the case (`failovers.rs`).
    Failover(Failover),
    /// Kill the leader of the 3-member etcd cluster or ZooKeeper ensemble (`leader_kill.rs`).
    LeaderKill,
    /// A fault on independent nodes or a restartable server started for the case
    /// (`node_faults.rs`).
    Node(NodeFault),
    /// End the holder's PostgreSQL or MySQL session from the server (`pg_terminate_backend`, what an
    /// administrator or a session timeout does), `after_acquire` after its acquire (`sessions.rs`).
    TerminateSession,
}

/// Faults on one client process (processes mode).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) enum WorkerFault {
    /// `pause_worker`: SIGSTOP a client process, SIGCONT it after `duration` (a GC pause).
    Pause,
    /// `crash_worker`: SIGKILL a client process that holds a lock; recovery = until another client
    /// gets the key.
    Crash,
    /// `starve_worker`: block every runtime worker thread of a client process for `duration`.
    Starve,
    /// `cpu_hog`: `threads` busy-looping threads in a client process for `duration`, competing for
    /// the cores.
    CpuHog,
    /// `cgroup_quota`: move a client process into a cgroup with a CPU quota for `duration`.
    CgroupQuota,
}

/// Redis commands to the run's one primary.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) enum RedisCommand {
    /// `client_pause`: `CLIENT PAUSE <duration> ALL`.
    ClientPause,
    /// `pubsub_kill`: `CLIENT KILL TYPE pubsub`, once or `every` period during `duration`.
    PubsubKill,
    /// `busy_script`: a Lua script that keeps Redis busy for `duration`, with
    /// `busy-reply-threshold` lowered to 100 ms so other commands get `BUSY` errors meanwhile
    /// (redisson#3332).
    BusyScript,
}

/// Faults on the network between the clients and the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) enum NetworkFault {
    /// `proxy_delay`: the TCP proxy delays the bytes of `direction` by `delay` for `duration`.
    Delay,
    /// `proxy_blackhole`: the TCP proxy drops the bytes of `direction` for `duration` (a
    /// partition).
    Blackhole,
    /// `proxy_reset`: the TCP proxy resets the target's connections, once or `every` period during
    /// `duration`.
    Reset,
    /// `keepalive_partition`: drop the target's packets silently both ways for `duration`, inside
    /// the network namespace of a server the case starts for itself (nf_tables): the server notices
    /// only by TCP keepalive.
    KeepalivePartition,
}

/// How a failover moves the primary.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) enum Failover {
    /// `failover`: kill the primary, promote its replica, point the clients at it (Redis,
    /// PostgreSQL or MySQL).
    Replica,
    /// `sentinel_failover`: kill the Redis primary watched by 3 Sentinels; they agree it is down,
    /// promote its replica, and the clients find the new primary by asking them.
    Sentinel,
    /// `cluster_master_kill`: SIGKILL the master of a Redis Cluster serving the target's lock (key 0
    /// for `target = "server"`); the other masters fail it and its replica takes over.
    ClusterMasterKill,
    /// `cluster_failover`: `CLUSTER FAILOVER` on the replica of the master serving the target's
    /// lock: the roles swap once the replica has every write.
    ClusterCommand,
}

/// Faults on the case's own Redis nodes or server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) enum NodeFault {
    /// `node_kill`: SIGKILL Redlock nodes (`nodes`); restart them after `duration` if given (their
    /// data dir kept: without persistence they come back empty).
    Kill,
    /// `node_restart`: kill Redlock nodes and start them again at once, without persistence: they
    /// come back empty.
    Restart,
    /// `clock_jump`: run one Redlock node's wall clock `rate` times as fast (libfaketime) for the
    /// whole case: its keys expire early.
    ClockJump,
    /// `server_restart`: kill the Redis server and restart it on its data dir, with or without
    /// durable persistence (`durability`).
    ServerRestart,
}

impl FaultKind {
    /// Every kind, in listing order.
    pub(crate) const ALL: [FaultKind; 23] = [
        FaultKind::Worker(WorkerFault::Pause),
        FaultKind::Worker(WorkerFault::Crash),
        FaultKind::Worker(WorkerFault::Starve),
        FaultKind::Worker(WorkerFault::CpuHog),
        FaultKind::Worker(WorkerFault::CgroupQuota),
        FaultKind::PauseServer,
        FaultKind::RedisCommand(RedisCommand::ClientPause),
        FaultKind::RedisCommand(RedisCommand::PubsubKill),
        FaultKind::RedisCommand(RedisCommand::BusyScript),
        FaultKind::Network(NetworkFault::Delay),
        FaultKind::Network(NetworkFault::Blackhole),
        FaultKind::Network(NetworkFault::Reset),
        FaultKind::Network(NetworkFault::KeepalivePartition),
        FaultKind::Failover(Failover::Replica),
        FaultKind::Failover(Failover::Sentinel),
        FaultKind::Failover(Failover::ClusterMasterKill),
        FaultKind::Failover(Failover::ClusterCommand),
        FaultKind::LeaderKill,
        FaultKind::Node(NodeFault::Kill),
        FaultKind::Node(NodeFault::Restart),
        FaultKind::Node(NodeFault::ClockJump),
        FaultKind::Node(NodeFault::ServerRestart),
        FaultKind::TerminateSession,
    ];

    /// The name in scenario files and results.
    pub(crate) fn name(self) -> &'static str {
        match self {
            FaultKind::Worker(k) => match k {
                WorkerFault::Pause => "pause_worker",
                WorkerFault::Crash => "crash_worker",
                WorkerFault::Starve => "starve_worker",
                WorkerFault::CpuHog => "cpu_hog",
                WorkerFault::CgroupQuota => "cgroup_quota",
            },
            FaultKind::PauseServer => "pause_server",
            FaultKind::RedisCommand(k) => match k {
                RedisCommand::ClientPause => "client_pause",
                RedisCommand::PubsubKill => "pubsub_kill",
                RedisCommand::BusyScript => "busy_script",
            },
            FaultKind::Network(k) => match k {
                NetworkFault::Delay => "proxy_delay",
                NetworkFault::Blackhole => "proxy_blackhole",
                NetworkFault::Reset => "proxy_reset",
                NetworkFault::KeepalivePartition => "keepalive_partition",
            },
            FaultKind::Failover(k) => match k {
                Failover::Replica => "failover",
                Failover::Sentinel => "sentinel_failover",
                Failover::ClusterMasterKill => "cluster_master_kill",
                Failover::ClusterCommand => "cluster_failover",
            },
            FaultKind::LeaderKill => "leader_kill",
            FaultKind::Node(k) => match k {
                NodeFault::Kill => "node_kill",
                NodeFault::Restart => "node_restart",
                NodeFault::ClockJump => "clock_jump",
                NodeFault::ServerRestart => "server_restart",
            },
            FaultKind::TerminateSession => "terminate_session",
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

/// The targets a kind can strike, and the one it strikes when none is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Targets {
    /// A client's process: the holder (by default) or `client:N`.
    Clients,
    /// A client's connections or every client's: anything but the server (the holder by default).
    Connections,
    /// The server only.
    Server,
    /// The server (by default), or right after a holder's acquire (its lock is then the newest,
    /// least replicated write).
    ServerOrHolder,
    /// A holder's session, which is a holder's only (a fault on the server: written
    /// `target = "holder"`).
    HolderOnServer,
}

impl Targets {
    /// The target when none is written.
    pub(crate) fn default_target(self) -> Target {
        match self {
            Targets::Clients | Targets::Connections => Target::Holder,
            Targets::Server | Targets::ServerOrHolder | Targets::HolderOnServer => Target::Server,
        }
    }

    /// Whether a kind taking these can strike `target`.
    pub(crate) fn allow(self, target: Target) -> bool {
        match self {
            Targets::Clients => matches!(target, Target::Holder | Target::Client(_)),
            Targets::Connections => target != Target::Server,
            Targets::Server => target == Target::Server,
            Targets::ServerOrHolder => matches!(target, Target::Server | Target::Holder),
            Targets::HolderOnServer => target == Target::Holder,
        }
    }
}

/// What a fault leaves behind it, which decides what is measured after it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Aftermath {
    /// It can take a lock away: the time until the next acquire is recorded, and the case runs half
    /// the watchdog TTL past its window (a watchdog renews every third of it, so a renewal or a
    /// re-acquire follows the fault within that).
    TakesLock,
    /// It moves the lock to a promoted replica: as [`Aftermath::TakesLock`], and only an acquire
    /// after it tested the lock (whether the new primary grants a lock its holder still believes it
    /// holds).
    MovesLock,
    /// It only slows things down (a CPU hog, a slow network, dropped pub/sub connections): no
    /// recovery to record, nothing to wait for after it.
    SlowsDown,
    /// It lasts the whole case (a clock running fast): recovery recorded, no window after it.
    WholeCase,
}

impl Aftermath {
    /// Whether the time until the next acquire is worth recording.
    pub(crate) fn measures_recovery(self) -> bool {
        self != Aftermath::SlowsDown
    }

    /// How long after the fault's window the case must still run, for a watchdog TTL `ttl`.
    pub(crate) fn recovery(self, ttl: Duration) -> Duration {
        match self {
            Aftermath::TakesLock | Aftermath::MovesLock => ttl / 2,
            Aftermath::SlowsDown | Aftermath::WholeCase => Duration::ZERO,
        }
    }

    /// Whether the fault tested the lock only if some client acquired it after the fault (a
    /// failover). Elsewhere no acquire after the fault can be the lock working: a holder that kept
    /// its lock through a starved runtime, or one that stopped on its loss before its session could
    /// expire.
    pub(crate) fn recovery_is_evidence(self) -> bool {
        self == Aftermath::MovesLock
    }
}

/// What a fault needs of the strategy's server kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Needs {
    /// Clients in worker processes, out of the driver's own.
    WorkerProcesses,
    /// A real server: its process, proxies in front of it.
    Server,
    /// An ability the kind offers.
    Offered(ServerFault),
}
