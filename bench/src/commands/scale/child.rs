//! One strategy's scale run in a child process: `lockbench scale --worker --in-process` with the same
//! settings, the parent's servers given as addresses and their process ids (for server CPU), writing
//! `scale.json` into a temporary directory that the parent reads back. The child's client RSS, threads
//! and CPU are then the strategy's alone. A child that fails or overruns its time bound gives a series
//! that says so. The raw sender beside a batched strategy runs the same way (`--raw-sender`).
//!
//! Each child leads its own process group, so a terminal's Ctrl-C reaches only the parent, which
//! passes one SIGTERM on when it is stopped: the child stops, releases its locks and writes the series
//! so far (exit 130). A second signal to the parent kills the children with the servers.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use lockbench_reports::scale::{ScaleResults, ScaleSeries, ScaleStop};

use super::hold::locks_per_renew_call;
use super::{INTERRUPTED, SCALE_FILE, ScaleSpec, Subject, raw};
use crate::backends::Backends;
use crate::base::duration::format_duration;
use crate::base::stop::StopSignal;
use crate::driver::worker_link::LiveWorker;
use crate::kinds::ServerKindExt;
use crate::strategies::Strategy;

/// How long a child told to stop may take to release its locks and write its file.
const STOP_GRACE: Duration = Duration::from_secs(30);

/// Runs `strategy` (or its raw sender) in a child process of `exe`; once `interrupt` is set, tells the
/// child to stop and keeps what it measured.
pub(crate) async fn measure_strategy(
    exe: &Path,
    strategy: &'static Strategy,
    subject: Subject,
    spec: &ScaleSpec,
    backends: &Backends,
    interrupt: &StopSignal,
) -> ScaleSeries {
    let name = match subject {
        Subject::Strategy => strategy.id,
        Subject::RawSender => raw::RAW_SENDER,
    };
    let failed = |reason: String| ScaleSeries {
        strategy: name.to_owned(),
        server: strategy.server.name().to_owned(),
        locks_per_renew_call: locks_per_renew_call(strategy),
        beside: super::rows_beside(strategy),
        stopped: Some(ScaleStop {
            held: 0,
            step: spec.steps[0],
            reason,
        }),
        ..ScaleSeries::default()
    };
    let dir = match tempfile::Builder::new()
        .prefix("lockbench-scale-")
        .tempdir()
    {
        Ok(dir) => dir,
        Err(e) => return failed(format!("no temp dir for the worker process: {e}")),
    };
    let mut command = tokio::process::Command::new(exe);
    command.args(worker_args(strategy, spec, backends));
    if subject == Subject::RawSender {
        command.arg("--raw-sender");
    }
    command
        .arg("--out")
        .arg(dir.path())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .process_group(0);
    let child = match command.spawn() {
        Ok(child) => child,
        Err(e) => return failed(format!("could not start the worker process: {e}")),
    };
    let pid = child.id();
    let _live = pid.map(LiveWorker::track);
    let bound = time_bound(spec);
    let finished = child.wait_with_output();
    tokio::pin!(finished);
    let waited = tokio::select! {
        waited = tokio::time::timeout(bound, &mut finished) => waited,
        () = interrupt.wait() => {
            if let Some(pid) = pid.and_then(|p| i32::try_from(p).ok()) {
                // SAFETY: kill(2) has no memory-safety preconditions; the child is still ours to reap.
                unsafe { libc::kill(pid, libc::SIGTERM) };
            }
            tokio::time::timeout(spec.step_budget + STOP_GRACE, &mut finished).await
        }
    };
    let output = match waited {
        Ok(Ok(output)) => output,
        Ok(Err(e)) => return failed(format!("worker process: {e}")),
        Err(_) => {
            return failed(format!(
                "worker process did not finish within {}",
                format_duration(bound)
            ));
        }
    };
    let text = std::fs::read_to_string(dir.path().join(SCALE_FILE)).unwrap_or_default();
    match ScaleResults::from_json(&text)
        .ok()
        .and_then(|r| r.strategies.into_iter().next())
    {
        Some(series) if output.status.success() || interrupt.is_set() => series,
        _ if interrupt.is_set() => failed(INTERRUPTED.to_owned()),
        _ => {
            let stderr = String::from_utf8_lossy(&output.stderr);
            let last = stderr.lines().rev().find(|l| !l.trim().is_empty());
            failed(format!(
                "worker process ended with {}: {}",
                output.status,
                last.unwrap_or("no message")
            ))
        }
    }
}

/// The child's command line: the same settings, one strategy, the parent's servers and their pids.
pub(crate) fn worker_args(
    strategy: &Strategy,
    spec: &ScaleSpec,
    backends: &Backends,
) -> Vec<String> {
    let steps: Vec<String> = spec.steps.iter().map(u64::to_string).collect();
    let mut args = vec![
        "scale".to_owned(),
        "--worker".to_owned(),
        "--strategies".to_owned(),
        strategy.id.to_owned(),
        "--steps".to_owned(),
        steps.join(","),
        "--hold".to_owned(),
        format_duration(spec.hold),
        "--watchdog-timeout".to_owned(),
        format_duration(spec.watchdog_timeout),
        "--concurrency".to_owned(),
        spec.concurrency.to_string(),
        "--step-budget".to_owned(),
        format_duration(spec.step_budget),
        "--max-threads".to_owned(),
        spec.max_threads.to_string(),
        "--max-rss-mib".to_owned(),
        (spec.max_rss_bytes >> 20).max(1).to_string(),
        "--warmup".to_owned(),
        format_duration(spec.warm_up),
    ];
    args.extend(crate::strategies::added_adapter_args());
    for server in backends.all() {
        if let Some(entry) = server.kind().server() {
            args.extend([format!("--{}", entry.flag), server.address().to_owned()]);
        }
    }
    let pids: Vec<String> = backends
        .all()
        .into_iter()
        .filter_map(|server| Some(format!("{}={}", server.kind().name(), server.pid()?)))
        .collect();
    if !pids.is_empty() {
        args.extend(["--server-pids".to_owned(), pids.join(",")]);
    }
    args
}

/// How long a child may take: per step its fill budget, the settling time and the window, plus the
/// releases, connecting and start-up.
pub(crate) fn time_bound(spec: &ScaleSpec) -> Duration {
    let settle = spec.renew_period().max(Duration::from_millis(500));
    let per_step = spec.step_budget + settle + spec.hold + Duration::from_secs(5);
    let steps = u32::try_from(spec.steps.len()).unwrap_or(u32::MAX);
    per_step.saturating_mul(steps) + spec.step_budget + spec.warm_up + Duration::from_secs(60)
}
