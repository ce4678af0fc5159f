//! One strategy's scale run in this process: one client fills each step with fresh keys (bounded by the
//! caps and the step budget), lets renewal settle, holds still for the measured window while reading the
//! counters before and after, and finally releases everything.
//!
//! Where the numbers come from (each kind's `kinds/<kind>/held.rs` and `counters.rs`): Redis `INFO commandstats` (script calls are the renewals while the
//! client only holds; their `usec` is the time spent executing them), etcd `/metrics`
//! (`grpc_server_msg_received_total` of `LeaseKeepAlive`), ZooKeeper `mntr` (`packets_received`: pings
//! and probes), PostgreSQL `pg_stat_statements` (`UPDATE` statements: `postgres-lease`'s renewals while
//! the client only holds); server CPU from `/proc/<pid>` when the pid is known (else `INFO cpu` /
//! `process_cpu_seconds_total`); client CPU from `getrusage`, RSS and threads from `/proc/self/stat`;
//! per-lock renewals, failures and losses from the strategy's own events. A peer's client figures are
//! its library's own process (the adapter), read from `/proc/<pid>`, and its acquires share a few
//! owners (one per concurrent acquirer) as a service's worker threads would. The locks the server holds
//! are counted by the server itself (Redis `DBSIZE`, ZooKeeper `zk_ephemerals_count`, etcd's key count).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use lockbench_reports::scale::{ScalePoint, ScaleSeries, ScaleStop};
use lockers::{AcquireOptions, Events, Lease, Locker, OwnerId};

use super::probes::{ClientProcess, ServerProbe, server_locks_held};
use super::renewal_counts::RenewalCounts;
use super::spec::{INTERRUPTED, ScaleSpec, ms};
use crate::backends::Backends;
use crate::backends::stats::StatsSnapshot;
use crate::base::duration::format_duration;
use crate::base::measure::RedisCommandStats;
use crate::base::stop::StopSignal;
use crate::strategies::beside::rows_beside;
use crate::strategies::{Endpoints, Strategy, StrategySettings};

/// Locks renewed per server call, as the registry says ([`Facts::locks_per_renew_call`]).
///
/// [`Facts::locks_per_renew_call`]: crate::strategies::Facts::locks_per_renew_call
pub(crate) fn locks_per_renew_call(strategy: &Strategy) -> Option<u64> {
    strategy.facts.locks_per_renew_call
}

/// Why `strategy` cannot hold watchdog leases (a peer whose library renews nothing by itself, or whose
/// runtime is not installed), if so: the row then says why instead of measuring nothing.
fn holds_no_watchdog_lease(strategy: &Strategy, settings: &StrategySettings) -> Option<String> {
    if !strategy.is_peer() {
        return None;
    }
    match strategy.capabilities(settings) {
        Ok(capabilities) if capabilities.auto_renew => None,
        Ok(_) => Some(format!(
            "its library renews no lease by itself, so it holds no watchdog lease ({})",
            strategy.description
        )),
        Err(e) => Some(format!("not run: {e}")),
    }
}

/// The stop of a series that SIGINT or SIGTERM cut short at `step`, holding `held` locks.
pub(super) fn interrupted(held: usize, step: u64) -> ScaleStop {
    ScaleStop {
        held: held as u64,
        step,
        reason: INTERRUPTED.to_owned(),
    }
}

/// `work`, cut short when `interrupt` is set (then `None`).
pub(super) async fn unless_interrupted<T>(
    interrupt: &StopSignal,
    work: impl Future<Output = T>,
) -> Option<T> {
    tokio::select! {
        done = work => Some(done),
        () = interrupt.wait() => None,
    }
}

