//! `lockbench run`: resolve the workload and strategies, check every input before measuring (output
//! directory, server addresses, worker mode), start the servers, run the cases, write the results
//! atomically — also when Ctrl-C cut the run short (marked incomplete) — and stop the servers.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use lockbench_reports::model::{
    CaseResult, CaseStatus, Results, SCHEMA_VERSION, Scenario, TrialStop, Verdict,
};

use crate::backends::{Backends, GivenAddresses};
use crate::base::clock::{MonoClock, now_rfc3339};
use crate::base::error::{BenchError, EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK};
use crate::base::progress::Progress;
use crate::base::stdout::{out, outln};
use crate::base::stop::StopSignal;
use crate::base::{environment, output, table};
use crate::commands::plan::scenario::PlannedCase;
use crate::commands::plan::{NotApplicable, ScenarioPlan};
use crate::commands::preflight;
use crate::commands::signals::stop_signals;
use crate::driver::case::{CaseFate, CaseRun, run_case};
use crate::driver::mode::CaseContext;
use crate::driver::remote;
use crate::faults::parse_fault_text;
use crate::strategies::{Strategy, StrategyChoice, StrategySettings};
use crate::trial_stop::{self, Next, Theory, TrialRule};
use crate::workload::{LeaseSpec, ScenarioFile, WorkerMode, Workload};
use crate::{results, scenarios, strategies, trials};

/// Environment variable naming the `lockbench` executable worker processes run (default: the current
/// executable; tests that call [`run`] in-process set it to the built binary).
pub(crate) const WORKER_EXE_ENV: &str = "LOCKBENCH_WORKER_EXE";

/// What `lockbench run` is asked to do: a scenario (preset name or TOML file) with overrides, which it
/// resolves into its plan, and how to run that plan.
#[derive(Debug, Clone, Default)]
pub struct RunRequest {
    /// Preset name or path of a scenario TOML file.
    pub scenario: String,
    /// The strategies `--strategies` chose (parsed once, where the flag is read); `None`: the
    /// scenario file's.
    pub strategies: Option<StrategyChoice>,
    /// Values that override the scenario file's.
    pub overrides: ScenarioFile,
    /// `--fault` texts that replace the scenario's faults (`none` alone: no faults); checked here.
    pub faults: Vec<String>,
    /// Write each case's history (`--history`) beside the results.
    pub history: bool,
    /// How its plan runs.
    pub execution: Execution,
}

/// How a scenario's plan runs, besides what the plan says: where the results go, the servers given,
/// the trials and the progress bar. `lockbench run` takes it from its flags, `compare` gives it per
/// scenario of its suite's plan; [`execute`] reads it.
#[derive(Debug, Clone, Default)]
pub struct Execution {
    /// Output directory (default: `results/SCENARIO-UTCTIME`).
    pub out: Option<PathBuf>,
    /// Servers the user gave instead of starting them.
    pub servers: GivenAddresses,
    /// Show a progress bar (when stdout is a terminal).
    pub progress: bool,
    /// Trials per case, each with its own seed (the scenario's seed plus the trial's index), pooled
    /// into one results entry that says how many were violated; 0: one run, not marked as trials.
    pub trials: u32,
    /// Shown before each case on the progress bar (`compare`: the scenario and the suite's ETA);
    /// the trial is added when there are several.
    pub progress_title: Option<String>,
    /// Stop a case's trials at the first one that shows a violation theory predicts every time
    /// ([`trial_stop::next`]); `false` runs every planned trial.
    pub settle_early: bool,
    /// The most trials a case may run: above `trials`, a case whose trials disagree, or a race that
    /// broke in every one, gets extra trials ([`trial_stop::next`]); 0 or `trials`: none.
    pub max_trials: u32,
    /// No extra trial starts after this (`compare`: what its budget leaves); `None`: only the cap.
    pub extra_trials_until: Option<std::time::Instant>,
    /// Where to listen for remote workers (`--workers remote`; default [`remote::DEFAULT_LISTEN`]).
    pub listen: Option<String>,
}

