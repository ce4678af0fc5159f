//! `cargo bench -p lockbench --bench redis_throughput`: `redis-watchdog` throughput on independent keys
//! against the raw `EVALSHA` rate ÷ 2 at the same concurrency (DESIGN §8 target: ≥ 0.7), and where the
//! time goes, against a real local redis-server this bench starts.
//!
//! 64 tasks share one client (as Redisson shares one client per process); each works on its own key.
//! Every operation below runs for a slice, round-robin with the others for several rounds, so all share
//! the machine's noise; per operation the bench records the rate and, per operation, the client's CPU
//! (`getrusage`), the server's CPU (`/proc/<pid>`) and the server's time inside commands (`INFO
//! commandstats`):
//!
//! - `EVALSHA return 1` — the baseline;
//! - `EVALSHA k × redis.call` (k = 1, 2, 4, 6: `PTTL` of the task's key) — what each `redis.call`
//!   costs the server;
//! - `EVALSHA` of `lib.lua` (the helpers every lockers script starts with) + `return 1` — what
//!   defining the helpers costs on every call;
//! - the acquire + release scripts called raw (no strategy client around them) — the ceiling any client
//!   of these scripts can reach;
//! - the `redis-watchdog` cycle (watchdog lease), the same with a fixed lease (no renewal machinery),
//!   and with 4 clients of 16 tasks each (a connection per 16 tasks).
//!
//! Ratios, ceilings and the per-call cost are printed after the table.
#![allow(clippy::unwrap_used)]

mod support;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use lockbench::measure::{Bound, Check, RedisCommandStats, full_bench_run, render_checks};
use lockbench::proc_stat;
use lockbench_servers::RedisServer;
use lockers::redis::Commands;
use lockers::redis::{RedisWatchdog, WatchdogConfig};
use lockers::{AcquireOptions, Events, Locker};

const TASKS: usize = 64;

const EVALSHA: &str = "EVALSHA return 1";
const LIB_ONLY: &str = "EVALSHA lib.lua prefix + return 1";
const RAW_CYCLE: &str = "acquire+release scripts, raw";
const LOCK_CYCLE: &str = "redis-watchdog cycle (watchdog lease)";
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

/// The acquire and release scripts called directly, as the strategy would call them.
fn raw_cycle(connection: &Commands) -> Op {
    let acquire = Arc::new(support::watchdog_scripts::acquire());
    let release = Arc::new(support::watchdog_scripts::release());
    let connection = connection.clone();
    Arc::new(move |task| {
        let (mut connection, acquire, release) =
            (connection.clone(), acquire.clone(), release.clone());
        Box::pin(async move {
            let (lock, fence) = (
                format!("bench:tp:{{cycle{task}}}"),
                format!("bench:tp:{{cycle{task}}}:fence"),
            );
            let owner = format!("raw:{task}");
            let (granted, _token): (i64, i64) = acquire
                .key(&lock)
                .key(&fence)
                .arg(30_000)
                .arg(&owner)
                .invoke_async(&mut connection)
                .await
                .unwrap();
            assert_eq!(granted, 1);
            let freed: i64 = release
                .key(&lock)
                .arg(30_000)
                .arg(&owner)
                .arg(format!("{lock}:unlock"))
                .arg("0")
                .invoke_async(&mut connection)
                .await
                .unwrap();
            assert_eq!(freed, 1);
        })
    })
}