/// Runs `spec.steps` with one client of `strategy`, in this process. Once `interrupt` is set it takes
/// no more locks and measures no more windows (one under way is dropped): it records the stop, then
/// releases what it holds.
pub(crate) async fn measure_strategy(
    strategy: &'static Strategy,
    spec: &ScaleSpec,
    backends: &Backends,
    server: Option<ServerProbe>,
    interrupt: &StopSignal,
) -> ScaleSeries {
    let mut series = ScaleSeries {
        strategy: strategy.id.to_owned(),
        server: strategy.server.name().to_owned(),
        locks_per_renew_call: locks_per_renew_call(strategy),
        beside: rows_beside(strategy),
        ..ScaleSeries::default()
    };
    let counts = Arc::new(RenewalCounts::default());
    let locker = match connect(strategy, spec, backends, &counts).await {
        Ok(locker) => locker,
        Err(stop) => {
            series.stopped = Some(stop);
            return series;
        }
    };
    unless_interrupted(interrupt, warm_up(&locker, spec.warm_up, spec)).await;
    let client = ClientProcess::of(locker.as_ref());
    series.in_adapter_process = client != ClientProcess::Own;
    series.library = locker.peer().map(|p| {
        let (name, version) = p.loaded_library();
        format!("{name} {version}")
    });
    series.client_rss_at_start_bytes = client.sample().map(|s| s.rss_bytes);
    let server_before = server_locks_held(server.clone()).await;
    let mut held: Vec<Lease> = Vec::new();
    let next_key = Arc::new(AtomicUsize::new(0));
    for &step in &spec.steps {
        if interrupt.is_set() {
            series.stopped = Some(interrupted(held.len(), step));
            break;
        }
        let target = usize::try_from(step).unwrap_or(usize::MAX);
        let at_start = counts.now();
        let began = Instant::now();
        let filling = fill(
            &locker,
            client,
            &next_key,
            target - held.len(),
            spec,
            interrupt,
        );
        let (leases, stop) = filling.await;
        let fill_time = began.elapsed();
        held.extend(leases);
        if interrupt.is_set() {
            series.stopped = Some(interrupted(held.len(), step));
            break;
        }
        if held.is_empty() {
            series.stopped = stop.map(|reason| ScaleStop {
                held: 0,
                step,
                reason,
            });
            break;
        }
        let window = Window {
            held_locks: held.len() as u64,
            spec,
            server: server.clone(),
            counts: &counts,
            at_start,
            fill_time,
            locks_per_call: series.locks_per_renew_call,
            renewals_per_period: strategy.facts.renewals_per_period,
            renewal_command: strategy.facts.renewal_command,
            client,
            server_before,
        };
        let measured = unless_interrupted(interrupt, async {
            // Let every lock settle into its renewal cycle before measuring.
            tokio::time::sleep(spec.renew_period().max(Duration::from_millis(500))).await;
            window
                .measure(|| held.iter().filter(|l| l.is_held()).count() as u64)
                .await
        });
        let Some(point) = measured.await else {
            series.stopped = Some(interrupted(held.len(), step));
            break;
        };
        series.points.push(point);
        if let Some(reason) = stop {
            series.stopped = Some(ScaleStop {
                held: held.len() as u64,
                step,
                reason,
            });
            break;
        }
    }
    release_all(held, spec).await;
    locker.close().await;
    series
}

/// One client of `strategy` for a scale run, its events counted by `counts`; else the stop that says
/// why not (it holds no watchdog lease, or it could not connect), at the first step with nothing held.
async fn connect(
    strategy: &'static Strategy,
    spec: &ScaleSpec,
    backends: &Backends,
    counts: &Arc<RenewalCounts>,
) -> Result<Arc<dyn Locker>, ScaleStop> {
    let endpoints = Endpoints::new(backends.endpoints());
    let settings = spec.settings();
    let stop = |reason| ScaleStop {
        held: 0,
        step: spec.steps[0],
        reason,
    };
    if let Some(reason) = holds_no_watchdog_lease(strategy, &settings) {
        return Err(stop(reason));
    }
    strategy
        .connect(&endpoints, &settings, Events::to(counts.clone()))
        .await
        .map_err(|e| stop(format!("could not connect: {e}")))
}

