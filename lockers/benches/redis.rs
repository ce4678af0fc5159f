//! Measurement harness for `redis-watchdog` (`cargo bench -p lockers --bench redis`).
//!
//! Starts its own redis-server and compares, with the same client connection in the same run and
//! interleaved so both sides share the machine's noise:
//!
//! 1. uncontended try-once acquire + release (watchdog lease) against two `EVALSHA`s of a trivial
//!    script (`return 1`): p50 and p99, target p50 ratio ≤ 1.3;
//! 2. throughput of 64 concurrent tasks on 64 independent keys, all sharing ONE `RedisWatchdog` client
//!    (as Redisson shares one client per process), against the raw `EVALSHA` rate ÷ 2 of 64 tasks on
//!    the same connection: target ratio ≥ 0.7.
//!
//! Latencies go into HdrHistograms (µs). Each phase is bounded in time; the whole run takes ~15 s.
#![allow(clippy::unwrap_used)]

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use lockbench_servers::RedisServer;
use lockers::redis::{RedisWatchdog, WatchdogConfig};
use lockers::{AcquireOptions, Events, Locker};

const LATENCY_WARMUP: Duration = Duration::from_millis(500);
const LATENCY_RUN: Duration = Duration::from_secs(4);
const TASKS: usize = 64;
const THROUGHPUT_SLICE: Duration = Duration::from_millis(750);
const THROUGHPUT_ROUNDS: u32 = 4;

fn histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 60_000_000, 3).unwrap()
}

fn micros(d: Duration) -> u64 {
    u64::try_from(d.as_micros()).unwrap_or(u64::MAX).max(1)
}

/// One `EVALSHA` of `return 1` on the client's own command connection.
async fn trivial_evalsha(locker: &RedisWatchdog, script: &redis::Script) {
    let mut connection = locker.connection().commands();
    let one: i64 = script.invoke_async(&mut connection).await.unwrap();
    assert_eq!(one, 1);
}

async fn acquire_release(locker: &RedisWatchdog, key: &str, once: &AcquireOptions) {
    let lease = locker.acquire(key, once).await.unwrap();
    lease.release().await.unwrap();
}

struct Latency {
    lock: Histogram<u64>,
    /// The acquire half of `lock` alone (diagnostic).
    acquire: Histogram<u64>,
    evalsha: Histogram<u64>,
}

/// Interleaves one acquire+release and one pair of EVALSHAs per round, each timed on its own.
async fn latency(locker: &RedisWatchdog, script: &redis::Script) -> Latency {
    let once = AcquireOptions::try_once();
    let key = "bench:latency";
    let mut result = Latency {
        lock: histogram(),
        acquire: histogram(),
        evalsha: histogram(),
    };
    let warm_until = Instant::now() + LATENCY_WARMUP;
    while Instant::now() < warm_until {
        acquire_release(locker, key, &once).await;
        trivial_evalsha(locker, script).await;
    }
    let until = Instant::now() + LATENCY_RUN;
    while Instant::now() < until {
        let start = Instant::now();
        let lease = locker.acquire(key, &once).await.unwrap();
        let acquired = start.elapsed();
        lease.release().await.unwrap();
        result.lock.record(micros(start.elapsed())).unwrap();
        result.acquire.record(micros(acquired)).unwrap();
        for _ in 0..2 {
            let start = Instant::now();
            trivial_evalsha(locker, script).await;
            result.evalsha.record(micros(start.elapsed())).unwrap();
        }
    }
    result
}

/// CPU time used so far by this process and by the server process.
#[derive(Debug, Clone, Copy, Default)]
struct Cpu {
    client: Duration,
    server: Duration,
}

