//! What the two worker modes ([`super::tasks`], [`super::processes`]) share with the case that runs
//! them ([`super::case`]): the run's context, the timing of a case (go, warm-up, measured window), what
//! a mode hands back, and the supervisor that ends the case on time, on the cycle count or on Ctrl-C
//! while updating the progress bar.

use std::path::PathBuf;
use std::time::Duration;

use lockbench_reports::model::{self, AdapterProcesses, ClientCost, FaultWindow};

use super::oracle::OracleFindings;
use super::resource::{Resource, ResourceTotals};
use super::tally::WorkerTally;
use crate::backends::{Backends, EndpointAddrs};
use crate::base::clock::{MonoClock, duration_ns};
use crate::base::progress::{CaseProgress, Progress};
use crate::base::stop::StopSignal;
use crate::workload::Workload;

/// How long workers get to finish after the stop signal (an in-flight release, a server round trip).
pub(crate) const STOP_GRACE: Duration = Duration::from_secs(30);

/// Environment variable naming a file the supervisor creates when a case starts measuring, so that a
/// test can act in the measured window without guessing how long start-up takes; unset, nothing is
/// written.
pub(crate) const MEASURING_FILE_ENV: &str = "LOCKBENCH_MEASURING_FILE";

/// What every case of a run shares.
#[derive(Debug, Clone)]
pub(crate) struct CaseContext<'a> {
    /// The workload.
    pub workload: &'a Workload,
    /// The servers.
    pub backends: &'a Backends,
    /// Their addresses.
    pub endpoints: EndpointAddrs,
    /// Set on Ctrl-C.
    pub interrupt: StopSignal,
    /// The shared clock.
    pub clock: MonoClock,
    /// Unique per run; part of every key name.
    pub run_id: String,
    /// The `lockbench` executable worker processes run.
    pub worker_exe: PathBuf,
    /// Progress bars.
    pub progress: Progress,
    /// Remote workers waiting for cases (`--workers remote`).
    pub remote: Option<std::sync::Arc<super::remote::WorkerPool>>,
}

/// Why a case did not produce figures.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum CaseError {
    /// Set-up or the run failed.
    Fail(String),
}

/// What a worker mode hands back.
#[derive(Debug)]
pub(crate) struct ModeOutput {
    /// What the live client declared.
    pub capabilities: model::Capabilities,
    /// Every worker's figures, merged (renewal included).
    pub tally: WorkerTally,
    /// The overlap oracle's findings.
    pub findings: OracleFindings,
    /// The protected resource's totals.
    pub resource: ResourceTotals,
    /// Length of the measured window, ns.
    pub measured_ns: u64,
    /// Stopped by Ctrl-C.
    pub interrupted: bool,
    /// What the clients cost.
    pub client_cost: ClientCost,
    /// Something went wrong after the start (a worker died, did not stop); figures are partial.
    pub problem: Option<String>,
    /// The faults injected, as they happened.
    pub faults: Vec<FaultWindow>,
    /// A peer adapter's protocol round trip ([`lockers::Locker::protocol_round_trip`]), the smallest
    /// any client measured.
    pub protocol_round_trip: Option<Duration>,
    /// A peer's library and the version its clients loaded ([`lockers::Locker::loaded_library`]).
    pub library: Option<(String, String)>,
    /// A peer's clients and the adapter processes they ran in ([`lockers::Locker::adapter_process`]).
    pub adapter_processes: Option<AdapterProcesses>,
}

/// When a case starts, measures and stops (monotonic ns).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Timing {
    /// Start.
    pub go: u64,
    /// Start of the measured window.
    pub measure_from: u64,
    /// End by time, if bounded by time.
    pub stop_at: Option<u64>,
}

impl Timing {
    /// Timing starting now.
    pub(crate) fn starting_now(clock: &MonoClock, workload: &Workload) -> Self {
        // Durations are bounded at parse time (`MAX_DURATION`); saturating sums keep a window that
        // somehow was not from ever wrapping round to zero.
        let go = clock.now();
        let measure_from = go.saturating_add(duration_ns(workload.warmup));
        Timing {
            go,
            measure_from,
            stop_at: workload
                .duration
                .map(|d| measure_from.saturating_add(duration_ns(d))),
        }
    }
}

/// How `clients` peer clients were mapped to the adapter processes whose pids they reported (`None`
/// when none reported one: not a peer).
pub(crate) fn adapter_processes(pids: &[u32], clients: u32) -> Option<AdapterProcesses> {
    let distinct: std::collections::BTreeSet<u32> = pids.iter().copied().collect();
    (!distinct.is_empty()).then_some(AdapterProcesses {
        clients,
        processes: distinct.len() as u32,
    })
}

/// The model's capabilities.
pub(crate) fn capabilities_model(c: &lockers::Capabilities) -> model::Capabilities {
    model::Capabilities {
        reentrant: c.reentrant,
        fencing: c.fencing,
        auto_renew: c.auto_renew,
        fixed_lease: c.fixed_lease,
        wait_notify: c.wait_notify,
        lost_signal: c.lost_signal,
        min_ttl_ms: c.min_ttl.as_secs_f64() * 1e3,
        ttl_granularity_ms: c.ttl_granularity.as_secs_f64() * 1e3,
    }
}

/// Ends the case: at `stop_at`, when `stop` is set (the cycle count was reached) or on `interrupt`.
/// Updates the progress bar meanwhile. Sets `stop` and returns (interrupted, when it stopped).
pub(crate) async fn supervise(
    ctx: &CaseContext<'_>,
    timing: Timing,
    stop: &StopSignal,
    resource: &Resource,
    bar: &CaseProgress,
) -> (bool, u64) {
    let clock = ctx.clock;
    let deadline = async {
        match timing.stop_at {
            Some(at) => tokio::time::sleep_until(clock.instant(at).into()).await,
            None => std::future::pending().await,
        }
    };
    tokio::pin!(deadline);
    let mut tick = tokio::time::interval(Duration::from_millis(200));
    let mut marked = false;
    let interrupted = loop {
        tokio::select! {
            _ = &mut deadline => break false,
            _ = stop.wait() => break false,
            _ = ctx.interrupt.wait() => break true,
            _ = tick.tick() => {
                let now = clock.now();
                let measuring = now >= timing.measure_from;
                bar.update(
                    Duration::from_nanos(now.saturating_sub(timing.go)),
                    resource.measured_writes(),
                    measuring,
                );
                if measuring && !marked {
                    marked = true;
                    mark_measuring();
                }
            }
        }
    };
    let stopped_at = clock.now();
    stop.set();
    bar.finish();
    (interrupted, stopped_at)
}

/// Creates the file [`MEASURING_FILE_ENV`] names, if it is set.
fn mark_measuring() {
    if let Some(path) = std::env::var_os(MEASURING_FILE_ENV) {
        // Only a test reads it; one that finds no file fails on its own deadline.
        let _ = std::fs::write(path, b"");
    }
}

/// The measured window's length: from `measure_from` to when the case stopped (or its planned end).
pub(crate) fn measured_ns(timing: Timing, stopped_at: u64) -> u64 {
    let end = timing.stop_at.map_or(stopped_at, |at| at.min(stopped_at));
    end.saturating_sub(timing.measure_from)
}