/// Runs acquire-and-release cycles on keys of their own for `length` (the warm-up a row's runtime needs
/// before it is measured, the JVM rows' as in `compare`), `spec.concurrency` at a time; nothing is held
/// afterwards and nothing of it is measured. Errors only end a cycle (the runtime is still warming).
async fn warm_up(locker: &Arc<dyn Locker>, length: Duration, spec: &ScaleSpec) {
    if length.is_zero() {
        return;
    }
    let until = Instant::now() + length;
    let mut cyclers = tokio::task::JoinSet::new();
    for number in 0..spec.concurrency {
        let locker = locker.clone();
        cyclers.spawn(async move {
            let once = AcquireOptions::try_once();
            while Instant::now() < until {
                // Not named like the measured keys (`scale:N`), which the server's count matches.
                if let Ok(lease) = locker.acquire(&format!("warm-up:{number}"), &once).await {
                    let _ = lease.release().await;
                }
            }
        });
    }
    while cyclers.join_next().await.is_some() {}
}

/// Starts up to `count` more acquires of fresh keys, `spec.concurrency` at a time; stops early on the
/// first error, a cap, the step budget or `interrupt`, and says why.
async fn fill(
    locker: &Arc<dyn Locker>,
    client: ClientProcess,
    next_key: &Arc<AtomicUsize>,
    count: usize,
    spec: &ScaleSpec,
    interrupt: &StopSignal,
) -> (Vec<Lease>, Option<String>) {
    let remaining = Arc::new(AtomicUsize::new(count));
    let stop: Arc<Mutex<Option<String>>> = Arc::default();
    let deadline = Instant::now() + spec.step_budget;
    let mut workers = tokio::task::JoinSet::new();
    for number in 0..spec.concurrency.min(count.max(1)) {
        let worker = FillWorker {
            locker: locker.clone(),
            client,
            owner: OwnerId::new(format!("scale-acquirer-{number}")),
            next_key: next_key.clone(),
            remaining: remaining.clone(),
            stop: stop.clone(),
            deadline,
            budget: spec.step_budget,
            max_threads: spec.max_threads,
            max_rss: spec.max_rss_bytes,
            interrupt: interrupt.clone(),
        };
        workers.spawn(worker.run());
    }
    let mut leases = Vec::with_capacity(count);
    while let Some(joined) = workers.join_next().await {
        match joined {
            Ok(mine) => leases.extend(mine),
            Err(e) => halt(&stop, format!("acquire task failed: {e}")),
        }
    }
    let stop = stop.lock().unwrap_or_else(|e| e.into_inner()).take();
    (leases, stop)
}

/// Records the first reason to stop filling.
fn halt(stop: &Mutex<Option<String>>, why: String) {
    stop.lock()
        .unwrap_or_else(|e| e.into_inner())
        .get_or_insert(why);
}

/// A fill worker reads its process's threads and RSS before its first acquire and before one in this
/// many (counted over all workers; a `/proc` read per acquire cost more than the acquire), so a cap may
/// be passed by this many locks beside those in flight.
const CAPS_CHECKED_EVERY: usize = 16;

/// One of the concurrent acquirers of a step.
struct FillWorker {
    locker: Arc<dyn Locker>,
    /// The process whose threads and resident set the caps are checked against.
    client: ClientProcess,
    /// The owner of every lock this worker takes: a service's worker thread holds many locks, so a
    /// library that binds a hold to a thread (Redisson, Curator) needs one thread per acquirer, not
    /// one per lock.
    owner: OwnerId,
    next_key: Arc<AtomicUsize>,
    remaining: Arc<AtomicUsize>,
    stop: Arc<Mutex<Option<String>>>,
    deadline: Instant,
    budget: Duration,
    max_threads: u64,
    max_rss: u64,
    /// Set by SIGINT or SIGTERM: no more acquires.
    interrupt: StopSignal,
}

