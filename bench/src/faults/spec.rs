//! A fault as a scenario asks for it: the `[[faults]]` tables of a scenario file (or `--fault`
//! flags) as written ([`FaultFile`]), and checked ([`FaultSpec`]). What every fault takes (`kind`,
//! `at`, `target`, `duration`, `every`, `after_acquire`) is read for all of them
//! ([`super::families`]); the rest each family reads for itself, as its [`Profile`] says. Every
//! field is checked against the fault's kind, so a misspelt or misplaced setting is one error line
//! naming it.
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

use std::time::Duration;

use lockbench_servers::Durability;
use lockers::Capabilities;
use serde::Deserialize;

use super::kind::{Aftermath, FaultKind, Needs, Target, Targets};
use super::proxies::Directions;
use super::topology::Topology;
use crate::base::duration::{Units, parse_timing};
use crate::base::time_scale::TimeScale;
use crate::strategies::Strategy;

/// A fault as written in a scenario file: every field optional, unknown fields rejected. Which of
/// them a kind takes its family says ([`Profile::allowed`]).
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

/// What a family says of one of its kinds: the settings it takes, whom it strikes, what it leaves
/// behind, what it needs of the strategy's kind and of the run, and how it reads and reports its
/// own settings.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Profile {
    /// The settings it takes besides `kind`, `at` and `target`.
    pub allowed: &'static [&'static str],
    /// The settings it cannot do without.
    pub required: &'static [&'static str],
    /// Whom it strikes.
    pub targets: Targets,
    /// What it leaves behind.
    pub aftermath: Aftermath,
    /// What it needs of the strategy's server kind.
    pub needs: Needs,
    /// Whether it needs the clients' connections to go through TCP proxies.
    pub proxies: bool,
    /// Reads and checks the settings of its own from a fault as written into the spec (whose
    /// shared settings are read).
    pub read: fn(&FaultFile, Units, &mut FaultSpec) -> Result<(), String>,
    /// Its own settings, for the results.
    pub parameters: fn(&FaultSpec, &mut Vec<(&'static str, serde_json::Value)>),
    /// The servers it must have a case start for itself (it destroys them or needs them set up its
    /// way), if any.
    pub setup: fn(&FaultSpec) -> Option<Topology>,
    /// What it needs of the strategy itself (a library it reaches); why not.
    pub of_the_strategy: fn(&Strategy, &Capabilities) -> Result<(), String>,
}

impl Profile {
    /// A kind that takes nothing of its own, needs no servers of its own nor proxies, and applies
    /// to every strategy its needs allow: the rest of a family's profile.
    pub(crate) const PLAIN: Profile = Profile {
        allowed: &[],
        required: &[],
        targets: Targets::Server,
        aftermath: Aftermath::TakesLock,
        needs: Needs::Server,
        proxies: false,
        read: |_, _, _| Ok(()),
        parameters: |_, _| {},
        setup: |_| None,
        of_the_strategy: |_, _| Ok(()),
    };
}

impl FaultSpec {
    /// A fault of `kind` at `at` on `target`, every setting of its own at its default.
    pub(crate) fn new(kind: FaultKind, at: Duration, target: Target) -> Self {
        FaultSpec {
            kind,
            at,
            target,
            duration: None,
            every: None,
            after_acquire: None,
            delay: Duration::ZERO,
            direction: Directions::Both,
            replication_lag: Duration::ZERO,
            threads: 4,
            quota: Duration::from_millis(5),
            period: Duration::from_millis(100),
            nodes: Vec::new(),
            rate: 10,
            durability: Durability::default(),
        }
    }

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
    pub(crate) fn nodes_text(&self) -> String {
        let nodes: Vec<String> = self.nodes.iter().map(usize::to_string).collect();
        nodes.join(",")
    }
}

/// Parses a target as written.
pub(crate) fn parse_target(text: &str) -> Result<Target, String> {
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

/// The timing `text` of field `name`, relative timings (`2ttl`) taken in `units`.
pub(crate) fn timing(
    name: &str,
    text: &Option<String>,
    units: Units,
) -> Result<Option<Duration>, String> {
    text.as_deref()
        .map(|t| parse_timing(t, units).map_err(|e| format!("{name}: {e}")))
        .transpose()
}

/// `d`, refused when it is zero.
pub(crate) fn positive(name: &str, d: Option<Duration>) -> Result<Option<Duration>, String> {
    match d {
        Some(d) if d.is_zero() => Err(format!("{name}: must be longer than 0")),
        other => Ok(other),
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
