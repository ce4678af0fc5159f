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

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use lockbench_reports::comparison::{
    Comparison, SELECTED, StrategyInfo, SuiteRun, UserWorkload as UserWorkloadNote,
};
use lockbench_reports::model::{CaseStatus, SCHEMA_VERSION};
use lockbench_reports::scale::{CostSeries, ScaleResults};

use crate::backends::GivenAddresses;
use crate::base::clock::now_rfc3339;
use crate::base::duration::format_duration;
use crate::base::error::{BenchError, EXIT_FAILED, EXIT_INTERRUPTED};
use crate::base::stdout::{out, outln};
use crate::base::{output, suggest, table, verbosity};
use crate::commands::committed;
use crate::commands::report::{self, FailOn};
use crate::commands::run::{self, RunRequest};
use crate::commands::scale::{self, ScaleOptions, ScaleRequest};
use crate::commands::suite::{
    self, Length, MANY_LOCKS, MANY_LOCKS_HOLD, MANY_LOCKS_PASSES, MANY_LOCKS_STEP_BUDGET,
    MANY_LOCKS_STEPS, PlannedScenario, SUITE, Suite, SuiteEntry,
};
use crate::kinds::ServerKindExt;
use crate::workload::user::UserWorkload;
use crate::workload::{ScenarioFile, TimeScale, split_list};
use crate::{scenarios, strategies};

