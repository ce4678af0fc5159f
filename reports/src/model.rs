//! The results model: what `lockbench run` writes to `results.json`, as serde types.
//!
//! The file is versioned by [`SCHEMA_VERSION`] and described by a JSON schema derived from these
//! types ([`crate::schema::results`]; committed as [`SCHEMA`], `reports/schema/results.schema.json`);
//! tests validate real output against it. Conventions:
//!
//! - every duration is a float in **milliseconds**, in a field ending in `_ms`;
//! - rates are per second (`_per_s`), sizes in bytes (`_bytes`);
//! - counts of the measured window exclude warm-up; the three safety measures cover the whole run,
//!   warm-up included (a violation is a violation whenever it happens);
//! - a latency distribution is a [`Summary`]; the raw HdrHistograms (nanoseconds) are kept in
//!   [`CaseResult::histograms`] as base64 V2-deflate strings, the encoding of HdrHistogram log files.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The results format version. Bumped on any change that is not a pure addition of optional data.
pub const SCHEMA_VERSION: u32 = 1;

/// The JSON schema (draft 2020-12) of the results file as committed: the text of
/// [`crate::schema::results`], which a golden-file test keeps equal.
pub const SCHEMA: &str = include_str!("../schema/results.schema.json");

/// One results file: one scenario run against one or more strategies.
///
/// Durations are float milliseconds (`_ms`), rates per second (`_per_s`), sizes bytes (`_bytes`); the
/// raw histograms are nanoseconds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Results {
    /// [`SCHEMA_VERSION`] of the writer.
    #[schemars(extend("const" = SCHEMA_VERSION))]
    pub schema_version: u32,
    /// False when the run was interrupted (Ctrl-C) or a case could not finish: what was measured is
    /// kept, but the run is not the one that was asked for.
    pub complete: bool,
    /// When the run started, RFC 3339 UTC.
    pub started_at: String,
    /// When the results were written, RFC 3339 UTC.
    pub finished_at: String,
    /// What was run.
    pub scenario: Scenario,
    /// Where it ran.
    pub environment: Environment,
    /// One entry per (strategy, lease mode), in run order.
    pub cases: Vec<CaseResult>,
}

/// Why a results file could not be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReadError {
    /// Not JSON, or not the shape of a results file.
    #[error("not a lockbench results file: {0}")]
    Json(#[from] serde_json::Error),
    /// Written by a version with a different [`SCHEMA_VERSION`].
    #[error("results schema_version {found} is not supported (this build reads {SCHEMA_VERSION})")]
    Version {
        /// The version in the file.
        found: u64,
    },
}

impl Results {
    /// Parses a results file, checking its `schema_version` first.
    pub fn from_json(text: &str) -> Result<Self, ReadError> {
        #[derive(Deserialize)]
        struct Head {
            schema_version: u64,
        }
        let head: Head = serde_json::from_str(text)?;
        if head.schema_version != u64::from(SCHEMA_VERSION) {
            return Err(ReadError::Version {
                found: head.schema_version,
            });
        }
        Ok(serde_json::from_str(text)?)
    }

    /// The file's JSON text (pretty-printed).
    pub fn to_json(&self) -> String {
        // Serializing these plain structs cannot fail (string keys, finite or null numbers).
        serde_json::to_string_pretty(self).unwrap_or_default()
    }
}

/// The scenario: its name, where it came from and the resolved workload.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Scenario {
    /// Preset name or file stem, e.g. `long-tail`.
    pub name: String,
    /// One line saying what the scenario shows.
    pub description: String,
    /// `preset` or the path of the TOML file.
    pub source: String,
    /// The workload after the file and the command-line overrides.
    pub workload: Workload,
    /// What theory predicts, by strategy id, lease kind (`fixed`, `watchdog`) or `default` (the
    /// scenario file's `[expect]` table; looked up in that order by [`Scenario::expected`]). Empty
    /// when the scenario states nothing (and in files written before it could).
    #[serde(default)]
    pub expect: BTreeMap<String, Expectation>,
    /// One sentence on the mechanism the scenario exercises, and why theory predicts what it does;
    /// null when the scenario file gives none.
    #[serde(default)]
    pub theory: Option<String>,
    /// For each `[expect]` key whose expectation is `either`, the mechanism that decides between
    /// safe and violated, one sentence (the report quotes it where a model and its library differ).
    /// Empty in files written before the scenario files had to name it.
    #[serde(default)]
    pub either_mechanisms: BTreeMap<String, String>,
}

/// What theory predicts for a case.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Expectation {
    /// No trial should violate.
    Safe,
    /// Violations are expected (in some or all trials).
    Violated,
    /// Theory allows either: it depends on timing the scenario does not control.
    Either,
}

impl Expectation {
    /// Whether a measurement of `violated_trials` violated trials out of `trials` disagrees.
    pub fn disagrees(self, violated_trials: u32, trials: u32) -> bool {
        match self {
            Expectation::Safe => violated_trials > 0,
            Expectation::Violated => trials > 0 && violated_trials == 0,
            Expectation::Either => false,
        }
    }
}

impl Scenario {
    /// What theory predicts for `strategy` under `lease` (`watchdog`, `fixed:1s`): the entry for the
    /// strategy id, else for the lease kind, else `default`; `None` when the scenario says nothing.
    pub fn expected(&self, strategy: &str, lease: &str) -> Option<Expectation> {
        expected_in(&self.expect, strategy, lease)
    }

    /// The mechanism the scenario names for `strategy` under `lease` when theory allows either
    /// verdict (looked up as [`Scenario::expected`]); `None` when theory predicts one verdict, says
    /// nothing, or the file predates the mechanisms.
    pub fn either_mechanism(&self, strategy: &str, lease: &str) -> Option<&str> {
        let key = expected_key(&self.expect, strategy, lease)?;
        (self.expect.get(key) == Some(&Expectation::Either))
            .then(|| self.either_mechanisms.get(key).map(String::as_str))
            .flatten()
    }
}

