//! `lockbench run`: resolve the workload and strategies, check every input before measuring (output
//! directory, server addresses, worker mode), start the servers, run the cases, write the results
//! atomically — also when Ctrl-C cut the run short (marked incomplete) — and stop the servers.

use std::path::PathBuf;

use lockbench_reports::model::{CaseStatus, Results, SCHEMA_VERSION, Scenario};

use crate::backends::{Backends, GivenAddresses, ServerKind};
use crate::cli::RunArgs;
use crate::clock::MonoClock;
use crate::driver::case::{CaseContext, run_case};
use crate::driver::processes::kill_all_workers;
use crate::driver::stop::StopSignal;
use crate::error::BenchError;
use crate::progress::Progress;
use crate::workload::{WorkerMode, Workload};
use crate::{environment, output, results, scenarios, strategies};

/// Environment variable naming the `lockbench` executable worker processes run (default: the current
/// executable; tests that call [`run`] in-process set it to the built binary).
pub const WORKER_EXE_ENV: &str = "LOCKBENCH_WORKER_EXE";

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

fn now_rfc3339() -> String {
    humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string()
}

/// Runs `lockbench run` with `args`. Bad input is a [`BenchError::Usage`] found before anything runs.
pub async fn run(args: RunArgs) -> Result<RunOutcome, BenchError> {
    let started_at = now_rfc3339();
    let loaded = scenarios::load(&args.scenario).map_err(BenchError::usage)?;
    let mut file = loaded.file;
    file.overlay(args.overrides());
    let workload =
        Workload::resolve(&loaded.name, &loaded.source, file).map_err(BenchError::usage)?;
    let chosen = strategies::resolve(&workload.strategies).map_err(BenchError::usage)?;
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
    let out_dir = args.out.clone().unwrap_or_else(|| {
        let stamp: String = started_at
            .chars()
            .filter(|c| c.is_ascii_alphanumeric())
            .collect();
        PathBuf::from("results").join(format!("{}-{stamp}", workload.name))
    });
    let out_dir = output::prepare_dir(&out_dir)?;
    let given = GivenAddresses {
        redis: args.redis.clone(),
        etcd: args.etcd.clone(),
        zookeeper: args.zk.clone(),
    };

    let interrupt = StopSignal::new();
    let handler = tokio::spawn(handle_ctrl_c(interrupt.clone()));
    let backends = Backends::prepare(&strategies::servers_needed(&chosen), &given).await;
    let backends = match backends {
        Ok(b) => b,
        Err(e) => {
            handler.abort();
            return Err(e);
        }
    };
    let use_bar = !args.no_progress && std::io::IsTerminal::is_terminal(&std::io::stdout());
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
        environment: environment::collect(backends.infos()),
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
