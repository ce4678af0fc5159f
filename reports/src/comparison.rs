//! The comparison file: what `lockbench compare` writes to `DIR/results.json` — the results of every
//! scenario of the suite in one file, with what the report needs to know about the suite itself.
//!
//! Described by a JSON schema derived from these types ([`crate::schema::comparison`]; committed as
//! [`COMPARISON_SCHEMA`], `reports/schema/comparison.schema.json`); each `runs[].results` is a results
//! file of one run as described by [`crate::schema::results`]. Both kinds share
//! [`SCHEMA_VERSION`]. [`Comparison::read`] takes either kind, so `lockbench report` renders a single
//! `lockbench run` as well as a whole comparison.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::model::{ReadError, Results, SCHEMA_VERSION};

/// The JSON schema (draft 2020-12) of the comparison file as committed: the text of
/// [`crate::schema::comparison`], which a golden-file test keeps equal.
pub const COMPARISON_SCHEMA: &str = include_str!("../schema/comparison.schema.json");

/// The `suite` of a comparison made from a single `lockbench run` results file.
pub const SINGLE_RUN: &str = "single run";

/// The `suite` of a comparison whose scenarios were named (`lockbench compare --scenarios`): a part
/// of a suite, which its title must not pass off as the whole.
pub const SELECTED: &str = "selected";

/// One comparison: the suite's scenarios, each run against the same strategies.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Comparison {
    /// [`SCHEMA_VERSION`] of the writer.
    #[schemars(extend("const" = SCHEMA_VERSION))]
    pub schema_version: u32,
    /// Which suite ran: `quick`, `default`, `full` or `thorough`; [`SELECTED`] when `--scenarios`
    /// named the scenarios; [`SINGLE_RUN`] for a wrapped run file.
    pub suite: String,
    /// False when the suite was cut short (Ctrl-C, a scenario that could not run) or a run in it was
    /// incomplete.
    pub complete: bool,
    /// When the suite started, RFC 3339 UTC.
    pub started_at: String,
    /// When the file was written, RFC 3339 UTC.
    pub finished_at: String,
    /// The strategies compared, in column order.
    pub strategies: Vec<StrategyInfo>,
    /// One entry per scenario, in run order.
    pub runs: Vec<SuiteRun>,
    /// Scenarios of the suite that could not run, one line each (`process-pause: ...`).
    #[serde(default)]
    pub notes: Vec<String>,
    /// The user's workload every scenario ran (`compare --workload` or the workload flags); null
    /// when each scenario ran its own (missing in older files).
    #[serde(default)]
    pub workload: Option<UserWorkload>,
}

/// The user's workload as the report's first screen names it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct UserWorkload {
    /// One line: the workload's name, clients, keys, task distribution, leases, TTL.
    pub summary: String,
    /// `--time-scale`: every duration was divided by it (1 = real time; a decimal such as 2.25).
    pub time_scale: f64,
    /// What else a reader must know, one line each: the time compression in words and what does not
    /// scale, the cases where that breaks the ratio, the scenarios that kept part of their own
    /// workload and why.
    pub notes: Vec<String>,
}

/// A strategy as the registry describes it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct StrategyInfo {
    /// Strategy id.
    pub id: String,
    /// Where its lock state lives: the server kind's name in lockbench's registry (`redis`,
    /// `redis-nodes`, `etcd`, `zookeeper`, …), `in-process` (a reference, not a distributed lock) or
    /// `per-client` (a control without mutual exclusion).
    pub server: String,
    /// Whether it is a lock a team could deploy across machines (its state lives in a server), as
    /// the registry says of its server kind. False when unknown (a single run's results).
    #[serde(default)]
    pub distributed: bool,
    /// One line: what it is.
    pub description: String,
    /// For a peer (a real library run through its adapter): the lockbench strategy that models it,
    /// which the report reads it beside. Null for lockbench's own strategies.
    #[serde(default)]
    pub counterpart: Option<String>,
    /// Whether its lock is the holder's own connection rather than a lease the server expires (a
    /// PostgreSQL session-level advisory lock: held while the session lives, with no TTL): no watchdog
    /// lease to judge, and one connection per held lock, so the many-locks pass leaves it out. False
    /// for leases (and in older files).
    #[serde(default)]
    pub connection_lock: bool,
    /// Why `compare`'s many-locks pass leaves it out, one line for its many-locks cell (`one
    /// connection per held lock: not measured at scale`, `no lock server: …`); null when it takes part
    /// (and in older files).
    #[serde(default)]
    pub not_at_scale: Option<String>,
}