impl Cpu {
    fn now(server_pid: u32) -> Cpu {
        // SAFETY: getrusage only writes the struct we hand it.
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) };
        let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
        let client = tv(usage.ru_utime) + tv(usage.ru_stime);
        // utime and stime are fields 14 and 15 of /proc/PID/stat, in clock ticks (100 Hz here).
        let stat = std::fs::read_to_string(format!("/proc/{server_pid}/stat")).unwrap_or_default();
        let after_name = stat.rsplit(')').next().unwrap_or_default();
        let fields: Vec<u64> = after_name
            .split_whitespace()
            .skip(11)
            .take(2)
            .map(|f| f.parse().unwrap_or(0))
            .collect();
        let ticks = fields.iter().sum::<u64>();
        let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as u64;
        Cpu {
            client,
            server: Duration::from_micros(ticks * 1_000_000 / hz),
        }
    }

    fn since(self, earlier: Cpu) -> Cpu {
        Cpu {
            client: self.client.saturating_sub(earlier.client),
            server: self.server.saturating_sub(earlier.server),
        }
    }

    fn add(&mut self, other: Cpu) {
        self.client += other.client;
        self.server += other.server;
    }
}

/// Runs `TASKS` tasks doing `op(task)` in a loop for `THROUGHPUT_SLICE`; returns completed ops.
async fn slice<F, Fut>(op: F) -> u64
where
    F: Fn(usize) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = ()> + Send,
{
    let op = Arc::new(op);
    let done = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let mut tasks = Vec::with_capacity(TASKS);
    for task in 0..TASKS {
        let (op, done, stop) = (op.clone(), done.clone(), stop.clone());
        tasks.push(tokio::spawn(async move {
            while !stop.load(Ordering::Relaxed) {
                op(task).await;
                done.fetch_add(1, Ordering::Relaxed);
            }
        }));
    }
    tokio::time::sleep(THROUGHPUT_SLICE).await;
    let completed = done.load(Ordering::Relaxed);
    stop.store(true, Ordering::Relaxed);
    for task in tasks {
        task.await.unwrap();
    }
    completed
}

/// Throughput of one side: operations per second and CPU per operation.
#[derive(Debug, Default)]
struct Rate {
    ops: u64,
    cpu: Cpu,
}

impl Rate {
    fn per_second(&self) -> f64 {
        self.ops as f64 / (THROUGHPUT_SLICE * THROUGHPUT_ROUNDS).as_secs_f64()
    }

    /// CPU µs per operation (client, server).
    fn cpu_per_op(&self) -> (f64, f64) {
        let ops = self.ops.max(1) as f64;
        (
            self.cpu.client.as_secs_f64() * 1e6 / ops,
            self.cpu.server.as_secs_f64() * 1e6 / ops,
        )
    }
}

/// Alternating slices of lock cycles and raw EVALSHAs: (lock cycles, EVALSHAs).
async fn throughput(
    locker: &Arc<RedisWatchdog>,
    script: &Arc<redis::Script>,
    opts: AcquireOptions,
    server_pid: u32,
) -> (Rate, Rate) {
    let (mut cycles, mut evalshas) = (Rate::default(), Rate::default());
    let opts = Arc::new(opts);
    for _ in 0..THROUGHPUT_ROUNDS {
        let (l, o) = (locker.clone(), opts.clone());
        let before = Cpu::now(server_pid);
        cycles.ops += slice(move |task| {
            let (l, o) = (l.clone(), o.clone());
            async move {
                let key = format!("bench:tp:{task}");
                acquire_release(&l, &key, &o).await;
            }
        })
        .await;
        let middle = Cpu::now(server_pid);
        cycles.cpu.add(middle.since(before));
        let (l, s) = (locker.clone(), script.clone());
        evalshas.ops += slice(move |_| {
            let (l, s) = (l.clone(), s.clone());
            async move { trivial_evalsha(&l, &s).await }
        })
        .await;
        evalshas.cpu.add(Cpu::now(server_pid).since(middle));
    }
    (cycles, evalshas)
}

fn verdict(met: bool) -> &'static str {
    if met { "met" } else { "MISSED" }
}

