//! The workload spec (docs/design.md §5): what a scenario asks for, from a TOML file (a preset or the user's)
//! overridden by command-line flags, checked field by field so a bad value gets one error line that
//! names the field. Its faults are part of it: each `[[faults]]` table is checked by the fault's
//! family, in [`crate::faults`], which also injects it.

pub(crate) mod distribution;
pub(crate) mod parse;
pub(crate) mod theory;
pub(crate) mod user;

use std::collections::BTreeMap;
use std::time::Duration;

use lockbench_reports::model::Expectation;
use serde::Deserialize;

use crate::backends::ServerKind;
use crate::base::duration::{Units, format_duration, parse_duration, parse_timing};
use crate::faults::applicability::Scenario;
use crate::faults::{FaultFile, FaultSpec, Target, needs_processes};

pub(crate) use crate::base::time_scale::TimeScale;
pub(crate) use distribution::TaskDistribution;
pub(crate) use parse::{LeaseSpec, OnLost, WorkerMode};

/// A scenario file as written: every field optional (the built-in default applies), unknown fields
/// rejected. Durations are humantime strings; the case's length (`duration`, `warmup`,
/// `orphan_after`) and the faults' timings may also be relative (`3.5ttl`, `0.5task`).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScenarioFile {
    /// One line saying what the scenario shows.
    pub description: Option<String>,
    /// The workload fields ([`WORKLOAD_FIELDS`]) this scenario keeps when `compare --workload` runs the
    /// user's workload, because its mechanism needs them (lease-too-short's fixed lease under longer
    /// tasks).
    pub own_workload: Option<Vec<String>>,
    /// Why it keeps them, one sentence (the report quotes it).
    pub own_workload_why: Option<String>,
    /// Strategy ids, or `["all"]`.
    pub strategies: Option<Vec<String>>,
    /// The server kinds the scenario is about, by their names (`redis`, `postgres`; see
    /// `lockbench strategies`): a strategy on another kind does not apply, even where its faults
    /// would (a `failover` serves any kind with a replica, but a scenario's theory is about one).
    /// Unset: every kind its faults apply to.
    pub servers: Option<Vec<String>>,
    /// Concurrent clients.
    pub clients: Option<u32>,
    /// Distinct lock keys.
    pub keys: Option<u32>,
    /// Task duration distribution (see [`distribution`]).
    pub task: Option<String>,
    /// Lease modes, each run as its own case: `watchdog`, `fixed:300ms`.
    pub leases: Option<Vec<String>>,
    /// Watchdog lease TTL.
    pub watchdog_timeout: Option<String>,
    /// How long an acquire waits (`0` = try once).
    pub acquire_wait: Option<String>,
    /// Pause between release and the next acquire.
    pub think: Option<String>,
    /// Open-loop cycles per second per client.
    pub rate: Option<f64>,
    /// Measured time per case (`0` = bounded by `cycles` only).
    pub duration: Option<String>,
    /// Completed critical sections per case.
    pub cycles: Option<u64>,
    /// Unmeasured time before measuring.
    pub warmup: Option<String>,
    /// `tasks` or `processes`.
    pub workers: Option<String>,
    /// Peers in tasks mode: start one adapter process per client instead of one per row and case for
    /// an adapter that serves many clients (each client is its own library client either way); for
    /// measuring what the mapping costs.
    pub peer_process_per_client: Option<bool>,
    /// `abort` or `ignore`.
    pub on_lost: Option<String>,
    /// Client 0's first task ending at or after this point of the case ends without releasing or
    /// dropping its lease (an orphaned holder: the thread died, the process lives).
    pub orphan_after: Option<String>,
    /// Count, at the Redis server (`MONITOR`), renew calls on lock keys after their release.
    pub monitor_renewals: Option<bool>,
    /// Follow the Redis servers with `MONITOR` for the commands and scripts the clients ran
    /// (`lockbench compare --peers` sets it, to hold each model row against its library).
    pub monitor_commands: Option<bool>,
    /// Random seed.
    pub seed: Option<u64>,
    /// Faults injected in every case (`[[faults]]` tables; see [`crate::faults::spec`]).
    pub faults: Option<Vec<FaultFile>>,
    /// What theory predicts (`safe`, `violated` or `{ either = "mechanism" }`) by strategy id, lease
    /// kind (`fixed`, `watchdog`) or `default`: the `[expect]` table ([`theory`]). The report marks
    /// each case whose measurement disagrees.
    pub expect: Option<BTreeMap<String, theory::ExpectEntry>>,
    /// One sentence on the mechanism and why theory predicts what `expect` says.
    pub theory: Option<String>,
    /// What a violation under this scenario means for someone choosing a lock, one line (the report's
    /// "which strategy when" rules quote it).
    pub if_violated: Option<String>,
}

