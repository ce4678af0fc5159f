//! `lockbench compare`: the suite ([`crate::suite::SUITE`]) — every scenario against every strategy
//! its faults apply to, each case `--trials` times with different seeds — through the same path as
//! `lockbench run` ([`crate::run::run`], which starts each scenario's servers once and runs its cases
//! back to back), a short `lockbench scale` pass for the many-locks row, then one combined results file
//! and the reports.
//!
//! Output directory layout:
//!
//! ```text
//! DIR/results.json            the comparison: every scenario's results in one file (comparison.schema.json)
//! DIR/report.html, report.md  the reports (`lockbench report DIR/results.json --scale DIR/runs/many-locks/scale.json`)
//! DIR/charts/*.png, *.svg     the charts
//! DIR/runs/SCENARIO/results.json  each scenario's results (trials pooled per case)
//! DIR/runs/many-locks/scale.json  the many-locks pass
//! ```
//!
//! The planned time of the suite and the budgets it is held to are in [`crate::suite`].

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use lockbench_reports::comparison::{Comparison, SELECTED, StrategyInfo, SuiteRun};
use lockbench_reports::model::{CaseStatus, SCHEMA_VERSION};
use lockbench_reports::scale::{CostSeries, ScaleResults};

use crate::backends::GivenAddresses;
use crate::clock::now_rfc3339;
use crate::error::{BenchError, EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK};
use crate::run::{self, RunRequest};
use crate::scale::{self, ScaleOptions, ScaleRequest};
use crate::suite::{
    self, Length, MANY_LOCKS, MANY_LOCKS_HOLD, MANY_LOCKS_STEP_BUDGET, MANY_LOCKS_STEPS,
    NOT_IN_MANY_LOCKS, PlannedScenario, SUITE, Suite, SuiteEntry,
};
use crate::workload::split_list;
use crate::{output, report, scenarios, strategies, table};

/// What `lockbench compare` is asked to do.
#[derive(Debug, Clone, Default)]
pub struct CompareRequest {
    /// The short suite.
    pub quick: bool,
    /// Output directory (default: `results/compare-UTCTIME`).
    pub out: Option<PathBuf>,
    /// Strategy ids, comma-separated, or `all` (default: all).
    pub strategies: Option<String>,
    /// Add every peer whose runtime is installed (the others are noted as skipped).
    pub peers: bool,
    /// Servers the user gave instead of starting them.
    pub servers: GivenAddresses,
    /// Show progress bars (when stdout is a terminal).
    pub progress: bool,
    /// The full suite, library-fidelity scenarios included.
    pub full: bool,
    /// The full suite with more trials per case (10 unless `trials` says otherwise).
    pub thorough: bool,
    /// Trials per case (default: 3; 1 with `quick`; 10 with `thorough`).
    pub trials: Option<u32>,
    /// Only these scenarios of the suite, comma-separated (default: all of it).
    pub scenarios: Option<String>,
}

impl CompareRequest {
    /// Which suite.
    pub(crate) fn suite(&self) -> Suite {
        if self.quick {
            Suite::Quick
        } else if self.full || self.thorough {
            Suite::Full
        } else {
            Suite::Default
        }
    }

    /// Trials per case.
    pub(crate) fn trials(&self) -> u32 {
        self.trials.unwrap_or(if self.thorough {
            10
        } else if self.quick {
            1
        } else {
            3
        })
    }
}

/// The suite `--scenarios` picks from: any scenario, at the quick suite's lengths with `--quick`.
fn named_from(chosen: Suite) -> Suite {
    if chosen == Suite::Quick {
        Suite::Quick
    } else {
        Suite::Full
    }
}

/// The chosen entries: all of `chosen`, or those `--scenarios` names, from any suite but the quick
/// one's lengths with `--quick` (an unknown name is a usage error listing the suite).
fn chosen_entries(
    chosen: Suite,
    names: Option<&str>,
) -> Result<Vec<(SuiteEntry, Length)>, BenchError> {
    let Some(names) = names else {
        return Ok(suite::entries(chosen));
    };
    let all = suite::entries(named_from(chosen));
    let names = split_list(names);
    for name in &names {
        if !SUITE.iter().any(|e| e.scenario == name) {
            let known: Vec<&str> = SUITE.iter().map(|e| e.scenario).collect();
            return Err(BenchError::usage(format!(
                "--scenarios: {name:?} is not in the suite ({})",
                known.join(", ")
            )));
        }
    }
    let kept: Vec<(SuiteEntry, Length)> = all
        .into_iter()
        .filter(|(e, _)| names.iter().any(|n| n == e.scenario))
        .collect();
    if kept.is_empty() {
        return Err(BenchError::usage(
            "--scenarios: none of these scenarios is in the quick suite",
        ));
    }
    Ok(kept)
}

