//! `cargo bench -p lockbench --bench redis_throughput`: throughput of the Redis strategies on 64
//! independent keys (64 tasks share one client, as Redisson shares one client per process) against the
//! same calls sent raw on the same connection (docs/design.md §8 target: ≥ 0.90): redis-watchdog and
//! redis-watchdog-batched against their acquire + release scripts by SHA, redis-guard-thread against
//! its `SET NX PX` + `INCR` and check-and-delete scripts. Round 1's ratio against `EVALSHA return 1`
//! ÷ 2 stays as context, with where the time goes, against a real local redis-server this bench
//! starts.
//!
//! Every operation runs for a slice, round-robin with the others for several rounds, so all share the
//! machine's noise; per operation the bench records the rate, the client's CPU (`getrusage`), the
//! server's CPU (`/proc/<pid>`) and the server's time inside commands (`INFO commandstats`):
//!
//! - `EVALSHA return 1`, and `EVALSHA k × redis.call` (k = 1, 2, 4, 6: `PTTL` of the task's key) —
//!   what each `redis.call` costs the server;
//! - `EVALSHA` of `lib.lua` (the helpers every lockers script starts with) + `return 1`;
//! - each strategy's scripts called raw, and each strategy's cycle; redis-watchdog also with a fixed
//!   lease and with 4 clients of 16 tasks each.
//!
//! With `LOCKBENCH_PIN=1` the whole pass runs again with redis-server pinned to core 0 and this process
//! to core 1 (`taskset`), and both are printed.

#![allow(clippy::unwrap_used)]

mod support;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use lockbench::base::measure::{Bound, Check, RedisCommandStats, full_bench_run, render_checks};
use lockbench::base::proc_stat;
use lockbench_servers::RedisServer;
use lockers::redis::Commands;
use lockers::redis::{
    GuardThreadConfig, RedisGuardThread, RedisWatchdog, RenewalMode, WatchdogConfig,
};
use lockers::{AcquireOptions, Events, Locker};
use support::watchdog_scripts::{Calls, RawCycle};

const TASKS: usize = 64;

const EVALSHA: &str = "EVALSHA return 1";
const LIB_ONLY: &str = "EVALSHA lib.lua prefix + return 1";
const RAW_CYCLE: &str = "watchdog acquire+release scripts, raw";
const RAW_STRING: &str = "guard-thread acquire+release scripts, raw";
const LOCK_CYCLE: &str = "redis-watchdog cycle (watchdog lease)";
const BATCHED_CYCLE: &str = "redis-watchdog-batched cycle";
const GUARD_CYCLE: &str = "redis-guard-thread cycle";
const FIXED_CYCLE: &str = "redis-watchdog cycle (fixed lease)";
const FOUR_CLIENTS: &str = "redis-watchdog cycle, 4 clients × 16 tasks";

/// The measured operation called `name`.
fn by<'a>(ops: &'a [Measured], name: &str) -> &'a Measured {
    ops.iter()
        .find(|m| m.name == name)
        .expect("a measured operation")
}

type BoxFuture = Pin<Box<dyn Future<Output = ()> + Send>>;
/// One operation of task `i`.
type Op = Arc<dyn Fn(usize) -> BoxFuture + Send + Sync>;

/// One measured operation.
struct Measured {
    name: String,
    /// `redis.call`s per operation (for the per-call cost), when known.
    lua_calls: Option<f64>,
    /// Script calls per operation.
    scripts: f64,
    op: Op,
    ops: u64,
    seconds: f64,
    client_cpu: Duration,
    server_cpu: f64,
    command_usec: u64,
}

impl Measured {
    fn new(name: &str, lua_calls: Option<f64>, scripts: f64, op: Op) -> Self {
        Measured {
            name: name.to_owned(),
            lua_calls,
            scripts,
            op,
            ops: 0,
            seconds: 0.0,
            client_cpu: Duration::ZERO,
            server_cpu: 0.0,
            command_usec: 0,
        }
    }

    fn rate(&self) -> f64 {
        self.ops as f64 / self.seconds.max(1e-9)
    }

    /// µs per operation: client CPU, server CPU, server time inside commands.
    fn per_op(&self) -> (f64, f64, f64) {
        let ops = self.ops.max(1) as f64;
        (
            self.client_cpu.as_secs_f64() * 1e6 / ops,
            self.server_cpu * 1e6 / ops,
            self.command_usec as f64 / ops,
        )
    }
}

