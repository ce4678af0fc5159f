//! Tasks mode: every client is a tokio task in the lockbench process, with its own `Locker` built
//! through the registry (memory clients share the case's one `MemoryServer`) and direct access to the
//! protected resource.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use lockbench_reports::model::{ClientCost, FaultWindow};
use lockers::peer::PeerProcesses;
use lockers::{Events, Locker};
use tokio::task::{JoinHandle, JoinSet};

use super::cost::{self, CostScope};
use super::mode::{
    CaseContext, CaseError, ModeOutput, STOP_GRACE, Timing, adapter_processes, capabilities_model,
    measured_ns, supervise,
};
use super::oracle::{Oracle, OracleFindings};
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
    let clients = Clients::connect(ctx, strategy, plan, faults).await?;
    let live = clients
        .each
        .first()
        .map(|(l, _)| l.capabilities())
        .ok_or_else(|| CaseError::Fail("no clients".into()))?;
    let protocol_round_trip = clients
        .each
        .iter()
        .filter_map(|(l, _)| l.peer().map(|p| p.protocol_round_trip()))
        .min();
    let library = clients
        .each
        .first()
        .and_then(|(l, _)| l.peer().map(|p| p.loaded_library()));
    let adapter_processes = adapter_processes(&clients.adapter_pids(), workload.clients);

    let stop = StopSignal::new();
    let resource = Arc::new(Resource::new(
        workload.keys,
        ctx.clock,
        workload.cycles,
        stop.clone(),
    ));
    let timing = Timing::starting_now(&ctx.clock, workload);
    resource.measure_from(timing.measure_from);
    clients
        .measure_from
        .store(timing.measure_from, Ordering::Release);
    let shared = Shared {
        ready,
        fencing: live.fencing,
        lost_signal: live.lost_signal,
        resource: resource.clone(),
        stop: stop.clone(),
        timing,
    };
    let running = Running::start(ctx, &clients, shared, faults);

    let bar = ctx
        .progress
        .case(label, workload.duration.map(|d| d + workload.warmup));
    let (interrupted, stopped_at) = supervise(ctx, timing, &stop, &resource, &bar).await;
    let ended = running.end(clients).await?;
    Ok(ModeOutput {
        protocol_round_trip,
        library,
        adapter_processes,
        capabilities: capabilities_model(&live),
        tally: ended.tally,
        findings: ended.findings,
        resource: resource.totals(),
        measured_ns: measured_ns(timing, stopped_at),
        interrupted,
        client_cost: ended.client_cost,
        problem: ended.problem,
        faults: ended.faults,
    })
}

/// The case's clients, connected.
#[derive(Debug)]
struct Clients {
    /// Each client's strategy instance, with the recorder of its renewal events.
    each: Vec<(Arc<dyn Locker>, Arc<RenewalRecorder>)>,
    /// When the recorders start counting: the start of the measured window, once it is known.
    measure_from: Arc<AtomicU64>,
}

impl Clients {
    /// Connects the case's clients through the registry. One in-process server (memory) and one
    /// process per peer adapter serve many clients of the case (or one process each, if the workload
    /// says so); each client has its own addresses (a fault may put a proxy in front of the server
    /// per client).
    async fn connect(
        ctx: &CaseContext<'_>,
        strategy: &'static Strategy,
        plan: &CasePlan,
        faults: &CaseFaults,
    ) -> Result<Clients, CaseError> {
        let workload = ctx.workload;
        let settings = plan.settings();
        let shared = Endpoints::new(ctx.endpoints.clone());
        let measure_from = Arc::new(AtomicU64::new(u64::MAX));
        let mut each = Vec::new();
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
            each.push((locker, recorder));
        }
        Ok(Clients { each, measure_from })
    }

    /// The pids of the peer adapter processes the clients reported, one per client that did.
    fn adapter_pids(&self) -> Vec<u32> {
        self.each
            .iter()
            .filter_map(|(l, _)| l.peer().and_then(|p| p.adapter_process()))
            .collect()
    }

    /// Closes every client, adding its renewals and the requests it sent to `tally`.
    async fn close(self, tally: &mut WorkerTally) {
        for (locker, recorder) in &self.each {
            locker.close().await;
            tally.renewal.merge(&recorder.tally());
            // Each client's own count of what it sent, connecting and closing included.
            tally.redis_commands += locker.requests_sent().unwrap_or(0);
        }
    }
}