/// What `lockbench compare` is asked to do.
#[derive(Debug, Clone, Default)]
pub struct CompareRequest {
    /// The short suite.
    pub quick: bool,
    /// Output directory (default: `results/compare-UTCTIME`).
    pub out: Option<PathBuf>,
    /// Strategy ids, comma-separated, or `all` (default: all).
    pub strategies: Option<String>,
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

/// The `--time-scale` to suggest, a multiple of the user's that still runs every case of `asked` (a
/// TTL compressed below a strategy's smallest would skip cases), with its planned time: the smallest
/// whose plan fits `budget`, else the one that plans least (set-up costs do not scale).
fn fitting_scale(
    user: &UserWorkload,
    budget: Duration,
    asked: &[PlannedScenario],
    plan: impl Fn(&UserWorkload) -> Vec<PlannedScenario>,
) -> Option<(TimeScale, Duration)> {
    let cases = |p: &[PlannedScenario]| p.iter().map(|s| s.cases).sum::<u32>();
    let candidates: Vec<(TimeScale, Duration)> =
        [2, 3, 5, 10, 20, 30, 50, 100, 200, 300, 500, 1000]
            .into_iter()
            .map(|k| user.time_scale.times(k))
            .filter(|n| *n <= TimeScale::FASTEST)
            .filter_map(|n| {
                let scaled = plan(&UserWorkload {
                    time_scale: n,
                    ..user.clone()
                });
                (cases(&scaled) == cases(asked)).then(|| (n, suite::planned_total(&scaled)))
            })
            .collect();
    candidates
        .iter()
        .find(|(_, total)| *total <= budget)
        .or_else(|| candidates.iter().min_by_key(|(_, total)| *total))
        .copied()
}

/// A round trip above this share of a case's TTL breaks the ratio of a compressed workload.
const ROUND_TRIP_SHARE: f64 = 0.01;

/// What the report says about the user's workload: the scale in words, the cases where what does
/// not scale breaks the ratio, and the scenarios that kept part of their own workload.
fn workload_note(
    user: &UserWorkload,
    suite: &[(SuiteEntry, Length)],
    runs: &[SuiteRun],
    no_many_locks: bool,
) -> UserWorkloadNote {
    let mut notes: Vec<String> = user.scale_line().into_iter().collect();
    if user.time_scale > TimeScale::REAL {
        // Per strategy: how many cases, and the worst share of its TTL one round trip took.
        let mut broken: Vec<(&str, u32, f64, f64, &str)> = Vec::new();
        for run in runs {
            // A scenario that keeps its own TTL ran at real time: nothing was compressed.
            let compressed = suite.iter().any(|(entry, _)| {
                entry.scenario == run.results.scenario.name
                    && user.time_scale_for(&suite::own_workload(entry).0) > TimeScale::REAL
            });
            if !compressed {
                continue;
            }
            let ttl_ms = run.results.scenario.workload.watchdog_timeout_ms;
            for case in &run.results.cases {
                let Some(round_trip) =
                    [case.latency.release.p50_ms, case.renewal.round_trip.p50_ms]
                        .into_iter()
                        .flatten()
                        .reduce(f64::max)
                else {
                    continue;
                };
                let share = round_trip / ttl_ms;
                if share <= ROUND_TRIP_SHARE {
                    continue;
                }
                let name = run.results.scenario.name.as_str();
                match broken.iter_mut().find(|b| b.0 == case.strategy) {
                    Some(b) if share > b.3 => *b = (b.0, b.1 + 1, round_trip, share, name),
                    Some(b) => b.1 += 1,
                    None => broken.push((&case.strategy, 1, round_trip, share, name)),
                }
            }
        }
        for (strategy, cases, round_trip, share, worst) in broken {
            notes.push(format!(
                "Ratio broken for {strategy} in {cases} case(s): a round trip (median release or \
                 renewal) of up to {round_trip:.1} ms is {:.1} % of the compressed TTL, above {} % \
                 (worst: {worst}); its figures there are not those of your workload at real time.",
                share * 100.0,
                ROUND_TRIP_SHARE * 100.0
            ));
        }
    }
    for (entry, _) in suite {
        if entry.scenario == MANY_LOCKS {
            if !no_many_locks {
                notes.push(format!("{}.", suite::MANY_LOCKS_OWN_WORKLOAD));
            }
            continue;
        }
        let (own, why) = suite::own_workload(entry);
        if own.is_empty() {
            continue;
        }
        let time = if user.time_scale_for(&own) != user.time_scale {
            ", at real time"
        } else {
            ""
        };
        notes.push(format!(
            "{} keeps its own {}{time}: {}",
            entry.scenario,
            own.join(", "),
            why.unwrap_or_default()
        ));
    }
    UserWorkloadNote {
        summary: user.summary(),
        time_scale: f64::from(user.time_scale),
        notes,
    }
}

/// Runs the many-locks entry: `lockbench scale` holding 10k locks, [`MANY_LOCKS_PASSES`] passes of
/// every strategy with a server; its cost series feed the report's many-locks cells (every pass) and
/// its cost-against-held-locks charts (the first).
async fn many_locks(
    args: &CompareRequest,
    list: &str,
    out_dir: &Path,
) -> Result<Vec<CostSeries>, BenchError> {
    let dir = out_dir.join("runs").join(MANY_LOCKS);
    scale::command(many_locks_request(args, list, &dir)?).await?;
    let text = std::fs::read_to_string(dir.join(scale::SCALE_FILE))
        .map_err(|e| BenchError::failed(format!("many-locks: {e}")))?;
    ScaleResults::from_json(&text)
        .map(|s| s.cost_series())
        .map_err(|e| BenchError::failed(format!("many-locks: {e}")))
}

/// The `lockbench scale` run of the many-locks entry, writing into `dir`: the chosen strategies that
/// can hold many locks ([`strategies::Strategy::not_at_scale`]), each in [`MANY_LOCKS_PASSES`] passes.
fn many_locks_request(
    args: &CompareRequest,
    list: &str,
    dir: &Path,
) -> Result<ScaleRequest, BenchError> {
    let chosen = strategies::resolve(&[list.to_owned()]).map_err(BenchError::usage)?;
    let with_server: Vec<&str> = chosen
        .iter()
        .filter(|s| s.not_at_scale().is_none())
        .map(|s| s.id)
        .collect();
    if with_server.is_empty() {
        return Err(BenchError::usage(
            "many-locks: none of the chosen strategies has a lock server",
        ));
    }
    Ok(ScaleRequest {
        options: ScaleOptions {
            strategies: Some(with_server.join(",")),
            steps: MANY_LOCKS_STEPS.to_owned(),
            hold: MANY_LOCKS_HOLD.to_owned(),
            step_budget: MANY_LOCKS_STEP_BUDGET.to_owned(),
            passes: MANY_LOCKS_PASSES,
            // The cost chart needs no yardstick.
            yardstick: false,
            ..ScaleOptions::default()
        },
        out: Some(dir.to_path_buf()),
        servers: args.servers.clone(),
        worker: false,
        server_pids: None,
        raw_sender: false,
    })
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
    /// The `--strategies` list, with the peers `--peers` adds.
    list: String,
    trials: u32,
    suite: Vec<(SuiteEntry, Length)>,
    user: Option<UserWorkload>,
    plan: Vec<PlannedScenario>,
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
    let (list, skipped_peers) = with_peers(&args);
    let chosen = strategies::resolve(std::slice::from_ref(&list))
        .map_err(|e| BenchError::usage(format!("--strategies: {e}")))?;
    let trials = args.trials();
    if trials == 0 || trials > 100 {
        return Err(BenchError::usage(format!(
            "--trials: must be 1..=100, got {trials}"
        )));
    }
    let max_trials = args.max_trials();
    if max_trials < trials || max_trials > 100 {
        return Err(BenchError::usage(format!(
            "--max-trials: must be at least --trials ({trials}) and at most 100, got {max_trials}"
        )));
    }
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
        list,
        trials,
        suite,
        user,
        plan: Vec::new(),
    };
    compare.plan = compare.plan_for(compare.user.as_ref());
    let planned = suite::planned_total(&compare.plan);
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
    let (mut comparison, cost) = compare.comparison(&chosen, started_at, ran, skipped_peers);
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

/// The `--strategies` list (default `all`) with the peers `--peers` adds and the adapters `--adapter`
/// added, and a note for each peer skipped because its runtime is missing.
fn with_peers(args: &CompareRequest) -> (String, Vec<String>) {
    let mut list = args.strategies.clone().unwrap_or_else(|| "all".to_owned());
    for added in strategies::added() {
        list = format!("{list},{}", added.id);
    }
    let mut skipped_peers = Vec::new();
    if args.peers {
        // With --strategies, the peers read beside the chosen rows (the model-against-library pairs).
        let named = (args.strategies.as_deref().map(split_list))
            .filter(|named| !named.iter().any(|n| n == "all"));
        let wanted = |id: &str| {
            named.as_ref().is_none_or(|named| {
                strategies::counterpart(id).is_some_and(|c| named.iter().any(|n| n == c))
            })
        };
        for peer in strategies::STRATEGIES
            .iter()
            .filter(|s| s.is_peer() && wanted(s.id))
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
    (list, skipped_peers)
}

impl Compare<'_> {
    /// The plan of the chosen scenarios, with `user`'s workload if given.
    fn plan_for(&self, user: Option<&UserWorkload>) -> Vec<PlannedScenario> {
        let args = self.args;
        suite::plan(
            if args.scenarios.is_some() {
                named_from(args.suite())
            } else {
                args.suite()
            },
            &self.list,
            self.trials,
            !args.thorough,
            user,
        )
        .into_iter()
        .filter(|p| self.suite.iter().any(|(e, _)| e.scenario == p.scenario))
        .collect()
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
                    p.scenario,
                    p.cases,
                    p.per_case.as_secs_f64(),
                    minutes(p.total)
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
        for (index, (entry, length)) in self.suite.iter().enumerate() {
            let after: Duration = self.plan[(index + 1).min(self.plan.len())..]
                .iter()
                .map(|p| p.total)
                .sum::<Duration>()
                + suite::report_time(&self.plan);
            let left = after + self.plan.get(index).map_or(Duration::ZERO, |p| p.total);
            // Extra trials may use what the budget leaves once the later scenarios' planned time and
            // a margin for their overrunning it are set aside: the plan's slack and whatever the run
            // gained on it so far.
            let extra_until = budget.map(|b| started + b.saturating_sub(after + OVERRUN_MARGIN));
            let title = format!("[{}/{}] {}", index + 1, self.suite.len(), entry.scenario);
            // The case length is a diagnostic (`--verbose`); the cases and the time left are progress.
            let cases = self.cases_line(entry, *length);
            let detail = if verbosity::verbose() {
                format!("{cases}{}", self.length_line(entry, *length))
            } else {
                cases.trim_end_matches([',', ' ']).to_owned()
            };
            let detail = if detail.is_empty() {
                detail
            } else {
                format!("{detail}; ")
            };
            outln!("{title}: {detail}about {} left", minutes(left));
            if entry.scenario == MANY_LOCKS {
                match many_locks(self.args, &self.list, out_dir).await {
                    Ok(series) => ran.cost = series,
                    Err(e) => {
                        eprintln!("lockbench: {MANY_LOCKS}: {e}");
                        ran.scenario_failed |= matches!(e, BenchError::Failed(_));
                        ran.notes.push(format!("{MANY_LOCKS}: {e}"));
                    }
                }
                continue;
            }
            let if_violated = scenarios::load(entry.scenario)
                .ok()
                .and_then(|l| l.file.if_violated);
            let mut request = self.run_request(entry, *length, out_dir, &title, left);
            request.extra_trials_until = extra_until;
            match run::run(request).await {
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
                    eprintln!("lockbench: {}: {e}", entry.scenario);
                    ran.scenario_failed |= matches!(e, BenchError::Failed(_));
                    ran.notes.push(format!("{}: {e}", entry.scenario));
                }
            }
        }
        Ok(ran)
    }