/// Runs `op` in `TASKS` tasks for `length`; returns completed operations.
async fn slice(op: &Op, length: Duration) -> u64 {
    let done = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let mut tasks = tokio::task::JoinSet::new();
    for task in 0..TASKS {
        let (op, done, stop) = (op.clone(), done.clone(), stop.clone());
        tasks.spawn(async move {
            while !stop.load(Ordering::Relaxed) {
                op(task).await;
                done.fetch_add(1, Ordering::Relaxed);
            }
        });
    }
    tokio::time::sleep(length).await;
    let completed = done.load(Ordering::Relaxed);
    stop.store(true, Ordering::Relaxed);
    while let Some(joined) = tasks.join_next().await {
        joined.unwrap();
    }
    completed
}

fn server_cpu(server: &RedisServer) -> f64 {
    proc_stat::sample(Some(server.pid())).map_or(0.0, |s| s.cpu_seconds)
}

/// `rounds` round-robin passes over every operation, one slice each.
async fn measure(server: &RedisServer, ops: &mut [Measured], rounds: u32, length: Duration) {
    for _ in 0..rounds {
        for m in ops.iter_mut() {
            let stats = RedisCommandStats::read(server.addr()).unwrap();
            let (cpu, srv, started) = (
                proc_stat::process_cpu_time(),
                server_cpu(server),
                Instant::now(),
            );
            let completed = slice(&m.op, length).await;
            // Count only the slice: the time to stop the tasks is not throughput.
            m.seconds += length.as_secs_f64().min(started.elapsed().as_secs_f64());
            m.ops += completed;
            m.client_cpu += proc_stat::process_cpu_time() - cpu;
            m.server_cpu += server_cpu(server) - srv;
            let delta = RedisCommandStats::read(server.addr())
                .unwrap()
                .since(&stats);
            m.command_usec += delta.scripts().usec;
        }
    }
}

fn script_op(connection: &Commands, script: redis::Script) -> Op {
    let (connection, script) = (connection.clone(), Arc::new(script));
    Arc::new(move |task| {
        let (mut connection, script) = (connection.clone(), script.clone());
        Box::pin(async move {
            let _: redis::Value = script
                .key(format!("bench:tp:{{raw{task}}}"))
                .invoke_async(&mut connection)
                .await
                .unwrap();
        })
    })
}

/// A Redis strategy's acquire and release scripts called directly, with the arguments the strategy
/// sends, each task on its own key.
fn raw_cycle(connection: &Commands, calls: Calls) -> Op {
    let cycle = Arc::new(RawCycle::new(calls));
    let connection = connection.clone();
    Arc::new(move |task| {
        let (mut connection, cycle) = (connection.clone(), cycle.clone());
        Box::pin(async move {
            let lock = format!("bench:tp:{{cycle{task}}}");
            cycle
                .run(&mut connection, &lock, &format!("raw:{task}"))
                .await;
        })
    })
}

fn lock_cycle(clients: Vec<Arc<dyn Locker>>, opts: AcquireOptions) -> Op {
    let opts = Arc::new(opts);
    Arc::new(move |task| {
        let (client, opts) = (clients[task % clients.len()].clone(), opts.clone());
        Box::pin(async move {
            let lease = client
                .acquire(&format!("bench:tp:{task}"), &opts)
                .await
                .unwrap();
            lease.release().await.unwrap();
        })
    })
}

async fn client(server: &RedisServer, renewal_mode: RenewalMode) -> Arc<RedisWatchdog> {
    let config = WatchdogConfig {
        renewal_mode,
        ..WatchdogConfig::default()
    };
    Arc::new(
        RedisWatchdog::connect(&server.url(), config, Events::none())
            .await
            .unwrap(),
    )
}

fn print_table(ops: &[Measured]) {
    println!(
        "  {:<44} {:>10} {:>12} {:>12} {:>12} {:>12}",
        "operation (64 tasks)",
        "ops/s",
        "client µs/op",
        "server µs/op",
        "in cmds µs",
        "cmds µs/call"
    );
    for m in ops {
        let (client, server, commands) = m.per_op();
        println!(
            "  {:<44} {:>10.0} {:>12.1} {:>12.1} {:>12.1} {:>12.2}",
            m.name,
            m.rate(),
            client,
            server,
            commands,
            commands / m.scripts
        );
    }
}