impl FillWorker {
    /// Why to stop before the next acquire, if anything; the thread and RSS caps (a read of
    /// `/proc/self/stat`) only when `check_caps`.
    fn why_stop(&self, check_caps: bool) -> Option<String> {
        // Nothing left to take, or another worker already stopped: end quietly.
        let stopped = self
            .stop
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_some();
        if stopped || self.remaining.load(Ordering::Acquire) == 0 {
            return Some(String::new());
        }
        if self.interrupt.is_set() {
            return Some(INTERRUPTED.to_owned());
        }
        if Instant::now() >= self.deadline {
            let budget = format_duration(self.budget);
            return Some(format!("step not filled within the budget of {budget}"));
        }
        if !check_caps {
            return None;
        }
        let me = self.client.sample()?;
        if me.threads >= self.max_threads {
            return Some(format!("thread cap {} reached", self.max_threads));
        }
        if me.rss_bytes >= self.max_rss {
            return Some(format!("RSS cap {} MiB reached", self.max_rss >> 20));
        }
        None
    }

    async fn run(self) -> Vec<Lease> {
        let once = AcquireOptions {
            owner: Some(self.owner.clone()),
            ..AcquireOptions::try_once()
        };
        let mut mine = Vec::new();
        loop {
            let number = self.next_key.fetch_add(1, Ordering::Relaxed);
            if let Some(why) =
                self.why_stop(mine.is_empty() || number.is_multiple_of(CAPS_CHECKED_EVERY))
            {
                if !why.is_empty() {
                    halt(&self.stop, why);
                }
                break;
            }
            let claimed = self
                .remaining
                .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1));
            if claimed.is_err() {
                break;
            }
            let key = format!("scale:{number}");
            match self.locker.acquire(&key, &once).await {
                Ok(lease) => mine.push(lease),
                Err(e) => {
                    halt(&self.stop, format!("acquire failed: {e}"));
                    break;
                }
            }
        }
        mine
    }
}

/// One reading of everything a point is made of.
struct Reading {
    at: Instant,
    client_cpu: Duration,
    counts: [u64; 3],
    server: Option<StatsSnapshot>,
    server_cpu: Option<f64>,
    /// The scripts' calls and time, where a renewal is a script call.
    scripts: Option<RedisCommandStats>,
    /// The renewal messages received, where the counters tell them apart.
    renewal_messages: Option<u64>,
}

async fn read(
    server: Option<ServerProbe>,
    client: ClientProcess,
    counts: &RenewalCounts,
) -> Reading {
    let blocking = tokio::task::spawn_blocking(move || {
        let Some(server) = server else {
            return (None, None, None, None);
        };
        let snapshot = server.stats.as_ref().and_then(|s| s.snapshot());
        let cpu = server
            .process_cpu_seconds()
            .or_else(|| snapshot.as_ref().and_then(|s| s.cpu_seconds));
        let (scripts, messages) = match server.socket {
            None => (None, None),
            Some(addr) => (
                server.held.script_stats.and_then(|read| read(addr)),
                server.held.renewal_messages.and_then(|read| read(addr)),
            ),
        };
        (snapshot, cpu, scripts, messages)
    })
    .await;
    let (server, server_cpu, scripts, renewal_messages) =
        blocking.unwrap_or((None, None, None, None));
    Reading {
        at: Instant::now(),
        client_cpu: client.cpu_time(),
        counts: counts.now(),
        server,
        server_cpu,
        scripts,
        renewal_messages,
    }
}

/// Requests the server received that were renewals, between two readings: script calls (or the
/// calls of `renewal_command`, where a renewal is that command), renewal messages, or else the
/// outside counter only renewals move (`renewal_counter`: ZooKeeper's packets, PostgreSQL's
/// `UPDATE`s, which nothing but a renewal sends while the client only holds).
fn renew_calls(
    before: &Reading,
    after: &Reading,
    renewal_command: Option<&str>,
    renewal_counter: Option<&str>,
) -> Option<u64> {
    if let (Some(b), Some(a)) = (&before.scripts, &after.scripts) {
        return Some(a.since(b).renewals(renewal_command).calls);
    }
    if let (Some(b), Some(a)) = (before.renewal_messages, after.renewal_messages) {
        return Some(a.saturating_sub(b));
    }
    let (b, a) = (before.server.as_ref()?, after.server.as_ref()?);
    let now = a.requests.get(renewal_counter?)?;
    Some(now.saturating_sub(b.requests.get(renewal_counter?).copied().unwrap_or(0)))
}

