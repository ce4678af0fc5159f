//! Processes and remote modes, the driver's side. Processes mode starts one `lockbench worker` child
//! per client (so a fault can pause or kill a single client), each in its own process group (a
//! terminal's Ctrl-C reaches only the driver, which stops the workers itself), talking JSON lines
//! over stdin/stdout (see [`super::protocol`]) and reaching the protected resource over a Unix socket
//! this process serves. With faults, the workers report their holds at once and the fault schedule
//! gets their pids and command channels; a worker a fault killed is expected to be silent, and its
//! last hold (acquire → kill) goes to the oracle. Remote mode takes one connection of a
//! `lockbench worker --connect` process per client from [`super::remote`] instead, serves the
//! resource over TCP with the workers' token, and is otherwise the same.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use lockbench_reports::model;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use super::cost::{self, CostScope};
use super::mode::{
    CaseContext, CaseError, ModeOutput, STOP_GRACE, Timing, adapter_processes, measured_ns,
    supervise,
};
use super::oracle::Oracle;
use super::protocol::{ChildSpec, FromChild, ToChild, WorkerJob};
use super::remote::WorkerPool;
use super::resource::Resource;
use super::resource_socket::{ResourceAddress, ResourceServer};
use super::tally::WorkerTally;
use super::worker::CasePlan;
use super::worker_link::{
    Event, WorkerLink, end_children, fault_channel, read_events, send, send_go, spawn_worker,
};
use crate::base::holds::IntervalBatch;
use crate::base::progress::CaseProgress;
use crate::base::stop::StopSignal;
use crate::faults::workers::{Crash, WorkerControl};
use crate::faults::{self, CaseFaults};
use crate::workload::WorkerMode;

const START_TIMEOUT: Duration = Duration::from_secs(60);

/// The protected resource as a case serves it to its workers: on a Unix socket in a temp dir
/// (processes mode) or on a TCP port with the remote workers' token.
struct ServedResource {
    resource: Arc<Resource>,
    server: ResourceServer,
    socket: PathBuf,
    port: u16,
    token: String,
    _dir: tempfile::TempDir,
}

impl ServedResource {
    fn start(
        ctx: &CaseContext<'_>,
        stop: &StopSignal,
        remote: Option<&WorkerPool>,
    ) -> Result<Self, CaseError> {
        let workload = ctx.workload;
        let dir = tempfile::Builder::new()
            .prefix("lockbench-resource-")
            .tempdir()
            .map_err(|e| CaseError::Fail(format!("temp dir for the resource socket: {e}")))?;
        let socket = dir.path().join("resource.sock");
        let resource = Arc::new(Resource::new(
            workload.keys,
            ctx.clock,
            workload.cycles,
            stop.clone(),
        ));
        let (server, port, token) = match remote {
            None => (
                ResourceServer::start(&socket, resource.clone()).map_err(|e| {
                    CaseError::Fail(format!("resource socket {}: {e}", socket.display()))
                })?,
                0,
                String::new(),
            ),
            Some(pool) => {
                let token: Arc<str> = pool.token().into();
                let (server, address) =
                    ResourceServer::start_tcp(pool.address().ip(), resource.clone(), token)
                        .map_err(|e| CaseError::Fail(format!("resource port: {e}")))?;
                (server, address.port(), pool.token().to_owned())
            }
        };
        Ok(Self {
            resource,
            server,
            socket,
            port,
            token,
            _dir: dir,
        })
    }
}

/// The remote workers' pool in remote mode, none in processes mode.
fn remote_pool<'a>(ctx: &'a CaseContext<'_>) -> Result<Option<&'a WorkerPool>, CaseError> {
    match (ctx.workload.workers, &ctx.remote) {
        (WorkerMode::Remote, Some(pool)) => Ok(Some(pool.as_ref())),
        (WorkerMode::Remote, None) => Err(CaseError::Fail(
            "remote workers: no listener (lockbench run --workers remote)".into(),
        )),
        _ => Ok(None),
    }
}

/// What the steps of one case share.
struct Case<'a> {
    ctx: &'a CaseContext<'a>,
    faults: &'a CaseFaults,
    remote: Option<&'a WorkerPool>,
    stop: StopSignal,
    served: ServedResource,
}

/// What the workers said when they were ready.
struct Started {
    capabilities: model::Capabilities,
    protocol_round_trip: Option<Duration>,
    library: Option<(String, String)>,
    /// Whether the clients are peers, each worker's library in an adapter process.
    peer_adapters: bool,
    adapter_processes: Option<model::AdapterProcesses>,
}

