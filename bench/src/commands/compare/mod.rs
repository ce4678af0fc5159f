//! `lockbench compare`: the suite ([`crate::commands::suite::SUITE`]) — every scenario against every strategy
//! its faults apply to, each case `--trials` times with different seeds — through the same path as
//! `lockbench run` ([`crate::commands::run::run`], which starts each scenario's servers once and runs its cases
//! back to back), a short `lockbench scale` pass for the many-locks row, then one combined results file
//! and the reports.
//!
//! Output directory layout:
//!
//! ```text
//! DIR/results.json            the comparison: every scenario's results in one file (comparison.schema.json)
//! DIR/report.html, report.md  the reports (`lockbench report DIR`, which reads runs/many-locks/scale.json itself)
//! DIR/charts/*.png, *.svg     the charts
//! DIR/runs/SCENARIO/results.json  each scenario's results (trials pooled per case)
//! DIR/runs/many-locks/scale.json  the many-locks pass
//! ```
//!
//! The planned time of the suite and the budgets it is held to are in [`crate::commands::suite`].

mod many_locks;
mod workload_note;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use lockbench_reports::comparison::{Comparison, SELECTED, StrategyInfo, SuiteRun};
use lockbench_reports::model::{CaseStatus, SCHEMA_VERSION};
use lockbench_reports::scale::CostSeries;

use crate::backends::GivenAddresses;
use crate::base::clock::now_rfc3339;
use crate::base::duration::format_duration;
use crate::base::error::{BenchError, EXIT_FAILED, EXIT_INTERRUPTED};
use crate::base::stdout::{out, outln};
use crate::base::{output, suggest, table, verbosity};
use crate::commands::committed;
use crate::commands::plan::{
    self, PlannedEntry, SuiteAsk, Work, estimates, planned_total, report_time,
};
use crate::commands::report::{self, FailOn};
use crate::commands::run::{self, Execution};
use crate::commands::suite::{
    self, Length, MANY_LOCKS, MANY_LOCKS_PASSES, MANY_LOCKS_STEPS, SUITE, Suite, SuiteEntry,
};
use crate::kinds::ServerKindExt;
use crate::scenarios;
use crate::strategies::{self, StrategyChoice};
use crate::workload::user::UserWorkload;
use crate::workload::{ScenarioFile, split_list};
use many_locks::many_locks;
use workload_note::{fitting_scale, workload_note};

/// What `lockbench compare` is asked to do.
#[derive(Debug, Clone, Default)]
pub struct CompareRequest {
    /// The short suite.
    pub quick: bool,
    /// Output directory (default: `results/compare-UTCTIME`).
    pub out: Option<PathBuf>,
    /// The strategies `--strategies` chose, parsed once where the flag is read (default: all).
    pub strategies: Option<StrategyChoice>,
    /// Add every peer whose runtime is installed (the others are noted as skipped); with
    /// `strategies`, only the peers read beside a chosen strategy. The Redis servers are then followed
    /// with `MONITOR` (commands and scripts per case, for the models-against-libraries section).
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
    /// The most trials a case may run when its trials disagree, or a race broke in every one
    /// (default: 3 × `trials`; `trials` with `quick` or `thorough`).
    pub max_trials: Option<u32>,
    /// Only these scenarios of the suite, comma-separated (default: all of it).
    pub scenarios: Option<String>,
    /// The user's workload file (`--workload`).
    pub workload: Option<PathBuf>,
    /// The workload flags, over the file's fields.
    pub workload_fields: ScenarioFile,
    /// `--time-scale`: run at 1/N time (checked by the workload: a decimal from 0.1 to 1000).
    pub time_scale: Option<String>,
    /// Write each case's history beside its scenario's results.
    pub history: bool,
    /// Also write the report's tables as CSV (`--format csv`): scorecard.csv and verdicts.csv.
    pub csv: bool,
    /// What makes the command exit 1 once the reports are written ([`report::gate`]).
    pub fail_on: Vec<FailOn>,
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

    /// The most trials a case may run, extra ones included.
    pub(crate) fn max_trials(&self) -> u32 {
        self.max_trials.unwrap_or(if self.thorough || self.quick {
            self.trials()
        } else {
            EXTRA_TRIALS_FACTOR * self.trials()
        })
    }