/// The lookup of [`Scenario::expected`] in an `[expect]` table: the entry for the strategy id, else
/// for the row it runs on another server (`redis-watchdog` for `redis-watchdog~valkey`), else for the
/// lease kind, else `default`.
pub fn expected_in(
    expect: &BTreeMap<String, Expectation>,
    strategy: &str,
    lease: &str,
) -> Option<Expectation> {
    expected_key(expect, strategy, lease).and_then(|k| expect.get(k).copied())
}

/// The key of an `[expect]` table that decides for `strategy` under `lease`.
fn expected_key<'a>(
    expect: &BTreeMap<String, Expectation>,
    strategy: &'a str,
    lease: &'a str,
) -> Option<&'a str> {
    let kind = lease.split(':').next().unwrap_or(lease);
    let row = strategy.split('~').next().unwrap_or(strategy);
    [strategy, row, kind, "default"]
        .into_iter()
        .find(|k| expect.contains_key(*k))
}

/// The resolved workload (see `lockbench run --help` for the meaning of each field).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Workload {
    /// Strategy ids run, in order.
    pub strategies: Vec<String>,
    /// Concurrent clients (each its own `Locker`, one holder at a time).
    #[schemars(range(min = 1))]
    pub clients: u32,
    /// Distinct lock keys; contention is clients / keys.
    #[schemars(range(min = 1))]
    pub keys: u32,
    /// Task duration distribution, in the scenario syntax (e.g. `95% 50ms, 5% uniform 3s..5s`).
    pub task: String,
    /// Mean of the task distribution.
    pub task_mean_ms: f64,
    /// Lease modes run for each strategy: `watchdog` or `fixed:<duration>`.
    #[schemars(length(min = 1))]
    pub leases: Vec<String>,
    /// TTL of a watchdog lease (renewed every third of it).
    pub watchdog_timeout_ms: f64,
    /// How long an acquire waits for a held lock (0 = try once).
    pub acquire_wait_ms: f64,
    /// Pause between a release and the next acquire (closed loop).
    pub think_ms: f64,
    /// Open-loop schedule: cycles per second per client; null for a closed loop.
    pub rate_per_client: Option<f64>,
    /// Measured time per case; null when only `cycles` bounds the run.
    pub duration_ms: Option<f64>,
    /// Completed critical sections per case after which it stops; null when only time bounds it.
    #[schemars(range(min = 1))]
    pub cycles: Option<u64>,
    /// Unmeasured time at the start of each case.
    pub warmup_ms: f64,
    /// `tasks` (tokio tasks in one process), `processes` (one child process per client) or `remote`
    /// (one remote worker connection per client; overlaps are judged from when the resource saw each
    /// hold begin and end, since the workers share no clock with the driver).
    #[schemars(extend("enum" = ["tasks", "processes", "remote"]))]
    pub workers: String,
    /// What a holder does when `lost()` fires during its task: `abort` or `ignore`.
    #[schemars(extend("enum" = ["abort", "ignore"]))]
    pub on_lost: String,
    /// Seed of every random choice (keys, task durations).
    pub seed: u64,
    /// Faults injected in every case, in the `--fault` text form (`pause_worker at=1s
    /// target=holder duration=2s`); missing in files written before faults existed.
    #[serde(default)]
    pub faults: Vec<String>,
    /// Client 0's first task ending this long after the case start ends without releasing or
    /// dropping its lease (an orphaned holder); null when no task is orphaned.
    #[serde(default)]
    pub orphan_after_ms: Option<f64>,
}

/// The machine, the software and the servers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Environment {
    /// lockbench's version.
    pub lockbench_version: String,
    /// The git commit lockbench was built from, when known.
    pub git_commit: Option<String>,
    /// Operating system (`PRETTY_NAME` of os-release, else the target OS).
    pub os: String,
    /// Kernel release.
    pub kernel: String,
    /// CPU model name.
    pub cpu_model: String,
    /// Logical cores available to lockbench.
    #[schemars(range(min = 1))]
    pub cores: u32,
    /// Total memory.
    pub memory_bytes: u64,
    /// The servers the cases talked to.
    pub servers: Vec<ServerInfo>,
}

/// One server used by the run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ServerInfo {
    /// The server kind's name in lockbench's registry: `redis`, `redis-nodes` (N independent Redis
    /// servers, Redlock's masters), `etcd`, `zookeeper`, …
    pub kind: String,
    /// The server's own version report, when it answered.
    pub version: Option<String>,
    /// Address as given or as started.
    pub address: String,
    /// True when lockbench started (and stopped) it; false for a server given on the command line.
    pub managed: bool,
    /// Time from start to ready, for managed servers.
    pub startup_ms: Option<f64>,
}

/// How a case ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CaseStatus {
    /// Ran for its whole length.
    Complete,
    /// Stopped early (Ctrl-C); the figures cover what ran.
    Interrupted,
    /// Not run: the strategy cannot do what the case asks (e.g. a fixed lease); see `error`.
    Skipped,
    /// Could not start or failed while running; see `error`.
    Failed,
}