/// What a finished run produced.
#[derive(Debug)]
pub struct RunOutcome {
    /// The results as written.
    pub results: Results,
    /// Where they were written.
    pub path: PathBuf,
    /// Ctrl-C stopped the run.
    pub interrupted: bool,
}

/// Runs `lockbench run`: prints the summary table and where the results are; returns the exit code.
pub(crate) async fn command(request: RunRequest) -> Result<i32, BenchError> {
    let outcome = run(request).await?;
    out!("{}", table::render(&outcome.results));
    outln!("results: {}", outcome.path.display());
    if outcome.interrupted {
        return Ok(EXIT_INTERRUPTED);
    }
    let failed = outcome
        .results
        .cases
        .iter()
        .any(|c| c.status == CaseStatus::Failed);
    Ok(if failed { EXIT_FAILED } else { EXIT_OK })
}

/// Runs the scenario of `request`. Bad input is a [`BenchError::Usage`] found before anything runs.
pub(crate) async fn run(request: RunRequest) -> Result<RunOutcome, BenchError> {
    check_trials(&request.execution)?;
    let plan = resolve(&request)?;
    execute(request.execution, plan).await
}

/// Runs `plan` (a scenario, resolved) as `execution` says: starts its servers, runs its cases and
/// writes its results, the strategies it left out listed as skipped with why.
pub(crate) async fn execute(
    execution: Execution,
    plan: ScenarioPlan,
) -> Result<RunOutcome, BenchError> {
    let args = execution;
    let started_at = now_rfc3339();
    let workload = &plan.workload;
    let remote = listen_for_workers(&args, workload).await?;
    let worker_exe = match std::env::var_os(WORKER_EXE_ENV) {
        Some(path) => PathBuf::from(path),
        None => std::env::current_exe().map_err(|e| {
            BenchError::failed(format!("cannot find the lockbench executable: {e}"))
        })?,
    };
    let out_dir = args
        .out
        .clone()
        .unwrap_or_else(|| output::default_dir(&workload.name, &started_at));
    let out_dir = output::claim_dir(&out_dir, output::RESULTS_FILE)?;
    strategies::log_added_adapters_under(&out_dir.join(strategies::ADDED_ADAPTER_LOGS));
    let needed = plan.servers_to_start(&args.servers)?;
    preflight::valkey_rows_need_valkey(&plan.strategies, &args.servers)?;

    let interrupt = stop_signals();
    let backends = Backends::prepare(&needed, &args.servers, strategies::check_address).await?;
    let settings = StrategySettings::new(workload.watchdog_timeout);
    preflight::valkey_rows_have_their_commands(&plan.strategies, &backends, &settings).await?;
    let runner = CaseRunner {
        args: &args,
        history_dir: workload.history.then(|| out_dir.join(HISTORY_DIR)),
        workload,
        backends: &backends,
        interrupt: interrupt.clone(),
        use_bar: args.progress && std::io::IsTerminal::is_terminal(&std::io::stdout()),
        clock: MonoClock::new(),
        run_id: format!("{:08x}", rand::random::<u32>()),
        worker_exe,
        remote,
    };
    let (runs, mut cases) = runner.every_case(&plan.cases).await;
    cases.extend(not_applicable_cases(&args, workload, &plan.not_applicable));
    let interrupted = interrupt.is_set();
    let planned = (plan.strategies.len() + plan.not_applicable.len()) * workload.leases.len();
    let complete = !interrupted
        && cases.len() == planned
        && cases
            .iter()
            .all(|c| matches!(c.status, CaseStatus::Complete | CaseStatus::Skipped));
    let ids = plan.ids();
    let results = Results {
        schema_version: SCHEMA_VERSION,
        complete,
        started_at,
        finished_at: now_rfc3339(),
        scenario: Scenario {
            name: workload.name.clone(),
            description: workload.description.clone(),
            source: workload.source.clone(),
            workload: workload.to_model(&ids),
            expect: workload.expect.clone(),
            theory: workload.theory.clone(),
            either_mechanisms: workload.either_mechanisms.clone(),
        },
        environment: environment::collect(with_case_servers(backends.infos(), &runs)),
        cases,
    };
    let written = output::write_atomic(&out_dir, output::RESULTS_FILE, &results.to_json());
    drop(backends);
    Ok(RunOutcome {
        results,
        path: written?,
        interrupted,
    })
}