impl ScenarioFile {
    /// Parses TOML; the error is one line with the line number.
    pub fn from_toml(text: &str) -> Result<Self, String> {
        parse_toml(text)
    }

    /// Applies `other`'s set fields over this one's.
    pub fn overlay(&mut self, other: ScenarioFile) {
        macro_rules! take {
            ($($field:ident),*) => { $( if other.$field.is_some() { self.$field = other.$field; } )* };
        }
        take!(
            description,
            own_workload,
            own_workload_why,
            strategies,
            servers,
            clients,
            keys,
            task,
            leases,
            watchdog_timeout,
            acquire_wait,
            think,
            rate,
            duration,
            cycles,
            warmup,
            workers,
            peer_process_per_client,
            on_lost,
            orphan_after,
            monitor_renewals,
            monitor_commands,
            seed,
            faults,
            expect,
            theory,
            if_violated
        );
    }
}

/// Parses TOML into `T`; the error is one line with the line number and the line.
pub(crate) fn parse_toml<T: serde::de::DeserializeOwned>(text: &str) -> Result<T, String> {
    toml::from_str(text).map_err(|e| {
        let message = e.message().trim().replace('\n', " ");
        let Some(span) = e.span() else {
            return message;
        };
        let start = span.start.min(text.len());
        let number = text[..start].matches('\n').count() + 1;
        let line = text.lines().nth(number - 1).unwrap_or("").trim();
        format!("line {number} ({line}): {message}")
    })
}

/// The fields of a workload (what `compare --workload` takes; each is also a `run` flag): the
/// others belong to a scenario (its length, workers, faults, theory).
pub(crate) const WORKLOAD_FIELDS: [&str; 9] = [
    "clients",
    "keys",
    "task",
    "leases",
    "watchdog_timeout",
    "acquire_wait",
    "think",
    "rate",
    "on_lost",
];

/// A comma-separated list as flags give it (`a, b,c`), without empty items.
pub(crate) fn split_list(text: &str) -> Vec<String> {
    text.split(',')
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty())
        .collect()
}

/// A checked workload.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Workload {
    /// Scenario name (preset name or file stem).
    pub name: String,
    /// One line saying what it shows.
    pub description: String,
    /// `preset` or the file path.
    pub source: String,
    /// Strategy ids as given (`all` is resolved by the registry).
    pub strategies: Vec<String>,
    /// The server kinds the scenario is about (see [`ScenarioFile::servers`]); empty: any.
    pub servers: Vec<ServerKind>,
    /// Concurrent clients, ≥ 1.
    pub clients: u32,
    /// Distinct keys, ≥ 1.
    pub keys: u32,
    /// Task durations.
    pub task: TaskDistribution,
    /// Lease modes, one case each per strategy.
    pub leases: Vec<LeaseSpec>,
    /// Watchdog TTL, > 0.
    pub watchdog_timeout: Duration,
    /// Acquire wait; zero tries once.
    pub acquire_wait: Duration,
    /// Closed-loop pause between cycles.
    pub think: Duration,
    /// Open-loop rate per client.
    pub rate: Option<f64>,
    /// Measured time per case.
    pub duration: Option<Duration>,
    /// Completed critical sections per case.
    pub cycles: Option<u64>,
    /// Unmeasured start.
    pub warmup: Duration,
    /// Where the clients run.
    pub workers: WorkerMode,
    /// One adapter process per peer client even in tasks mode (see
    /// [`ScenarioFile::peer_process_per_client`]).
    pub peer_process_per_client: bool,
    /// Reaction to `lost()`.
    pub on_lost: OnLost,
    /// When client 0's task is orphaned (see [`ScenarioFile::orphan_after`]).
    pub orphan_after: Option<Duration>,
    /// Count renew calls after unlock at the Redis server (see [`ScenarioFile::monitor_renewals`]).
    pub monitor_renewals: bool,
    /// Follow the Redis servers with `MONITOR` (see [`ScenarioFile::monitor_commands`]).
    pub monitor_commands: bool,
    /// Record every acquire, read, write and release of the case and write them beside the results
    /// (`--history`; set by the command, never by a scenario file).
    pub history: bool,
    /// Random seed.
    pub seed: u64,
    /// Faults injected in every case.
    pub faults: Vec<FaultSpec>,
    /// What theory predicts (the `[expect]` table).
    pub expect: BTreeMap<String, Expectation>,
    /// The mechanism of each `either` in `expect`, by the same key.
    pub either_mechanisms: BTreeMap<String, String>,
    /// The mechanism, one sentence.
    pub theory: Option<String>,
}

/// How a scenario is fitted to the user's workload once resolved ([`Workload::fitted`]); the
/// default changes nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Fit {
    /// Every duration divided by this (`--time-scale`; 1 = real time).
    pub time_scale: TimeScale,
    /// The measured window is at least this many mean tasks (0: as the scenario says).
    pub min_window_tasks: u32,
    /// The measured window is lengthened until every fault's window and recovery fit
    /// ([`Workload::faults_fit`]); without it a fault that does not fit is refused. `compare` under
    /// the user's workload sets it: the scenario's timings meet the user's tasks there.
    pub lengthen_for_faults: bool,
}

