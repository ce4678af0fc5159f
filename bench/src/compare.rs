//! `lockbench compare`: the default suite — every scenario of [`SUITE`] against every strategy —
//! through the same path as `lockbench run` ([`crate::run::run`], which starts the servers each
//! scenario needs), then one combined results file and the reports.
//!
//! Output directory layout:
//!
//! ```text
//! DIR/results.json            the comparison: every scenario's results in one file (comparison.schema.json)
//! DIR/report.html, report.md  the reports (`lockbench report DIR/results.json` renders them again)
//! DIR/charts/*.png, *.svg     the charts
//! DIR/runs/SCENARIO/results.json  each scenario's results as `lockbench run` writes them
//! ```
//!
//! The suite is defined in one place, [`SUITE`]: a scenario is added by adding an entry (its preset
//! name, its lengths in the default and the quick suite, and what a violation under it means). The
//! default suite stays within about seven minutes on a 2-core machine, the quick one within about a
//! minute and ten seconds (a unit test checks the planned time).

use std::path::PathBuf;
use std::time::Instant;

use lockbench_reports::comparison::{Comparison, StrategyInfo, SuiteRun};
use lockbench_reports::model::{CaseStatus, SCHEMA_VERSION};

use crate::backends::GivenAddresses;
use crate::clock::now_rfc3339;
use crate::error::{BenchError, EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK};
use crate::run::{self, RunRequest};
use crate::workload::{ScenarioFile, split_list};
use crate::{output, report, strategies, table};

/// How long a scenario runs in a suite: measured time and warm-up per case (`None`: the preset's own,
/// for scenarios whose faults are timed against it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Length {
    /// Measured time per case.
    pub duration: Option<&'static str>,
    /// Warm-up per case.
    pub warmup: Option<&'static str>,
}

impl Length {
    /// The preset's own lengths.
    pub(crate) const PRESET: Length = Length {
        duration: None,
        warmup: None,
    };

    const fn of(duration: &'static str, warmup: &'static str) -> Length {
        Length {
            duration: Some(duration),
            warmup: Some(warmup),
        }
    }
}

/// One scenario of the suite.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SuiteEntry {
    /// The scenario preset (see `lockbench scenarios`).
    pub scenario: &'static str,
    /// Its length in the default suite.
    pub default: Length,
    /// Its length in the quick suite; `None`: left out of it.
    pub quick: Option<Length>,
    /// What a violation under this scenario means, one line (quoted by the report's rules).
    pub if_violated: &'static str,
}

/// The suite, in run order.
pub(crate) const SUITE: &[SuiteEntry] = &[
    SuiteEntry {
        scenario: "baseline",
        default: Length::of("3s", "500ms"),
        quick: Some(Length::of("1s", "200ms")),
        if_violated: "the strategy is not a lock even without faults: do not use it",
    },
    SuiteEntry {
        scenario: "long-tail",
        default: Length::of("5s", "500ms"),
        quick: Some(Length::of("1500ms", "200ms")),
        if_violated: "renewal did not keep long tasks covered: use it only where every task is far shorter than the lease",
    },
    SuiteEntry {
        scenario: "lease-too-short",
        default: Length::of("3s", "0s"),
        quick: Some(Length::of("1600ms", "0s")),
        if_violated: "a lease that can expire before the task ends is no lock: a fixed lease must outlast every task (don't use fixed leases for tasks with tails), and a watchdog lease is only as safe as its renewal",
    },
    SuiteEntry {
        scenario: "process-pause",
        default: Length::PRESET,
        quick: None,
        if_violated: "a paused holder comes back believing it holds the lock: only fencing tokens checked by the resource protect the data",
    },
    SuiteEntry {
        scenario: "renewal-error",
        default: Length::PRESET,
        quick: None,
        if_violated: "one failed renewal ended renewal for good and nobody told the holder (Redisson before 3.44): retry renewals until the lease's deadline and signal the loss",
    },
    SuiteEntry {
        scenario: "busy-server",
        default: Length::PRESET,
        quick: None,
        if_violated: "a BUSY answer to one renewal ended renewal for good (Redisson before 3.44): keep long scripts off the lock's Redis, retry renewals until the deadline",
    },
    SuiteEntry {
        scenario: "orphaned-holder",
        default: Length::PRESET,
        quick: None,
        if_violated: "an orphaned hold overlapped another holder: the lease ended while its task still believed it held the lock",
    },
    SuiteEntry {
        scenario: "renewal-after-unlock",
        default: Length::PRESET,
        quick: None,
        if_violated: "short watchdog cycles broke mutual exclusion: renewal and release race",
    },
];