    /// Trials per case, checked: 1 to 100, and a cap on extra trials from them to 100.
    fn checked_trials(&self) -> Result<u32, BenchError> {
        let trials = self.trials();
        if trials == 0 || trials > 100 {
            return Err(BenchError::usage(format!(
                "--trials: must be 1..=100, got {trials}"
            )));
        }
        let max_trials = self.max_trials();
        if max_trials < trials || max_trials > 100 {
            return Err(BenchError::usage(format!(
                "--max-trials: must be at least --trials ({trials}) and at most 100, got {max_trials}"
            )));
        }
        Ok(trials)
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

/// By default a case may run this many times its planned trials when they disagree.
const EXTRA_TRIALS_FACTOR: u32 = 3;

/// Time the extra trials leave unspent beside the later scenarios' planned time, for a later scenario
/// that runs over its plan: on an idle 2-core machine the many-locks pass ran 115, 121 and 138 s
/// against a planned 109 s, and the default suite's extra trials had taken the rest of the budget.
const OVERRUN_MARGIN: Duration = Duration::from_secs(30);

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
            let known = SUITE.iter().map(|e| e.scenario);
            return Err(BenchError::usage(
                match suggest::did_you_mean(name, known.clone()) {
                    Some(hint) => format!("--scenarios: '{name}' is not in the suite{hint}"),
                    None => format!(
                        "--scenarios: '{name}' is not in the suite ({})",
                        known.collect::<Vec<_>>().join(", ")
                    ),
                },
            ));
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

/// What the comparison file records of strategy `s`.
fn strategy_info(s: &strategies::Strategy) -> StrategyInfo {
    StrategyInfo {
        id: s.id.to_owned(),
        server: s.server.name().to_owned(),
        distributed: s.server.entry().distributed,
        description: s.description.to_owned(),
        counterpart: strategies::counterpart(s.id).map(str::to_owned),
        connection_lock: s.facts.connection_lock,
        not_at_scale: s.not_at_scale().map(str::to_owned),
    }
}

/// What the steps of a comparison share: the request, the strategy list, the suite and its plan.
struct Compare<'a> {
    args: &'a CompareRequest,
    /// The chosen strategies, with the peers `--peers` adds and the adapters `--adapter` added.
    choice: StrategyChoice,
    trials: u32,
    suite: Vec<(SuiteEntry, Length)>,
    user: Option<UserWorkload>,
    /// The plan of `suite`, built once.
    plan: Vec<PlannedEntry>,
}

/// What the scenarios gave.
#[derive(Default)]
struct Ran {
    runs: Vec<SuiteRun>,
    notes: Vec<String>,
    /// The many-locks pass's series.
    cost: Vec<CostSeries>,
    scenario_failed: bool,
    interrupted: bool,
}

/// Runs `lockbench compare`: prints each scenario's summary, writes the results and the reports, and
/// returns the exit code.
pub(crate) async fn command(args: CompareRequest) -> Result<i32, BenchError> {
    let started = Instant::now();
    let started_at = now_rfc3339();
    let (choice, skipped_peers) = with_peers(&args);
    let trials = args.checked_trials()?;
    let suite = chosen_entries(args.suite(), args.scenarios.as_deref())?;
    report::check_gates(&args.fail_on, false, suite.iter().map(|(e, _)| e.scenario))?;
    let user = UserWorkload::new(
        args.workload.as_deref(),
        args.workload_fields.clone(),
        args.time_scale.as_deref(),
    )
    .map_err(BenchError::usage)?;
    let mut compare = Compare {
        args: &args,
        choice,
        trials,
        suite,
        user,
        plan: Vec::new(),
    };
    compare.plan = compare.plan_for(compare.user.as_ref());
    let planned = planned_total(estimates(&compare.plan));
    if let (Some(asked), Some(budget)) = (args.trials, suite::budget(args.suite()))
        && planned > budget
    {
        return Err(BenchError::usage(format!(
            "--trials {asked}: the {} suite would plan {}, over its budget of {}; ask fewer trials, fewer scenarios (--scenarios), or the full suite (--full), which has no budget",
            args.suite().name(false),
            minutes(planned),
            minutes(budget)
        )));
    }
    compare.announce(planned);
    let out_dir = args
        .out
        .clone()
        .unwrap_or_else(|| output::default_dir("compare", &started_at));
    let out_dir = output::claim_dir(&out_dir, output::RESULTS_FILE)?;
    let ran = compare.run_scenarios(&out_dir).await?;
    if ran.runs.is_empty() && ran.cost.is_empty() {
        return Err(BenchError::failed(format!(
            "no scenario could run: {}",
            ran.notes.join("; ")
        )));
    }
    let interrupted = ran.interrupted;
    let scenario_failed = ran.scenario_failed;
    let (mut comparison, cost) = compare.comparison(started_at, ran, skipped_peers);
    committed::attach(
        &mut comparison,
        &committed::Setting {
            suite: args.suite(),
            selected: args.scenarios.is_some(),
            as_committed: compare.user.is_none() && args.servers.is_empty(),
        },
    );
    let results_path = output::write_atomic(&out_dir, output::RESULTS_FILE, &comparison.to_json())?;
    let written = report::render(&out_dir, &comparison, None, &cost)?;
    let tables = if args.csv {
        report::write_csv(&out_dir, &comparison, &cost)?
    } else {
        Vec::new()
    };
    let what = match &args.scenarios {
        Some(names) => format!("--scenarios {names}"),
        None => format!("{} suite", comparison.suite),
    };
    outln!(
        "\ncompare ({what}, {trials} trial{} per case) took {} (planned {})",
        if trials == 1 { "" } else { "s" },
        minutes(started.elapsed()),
        minutes(planned)
    );
    outln!("results: {}", results_path.display());
    report::print_written(&written);
    report::print_tables(&tables);
    if interrupted {
        return Ok(EXIT_INTERRUPTED);
    }
    let failed = scenario_failed
        || comparison
            .runs
            .iter()
            .flat_map(|r| &r.results.cases)
            .any(|c| c.status == CaseStatus::Failed);
    let gated = report::gate(&args.fail_on, &comparison, None);
    Ok(if failed { EXIT_FAILED } else { gated })
}

/// The chosen strategies (default `all`) with the adapters `--adapter` added and the peers `--peers`
/// adds, each as if named in the list, and a note for each peer skipped because its runtime is
/// missing.
fn with_peers(args: &CompareRequest) -> (StrategyChoice, Vec<String>) {
    let mut choice = args.strategies.clone().unwrap_or_else(StrategyChoice::all);
    for added in strategies::added() {
        choice = choice.with_named(added);
    }
    let mut skipped_peers = Vec::new();
    if args.peers {
        // With --strategies, the peers read beside the chosen rows (the model-against-library pairs).
        let named = args.strategies.as_ref().filter(|named| !named.names_all());
        let wanted = |id: &str| {
            named.is_none_or(|named| strategies::counterpart(id).is_some_and(|c| named.is_named(c)))
        };
        for peer in strategies::STRATEGIES
            .iter()
            .filter(|s| s.is_peer() && wanted(s.id))
        {
            match strategies::peer_available(peer.id) {
                Ok(()) => choice = choice.with_named(peer),
                Err(e) => {
                    let note = format!("peer {} skipped: {e}", peer.id);
                    eprintln!("lockbench: {note}");
                    skipped_peers.push(note);
                }
            }
        }
    }
    (choice, skipped_peers)
}

impl Compare<'_> {
    /// The plan of the chosen scenarios, with `user`'s workload if given.
    fn plan_for(&self, user: Option<&UserWorkload>) -> Vec<PlannedEntry> {
        let args = self.args;
        plan::suite_plan(
            &self.suite,
            SuiteAsk {
                choice: &self.choice,
                trials: self.trials,
                settle_early: !args.thorough,
                user,
                monitor_commands: args.peers,
                history: args.history,
            },
        )
    }

