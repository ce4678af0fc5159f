//! Processes mode, the worker's side: the hidden `lockbench worker` command. It reads a
//! [`WorkerJob`] from stdin (a many-locks series' job goes to [`in_worker::work`]); for a case's
//! [`ChildSpec`] it builds its client through the registry, connects to the resource socket,
//! says ready, waits for `go`, runs the same worker loop as tasks mode, streams interval batches and
//! finally its report as JSON lines on stdout, then exits. It stops on `stop`, at its deadline, or when
//! stdin closes (the driver is gone). In cases with faults it also reports each acquire and end of hold
//! at once, and obeys fault commands: `starve` blocks every thread of its async runtime for a while
//! (a peer's library threads too, through its adapter), `hog` runs busy threads (see [`WorkerCommand`]).

use std::io::BufRead;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use lockers::Events;
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncWrite, AsyncWriteExt, BufReader, Lines};
use tokio::sync::mpsc;

use super::cost::{self, CostScope};
use super::many_locks::in_worker;
use super::mode::capabilities_model;
use super::protocol::{ChildSpec, FromChild, Hello, ToChild, WorkerJob};
use super::renewal::RenewalRecorder;
use super::resource_socket::{RemoteResource, ResourceClient};
use super::worker::{ReadyPlan, Worker};
use crate::base::clock::MonoClock;
use crate::base::error::{EXIT_FAILED, EXIT_OK, EXIT_USAGE};
use crate::base::holds::{BatchQueue, COLLECT_EVERY, HoldEvent};
use crate::base::stop::StopSignal;
use crate::faults::workers::{HOG_THREAD, LibraryStarve, STARVED_THREAD, WorkerCommand};
use crate::strategies::{self, Endpoints};

/// How often a worker process checks that the driver that started it is still alive.
const PARENT_CHECK: std::time::Duration = std::time::Duration::from_millis(200);

/// Ends this worker process when the driver that started it is gone (killed with SIGKILL, or dead
/// before it could close our stdin): a worker never outlives its run holding locks and connections.
/// The kernel sends SIGKILL when the driver's thread that started it ends (`PR_SET_PDEATHSIG`: it
/// reaches a worker that a fault stopped with SIGSTOP, and the driver starts workers from its
/// runtime's threads, which live as long as it does); a thread of its own also checks the parent,
/// for a driver gone before that was set.
fn exit_with_parent() {
    // SAFETY: getppid has no preconditions and cannot fail.
    let parent = unsafe { libc::getppid() };
    // SAFETY: prctl(PR_SET_PDEATHSIG) only sets this process's parent-death signal.
    unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0) };
    let _ = std::thread::Builder::new()
        .name("parent-watch".into())
        .spawn(move || {
            loop {
                std::thread::sleep(PARENT_CHECK);
                // SAFETY: as above.
                if unsafe { libc::getppid() } != parent {
                    std::process::exit(EXIT_FAILED);
                }
            }
        });
}

/// Runs the worker command on the process's runtime; returns the exit code.
pub(crate) async fn worker_main() -> i32 {
    exit_with_parent();
    let mut first = String::new();
    let job: Result<WorkerJob, String> = std::io::stdin()
        .lock()
        .read_line(&mut first)
        .map_err(|e| e.to_string())
        .and_then(|_| serde_json::from_str(&first).map_err(|e| format!("bad worker spec: {e}")));
    let input = BufReader::new(tokio::io::stdin()).lines();
    match job {
        Ok(WorkerJob::Case(spec)) => serve(*spec, input, tokio::io::stdout(), false).await,
        Ok(WorkerJob::HoldMany(job)) => {
            let answer = in_worker::work(*job, input).await;
            print_line(&answer);
            match answer {
                FromChild::Series(_) => EXIT_OK,
                _ => EXIT_FAILED,
            }
        }
        Err(message) => {
            print_line(&FromChild::Error { message });
            EXIT_FAILED
        }
    }
}