/// `--trials` and `--max-trials` are within what a run can do: 1 to 100 trials, and a cap not below
/// the trials asked for (no cap without trials).
fn check_trials(args: &Execution) -> Result<(), BenchError> {
    if args.trials > 100 {
        return Err(BenchError::usage(format!(
            "--trials: must be 1..=100, got {}",
            args.trials
        )));
    }
    if args.max_trials > 0 && (args.trials == 0 || args.max_trials < args.trials) {
        return Err(BenchError::usage(format!(
            "--max-trials: must be at least --trials ({}), got {}",
            args.trials, args.max_trials
        )));
    }
    if args.max_trials > 100 {
        return Err(BenchError::usage(format!(
            "--max-trials: must be at most 100, got {}",
            args.max_trials
        )));
    }
    Ok(())
}

/// The run's plan: its workload, the strategies it runs (those `--strategies` chose, else the
/// scenario file's, parsed here once) and those left out because its faults do not apply to them;
/// every input is checked here, a bad one is a usage error.
fn resolve(args: &RunRequest) -> Result<ScenarioPlan, BenchError> {
    let loaded = scenarios::load(&args.scenario).map_err(BenchError::usage)?;
    let mut file = loaded.file;
    file.overlay(args.overrides.clone());
    apply_fault_flags(&mut file, &args.faults).map_err(BenchError::usage)?;
    let mut workload =
        Workload::resolve(&loaded.name, &loaded.source, file).map_err(BenchError::usage)?;
    workload.history = args.history;
    workload.faults_fit().map_err(BenchError::usage)?;
    let choice = match &args.strategies {
        Some(choice) => choice.clone(),
        None => StrategyChoice::from_lists(&workload.strategies).map_err(BenchError::usage)?,
    };
    let plan = ScenarioPlan::build(workload, &choice).map_err(BenchError::usage)?;
    plan.check_worker_mode().map_err(BenchError::usage)?;
    if args.execution.listen.is_some() && plan.workload.workers != WorkerMode::Remote {
        return Err(BenchError::usage("--listen needs --workers remote"));
    }
    Ok(plan)
}

/// With `--workers remote`, the pool remote workers connect to (announced on stderr).
async fn listen_for_workers(
    args: &Execution,
    workload: &Workload,
) -> Result<Option<Arc<remote::WorkerPool>>, BenchError> {
    if workload.workers != WorkerMode::Remote {
        return Ok(None);
    }
    let token = remote::token_from_env().map_err(BenchError::usage)?;
    let listen = args.listen.as_deref().unwrap_or(remote::DEFAULT_LISTEN);
    let pool = remote::WorkerPool::listen(listen, token)
        .await
        .map_err(BenchError::usage)?;
    eprintln!(
        "lockbench: waiting for {} remote workers on {} ({}=… lockbench worker --connect {})",
        workload.clients,
        pool.address(),
        remote::TOKEN_ENV,
        pool.address()
    );
    Ok(Some(Arc::new(pool)))
}

/// What every case of a run shares.
struct CaseRunner<'a> {
    args: &'a Execution,
    /// Where each case's history goes (`--history`): `<out>/history/`.
    history_dir: Option<PathBuf>,
    workload: &'a Workload,
    backends: &'a Backends,
    interrupt: StopSignal,
    use_bar: bool,
    clock: MonoClock,
    run_id: String,
    worker_exe: PathBuf,
    remote: Option<Arc<remote::WorkerPool>>,
}