    /// How the plan spends trials beyond the planned ones: which cases get them, up to how many,
    /// and from what time.
    fn extra_trials_line(&self, planned: Duration) -> String {
        let (trials, cap) = (self.trials, self.args.max_trials());
        let settle = if self.args.thorough {
            "every planned trial runs"
        } else {
            "a break theory predicts every time stops its case at the first violated trial"
        };
        if cap <= trials {
            return format!("{settle}; no extra trials (--max-trials {cap})");
        }
        let time = match suite::budget(self.args.suite()) {
            Some(budget) => format!(
                "in the time the {} budget leaves, less {} for later scenarios running over their plan (now {}, plus whatever the run gains on the plan)",
                minutes(budget),
                minutes(OVERRUN_MARGIN),
                minutes(budget.saturating_sub(planned + OVERRUN_MARGIN))
            ),
            None => "with no time limit but the cap".to_owned(),
        };
        format!(
            "{settle}; a case whose trials disagree, or a race (theory: either) that broke in every trial, gets extra trials after all planned ones, up to {cap} in all or until its 95 % Wilson interval is at most {:.0} points wide, {time}",
            crate::trial_stop::NARROW_ENOUGH * 100.0
        )
    }

    /// Prints the user's workload, the plan, and, when it exceeds the suite's budget, each scenario's
    /// share and a time scale that would fit.
    fn announce(&self, planned: Duration) {
        let (args, suite, trials) = (self.args, &self.suite, self.trials);
        if let Some(user) = &self.user {
            outln!("{}", user.summary());
            if let Some(line) = user.scale_line() {
                outln!("{line}");
            }
        }
        // Scenarios that take more, shorter trials per trial asked.
        let more: Vec<String> = suite
            .iter()
            .filter(|(_, length)| length.trials(trials) != trials)
            .map(|(entry, length)| format!("{} {}", entry.scenario, length.trials(trials)))
            .collect();
        outln!(
            "compare: {} scenario{}, {} trial{} per case{}, planned {} (on 2 idle cores)",
            suite.len(),
            if suite.len() == 1 { "" } else { "s" },
            trials,
            if trials == 1 { "" } else { "s" },
            if more.is_empty() {
                String::new()
            } else {
                format!(" ({}, shorter)", more.join(", "))
            },
            minutes(planned)
        );
        outln!("compare: {}", self.extra_trials_line(planned));
        if let (Some(user), Some(budget)) = (&self.user, suite::budget(args.suite()))
            && planned > budget
        {
            for p in &self.plan {
                outln!(
                    "  {:<24} {:>3} cases, ~{:.1} s each, {} in all",
                    p.scenario(),
                    p.estimate.cases,
                    p.estimate.per_case.as_secs_f64(),
                    minutes(p.estimate.total)
                );
            }
            let fits = fitting_scale(user, budget, &self.plan, |u| self.plan_for(Some(u)));
            outln!(
                "compare: the plan exceeds the {} suite's budget of {}; {}; running as asked",
                args.suite().name(false),
                minutes(budget),
                match fits {
                    Some((n, total)) if total <= budget =>
                        format!("--time-scale {n} would fit (planned {})", minutes(total)),
                    Some((n, total)) => format!(
                        "none fits: --time-scale {n} plans least without skipping cases ({}; set-up \
                         costs do not scale)",
                        minutes(total)
                    ),
                    None => "no larger --time-scale runs every case".to_owned(),
                }
            );
        }
    }