    /// How many cases a scenario runs and how long each takes, as planned.
    fn cases_line(&self, entry: &SuiteEntry, length: Length) -> String {
        let trials = length.trials(self.trials);
        self.plan
            .iter()
            .find(|p| p.scenario == entry.scenario)
            .map(|p| {
                if entry.scenario == MANY_LOCKS {
                    format!(
                        "{} strategies × {MANY_LOCKS_PASSES} passes holding {MANY_LOCKS_STEPS} \
                         locks, ~{:.0} s each, ",
                        p.cases,
                        p.per_case.as_secs_f64() / f64::from(MANY_LOCKS_PASSES)
                    )
                } else {
                    format!(
                        "{} cases × {trials} trials, ~{:.1} s each, ",
                        p.cases,
                        p.per_case.as_secs_f64()
                    )
                }
            })
            .unwrap_or_default()
    }

    /// The case's length as it runs (TTL units, the user's tasks and the time scale applied).
    fn length_line(&self, entry: &SuiteEntry, length: Length) -> String {
        suite::workload(entry, length, &self.list, self.user.as_ref())
            .ok()
            .and_then(|w| Some((w.duration?, w.warmup)))
            .map(|(d, w)| {
                format!(
                    "{} after {} warm-up",
                    format_duration(d),
                    format_duration(w)
                )
            })
            .unwrap_or_else(|| "preset length".to_owned())
    }