impl CaseRunner<'_> {
    /// Runs the planned `cases` (each strategy under each lease mode) until Ctrl-C, their trials
    /// interleaved: round by round, each case still running its next trial in turn, so a drift of the
    /// machine falls on every case alike. Each case's trials follow [`trial_stop::next`]; extra trials
    /// come after every planned one, while the time allowed for them lasts. Returns every trial's run
    /// and each case's result (pooled when trials were asked for).
    async fn every_case(&self, cases: &[PlannedCase]) -> (Vec<CaseRun>, Vec<CaseResult>) {
        let rule = self.rule();
        let mut cells: Vec<Cell> = cases
            .iter()
            .map(|case| Cell {
                strategy: case.strategy,
                lease: case.lease,
                fate: case.fate.clone(),
                theory: Theory::of(case.expected),
                trials: Vec::new(),
                next: Next::Planned,
            })
            .collect();
        let mut runs = Vec::new();
        let mut keys_index = 0;
        'rounds: loop {
            let mut ran_any = false;
            for cell in &mut cells {
                if self.interrupt.is_set() {
                    break 'rounds;
                }
                match cell.next {
                    Next::Stop(_) => continue,
                    Next::Extra if !self.extra_time_left() => {
                        cell.next = Next::Stop(TrialStop::Budget);
                        continue;
                    }
                    Next::Planned | Next::Extra => {}
                }
                let trial = cell.trials.len() as u32;
                let (case, run) = self.trial(cell, trial, keys_index).await;
                keys_index += 1;
                ran_any = true;
                runs.push(run);
                let skipped = case.status == CaseStatus::Skipped;
                cell.trials.push(case);
                // A case that cannot run (skipped) will not run in another trial either.
                cell.next = if skipped {
                    Next::Stop(TrialStop::Planned)
                } else {
                    let verdicts: Vec<Verdict> =
                        cell.trials.iter().map(|c| c.safety.verdict).collect();
                    trial_stop::next(rule, cell.theory, &verdicts)
                };
            }
            if !ran_any {
                break;
            }
        }
        let interrupted = self.interrupt.is_set();
        let cases = cells
            .into_iter()
            .filter_map(|cell| cell.result(self.args.trials, self.workload.seed, interrupted))
            .collect();
        (runs, cases)
    }

    /// How this run's cases spend their trials.
    fn rule(&self) -> TrialRule {
        let planned = self.args.trials.max(1);
        TrialRule {
            planned,
            cap: self.args.max_trials.max(planned),
            settle_early: self.args.settle_early,
        }
    }

    /// Whether an extra trial may still start: before the time allowed for extra trials ends (no
    /// limit but the cap when none was set).
    fn extra_time_left(&self) -> bool {
        self.args
            .extra_trials_until
            .is_none_or(|until| std::time::Instant::now() < until)
    }

    /// Runs trial `trial` of `cell` with its own seed and keys (`keys_index`); writes its history when
    /// asked; answers its result and its run.
    async fn trial(&self, cell: &Cell, trial: u32, keys_index: usize) -> (CaseResult, CaseRun) {
        let seeded = Workload {
            seed: self.workload.seed.wrapping_add(u64::from(trial)),
            ..self.workload.clone()
        };
        let ctx = self.context(&seeded, trial, self.args.trials.max(1));
        let wall = std::time::Instant::now();
        let mut run = run_case(&ctx, cell.strategy, cell.lease, &cell.fate, keys_index).await;
        let mut case = results::case_result(&run);
        if let Some(dir) = &self.history_dir {
            write_history(dir, &seeded, &mut run, &case, trial, self.args.trials);
        }
        case.window.wall_ms = Some(wall.elapsed().as_secs_f64() * 1e3);
        (case, run)
    }

    /// The context of one trial, run with `seeded`.
    fn context<'a>(&'a self, seeded: &'a Workload, trial: u32, trials: u32) -> CaseContext<'a> {
        CaseContext {
            workload: seeded,
            backends: self.backends,
            endpoints: self.backends.endpoints(),
            interrupt: self.interrupt.clone(),
            clock: self.clock,
            run_id: self.run_id.clone(),
            worker_exe: self.worker_exe.clone(),
            remote: self.remote.clone(),
            progress: Progress::new(self.use_bar).titled(trial_title(
                self.args.progress_title.as_deref(),
                trial,
                trials,
            )),
        }
    }
}

