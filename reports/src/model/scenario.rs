//! The scenario a results file was run from: its workload and what theory expects of each case.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

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