/// What every worker of the case shares besides its own client.
#[derive(Debug)]
struct Shared {
    /// The case's plan.
    ready: Arc<ReadyPlan>,
    /// Whether the strategy has fencing tokens ([`Worker::fencing`]).
    fencing: bool,
    /// Whether the strategy signals a lost lease ([`Worker::lost_signal`]).
    lost_signal: bool,
    /// The protected resource.
    resource: Arc<Resource>,
    /// Ends the case.
    stop: StopSignal,
    /// The case's start and measured window.
    timing: Timing,
}

/// A case under way: its workers and the tasks that watch them (oracle, cost sampler, faults).
#[derive(Debug)]
struct Running {
    /// One task per client.
    workers: JoinSet<WorkerTally>,
    /// Set once the workers are done, so the oracle collects what is left and ends.
    workers_done: StopSignal,
    /// The overlap oracle.
    oracle: JoinHandle<OracleFindings>,
    /// The client cost sampler.
    cost: JoinHandle<ClientCost>,
    /// The faults' schedule, if the case has faults.
    schedule: Option<JoinHandle<Vec<FaultWindow>>>,
}

/// What a case's tasks gave once it ended.
#[derive(Debug)]
struct Ended {
    /// Every worker's figures, merged (renewal included).
    tally: WorkerTally,
    /// A worker that failed or did not stop.
    problem: Option<String>,
    /// The overlap oracle's findings.
    findings: OracleFindings,
    /// What the clients cost.
    client_cost: ClientCost,
    /// The fault windows.
    faults: Vec<FaultWindow>,
}

impl Running {
    /// Starts the oracle, the cost sampler, one worker per client of `clients`, then the faults.
    fn start(
        ctx: &CaseContext<'_>,
        clients: &Clients,
        shared: Shared,
        faults: &CaseFaults,
    ) -> Running {
        let workload = ctx.workload;
        let timing = shared.timing;
        let batches = BatchQueue::new();
        let workers_done = StopSignal::new();
        let oracle = Oracle::new(
            workload.keys,
            workload.clients,
            timing.go,
            timing.measure_from,
        );
        let oracle = tokio::spawn(oracle.collect(batches.clone(), workers_done.clone()));
        // A peer's library runs in an adapter process (one shared by the clients of a row, or one
        // each): its CPU is the client's cost as much as the driver's own.
        let mut adapters = clients.adapter_pids();
        adapters.sort_unstable();
        adapters.dedup();
        let cost = tokio::spawn(cost::sample(
            CostScope::DriverProcess(adapters),
            ctx.clock,
            timing.measure_from,
            shared.stop.clone(),
        ));
        let hold_sink = faults.hold_sink();
        let mut workers = JoinSet::new();
        for (client, (locker, _)) in clients.each.iter().enumerate() {
            let worker = Worker {
                client: client as u32,
                locker: locker.clone(),
                fencing: shared.fencing,
                lost_signal: shared.lost_signal,
                plan: shared.ready.clone(),
                resource: ResourceClient::Local(shared.resource.clone()),
                intervals: batches.clone(),
                stop: shared.stop.clone(),
                clock: ctx.clock,
                go: timing.go,
                measure_from: timing.measure_from,
                holds: hold_sink.clone(),
            };
            workers.spawn(worker.run());
        }
        drop(hold_sink);
        let schedule = faults.start(ctx.clock, timing.go, shared.stop.clone(), None);
        Running {
            workers,
            workers_done,
            oracle,
            cost,
            schedule,
        }
    }

    /// Once the case is stopped: joins the workers (giving them [`STOP_GRACE`]), closes the clients,
    /// and collects what the oracle, the cost sampler and the faults found.
    async fn end(mut self, clients: Clients) -> Result<Ended, CaseError> {
        let mut tally = WorkerTally::default();
        let problem = join(&mut self.workers, &mut tally).await;
        self.workers_done.set();
        clients.close(&mut tally).await;
        let findings = self
            .oracle
            .await
            .map_err(|e| CaseError::Fail(format!("oracle failed: {e}")))?;
        let client_cost = self
            .cost
            .await
            .map_err(|e| CaseError::Fail(format!("cost sampler failed: {e}")))?;
        let faults = faults::windows(self.schedule).await;
        Ok(Ended {
            tally,
            problem,
            findings,
            client_cost,
            faults,
        })
    }
}

/// Waits up to [`STOP_GRACE`] for the workers to end, merging each one's figures into `tally`, and
/// aborts those still running then; the problem, if a worker failed or did not stop.
async fn join(workers: &mut JoinSet<WorkerTally>, tally: &mut WorkerTally) -> Option<String> {
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
    problem
}
