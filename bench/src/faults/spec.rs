//! A fault as a scenario asks for it: the `[[faults]]` tables of a scenario file (or `--fault`
//! flags) as written ([`FaultFile`]), and checked ([`Spec`]: what every fault takes, with its
//! family's own settings). What every fault takes (`kind`, `at`, `target`, `duration`, `every`,
//! `after_acquire`) is read for all of them ([`super::families`]); the rest each family reads into
//! a settings type of its own, and its [`Profile`] says which of them a kind takes. Every field is
//! checked against the fault's kind, so a misspelt or misplaced setting is one error line naming
//! it.
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

use lockers::Capabilities;
use serde::Deserialize;

use super::kind::{Aftermath, FaultKind, Needs, Target, Targets};
use crate::base::duration::{Units, format_duration, parse_timing};
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

/// A checked fault: what every fault takes, and what its family takes of its own (`family`). The
/// whole fault is a [`FaultSpec`](super::families::FaultSpec) (its family's kind and settings in a
/// [`FamilySpec`](super::families::FamilySpec)); a family's injection sees only its own settings
/// (`Spec<&WorkerSpec>` for a worker fault).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Spec<S> {
    /// What (the kind its family's settings are for).
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
    /// What its family takes of its own.
    pub family: S,
}

impl<S> Spec<S> {
    /// The same fault, with `family` as its family's settings (a family's own view of it).
    pub(crate) fn with<T>(&self, family: T) -> Spec<T> {
        Spec {
            kind: self.kind,
            at: self.at,
            target: self.target,
            duration: self.duration,
            every: self.every,
            after_acquire: self.after_acquire,
            family,
        }
    }

    /// The same fault with every timing every fault takes divided by `factor` (`--time-scale`),
    /// and `family` as its family's settings (scaled by the family).
    pub(crate) fn scaled_with<T>(&self, factor: TimeScale, family: T) -> Spec<T> {
        Spec {
            at: self.at / factor,
            duration: self.duration.map(|d| d / factor),
            every: self.every.map(|d| d / factor),
            after_acquire: self.after_acquire.map(|d| d / factor),
            ..self.with(family)
        }
    }

    /// The settings besides `kind`, `at` and `target` that every fault may take, those given.
    pub(crate) fn shared_settings(&self) -> Vec<Setting> {
        [
            ("duration", self.duration),
            ("every", self.every),
            ("after_acquire", self.after_acquire),
        ]
        .into_iter()
        .filter_map(|(name, d)| d.map(|d| Setting::Timing(name, d)))
        .collect()
    }
}

/// One setting of a fault, as the `--fault` text writes it and the results report it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Setting {
    /// A timing: written as a duration, reported in milliseconds (`delay` as `delay_ms`).
    Timing(&'static str, Duration),
    /// A count, written and reported as a number.
    Count(&'static str, u32),
    /// A word, written and reported as it is.
    Word(&'static str, String),
}

impl Setting {
    /// Its name and value for the results.
    pub(crate) fn parameter(&self) -> (String, serde_json::Value) {
        match self {
            Setting::Timing(name, d) => (format!("{name}_ms"), (d.as_secs_f64() * 1e3).into()),
            Setting::Count(name, n) => ((*name).to_owned(), (*n).into()),
            Setting::Word(name, word) => ((*name).to_owned(), word.as_str().into()),
        }
    }

    /// It as the `--fault` text writes it (`delay=50ms`).
    pub(crate) fn written(&self) -> String {
        match self {
            Setting::Timing(name, d) => format!("{name}={}", format_duration(*d)),
            Setting::Count(name, n) => format!("{name}={n}"),
            Setting::Word(name, word) => format!("{name}={word}"),
        }
    }
}

/// What a family says of one of its kinds: the settings it takes, whom it strikes, what it leaves
/// behind, and what it needs of the strategy's kind and of the run. How it reads, scales and
/// reports its own settings, and which servers it starts for itself, its family's own settings
/// type says (see [`super::families::FamilySpec`]).
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
    /// What it needs of the strategy itself (a library it reaches); why not.
    pub of_the_strategy: fn(&Strategy, &Capabilities) -> Result<(), String>,
}

impl Profile {
    /// A kind that takes nothing of its own, needs no proxies, and applies to every strategy its
    /// needs allow: the rest of a family's profile.
    pub(crate) const PLAIN: Profile = Profile {
        allowed: &[],
        required: &[],
        targets: Targets::Server,
        aftermath: Aftermath::TakesLock,
        needs: Needs::Server,
        proxies: false,
        of_the_strategy: |_, _| Ok(()),
    };
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
    parsed(name, text, |t| parse_timing(t, units))
}

/// The setting `text` of field `name`, read by `parse`.
pub(crate) fn parsed<T>(
    name: &str,
    text: &Option<String>,
    parse: impl Fn(&str) -> Result<T, String>,
) -> Result<Option<T>, String> {
    text.as_deref()
        .map(parse)
        .transpose()
        .map_err(|e| format!("{name}: {e}"))
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
