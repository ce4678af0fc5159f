//! Measurement harness for the Redis strategy variants (`cargo bench -p lockers --bench redis_variants`).
//!
//! Starts its own redis-servers and prints three tables:
//!
//! 1. **Uncontended acquire + release** (watchdog lease, try-once, one key), `redis-watchdog`,
//!    `redis-guard-thread`, `redis-keyspace-naive` and `redis-keyspace-shadow` measured in the same run,
//!    interleaved round by round so they share the machine's noise, each next to 2 × the p50 of a trivial
//!    `EVALSHA` on the same server. The keyspace variants run on their own server (its
//!    `notify-keyspace-events` switched on by them), so their event traffic does not load the others'.
//! 2. **Cost of held locks**: threads and RSS of this process (`/proc/self/status`) and the server's
//!    `connected_clients`, before, while holding 1,000 guard-thread locks (after every renewal thread
//!    has renewed once, so each has its own connection) and after release; the same for 1,000 held
//!    `redis-watchdog` locks (timers on the runtime) for comparison.
//! 3. **Expiry-event delay** at `hz 10` and `hz 100`: the `trigger_lag` of every shadow-variant renewal
//!    (arrival of the shadow key's `expired` event − its nominal deadline), p50/p90/p99/max, from 24
//!    clients holding one lock each for 6 s. Measured twice: with 24 different lock timeouts (450–749 ms,
//!    so the shadow expiries fall at every phase of the server's expiry cycle) and with all at 600 ms
//!    (shadow 400 ms, a multiple of the cycle: each renewal lands just after a cycle and re-arms the
//!    shadow in phase with it).
#![allow(clippy::unwrap_used)]

use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use lockbench_servers::{RedisOptions, RedisServer};
use lockers::redis::{
    GuardThreadConfig, KeyspaceConfig, KeyspaceVariant, RedisGuardThread, RedisKeyspace,
    RedisWatchdog, WatchdogConfig,
};
use lockers::{AcquireOptions, EventLog, Events, LockEvent, Locker};

const WARMUP: Duration = Duration::from_millis(500);
const RUN: Duration = Duration::from_secs(5);
const HELD: usize = 1_000;

fn histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 60_000_000, 3).unwrap()
}

fn micros(d: Duration) -> u64 {
    u64::try_from(d.as_micros()).unwrap_or(u64::MAX).max(1)
}

/// One `EVALSHA` of `return 1` on a fresh multiplexed connection's clone.
async fn evalsha(connection: &mut redis::aio::ConnectionManager, script: &redis::Script) {
    let one: i64 = script.invoke_async(connection).await.unwrap();
    assert_eq!(one, 1);
}

async fn cycle(locker: &dyn Locker, key: &str) {
    let lease = locker
        .acquire(key, &AcquireOptions::try_once())
        .await
        .unwrap();
    lease.release().await.unwrap();
}

struct Measured {
    name: String,
    lock: Histogram<u64>,
    /// Index into the baselines.
    baseline: usize,
}

