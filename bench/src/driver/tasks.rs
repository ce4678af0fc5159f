//! Tasks mode: every client is a tokio task in the lockbench process, with its own `Locker` built
//! through the registry (memory clients share the case's one `MemoryServer`) and direct access to the
//! protected resource.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use lockers::peer::PeerProcesses;
use lockers::{Events, Locker};
use tokio::task::JoinSet;

use super::cost::{self, CostScope};
use super::mode::{
    CaseContext, CaseError, ModeOutput, STOP_GRACE, Timing, adapter_processes, capabilities_model,
    measured_ns, supervise,
};
use super::oracle::Oracle;
use super::renewal::RenewalRecorder;
use super::resource::Resource;
use super::resource_socket::ResourceClient;
use super::tally::WorkerTally;
use super::worker::{CasePlan, ReadyPlan, Worker};
use crate::base::holds::BatchQueue;
use crate::base::stop::StopSignal;
use crate::faults::{self, CaseFaults};
use crate::strategies::{Endpoints, Strategy};

/// Runs a case with tokio-task workers.
pub(crate) async fn run(
    ctx: &CaseContext<'_>,
    strategy: &'static Strategy,
    plan: &CasePlan,
    label: &str,
    faults: &CaseFaults,
) -> Result<ModeOutput, CaseError> {
    let workload = ctx.workload;
    let ready = Arc::new(ReadyPlan::new(plan).map_err(CaseError::Fail)?);
    let settings = plan.settings();
    // One in-process server (memory) and one process per peer adapter that serves many clients for the
    // case, each client with its own addresses (a fault may put a proxy in front of the server per
    // client).
    let shared = Endpoints::new(ctx.endpoints.clone());
    let measure_from = Arc::new(AtomicU64::new(u64::MAX));
    let mut clients: Vec<(Arc<dyn Locker>, Arc<RenewalRecorder>)> = Vec::new();
    for client in 0..workload.clients {
        let recorder = RenewalRecorder::new(ctx.clock, measure_from.clone());
        let endpoints = Endpoints {
            addrs: faults.endpoints(client),
            memory: shared.memory.clone(),
            peers: if workload.peer_process_per_client {
                PeerProcesses::new()
            } else {
                shared.peers.clone()
            },
        };
        let locker = strategy
            .connect(&endpoints, &settings, Events::to(recorder.clone()))
            .await
            .map_err(|e| CaseError::Fail(format!("{} client {client}: {e}", strategy.id)))?;
        clients.push((locker, recorder));
    }
    let live = clients
        .first()
        .map(|(l, _)| l.capabilities())
        .ok_or_else(|| CaseError::Fail("no clients".into()))?;
    let protocol_round_trip = clients
        .iter()
        .filter_map(|(l, _)| l.peer().map(|p| p.protocol_round_trip()))
        .min();
    let library = clients
        .first()
        .and_then(|(l, _)| l.peer().map(|p| p.loaded_library()));
    let pids: Vec<u32> = clients
        .iter()
        .filter_map(|(l, _)| l.peer().and_then(|p| p.adapter_process()))
        .collect();
    let adapter_processes = adapter_processes(&pids, workload.clients);

    let stop = StopSignal::new();
    let resource = Arc::new(Resource::new(
        workload.keys,
        ctx.clock,
        workload.cycles,
        stop.clone(),
    ));
    let timing = Timing::starting_now(&ctx.clock, workload);
    resource.measure_from(timing.measure_from);
    measure_from.store(timing.measure_from, Ordering::Release);

    let batches = BatchQueue::new();
    let workers_done = StopSignal::new();
    let oracle = Oracle::new(
        workload.keys,
        workload.clients,
        timing.go,
        timing.measure_from,
    );
    let oracle_task = tokio::spawn(oracle.collect(batches.clone(), workers_done.clone()));
    // A peer's library runs in an adapter process (one shared by the clients of a row, or one each):
    // its CPU is the client's cost as much as the driver's own.
    let mut adapters: Vec<u32> = clients
        .iter()
        .filter_map(|(locker, _)| locker.peer().and_then(|p| p.adapter_process()))
        .collect();
    adapters.sort_unstable();
    adapters.dedup();
    let cost_task = tokio::spawn(cost::sample(
        CostScope::DriverProcess(adapters),
        ctx.clock,
        timing.measure_from,
        stop.clone(),
    ));
    let hold_sink = faults.hold_sink();
    let mut workers = JoinSet::new();
    for (client, (locker, _)) in clients.iter().enumerate() {
        let worker = Worker {
            client: client as u32,
            locker: locker.clone(),
            fencing: live.fencing,
            lost_signal: live.lost_signal,
            plan: ready.clone(),
            resource: ResourceClient::Local(resource.clone()),
            intervals: batches.clone(),
            stop: stop.clone(),
            clock: ctx.clock,
            go: timing.go,
            measure_from: timing.measure_from,
            holds: hold_sink.clone(),
        };
        workers.spawn(worker.run());
    }
    drop(hold_sink);
    let schedule = faults.start(ctx.clock, timing.go, stop.clone(), None);

    let bar = ctx
        .progress
        .case(label, workload.duration.map(|d| d + workload.warmup));
    let (interrupted, stopped_at) = supervise(ctx, timing, &stop, &resource, &bar).await;

    let mut tally = WorkerTally::default();
    let mut problem = None;
    let joined = tokio::time::timeout(STOP_GRACE, async {
        while let Some(result) = workers.join_next().await {
            match result {
                Ok(worker) => tally.merge(&worker),
                Err(e) => problem = Some(format!("a worker failed: {e}")),
            }
        }
    })
    .await;
    if joined.is_err() {
        workers.abort_all();
        problem = Some(format!("workers did not stop within {STOP_GRACE:?}"));
    }
    workers_done.set();
    for (locker, recorder) in &clients {
        locker.close().await;
        tally.renewal.merge(&recorder.tally());
        // Each client's own count of what it sent, connecting and closing included.
        tally.redis_commands += locker.requests_sent().unwrap_or(0);
    }
    drop(clients);
    let findings = oracle_task
        .await
        .map_err(|e| CaseError::Fail(format!("oracle failed: {e}")))?;
    let client_cost = cost_task
        .await
        .map_err(|e| CaseError::Fail(format!("cost sampler failed: {e}")))?;
    let fault_windows = faults::windows(schedule).await;
    Ok(ModeOutput {
        protocol_round_trip,
        library,
        adapter_processes,
        capabilities: capabilities_model(&live),
        tally,
        findings,
        resource: resource.totals(),
        measured_ns: measured_ns(timing, stopped_at),
        interrupted,
        client_cost,
        problem,
        faults: fault_windows,
    })
}