/// What the workers reported while the case ran.
struct Heard {
    oracle: Oracle,
    reports: HashMap<u32, WorkerTally>,
    /// Per client, the low bound of the last interval batch it reported.
    reported_to: HashMap<u32, u64>,
    /// Per client, when its output ended (it exited, or closed it).
    closed_at: HashMap<u32, u64>,
    problems: Vec<String>,
}

/// Runs a case with one worker process per client.
pub(crate) async fn run(
    ctx: &CaseContext<'_>,
    plan: &CasePlan,
    label: &str,
    faults: &CaseFaults,
) -> Result<ModeOutput, CaseError> {
    let workload = ctx.workload;
    let remote = remote_pool(ctx)?;
    let stop = StopSignal::new();
    let served = ServedResource::start(ctx, &stop, remote)?;
    let mut case = Case {
        ctx,
        faults,
        remote,
        stop,
        served,
    };
    let (mut workers, mut events) = case.start_workers(plan).await?;
    let started = await_ready(&mut events, workers.len()).await?;

    let timing = Timing::starting_now(&ctx.clock, workload);
    case.served.resource.measure_from(timing.measure_from);
    let launched = case
        .launch(&mut workers, timing, started.peer_adapters)
        .await?;

    let bar = ctx
        .progress
        .case(label, workload.duration.map(|d| d + workload.warmup));
    let mut heard = Heard::new(ctx, timing);
    let outcome = case
        .listen(
            timing,
            &bar,
            &mut events,
            &launched,
            workers.len(),
            &mut heard,
        )
        .await;
    let (interrupted, stopped_at) = match outcome {
        Some(o) => o,
        None => {
            // Every worker exited before the end: stop the case now. The window it measured is
            // shorter than planned, so the case says so (and is not judged safe).
            case.stop.set();
            bar.finish();
            heard
                .problems
                .push("every worker exited before the end of the case".to_owned());
            (false, ctx.clock.now())
        }
    };
    let crashes = launched.control.crashes();
    case.add_unreported(&crashes, stopped_at, &mut heard);
    drop(launched.commands);
    let fault_windows = faults::windows(launched.schedule).await;
    let exits = end_children(workers).await;
    case.add_dead(&crashes, &exits, stopped_at, &mut heard);
    case.served.server.stop();
    let mut tally = WorkerTally::default();
    for report in heard.reports.values() {
        tally.merge(report);
    }
    if let Some(line) = resource_errors_problem(&heard.reports) {
        heard.problems.push(line);
    }
    let client_cost = match launched.cost_task {
        Some(task) => task
            .await
            .map_err(|e| CaseError::Fail(format!("cost sampler failed: {e}")))?,
        None => remote_cost(heard.reports.values()),
    };
    heard.problems.dedup();
    if case.remote.is_some() {
        eprintln!(
            "{label}: {}",
            stamp_delay_words(&case.served.server.stamp_delays())
        );
    }
    Ok(ModeOutput {
        protocol_round_trip: started.protocol_round_trip,
        library: started.library,
        adapter_processes: started.adapter_processes,
        capabilities: started.capabilities,
        tally,
        findings: heard.oracle.finish(),
        resource: case.served.resource.totals(),
        measured_ns: measured_ns(timing, stopped_at),
        interrupted,
        client_cost,
        problem: (!heard.problems.is_empty()).then(|| heard.problems.join("; ")),
        faults: fault_windows,
    })
}

impl Heard {
    fn new(ctx: &CaseContext<'_>, timing: Timing) -> Self {
        let workload = ctx.workload;
        Heard {
            oracle: Oracle::new(
                workload.keys,
                workload.clients,
                timing.go,
                timing.measure_from,
            ),
            reports: HashMap::new(),
            reported_to: HashMap::new(),
            closed_at: HashMap::new(),
            problems: Vec::new(),
        }
    }
}

/// What runs beside the workers once they are told to go.
struct Launched {
    /// A command channel to each worker.
    commands: Vec<mpsc::UnboundedSender<ToChild>>,
    /// The faults' hold on the workers (their pids and commands; who was killed).
    control: WorkerControl,
    /// The fault schedule.
    schedule: Option<JoinHandle<Vec<model::FaultWindow>>>,
    /// The sampler of the worker processes' costs (none for remote workers).
    cost_task: Option<JoinHandle<model::ClientCost>>,
}

