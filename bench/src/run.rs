//! `lockbench run`: resolve the workload and strategies, check every input before measuring (output
//! directory, server addresses, worker mode), start the servers, run the cases, write the results
//! atomically — also when Ctrl-C cut the run short (marked incomplete) — and stop the servers.

use std::path::PathBuf;

use lockbench_reports::model::{CaseStatus, Results, SCHEMA_VERSION, Scenario};

use crate::backends::{Backends, GivenAddresses, ServerKind};
use crate::clock::{MonoClock, now_rfc3339};
use crate::driver::case::run_case;
use crate::driver::mode::CaseContext;
use crate::driver::processes::kill_all_workers;
use crate::error::{BenchError, EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK};
use crate::faults::applicability;
use crate::progress::Progress;
use crate::stop::StopSignal;
use crate::strategies::{Strategy, StrategySettings};
use crate::workload::faults::{own_topology, parse_fault_text};
use crate::workload::{ScenarioFile, WorkerMode, Workload};
use crate::{environment, output, results, scenarios, strategies, table};

/// Environment variable naming the `lockbench` executable worker processes run (default: the current
/// executable; tests that call [`run`] in-process set it to the built binary).
pub(crate) const WORKER_EXE_ENV: &str = "LOCKBENCH_WORKER_EXE";

/// What `lockbench run` is asked to do: a scenario (preset name or TOML file) with overrides.
#[derive(Debug, Clone, Default)]
pub struct RunRequest {
    /// Preset name or path of a scenario TOML file.
    pub scenario: String,
    /// Values that override the scenario file's.
    pub overrides: ScenarioFile,
    /// `--fault` texts that replace the scenario's faults (`none` alone: no faults); checked here.
    pub faults: Vec<String>,
    /// Output directory (default: `results/SCENARIO-UTCTIME`).
    pub out: Option<PathBuf>,
    /// Servers the user gave instead of starting them.
    pub servers: GivenAddresses,
    /// Show a progress bar (when stdout is a terminal).
    pub progress: bool,
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
    print!("{}", table::render(&outcome.results));
    println!("results: {}", outcome.path.display());
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
    let args = request;
    let started_at = now_rfc3339();
    let loaded = scenarios::load(&args.scenario).map_err(BenchError::usage)?;
    let mut file = loaded.file;
    file.overlay(args.overrides.clone());
    apply_fault_flags(&mut file, &args.faults).map_err(BenchError::usage)?;
    let workload =
        Workload::resolve(&loaded.name, &loaded.source, file).map_err(BenchError::usage)?;
    let chosen = strategies::resolve(&workload.strategies).map_err(BenchError::usage)?;
    let chosen = keep_fault_targets(&workload, chosen).map_err(BenchError::usage)?;
    if workload.workers == WorkerMode::Processes
        && let Some(s) = chosen.iter().find(|s| s.server == ServerKind::InProcess)
    {
        return Err(BenchError::usage(format!(
            "strategy {} cannot run with workers = processes: its server lives in one process, so each worker would have its own (use workers = tasks)",
            s.id
        )));
    }
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
    let out_dir = output::prepare_dir(&out_dir)?;
    let given = args.servers.clone();
    let mut needed = strategies::servers_needed(&chosen);
    for spec in &workload.faults {
        let Some(topology) = own_topology(spec) else {
            continue;
        };
        for kind in topology.replaces() {
            let flag = match kind {
                ServerKind::Redis => given.redis.as_ref().map(|_| "--redis"),
                ServerKind::RedisNodes => given.redis_nodes.as_ref().map(|_| "--redis-nodes"),
                ServerKind::Etcd => given.etcd.as_ref().map(|_| "--etcd"),
                _ => given.zookeeper.as_ref().map(|_| "--zk"),
            };
            if let Some(flag) = flag {
                return Err(BenchError::usage(format!(
                    "{flag}: {} starts its own servers for every case (it kills one); leave {flag} out",
                    spec.kind
                )));
            }
            needed.remove(kind);
        }
    }

    let interrupt = StopSignal::new();
    let handler = tokio::spawn(handle_ctrl_c(interrupt.clone()));
    let backends = Backends::prepare(&needed, &given).await;
    let backends = match backends {
        Ok(b) => b,
        Err(e) => {
            handler.abort();
            return Err(e);
        }
    };
    let use_bar = args.progress && std::io::IsTerminal::is_terminal(&std::io::stdout());
    let ctx = CaseContext {
        workload: &workload,
        backends: &backends,
        endpoints: backends.endpoints(),
        interrupt: interrupt.clone(),
        clock: MonoClock::new(),
        run_id: format!("{:08x}", rand::random::<u32>()),
        worker_exe,
        progress: Progress::new(use_bar),
    };
    let mut runs = Vec::new();
    let cases = chosen
        .iter()
        .flat_map(|s| workload.leases.iter().map(move |l| (*s, *l)));
    for (index, (strategy, lease)) in cases.enumerate() {
        if interrupt.is_set() {
            break;
        }
        runs.push(run_case(&ctx, strategy, lease, index).await);
    }
    let interrupted = interrupt.is_set();
    let planned = chosen.len() * workload.leases.len();
    let complete = !interrupted
        && runs.len() == planned
        && runs
            .iter()
            .all(|r| matches!(r.status, CaseStatus::Complete | CaseStatus::Skipped));
    let ids: Vec<&str> = chosen.iter().map(|s| s.id).collect();
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
        },
        environment: environment::collect(with_case_servers(backends.infos(), &runs)),
        cases: runs.iter().map(results::case_result).collect(),
    };
    let written = output::write_atomic(&out_dir, output::RESULTS_FILE, &results.to_json());
    drop(backends);
    handler.abort();
    Ok(RunOutcome {
        results,
        path: written?,
        interrupted,
    })
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

/// With faults, `all` means every strategy the faults apply to: the others are dropped (a strategy
/// named explicitly stays, and its case is skipped with the reason). Errors when none is left.
fn keep_fault_targets(
    workload: &Workload,
    chosen: Vec<&'static Strategy>,
) -> Result<Vec<&'static Strategy>, String> {
    if workload.faults.is_empty() {
        return Ok(chosen);
    }
    let named: Vec<&str> = workload
        .strategies
        .iter()
        .flat_map(|s| s.split(','))
        .map(str::trim)
        .collect();
    let settings = StrategySettings::new(workload.watchdog_timeout);
    let applies = |s: &Strategy| {
        (s.capabilities)(&settings).is_ok_and(|caps| {
            workload
                .faults
                .iter()
                .all(|f| applicability::applies(f.kind, s, &caps).is_ok())
        })
    };
    let kept: Vec<&'static Strategy> = chosen
        .into_iter()
        .filter(|s| named.contains(&s.id) || applies(s))
        .collect();
    if kept.is_empty() {
        let kinds: Vec<String> = workload.faults.iter().map(|f| f.kind.to_string()).collect();
        return Err(format!(
            "strategies: none of the selected strategies can take the faults ({})",
            kinds.join(", ")
        ));
    }
    Ok(kept)
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

/// First Ctrl-C: stop the run and write what was measured. Second: kill servers and workers, exit 130.
async fn handle_ctrl_c(interrupt: StopSignal) {
    if tokio::signal::ctrl_c().await.is_err() {
        return;
    }
    interrupt.set();
    eprintln!(
        "lockbench: interrupted; stopping and writing what was measured (Ctrl-C again to quit now)"
    );
    if tokio::signal::ctrl_c().await.is_ok() {
        lockbench_servers::kill_all_servers();
        kill_all_workers();
        std::process::exit(crate::error::EXIT_INTERRUPTED);
    }
}
