//! One series in a worker process, both sides. The driver starts `lockbench worker` as it does for a
//! case's client ([`worker_link::worker_command`]: its own process group, tracked so a second Ctrl-C
//! kills it, gone with the driver), and writes a [`HoldManyJob`] as its first line instead of a
//! case: the spec narrowed to one strategy, what to measure, and the servers' addresses and process
//! ids (over the pipe, so no address with a password ever shows on a command line). The worker holds
//! the steps in its own process, so its client's resident set, threads and CPU are the strategy's
//! alone, and answers with the series ([`FromChild::Series`]) or a one-line error.
//!
//! Stopping: the driver sends `stop` once it is interrupted (or the worker reads the end of its
//! input): the worker takes no more locks, releases what it holds and still sends the series so far.
//! A worker that overruns its time bound is killed, and the series says so.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use lockbench_reports::scale::{ScaleSeries, ScaleStop};
use tokio::io::{AsyncBufRead, AsyncBufReadExt, BufReader, Lines};

use super::hold::locks_per_renew_call;
use super::job::HoldManyJob;
use super::raw;
use super::spec::{INTERRUPTED, ScaleSpec, Subject};
use crate::backends::{Backends, GivenAddresses, ServerKind};
use crate::base::duration::format_duration;
use crate::base::stop::StopSignal;
use crate::driver::protocol::{FromChild, ToChild, WorkerJob};
use crate::driver::worker_link::{LiveWorker, exit_words, send, worker_command};
use crate::strategies::{self, Strategy};

/// How long a worker told to stop may take to release its locks and send its series.
const STOP_GRACE: Duration = Duration::from_secs(30);

/// The series that says `subject` of `strategy` measured nothing, and why.
fn failed(strategy: &Strategy, subject: Subject, spec: &ScaleSpec, reason: String) -> ScaleSeries {
    let name = match subject {
        Subject::Strategy => strategy.id,
        Subject::RawSender => raw::RAW_SENDER,
    };
    ScaleSeries {
        strategy: name.to_owned(),
        server: strategy.server.name().to_owned(),
        locks_per_renew_call: locks_per_renew_call(strategy),
        beside: strategies::beside::rows_beside(strategy),
        stopped: Some(ScaleStop {
            held: 0,
            step: spec.steps[0],
            reason,
        }),
        ..ScaleSeries::default()
    }
}

/// The driver's side: runs `subject` of `strategy` in a worker process of `exe`; once `interrupt`
/// is set, tells the worker to stop and keeps what it measured.
pub(crate) async fn measure(
    exe: &Path,
    strategy: &'static Strategy,
    subject: Subject,
    spec: &ScaleSpec,
    backends: &Backends,
    interrupt: &StopSignal,
) -> ScaleSeries {
    let failed = |reason: String| failed(strategy, subject, spec, reason);
    let mut child = match worker_command(exe).stderr(Stdio::piped()).spawn() {
        Ok(child) => child,
        Err(e) => return failed(format!("could not start the worker process: {e}")),
    };
    let _live = child.id().map(LiveWorker::track);
    let (Some(mut input), Some(output), Some(stderr)) =
        (child.stdin.take(), child.stdout.take(), child.stderr.take())
    else {
        return failed("worker process without pipes".into());
    };
    let stderr = tokio::spawn(last_line(BufReader::new(stderr).lines()));
    let job = WorkerJob::HoldMany(Box::new(HoldManyJob::new(
        strategy, subject, spec, backends,
    )));
    let mut output = BufReader::new(output).lines();
    let bound = time_bound(spec);
    // A worker gone before it read its job answers nothing: how it ended is the reason.
    let answer = if send(&mut input, &job).await.is_err() {
        Ok(None)
    } else {
        tokio::select! {
            answer = tokio::time::timeout(bound, answer(&mut output)) => answer,
            () = interrupt.wait() => {
                let _ = send(&mut input, &ToChild::Stop).await;
                tokio::time::timeout(spec.step_budget + STOP_GRACE, answer(&mut output)).await
            }
        }
    };
    drop(input);
    let answer = match answer {
        Ok(answer) => answer,
        Err(_) => {
            let _ = child.start_kill();
            let _ = child.wait().await;
            let bound = format_duration(bound);
            return failed(format!("worker process did not finish within {bound}"));
        }
    };
    // Its input is closed now, so a worker that answered exits; one that does not is killed.
    let ended = match tokio::time::timeout(STOP_GRACE, child.wait()).await {
        Ok(status) => status.map_or_else(|e| e.to_string(), exit_words),
        Err(_) => {
            let _ = child.start_kill();
            let _ = child.wait().await;
            format!("did not exit within {}", format_duration(STOP_GRACE))
        }
    };
    match answer {
        Some(FromChild::Series(series)) => *series,
        Some(FromChild::Error { message }) => failed(format!("worker process: {message}")),
        _ if interrupt.is_set() => failed(INTERRUPTED.to_owned()),
        _ => {
            let last = stderr.await.ok().flatten();
            failed(format!(
                "worker process {ended}: {}",
                last.as_deref().unwrap_or("no message")
            ))
        }
    }
}