/// [`StrategyInfo::server`] of a strategy whose lock lives in the driver's own process.
pub const IN_PROCESS: &str = "in-process";

impl StrategyInfo {
    /// Whether it is a lock a team could deploy across machines (its state lives in a server).
    pub fn is_distributed(&self) -> bool {
        self.distributed
    }

    /// Whether its lock lives in the driver's own process, with no server ([`IN_PROCESS`]).
    pub fn is_in_process(&self) -> bool {
        self.server == IN_PROCESS
    }
}

/// One scenario of the suite.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SuiteRun {
    /// What a violation under this scenario means for someone choosing a lock, one line (the
    /// "which strategy when" rules quote it). Null when the suite says nothing.
    pub if_violated: Option<String>,
    /// The run's results, as `lockbench run` writes them.
    pub results: Results,
    /// Not run by this command but read from this committed results file: a scenario the suite
    /// leaves out for time, shown so that its figure is on the first screen (its date and commit are
    /// the run's own `started_at` and `environment.git_commit`). Null for a run of this suite.
    #[serde(default)]
    pub committed: Option<String>,
}

impl SuiteRun {
    /// The run's name for people: the scenario's, with the date of the committed run it was read
    /// from (`postgres-keepalive-partition, committed run of 2026-12-02`).
    pub fn name(&self) -> String {
        let scenario = &self.results.scenario.name;
        match &self.committed {
            Some(_) => format!(
                "{scenario}, committed run of {}",
                self.results
                    .started_at
                    .get(..10)
                    .unwrap_or("an earlier day")
            ),
            None => scenario.clone(),
        }
    }
}

impl Comparison {
    /// Reads a comparison file, or a single run's results file as a comparison of one run.
    pub fn read(text: &str) -> Result<Self, ReadError> {
        #[derive(Deserialize)]
        struct Head {
            schema_version: u64,
            runs: Option<serde_json::Value>,
        }
        let head: Head = serde_json::from_str(text)?;
        if head.schema_version != u64::from(SCHEMA_VERSION) {
            return Err(ReadError::Version {
                found: head.schema_version,
            });
        }
        if head.runs.is_some() {
            return Ok(serde_json::from_str(text)?);
        }
        Ok(Self::of_run(Results::from_json(text)?))
    }

    /// A comparison holding one run (strategy servers unknown).
    pub fn of_run(results: Results) -> Self {
        let strategies = results
            .scenario
            .workload
            .strategies
            .iter()
            .map(|id| StrategyInfo {
                id: id.clone(),
                server: String::new(),
                distributed: false,
                description: String::new(),
                counterpart: None,
                connection_lock: false,
                not_at_scale: None,
            })
            .collect();
        Comparison {
            schema_version: SCHEMA_VERSION,
            suite: SINGLE_RUN.to_owned(),
            complete: results.complete,
            started_at: results.started_at.clone(),
            finished_at: results.finished_at.clone(),
            strategies,
            runs: vec![SuiteRun {
                committed: None,
                if_violated: None,
                results,
            }],
            notes: Vec::new(),
            workload: None,
        }
    }

    /// The file's JSON text (pretty-printed).
    pub fn to_json(&self) -> String {
        // Serializing these plain structs cannot fail (string keys, finite or null numbers).
        serde_json::to_string_pretty(self).unwrap_or_default()
    }

    /// What is known about strategy `id` (a placeholder for ids the list lacks).
    pub fn strategy(&self, id: &str) -> StrategyInfo {
        self.strategies
            .iter()
            .find(|s| s.id == id)
            .cloned()
            .unwrap_or_else(|| StrategyInfo {
                id: id.to_owned(),
                server: String::new(),
                distributed: false,
                description: String::new(),
                counterpart: None,
                connection_lock: false,
                not_at_scale: None,
            })
    }
}