/// Least-squares line through (redis.calls, command µs per script call): (intercept, slope).
fn per_call_cost(ops: &[Measured]) -> Option<(f64, f64)> {
    let points: Vec<(f64, f64)> = ops
        .iter()
        .filter(|m| m.scripts == 1.0)
        .filter_map(|m| Some((m.lua_calls?, m.per_op().2)))
        .collect();
    let n = points.len() as f64;
    if n < 2.0 {
        return None;
    }
    let (sx, sy) = points
        .iter()
        .fold((0.0, 0.0), |(sx, sy), (x, y)| (sx + x, sy + y));
    let (mx, my) = (sx / n, sy / n);
    let sxx: f64 = points.iter().map(|(x, _)| (x - mx).powi(2)).sum();
    let sxy: f64 = points.iter().map(|(x, y)| (x - mx) * (y - my)).sum();
    let slope = sxy / sxx;
    Some((my - slope * mx, slope))
}

/// Resets every operation's figures.
fn reset(ops: &mut [Measured]) {
    for m in ops {
        (m.ops, m.seconds, m.client_cpu, m.server_cpu, m.command_usec) =
            (0, 0.0, Duration::ZERO, 0.0, 0);
    }
}

/// The table, the docs/design.md §8 ratios and where the time goes, for one pass; gives the ratios.
fn print_pass(ops: &[Measured]) -> Vec<Check> {
    print_table(ops);
    let ratio = |m: &str, baseline: &str, target: Option<Bound>| Check {
        what: format!("{m} ÷ {baseline}"),
        value: by(ops, m).rate(),
        baseline: by(ops, baseline).rate(),
        unit: "/s",
        target,
    };
    let checks = vec![
        ratio(LOCK_CYCLE, RAW_CYCLE, Some(Bound::AtLeast(0.9))),
        ratio(BATCHED_CYCLE, RAW_CYCLE, Some(Bound::AtLeast(0.9))),
        ratio(GUARD_CYCLE, RAW_STRING, Some(Bound::AtLeast(0.9))),
        ratio(FIXED_CYCLE, RAW_CYCLE, None),
        ratio(FOUR_CLIENTS, RAW_CYCLE, None),
    ];
    println!();
    print!(
        "{}",
        render_checks(
            "throughput at 64 tasks on 64 keys ÷ the same calls sent raw (docs/design.md §8)",
            &checks
        )
    );
    let half_evalsha = by(ops, EVALSHA).rate() / 2.0;
    let context = |m: &Measured| Check {
        what: format!("{} ÷ (EVALSHA rate ÷ 2)", m.name),
        value: m.rate(),
        baseline: half_evalsha,
        unit: "/s",
        target: None,
    };
    let old = [LOCK_CYCLE, FIXED_CYCLE, FOUR_CLIENTS, RAW_CYCLE].map(|n| context(by(ops, n)));
    print!(
        "{}",
        render_checks("context: round 1's ratio against trivial EVALSHA", &old)
    );

    let (client_evalsha, server_evalsha, cmd_evalsha) = by(ops, EVALSHA).per_op();
    let (client_raw, server_raw, cmd_raw) = by(ops, RAW_CYCLE).per_op();
    let (client_lock, server_lock, cmd_lock) = by(ops, LOCK_CYCLE).per_op();
    println!("\nwhere the time goes (µs per operation):");
    println!(
        "  redis-watchdog cycle: client CPU {client_lock:.1}, server CPU {server_lock:.1}, inside commands {cmd_lock:.1}"
    );
    println!(
        "  the same scripts raw: client CPU {client_raw:.1}, server CPU {server_raw:.1}, inside commands {cmd_raw:.1}"
    );
    println!(
        "  2 × EVALSHA return 1: client CPU {:.1}, server CPU {:.1}, inside commands {:.1}",
        2.0 * client_evalsha,
        2.0 * server_evalsha,
        2.0 * cmd_evalsha
    );
    let (_, _, cmd_lib) = by(ops, LIB_ONLY).per_op();
    println!(
        "  defining lib.lua's helpers costs {:.2} µs per script call (lib.lua + return 1 vs return 1)",
        cmd_lib - cmd_evalsha
    );
    if let Some((base, per_call)) = per_call_cost(ops) {
        println!(
            "  script cost in the server ≈ {base:.2} µs + {per_call:.2} µs per redis.call (fit over k = 0…6)"
        );
    }
    checks
}

