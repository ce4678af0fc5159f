//! `cargo bench -p lockbench --bench renewal`: what renewing watchdog locks costs, against a real local
//! redis-server this bench starts.
//!
//! 1. **The renewal script** (criterion): the `redis-watchdog` check-and-extend of one lock, the batched
//!    script renewing 10, 100 and 1000 locks in one call, and — for comparison — 1000 single renewals in
//!    flight at once on one connection (what per-lock timers send when their renewals fall together).
//!    Criterion reports time per call and locks per second; the server's own time per call and per lock
//!    (`INFO commandstats`) follows.
//! 2. **The renewal scheduler at scale**: one client holding 1k, 10k and 100k locks, per-lock timers
//!    (`redis-watchdog`) and batched (`redis-watchdog-batched`), through `lockbench::commands::scale` (the code of
//!    `lockbench scale`): client CPU per second of holding, server renew calls per second, server CPU,
//!    then the docs/design.md §8 checks — batched renew calls/s ≤ held ÷ (timeout/3) ÷ batch size, and 100k held
//!    locks with the client under 10% of a core — with a 3 s watchdog timeout (a renewal per lock per
//!    second), then batched at 100k with Redisson's default 30 s.
//!
//! `cargo test --benches` (no `--bench` flag) runs each criterion bench once and the scheduler at 100
//! locks only.
#![allow(clippy::unwrap_used)]

mod support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput};
use lockbench::backends::{Backends, GivenAddresses, ServerKind};
use lockbench::base::measure::{RedisCommandStats, full_bench_run};
use lockbench::commands::scale::{self, Isolation, ScaleSpec};
use lockbench::strategies;
use lockbench_servers::RedisServer;
use lockers::redis::Commands;
use lockers::redis::{RedisWatchdog, WatchdogConfig};
use lockers::{AcquireOptions, Events, Locker, OwnerId};
use tokio::runtime::Runtime;

const HELD: usize = 1000;
const TTL_MS: u64 = 600_000;
const CLIENT_ID: &str = "renew-bench";
const OWNER: &str = "holder";

/// `HELD` locks held by one owner on fixed 10-minute leases (nothing else renews them).
struct Held {
    locker: RedisWatchdog,
    keys: Vec<String>,
    owner_field: String,
}

async fn hold(server: &RedisServer) -> Held {
    let config = WatchdogConfig {
        client_id: CLIENT_ID.into(),
        ..WatchdogConfig::default()
    };
    let locker = RedisWatchdog::connect(&server.url(), config, Events::none())
        .await
        .unwrap();
    let opts = AcquireOptions::try_once()
        .fixed(Duration::from_millis(TTL_MS))
        .owner(OwnerId::new(OWNER));
    let mut keys = Vec::with_capacity(HELD);
    for i in 0..HELD {
        let name = format!("renew:{i}");
        // Fixed leases are never renewed by the client; dropping the lease would release it.
        std::mem::forget(locker.acquire(&name, &opts).await.unwrap());
        keys.push(locker.lock_key(&name));
    }
    Held {
        locker,
        keys,
        owner_field: format!("{CLIENT_ID}:{OWNER}"),
    }
}

async fn renew_one(connection: &mut Commands, script: &redis::Script, held: &Held, i: usize) {
    let left: i64 = script
        .key(&held.keys[i % HELD])
        .arg(TTL_MS)
        .arg(&held.owner_field)
        .invoke_async(connection)
        .await
        .unwrap();
    assert!(left != 0, "the lock must still be held");
}

async fn renew_batch(connection: &mut Commands, script: &redis::Script, held: &Held, n: usize) {
    let mut call = script.prepare_invoke();
    for key in &held.keys[..n] {
        call.key(key);
    }
    call.arg(TTL_MS);
    for _ in 0..n {
        call.arg(&held.owner_field);
    }
    let answers: Vec<i64> = call.invoke_async(connection).await.unwrap();
    assert!(answers.len() == n && answers.iter().all(|a| *a != 0));
}

/// Server time per call and per lock of what ran between two readings.
struct ServerTime {
    what: String,
    locks_per_call: usize,
    evalsha: lockbench::base::measure::CommandStat,
}