/// What `lockbench compare` is asked to do.
#[derive(Debug, Clone, Default)]
pub struct CompareRequest {
    /// The short suite.
    pub quick: bool,
    /// Output directory (default: `results/compare-UTCTIME`).
    pub out: Option<PathBuf>,
    /// Strategy ids, comma-separated, or `all` (default: all).
    pub strategies: Option<String>,
    /// Servers the user gave instead of starting them.
    pub servers: GivenAddresses,
    /// Show progress bars (when stdout is a terminal).
    pub progress: bool,
}

/// The entries of the chosen suite, with their lengths.
pub(crate) fn entries(quick: bool) -> Vec<(SuiteEntry, Length)> {
    SUITE
        .iter()
        .filter_map(|e| {
            let length = if quick { e.quick? } else { e.default };
            Some((*e, length))
        })
        .collect()
}

/// Runs `lockbench compare`: prints each scenario's summary, writes the results and the reports, and
/// returns the exit code.
pub(crate) async fn command(args: CompareRequest) -> Result<i32, BenchError> {
    let started = Instant::now();
    let started_at = now_rfc3339();
    let list = args.strategies.clone().unwrap_or_else(|| "all".to_owned());
    let chosen = strategies::resolve(std::slice::from_ref(&list))
        .map_err(|e| BenchError::usage(format!("--strategies: {e}")))?;
    let out_dir = args
        .out
        .clone()
        .unwrap_or_else(|| output::default_dir("compare", &started_at));
    let out_dir = output::prepare_dir(&out_dir)?;
    let suite = entries(args.quick);
    let mut runs = Vec::new();
    let mut notes = Vec::new();
    let mut scenario_failed = false;
    let mut interrupted = false;
    for (index, (entry, length)) in suite.iter().enumerate() {
        println!(
            "[{}/{}] {}: {} per case{}",
            index + 1,
            suite.len(),
            entry.scenario,
            length.duration.unwrap_or("preset length"),
            length
                .warmup
                .map(|w| format!(" after {w} warm-up"))
                .unwrap_or_default()
        );
        let request = RunRequest {
            scenario: entry.scenario.to_owned(),
            overrides: ScenarioFile {
                strategies: Some(split_list(&list)),
                duration: length.duration.map(str::to_owned),
                warmup: length.warmup.map(str::to_owned),
                ..ScenarioFile::default()
            },
            faults: Vec::new(),
            out: Some(out_dir.join("runs").join(entry.scenario)),
            servers: args.servers.clone(),
            progress: args.progress,
        };
        match run::run(request).await {
            Ok(outcome) => {
                print!("{}", table::render(&outcome.results));
                interrupted = outcome.interrupted;
                runs.push(SuiteRun {
                    if_violated: Some(entry.if_violated.to_owned()),
                    results: outcome.results,
                });
                if interrupted {
                    break;
                }
            }
            // Bad flags show on the first scenario: nothing was measured, so stop.
            Err(e @ BenchError::Usage(_)) if runs.is_empty() && notes.is_empty() => return Err(e),
            // A later scenario that cannot take these strategies (e.g. a fault needing worker
            // processes, with only in-process strategies chosen) is noted; a failure also fails the
            // exit code.
            Err(e) => {
                eprintln!("lockbench: {}: {e}", entry.scenario);
                scenario_failed |= matches!(e, BenchError::Failed(_));
                notes.push(format!("{}: {e}", entry.scenario));
            }
        }
    }
    if runs.is_empty() {
        return Err(BenchError::failed(format!(
            "no scenario could run: {}",
            notes.join("; ")
        )));
    }
    let complete = !interrupted
        && notes.is_empty()
        && runs.len() == suite.len()
        && runs.iter().all(|r| r.results.complete);
    let comparison = Comparison {
        schema_version: SCHEMA_VERSION,
        suite: if args.quick { "quick" } else { "default" }.to_owned(),
        complete,
        started_at,
        finished_at: now_rfc3339(),
        strategies: chosen
            .iter()
            .map(|s| StrategyInfo {
                id: s.id.to_owned(),
                server: s.server.name().to_owned(),
                description: s.description.to_owned(),
            })
            .collect(),
        runs,
        notes,
    };
    let results_path = output::write_atomic(&out_dir, output::RESULTS_FILE, &comparison.to_json())?;
    let written = report::render(&out_dir, &comparison, None, &[])?;
    println!(
        "\ncompare ({} suite) took {:.0} s",
        comparison.suite,
        started.elapsed().as_secs_f64()
    );
    println!("results: {}", results_path.display());
    report::print_written(&written);
    if interrupted {
        return Ok(EXIT_INTERRUPTED);
    }
    let failed = scenario_failed
        || comparison
            .runs
            .iter()
            .flat_map(|r| &r.results.cases)
            .any(|c| c.status == CaseStatus::Failed);
    Ok(if failed { EXIT_FAILED } else { EXIT_OK })
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::duration::parse_duration;
    use crate::scenarios;
    use crate::workload::Workload;

    /// The default suite's time budget (a unit test holds the planned time under it): the Redisson
    /// rows and the four Redisson failure scenarios (issue 14) raised it from 3 to 7 minutes, within
    /// DESIGN §7's 20 (the bound counts every strategy in every scenario; the Redis-only ones run on
    /// fewer).
    const DEFAULT_BUDGET: Duration = Duration::from_secs(420);
    /// The quick suite's time budget (raised from 55 s by the two Redisson rows; DESIGN §7: 4 min).
    const QUICK_BUDGET: Duration = Duration::from_secs(70);

    /// Upper bound of a suite's measured time: every case of every scenario at full length, for every
    /// strategy in `all`.
    fn planned(quick: bool) -> Duration {
        let strategies = strategies::STRATEGIES.iter().filter(|s| s.in_all).count() as u32;
        entries(quick)
            .iter()
            .map(|(entry, length)| {
                let loaded = scenarios::load(entry.scenario).expect("suite scenarios are presets");
                let w = Workload::resolve(&loaded.name, &loaded.source, loaded.file)
                    .expect("presets resolve");
                let duration = length
                    .duration
                    .map(|d| parse_duration(d).expect("suite durations parse"))
                    .or(w.duration)
                    .expect("suite cases are bounded by time");
                let warmup = length.warmup.map_or(w.warmup, |d| {
                    parse_duration(d).expect("suite warm-ups parse")
                });
                (duration + warmup) * (w.leases.len() as u32) * strategies
            })
            .sum()
    }

    #[test]
    fn the_suites_fit_their_budgets() {
        let default = planned(false);
        let quick = planned(true);
        assert!(default <= DEFAULT_BUDGET, "default suite plans {default:?}");
        assert!(quick <= QUICK_BUDGET, "quick suite plans {quick:?}");
        assert!(quick < default);
    }

    #[test]
    fn the_suite_covers_the_headline_scenarios_and_lessons() {
        let names: Vec<&str> = SUITE.iter().map(|e| e.scenario).collect();
        for needed in ["baseline", "long-tail", "lease-too-short"] {
            assert!(names.contains(&needed), "{needed}");
            assert!(entries(true).iter().any(|(e, _)| e.scenario == needed));
        }
        assert!(SUITE.iter().all(|e| !e.if_violated.is_empty()));
    }
}