    /// Runs the suite's scenarios in order, each after a line saying what it runs and how long is
    /// left; stops at an interrupt, and at a usage error on the first.
    async fn run_scenarios(&self, out_dir: &Path) -> Result<Ran, BenchError> {
        let mut ran = Ran::default();
        let started = Instant::now();
        let budget = suite::budget(self.args.suite());
        for (index, planned) in self.plan.iter().enumerate() {
            let after: Duration = planned_total(estimates(&self.plan[index + 1..]))
                + report_time(estimates(&self.plan[..=index]));
            let left = after + planned.estimate.total;
            // Extra trials may use what the budget leaves once the later scenarios' planned time and
            // a margin for their overrunning it are set aside: the plan's slack and whatever the run
            // gained on it so far.
            let extra_until = budget.map(|b| started + b.saturating_sub(after + OVERRUN_MARGIN));
            let title = format!("[{}/{}] {}", index + 1, self.plan.len(), planned.scenario());
            outln!(
                "{title}: {}about {} left",
                self.detail(planned),
                minutes(left)
            );
            let scenario = match &planned.work {
                Work::ManyLocks(at_scale) => {
                    match many_locks(&self.args.servers, at_scale, out_dir).await {
                        Ok(series) => ran.cost = series,
                        Err(e) => {
                            eprintln!("lockbench: {MANY_LOCKS}: {e}");
                            ran.scenario_failed |= matches!(e, BenchError::Failed(_));
                            ran.notes.push(format!("{MANY_LOCKS}: {e}"));
                        }
                    }
                    continue;
                }
                // As `lockbench run` checks it: the kept strategies can run in the worker mode.
                Work::Scenario(scenario) => scenario
                    .clone()
                    .and_then(|plan| plan.check_worker_mode().map(|()| plan))
                    .map_err(BenchError::usage),
            };
            let if_violated = scenarios::load(planned.scenario())
                .ok()
                .and_then(|l| l.file.if_violated);
            let mut execution = self.execution(planned, out_dir, &title, left);
            execution.extra_trials_until = extra_until;
            let outcome = match scenario {
                Ok(scenario) => run::execute(execution, *scenario).await,
                Err(e) => Err(e),
            };
            match outcome {
                Ok(outcome) => {
                    out!("{}", table::render(&outcome.results));
                    ran.interrupted = outcome.interrupted;
                    ran.runs.push(SuiteRun {
                        committed: None,
                        if_violated,
                        results: outcome.results,
                    });
                    if ran.interrupted {
                        break;
                    }
                }
                // Bad flags show on the first scenario: nothing was measured, so stop.
                Err(e @ BenchError::Usage(_)) if ran.runs.is_empty() && ran.notes.is_empty() => {
                    return Err(e);
                }
                // A later scenario that cannot take these strategies (e.g. a fault needing worker
                // processes, with only in-process strategies chosen) is noted; a failure also fails
                // the exit code.
                Err(e) => {
                    eprintln!("lockbench: {}: {e}", planned.scenario());
                    ran.scenario_failed |= matches!(e, BenchError::Failed(_));
                    ran.notes.push(format!("{}: {e}", planned.scenario()));
                }
            }
        }
        Ok(ran)
    }