impl Default for Fit {
    fn default() -> Self {
        Fit {
            time_scale: TimeScale::REAL,
            min_window_tasks: 0,
            lengthen_for_faults: false,
        }
    }
}

/// The built-in defaults under every scenario.
pub(crate) const DEFAULTS: &str = r#"
description = "custom workload"
strategies = ["all"]
clients = 8
keys = 2
task = "10ms"
leases = ["watchdog"]
watchdog_timeout = "30s"
acquire_wait = "10s"
think = "0s"
duration = "10s"
warmup = "1s"
workers = "tasks"
on_lost = "abort"
seed = 1
"#;

const MAX_CLIENTS: u32 = 10_000;

/// Most clients when each is a process of its own (`workers = processes` or `remote`): every one is
/// a `lockbench worker` with its own runtime and connections, so a few hundred already crowd a
/// machine.
const MAX_WORKER_PROCESSES: u32 = 256;

/// Most distinct keys: the resource keeps a counter and a fencing record per key, so a count far
/// beyond any workload's hot set would only exhaust memory.
const MAX_KEYS: u32 = 1_000_000;

impl Scenario for Workload {
    fn scenario_name(&self) -> &str {
        &self.name
    }

    fn about_servers(&self) -> &[ServerKind] {
        &self.servers
    }

    fn fault_specs(&self) -> &[FaultSpec] {
        &self.faults
    }
}

impl Workload {
    /// This workload with at least `min` of warm-up, its faults moved by the added time so each
    /// strikes the same moment of the measured window; `None` when it already has that much. A
    /// holder fault moved off the case start now waits for the next acquire, so the measured window
    /// is lengthened as far as that wait needs ([`FaultSpec::planned_end`]).
    pub(crate) fn with_warmup_at_least(&self, min: Duration) -> Option<Workload> {
        let extra = min.checked_sub(self.warmup).filter(|d| !d.is_zero())?;
        let mut longer = self.clone();
        longer.warmup = min;
        for fault in &mut longer.faults {
            fault.at += extra;
        }
        Some(longer.lengthened_for_faults())
    }

    /// The longest a holder fault waits for the next acquire: the longest task and a think time.
    fn next_acquire(&self) -> Duration {
        self.task.longest() + self.think
    }

    /// The measured window every fault's window and recovery need ([`FaultSpec::planned_end`]).
    fn window_for_faults(&self) -> Duration {
        self.faults
            .iter()
            .map(|f| f.planned_end(self.watchdog_timeout, self.next_acquire()))
            .max()
            .unwrap_or_default()
            .saturating_sub(self.warmup)
    }

    /// This workload with its measured window lengthened, if need be, until every fault fits.
    fn lengthened_for_faults(self) -> Workload {
        let needed = self.window_for_faults();
        let duration = self.duration.map(|d| d.max(needed));
        Workload { duration, ..self }
    }

    /// Checks that each fault's window, and the recovery after it ([`FaultSpec::planned_end`]), fit
    /// in the case — a case that `cycles` may end early cannot promise that, so it takes no faults.
    /// The error is one line naming the fault and the flag to change.
    pub(crate) fn faults_fit(&self) -> Result<(), String> {
        let next_acquire = self.next_acquire();
        for (i, spec) in self.faults.iter().enumerate() {
            let end = spec.planned_end(self.watchdog_timeout, next_acquire);
            let needed = end
                .saturating_sub(self.warmup)
                .max(Duration::from_millis(1));
            if self.cycles.is_some() {
                return Err(format!(
                    "faults[{i}] ({spec}): a case ended by --cycles may stop before the fault has \
                     run: drop --cycles and bound the case by --duration ({} or more)",
                    format_duration(needed)
                ));
            }
            let Some(duration) = self.duration else {
                continue;
            };
            if end <= self.warmup + duration {
                continue;
            }
            let recovery = spec.kind.recovery(self.watchdog_timeout);
            let mut plus = String::new();
            if end > spec.planned_end(self.watchdog_timeout, Duration::ZERO) {
                plus = format!(
                    ", after waiting up to {} for a holder,",
                    format_duration(next_acquire)
                );
            }
            if !recovery.is_zero() {
                plus.push_str(&format!(" plus {} to recover", format_duration(recovery)));
            }
            return Err(format!(
                "faults[{i}] ({spec}): its window{plus} ends at {}, after the case ends at {} \
                 (warm-up {} + duration {}): lengthen the case (--duration {} or more) or shorten \
                 the fault",
                format_duration(end),
                format_duration(self.warmup + duration),
                format_duration(self.warmup),
                format_duration(duration),
                format_duration(needed)
            ));
        }
        Ok(())
    }