fn lock_cycle(clients: Vec<Arc<RedisWatchdog>>, opts: AcquireOptions) -> Op {
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

async fn client(server: &RedisServer) -> Arc<RedisWatchdog> {
    Arc::new(
        RedisWatchdog::connect(&server.url(), WatchdogConfig::default(), Events::none())
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

fn main() {
    let full = full_bench_run();
    let (rounds, length) = if full {
        (3, Duration::from_millis(750))
    } else {
        (1, Duration::from_millis(100))
    };
    let runtime = support::runtime();
    let server = RedisServer::start().unwrap();
    runtime.block_on(async {
        let one = client(&server).await;
        let mut four = Vec::new();
        for _ in 0..4 {
            four.push(client(&server).await);
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
        ops.extend([
            Measured::new(LIB_ONLY, None, 1.0, lib_only),
            Measured::new(RAW_CYCLE, Some(6.0), 2.0, raw_cycle(&connection)),
            Measured::new(
                LOCK_CYCLE,
                Some(6.0),
                2.0,
                lock_cycle(vec![one.clone()], AcquireOptions::try_once()),
            ),
            Measured::new(
                FIXED_CYCLE,
                Some(6.0),
                2.0,
                lock_cycle(vec![one.clone()], fixed),
            ),
            Measured::new(
                FOUR_CLIENTS,
                Some(6.0),
                2.0,
                lock_cycle(four.clone(), AcquireOptions::try_once()),
            ),
        ]);
        // Warm-up: scripts loaded, connections open, caches warm.
        measure(&server, &mut ops, 1, Duration::from_millis(100)).await;
        for m in &mut ops {
            (m.ops, m.seconds, m.client_cpu, m.server_cpu, m.command_usec) =
                (0, 0.0, Duration::ZERO, 0.0, 0);
        }
        let started = Instant::now();
        measure(&server, &mut ops, rounds, length).await;
        println!(
            "redis-server {}: {rounds} round-robin rounds of {} ms per operation ({:.0} s)",
            server.version(),
            length.as_millis(),
            started.elapsed().as_secs_f64()
        );
        println!("{}", support::load_line());
        print_table(&ops);

        let half_evalsha = by(&ops, EVALSHA).rate() / 2.0;
        let check = |m: &Measured, target: Option<Bound>| Check {
            what: format!("{} ÷ (EVALSHA rate ÷ 2)", m.name),
            value: m.rate(),
            baseline: half_evalsha,
            unit: "/s",
            target,
        };
        let checks = vec![
            check(by(&ops, LOCK_CYCLE), Some(Bound::AtLeast(0.7))),
            check(by(&ops, FIXED_CYCLE), None),
            check(by(&ops, FOUR_CLIENTS), None),
            check(by(&ops, RAW_CYCLE), None),
        ];
        println!();
        print!("{}", render_checks("throughput on 64 independent keys (DESIGN §8)", &checks));

        let (client_evalsha, server_evalsha, cmd_evalsha) = by(&ops, EVALSHA).per_op();
        let (client_raw, server_raw, cmd_raw) = by(&ops, RAW_CYCLE).per_op();
        let (client_lock, server_lock, cmd_lock) = by(&ops, LOCK_CYCLE).per_op();
        println!("\nwhere the time goes (µs per lock cycle vs per 2 × EVALSHA):");
        println!(
            "  server CPU {server_lock:.1} vs {:.1}; inside commands {cmd_lock:.1} vs {:.1}; client CPU {client_lock:.1} vs {:.1}",
            2.0 * server_evalsha,
            2.0 * cmd_evalsha,
            2.0 * client_evalsha
        );
        println!(
            "  raw scripts (no strategy client): server CPU {server_raw:.1}, inside commands {cmd_raw:.1}, client CPU {client_raw:.1}"
        );
        let (_, _, cmd_lib) = by(&ops, LIB_ONLY).per_op();
        println!(
            "  defining lib.lua's helpers costs {:.2} µs per script call (lib.lua + return 1 vs return 1)",
            cmd_lib - cmd_evalsha
        );
        if let Some((base, per_call)) = per_call_cost(&ops) {
            println!(
                "  script cost in the server ≈ {base:.2} µs + {per_call:.2} µs per redis.call (fit over k = 0…6)"
            );
        }
        let server_ceiling = 2.0 * server_evalsha / server_raw.max(1e-9);
        let machine_ceiling =
            2.0 * (server_evalsha + client_evalsha) / (server_raw + client_raw).max(1e-9);
        println!(
            "  ceiling of the ratio for these scripts: {server_ceiling:.2} if the server's core is the limit, \
             {machine_ceiling:.2} if both cores are (server + client CPU per op, with the thinnest client)"
        );
        one.close().await;
        for c in four {
            c.close().await;
        }
    });
}