/// One strategy under one lease mode.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CaseResult {
    /// Strategy id.
    pub strategy: String,
    /// `watchdog` or `fixed:<duration>`.
    pub lease: String,
    /// How the case ended.
    pub status: CaseStatus,
    /// Why it was skipped or failed, one line.
    pub error: Option<String>,
    /// What the strategy declared.
    pub capabilities: Option<Capabilities>,
    /// The measured window.
    pub window: Window,
    /// Counts of what the holders did in the measured window.
    pub operations: Operations,
    /// Completed critical sections per second.
    pub throughput: Throughput,
    /// Latency distributions of the measured window.
    pub latency: Latencies,
    /// Renewal health, from the strategies' events only.
    pub renewal: Renewal,
    /// The safety oracle's three measures, over the whole case.
    pub safety: Safety,
    /// What the clients cost.
    pub client_cost: ClientCost,
    /// What the server did for this case; null when there is no server or it could not be asked.
    pub server_cost: Option<ServerCost>,
    /// The driver's own cost per cycle.
    pub driver: DriverCost,
    /// Raw HdrHistograms (values in nanoseconds) by name (`acquire`, `handoff`, `hold`, `release`,
    /// `renew_round_trip`, `renew_lag`, `renew_margin`, `loss_lateness`), base64 V2-deflate.
    pub histograms: BTreeMap<String, String>,
    /// The faults injected during the case, in start order (empty when the scenario injects none;
    /// missing in files written before faults existed).
    #[serde(default)]
    pub faults: Vec<FaultWindow>,
    /// A stretch of one key's believed-held intervals for the holder timeline; null when the case
    /// did not run (missing in files written before samples existed).
    #[serde(default)]
    pub holder_sample: Option<HolderSample>,
    /// The trials this case pools (each with its own seed); null for a single run (and in files
    /// written before trials existed). With trials, every count above is summed over them, every
    /// distribution comes from their merged histograms, and `safety.verdict` is violated when any
    /// trial was.
    #[serde(default)]
    pub trials: Option<Trials>,
    /// Orphaned holds (the workload's `orphan_after`): how long each left its lock unavailable;
    /// null when no task was orphaned (missing in older files).
    #[serde(default)]
    pub orphans: Option<Orphans>,
    /// Renew calls the server ran on lock keys after their release, counted from `MONITOR` (the
    /// renewal-after-unlock check, redisson#7272); null when the case did not count them.
    #[serde(default)]
    pub renew_after_unlock: Option<RenewAfterUnlock>,
    /// Peers: the adapter's JSON-lines round trip to its library's process, in ms, the smallest of 8
    /// pings when the client connected (`Locker::protocol_round_trip`). Each acquire and each release
    /// pays about one, so about twice this per cycle is protocol, not library. Null for lockbench's own
    /// strategies.
    #[serde(default)]
    pub protocol_round_trip_ms: Option<f64>,
    /// Peers: the library and the version the adapter's running process reported having loaded (its
    /// `hello`), checked against the pinned version before the case ran. Null for lockbench's own
    /// strategies (and in older files).
    #[serde(default)]
    pub library: Option<LoadedLibrary>,
    /// Peers: how the case's clients were mapped to adapter processes (each client its own library
    /// client either way): all in one process, as lockbench's own rows run theirs in one lockbench
    /// process, or one process per client when a fault acts on one client's process. Null for
    /// lockbench's own strategies (and in older files).
    #[serde(default)]
    pub adapter_processes: Option<AdapterProcesses>,
    /// Why a case that ran has no verdict: a fault it injects did not take effect
    /// (`fault not applied: pause_worker: …`, from [`FaultWindow::applied`]); with trials, every
    /// trial's fault failed so. A case whose fault did not apply says nothing about the lock under
    /// that fault, so it is neither safe nor violated. Null otherwise (and in older files).
    #[serde(default)]
    pub fault_not_applied: Option<String>,
    /// When locks were granted over the case, for cases that inject faults: the latency-over-time
    /// chart and the longest stretch without a grant. With trials, the first trial's. Null for cases
    /// without faults (and in older files).
    #[serde(default)]
    pub availability: Option<Availability>,
}

/// A library as a peer's running process loaded it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct LoadedLibrary {
    /// The library's name, as the adapter says it (`Redisson RLock`).
    pub name: String,
    /// Its version, as the running process loaded it (a jar's manifest, Go's build info, Python's
    /// package metadata, the node package's `package.json`).
    pub version: String,
}

/// How a peer case's clients were mapped to adapter processes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct AdapterProcesses {
    /// The clients (each its own library client: its own connection, session, renewal).
    pub clients: u32,
    /// The adapter processes they ran in.
    pub processes: u32,
}

impl std::fmt::Display for AdapterProcesses {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let clients = match self.clients {
            1 => "1 client".to_owned(),
            n => format!("{n} clients"),
        };
        match self.processes {
            1 => write!(f, "{clients} in 1 process"),
            p if p == self.clients => write!(f, "{clients}, 1 process each"),
            p => write!(f, "{clients} in {p} processes"),
        }
    }
}

/// When locks were granted over a case, in bins of `bin_ms` from the case start (warm-up included).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Availability {
    /// The bin width (100 ms, doubled for long cases so a case has at most 600 bins).
    pub bin_ms: f64,
    /// Locks granted in each bin.
    pub grants: Vec<u32>,
    /// The longest wait of an acquire granted in each bin, ms (from the acquire call to the grant);
    /// null when none was granted in the bin.
    pub max_wait_ms: Vec<Option<f64>>,
    /// The longest stretch of the measured window in which no client was granted any lock (exact to
    /// within a bin). It includes the time a holder worked: see `longest_blocked` for the lock's
    /// unavailability. Null when the window is empty.
    pub longest_gap: Option<Gap>,
    /// The longest stretch of the measured window in which some client waited for a key that no
    /// client held: the lock unavailable (a crashed or partitioned holder's lease running out, a
    /// failover, a frozen server); of zero length, at the window's start, when no client ever waited
    /// for a key nobody held. Null in files written before it was measured.
    #[serde(default)]
    pub longest_blocked: Option<Gap>,
}

impl Availability {
    /// The lock's measured unavailability: [`Self::longest_blocked`], or in older files, which lack
    /// it, [`Self::longest_gap`] (no grant, which also counts a holder's working time).
    pub fn unavailable(&self) -> Option<Gap> {
        self.longest_blocked.or(self.longest_gap)
    }
}

/// A stretch of time, ms from the case start.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Gap {
    /// Start.
    pub from_ms: f64,
    /// End.
    pub to_ms: f64,
}

impl CaseResult {
    /// A whole-case amount (the server's figures cover warm-up and measured window alike) per critical
    /// section the resource accepted over the same span; `None` when none completed.
    pub fn per_critical_section(&self, amount: f64) -> Option<f64> {
        let done = self.safety.lost_updates.completed_writes;
        (done > 0).then(|| amount / done as f64)
    }
}