fn bench_scripts(
    c: &mut Criterion,
    runtime: &Runtime,
    server: &RedisServer,
    held: &Arc<Held>,
) -> Vec<ServerTime> {
    let single = Arc::new(support::watchdog_scripts::renew());
    let batch = Arc::new(support::watchdog_scripts::renew_batch());
    let connection = held.locker.connection().commands();
    let mut times = Vec::new();
    let mut group = c.benchmark_group("renew script");
    let mut measure = |name: String,
                       locks: usize,
                       run: &mut dyn FnMut(
        &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    )| {
        let before = RedisCommandStats::read(server.addr()).unwrap();
        run(&mut group);
        let delta = RedisCommandStats::read(server.addr())
            .unwrap()
            .since(&before);
        times.push(ServerTime {
            what: name,
            locks_per_call: locks,
            evalsha: delta.get("evalsha"),
        });
    };
    measure("1 lock per call".into(), 1, &mut |group| {
        group.throughput(Throughput::Elements(1));
        group.bench_function("single", |b| {
            let (held, script, connection) = (held.clone(), single.clone(), connection.clone());
            let mut i = 0;
            b.to_async(runtime).iter(|| {
                i += 1;
                let (held, script, mut connection) =
                    (held.clone(), script.clone(), connection.clone());
                async move { renew_one(&mut connection, &script, &held, i).await }
            });
        });
    });
    for n in [10, 100, HELD] {
        measure(format!("{n} locks per call (batch)"), n, &mut |group| {
            group.throughput(Throughput::Elements(n as u64));
            group.bench_function(format!("batch/{n}"), |b| {
                let (held, script, connection) = (held.clone(), batch.clone(), connection.clone());
                b.to_async(runtime).iter(|| {
                    let (held, script, mut connection) =
                        (held.clone(), script.clone(), connection.clone());
                    async move { renew_batch(&mut connection, &script, &held, n).await }
                });
            });
        });
    }
    measure(
        format!("{HELD} single calls in flight at once"),
        1,
        &mut |group| {
            group.throughput(Throughput::Elements(HELD as u64));
            group.bench_function(format!("single x{HELD} concurrent"), |b| {
                let (held, script, connection) = (held.clone(), single.clone(), connection.clone());
                b.to_async(runtime).iter(|| {
                    let (held, script, connection) =
                        (held.clone(), script.clone(), connection.clone());
                    async move {
                        let mut calls = tokio::task::JoinSet::new();
                        for i in 0..HELD {
                            let (held, script, mut connection) =
                                (held.clone(), script.clone(), connection.clone());
                            calls.spawn(async move {
                                renew_one(&mut connection, &script, &held, i).await
                            });
                        }
                        while let Some(done) = calls.join_next().await {
                            done.unwrap();
                        }
                    }
                });
            });
        },
    );
    group.finish();
    times
}

fn print_server_times(times: &[ServerTime]) {
    println!(
        "\nserver time in the renew scripts (INFO commandstats, every call of each bench above)"
    );
    println!(
        "  {:<36} {:>10} {:>14} {:>14}",
        "bench", "calls", "µs per call", "µs per lock"
    );
    for t in times {
        let per_call = t.evalsha.usec_per_call();
        println!(
            "  {:<36} {:>10} {:>14.2} {:>14.3}",
            t.what,
            t.evalsha.calls,
            per_call,
            per_call / t.locks_per_call as f64
        );
    }
}

/// One client per mode holding `steps` locks with the given watchdog timeout; prints the table and the
/// docs/design.md §8 checks.
async fn scheduler_cost(
    backends: &Backends,
    modes: &[&str],
    steps: Vec<u64>,
    timeout: Duration,
    hold: Duration,
) {
    let spec = ScaleSpec {
        strategies: modes.iter().filter_map(|id| strategies::find(id)).collect(),
        steps,
        hold,
        watchdog_timeout: timeout,
        concurrency: 64,
        step_budget: Duration::from_secs(60),
        max_threads: 10_000,
        max_rss_bytes: 4 << 30,
        // Each mode in its own process, so its RSS and threads are its own.
        isolation: Isolation::ChildProcess(env!("CARGO_BIN_EXE_lockbench").into()),
        // Batched renewal's client-CPU target is its ratio to the raw sender in the same run.
        yardstick: true,
        // lockbench's own rows need none.
        warm_up: Duration::ZERO,
        passes: 1,
    };
    let started = Instant::now();
    let series = scale::measure(&spec, backends).await;
    let results = lockbench_reports::scale::ScaleResults {
        schema_version: lockbench_reports::scale::SCALE_SCHEMA_VERSION,
        complete: true,
        started_at: String::new(),
        finished_at: String::new(),
        settings: spec.to_model(),
        environment: lockbench::base::environment::collect(backends.infos()),
        strategies: series,
    };
    println!(
        "\nrenewal scheduler: one client holding {:?} locks, watchdog timeout {} s ({:.0} s)",
        spec.steps,
        timeout.as_secs(),
        started.elapsed().as_secs_f64()
    );
    println!("{}", support::load_line());
    print!("{}", scale::render(&results));
}

/// The scheduler at 1k, 10k and 100k held locks with a 3 s timeout (100k renewals/s at the top), per-lock
/// timers vs batched, then batched at 100k with Redisson's default 30 s timeout. A `cargo test` smoke
/// pass holds 100 locks for a second.
async fn scheduler_costs() {
    use lockers::redis::watchdog::{BATCHED_ID, ID};
    let needed = [ServerKind::Redis].into_iter().collect();
    let backends = Backends::prepare(
        &needed,
        &GivenAddresses::default(),
        strategies::check_address,
    )
    .await
    .unwrap();
    let second = Duration::from_secs(1);
    if !full_bench_run() {
        scheduler_cost(&backends, &[ID, BATCHED_ID], vec![100], 3 * second, second).await;
        return;
    }
    let steps = vec![1000, 10_000, 100_000];
    scheduler_cost(&backends, &[ID, BATCHED_ID], steps, 3 * second, 5 * second).await;
    scheduler_cost(
        &backends,
        &[BATCHED_ID],
        vec![100_000],
        30 * second,
        20 * second,
    )
    .await;
}

fn main() {
    let runtime = support::runtime();
    let server = RedisServer::start().unwrap();
    let held = Arc::new(runtime.block_on(hold(&server)));
    let mut criterion = support::criterion();
    let times = bench_scripts(&mut criterion, &runtime, &server, &held);
    criterion.final_summary();
    print_server_times(&times);
    runtime.block_on(async {
        held.locker.close().await;
        scheduler_costs().await;
    });
}