fn main() {
    let full = full_bench_run();
    let (rounds, length) = if full {
        (3, Duration::from_millis(750))
    } else {
        (1, Duration::from_millis(100))
    };
    let mut recorder = support::Recorder::start(
        "redis_throughput",
        format!(
            "64 tasks on 64 keys; {rounds} round-robin rounds of {} ms per operation",
            length.as_millis()
        ),
    );
    let runtime = support::runtime();
    let server = RedisServer::start().unwrap();
    runtime.block_on(async {
        let one = client(&server, RenewalMode::PerLock).await;
        let batched = client(&server, RenewalMode::BATCHED_DEFAULT).await;
        let guard: Arc<dyn Locker> = Arc::new(
            RedisGuardThread::connect(&server.url(), GuardThreadConfig::default(), Events::none())
                .await
                .unwrap(),
        );
        let mut four: Vec<Arc<dyn Locker>> = Vec::new();
        for _ in 0..4 {
            four.push(client(&server, RenewalMode::PerLock).await);
        }
        let connection = one.connection().commands();
        let k_calls = |k: usize| {
            let body = "redis.call('pttl', KEYS[1])\n".repeat(k);
            redis::Script::new(&format!("{body}return 1"))
        };
        let fixed = AcquireOptions::try_once().fixed(Duration::from_secs(30));
        let mut ops = vec![Measured::new(
            EVALSHA,
            Some(0.0),
            1.0,
            script_op(&connection, k_calls(0)),
        )];
        for k in [1, 2, 4, 6] {
            let name = format!("EVALSHA {k} × redis.call");
            let op = script_op(&connection, k_calls(k));
            ops.push(Measured::new(&name, Some(k as f64), 1.0, op));
        }
        let lib_only = script_op(&connection, support::watchdog_scripts::lib_only());
        let only = |locker: Arc<dyn Locker>| vec![locker];
        let one_dyn: Arc<dyn Locker> = one.clone();
        ops.extend([
            Measured::new(LIB_ONLY, None, 1.0, lib_only),
            Measured::new(
                RAW_CYCLE,
                None,
                2.0,
                raw_cycle(&connection, Calls::Watchdog),
            ),
            Measured::new(
                LOCK_CYCLE,
                None,
                2.0,
                lock_cycle(only(one_dyn.clone()), AcquireOptions::try_once()),
            ),
            Measured::new(
                BATCHED_CYCLE,
                None,
                2.0,
                lock_cycle(only(batched.clone()), AcquireOptions::try_once()),
            ),
            Measured::new(
                RAW_STRING,
                None,
                2.0,
                raw_cycle(&connection, Calls::String),
            ),
            Measured::new(
                GUARD_CYCLE,
                None,
                2.0,
                lock_cycle(only(guard.clone()), AcquireOptions::try_once()),
            ),
            Measured::new(FIXED_CYCLE, None, 2.0, lock_cycle(only(one_dyn), fixed)),
            Measured::new(
                FOUR_CLIENTS,
                None,
                2.0,
                lock_cycle(four.clone(), AcquireOptions::try_once()),
            ),
        ]);
        // Warm-up: scripts loaded, connections open, caches warm.
        measure(&server, &mut ops, 1, Duration::from_millis(100)).await;
        reset(&mut ops);
        let started = Instant::now();
        measure(&server, &mut ops, rounds, length).await;
        println!(
            "\nUNPINNED — redis-server {}: {rounds} round-robin rounds of {} ms per operation ({:.0} s)",
            server.version(),
            length.as_millis(),
            started.elapsed().as_secs_f64()
        );
        println!("{}", support::load_line());
        recorder.pass("unpinned", &print_pass(&ops));

        if support::pin_requested() {
            match support::Pinned::new(&[server.pid()]) {
                Ok(pinned) => {
                    reset(&mut ops);
                    measure(&server, &mut ops, rounds, length).await;
                    println!("\nPINNED — redis-server on core 0, this process on core 1");
                    println!("{}", support::load_line());
                    recorder.pass("pinned", &print_pass(&ops));
                    drop(pinned);
                }
                Err(e) => println!("\npinned pass skipped: {e}"),
            }
        }
        for locker in [one as Arc<dyn Locker>, batched, guard].into_iter().chain(four) {
            locker.close().await;
        }
    });
    recorder.finish();
}