    /// Checks a scenario (already overlaid on [`DEFAULTS`] and by the command line). The error names
    /// the field.
    pub(crate) fn resolve(name: &str, source: &str, file: ScenarioFile) -> Result<Self, String> {
        let mut merged = ScenarioFile::from_toml(DEFAULTS)?;
        merged.overlay(file);
        let clients = count_in("clients", merged.clients, MAX_CLIENTS)?;
        let keys = count_in("keys", merged.keys, MAX_KEYS)?;
        let strategies = merged.strategies.unwrap_or_default();
        if strategies.is_empty() {
            return Err("strategies: name at least one strategy (or all)".into());
        }
        let servers = server_kinds(&merged.servers.unwrap_or_default())?;
        let task =
            TaskDistribution::parse(&need("task", merged.task)?).map_err(|e| field("task", e))?;
        let leases = lease_specs(&merged.leases.unwrap_or_default())?;
        let watchdog_timeout = duration_field("watchdog_timeout", merged.watchdog_timeout)?;
        if watchdog_timeout.is_zero() {
            return Err("watchdog_timeout: must be longer than 0".into());
        }
        check_own_workload(merged.own_workload.iter().flatten())?;
        // The case's length and the faults' timings may be relative to this case's TTL and tasks.
        let units = Units {
            ttl: watchdog_timeout,
            task: task.median(),
        };
        let rate = checked_rate(merged.rate)?;
        let length = CaseLength::resolve(merged.duration, merged.cycles, merged.warmup, units)?;
        let workers = worker_mode(merged.workers, clients)?;
        let theory = theory::checked(merged.expect.unwrap_or_default())?;
        let think = duration_field("think", merged.think)?;
        let faults = resolve_faults(
            merged.faults.as_deref().unwrap_or_default(),
            workers,
            clients,
            units,
        )?;
        Ok(Workload {
            name: name.to_owned(),
            description: merged.description.unwrap_or_default(),
            source: source.to_owned(),
            strategies,
            servers,
            clients,
            keys,
            task,
            leases,
            watchdog_timeout,
            acquire_wait: duration_field("acquire_wait", merged.acquire_wait)?,
            think,
            rate,
            duration: length.duration,
            cycles: length.cycles,
            warmup: length.warmup,
            workers,
            peer_process_per_client: merged.peer_process_per_client.unwrap_or(false),
            on_lost: need("on_lost", merged.on_lost)?
                .parse()
                .map_err(|e| field("on_lost", e))?,
            orphan_after: merged
                .orphan_after
                .map(|t| parse_timing(&t, units).map_err(|e| field("orphan_after", e)))
                .transpose()?,
            monitor_renewals: merged.monitor_renewals.unwrap_or(false),
            history: false,
            monitor_commands: merged.monitor_commands.unwrap_or(false),
            seed: merged.seed.unwrap_or(1),
            faults,
            expect: theory.expect,
            either_mechanisms: theory.either_mechanisms,
            theory: merged.theory,
        })
    }

    /// The workload as `compare` runs it under the user's workload ([`Fit`]): its window lengthened
    /// to `min_window_tasks` mean tasks and, if asked, until its faults fit, then scaled.
    pub(crate) fn fitted(self, fit: Fit) -> Workload {
        let floor = self.task.mean() * fit.min_window_tasks;
        let duration = self.duration.map(|d| d.max(floor));
        let fitted = Workload { duration, ..self };
        let fitted = if fit.lengthen_for_faults {
            fitted.lengthened_for_faults()
        } else {
            fitted
        };
        fitted.scaled(fit.time_scale)
    }

    /// The same workload at 1/`factor` time (`--time-scale`): every duration of the workload, its
    /// faults and the case divided by `factor`, the open-loop rate multiplied by it (its period
    /// divided); everything else kept.
    pub(crate) fn scaled(&self, factor: TimeScale) -> Workload {
        Workload {
            task: self.task.scaled(factor),
            leases: self
                .leases
                .iter()
                .map(|l| match l {
                    LeaseSpec::Fixed(d) => LeaseSpec::Fixed(*d / factor),
                    LeaseSpec::Watchdog => LeaseSpec::Watchdog,
                })
                .collect(),
            watchdog_timeout: self.watchdog_timeout / factor,
            acquire_wait: self.acquire_wait / factor,
            think: self.think / factor,
            rate: self.rate.map(|r| r * f64::from(factor)),
            duration: self.duration.map(|d| d / factor),
            warmup: self.warmup / factor,
            orphan_after: self.orphan_after.map(|d| d / factor),
            faults: self.faults.iter().map(|f| f.scaled(factor)).collect(),
            ..self.clone()
        }
    }