impl Case<'_> {
    /// Tells the workers to go, and starts the fault schedule and the cost sampler.
    async fn launch(
        &self,
        workers: &mut [WorkerLink],
        timing: Timing,
        peer_adapters: bool,
    ) -> Result<Launched, CaseError> {
        let ctx = self.ctx;
        let commands = send_go(workers, timing).await?;
        let pids: Vec<u32> = workers.iter().filter_map(|w| w.pid).collect();
        let control = WorkerControl::new(
            pids.clone(),
            commands.iter().map(fault_channel).collect(),
            peer_adapters,
        );
        let schedule = self.faults.start(
            ctx.clock,
            timing.go,
            self.stop.clone(),
            Some(control.clone()),
        );
        // Remote workers measure their own processes and report it.
        let cost_task = self.remote.is_none().then(|| {
            tokio::spawn(cost::sample(
                CostScope::Workers(pids),
                ctx.clock,
                timing.measure_from,
                self.stop.clone(),
            ))
        });
        Ok(Launched {
            commands,
            control,
            schedule,
            cost_task,
        })
    }

    /// Starts a worker process per client, or takes a remote worker's connection, and sends each its
    /// spec; what they say arrives on the returned receiver.
    async fn start_workers(
        &self,
        plan: &CasePlan,
    ) -> Result<(Vec<WorkerLink>, mpsc::UnboundedReceiver<Event>), CaseError> {
        let ctx = self.ctx;
        let (events_tx, events) = mpsc::unbounded_channel();
        let mut workers = Vec::new();
        let mut links = match self.remote {
            Some(pool) => tokio::select! {
                links = pool.take(ctx.workload.clients as usize, START_TIMEOUT) => {
                    links.map_err(CaseError::Fail)?
                }
                _ = ctx.interrupt.wait() => {
                    return Err(CaseError::Fail("interrupted while waiting for remote workers".into()));
                }
            },
            None => Vec::new(),
        }
        .into_iter();
        for client in 0..ctx.workload.clients {
            let (mut worker, resource_address) = match links.next() {
                Some(link) => {
                    read_events(client, link.input, events_tx.clone());
                    let address = ResourceAddress::Tcp {
                        address: SocketAddr::new(link.local.ip(), self.served.port).to_string(),
                        token: self.served.token.clone(),
                    };
                    let worker = WorkerLink {
                        child: None,
                        input: Some(Box::new(link.output)),
                        pid: None,
                    };
                    (worker, address)
                }
                None => (
                    spawn_worker(ctx, client, events_tx.clone())?,
                    ResourceAddress::Unix(self.served.socket.clone()),
                ),
            };
            let spec = ChildSpec {
                plan: plan.clone(),
                client,
                resource: resource_address,
                driver_now_ns: self.remote.map(|_| ctx.clock.now()),
                endpoints: self.faults.endpoints(client),
                report_holds: self.faults.is_active(),
            };
            let input = worker
                .input
                .as_mut()
                .ok_or_else(|| CaseError::Fail(format!("worker {client}: no input")))?;
            // A remote worker runs cases only; a worker process is told which job it has.
            let sent = match self.remote {
                Some(_) => send(input, &spec).await,
                None => send(input, &WorkerJob::Case(Box::new(spec))).await,
            };
            sent.map_err(|e| CaseError::Fail(format!("worker {client}: {e}")))?;
            workers.push(worker);
        }
        Ok((workers, events))
    }

    /// Hears the workers until every one has ended (or they overstay the stop grace), telling them
    /// to stop when the supervisor ends the case (through `launched`'s commands, whose control keeps
    /// what the faults need to hear); returns its outcome (none when the workers ended first).
    async fn listen(
        &self,
        timing: Timing,
        bar: &CaseProgress,
        events: &mut mpsc::UnboundedReceiver<Event>,
        launched: &Launched,
        workers: usize,
        heard: &mut Heard,
    ) -> Option<(bool, u64)> {
        let mut open = workers;
        let supervisor = supervise(self.ctx, timing, &self.stop, &self.served.resource, bar);
        tokio::pin!(supervisor);
        let mut outcome = None;
        let mut grace_end = None;
        while open > 0 {
            let grace = async {
                match grace_end {
                    Some(at) => tokio::time::sleep_until(at).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                result = &mut supervisor, if outcome.is_none() => {
                    outcome = Some(result);
                    grace_end = Some(tokio::time::Instant::now() + STOP_GRACE);
                    for command in &launched.commands {
                        // A worker that already exited cannot be told; it is counted by its EOF.
                        let _ = command.send(ToChild::Stop);
                    }
                }
                event = events.recv() => match event {
                    // Remote workers' times are on their own clocks: the resource's record is used.
                    Some(Event::Message(_, FromChild::Intervals(_))) if self.remote.is_some() => {}
                    Some(Event::Message(_, FromChild::Intervals(batch))) => {
                        heard.reported_to.insert(batch.client, batch.low_bound);
                        heard.oracle.add(batch);
                    }
                    Some(Event::Message(_, FromChild::Hold(event))) => self.faults.board().push(event),
                    Some(Event::Message(client, FromChild::LibraryStarved(report))) => {
                        launched.control.record_library_starve(client, report);
                    }
                    Some(Event::Message(client, FromChild::Report(tally))) => {
                        heard.reports.insert(client, *tally);
                    }
                    Some(Event::Message(client, FromChild::Error { message })) => {
                        heard.problems.push(format!("worker {client}: {message}"));
                    }
                    Some(Event::Message(_, FromChild::Ready { .. })) => {}
                    Some(Event::Message(client, FromChild::Series(_))) => {
                        heard.problems.push(format!("worker {client}: a many-locks series in a case"));
                    }
                    Some(Event::Closed(client)) => {
                        // Every hold event it sent is on the board now (a fault waits for them).
                        self.faults.board().closed(client);
                        heard.closed_at.insert(client, self.ctx.clock.now());
                        open -= 1;
                    }
                    None => break,
                },
                _ = grace => {
                    heard.problems.push(format!("workers did not stop within {STOP_GRACE:?}"));
                    break;
                }
            }
        }
        outcome
    }

    /// Gives the oracle the holds the workers did not report themselves, as the resource heard of
    /// them (a killed worker's last ones; every one of a remote worker).
    fn add_unreported(&self, crashes: &[Crash], stopped_at: u64, heard: &mut Heard) {
        let resource = &self.served.resource;
        for crash in crashes {
            // What it had not reported yet, as the resource heard of it: every hold it announced since
            // its last batch, the one open at its death closed at the kill.
            let since = heard.reported_to.get(&crash.client).copied().unwrap_or(0);
            let intervals = resource.holds.of_killed(crash.client, since, crash.at_ns);
            heard.oracle.add(IntervalBatch::recovered(
                crash.client,
                intervals,
                self.ctx.workload.history,
            ));
        }
        let clients = self.ctx.workload.clients;
        if self.remote.is_some() {
            for client in 0..clients {
                heard.oracle.add(IntervalBatch::recovered(
                    client,
                    resource.holds.all(client, stopped_at),
                    self.ctx.workload.history,
                ));
            }
        }
    }

    /// Fails the case for each worker that died outside a fault (it sent no report and no fault
    /// killed it: a signal or an exit code nobody asked for), after giving the oracle the holds it had
    /// not reported, as the resource heard of them, the one open at its death closed then.
    fn add_dead(
        &self,
        crashes: &[Crash],
        exits: &HashMap<u32, String>,
        stopped_at: u64,
        heard: &mut Heard,
    ) {
        let resource = &self.served.resource;
        for client in 0..self.ctx.workload.clients {
            let killed = crashes.iter().any(|c| c.client == client);
            if heard.reports.contains_key(&client) || killed {
                continue;
            }
            let how = exits
                .get(&client)
                .map_or("its output ended without a report", String::as_str);
            let since = heard.reported_to.get(&client).copied().unwrap_or(0);
            let died_at = heard.closed_at.get(&client).copied().unwrap_or(stopped_at);
            let intervals = if self.remote.is_some() {
                Vec::new() // every remote worker's holds are taken from the resource already
            } else {
                resource.holds.of_killed(client, since, died_at)
            };
            let recovered = intervals.len();
            heard.oracle.add(IntervalBatch::recovered(
                client,
                intervals,
                self.ctx.workload.history,
            ));
            heard.problems.push(format!(
                "worker {client} died: {how}; what it reported up to its death is kept ({recovered} \
                 hold{} it had not reported recovered from the resource)",
                if recovered == 1 { "" } else { "s" }
            ));
        }
    }
}