/// `9m40s`.
fn minutes(d: Duration) -> String {
    let s = d.as_secs();
    if s >= 60 {
        format!("{}m{:02}s", s / 60, s % 60)
    } else {
        format!("{s}s")
    }
}

/// Runs the many-locks pass: `lockbench scale` at 1k and 10k held locks for the strategies with a
/// server; its cost series feed the report's cost-against-held-locks charts.
async fn many_locks(
    args: &CompareRequest,
    list: &str,
    out_dir: &Path,
) -> Result<Vec<CostSeries>, BenchError> {
    let dir = out_dir.join("runs").join(MANY_LOCKS);
    // The chosen strategies with a lock server, but those whose held count means nothing.
    let chosen = strategies::resolve(&[list.to_owned()]).map_err(BenchError::usage)?;
    let with_server: Vec<&str> = chosen
        .iter()
        .filter(|s| s.server.is_external() && !NOT_IN_MANY_LOCKS.contains(&s.id))
        .map(|s| s.id)
        .collect();
    if with_server.is_empty() {
        return Err(BenchError::usage(
            "many-locks: none of the chosen strategies has a lock server",
        ));
    }
    let request = ScaleRequest {
        options: ScaleOptions {
            strategies: Some(with_server.join(",")),
            steps: MANY_LOCKS_STEPS.to_owned(),
            hold: MANY_LOCKS_HOLD.to_owned(),
            step_budget: MANY_LOCKS_STEP_BUDGET.to_owned(),
            // The cost chart needs no yardstick.
            yardstick: false,
            ..ScaleOptions::default()
        },
        out: Some(dir.clone()),
        servers: args.servers.clone(),
        worker: false,
        server_pids: None,
        raw_sender: false,
    };
    scale::command(request).await?;
    let text = std::fs::read_to_string(dir.join(scale::SCALE_FILE))
        .map_err(|e| BenchError::failed(format!("many-locks: {e}")))?;
    ScaleResults::from_json(&text)
        .map(|s| s.cost_series())
        .map_err(|e| BenchError::failed(format!("many-locks: {e}")))
}