/// The worker's answer: its series or its error; `None` when it ended without one.
async fn answer<R: AsyncBufRead + Unpin>(output: &mut Lines<R>) -> Option<FromChild> {
    while let Ok(Some(line)) = output.next_line().await {
        match serde_json::from_str(&line) {
            Ok(message @ (FromChild::Series(_) | FromChild::Error { .. })) => return Some(message),
            Ok(_) => {}
            Err(e) => {
                return Some(FromChild::Error {
                    message: format!("unreadable line from worker: {e}"),
                });
            }
        }
    }
    None
}

/// The last non-empty line of `lines`, read to the end.
async fn last_line<R: AsyncBufRead + Unpin>(mut lines: Lines<R>) -> Option<String> {
    let mut last = None;
    while let Ok(Some(line)) = lines.next_line().await {
        if !line.trim().is_empty() {
            last = Some(line);
        }
    }
    last
}

/// How long a worker may take: per step its fill budget, the settling time and the window, plus the
/// releases, connecting and start-up.
pub(crate) fn time_bound(spec: &ScaleSpec) -> Duration {
    let settle = spec.renew_period().max(Duration::from_millis(500));
    let per_step = spec.step_budget + settle + spec.hold + Duration::from_secs(5);
    let steps = u32::try_from(spec.steps.len()).unwrap_or(u32::MAX);
    per_step.saturating_mul(steps) + spec.step_budget + spec.warm_up + Duration::from_secs(60)
}

/// The worker's side: holds the job's steps in this process, stopping when the driver says `stop`
/// or its input ends; the series, or why there is none.
pub(crate) async fn work<R>(job: HoldManyJob, mut input: Lines<R>) -> FromChild
where
    R: AsyncBufRead + Unpin + Send + 'static,
{
    let Some(&strategy) = job.spec.strategies.first() else {
        return FromChild::Error {
            message: "a hold-many job names no strategy".into(),
        };
    };
    let mut given = GivenAddresses::default();
    let mut pids: BTreeMap<ServerKind, u32> = BTreeMap::new();
    for server in &job.servers {
        let Some(kind) = crate::kinds::kind_named(&server.kind) else {
            return FromChild::Error {
                message: format!("unknown server kind {:?}", server.kind),
            };
        };
        given.set(kind, server.address.clone());
        if let Some(pid) = server.pid {
            pids.insert(kind, pid);
        }
    }
    let needed = strategies::servers_needed(&job.spec.strategies);
    let backends = match Backends::prepare(&needed, &given, strategies::check_address).await {
        Ok(backends) => backends,
        Err(e) => {
            return FromChild::Error {
                message: e.to_string(),
            };
        }
    };
    let interrupt = StopSignal::new();
    let stop = interrupt.clone();
    tokio::spawn(async move {
        // The driver sends nothing but `stop`; the end of the input means it is gone.
        let _ = input.next_line().await;
        stop.set();
    });
    let spec = &job.spec;
    let series =
        super::in_this_process(strategy, job.subject, spec, &backends, &pids, &interrupt).await;
    FromChild::Series(Box::new(series))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::driver::many_locks::spec::Isolation;

    /// A worker process that ends without a series gives one that says how it ended and its last
    /// words (here `sh`, which cannot open a script named `worker`).
    #[tokio::test]
    async fn a_worker_that_ends_without_a_series_says_how() {
        let memory = strategies::find("memory").expect("registered");
        let spec = ScaleSpec {
            strategies: vec![memory],
            steps: vec![10],
            hold: Duration::from_millis(100),
            watchdog_timeout: Duration::from_secs(1),
            concurrency: 1,
            step_budget: Duration::from_secs(1),
            max_threads: 100,
            max_rss_bytes: 1 << 30,
            isolation: Isolation::InProcess,
            yardstick: false,
            warm_up: Duration::ZERO,
            passes: 1,
        };
        let series = measure(
            Path::new("/bin/sh"),
            memory,
            Subject::Strategy,
            &spec,
            &Backends::default(),
            &StopSignal::new(),
        )
        .await;
        let stop = series.stopped.expect("a stop");
        assert_eq!((stop.held, stop.step), (0, 10));
        // How it ended, then its last words on stderr (naming the script it could not open).
        let words = stop
            .reason
            .strip_prefix("worker process exited with code 2: ");
        assert!(
            words.is_some_and(|w| w.contains("worker")),
            "{}",
            stop.reason
        );
        assert!(series.points.is_empty());
    }
}