    /// The results model's view of the workload.
    pub(crate) fn to_model(&self, strategies: &[&str]) -> lockbench_reports::model::Workload {
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        lockbench_reports::model::Workload {
            strategies: strategies.iter().map(|s| s.to_string()).collect(),
            clients: self.clients,
            keys: self.keys,
            task: self.task.to_string(),
            task_mean_ms: ms(self.task.mean()),
            leases: self.leases.iter().map(|l| l.to_string()).collect(),
            watchdog_timeout_ms: ms(self.watchdog_timeout),
            acquire_wait_ms: ms(self.acquire_wait),
            think_ms: ms(self.think),
            rate_per_client: self.rate,
            duration_ms: self.duration.map(ms),
            cycles: self.cycles,
            warmup_ms: ms(self.warmup),
            workers: self.workers.to_string(),
            on_lost: self.on_lost.to_string(),
            seed: self.seed,
            faults: self.faults.iter().map(ToString::to_string).collect(),
            orphan_after_ms: self.orphan_after.map(ms),
        }
    }
}

/// The error of field `name`: `name: e`.
fn field(name: &str, e: String) -> String {
    format!("{name}: {e}")
}

/// The value of field `name`; the error says it is missing.
fn need(name: &str, value: Option<String>) -> Result<String, String> {
    value.ok_or_else(|| format!("{name}: missing"))
}

/// Field `name`, a duration (`250ms`).
fn duration_field(name: &str, value: Option<String>) -> Result<Duration, String> {
    parse_duration(&need(name, value)?).map_err(|e| field(name, e))
}

/// Field `name`, a duration or one relative to the case's TTL or task (`units`: `3.5ttl`).
fn timing_field(name: &str, value: Option<String>, units: Units) -> Result<Duration, String> {
    parse_timing(&need(name, value)?, units).map_err(|e| field(name, e))
}

/// Field `name`, a count from 1 to `max`.
fn count_in(name: &str, value: Option<u32>, max: u32) -> Result<u32, String> {
    let count = value.unwrap_or(0);
    if count == 0 || count > max {
        return Err(format!("{name}: must be 1..={max}, got {count}"));
    }
    Ok(count)
}

/// The `servers` field: each a server kind by name.
fn server_kinds(names: &[String]) -> Result<Vec<ServerKind>, String> {
    names
        .iter()
        .map(|name| server_kind(name).map_err(|e| field("servers", e)))
        .collect()
}

/// The `leases` field: at least one lease mode.
fn lease_specs(names: &[String]) -> Result<Vec<LeaseSpec>, String> {
    let leases = names
        .iter()
        .map(|l| l.parse::<LeaseSpec>().map_err(|e| field("leases", e)))
        .collect::<Result<Vec<_>, _>>()?;
    if leases.is_empty() {
        return Err("leases: name at least one lease mode (watchdog or fixed:<duration>)".into());
    }
    Ok(leases)
}

/// Checks the `own_workload` field: each name is a workload field ([`WORKLOAD_FIELDS`]).
fn check_own_workload<'a>(names: impl Iterator<Item = &'a String>) -> Result<(), String> {
    for name in names {
        if !WORKLOAD_FIELDS.contains(&name.as_str()) {
            return Err(format!(
                "own_workload: {name:?} is not a workload field ({})",
                WORKLOAD_FIELDS.join(", ")
            ));
        }
    }
    Ok(())
}

/// The `rate` field: a positive number of cycles per second per client, if set.
fn checked_rate(rate: Option<f64>) -> Result<Option<f64>, String> {
    match rate {
        Some(r) if !(r > 0.0 && r.is_finite()) => Err(format!(
            "rate: must be a positive number of cycles per second, got {r}"
        )),
        other => Ok(other),
    }
}

/// The `workers` field, checked against the number of `clients` it would start processes for.
fn worker_mode(workers: Option<String>, clients: u32) -> Result<WorkerMode, String> {
    let workers: WorkerMode = need("workers", workers)?
        .parse()
        .map_err(|e| field("workers", e))?;
    if workers != WorkerMode::Tasks && clients > MAX_WORKER_PROCESSES {
        return Err(format!(
            "clients: at most {MAX_WORKER_PROCESSES} with workers = {workers} (each client is a \
             process of its own), got {clients}; use workers = tasks for more"
        ));
    }
    Ok(workers)
}

/// How long a case runs, checked: a measured window, a number of cycles or both, after a warm-up.
#[derive(Debug, Clone, Copy)]
struct CaseLength {
    /// The measured window; `None` when only `cycles` ends the case.
    duration: Option<Duration>,
    /// The cycles that end the case, if any.
    cycles: Option<u64>,
    /// The warm-up before the measured window.
    warmup: Duration,
}