/// Runs `lockbench compare`: prints each scenario's summary, writes the results and the reports, and
/// returns the exit code.
pub(crate) async fn command(args: CompareRequest) -> Result<i32, BenchError> {
    let started = Instant::now();
    let started_at = now_rfc3339();
    let mut list = args.strategies.clone().unwrap_or_else(|| "all".to_owned());
    let mut skipped_peers = Vec::new();
    if args.peers {
        for peer in strategies::STRATEGIES
            .iter()
            .filter(|s| strategies::is_peer(s.id))
        {
            match strategies::peer_available(peer.id) {
                Ok(()) => list = format!("{list},{}", peer.id),
                Err(e) => {
                    let note = format!("peer {} skipped: {e}", peer.id);
                    eprintln!("lockbench: {note}");
                    skipped_peers.push(note);
                }
            }
        }
    }
    let chosen = strategies::resolve(std::slice::from_ref(&list))
        .map_err(|e| BenchError::usage(format!("--strategies: {e}")))?;
    let trials = args.trials();
    if trials == 0 || trials > 100 {
        return Err(BenchError::usage(format!(
            "--trials: must be 1..=100, got {trials}"
        )));
    }
    let suite = chosen_entries(args.suite(), args.scenarios.as_deref())?;
    let out_dir = args
        .out
        .clone()
        .unwrap_or_else(|| output::default_dir("compare", &started_at));
    let out_dir = output::prepare_dir(&out_dir)?;
    let plan: Vec<PlannedScenario> = suite::plan(
        if args.scenarios.is_some() {
            named_from(args.suite())
        } else {
            args.suite()
        },
        &list,
        trials,
        !args.thorough,
    )
    .into_iter()
    .filter(|p| suite.iter().any(|(e, _)| e.scenario == p.scenario))
    .collect();
    let planned = suite::planned_total(&plan);
    println!(
        "compare: {} scenario{}, {} trial{} per case, planned {} (on 2 idle cores)",
        suite.len(),
        if suite.len() == 1 { "" } else { "s" },
        trials,
        if trials == 1 { "" } else { "s" },
        minutes(planned)
    );
    let mut runs = Vec::new();
    let mut notes = Vec::new();
    let mut cost = Vec::new();
    let mut scenario_failed = false;
    let mut interrupted = false;
    for (index, (entry, length)) in suite.iter().enumerate() {
        let left: Duration = plan[index.min(plan.len())..]
            .iter()
            .map(|p| p.total)
            .sum::<Duration>()
            + suite::report_time(&plan);
        let title = format!("[{}/{}] {}", index + 1, suite.len(), entry.scenario);
        let cases = plan
            .iter()
            .find(|p| p.scenario == entry.scenario)
            .map(|p| {
                if entry.scenario == MANY_LOCKS {
                    format!(
                        "{} strategies at {MANY_LOCKS_STEPS} held locks, ~{:.0} s each, ",
                        p.cases,
                        p.per_case.as_secs_f64()
                    )
                } else {
                    format!(
                        "{} cases × {trials} trials, ~{:.1} s each, ",
                        p.cases,
                        p.per_case.as_secs_f64()
                    )
                }
            })
            .unwrap_or_default();
        println!(
            "{title}: {cases}{}{}; about {} left",
            length.duration.unwrap_or("preset length"),
            length
                .warmup
                .map(|w| format!(" after {w} warm-up"))
                .unwrap_or_default(),
            minutes(left)
        );
        if entry.scenario == MANY_LOCKS {
            match many_locks(&args, &list, &out_dir).await {
                Ok(series) => cost = series,
                Err(e) => {
                    eprintln!("lockbench: {MANY_LOCKS}: {e}");
                    scenario_failed |= matches!(e, BenchError::Failed(_));
                    notes.push(format!("{MANY_LOCKS}: {e}"));
                }
            }
            continue;
        }
        let if_violated = scenarios::load(entry.scenario)
            .ok()
            .and_then(|l| l.file.if_violated);
        let request = RunRequest {
            scenario: entry.scenario.to_owned(),
            overrides: suite::overrides(*length, &list),
            faults: Vec::new(),
            out: Some(out_dir.join("runs").join(entry.scenario)),
            servers: args.servers.clone(),
            progress: args.progress,
            trials,
            progress_title: Some(format!("{title} ETA {}", minutes(left))),
            settle_early: !args.thorough,
            listen: None,
        };
        match run::run(request).await {
            Ok(outcome) => {
                print!("{}", table::render(&outcome.results));
                interrupted = outcome.interrupted;
                runs.push(SuiteRun {
                    if_violated,
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
    if runs.is_empty() && cost.is_empty() {
        return Err(BenchError::failed(format!(
            "no scenario could run: {}",
            notes.join("; ")
        )));
    }
    let complete = !interrupted
        && notes.is_empty()
        && runs.len() + usize::from(!cost.is_empty()) == suite.len()
        && runs.iter().all(|r| r.results.complete);
    notes.extend(skipped_peers);
    let comparison = Comparison {
        schema_version: SCHEMA_VERSION,
        suite: match args.scenarios {
            Some(_) => SELECTED,
            None => args.suite().name(args.thorough),
        }
        .to_owned(),
        complete,
        started_at,
        finished_at: now_rfc3339(),
        strategies: chosen
            .iter()
            .map(|s| StrategyInfo {
                id: s.id.to_owned(),
                server: s.server.name().to_owned(),
                description: s.description.to_owned(),
                counterpart: strategies::counterpart(s.id).map(str::to_owned),
            })
            .collect(),
        runs,
        notes,
    };
    let results_path = output::write_atomic(&out_dir, output::RESULTS_FILE, &comparison.to_json())?;
    let written = report::render(&out_dir, &comparison, None, &cost)?;
    let what = match &args.scenarios {
        Some(names) => format!("--scenarios {names}"),
        None => format!("{} suite", comparison.suite),
    };
    println!(
        "\ncompare ({what}, {trials} trial{} per case) took {} (planned {})",
        if trials == 1 { "" } else { "s" },
        minutes(started.elapsed()),
        minutes(planned)
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