    /// The `lockbench run` of one scenario of the suite.
    fn run_request(
        &self,
        entry: &SuiteEntry,
        length: Length,
        out_dir: &Path,
        title: &str,
        left: Duration,
    ) -> RunRequest {
        let args = self.args;
        RunRequest {
            scenario: entry.scenario.to_owned(),
            overrides: ScenarioFile {
                // With the peers, MONITOR follows the Redis servers: the commands and scripts each
                // row ran, for holding the models against their libraries.
                monitor_commands: args.peers.then_some(true),
                ..suite::overrides(entry, length, &self.list, self.user.as_ref())
            },
            faults: Vec::new(),
            out: Some(out_dir.join("runs").join(entry.scenario)),
            servers: args.servers.clone(),
            progress: args.progress,
            trials: length.trials(self.trials),
            progress_title: Some(format!("{title} ETA {}", minutes(left))),
            settle_early: !args.thorough,
            max_trials: length.trials(args.max_trials()),
            extra_trials_until: None,
            listen: None,
            fit: suite::fit(entry, self.user.as_ref()),
            history: args.history,
        }
    }

    /// The combined results of what `ran` (noting the peers skipped), and the many-locks series for
    /// the reports.
    fn comparison(
        &self,
        chosen: &[&'static strategies::Strategy],
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
            strategies: chosen.iter().map(|s| strategy_info(s)).collect(),
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

#[cfg(test)]
mod tests {
    use lockbench_reports::comparison::Comparison;

    use super::*;
    use crate::workload::ScenarioFile;

    const FIXTURE: &str = include_str!("../../../reports/tests/fixtures/compare-quick.json");

    fn user(time_scale: &str) -> UserWorkload {
        let fields = ScenarioFile {
            watchdog_timeout: Some("30s".into()),
            task: Some("uniform 2s..20s".into()),
            ..ScenarioFile::default()
        };
        UserWorkload::new(None, fields, Some(time_scale))
            .expect("valid")
            .expect("given")
    }

    #[test]
    fn the_note_names_exceptions_and_broken_ratios() {
        let mut c = Comparison::read(FIXTURE).expect("fixture");
        // A 150 ms round trip against the baseline's 10 s TTL: 1.5 %, broken; long-tail and
        // lease-too-short keep their own TTL and run at real time, so nothing is compressed there.
        for run in &mut c.runs {
            for case in &mut run.results.cases {
                if case.strategy == "redis-watchdog" {
                    case.latency.release.p50_ms = Some(150.0);
                }
            }
        }
        let suite = suite::entries(Suite::Default);
        let note = workload_note(&user("10"), &suite, &c.runs, false);
        let text = note.notes.join("\n");
        assert_eq!(note.time_scale, 10.0);
        assert!(note.summary.contains("TTL 30s"), "{}", note.summary);
        assert!(
            text.starts_with("Your workload at 1/10 time: a 30s TTL run as 3s"),
            "{text}"
        );
        assert!(
            text.contains("Ratio broken for redis-watchdog in 1 case(s)")
                && text.contains("is 1.5 % of the compressed TTL")
                && text.contains("(worst: baseline)"),
            "{text}"
        );
        assert!(!text.contains("Ratio broken for memory"), "{text}");
        assert!(
            text.contains("long-tail keeps its own task, watchdog_timeout, at real time: its tail"),
            "{text}"
        );
        assert!(
            text.contains("lease-too-short keeps its own task, leases"),
            "{text}"
        );
        assert!(text.contains("many-locks keeps its own workload"), "{text}");
        // At real time nothing is compressed, so no ratio is broken.
        let real = workload_note(&user("1"), &suite, &c.runs, true);
        assert!(
            !real.notes.iter().any(|n| n.contains("Ratio")),
            "{:?}",
            real.notes
        );
        assert!(!real.notes.iter().any(|n| n.contains("many-locks")));
    }

    #[test]
    fn many_locks_holds_ten_thousand_locks_in_three_passes_of_the_strategies_that_can() {
        let dir = Path::new("many-locks");
        let list = "redis-watchdog,postgres-advisory,memory,redis-keyspace-naive,zookeeper";
        let request = many_locks_request(&CompareRequest::default(), list, dir).expect("a request");
        let options = &request.options;
        assert_eq!(
            options.strategies.as_deref(),
            Some("redis-watchdog,zookeeper")
        );
        assert_eq!(
            (options.steps.as_str(), options.hold.as_str()),
            ("10000", "1s")
        );
        assert_eq!(options.passes, 3);
        let spec = options.spec().expect("a valid scale run");
        assert_eq!((spec.steps.as_slice(), spec.passes), (&[10_000][..], 3));
        assert!(!spec.yardstick);
        assert_eq!(request.out.as_deref(), Some(dir));
    }

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

    #[test]
    fn the_suggested_scale_fits_the_budget_and_keeps_every_case() {
        let plan = |u: &UserWorkload| suite::plan(Suite::Default, "all", 3, true, Some(u));
        let asked = plan(&user("1"));
        let total = suite::planned_total(&asked);
        assert!(total > Duration::from_secs(1200), "{total:?}");
        let (n, fitted) =
            fitting_scale(&user("1"), Duration::from_secs(3600), &asked, plan).expect("a scale");
        assert!(
            fitted <= Duration::from_secs(3600) && n > TimeScale::REAL,
            "{n}: {fitted:?}"
        );
        let cases = |p: &[PlannedScenario]| p.iter().map(|s| s.cases).sum::<u32>();
        assert_eq!(cases(&plan(&user(&n.to_string()))), cases(&asked));
    }
}