async fn latency(server_a: &RedisServer, server_b: &RedisServer) {
    let watchdog =
        RedisWatchdog::connect(&server_a.url(), WatchdogConfig::default(), Events::none())
            .await
            .unwrap();
    let guard = RedisGuardThread::connect(
        &server_a.url(),
        GuardThreadConfig::default(),
        Events::none(),
    )
    .await
    .unwrap();
    let naive = RedisKeyspace::connect(
        &server_b.url(),
        KeyspaceVariant::Naive,
        KeyspaceConfig::default(),
        Events::none(),
    )
    .await
    .unwrap();
    let shadow = RedisKeyspace::connect(
        &server_b.url(),
        KeyspaceVariant::Shadow,
        KeyspaceConfig::default(),
        Events::none(),
    )
    .await
    .unwrap();
    let lockers: [(&dyn Locker, usize); 4] =
        [(&watchdog, 0), (&guard, 0), (&naive, 1), (&shadow, 1)];
    let mut baselines = [
        (watchdog.connection().commands(), histogram()),
        (naive.connection().commands(), histogram()),
    ];
    let script = redis::Script::new("return 1");
    let mut measured: Vec<Measured> = lockers
        .iter()
        .map(|(l, baseline)| Measured {
            name: l.id().to_owned(),
            lock: histogram(),
            baseline: *baseline,
        })
        .collect();
    let key = "bench:variants";
    let warm_until = Instant::now() + WARMUP;
    while Instant::now() < warm_until {
        for (locker, _) in &lockers {
            cycle(*locker, key).await;
        }
        for (connection, _) in &mut baselines {
            evalsha(connection, &script).await;
        }
    }
    let until = Instant::now() + RUN;
    while Instant::now() < until {
        for ((locker, _), m) in lockers.iter().zip(&mut measured) {
            let start = Instant::now();
            cycle(*locker, key).await;
            m.lock.record(micros(start.elapsed())).unwrap();
        }
        for (connection, h) in &mut baselines {
            for _ in 0..2 {
                let start = Instant::now();
                evalsha(connection, &script).await;
                h.record(micros(start.elapsed())).unwrap();
            }
        }
    }
    println!("\n1. uncontended acquire+release (watchdog lease), interleaved, same run");
    println!(
        "{:<24} {:>6} {:>9} {:>9} {:>14} {:>12}",
        "strategy", "n", "p50 µs", "p99 µs", "2×EVALSHA p50", "p50 / base"
    );
    for m in &measured {
        let base = 2 * baselines[m.baseline].1.value_at_quantile(0.5);
        let p50 = m.lock.value_at_quantile(0.5);
        println!(
            "{:<24} {:>6} {:>9} {:>9} {:>11} µs {:>12.2}",
            m.name,
            m.lock.len(),
            p50,
            m.lock.value_at_quantile(0.99),
            base,
            p50 as f64 / base as f64
        );
    }
    println!(
        "(watchdog and guard-thread on server A; keyspace variants on server B, with notifications on)"
    );
    for l in [&naive, &shadow] {
        l.close().await;
    }
    watchdog.close().await;
    guard.close().await;
}

/// `Threads` and `VmRSS` (kB) of this process.
fn process_cost() -> (u64, u64) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let field = |name: &str| -> u64 {
        let line = status.lines().find(|l| l.starts_with(name)).unwrap();
        line.split_whitespace().nth(1).unwrap().parse().unwrap()
    };
    (field("Threads:"), field("VmRSS:"))
}

