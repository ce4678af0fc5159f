//! Durable fencing for the single-Redis strategies: the fencing counter is an `INCR` on a key, so a
//! server restart without persistence starts it again from 1 (tokens go backwards), while with
//! `appendonly yes` + `appendfsync always` it survives. Tested on `redis-watchdog`, on Redis and on
//! Valkey (`on_valkey::…`); the ignored
//! `fsync_always_cost` prints what the durability costs (run it with `--ignored --nocapture`).
#![allow(clippy::unwrap_used)]

use std::path::PathBuf;
use std::time::{Duration, Instant};

use lockbench_servers::{Durability, OnRestart, RedisNode, RedisNodeOptions, RedisOptions};
use lockers::redis::{RedisWatchdog, WatchdogConfig};
use lockers::{AcquireOptions, Events, FencingToken, Locker};

#[path = "support/redis.rs"]
mod support;

use support::{Flavor, on_each_flavor};

on_each_flavor!(
    tokens_go_backwards_after_a_restart_without_persistence,
    tokens_keep_increasing_with_aof_fsync_always,
);

fn config() -> WatchdogConfig {
    WatchdogConfig {
        renewal: lockers::Renewal::new(Duration::from_secs(2)),
        key_prefix: "lbtest:".into(),
        ..WatchdogConfig::default()
    }
}

/// Takes and releases `key` `n` times; the tokens seen.
async fn cycles(client: &RedisWatchdog, key: &str, n: usize) -> Vec<FencingToken> {
    let mut tokens = Vec::new();
    for _ in 0..n {
        // The first call after a restart meets the broken connection (a Backend error) while the
        // connection re-establishes itself: retried, as a user would, for up to 2 s.
        let give_up = Instant::now() + Duration::from_secs(2);
        let lease = loop {
            match client.acquire(key, &AcquireOptions::try_once()).await {
                Ok(lease) => break lease,
                Err(e) if e.kind() == "backend" && Instant::now() < give_up => {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
                Err(e) => panic!("acquire failed: {e}"),
            }
        };
        tokens.push(lease.token());
        lease.release().await.unwrap();
    }
    tokens
}

/// The tokens before and after a restart of a node with `durability` that keeps its data dir.
async fn tokens_around_restart(
    durability: Durability,
    flavor: Flavor,
) -> (Vec<FencingToken>, Vec<FencingToken>) {
    let node = RedisNode::start(RedisNodeOptions {
        durability,
        redis: RedisOptions::of(flavor),
        ..RedisNodeOptions::default()
    })
    .unwrap();
    let client = RedisWatchdog::connect(&node.url(), config(), Events::none())
        .await
        .unwrap();
    let before = cycles(&client, "fenced", 3).await;
    node.restart(OnRestart::KeepData).unwrap();
    let after = cycles(&client, "fenced", 2).await;
    (before, after)
}

async fn tokens_go_backwards_after_a_restart_without_persistence(flavor: Flavor) {
    let (before, after) = tokens_around_restart(Durability::None, flavor).await;
    assert_eq!(before, [1, 2, 3].map(FencingToken));
    assert!(
        after[0] < before[2],
        "expected a token regression, got {before:?} then {after:?}"
    );
    assert_eq!(after[0], FencingToken(1), "the counter starts again");
}

async fn tokens_keep_increasing_with_aof_fsync_always(flavor: Flavor) {
    let (before, after) = tokens_around_restart(Durability::AofAlways, flavor).await;
    assert_eq!(before, [1, 2, 3].map(FencingToken));
    assert_eq!(after, [4, 5].map(FencingToken));
}

/// Acquire+release cycles of one client on one key for `run`: the p50 of a cycle and cycles/s.
async fn measure(client: &RedisWatchdog, run: Duration) -> (Duration, f64) {
    let once = AcquireOptions::try_once();
    let mut samples = Vec::new();
    let began = Instant::now();
    while began.elapsed() < run && samples.len() < 200_000 {
        let start = Instant::now();
        let lease = client.acquire("cost", &once).await.unwrap();
        lease.release().await.unwrap();
        samples.push(start.elapsed());
    }
    let rate = samples.len() as f64 / began.elapsed().as_secs_f64();
    samples.sort_unstable();
    (samples[samples.len() / 2], rate)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a measurement: cargo test -p lockers --test redis_durable_fencing -- --ignored --nocapture"]
async fn fsync_always_cost() {
    let disk = std::env::temp_dir();
    let cases: [(&str, Durability, Option<PathBuf>); 4] = [
        ("no persistence, /dev/shm", Durability::None, None),
        (
            "AOF fsync always, /dev/shm (tmpfs)",
            Durability::AofAlways,
            None,
        ),
        ("no persistence, disk", Durability::None, Some(disk.clone())),
        (
            "AOF fsync always, disk",
            Durability::AofAlways,
            Some(disk.clone()),
        ),
    ];
    println!("redis-watchdog acquire+release, 1 client, 1 key; 3 runs of 2 s each, medians");
    for (label, durability, data_parent) in cases {
        let node = RedisNode::start(RedisNodeOptions {
            durability,
            data_parent,
            ..RedisNodeOptions::default()
        })
        .unwrap();
        let client = RedisWatchdog::connect(&node.url(), config(), Events::none())
            .await
            .unwrap();
        measure(&client, Duration::from_millis(300)).await;
        let mut p50s = Vec::new();
        let mut rates = Vec::new();
        for _ in 0..3 {
            let (p50, rate) = measure(&client, Duration::from_secs(2)).await;
            p50s.push(p50);
            rates.push(rate);
        }
        p50s.sort_unstable();
        rates.sort_by(f64::total_cmp);
        println!(
            "{label:<40} p50 {:>8.1} µs   {:>8.0} cycles/s   (data dir {})",
            p50s[1].as_secs_f64() * 1e6,
            rates[1],
            node.data_dir().display()
        );
    }
}