/// The measured window of one step.
pub(super) struct Window<'a> {
    pub(super) held_locks: u64,
    pub(super) spec: &'a ScaleSpec,
    pub(super) server: Option<ServerProbe>,
    pub(super) counts: &'a RenewalCounts,
    /// Counters when the step began filling.
    pub(super) at_start: [u64; 3],
    pub(super) fill_time: Duration,
    pub(super) locks_per_call: Option<u64>,
    /// Renewals of each lock per renewal period (batched renewal: a little more than one).
    pub(super) renewals_per_period: f64,
    /// The command a renewal is when it is no script (`set` for `valkey-ifeq`).
    pub(super) renewal_command: Option<&'static str>,
    /// The process whose CPU, memory and threads are the client's.
    pub(super) client: ClientProcess,
    /// Locks the server held before the client's first acquire (counted by the server).
    pub(super) server_before: Option<u64>,
}

impl Window<'_> {
    /// Holds still for the window and reads everything before and after; `held_at_end` counts the
    /// locks still held once it is over.
    pub(super) async fn measure(self, held_at_end: impl FnOnce() -> u64) -> ScalePoint {
        let before = read(self.server.clone(), self.client, self.counts).await;
        self.counts.take_margins();
        tokio::time::sleep(self.spec.hold).await;
        let (thinnest_margin_ms, margin_p0_1_ms) = self.counts.take_margins();
        // The client's CPU time ends before the closing server reading, whose probes run in this
        // process (reading etcd's `/metrics`, ZooKeeper's `mntr`) and are no work of the client's: a row
        // of lockbench's would pay for them, a library in its adapter process would not.
        let (client_end, client_cpu_end) = (Instant::now(), self.client.cpu_time());
        let after = read(self.server.clone(), self.client, self.counts).await;
        let seconds = (after.at - before.at).as_secs_f64().max(1e-9);
        let me = self.client.sample().unwrap_or_default();
        // Counted once the window is over, so the count's own calls are not measured.
        let server_held = server_locks_held(self.server.clone()).await;
        let renewal_counter = self.server.as_ref().and_then(|s| s.held.renewal_counter);
        let server_cpu = before
            .server_cpu
            .zip(after.server_cpu)
            .map(|(b, a)| (a - b).max(0.0));
        let command_usec = before
            .scripts
            .as_ref()
            .zip(after.scripts.as_ref())
            .map(|(b, a)| a.since(b).renewals(self.renewal_command).usec as f64);
        let held_locks = self.held_locks;
        let period = self.spec.renew_period().as_secs_f64() / self.renewals_per_period;
        let bound = self
            .locks_per_call
            .filter(|_| self.server.is_some())
            .map(|per_call| held_locks.div_ceil(per_call) as f64 / period);
        ScalePoint {
            held_locks,
            held_at_end: held_at_end(),
            fill_ms: ms(self.fill_time),
            window_ms: seconds * 1e3,
            renew_calls_per_s: renew_calls(&before, &after, self.renewal_command, renewal_counter)
                .map(|n| n as f64 / seconds),
            renew_calls_bound_per_s: bound,
            renewals_per_s: after.counts[0].saturating_sub(before.counts[0]) as f64 / seconds,
            renew_failures: after.counts[1].saturating_sub(self.at_start[1]),
            lost: after.counts[2].saturating_sub(self.at_start[2]),
            thinnest_margin_ms,
            margin_p0_1_ms,
            server_cpu_ms_per_s: server_cpu.map(|s| s * 1e3 / seconds),
            server_command_ms_per_s: command_usec.map(|us| us / 1e3 / seconds),
            client_cpu_percent: client_cpu_end
                .saturating_sub(before.client_cpu)
                .as_secs_f64()
                * 100.0
                / (client_end - before.at).as_secs_f64().max(1e-9),
            client_rss_bytes: me.rss_bytes,
            client_threads: me.threads,
            server_held: server_held.map(|n| n.saturating_sub(self.server_before.unwrap_or(0))),
        }
    }
}

