//! The driver's many-locks mode (what `lockbench scale` and the suite's many-locks entry run): one
//! client of a strategy fills each step with fresh keys, lets renewal settle, holds still for a measured
//! window while reading the server's counters and the client's process, and finally releases
//! everything. The client runs in a worker process (`lockbench worker`, the one every case's worker
//! process is, told by its first line to hold many locks instead of running a case), so its resident
//! set, threads and CPU are its own, or in this process.
//!
//! | module | job |
//! |---|---|
//! | [`hold`] | one strategy's client: fill each step, hold, read the counters, release |
//! | [`raw`] | the raw sender of batched renewal's calls, the yardstick beside `redis-watchdog-batched` |
//! | [`renewal_counts`], [`probes`] | what a step reads: the client's renewal events; the server's and the client's process figures |
//! | [`spec`], [`job`] | a checked many-locks request; what a worker process holding many locks is told |
//! | [`in_worker`] | the driver's side of one series in a worker process, and the worker's side |

pub(crate) mod hold;
pub(crate) mod in_worker;
pub(crate) mod job;
pub(crate) mod probes;
pub(crate) mod raw;
pub(crate) mod renewal_counts;
pub(crate) mod spec;

use std::collections::BTreeMap;

use lockbench_reports::scale::ScaleSeries;

pub use spec::{Isolation, ScaleSpec, Subject};

use crate::backends::{Backend, Backends, ServerKind};
use crate::base::stop::StopSignal;
use crate::kinds::ServerKindExt;
use crate::strategies::Strategy;

/// Holds `spec.steps` locks with one client of each strategy in turn, one pass; one series per
/// strategy, and the raw sender's beside `redis-watchdog-batched`.
pub async fn measure(spec: &ScaleSpec, backends: &Backends) -> Vec<ScaleSeries> {
    let mut all = Vec::new();
    let never = StopSignal::new();
    for strategy in &spec.strategies {
        for (strategy, subject) in spec.subjects_of(strategy) {
            all.push(measure_one(strategy, subject, spec, backends, &never).await);
        }
    }
    all
}

/// One series of `subject` of `strategy`, where `spec.isolation` says, its server readied before
/// and cleaned after.
pub(crate) async fn measure_one(
    strategy: &'static Strategy,
    subject: Subject,
    spec: &ScaleSpec,
    backends: &Backends,
    interrupt: &StopSignal,
) -> ScaleSeries {
    let server = backends.get(strategy.server);
    if let Some(server) = server {
        prepare_server(server, spec).await;
    }
    let series = match &spec.isolation {
        // This process started the servers it did not get from the user: it knows their processes.
        Isolation::InProcess => {
            in_this_process(
                strategy,
                subject,
                spec,
                backends,
                &BTreeMap::new(),
                interrupt,
            )
            .await
        }
        Isolation::ChildProcess(exe) => {
            in_worker::measure(exe, strategy, subject, spec, backends, interrupt).await
        }
    };
    if let Some(server) = server {
        clean_server(server).await;
    }
    series
}

/// One series of `subject` of `strategy` with its client in this process; `server_pids` gives the
/// process of a server this process did not start (a worker's servers are its driver's).
pub(crate) async fn in_this_process(
    strategy: &'static Strategy,
    subject: Subject,
    spec: &ScaleSpec,
    backends: &Backends,
    server_pids: &BTreeMap<ServerKind, u32>,
    interrupt: &StopSignal,
) -> ScaleSeries {
    let probe = backends
        .get(strategy.server)
        .map(|s| probes::ServerProbe::of(s, server_pids));
    match subject {
        Subject::Strategy => {
            hold::measure_strategy(strategy, spec, backends, probe, interrupt).await
        }
        Subject::RawSender => raw::measure(strategy, spec, backends, probe, interrupt).await,
    }
}

/// Readies a server lockbench started (never one the user gave) for a strategy's run, as its kind
/// says ([`HeldProbe::prepare`](crate::kinds::held::HeldProbe)).
async fn prepare_server(server: &Backend, spec: &ScaleSpec) {
    let prepare = server.kind().server().and_then(|e| e.held.prepare);
    if let (Some(prepare), Some(addr), Some(_)) = (prepare, server.socket(), server.pid()) {
        let max_threads = spec.max_threads;
        let _ = tokio::task::spawn_blocking(move || prepare(addr, max_threads)).await;
    }
}

/// Clears what a strategy's run left on a server lockbench started, as its kind says
/// ([`HeldProbe::clean`](crate::kinds::held::HeldProbe)).
async fn clean_server(server: &Backend) {
    let clean = server.kind().server().and_then(|e| e.held.clean);
    if let (Some(clean), Some(addr), Some(_)) = (clean, server.socket(), server.pid()) {
        let _ = tokio::task::spawn_blocking(move || clean(addr)).await;
    }
}