impl CaseLength {
    /// The `duration`, `cycles` and `warmup` fields, the times possibly relative to `units`.
    fn resolve(
        duration: Option<String>,
        cycles: Option<u64>,
        warmup: Option<String>,
        units: Units,
    ) -> Result<CaseLength, String> {
        let run_time = timing_field("duration", duration, units)?;
        let cycles = match cycles {
            Some(0) => return Err("cycles: must be at least 1".into()),
            other => other,
        };
        let duration = (!run_time.is_zero()).then_some(run_time);
        if duration.is_none() && cycles.is_none() {
            return Err("duration: must be longer than 0 (or set cycles)".into());
        }
        let warmup = timing_field("warmup", warmup, units)?;
        Ok(CaseLength {
            duration,
            cycles,
            warmup,
        })
    }
}

/// The server kind named `name` (as listings and results name it); the error lists the names.
fn server_kind(name: &str) -> Result<ServerKind, String> {
    crate::kinds::kind_named(name).ok_or_else(|| {
        let names = crate::kinds::kind_names();
        format!("{name:?} is not a server kind ({})", names.join(", "))
    })
}

/// Checks the `faults` of a workload: each one (errors name `faults[i]`), that client faults have
/// worker processes and that a `client:N` target exists. Whether they fit in the case is
/// [`Workload::faults_fit`], once the case's length is final.
fn resolve_faults(
    files: &[FaultFile],
    workers: WorkerMode,
    clients: u32,
    units: Units,
) -> Result<Vec<FaultSpec>, String> {
    let mut specs = Vec::with_capacity(files.len());
    for (i, file) in files.iter().enumerate() {
        let spec = FaultSpec::resolve(file, units).map_err(|e| format!("faults[{i}].{e}"))?;
        if workers == WorkerMode::Remote {
            return Err(format!(
                "faults[{i}]: remote workers take no faults yet (the driver cannot reach their \
                 processes or put its proxies in their path): use workers = \"processes\""
            ));
        }
        if needs_processes(spec.kind) && workers != WorkerMode::Processes {
            return Err(format!(
                "faults[{i}].kind: {} needs workers = \"processes\" (it acts on one client's process)",
                spec.kind
            ));
        }
        if let Target::Client(n) = spec.target
            && n >= clients
        {
            return Err(format!(
                "faults[{i}].target: client:{n} does not exist ({clients} clients: 0..{})",
                clients - 1
            ));
        }
        specs.push(spec);
    }
    Ok(specs)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resolve(toml: &str) -> Result<Workload, String> {
        Workload::resolve("t", "test", ScenarioFile::from_toml(toml)?)
    }

    /// [`resolve`], then [`Workload::faults_fit`], as `lockbench run` checks a scenario.
    fn resolve_fit(toml: &str) -> Result<Workload, String> {
        let w = resolve(toml)?;
        w.faults_fit()?;
        Ok(w)
    }

    #[test]
    fn a_longer_warm_up_moves_the_faults_with_it() {
        let w = resolve(
            "workers = \"processes\"\nwatchdog_timeout = \"1s\"\nwarmup = \"300ms\"\nduration = \"4s\"\n\
             [[faults]]\nkind = \"pause_worker\"\nat = \"1s\"\nduration = \"2s\"",
        )
        .expect("valid");
        let at = w.faults[0].at;
        assert_eq!(w.with_warmup_at_least(w.warmup), None);
        let longer = w
            .with_warmup_at_least(w.warmup + Duration::from_secs(4))
            .expect("longer");
        assert_eq!(longer.warmup, w.warmup + Duration::from_secs(4));
        assert_eq!(longer.faults[0].at, at + Duration::from_secs(4));
        assert_eq!(longer.duration, w.duration);
        // A holder fault at the case start takes the first acquire; moved off it, it waits for the
        // next one (here up to the 1 s task), and the window grows by that wait.
        let w = resolve(
            "workers = \"processes\"\nwatchdog_timeout = \"1s\"\nwarmup = \"0s\"\n\
             task = \"1s\"\nduration = \"3s\"\n\
             [[faults]]\nkind = \"pause_worker\"\nat = \"0s\"\nduration = \"2s\"",
        )
        .expect("valid");
        let longer = w
            .with_warmup_at_least(Duration::from_secs(2))
            .expect("longer");
        assert_eq!(longer.faults[0].at, Duration::from_secs(2));
        assert_eq!(longer.duration, Some(Duration::from_millis(3500)));
    }

    #[test]
    fn defaults_fill_what_the_file_leaves_out() {
        let w = resolve("clients = 3\ntask = \"uniform 1ms..2ms\"").expect("valid");
        assert_eq!(w.clients, 3);
        assert_eq!(w.keys, 2);
        assert_eq!(w.leases, vec![LeaseSpec::Watchdog]);
        assert_eq!(w.duration, Some(Duration::from_secs(10)));
        assert_eq!(w.workers, WorkerMode::Tasks);
        assert_eq!(w.strategies, vec!["all".to_string()]);
    }

    #[test]
    fn overlay_replaces_only_set_fields() {
        let mut base = ScenarioFile::from_toml("clients = 3\nkeys = 9").expect("toml");
        base.overlay(ScenarioFile {
            keys: Some(4),
            ..ScenarioFile::default()
        });
        assert_eq!((base.clients, base.keys), (Some(3), Some(4)));
    }

    #[test]
    fn every_bad_field_is_named() {
        for (toml, needle) in [
            ("clients = 0", "clients:"),
            ("keys = 0", "keys:"),
            ("clients = -1", "clients"),
            (
                "duration = \"-5s\"",
                "duration: duration must not be negative",
            ),
            ("duration = \"soon\"", "duration: expected a duration"),
            ("duration = \"0s\"", "duration: must be longer than 0"),
            ("cycles = 0", "cycles:"),
            ("warmup = \"x\"", "warmup:"),
            ("task = \"50% 1ms\"", "task: mix weights"),
            ("leases = [\"fixed:0s\"]", "leases:"),
            ("leases = []", "leases:"),
            ("workers = \"threads\"", "workers:"),
            ("on_lost = \"panic\"", "on_lost:"),
            ("rate = -3.0", "rate:"),
            ("watchdog_timeout = \"0s\"", "watchdog_timeout:"),
            ("strategies = []", "strategies:"),
            (
                "servers = [\"postgresql\"]",
                "servers: \"postgresql\" is not a server kind (in-process, per-client, redis,",
            ),
            (
                "colour = \"blue\"",
                "line 1 (colour = \"blue\"): unknown field `colour`",
            ),
            ("clients = \"many\"", "line 1 (clients"),
            (
                "[expect]\nredisson = \"either\"",
                "expect.redisson: `either` must name the mechanism",
            ),
        ] {
            let err = resolve(toml).expect_err(toml);
            assert!(err.contains(needle), "{toml}: {err}");
            assert!(!err.contains('\n'), "{toml}: one line: {err}");
        }
    }

    #[test]
    fn a_fault_must_run_to_its_end_and_recover_inside_the_case() {
        let pause = |duration: &str, fault: &str| {
            resolve_fit(&format!(
                "workers = \"processes\"\nwatchdog_timeout = \"1s\"\nwarmup = \"0s\"\n\
                 task = \"uniform 50ms..100ms\"\nthink = \"20ms\"\nduration = \"{duration}\"\n\
                 [[faults]]\n{fault}"
            ))
        };
        let fault = "kind = \"pause_worker\"\nat = \"500ms\"\nduration = \"2s\"";
        // 500 ms, up to 120 ms for the next holder (the longest task and a think), the 2 s window,
        // half the TTL to recover: 3120 ms fit, 3100 ms do not.
        assert!(pause("3120ms", fault).is_ok());
        let err = pause("3100ms", fault).expect_err("too short");
        assert_eq!(
            err,
            "faults[0] (pause_worker at=500ms target=holder duration=2s): its window, after \
             waiting up to 120ms for a holder, plus 500ms to recover ends at 3120ms, after the \
             case ends at 3100ms (warm-up 0ns + duration 3100ms): lengthen the case (--duration \
             3120ms or more) or shorten the fault"
        );
        // At 0 a holder fault takes the case's first acquire; a named client is not waited for.
        assert!(
            pause(
                "2500ms",
                "kind = \"pause_worker\"\nat = \"0s\"\nduration = \"2s\""
            )
            .is_ok()
        );
        let named =
            "kind = \"pause_worker\"\nat = \"500ms\"\nduration = \"2s\"\ntarget = \"client:1\"";
        assert!(pause("3s", named).is_ok());
        // A fault that only slows things down needs no recovery time; its window must still fit.
        let hog = "kind = \"cpu_hog\"\nat = \"500ms\"\nduration = \"2s\"";
        assert!(pause("2620ms", hog).is_ok());
        assert!(pause("2600ms", hog).is_err());
        // An instantaneous fault needs its recovery.
        let crash = "kind = \"crash_worker\"\nat = \"2s\"";
        assert!(pause("2620ms", crash).is_ok());
        assert!(pause("2600ms", crash).is_err());
        // A case that cycles may end takes no fault: it could stop before the fault ever starts.
        let err = resolve_fit(&format!(
            "workers = \"processes\"\nwatchdog_timeout = \"1s\"\ncycles = 2\n[[faults]]\n{fault}"
        ))
        .expect_err("cycles");
        assert!(
            err.contains(
                "a case ended by --cycles may stop before the fault has run: drop --cycles"
            ),
            "{err}"
        );
        // Every preset fits its own case: `scenarios::every_preset_resolves_and_describes_itself`.
    }

    #[test]
    fn faults_are_checked_against_the_workload() {
        let ok = resolve(
            "workers = \"processes\"\nwatchdog_timeout = \"1s\"\n[[faults]]\nkind = \"pause_worker\"\nat = \"1s\"\nduration = \"2s\"",
        )
        .expect("valid");
        assert_eq!(ok.faults.len(), 1);
        assert_eq!(
            ok.to_model(&[]).faults,
            ["pause_worker at=1s target=holder duration=2s"]
        );
        for (toml, needle) in [
            (
                "[[faults]]\nkind = \"pause_worker\"\nduration = \"2s\"",
                "faults[0].kind: pause_worker needs workers",
            ),
            (
                "[[faults]]\nkind = \"pause_server\"\nduration = \"2s\"\nat = \"1m\"",
                "faults[0] (pause_server at=1m target=server duration=2s): its window plus 15s to \
                 recover ends at 77s, after the case ends at 11s",
            ),
            (
                "[[faults]]\nkind = \"proxy_reset\"\ntarget = \"client:8\"",
                "faults[0].target: client:8 does not exist",
            ),
            (
                "[[faults]]\nkind = \"failover\"\ncolour = 1",
                "unknown field `colour`",
            ),
            ("[[faults]]\nat = \"1s\"", "faults[0].kind: missing"),
        ] {
            let err = resolve_fit(toml).expect_err(toml);
            assert!(err.contains(needle), "{toml}: {err}");
        }
    }

    #[test]
    fn case_lengths_and_faults_take_ttl_units_workload_fields_do_not() {
        let w = resolve(
            "watchdog_timeout = \"1500ms\"\ntask = \"uniform 20ms..60ms\"\nworkers = \"processes\"\n\
             duration = \"3.5ttl\"\nwarmup = \"5task\"\n\
             [[faults]]\nkind = \"pause_worker\"\nat = \"0.5ttl\"\nduration = \"2ttl\"",
        )
        .expect("valid");
        assert_eq!(w.duration, Some(Duration::from_millis(5250)));
        assert_eq!(w.warmup, Duration::from_millis(200));
        assert_eq!(w.faults[0].at, Duration::from_millis(750));
        assert_eq!(w.faults[0].duration, Some(Duration::from_secs(3)));
        for field in ["watchdog_timeout", "acquire_wait", "think"] {
            let err = resolve(&format!("{field} = \"2ttl\"")).expect_err(field);
            assert!(
                err.starts_with(&format!("{field}: ")) && err.contains("absolute duration"),
                "{err}"
            );
        }
        let err = resolve("task = \"uniform 1ttl..2ttl\"").expect_err("task");
        assert!(err.starts_with("task: "), "{err}");
        let err = resolve("own_workload = [\"duration\"]").expect_err("own_workload");
        assert!(err.starts_with("own_workload: "), "{err}");
    }

    #[test]
    fn time_scale_divides_every_duration_and_nothing_else() {
        let w = resolve(
            "clients = 5\nkeys = 3\ntask = \"95% 2s, 5% uniform 20s..40s\"\n\
             leases = [\"watchdog\", \"fixed:20s\"]\nwatchdog_timeout = \"30s\"\n\
             acquire_wait = \"1m\"\nthink = \"500ms\"\nrate = 0.5\nduration = \"3ttl\"\n\
             warmup = \"1s\"\norphan_after = \"2s\"\nworkers = \"processes\"\nseed = 9\n\
             [[faults]]\nkind = \"pause_worker\"\nat = \"0.5ttl\"\nduration = \"2ttl\"\n\
             target = \"client:0\"",
        )
        .expect("valid");
        let s = w.scaled(TimeScale::parse("10").expect("scale"));
        let ms = Duration::from_millis;
        assert_eq!(s.task.to_string(), "95% 200ms, 5% uniform 2s..4s");
        assert_eq!(s.leases, [LeaseSpec::Watchdog, LeaseSpec::Fixed(ms(2000))]);
        assert_eq!(s.watchdog_timeout, ms(3000));
        assert_eq!(s.acquire_wait, ms(6000));
        assert_eq!(s.think, ms(50));
        assert_eq!(s.rate, Some(5.0));
        assert_eq!(s.duration, Some(ms(9000)));
        assert_eq!(s.warmup, ms(100));
        assert_eq!(s.orphan_after, Some(ms(200)));
        assert_eq!(
            (s.faults[0].at, s.faults[0].duration),
            (ms(1500), Some(ms(6000)))
        );
        // Nothing else changes.
        let back = Workload {
            task: w.task.clone(),
            leases: w.leases.clone(),
            watchdog_timeout: w.watchdog_timeout,
            acquire_wait: w.acquire_wait,
            think: w.think,
            rate: w.rate,
            duration: w.duration,
            warmup: w.warmup,
            orphan_after: w.orphan_after,
            faults: w.faults.clone(),
            ..s.clone()
        };
        assert_eq!(back, w);
        assert_eq!(w.scaled(TimeScale::parse("1").expect("scale")), w);
    }

    #[test]
    fn count_only_runs_are_allowed() {
        let w = resolve("duration = \"0\"\ncycles = 10").expect("valid");
        assert_eq!((w.duration, w.cycles), (None, Some(10)));
    }
}