/// Releases every lease, `spec.concurrency` at a time, within the step budget; whatever is left is
/// dropped (released in the background or left to expire).
async fn release_all(held: Vec<Lease>, spec: &ScaleSpec) {
    let queue = Arc::new(Mutex::new(held));
    let mut workers = tokio::task::JoinSet::new();
    for _ in 0..spec.concurrency {
        let queue = queue.clone();
        workers.spawn(async move {
            loop {
                let next = queue.lock().unwrap_or_else(|e| e.into_inner()).pop();
                let Some(lease) = next else { break };
                // NotHeld (lost meanwhile) or a server error only mean the lock expires by itself.
                let _ = lease.release().await;
            }
        });
    }
    let all_done = async { while workers.join_next().await.is_some() {} };
    if tokio::time::timeout(spec.step_budget, all_done)
        .await
        .is_err()
    {
        eprintln!(
            "lockbench scale: releases did not finish within the step budget; the rest expire"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::driver::many_locks::Isolation;
    use crate::strategies;

    /// The `memory` row in this process, at `lockbench scale`'s defaults but for these.
    fn memory_spec(steps: Vec<u64>, hold_ms: u64, timeout_ms: u64, max_threads: u64) -> ScaleSpec {
        ScaleSpec {
            strategies: vec![strategies::find("memory").expect("registered")],
            steps,
            hold: Duration::from_millis(hold_ms),
            watchdog_timeout: Duration::from_millis(timeout_ms),
            concurrency: 64,
            step_budget: Duration::from_secs(60),
            max_threads,
            max_rss_bytes: 4 << 30,
            isolation: Isolation::InProcess,
            yardstick: true,
            warm_up: Duration::ZERO,
            passes: 1,
        }
    }

    #[test]
    fn renew_calls_per_strategy_shape() {
        let id = |id| strategies::find(id).unwrap_or_else(|| panic!("{id}"));
        assert_eq!(
            locks_per_renew_call(id("redis-watchdog-batched")),
            Some(100)
        );
        assert_eq!(locks_per_renew_call(id("redis-watchdog")), Some(1));
        assert_eq!(locks_per_renew_call(id("memory")), None);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn memory_strategy_end_to_end() {
        let spec = memory_spec(vec![50, 200], 600, 300, 10_000);
        let strategy = spec.strategies[0];
        let memory = measure_strategy(
            strategy,
            &spec,
            &Backends::default(),
            None,
            &StopSignal::new(),
        )
        .await;
        assert!(memory.stopped.is_none(), "{:?}", memory.stopped);
        assert_eq!(memory.points.len(), 2);
        let last = &memory.points[1];
        assert_eq!(last.held_locks, 200);
        assert_eq!(last.held_at_end, 200);
        assert_eq!(last.lost, 0);
        // 200 locks renewed every 100 ms: about 2000 per second.
        assert!(
            (1000.0..3000.0).contains(&last.renewals_per_s),
            "{}",
            last.renewals_per_s
        );
        assert!(last.renew_calls_per_s.is_none());
        assert!(last.client_threads >= 1 && last.client_rss_bytes > 0);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_thread_cap_stops_the_strategy_and_says_why() {
        let spec = memory_spec(vec![100], 100, 3000, 1);
        let series = measure_strategy(
            spec.strategies[0],
            &spec,
            &Backends::default(),
            None,
            &StopSignal::new(),
        )
        .await;
        let stop = series.stopped.as_ref().expect("stopped");
        assert_eq!(stop.held, 0);
        assert!(stop.reason.contains("thread cap 1"), "{}", stop.reason);
    }
}
