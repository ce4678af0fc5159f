//! Each kind's family, and what a run asks of a kind through its family's [`Profile`] and its
//! family's own settings ([`FamilySpec`]): a fault as written is checked here for what every fault
//! takes (`kind`, `at`, `target`, `duration`, `every`, `after_acquire`) and by its family for the
//! rest, into a [`FaultSpec`]; its settings for the results and the `--fault` text, the servers it
//! starts for itself and the end of its window come from the same. The families:
//!
//! | family | kinds | file |
//! |---|---|---|
//! | a client's worker process | `pause_worker`, `crash_worker`, `starve_worker`, `cpu_hog`, `cgroup_quota` | [`worker_process`](super::worker_process) |
//! | the server's process | `pause_server` | [`server_pause`](super::server_pause) |
//! | Redis commands to the run's primary | `client_pause`, `pubsub_kill`, `busy_script` | [`redis_commands`](super::redis_commands) |
//! | the network | `proxy_delay`, `proxy_blackhole`, `proxy_reset`, `keepalive_partition` | [`network`](super::network) |
//! | failovers | `failover`, `sentinel_failover`, `cluster_master_kill`, `cluster_failover` | [`failovers`](super::failovers) |
//! | a cluster's leader | `leader_kill` | [`leader_kill`](super::leader_kill) |
//! | nodes and restarts | `node_kill`, `node_restart`, `clock_jump`, `server_restart` | [`node_faults`](super::node_faults) |
//! | sessions | `terminate_session` | [`sessions`](super::sessions) |

use std::fmt;
use std::time::Duration;

use super::failovers::FailoverSpec;
use super::kind::{FaultKind, Needs, RedisCommand, Target};
use super::network::NetworkSpec;
use super::node_faults::NodeSpec;
use super::spec::{FaultFile, Profile, Setting, Spec, parse_target, positive, timing};
use super::topology::Topology;
use super::worker_process::WorkerSpec;
use super::{
    failovers, leader_kill, network, node_faults, redis_commands, server_pause, sessions,
    worker_process,
};
use crate::base::duration::{Units, format_duration};
use crate::base::time_scale::TimeScale;

/// A checked fault: what every fault takes, and its family's kind with that family's own settings.
pub(crate) type FaultSpec = Spec<FamilySpec>;

/// A fault's family, with its kind and, for a family that has some, the settings of its own (each
/// family's type, in its file).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum FamilySpec {
    /// A fault on a client's worker process.
    Worker(WorkerSpec),
    /// `pause_server`.
    PauseServer,
    /// A Redis command to the run's primary.
    RedisCommand(RedisCommand),
    /// A fault on the network.
    Network(NetworkSpec),
    /// A failover.
    Failover(FailoverSpec),
    /// `leader_kill`.
    LeaderKill,
    /// A fault on nodes or a restartable server.
    Node(NodeSpec),
    /// `terminate_session`.
    TerminateSession,
}

impl FamilySpec {
    /// Reads and checks, through its family, the settings a fault of `kind` as written takes of
    /// its own.
    fn read(kind: FaultKind, file: &FaultFile, units: Units) -> Result<Self, String> {
        Ok(match kind {
            FaultKind::Worker(k) => FamilySpec::Worker(WorkerSpec::read(k, file, units)?),
            FaultKind::PauseServer => FamilySpec::PauseServer,
            FaultKind::RedisCommand(k) => FamilySpec::RedisCommand(k),
            FaultKind::Network(k) => FamilySpec::Network(NetworkSpec::read(k, file, units)?),
            FaultKind::Failover(k) => FamilySpec::Failover(FailoverSpec::read(k, file, units)?),
            FaultKind::LeaderKill => FamilySpec::LeaderKill,
            FaultKind::Node(k) => FamilySpec::Node(NodeSpec::read(k, file)?),
            FaultKind::TerminateSession => FamilySpec::TerminateSession,
        })
    }

    /// Its family's own settings, for the `--fault` text and the results.
    fn settings(&self) -> Vec<Setting> {
        match self {
            FamilySpec::Worker(own) => own.settings(),
            FamilySpec::Network(own) => own.settings(),
            FamilySpec::Failover(own) => own.settings(),
            FamilySpec::Node(own) => own.settings(),
            FamilySpec::PauseServer
            | FamilySpec::RedisCommand(_)
            | FamilySpec::LeaderKill
            | FamilySpec::TerminateSession => Vec::new(),
        }
    }

    /// The same with its family's timings divided by `factor` (`--time-scale`).
    fn scaled(&self, factor: TimeScale) -> Self {
        match self {
            FamilySpec::Worker(own) => FamilySpec::Worker(own.scaled(factor)),
            FamilySpec::Network(own) => FamilySpec::Network(own.scaled(factor)),
            FamilySpec::Failover(own) => FamilySpec::Failover(own.scaled(factor)),
            other => other.clone(),
        }
    }

    /// The servers it must have a case start for itself, if any.
    fn topology(&self) -> Option<Topology> {
        match self {
            FamilySpec::Network(own) => own.topology(),
            FamilySpec::Failover(own) => Some(own.topology()),
            FamilySpec::LeaderKill => Some(leader_kill::TOPOLOGY),
            FamilySpec::Node(own) => Some(own.topology()),
            FamilySpec::Worker(_)
            | FamilySpec::PauseServer
            | FamilySpec::RedisCommand(_)
            | FamilySpec::TerminateSession => None,
        }
    }
}

impl FaultKind {
    /// What its family says of it.
    pub(crate) fn profile(self) -> Profile {
        match self {
            FaultKind::Worker(k) => worker_process::profile(k),
            FaultKind::PauseServer => server_pause::PROFILE,
            FaultKind::RedisCommand(k) => redis_commands::profile(k),
            FaultKind::Network(k) => network::profile(k),
            FaultKind::Failover(k) => failovers::profile(k),
            FaultKind::LeaderKill => leader_kill::PROFILE,
            FaultKind::Node(k) => node_faults::profile(k),
            FaultKind::TerminateSession => sessions::PROFILE,
        }
    }