/// Repeated trials of one case and how often they violated.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Trials {
    /// Trials run that have a verdict (they produced figures and their fault took effect).
    pub runs: u32,
    /// Of those, how many were violated.
    pub violated: u32,
    /// Lower end of the 95 % Wilson score interval for the violation rate; null when the trials
    /// stopped early (`stopped_early`: the interval assumes a fixed number of trials) or when no
    /// trial has a verdict (`runs` 0: there is no rate to bound).
    #[serde(default)]
    pub rate_low: Option<f64>,
    /// Upper end of the 95 % Wilson score interval for the violation rate; null when the trials
    /// stopped early or none has a verdict.
    #[serde(default)]
    pub rate_high: Option<f64>,
    /// The case stopped at its first violated trial, before all its planned trials ran (the
    /// violation theory predicted settles it; `compare` without `--thorough`). That is sequential
    /// sampling, so it says when the case broke, not how often: no rate interval. False in files
    /// written before it was recorded.
    #[serde(default)]
    pub stopped_early: bool,
    /// Trials that ran but have no verdict because their fault did not take effect
    /// ([`CaseResult::fault_not_applied`]); they count in no rate. 0 in older files.
    #[serde(default)]
    pub fault_not_applied: u32,
    /// Trials that ran but have no verdict, for any reason ([`Safety::no_verdict`]; those counted in
    /// `fault_not_applied` included); they count in no rate. 0 in older files.
    #[serde(default)]
    pub unknown: u32,
    /// Each trial, in run order.
    pub each: Vec<Trial>,
    /// Which rule ended the trials ([`TrialStop`]); null in files written before it was recorded.
    #[serde(default)]
    pub stopped_by: Option<TrialStop>,
}

/// Which rule ended a case's trials. A case runs its planned trials; one whose trials disagree (or,
/// where theory calls the break a race, broke in every one) may get extra trials until its 95 %
/// interval is narrow enough to name, up to a cap and within the suite's budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TrialStop {
    /// Every planned trial ran and no rule asked for more (they agreed, or extra trials were off).
    Planned,
    /// A violated trial where theory predicts the break every time settled the case (no rate).
    TheoryBreak,
    /// Extra trials ran until the Wilson interval of the violation rate was narrow enough to name.
    Narrow,
    /// The cap on trials per case was reached without a narrow interval (with no extra trials when
    /// the cap is the planned count, as under `--quick`).
    Cap,
    /// The suite's time for extra trials was spent before the interval was narrow.
    Budget,
    /// Ctrl-C (or SIGTERM) stopped the trials.
    Interrupted,
}

impl TrialStop {
    /// The rule in a few words, for the reports.
    pub fn describe(self) -> &'static str {
        match self {
            TrialStop::Planned => "its planned trials",
            TrialStop::TheoryBreak => "stopped at a break theory predicts",
            TrialStop::Narrow => "extra trials until its interval was narrow",
            TrialStop::Cap => "stopped at the cap on trials, interval still wide",
            TrialStop::Budget => "extra trials until the suite's time ran out",
            TrialStop::Interrupted => "interrupted",
        }
    }
}

impl Trials {
    /// The 95 % interval of the violation rate, when the trials give one (all of them ran).
    pub fn interval(&self) -> Option<(f64, f64)> {
        if self.stopped_early || self.runs == 0 {
            return None;
        }
        Some((self.rate_low?, self.rate_high?))
    }

    /// Every trial that ran, with a verdict or without (`runs` + `unknown`): the trial a case that
    /// stopped early broke at.
    pub fn ran(&self) -> u32 {
        self.runs + self.unknown
    }
}

/// One trial of a case.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Trial {
    /// Its seed.
    pub seed: u64,
    /// Its verdict.
    pub verdict: Verdict,
    /// What made it violated (empty when safe).
    pub reasons: Vec<Violation>,
    /// Critical sections completed in its measured window.
    pub completed: u64,
    /// Its measured window (ms), so its own rate is `completed` over it; null in older files.
    #[serde(default)]
    pub measured_ms: Option<f64>,
}

/// Orphaned holds: tasks that ended without releasing or dropping their lease while the process lived.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Orphans {
    /// Orphaned holds.
    pub holds: u64,
    /// Per orphan: from its task's end until another client acquired the key, capped at the end
    /// of the case when nobody did.
    pub unavailable_ms: Vec<f64>,
    /// Of those, how many were still unavailable when the case ended (the figure is then the cap).
    pub capped: u64,
}

/// Renew calls after unlock, as the server saw them (`MONITOR`, scripts recognised by their SHA).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RenewAfterUnlock {
    /// Top-level renew calls the server ran.
    pub renew_calls: u64,
    /// Lock keys named by a renew call after the release of that key's last hold.
    pub on_released_keys: u64,
    /// Releases the server ran.
    pub releases: u64,
}