/// Runs one case of `spec`, reading the driver's commands from `input` and writing to `output`;
/// `own_cost`: measure this process's cost over the window and report it (remote workers).
pub(crate) async fn serve<R, W>(spec: ChildSpec, input: Lines<R>, output: W, own_cost: bool) -> i32
where
    R: AsyncBufRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (out, lines) = mpsc::unbounded_channel();
    let writer = tokio::spawn(write_lines(lines, output));
    let code = match run(spec, &out, input, own_cost).await {
        Ok(()) => EXIT_OK,
        Err(message) => {
            let _ = out.send(FromChild::Error { message });
            EXIT_FAILED
        }
    };
    drop(out);
    let _ = writer.await;
    code
}

/// How often a remote worker tries to reach the driver while it is not there.
const RECONNECT_EVERY: Duration = Duration::from_millis(200);

/// `lockbench worker --connect ADDR`: a remote worker. Connects to the driver, presents the token
/// (`LOCKBENCH_WORKER_TOKEN`), waits for a case, runs it like a worker process, then connects again
/// for the next one. Returns once the driver has not been reachable for `wait`: exit 0 after at
/// least one case, 1 if it never got one; a refused token is exit 2 at once.
pub(crate) async fn remote_main(connect: &str, token: &str, wait: Duration) -> i32 {
    let mut served = 0u64;
    let mut last_contact = Instant::now();
    loop {
        let stream = match tokio::net::TcpStream::connect(connect).await {
            Ok(stream) => stream,
            Err(e) => {
                if last_contact.elapsed() >= wait {
                    if served > 0 {
                        return EXIT_OK;
                    }
                    eprintln!("lockbench worker: cannot reach the driver at {connect}: {e}");
                    return EXIT_FAILED;
                }
                tokio::time::sleep(RECONNECT_EVERY).await;
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        let (reader, mut writer) = stream.into_split();
        let mut input = BufReader::new(reader).lines();
        let hello = serde_json::to_string(&Hello {
            token: token.to_owned(),
        })
        .unwrap_or_default();
        if writer
            .write_all(format!("{hello}\n").as_bytes())
            .await
            .is_err()
        {
            tokio::time::sleep(RECONNECT_EVERY).await;
            continue;
        }
        match input.next_line().await {
            Ok(Some(answer)) if answer == "ok" => {}
            Ok(Some(answer)) => {
                eprintln!("lockbench worker: the driver at {connect} refused: {answer}");
                return EXIT_USAGE;
            }
            _ => {
                tokio::time::sleep(RECONNECT_EVERY).await;
                continue;
            }
        }
        // Waits (as long as the driver keeps the connection) for the case this connection serves.
        let spec = match input.next_line().await {
            Ok(Some(line)) => serde_json::from_str::<ChildSpec>(&line),
            _ => {
                last_contact = Instant::now();
                continue;
            }
        };
        match spec {
            Ok(spec) => {
                serve(spec, input, writer, true).await;
                served += 1;
            }
            Err(e) => eprintln!("lockbench worker: bad case from the driver: {e}"),
        }
        last_contact = Instant::now();
    }
}

// The driver reads this line; the worker keeps std's printing (not `base::stdout`'s quiet end).
#[allow(clippy::print_stdout)]
fn print_line(message: &FromChild) {
    if let Ok(text) = serde_json::to_string(message) {
        println!("{text}");
    }
}

async fn write_lines<W: AsyncWrite + Unpin>(
    mut lines: mpsc::UnboundedReceiver<FromChild>,
    mut output: W,
) {
    while let Some(message) = lines.recv().await {
        let Ok(mut text) = serde_json::to_string(&message) else {
            continue;
        };
        text.push('\n');
        if output.write_all(text.as_bytes()).await.is_err() || output.flush().await.is_err() {
            return;
        }
    }
}

/// Runs the case of `spec`: connects, says ready, waits for `go`, runs the worker loop, streams its
/// intervals (and holds, in cases with faults) and finally its report to `out`.
async fn run<R>(
    spec: ChildSpec,
    out: &mpsc::UnboundedSender<FromChild>,
    mut stdin: Lines<R>,
    own_cost: bool,
) -> Result<(), String>
where
    R: AsyncBufRead + Unpin + Send + 'static,
{
    let clock = MonoClock::new();
    // A remote worker's clock is not the driver's: driver times are moved by the difference seen
    // when the spec arrived (off by the one-way delay; the resource times the holds itself).
    let offset = spec
        .driver_now_ns
        .map_or(0, |driver| i128::from(driver) - i128::from(clock.now()));
    let local = move |t: u64| u64::try_from((i128::from(t) - offset).max(0)).unwrap_or(u64::MAX);
    let client = Client::connect(&spec, clock, out).await?;

    let Some((go, measure, stop_at)) = wait_for_go(&mut stdin).await? else {
        return Ok(()); // The driver went away, or stopped us, before the start.
    };
    let (go, measure, stop_at) = (local(go), local(measure), stop_at.map(local));
    client.measure_from.store(measure, Ordering::Release);
    let stop = StopSignal::new();
    tokio::spawn(follow_commands(
        stdin,
        stop.clone(),
        Obeying {
            clock,
            locker: client.locker.clone(),
            out: out.clone(),
        },
        local,
    ));
    if let Some(at) = stop_at {
        let stop = stop.clone();
        tokio::spawn(async move {
            tokio::time::sleep_until(clock.instant(at).into()).await;
            stop.set();
        });
    }
    let batches = BatchQueue::new();
    let worker_done = StopSignal::new();
    let forward = tokio::spawn(forward_intervals(
        out.clone(),
        batches.clone(),
        worker_done.clone(),
    ));
    let holds = spec.report_holds.then(|| forward_holds(out.clone()));
    let cost = own_cost.then(|| {
        tokio::spawn(cost::sample(
            CostScope::DriverProcess(client.adapter_pid().into_iter().collect()),
            clock,
            measure,
            worker_done.clone(),
        ))
    });
    let Client {
        locker,
        recorder,
        capabilities,
        resource,
        ready,
        ..
    } = client;
    let worker = Worker {
        client: spec.client,
        locker: locker.clone(),
        fencing: capabilities.fencing,
        lost_signal: capabilities.lost_signal,
        plan: ready,
        resource: ResourceClient::Remote(resource),
        intervals: batches,
        stop,
        clock,
        go,
        measure_from: measure,
        holds,
    };
    let mut tally = worker.run().await;
    worker_done.set();
    let _ = forward.await;
    locker.close().await;
    tally.renewal = recorder.tally();
    // The client's own count of what it sent, connecting and closing included.
    tally.redis_commands = locker.requests_sent().unwrap_or(0);
    if let Some(cost) = cost {
        tally.own_cost = cost.await.ok();
    }
    let _ = out.send(FromChild::Report(Box::new(tally)));
    Ok(())
}

/// This worker's client of the case, connected, with the protected resource.
struct Client {
    /// The client's strategy instance.
    locker: Arc<dyn lockers::Locker>,
    /// Records its renewal events.
    recorder: Arc<RenewalRecorder>,
    /// When the recorder starts counting: the start of the measured window, once it is known.
    measure_from: Arc<AtomicU64>,
    /// What it declared.
    capabilities: lockers::Capabilities,
    /// The protected resource, through the driver's socket.
    resource: RemoteResource,
    /// The case's plan.
    ready: Arc<ReadyPlan>,
}

impl Client {
    /// Builds the client of `spec` through the registry, connects to the resource socket, and tells
    /// the driver it is ready (with what the client declared) on `out`.
    async fn connect(
        spec: &ChildSpec,
        clock: MonoClock,
        out: &mpsc::UnboundedSender<FromChild>,
    ) -> Result<Client, String> {
        let strategy = strategies::find(&spec.plan.strategy)
            .ok_or_else(|| format!("unknown strategy {:?}", spec.plan.strategy))?;
        let ready = Arc::new(ReadyPlan::new(&spec.plan)?);
        let endpoints = Endpoints::new(spec.endpoints.clone());
        let measure_from = Arc::new(AtomicU64::new(u64::MAX));
        let recorder = RenewalRecorder::new(clock, measure_from.clone());
        let settings = spec.plan.settings();
        let locker = strategy
            .connect(&endpoints, &settings, Events::to(recorder.clone()))
            .await
            .map_err(|e| format!("{}: {e}", strategy.id))?;
        let capabilities = locker.capabilities();
        let resource = RemoteResource::connect_to(&spec.resource)
            .map_err(|e| format!("resource {}: {e}", spec.resource))?;
        let _ = out.send(FromChild::Ready {
            capabilities: capabilities_model(&capabilities),
            protocol_round_trip_ns: locker
                .peer()
                .map(|p| u64::try_from(p.protocol_round_trip().as_nanos()).unwrap_or(u64::MAX)),
            library: locker.peer().map(|p| p.loaded_library()),
            adapter_pid: locker.peer().and_then(|p| p.adapter_process()),
        });
        Ok(Client {
            locker,
            recorder,
            measure_from,
            capabilities,
            resource,
            ready,
        })
    }

    /// The pid of the peer adapter process the client's library runs in, if it is a peer.
    fn adapter_pid(&self) -> Option<u32> {
        self.locker.peer().and_then(|p| p.adapter_process())
    }
}

/// The driver's `go` (its go, measure-from and stop-at times, on the driver's clock), or `None` when
/// the driver went away or said stop before it.
async fn wait_for_go<R>(stdin: &mut Lines<R>) -> Result<Option<(u64, u64, Option<u64>)>, String>
where
    R: AsyncBufRead + Unpin,
{
    let line = match stdin.next_line().await {
        Ok(Some(line)) => line,
        _ => return Ok(None),
    };
    match serde_json::from_str::<ToChild>(&line) {
        Ok(ToChild::Go {
            go_ns,
            measure_from_ns,
            stop_at_ns,
        }) => Ok(Some((go_ns, measure_from_ns, stop_at_ns))),
        Ok(ToChild::Stop) => Ok(None),
        Ok(other) => Err(format!("expected go from the driver, got {other:?}")),
        Err(e) => Err(format!("bad message from the driver: {e}")),
    }
}

/// What a worker carries out fault commands with: its clock, its client (a peer's library is starved
/// in its adapter process) and its line to the driver.
struct Obeying {
    clock: MonoClock,
    locker: Arc<dyn lockers::Locker>,
    out: mpsc::UnboundedSender<FromChild>,
}

/// After `go`: carries out the driver's fault commands, then sets `stop` when the driver says stop. End
/// of input (or a line that is not a command) means the driver is gone or confused: stop too. `local`
/// turns driver times into this process's.
async fn follow_commands<R>(
    mut stdin: Lines<R>,
    stop: StopSignal,
    obeying: Obeying,
    local: impl Fn(u64) -> u64,
) where
    R: AsyncBufRead + Unpin,
{
    let clock = obeying.clock;
    while let Ok(Some(line)) = stdin.next_line().await {
        match serde_json::from_str::<ToChild>(&line) {
            Ok(ToChild::Fault(WorkerCommand::Starve { until_ns })) => {
                let until_ns = local(until_ns);
                starve_library(&obeying, until_ns).await;
                starve_runtime(clock, until_ns)
            }
            Ok(ToChild::Fault(WorkerCommand::Hog { threads, until_ns })) => {
                hog(clock, threads, local(until_ns))
            }
            _ => break,
        }
    }
    stop.set();
}

/// A peer's part of a starvation, before the runtime's (once the runtime is starved, nothing can be
/// sent): has the adapter block its library's threads until `until_ns` and reports what it held to
/// the driver. Lockbench's own strategies renew on the runtime alone: nothing to do.
async fn starve_library(obeying: &Obeying, until_ns: u64) {
    let hold = Duration::from_nanos(until_ns.saturating_sub(obeying.clock.now()));
    let Some(peer) = obeying.locker.peer() else {
        return;
    };
    let outcome = peer.starve_library(hold).await;
    let report = match outcome {
        Ok(held) => LibraryStarve::Held {
            pid: held.pid,
            held: held.held,
            threads: held.threads,
        },
        Err(e) => LibraryStarve::Failed { why: e.to_string() },
    };
    let _ = obeying.out.send(FromChild::LibraryStarved(report));
}

/// Sends the worker's finished intervals to the driver every [`COLLECT_EVERY`], and the last ones once
/// `done` is set.
async fn forward_intervals(
    out: mpsc::UnboundedSender<FromChild>,
    batches: BatchQueue,
    done: StopSignal,
) {
    let mut tick = tokio::time::interval(COLLECT_EVERY);
    loop {
        let finished = tokio::select! {
            _ = done.wait() => true,
            _ = tick.tick() => false,
        };
        for batch in batches.take() {
            let _ = out.send(FromChild::Intervals(batch));
        }
        if finished {
            return;
        }
    }
}

/// A sender of hold events that forwards each one to the driver.
fn forward_holds(out: mpsc::UnboundedSender<FromChild>) -> mpsc::UnboundedSender<HoldEvent> {
    let (tx, mut rx) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        while let Some(event) = rx.recv().await {
            let _ = out.send(FromChild::Hold(event));
        }
    });
    tx
}