/// The clients whose connection to the protected resource failed, as a problem: each stopped alone
/// at its first failure, so the case ran with fewer clients than planned for part of its window.
fn resource_errors_problem(reports: &HashMap<u32, WorkerTally>) -> Option<String> {
    let mut clients: Vec<(u32, u64)> = reports
        .iter()
        .filter(|(_, t)| t.resource_errors > 0)
        .map(|(client, t)| (*client, t.resource_errors))
        .collect();
    if clients.is_empty() {
        return None;
    }
    clients.sort_unstable();
    let named: Vec<String> = clients
        .iter()
        .map(|(client, n)| format!("client {client} ({n})"))
        .collect();
    Some(format!(
        "the protected resource's connection failed for {} of the workers, which stopped before the \
         end of the case: {}",
        clients.len(),
        named.join(", ")
    ))
}

/// What the remote resource's arrival stamps (`delays`, sorted, ns) add to the workers' own times of
/// their holds' begins and ends: the median and the 99th percentile.
fn stamp_delay_words(delays: &[i64]) -> String {
    let at = |q: f64| delays[((delays.len() - 1) as f64 * q).round() as usize] as f64 / 1e3;
    if delays.is_empty() {
        return "remote hold stamps: no hold message arrived".to_owned();
    }
    format!(
        "remote hold stamps: the resource stamped each hold's begin and end as its message arrived, \
         median {:.0} µs and p99 {:.0} µs after the worker's own time of it (its clock corrected to \
         the resource's), over {} messages; an overlap shorter than the difference of two workers' \
         delays is not seen",
        at(0.5),
        at(0.99),
        delays.len()
    )
}