/// One fault injected during a case. Times are relative to the start of the case, like
/// [`HeldInterval`], so a timeline can draw the window behind the holders' intervals.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct FaultWindow {
    /// What was injected: `pause_worker` (SIGSTOP/SIGCONT of a client process), `crash_worker`
    /// (kill -9 of a holder), `starve_worker` (the client's runtime threads blocked), `cpu_hog`,
    /// `pause_server` (SIGSTOP/SIGCONT of a server), `client_pause` (Redis `CLIENT PAUSE`),
    /// `pubsub_kill` (Redis `CLIENT KILL TYPE pubsub`), `proxy_delay`, `proxy_blackhole`,
    /// `proxy_reset` (the TCP proxy between clients and server), `failover` (Redis primary killed,
    /// replica promoted), `sentinel_failover` (Redis primary killed, its Sentinels promote the
    /// replica; `promoted_after_ms`), `leader_kill` (etcd / ZooKeeper leader killed).
    pub kind: String,
    /// What it hit, for people: `client 3`, `redis 127.0.0.1:40123`, `etcd member 1 (leader)`.
    pub target: String,
    /// The fault's settings by name (`duration_ms`, `delay_ms`, `direction`, `key`, ...).
    #[schemars(extend("additionalProperties" = {"type": ["string", "number", "boolean", "null"]}))]
    pub parameters: BTreeMap<String, serde_json::Value>,
    /// When the fault was applied.
    pub start_ms: f64,
    /// When it was lifted; null when it is permanent for the rest of the case (a crash, a killed
    /// primary or leader) or instantaneous (a dropped connection).
    pub stop_ms: Option<f64>,
    /// The lock-unavailable window after the fault. For a fault aimed at a holder (worker faults,
    /// network faults on one client, a failover right after an acquire): from `start_ms` until
    /// another client acquired the key that holder held. For a fault on the server or on every
    /// client: until any client's acquire returned (an acquire already in flight can return just
    /// after the fault). Null when not measured (`proxy_delay` on every client, `pubsub_kill`) or
    /// when no acquire followed before the case ended.
    pub recovery_ms: Option<f64>,
    /// For a fault aimed at a holder: from `start_ms` until that holder noticed `lost()` (its
    /// believed-held interval ended by the loss). Null when it never noticed (it released normally,
    /// was killed, or the case ended first).
    #[serde(default)]
    pub loss_noticed_ms: Option<f64>,
    /// One line on anything the reader should know (e.g. a variant this machine could not apply).
    pub note: Option<String>,
    /// Whether the fault took effect, from its own evidence (`evidence`): a paused process was seen
    /// stopped in `/proc`, the proxy blackholed bytes, the cgroup throttled the process, a CPU hog's
    /// threads ran, a starved worker's runtime threads were seen held, the replica was promoted, a
    /// PING from another connection waited through `CLIENT PAUSE`, a faked node's `TIME` ran ahead of
    /// the real clock. False makes the case's verdict unknown ([`CaseResult::fault_not_applied`]).
    /// Null when the kind gives no evidence to check (and in older files).
    #[serde(default)]
    pub applied: Option<bool>,
    /// The evidence `applied` rests on, or why the fault did not take effect (one line).
    #[serde(default)]
    pub evidence: Option<String>,
    /// Why the fault's window ended before its planned end (the case stopped first, the run was
    /// interrupted): the fault did not run as described, so the case has no verdict. Null when it ran
    /// to its end (and in older files).
    #[serde(default)]
    pub cut_short: Option<String>,
}

/// What a strategy declared it can do (`lockers::Capabilities`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Capabilities {
    /// Same owner may acquire again while holding.
    pub reentrant: bool,
    /// Leases carry strictly increasing fencing tokens.
    pub fencing: bool,
    /// Watchdog (renewed) leases.
    pub auto_renew: bool,
    /// Fixed leases that expire unrenewed.
    pub fixed_lease: bool,
    /// Waiters are woken by the server.
    pub wait_notify: bool,
    /// `lost()` resolves as soon as a loss is known.
    pub lost_signal: bool,
    /// Smallest TTL honoured.
    pub min_ttl_ms: f64,
    /// TTLs are rounded up to a multiple of this.
    pub ttl_granularity_ms: f64,
}

/// The measured window of a case.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Window {
    /// Warm-up before measuring.
    pub warmup_ms: f64,
    /// Length of the measured window (shorter than asked when interrupted or bounded by `cycles`).
    pub measured_ms: f64,
    /// Wall time of the whole case: set-up (clients, worker processes, servers a fault starts for the
    /// case), warm-up, measured window and tear-down; summed over trials. What a suite plans with.
    /// Null in files written before it was recorded.
    #[serde(default)]
    pub wall_ms: Option<f64>,
}

/// What the holders did in the measured window.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Operations {
    /// Successful acquires.
    pub acquired: u64,
    /// Critical sections whose write the resource accepted.
    pub completed: u64,
    /// Critical sections abandoned because `lost()` fired (on_lost = abort).
    pub aborted_on_loss: u64,
    /// Writes the resource rejected (stale fencing token).
    pub rejected_writes: u64,
    /// Critical sections cut short by the end of the case.
    pub stopped: u64,
    /// Failed acquires by `LockError` kind (`timeout`, `backend`, ...).
    pub acquire_errors: BTreeMap<String, u64>,
    /// Failed releases by kind (`not_held` after an expiry, ...).
    pub release_errors: BTreeMap<String, u64>,
}

/// Throughput of completed critical sections.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Throughput {
    /// Completed critical sections per second over the window.
    pub completed_per_s: f64,
    /// Completed critical sections in each whole second of the window.
    pub timeline_per_s: Vec<u64>,
}

/// A latency distribution. All fields but `count` are null when `count` is 0.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Summary {
    /// Samples.
    pub count: u64,
    /// Smallest sample.
    pub min_ms: Option<f64>,
    /// Mean.
    pub mean_ms: Option<f64>,
    /// Median.
    pub p50_ms: Option<f64>,
    /// 90th percentile.
    pub p90_ms: Option<f64>,
    /// 99th percentile.
    pub p99_ms: Option<f64>,
    /// 99.9th percentile.
    pub p999_ms: Option<f64>,
    /// Largest sample.
    pub max_ms: Option<f64>,
}

/// Latencies of the measured window.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Latencies {
    /// Successful acquires: from the call (closed loop) or from the intended start (open loop,
    /// `rate`), so a stalled server is not hidden (coordinated omission).
    pub acquire: Summary,
    /// Release → next holder: from the release call of one holder to the acquire returning in the
    /// next holder that was already waiting for the same key.
    pub handoff: Summary,
    /// From acquired to the release call (or to noticing a loss).
    pub hold: Summary,
    /// The release call.
    pub release: Summary,
}

/// Renewal health, built from `LockEvent`s only.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Renewal {
    /// Successful renewals (`Renewed` events) in the window.
    pub renewals: u64,
    /// Renewals per second.
    pub renewals_per_s: f64,
    /// Failed renewal attempts (`RenewFailed`).
    pub failures: u64,
    /// Round trip: `done_at - sent_at`.
    pub round_trip: Summary,
    /// Lag: `sent_at - scheduled_at`.
    pub lag: Summary,
    /// Margin: the TTL the server still had when the renewal landed (`remaining_ttl_before`).
    pub margin: Summary,
    /// `Lost` events by reason, whole case.
    pub losses: BTreeMap<String, u64>,
}

