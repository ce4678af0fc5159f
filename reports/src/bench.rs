//! The ratio benches' results file (`cargo bench` with `LOCKBENCH_BENCH_RESULTS=FILE`) and its table.
//!
//! Each bench binary run appends one [`BenchRun`]: per pass (unpinned, pinned) the checks it printed,
//! each a value against a baseline the same client measured in the same run, with its docs/design.md §8
//! target. [`markdown_table`] turns several runs into one table: per check, the median ratio over the
//! runs beside every run's own, the way `docs/findings/performance.md` quotes them.

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use crate::model::Environment;
use crate::repeats::median_by;

/// The bench file format version. Bumped on any change that is not a pure addition of optional data.
pub const BENCH_SCHEMA_VERSION: u32 = 1;

/// Runs of the ratio benches, in the order they ran.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct BenchResults {
    /// [`BENCH_SCHEMA_VERSION`] of the writer.
    pub schema_version: u32,
    /// One entry per bench binary run.
    pub runs: Vec<BenchRun>,
}

/// One run of one bench binary.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BenchRun {
    /// The bench's name (`acquire`, `redis_throughput`).
    pub bench: String,
    /// The command that ran it.
    pub command: String,
    /// How long it measured (criterion's times, rounds), one line.
    pub settings: String,
    /// When the run started, RFC 3339 UTC.
    pub started_at: String,
    /// When it finished, RFC 3339 UTC.
    pub finished_at: String,
    /// The machine's 1-minute load average before the run started, when known.
    pub load_average: Option<f64>,
    /// Where it ran (servers left out: each bench starts its own).
    pub environment: Environment,
    /// The passes, in the order they ran.
    pub passes: Vec<BenchPass>,
}

/// One measurement pass of a run (`unpinned`; `pinned`: servers on core 0, the client on core 1).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BenchPass {
    /// The pass's name.
    pub name: String,
    /// The checks it printed.
    pub checks: Vec<BenchCheck>,
}

/// A measured value against a baseline measured beside it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BenchCheck {
    /// What is compared, one line.
    pub what: String,
    /// The measured value.
    pub value: f64,
    /// The baseline it is divided by.
    pub baseline: f64,
    /// Unit of value and baseline (`µs`, `/s`).
    pub unit: String,
    /// The docs/design.md §8 target, if one is set.
    pub target: Option<Bound>,
}

impl BenchCheck {
    /// value ÷ baseline.
    pub fn ratio(&self) -> f64 {
        self.value / self.baseline
    }
}

/// Which side of a target a ratio must be on.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Bound {
    /// ratio ≤ limit.
    AtMost(f64),
    /// ratio ≥ limit.
    AtLeast(f64),
}

impl Bound {
    /// The limit, whichever side.
    pub fn limit(self) -> f64 {
        match self {
            Bound::AtMost(limit) | Bound::AtLeast(limit) => limit,
        }
    }

    /// Whether `ratio` is on the right side.
    pub fn met(self, ratio: f64) -> bool {
        match self {
            Bound::AtMost(limit) => ratio <= limit,
            Bound::AtLeast(limit) => ratio >= limit,
        }
    }
}

impl std::fmt::Display for Bound {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Bound::AtMost(limit) => write!(f, "≤ {limit:.2}"),
            Bound::AtLeast(limit) => write!(f, "≥ {limit:.2}"),
        }
    }
}

/// Why a bench file could not be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BenchReadError {
    /// Not JSON, or not the shape of a bench file.
    #[error("not a lockbench bench file: {0}")]
    Json(#[from] serde_json::Error),
    /// Written by a version with a different [`BENCH_SCHEMA_VERSION`].
    #[error(
        "bench schema_version {found} is not supported (this build reads {BENCH_SCHEMA_VERSION})"
    )]
    Version {
        /// The version in the file.
        found: u32,
    },
}

impl BenchResults {
    /// No runs yet.
    pub fn new() -> Self {
        BenchResults {
            schema_version: BENCH_SCHEMA_VERSION,
            runs: Vec::new(),
        }
    }

    /// Parses a bench file, checking its `schema_version`.
    pub fn from_json(text: &str) -> Result<Self, BenchReadError> {
        let results: BenchResults = serde_json::from_str(text)?;
        if results.schema_version != BENCH_SCHEMA_VERSION {
            return Err(BenchReadError::Version {
                found: results.schema_version,
            });
        }
        Ok(results)
    }