/// One case (a strategy under a lease mode) and the trials it ran so far.
struct Cell {
    strategy: &'static Strategy,
    lease: LeaseSpec,
    /// Whether it runs, as the plan decided.
    fate: CaseFate,
    /// What the scenario's theory says of it.
    theory: Theory,
    /// Each trial's result, in run order.
    trials: Vec<CaseResult>,
    /// What it does next.
    next: Next,
}

impl Cell {
    /// The case's result: its one run when no trials were asked for (`trials` 0), else its trials
    /// pooled (each with its seed, `seed` plus its index) with the rule that stopped them.
    fn result(self, trials: u32, seed: u64, interrupted: bool) -> Option<CaseResult> {
        let ran = self.trials.len() as u32;
        let stopped_by = match self.next {
            Next::Stop(stop) => stop,
            Next::Planned | Next::Extra if interrupted => TrialStop::Interrupted,
            Next::Planned | Next::Extra => TrialStop::Planned,
        };
        let mut each = self.trials;
        if trials == 0 {
            return each.pop();
        }
        let seeded = each
            .into_iter()
            .enumerate()
            .map(|(i, c)| (seed.wrapping_add(i as u64), c))
            .collect();
        // Settled before every planned trial ran: sequential, so no rate interval.
        let stopped_early = stopped_by == TrialStop::TheoryBreak && ran < trials;
        let mut pooled = trials::pool(seeded, stopped_early)?;
        if let Some(t) = pooled.trials.as_mut() {
            t.stopped_by = Some(stopped_by);
        }
        Some(pooled)
    }
}

/// The skipped cases of the strategies left out of the run, with why (pooled as one trial when trials
/// were asked for).
fn not_applicable_cases(
    args: &Execution,
    workload: &Workload,
    not_applicable: &[NotApplicable],
) -> Vec<CaseResult> {
    let mut cases = Vec::new();
    for (strategy, why) in not_applicable {
        for lease in &workload.leases {
            let skipped = CaseRun {
                strategy: strategy.id,
                lease: *lease,
                status: CaseStatus::Skipped,
                error: Some(why.clone()),
                output: None,
                server_cost: None,
                warmup: workload.warmup,
                faults: Vec::new(),
                own_servers: None,
                renew_after_unlock: None,
            };
            let case = results::case_result(&skipped);
            cases.push(if args.trials == 0 {
                case
            } else {
                trials::pool(vec![(workload.seed, case.clone())], false)
                    .map(|mut pooled| {
                        if let Some(t) = pooled.trials.as_mut() {
                            t.stopped_by = Some(TrialStop::Planned);
                        }
                        pooled
                    })
                    .unwrap_or(case)
            });
        }
    }
    cases
}

/// The folder of a run's output that holds its cases' histories (`--history`).
const HISTORY_DIR: &str = "history";

/// Writes the history `run` recorded as JSON lines into `dir` (`<strategy>-<lease>[-trial<n>].jsonl`,
/// a header line first), in order of invocation, and frees it; a failure to write is noted on
/// stderr and costs nothing else (the results file is what the run is for).
fn write_history(
    dir: &Path,
    workload: &Workload,
    run: &mut CaseRun,
    case: &CaseResult,
    trial: u32,
    trials: u32,
) {
    let Some(output) = run.output.as_mut() else {
        return;
    };
    let mut ops = std::mem::take(&mut output.findings.history);
    ops.sort_by_key(|op| (op.invoke_ns, op.complete_ns, op.client));
    let header = serde_json::json!({
        "format": "lockbench-history/1",
        "strategy": run.strategy,
        "lease": run.lease.to_string(),
        "fencing": output.capabilities.fencing,
        "keys": workload.keys,
        "clients": workload.clients,
        "verdict": case.safety.verdict,
        "trial": trial + 1,
    });
    let mut text = header.to_string();
    text.push('\n');
    for op in &ops {
        text.push_str(&serde_json::to_string(op).unwrap_or_default());
        text.push('\n');
    }
    let lease: String = run
        .lease
        .to_string()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    let name = if trials > 1 {
        format!("{}-{lease}-trial{}.jsonl", run.strategy, trial + 1)
    } else {
        format!("{}-{lease}.jsonl", run.strategy)
    };
    let written = std::fs::create_dir_all(dir)
        .map_err(|e| e.to_string())
        .and_then(|()| output::write_atomic(dir, &name, &text).map_err(|e| e.to_string()));
    if let Err(e) = written {
        eprintln!("lockbench: history of {}: {e}", run.strategy);
    }
}