    /// How long after the fault's window the case must still run so that what it did to the lock
    /// can be seen, for a watchdog TTL `ttl` (see [`super::kind::Aftermath`]).
    pub(crate) fn recovery(self, ttl: Duration) -> Duration {
        self.profile().aftermath.recovery(ttl)
    }

    /// What it needs of the strategy's server kind.
    pub(crate) fn needs(self) -> Needs {
        self.profile().needs
    }
}

/// Whether a fault of `kind` needs the clients in worker processes.
pub(crate) fn needs_processes(kind: FaultKind) -> bool {
    kind.needs() == Needs::WorkerProcesses
}

/// Whether a fault of `kind` needs the clients' connections to go through TCP proxies.
pub(crate) fn needs_proxies(kind: FaultKind) -> bool {
    kind.profile().proxies
}

/// The servers a fault must have a case start for itself (it destroys them or needs them set up
/// its way), if any.
pub(crate) fn own_topology(spec: &FaultSpec) -> Option<Topology> {
    spec.family.topology()
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
            | Topology::SqlNamespace => None,
        });
    }
    Some(topology)
}

/// Refuses a field `kind` does not take and a missing one it requires.
fn check_fields(kind: FaultKind, file: &FaultFile) -> Result<(), String> {
    let profile = kind.profile();
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
        if set && !profile.allowed.contains(&name) {
            return Err(format!("{name}: does not apply to {kind}"));
        }
    }
    for name in profile.required {
        if !given.iter().any(|(n, set)| n == name && *set) {
            return Err(format!("{name}: missing (required by {kind})"));
        }
    }
    Ok(())
}

/// The fault's target (by default the one its family names), when `kind` can strike it (and
/// `after_acquire`, if given, aims at a holder).
fn resolve_target(
    kind: FaultKind,
    text: Option<&str>,
    after_acquire: Option<Duration>,
) -> Result<Target, String> {
    let targets = kind.profile().targets;
    let target = match text {
        Some(t) => parse_target(t).map_err(|e| format!("target: {e}"))?,
        None => targets.default_target(),
    };
    if !targets.allow(target) {
        return Err(format!("target: {target} does not apply to {kind}"));
    }
    if after_acquire.is_some() && target != Target::Holder {
        return Err(format!(
            "after_acquire: applies to target = \"holder\" only, not {target}"
        ));
    }
    Ok(target)
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
        Ok(FaultSpec {
            kind,
            at,
            target,
            duration: length,
            every,
            after_acquire,
            family: FamilySpec::read(kind, file, units)?,
        })
    }

    /// The same fault with every timing divided by `factor` (`--time-scale`); counts, targets and
    /// kinds kept.
    pub(crate) fn scaled(&self, factor: TimeScale) -> Self {
        self.scaled_with(factor, self.family.scaled(factor))
    }

    /// Its settings besides `kind`, `at` and `target`: those every fault takes, then its family's.
    pub(crate) fn settings(&self) -> Vec<Setting> {
        let mut all = self.shared_settings();
        all.extend(self.family.settings());
        all
    }

    /// The fault's settings by name, for the results (`at` and `target` excluded: they are the
    /// window's start and target).
    pub(crate) fn parameters(&self) -> Vec<(String, serde_json::Value)> {
        self.settings().iter().map(Setting::parameter).collect()
    }

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
}

impl fmt::Display for FaultSpec {
    /// The `--fault` text form, which [`super::spec::parse_fault_text`] reads back.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} at={} target={}",
            self.kind,
            format_duration(self.at),
            self.target
        )?;
        for setting in self.settings() {
            write!(f, " {}", setting.written())?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backends::ServerKind;
    use crate::base::time_scale::TimeScale;
    use crate::faults::kind::WorkerFault;
    use crate::faults::proxies::Directions;
    use crate::faults::spec::parse_fault_text;
    use lockbench_servers::Durability;

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
        let delay = |delay| {
            FamilySpec::Network(NetworkSpec::Delay {
                delay,
                direction: Directions::Both,
            })
        };
        assert_eq!(
            (d.at, &d.family),
            (
                Duration::from_millis(80),
                &delay(Duration::from_millis(375))
            )
        );
        let s = d.scaled(TimeScale::parse("5").expect("scale"));
        assert_eq!(
            (s.at, s.duration, &s.family),
            (
                Duration::from_millis(16),
                Some(Duration::from_millis(200)),
                &delay(Duration::from_millis(75))
            )
        );
        assert_eq!((s.kind, s.target), (d.kind, d.target));
        let q = resolve("cgroup_quota duration=1s quota=0.01ttl").expect("valid");
        assert_eq!(
            q.scaled(TimeScale::parse("5").expect("scale")).family,
            FamilySpec::Worker(WorkerSpec::CgroupQuota {
                quota: Duration::from_millis(3),
                period: Duration::from_millis(20)
            })
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
        assert_eq!(f.kind, FaultKind::Worker(WorkerFault::Pause));
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
        assert_eq!(
            d.family,
            FamilySpec::Network(NetworkSpec::Delay {
                delay: Duration::from_millis(200),
                direction: Directions::Downstream
            })
        );
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
        assert_eq!(own_topology(&f), Some(Topology::SqlNamespace));
        assert_eq!(
            Topology::SqlNamespace.replaces(),
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
        assert_eq!(
            durable.family,
            FamilySpec::Node(NodeSpec::ServerRestart {
                durability: Durability::AofAlways
            })
        );
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