fn connected_clients(server: &RedisServer) -> u64 {
    let info = server.command(&["INFO", "clients"]).unwrap();
    info.lines()
        .find_map(|l| l.strip_prefix("connected_clients:"))
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

fn print_cost(label: &str, server: &RedisServer, since: (u64, u64)) {
    let (threads, rss) = process_cost();
    println!(
        "{label:<44} {threads:>8} {rss:>10} {:>+10} {:>9}",
        i128::from(rss) - i128::from(since.1),
        connected_clients(server)
    );
}

async fn held_cost(server: &RedisServer) {
    println!("\n2. cost of {HELD} held locks (this process; server connected_clients)");
    println!(
        "{:<44} {:>8} {:>10} {:>10} {:>9}",
        "moment", "Threads", "VmRSS kB", "Δ kB", "clients"
    );
    let timeout = Duration::from_secs(3);
    let config = GuardThreadConfig {
        watchdog_timeout: timeout,
        ..GuardThreadConfig::default()
    };
    let guard = RedisGuardThread::connect(&server.url(), config, Events::none())
        .await
        .unwrap();
    let before = process_cost();
    print_cost("guard-thread: before", server, before);
    let mut leases = Vec::with_capacity(HELD);
    for i in 0..HELD {
        let key = format!("bench:held:{i}");
        leases.push(
            guard
                .acquire(&key, &AcquireOptions::try_once())
                .await
                .unwrap(),
        );
    }
    print_cost("guard-thread: 1000 held, threads started", server, before);
    // Every thread renews at timeout/3 = 1 s, opening its own connection first.
    tokio::time::sleep(timeout / 3 + Duration::from_millis(700)).await;
    assert_eq!(guard.live_threads(), HELD);
    print_cost("guard-thread: 1000 held, each renewed once", server, before);
    for lease in leases {
        lease.release().await.unwrap();
    }
    let until = Instant::now() + Duration::from_secs(5);
    while guard.live_threads() > 0 && Instant::now() < until {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    print_cost("guard-thread: released", server, before);
    guard.close().await;

    let config = WatchdogConfig {
        watchdog_timeout: timeout,
        ..WatchdogConfig::default()
    };
    let watchdog = RedisWatchdog::connect(&server.url(), config, Events::none())
        .await
        .unwrap();
    let before = process_cost();
    print_cost("watchdog: before", server, before);
    let mut leases = Vec::with_capacity(HELD);
    for i in 0..HELD {
        let key = format!("bench:held-wd:{i}");
        leases.push(
            watchdog
                .acquire(&key, &AcquireOptions::try_once())
                .await
                .unwrap(),
        );
    }
    tokio::time::sleep(timeout / 3 + Duration::from_millis(700)).await;
    print_cost("watchdog: 1000 held, each renewed once", server, before);
    for lease in leases {
        lease.release().await.unwrap();
    }
    print_cost("watchdog: released", server, before);
    watchdog.close().await;
}

/// Holds one shadow-variant lock per timeout in `timeouts`, each on its own client, for `hold`; returns
/// every renewal's trigger lag and how many of the leases were lost (an event later than the lock's
/// remaining third).
async fn trigger_lags(
    server: &RedisServer,
    timeouts: &[Duration],
    hold: Duration,
) -> (Vec<Duration>, usize) {
    let log = EventLog::new();
    let mut clients = Vec::new();
    for (i, timeout) in timeouts.iter().enumerate() {
        let config = KeyspaceConfig {
            watchdog_timeout: *timeout,
            ..KeyspaceConfig::default()
        };
        let client = RedisKeyspace::connect(
            &server.url(),
            KeyspaceVariant::Shadow,
            config,
            Events::to(log.clone()),
        )
        .await
        .unwrap();
        let lease = client
            .acquire(&format!("bench:lag:{i}"), &AcquireOptions::try_once())
            .await
            .unwrap();
        clients.push((client, lease));
        // Spread the acquires over ~100 ms, so they start at different phases too.
        tokio::time::sleep(Duration::from_millis(4)).await;
    }
    tokio::time::sleep(hold).await;
    let mut lost = 0;
    for (client, lease) in clients {
        if lease.is_held() {
            lease.release().await.unwrap();
        } else {
            lost += 1;
        }
        client.close().await;
    }
    let lags = log
        .snapshot()
        .into_iter()
        .filter_map(|e| match e {
            LockEvent::Renewed { trigger_lag, .. } => trigger_lag,
            _ => None,
        })
        .collect();
    (lags, lost)
}

fn print_lags(label: &str, (mut lags, lost): (Vec<Duration>, usize)) {
    lags.sort();
    let q = |q: f64| lags[((lags.len() - 1) as f64 * q).round() as usize].as_secs_f64() * 1e3;
    println!(
        "{label:<40} {:>6} {:>8.1} {:>8.1} {:>8.1} {:>8.1} {:>5}",
        lags.len(),
        q(0.5),
        q(0.9),
        q(0.99),
        q(1.0),
        lost
    );
}

async fn expiry_delay() {
    let start = |hz| {
        RedisServer::start_with(RedisOptions {
            hz: Some(hz),
            ..RedisOptions::default()
        })
        .unwrap()
    };
    let (hz10, hz100) = (start(10), start(100));
    let hold = Duration::from_secs(6);
    let spread: Vec<Duration> = (0..24)
        .map(|i| Duration::from_millis(450 + i * 13))
        .collect();
    let same = vec![Duration::from_millis(600); 24];
    println!("\n3. expiry-event delay = shadow renewal trigger_lag (ms), 24 locks held 6 s each");
    println!(
        "{:<40} {:>6} {:>8} {:>8} {:>8} {:>8} {:>5}",
        "server, lock timeouts", "n", "p50", "p90", "p99", "max", "lost"
    );
    for (label, timeouts) in [
        ("timeouts 450–749 ms (every phase)", &spread),
        ("all 600 ms (shadow 400 ms)", &same),
    ] {
        let (a, b) = tokio::join!(
            trigger_lags(&hz10, timeouts, hold),
            trigger_lags(&hz100, timeouts, hold)
        );
        print_lags(&format!("hz 10, {label}"), a);
        print_lags(&format!("hz 100, {label}"), b);
    }
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let (server_a, server_b) = (RedisServer::start().unwrap(), RedisServer::start().unwrap());
    println!("redis-server {}", server_a.version());
    runtime.block_on(async {
        latency(&server_a, &server_b).await;
        held_cost(&server_a).await;
        expiry_delay().await;
    });
}