    /// What a scenario's line says before the time left: its cases as planned, and with
    /// `--verbose` the case length too.
    fn detail(&self, planned: &PlannedEntry) -> String {
        // The case length is a diagnostic (`--verbose`); the cases and the time left are progress.
        let cases = cases_line(planned);
        let detail = if verbosity::verbose() {
            format!("{cases}{}", length_line(planned))
        } else {
            cases.trim_end_matches([',', ' ']).to_owned()
        };
        if detail.is_empty() {
            detail
        } else {
            format!("{detail}; ")
        }
    }

    /// How one scenario of the suite runs its plan (the plan says the rest).
    fn execution(
        &self,
        planned: &PlannedEntry,
        out_dir: &Path,
        title: &str,
        left: Duration,
    ) -> Execution {
        let args = self.args;
        Execution {
            out: Some(out_dir.join("runs").join(planned.scenario())),
            servers: args.servers.clone(),
            progress: args.progress,
            trials: planned.trials,
            progress_title: Some(format!("{title} ETA {}", minutes(left))),
            settle_early: !args.thorough,
            max_trials: planned.length.trials(args.max_trials()),
            extra_trials_until: None,
            listen: None,
        }
    }

    /// The combined results of what `ran` (noting the peers skipped), and the many-locks series for
    /// the reports.
    fn comparison(
        &self,
        started_at: String,
        mut ran: Ran,
        skipped_peers: Vec<String>,
    ) -> (Comparison, Vec<CostSeries>) {
        let args = self.args;
        // A peer left out (its runtime missing) is a row asked for and not run: the notes name it
        // and the comparison is not complete.
        ran.notes.extend(skipped_peers);
        let complete = !ran.interrupted
            && ran.notes.is_empty()
            && ran.runs.len() + usize::from(!ran.cost.is_empty()) == self.suite.len()
            && ran.runs.iter().all(|r| r.results.complete);
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
            strategies: self
                .choice
                .entries()
                .iter()
                .map(|s| strategy_info(s))
                .collect(),
            workload: self
                .user
                .as_ref()
                .map(|u| workload_note(u, &self.suite, &ran.runs, ran.cost.is_empty())),
            runs: ran.runs,
            notes: ran.notes,
        };
        (comparison, ran.cost)
    }
}

/// How many cases a scenario runs and how long each takes, as planned.
fn cases_line(planned: &PlannedEntry) -> String {
    let estimate = &planned.estimate;
    match planned.work {
        Work::ManyLocks(_) => format!(
            "{} strategies × {MANY_LOCKS_PASSES} passes holding {MANY_LOCKS_STEPS} locks, ~{:.0} s \
             each, ",
            estimate.cases,
            estimate.per_case.as_secs_f64() / f64::from(MANY_LOCKS_PASSES)
        ),
        Work::Scenario(_) => format!(
            "{} cases × {} trials, ~{:.1} s each, ",
            estimate.cases,
            planned.trials,
            estimate.per_case.as_secs_f64()
        ),
    }
}

/// The case's length as it runs (TTL units, the user's tasks and the time scale applied).
fn length_line(planned: &PlannedEntry) -> String {
    planned
        .scenario_plan()
        .and_then(|p| Some((p.workload.duration?, p.workload.warmup)))
        .map(|(d, w)| {
            format!(
                "{} after {} warm-up",
                format_duration(d),
                format_duration(w)
            )
        })
        .unwrap_or_else(|| "preset length".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_results_file_says_why_a_strategy_is_left_out_of_many_locks() {
        use lockbench_reports::many_locks::{CONNECTION_LOCK_AT_SCALE, NO_SERVER_AT_SCALE};
        let info = |id: &str| strategy_info(strategies::find(id).expect("registered"));
        let why = |id: &str| info(id).not_at_scale;
        assert_eq!(
            why("postgres-advisory").as_deref(),
            Some(CONNECTION_LOCK_AT_SCALE)
        );
        assert_eq!(
            why("redis-keyspace-naive").as_deref(),
            Some(strategies::RETAKEN_AT_EXPIRY)
        );
        assert_eq!(why("memory").as_deref(), Some(NO_SERVER_AT_SCALE));
        assert_eq!(why("redis-watchdog"), None);
        assert!(info("postgres-advisory").connection_lock);
    }
}