/// Waits for every worker to connect its client and say ready.
async fn await_ready(
    events: &mut mpsc::UnboundedReceiver<Event>,
    workers: usize,
) -> Result<Started, CaseError> {
    let mut capabilities: Option<model::Capabilities> = None;
    let mut protocol_round_trip: Option<Duration> = None;
    let mut library: Option<(String, String)> = None;
    let mut adapter_pids: Vec<u32> = Vec::new();
    let mut ready = 0;
    let started = tokio::time::timeout(START_TIMEOUT, async {
        while ready < workers {
            match events.recv().await {
                Some(Event::Message(
                    _,
                    FromChild::Ready {
                        capabilities: caps,
                        protocol_round_trip_ns,
                        library: loaded,
                        adapter_pid,
                    },
                )) => {
                    adapter_pids.extend(adapter_pid);
                    capabilities.get_or_insert(caps);
                    if library.is_none() {
                        library = loaded;
                    }
                    if let Some(ns) = protocol_round_trip_ns {
                        let rtt = Duration::from_nanos(ns);
                        protocol_round_trip =
                            Some(protocol_round_trip.map_or(rtt, |r: Duration| r.min(rtt)));
                    }
                    ready += 1;
                }
                Some(Event::Message(client, FromChild::Error { message })) => {
                    return Err(format!("worker {client}: {message}"));
                }
                Some(Event::Closed(client)) => {
                    return Err(format!("worker {client} exited during start-up"));
                }
                None => return Err("every worker exited during start-up".to_owned()),
                Some(Event::Message(..)) => {}
            }
        }
        Ok(())
    })
    .await;
    match started {
        Err(_) => {
            return Err(CaseError::Fail(format!(
                "workers not ready within {START_TIMEOUT:?}"
            )));
        }
        Ok(Err(why)) => return Err(CaseError::Fail(why)),
        Ok(Ok(())) => {}
    }
    let capabilities = capabilities.ok_or_else(|| CaseError::Fail("no worker".into()))?;
    Ok(Started {
        capabilities,
        protocol_round_trip,
        library,
        peer_adapters: !adapter_pids.is_empty(),
        adapter_processes: adapter_processes(&adapter_pids, workers as u32),
    })
}

/// The remote workers' own costs, summed (the most threads and the largest resident set of each
/// added up, as for worker processes sampled together).
fn remote_cost<'a>(reports: impl Iterator<Item = &'a WorkerTally>) -> model::ClientCost {
    let mut cost = model::ClientCost {
        scope: "remote_workers".to_owned(),
        threads_max: 0,
        rss_max_bytes: 0,
        cpu_seconds: 0.0,
        cpu_cores: 0.0,
    };
    for own in reports.filter_map(|r| r.own_cost.as_ref()) {
        cost.threads_max += own.threads_max;
        cost.rss_max_bytes += own.rss_max_bytes;
        cost.cpu_seconds += own.cpu_seconds;
        cost.cpu_cores += own.cpu_cores;
    }
    cost
}