    /// The file's JSON text (pretty-printed).
    pub fn to_json(&self) -> String {
        // Serializing these plain structs cannot fail (string keys, finite or null numbers).
        serde_json::to_string_pretty(self).unwrap_or_default()
    }
}

/// One row of the table: a check with a target, over every run of its bench.
struct Row<'a> {
    bench: &'a str,
    what: &'a str,
    target: Bound,
}

/// `value` with its unit: `182 µs`, `52113/s`.
fn with_unit(value: f64, unit: &str) -> String {
    match unit {
        "/s" => format!("{value:.0}/s"),
        _ => format!("{value:.0} {unit}"),
    }
}

/// One cell: the median ratio (bold when it misses the target), the median run's value against its
/// baseline, then every run's ratio in run order; `-` when no run measured it.
fn cell(checks: &[&BenchCheck], target: Bound) -> String {
    let Some(median) = median_by(checks, |c| c.ratio()) else {
        return "-".into();
    };
    let ratio = median.ratio();
    let shown = if target.met(ratio) {
        format!("{ratio:.2}")
    } else if format!("{ratio:.2}") == format!("{:.2}", target.limit()) {
        // A miss never reads as the limit itself: 1.104 against ≤ 1.10.
        format!("**{ratio:.3}**")
    } else {
        format!("**{ratio:.2}**")
    };
    let runs: Vec<String> = checks.iter().map(|c| format!("{:.2}", c.ratio())).collect();
    format!(
        "{shown} ({} vs {}; {})",
        with_unit(median.value, &median.unit),
        with_unit(median.baseline, &median.unit),
        runs.join(", ")
    )
}

/// The table of every check with a target: one column per pass, each cell the median ratio over the
/// runs of its bench (bold when it misses), the median run's value against its baseline and each run's
/// ratio; then the runs: their commands, dates, commits, machine and load.
pub fn markdown_table(results: &BenchResults) -> String {
    let mut passes: Vec<&str> = Vec::new();
    let mut rows: Vec<Row<'_>> = Vec::new();
    for run in &results.runs {
        for pass in &run.passes {
            if !passes.contains(&pass.name.as_str()) {
                passes.push(&pass.name);
            }
            for check in &pass.checks {
                let Some(target) = check.target else { continue };
                if !rows
                    .iter()
                    .any(|r| r.bench == run.bench && r.what == check.what)
                {
                    rows.push(Row {
                        bench: &run.bench,
                        what: &check.what,
                        target,
                    });
                }
            }
        }
    }
    let mut out = format!("| bench | measure | target | {} |\n", passes.join(" | "));
    let _ = writeln!(out, "|---|---|---|{}", "---|".repeat(passes.len()));
    for row in &rows {
        let cells: Vec<String> = passes
            .iter()
            .map(|pass| {
                let checks: Vec<&BenchCheck> = results
                    .runs
                    .iter()
                    .filter(|run| run.bench == row.bench)
                    .flat_map(|run| run.passes.iter().filter(|p| p.name == *pass))
                    .flat_map(|p| p.checks.iter().filter(|c| c.what == row.what))
                    .collect();
                cell(&checks, row.target)
            })
            .collect();
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} |",
            row.bench,
            row.what,
            row.target,
            cells.join(" | ")
        );
    }
    out.push_str("\nEach cell: the median ratio of the runs (**bold** when it misses the target), the median run's value against its baseline, then every run's ratio in run order.\n");
    let mut benches: Vec<&str> = Vec::new();
    for run in &results.runs {
        if !benches.contains(&run.bench.as_str()) {
            benches.push(&run.bench);
        }
    }
    for bench in benches {
        let runs: Vec<&BenchRun> = results.runs.iter().filter(|r| r.bench == bench).collect();
        let (first, last) = (runs[0], runs[runs.len() - 1]);
        let mut commands: Vec<&str> = Vec::new();
        for run in &runs {
            if !commands.contains(&run.command.as_str()) {
                commands.push(&run.command);
            }
        }
        let loads: Vec<String> = runs
            .iter()
            .map(|r| r.load_average.map_or("?".into(), |l| format!("{l:.2}")))
            .collect();
        let commits: Vec<&str> = runs
            .iter()
            .map(|r| r.environment.git_commit.as_deref().map_or("unknown", short))
            .fold(Vec::new(), |mut seen, c| {
                if !seen.contains(&c) {
                    seen.push(c);
                }
                seen
            });
        let env = &first.environment;
        let _ = writeln!(
            out,
            "\n`{bench}`: {} run{} of `{}` ({}), {} to {}, commit {}; {}, {} cores, {}; 1-minute load average before each run {}.",
            runs.len(),
            if runs.len() == 1 { "" } else { "s" },
            commands.join("`, `"),
            first.settings,
            first.started_at,
            last.finished_at,
            commits.join(", "),
            env.cpu_model,
            env.cores,
            env.os,
            loads.join(", ")
        );
    }
    out
}