/// `safe`, `violated` or `unknown`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// None of the [`Violation`]s was found.
    Safe,
    /// At least one [`Violation`] was found ([`Safety::reasons`] names which).
    Violated,
    /// No verdict: the case did not run (skipped or failed before its workers started), or it ran
    /// but gives nothing to judge ([`Safety::no_verdict`] says why).
    Unknown,
}

/// Why a case that ran has no verdict; its `error` (or `fault_not_applied`) has the one-line detail.
/// None of these is safe: each says the experiment did not happen as described. None of them stands
/// against a violation the case saw: that makes it violated, and the reason becomes its `error`.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum NoVerdict {
    /// No acquire succeeded, and nothing broke.
    HeldNoLock,
    /// Locks were held but no critical section ran to its end (no write landed, no holder gave up on
    /// a noticed loss), and nothing broke.
    NoCompletedSection,
    /// No key was ever wanted by two clients at once, so nobody could have overlapped anyone.
    NoContention,
    /// A fault the case injects did not take effect ([`FaultWindow::applied`]).
    FaultNotApplied,
    /// A fault's window ended before its planned end ([`FaultWindow::cut_short`]).
    FaultCutShort,
    /// A worker process exited outside a fault (a signal or an exit code nobody asked for).
    WorkerDied,
    /// The case stopped before its measured window began (interrupted during the warm-up, or a
    /// window of 0 ms): only the warm-up ran.
    NothingMeasured,
}

impl NoVerdict {
    /// The reasons in the order a case is checked for them (the first that holds is its reason).
    pub const ALL: [NoVerdict; 7] = [
        NoVerdict::WorkerDied,
        NoVerdict::FaultCutShort,
        NoVerdict::FaultNotApplied,
        NoVerdict::NothingMeasured,
        NoVerdict::HeldNoLock,
        NoVerdict::NoCompletedSection,
        NoVerdict::NoContention,
    ];

    /// The cell text (`no contention`).
    pub fn words(self) -> &'static str {
        match self {
            NoVerdict::HeldNoLock => "held no lock",
            NoVerdict::NoCompletedSection => "no critical section completed",
            NoVerdict::NoContention => "no contention",
            NoVerdict::FaultNotApplied => "fault not applied",
            NoVerdict::FaultCutShort => "fault cut short",
            NoVerdict::WorkerDied => "worker died",
            NoVerdict::NothingMeasured => "nothing measured",
        }
    }

    /// What it means, for a report's legend.
    pub fn meaning(self) -> &'static str {
        match self {
            NoVerdict::HeldNoLock => "no acquire succeeded, so no evidence either way",
            NoVerdict::NoCompletedSection => {
                "locks were held but no critical section ran to its end (a write, or giving up on a noticed loss), so there is nothing to judge"
            }
            NoVerdict::NoContention => {
                "one client per key: no key was wanted by two clients at once, so nobody could overlap anyone"
            }
            NoVerdict::FaultNotApplied => "the fault did not take effect",
            NoVerdict::FaultCutShort => {
                "the fault's window ended before its planned end (the case stopped first)"
            }
            NoVerdict::WorkerDied => {
                "a worker process exited outside any fault; what it reported before is kept, but the trial is not judged safe"
            }
            NoVerdict::NothingMeasured => {
                "the case stopped before its measured window began, so only its warm-up ran"
            }
        }
    }
}

/// One way a case can fail to be a lock; any of them makes the case violated.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Violation {
    /// Believed-held intervals of different holders on one key intersected ([`Overlap`]).
    Overlap,
    /// Writes to the protected counters were lost ([`LostUpdates`]).
    LostUpdates,
    /// The resource accepted writes from superseded holders ([`Fencing::stale_accepted`]).
    StaleWritesAccepted,
    /// A later lease got a smaller token than an earlier one ([`Fencing::token_regressions`]): the
    /// legitimate holder's writes are rejected, so fencing cannot be trusted.
    TokenRegressions,
    /// Two leases carried the same token ([`Fencing::duplicate_tokens`]).
    DuplicateTokens,
}

impl Violation {
    /// The name used in results and reports (`token_regressions`).
    pub fn name(self) -> &'static str {
        match self {
            Violation::Overlap => "overlap",
            Violation::LostUpdates => "lost_updates",
            Violation::StaleWritesAccepted => "stale_writes_accepted",
            Violation::TokenRegressions => "token_regressions",
            Violation::DuplicateTokens => "duplicate_tokens",
        }
    }

    /// A few words for people (`tokens went backwards`).
    pub fn words(self) -> &'static str {
        match self {
            Violation::Overlap => "overlapping holders",
            Violation::LostUpdates => "lost updates",
            Violation::StaleWritesAccepted => "stale writes accepted",
            Violation::TokenRegressions => "tokens went backwards",
            Violation::DuplicateTokens => "duplicate tokens",
        }
    }
}

/// The safety oracle's findings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Safety {
    /// Violated if any measure found something (see `reasons`).
    pub verdict: Verdict,
    /// What made the case violated, in [`Violation`] order; empty when safe (and in files written
    /// before reasons were recorded).
    #[serde(default)]
    pub reasons: Vec<Violation>,
    /// Measure 1: overlapping believed-held intervals.
    pub overlap: Overlap,
    /// Measure 2: lost updates of the protected counters.
    pub lost_updates: LostUpdates,
    /// Measure 3: fencing at the protected resource.
    pub fencing: Fencing,
    /// How often `lost()` came too late.
    pub lost_signal: LostSignal,
    /// Whether the protected data came through, beside the verdict (which also counts a broken
    /// promise, overlapping holders, that fencing may have made harmless): `intact` when no update
    /// was lost and no stale write accepted, else `harmed`. Null when there is no verdict; missing in
    /// older files ([`Safety::data_state`] reads it off their counts).
    #[serde(default)]
    pub data: Option<DataState>,
    /// Why a case that ran has no verdict (`verdict` unknown); null when it has one, when it did not
    /// run, and in older files.
    #[serde(default)]
    pub no_verdict: Option<NoVerdict>,
}