/// How long each blocking task waits for the others to be blocking too before it blocks anyway.
const STARVE_GATHER: Duration = Duration::from_millis(500);

/// Blocks every worker thread of the current runtime until `until_ns`: one blocking task per worker
/// thread, spawned from outside the runtime (so they land in its shared queue and idle threads take
/// them), each holding its thread until all have arrived, then sleeping out the time under the name
/// [`STARVED_THREAD`] (the driver's evidence). Timers, I/O and tasks of this process stall
/// meanwhile; OS threads of its own (a guard thread) do not.
fn starve_runtime(clock: MonoClock, until_ns: u64) {
    let handle = tokio::runtime::Handle::current();
    let threads = handle.metrics().num_workers();
    let arrived = Arc::new(AtomicUsize::new(0));
    let spawner = std::thread::Builder::new()
        .name("lockbench-starve".into())
        .spawn(move || {
            for _ in 0..threads {
                let arrived = arrived.clone();
                handle.spawn(async move {
                    arrived.fetch_add(1, Ordering::AcqRel);
                    let gather_until = Instant::now() + STARVE_GATHER;
                    while arrived.load(Ordering::Acquire) < threads && Instant::now() < gather_until
                    {
                        std::thread::sleep(Duration::from_millis(1));
                    }
                    let now = clock.now();
                    if until_ns > now {
                        let own_name = set_thread_name(STARVED_THREAD);
                        std::thread::sleep(Duration::from_nanos(until_ns - now));
                        if let Some(name) = own_name {
                            set_thread_name(&name);
                        }
                    }
                });
            }
        });
    if spawner.is_err() {
        eprintln!("lockbench worker: cannot start the starvation thread");
    }
}

/// Names the calling thread `name` (its `comm` in `/proc`, at most 15 bytes); its name before, if
/// it could be read.
fn set_thread_name(name: &str) -> Option<String> {
    let before = std::fs::read_to_string("/proc/thread-self/comm")
        .ok()
        .map(|n| n.trim_end().to_owned());
    if let Ok(name) = std::ffi::CString::new(name) {
        // SAFETY: PR_SET_NAME reads a NUL-terminated string of which it keeps at most 16 bytes.
        unsafe { libc::prctl(libc::PR_SET_NAME, name.as_ptr()) };
    }
    before
}

/// Runs `threads` busy-looping OS threads (named [`HOG_THREAD`]) until `until_ns`.
fn hog(clock: MonoClock, threads: u32, until_ns: u64) {
    for _ in 0..threads {
        let spawned = std::thread::Builder::new()
            .name(HOG_THREAD.into())
            .spawn(move || {
                let mut spins = 0u64;
                while clock.now() < until_ns {
                    spins = std::hint::black_box(spins.wrapping_add(1));
                }
            });
        if spawned.is_err() {
            eprintln!("lockbench worker: cannot start a CPU hog thread");
            return;
        }
    }
}