/// A commit's first seven characters.
fn short(commit: &str) -> &str {
    commit.get(..7).unwrap_or(commit)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn environment() -> Environment {
        Environment {
            lockbench_version: "0.1.0".into(),
            git_commit: Some("0123456789abcdef".into()),
            os: "Debian".into(),
            kernel: "6".into(),
            cpu_model: "EPYC".into(),
            cores: 2,
            memory_bytes: 1 << 30,
            servers: Vec::new(),
        }
    }

    fn run(bench: &str, ratios: &[(&str, f64)]) -> BenchRun {
        let checks = ratios
            .iter()
            .map(|(what, ratio)| BenchCheck {
                what: (*what).into(),
                value: 100.0 * ratio,
                baseline: 100.0,
                unit: "µs".into(),
                target: (!what.starts_with("context")).then_some(Bound::AtMost(1.1)),
            })
            .collect();
        BenchRun {
            bench: bench.into(),
            command: format!("cargo bench --bench {bench}"),
            settings: "2 s".into(),
            started_at: "2026-01-01T00:00:00Z".into(),
            finished_at: "2026-01-01T00:01:00Z".into(),
            load_average: Some(1.5),
            environment: environment(),
            passes: vec![BenchPass {
                name: "unpinned".into(),
                checks,
            }],
        }
    }

    #[test]
    fn medians_of_runs_with_each_run_and_misses_in_bold() {
        let mut results = BenchResults::new();
        for (a, b) in [(1.04, 1.30), (1.02, 1.50), (1.08, 1.20)] {
            results
                .runs
                .push(run("acquire", &[("a", a), ("b", b), ("context", 9.0)]));
        }
        let text = BenchResults::from_json(&results.to_json()).unwrap();
        assert_eq!(text, results);
        let table = markdown_table(&results);
        assert!(
            table.contains("| acquire | a | ≤ 1.10 | 1.04 (104 µs vs 100 µs; 1.04, 1.02, 1.08) |"),
            "{table}"
        );
        assert!(
            table.contains("| b | ≤ 1.10 | **1.30** (130 µs vs 100 µs; 1.30, 1.50, 1.20) |"),
            "{table}"
        );
        assert!(!table.contains("context"), "{table}");
        assert!(
            table.contains("3 runs of `cargo bench --bench acquire`"),
            "{table}"
        );
        assert!(table.contains("commit 0123456;"), "{table}");
    }

    #[test]
    fn an_even_count_takes_a_real_run_and_a_missing_pass_is_a_dash() {
        let mut results = BenchResults::new();
        results.runs.push(run("t", &[("a", 1.0)]));
        results.runs.push(run("t", &[("a", 2.0)]));
        let mut pinned = run("t", &[("a", 3.0)]);
        pinned.passes[0].name = "pinned".into();
        results.runs.push(pinned);
        results.runs.push(run("u", &[("c", 1.0)]));
        let table = markdown_table(&results);
        assert!(table.contains("| t | a | ≤ 1.10 | 1.00 (100 µs"), "{table}");
        assert!(table.contains("| **3.00** (300 µs"), "{table}");
        assert!(
            table.contains("| u | c | ≤ 1.10 | 1.00 (100 µs vs 100 µs; 1.00) | - |"),
            "{table}"
        );
        let newer = results
            .to_json()
            .replace("\"schema_version\": 1", "\"schema_version\": 7");
        assert!(
            BenchResults::from_json(&newer)
                .unwrap_err()
                .to_string()
                .contains('7')
        );
    }
}