impl Safety {
    /// `data`, or for files written before it was recorded, what their counts say; `None` when the
    /// case has no verdict.
    pub fn data_state(&self) -> Option<DataState> {
        if self.verdict == Verdict::Unknown {
            return None;
        }
        self.data.or_else(|| {
            Some(DataState::of(
                self.lost_updates.lost,
                self.fencing.stale_accepted,
            ))
        })
    }

    /// Whether fencing tokens protected the data: it is intact, the strategy has fencing, the
    /// resource rejected stale writes and no token went backwards (then a refused write may have been
    /// the rightful holder's).
    pub fn fenced(&self) -> bool {
        self.data_state() == Some(DataState::Intact)
            && self.fencing.enforced
            && self.fencing.stale_rejected.unwrap_or(0) > 0
            && self.fencing.token_regressions.unwrap_or(0) == 0
    }
}

/// What became of the protected data in a case.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum DataState {
    /// No update was lost and no stale write was accepted.
    Intact,
    /// Updates were lost, or the resource accepted stale writes.
    Harmed,
}

impl DataState {
    /// From `lost` updates and `stale_accepted` writes (None: no fencing, so none counted).
    pub fn of(lost: u64, stale_accepted: Option<u64>) -> Self {
        if lost > 0 || stale_accepted.unwrap_or(0) > 0 {
            DataState::Harmed
        } else {
            DataState::Intact
        }
    }

    /// `data intact`, `data harmed`.
    pub fn words(self) -> &'static str {
        match self {
            DataState::Intact => "data intact",
            DataState::Harmed => "data harmed",
        }
    }
}

/// Measure 1. A holder believes it holds a key from the acquire returning until it calls release or
/// notices a loss; two such intervals of different holders on one key that intersect are a violation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Overlap {
    /// Intersecting pairs of intervals.
    pub pairs: u64,
    /// Sum of the pairs' intersection lengths.
    pub total_ms: f64,
    /// Longest intersection.
    pub max_ms: f64,
    /// Keys with at least one pair.
    pub keys: u64,
    /// Pairs whose earlier holder never noticed a loss (it released normally, or ignored `lost()`).
    pub unnoticed_pairs: u64,
    /// The first pairs found (at most 20), for timelines.
    pub examples: Vec<OverlapExample>,
}

/// One overlapping pair. Times are relative to the start of the case.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct OverlapExample {
    /// Key index.
    pub key: u32,
    /// The holder that acquired first.
    pub first: HeldInterval,
    /// The holder that acquired while the first still believed it held the key.
    pub second: HeldInterval,
}

/// A stretch of consecutive believed-held intervals on one key (every interval on the key whose start
/// falls between the first and the last sampled start, in start order), for the holder timeline.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct HolderSample {
    /// Key index.
    pub key: u32,
    /// Where the stretch was taken: `first_overlap` (around the first overlapping pair found on the
    /// first keys) or `start` (the first intervals of key 0, when nothing overlapped there).
    #[schemars(extend("enum" = ["first_overlap", "start"]))]
    pub anchor: String,
    /// The intervals, in start order (at most a hundred or so).
    pub intervals: Vec<HeldInterval>,
}

/// One believed-held interval.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct HeldInterval {
    /// Client index.
    pub client: u32,
    /// Acquire returned.
    pub start_ms: f64,
    /// Release called or loss noticed.
    pub end_ms: f64,
    /// How it ended: `released`, `lost` (noticed `lost()`), `stopped` (end of case) or `orphaned`
    /// (the task ended without releasing or dropping its lease).
    #[schemars(extend("enum" = ["released", "lost", "stopped", "orphaned"]))]
    pub ended_by: String,
}

/// Measure 2 (Jepsen's lock-set idea): each critical section reads a counter, works, writes counter+1.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct LostUpdates {
    /// Writes the resource accepted (whole case).
    pub completed_writes: u64,
    /// Sum of the final counters.
    pub final_counter_sum: u64,
    /// `completed_writes - final_counter_sum`: updates overwritten by a holder that read before them.
    pub lost: u64,
}

/// Measure 3: the resource keeps the highest token written per key and rejects lower ones.
///
/// A write is *stale* when, as it reaches the resource, a lease with a higher token has already been
/// granted on the key and its holder has read the counter (the writer was superseded).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Fencing {
    /// Whether the strategy has fencing tokens (the resource checks them only then).
    pub enforced: bool,
    /// Stale writes rejected: fencing saved the data. Null when not enforced.
    pub stale_rejected: Option<u64>,
    /// Stale writes accepted: the newer holder had not written yet, so the resource could not tell
    /// (plus `duplicate_tokens`). Null when not enforced.
    pub stale_accepted: Option<u64>,
    /// Writes accepted with a token equal to the highest written one but from another lease: tokens
    /// that failed to increase (e.g. after a failover). Counted in `stale_accepted` too.
    pub duplicate_tokens: Option<u64>,
    /// Reads announcing a token lower than one already announced on the key: a later lease got a
    /// smaller token (tokens went backwards, e.g. after a failover lost the counter's last
    /// increments). Null when not enforced or in files written before this was measured.
    #[serde(default)]
    pub token_regressions: Option<u64>,
}

/// How timely `lost()` was. A loss signal is *too late* when another holder had already acquired the
/// key before the holder noticed `lost()` (its interval overlaps a later holder's).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct LostSignal {
    /// Critical sections that ended because the holder noticed `lost()` (whole case).
    pub fired: u64,
    /// Of those, how many came after another holder had acquired the key.
    pub too_late: u64,
    /// For late signals: notice time minus the other holder's acquire (a lower bound of the
    /// loss-detection latency).
    pub lateness: Summary,
}