fn main() {
    let server = RedisServer::start().unwrap();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let locker = Arc::new(
            RedisWatchdog::connect(&server.url(), WatchdogConfig::default(), Events::none())
                .await
                .unwrap(),
        );
        let script = Arc::new(redis::Script::new("return 1"));
        trivial_evalsha(&locker, &script).await;

        let lat = latency(&locker, &script).await;
        let (lock_p50, lock_p99) = (lat.lock.value_at_quantile(0.5), lat.lock.value_at_quantile(0.99));
        let (eval_p50, eval_p99) = (
            lat.evalsha.value_at_quantile(0.5),
            lat.evalsha.value_at_quantile(0.99),
        );
        let p50_ratio = lock_p50 as f64 / (2 * eval_p50) as f64;
        let p99_ratio = lock_p99 as f64 / (2 * eval_p99) as f64;

        let pid = server.pid();
        let (cycles, evalshas) =
            throughput(&locker, &script, AcquireOptions::try_once(), pid).await;
        let tp_ratio = cycles.per_second() / (evalshas.per_second() / 2.0);
        // Diagnostic: the same with fixed leases (no renewal machinery at all).
        let fixed = AcquireOptions::try_once().fixed(Duration::from_secs(30));
        let (fixed_cycles, fixed_evalshas) = throughput(&locker, &script, fixed, pid).await;
        let fixed_ratio = fixed_cycles.per_second() / (fixed_evalshas.per_second() / 2.0);

        println!("redis-watchdog vs raw EVALSHA (redis-server {}, same client, interleaved)", server.version());
        println!(
            "{:<44} {:>12} {:>14} {:>7} {:>8} {:>7}",
            "measure", "watchdog", "baseline", "ratio", "target", "result"
        );
        println!(
            "{:<44} {:>9} µs {:>11} µs {:>7.2} {:>8} {:>7}",
            "uncontended acquire+release p50 (n={})".replace("{}", &lat.lock.len().to_string()),
            lock_p50,
            2 * eval_p50,
            p50_ratio,
            "≤ 1.30",
            verdict(p50_ratio <= 1.3)
        );
        println!(
            "{:<44} {:>9} µs {:>11} µs {:>7.2} {:>8} {:>7}",
            "uncontended acquire+release p99",
            lock_p99,
            2 * eval_p99,
            p99_ratio,
            "-",
            "-"
        );
        println!(
            "{:<44} {:>9} µs {:>11} µs {:>7.2} {:>8} {:>7}",
            "  acquire alone p50 vs 1 x EVALSHA (diagnostic)",
            lat.acquire.value_at_quantile(0.5),
            eval_p50,
            lat.acquire.value_at_quantile(0.5) as f64 / eval_p50 as f64,
            "-",
            "-"
        );
        println!(
            "{:<44} {:>10.0}/s {:>12.0}/s {:>7.2} {:>8} {:>7}",
            format!("{TASKS} tasks x {TASKS} keys, cycles vs EVALSHA/2"),
            cycles.per_second(),
            evalshas.per_second() / 2.0,
            tp_ratio,
            "≥ 0.70",
            verdict(tp_ratio >= 0.7)
        );
        println!(
            "{:<44} {:>10.0}/s {:>12.0}/s {:>7.2} {:>8} {:>7}",
            "  same, fixed lease (diagnostic)",
            fixed_cycles.per_second(),
            fixed_evalshas.per_second() / 2.0,
            fixed_ratio,
            "-",
            "-"
        );
        let (cc, cs) = cycles.cpu_per_op();
        let (ec, es) = evalshas.cpu_per_op();
        println!(
            "CPU per op (client + server, µs): watchdog cycle {cc:.1} + {cs:.1}; 2 x EVALSHA {:.1} + {:.1}",
            2.0 * ec,
            2.0 * es
        );
        let (fc, fs) = fixed_cycles.cpu_per_op();
        println!("CPU per op (client + server, µs): fixed-lease cycle {fc:.1} + {fs:.1}");
        locker.close().await;
    });
}
