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

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

mod case;
mod cost;
mod faults;
mod measures;
mod safety;
mod scenario;
mod trials;

pub use case::{
    AdapterProcesses, Availability, CaseResult, CaseStatus, Gap, LoadedLibrary, Orphans,
    RenewAfterUnlock,
};
pub use cost::{ClientCost, DriverCost, ServerCost};
pub use faults::FaultWindow;
pub use measures::{Capabilities, Latencies, Operations, Renewal, Summary, Throughput, Window};
pub use safety::{
    DataState, Fencing, HeldInterval, HolderSample, LostSignal, LostUpdates, NoVerdict, Overlap,
    OverlapExample, Safety, Verdict, Violation,
};
pub use scenario::{Expectation, Scenario, Workload, expected_in};
pub use trials::{Trial, TrialStop, Trials};

/// The results format version. Bumped on any change that is not a pure addition of optional data.
pub const SCHEMA_VERSION: u32 = 1;

/// The JSON schema (draft 2020-12) of the results file as committed: the text of
/// [`crate::schema::results`], which a golden-file test keeps equal.
pub const SCHEMA: &str = include_str!("../../schema/results.schema.json");

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