/// Client cost over the measured window.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ClientCost {
    /// `driver_process` (tasks mode: the lockbench process, driver and resource included, and the
    /// peer adapter processes its clients' libraries run in) or
    /// `worker_processes` (the sum over the client processes) or `remote_workers` (the sum of what
    /// each remote worker measured of its own process).
    #[schemars(extend("enum" = ["driver_process", "worker_processes", "remote_workers"]))]
    pub scope: String,
    /// Most threads seen at once.
    pub threads_max: u64,
    /// Largest resident set seen (summed over processes).
    pub rss_max_bytes: u64,
    /// CPU time (user + system).
    pub cpu_seconds: f64,
    /// Average cores busy: `cpu_seconds / window`.
    pub cpu_cores: f64,
}

/// What the server did during a case (deltas over the case).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ServerCost {
    /// The server kind's name in lockbench's registry: `redis`, `redis-nodes` (Redlock's independent
    /// Redis servers: every figure below is summed over them), `etcd`, `zookeeper`, …
    pub kind: String,
    /// Server CPU time, when known (managed servers: from /proc; Redis: `INFO cpu`).
    pub cpu_seconds: Option<f64>,
    /// Work the server counted (Redis: commandstats calls, the commands scripts ran included — an
    /// EVALSHA whose script makes three `redis.call`s counts four; etcd: gRPC calls handled, a stream
    /// once when it ends; ZooKeeper: packets received and sent).
    pub requests: u64,
    /// Requests the clients sent: Redis top-level commands as the clients counted them (a script call
    /// once, however many `redis.call`s it makes; Redis 7.0's own counters count those too, so cannot
    /// tell them apart; a test checks the count equals what `MONITOR` saw); etcd gRPC messages received
    /// (`grpc_server_msg_received_total`: unary calls and every stream message, lease keep-alives
    /// included); ZooKeeper packets received (`zk_packets_received`). Null for peers on Redis (their
    /// clients are not lockers') and in files written before it was measured. The "least server
    /// work" rule reads this figure.
    #[serde(default)]
    pub client_requests: Option<u64>,
    /// Renewal calls the server saw: etcd `LeaseKeepAlive` messages received; on Redis, when
    /// `MONITOR` followed the case (`lockbench compare --peers`), calls of a script known to renew a
    /// lock (lockbench's own, redsync's Extend, node redlock's extend). Null where not told apart.
    #[serde(default)]
    pub renew_calls: Option<u64>,
    /// Redis, when `MONITOR` followed the case: script calls (`EVALSHA`, `EVAL`) by the SHA1 of the
    /// script's text, so two rows can be checked for running the same scripts. Empty otherwise.
    #[serde(default)]
    pub scripts: BTreeMap<String, u64>,
    /// Requests per second of the case.
    pub requests_per_s: f64,
    /// Requests by command or method.
    pub by_command: BTreeMap<String, u64>,
}

/// The driver's own cost, measured per cycle (acquire + task + release and the bookkeeping around it)
/// in the measured window: the cycle's wall time minus the time spent inside `acquire`, `release`,
/// the task and the think time.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct DriverCost {
    /// Cycles measured.
    pub cycles: u64,
    /// Mean wall time of a cycle, in nanoseconds.
    pub cycle_ns: f64,
    /// Mean time inside the strategy's `acquire` + `release`, in nanoseconds.
    pub strategy_ns: f64,
    /// Mean driver time per cycle (timestamps, resource, oracle records, histograms), in nanoseconds.
    pub overhead_ns: f64,
}

#[cfg(test)]
impl Scenario {
    /// A scenario of a one-client workload with this `[expect]` table, these `either` mechanisms and
    /// the theory `the theory`.
    pub(crate) fn for_tests(expect: &[(&str, Expectation)], eithers: &[(&str, &str)]) -> Self {
        Scenario {
            name: "s".into(),
            description: String::new(),
            source: "preset".into(),
            workload: serde_json::from_value(serde_json::json!({
                "strategies": [], "clients": 1, "keys": 1, "task": "1ms", "task_mean_ms": 1.0,
                "leases": ["watchdog"], "watchdog_timeout_ms": 1.0, "acquire_wait_ms": 0.0,
                "think_ms": 0.0, "rate_per_client": null, "duration_ms": 1.0, "cycles": null,
                "warmup_ms": 0.0, "workers": "tasks", "on_lost": "abort", "seed": 1
            }))
            .expect("a workload"),
            expect: expect.iter().map(|(k, e)| ((*k).to_owned(), *e)).collect(),
            theory: Some("the theory".into()),
            either_mechanisms: eithers
                .iter()
                .map(|(k, m)| ((*k).to_owned(), (*m).to_owned()))
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_process_mapping_reads_as_a_phrase() {
        let at = |clients, processes| AdapterProcesses { clients, processes }.to_string();
        assert_eq!(at(16, 1), "16 clients in 1 process");
        assert_eq!(at(16, 16), "16 clients, 1 process each");
        assert_eq!(at(1, 1), "1 client in 1 process");
        assert_eq!(at(16, 4), "16 clients in 4 processes");
    }

    #[test]
    fn theory_is_looked_up_by_strategy_then_lease_kind_then_default() {
        let scenario = Scenario::for_tests(
            &[
                ("default", Expectation::Safe),
                ("fixed", Expectation::Violated),
                ("naive", Expectation::Either),
            ],
            &[("naive", "a race")],
        );
        assert_eq!(
            scenario.expected("naive", "fixed:1s"),
            Some(Expectation::Either)
        );
        assert_eq!(
            scenario.either_mechanism("naive", "watchdog"),
            Some("a race")
        );
        assert_eq!(scenario.either_mechanism("x", "fixed:1s"), None);
        assert_eq!(
            scenario.expected("x", "fixed:1s"),
            Some(Expectation::Violated)
        );
        assert_eq!(scenario.expected("x", "watchdog"), Some(Expectation::Safe));
        // A row run on another server is expected as the row, unless named itself.
        assert_eq!(
            scenario.expected("naive~valkey", "watchdog"),
            Some(Expectation::Either)
        );
        assert!(Expectation::Safe.disagrees(1, 3));
        assert!(!Expectation::Safe.disagrees(0, 3));
        assert!(Expectation::Violated.disagrees(0, 3));
        assert!(!Expectation::Violated.disagrees(1, 3));
        assert!(!Expectation::Either.disagrees(3, 3));
    }
}