/// The progress bar's title of one trial: `TITLE trial 2/3`, or `TITLE extra trial 4` past the
/// planned ones.
fn trial_title(title: Option<&str>, trial: u32, trials: u32) -> Option<String> {
    let trial = if trial >= trials {
        Some(format!("extra trial {}", trial + 1))
    } else {
        (trials > 1).then(|| format!("trial {}/{trials}", trial + 1))
    };
    match (title, trial) {
        (Some(t), Some(n)) => Some(format!("{t} {n}")),
        (t, n) => t.map(str::to_owned).or(n),
    }
}

/// Replaces the scenario's faults with the `--fault` flags (`none` alone: no faults).
fn apply_fault_flags(file: &mut ScenarioFile, flags: &[String]) -> Result<(), String> {
    if flags.is_empty() {
        return Ok(());
    }
    if flags.iter().any(|f| f.trim() == "none") {
        if flags.len() > 1 {
            return Err("--fault none cannot be combined with other --fault flags".into());
        }
        file.faults = Some(Vec::new());
        return Ok(());
    }
    let parsed = flags
        .iter()
        .map(|f| parse_fault_text(f).map_err(|e| format!("--fault {f:?}: {e}")))
        .collect::<Result<Vec<_>, _>>()?;
    file.faults = Some(parsed);
    Ok(())
}

/// The run's servers plus those the cases started for themselves (one entry per kind).
fn with_case_servers(
    mut servers: Vec<lockbench_reports::model::ServerInfo>,
    runs: &[crate::driver::case::CaseRun],
) -> Vec<lockbench_reports::model::ServerInfo> {
    for info in runs.iter().filter_map(|r| r.own_servers.as_ref()) {
        if !servers
            .iter()
            .any(|s| s.kind == info.kind && s.address == info.address)
        {
            servers.push(info.clone());
        }
    }
    servers
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(flavor = "current_thread")]
    async fn a_case_the_plan_skips_is_recorded_in_the_plans_words() {
        // ZooKeeper takes no fixed lease: lease-too-short plans that case skipped, and the run records
        // the plan's decision as it is, nothing started.
        let request = RunRequest {
            scenario: "lease-too-short".into(),
            strategies: Some(StrategyChoice::parse("zookeeper").expect("a valid list")),
            ..RunRequest::default()
        };
        let plan = resolve(&request).expect("resolves");
        let case = plan
            .cases
            .iter()
            .find(|c| c.fate.is_err())
            .expect("a case the plan skips");
        let planned = case.fate.clone().expect_err("skipped");
        let backends = Backends::default();
        let ctx = CaseContext {
            workload: &plan.workload,
            backends: &backends,
            endpoints: backends.endpoints(),
            interrupt: StopSignal::new(),
            clock: MonoClock::new(),
            run_id: "plan".into(),
            worker_exe: PathBuf::new(),
            progress: Progress::new(false),
            remote: None,
        };
        let run = run_case(&ctx, case.strategy, case.lease, &case.fate, 0).await;
        let recorded = results::case_result(&run);
        assert_eq!(planned.why, "zookeeper does not support fixed leases");
        assert_eq!(
            (recorded.status, recorded.error),
            (planned.status, Some(planned.why))
        );
    }
}
