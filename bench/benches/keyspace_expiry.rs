//! `cargo bench -p lockbench --bench keyspace_expiry`: how late Redis delivers the `expired` events
//! that drive `redis-keyspace-shadow` renewal, at `hz 10` (Redis's default) and `hz 100`, on real local
//! redis-servers this bench starts.
//!
//! The delay is the `trigger_lag` of every shadow renewal (arrival of the shadow key's `expired` event −
//! its nominal deadline), from 24 clients holding one lock each for 6 s, reported as p50/p90/p99/max.
//! Measured twice: with 24 different lock timeouts (450–749 ms, so the shadow expiries fall at every
//! phase of the server's expiry cycle) and with all at 600 ms (shadow 400 ms, a multiple of the cycle:
//! each renewal lands just after a cycle and re-arms the shadow in phase with it). `lost` counts leases
//! whose event came too late to save them.
#![allow(clippy::unwrap_used)]

mod support;

use std::time::Duration;

use lockbench::base::measure::{Latency, full_bench_run};
use lockbench_servers::{RedisOptions, RedisServer};
use lockers::redis::{KeyspaceConfig, KeyspaceVariant, RedisKeyspace};
use lockers::{AcquireOptions, EventLog, Events, LockEvent, Locker, Renewal};

/// Holds one shadow-variant lock per timeout in `timeouts`, each on its own client, for `hold`; returns
/// every renewal's trigger lag and how many of the leases were lost.
async fn trigger_lags(
    server: &RedisServer,
    timeouts: &[Duration],
    hold: Duration,
) -> (Latency, usize) {
    let log = EventLog::new();
    let mut clients = Vec::new();
    for (i, timeout) in timeouts.iter().enumerate() {
        let config = KeyspaceConfig {
            renewal: Renewal::new(*timeout),
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
    let mut lags = Latency::new();
    for event in log.snapshot() {
        if let LockEvent::Renewed {
            trigger_lag: Some(lag),
            ..
        } = event
        {
            lags.record(lag);
        }
    }
    (lags, lost)
}

fn print_lags(label: &str, (lags, lost): (Latency, usize)) {
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    println!(
        "  {label:<40} {:>6} {:>8.1} {:>8.1} {:>8.1} {:>8.1} {:>5}",
        lags.count(),
        ms(lags.p50()),
        ms(lags.quantile(0.9)),
        ms(lags.p99()),
        ms(lags.max()),
        lost
    );
}

fn main() {
    let hold = Duration::from_secs(if full_bench_run() { 6 } else { 1 });
    let start = |hz| {
        RedisServer::start_with(RedisOptions {
            hz: Some(hz),
            ..RedisOptions::default()
        })
        .unwrap()
    };
    let (hz10, hz100) = (start(10), start(100));
    let spread: Vec<Duration> = (0..24)
        .map(|i| Duration::from_millis(450 + i * 13))
        .collect();
    let same = vec![Duration::from_millis(600); 24];
    println!(
        "expiry-event delay = shadow renewal trigger_lag (ms), 24 locks held {} s each, redis-server {}",
        hold.as_secs(),
        hz10.version()
    );
    println!("{}", support::load_line());
    println!(
        "  {:<40} {:>6} {:>8} {:>8} {:>8} {:>8} {:>5}",
        "server, lock timeouts", "n", "p50", "p90", "p99", "max", "lost"
    );
    support::runtime().block_on(async {
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
    });
}
