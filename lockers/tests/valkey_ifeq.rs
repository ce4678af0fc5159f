//! `valkey-ifeq` against a real valkey-server (one per test, started by lockbench-servers): the
//! conformance suite, then what is specific to it — the one-line refusal of a Redis 7.0 that lacks the
//! commands, loss after a `DEL` behind the holder's back, fencing tokens under contention, and the
//! commands it sends (no script at all).
#![allow(clippy::unwrap_used)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use lockbench_servers::{Flavor, RedisCluster, RedisOptions, RedisServer};
use lockers::redis::{GuardThreadConfig, ValkeyIfeq};
use lockers::{
    AcquireOptions, EventLog, Events, LockError, LockEvent, Locker, LossReason, Renewal,
};

#[path = "support/redis.rs"]
mod support;

use support::{PREFIX, Setup, Strategy, TIMEOUT, lock_key, unique};

fn config() -> GuardThreadConfig {
    GuardThreadConfig {
        renewal: Renewal::new(TIMEOUT),
        key_prefix: PREFIX.into(),
        ..GuardThreadConfig::default()
    }
}

/// valkey-ifeq clients with the test settings.
struct Ifeq;

impl Ifeq {
    /// A Valkey server and valkey-ifeq clients of it.
    fn start() -> Setup<Ifeq> {
        Setup::start_with(Ifeq, RedisOptions::of(Flavor::Valkey))
    }
}

#[async_trait]
impl Strategy for Ifeq {
    type Client = ValkeyIfeq;

    async fn connect(&self, url: &str, events: Events) -> Arc<ValkeyIfeq> {
        Arc::new(ValkeyIfeq::connect(url, config(), events).await.unwrap())
    }
}

lockers::conformance_tests!(Ifeq::start());

/// On Debian's Redis 7.0, which has neither `SET … IFEQ` nor `DELIFEQ`, `connect` fails with one line
/// naming both and the Valkey version that added each.
#[tokio::test]
async fn redis_7_is_refused_in_one_line_naming_the_versions() {
    let redis = RedisServer::start().unwrap();
    assert!(redis.version().starts_with("7.0"), "{}", redis.version());
    let err = ValkeyIfeq::connect(&redis.url(), config(), Events::none())
        .await
        .unwrap_err();
    assert_eq!(err.kind(), "unsupported");
    assert_eq!(
        err.to_string(),
        "valkey-ifeq does not support this server: it lacks SET … IFEQ (added in Valkey 8.1) \
         and DELIFEQ (added in Valkey 9.0); run it on Valkey 9.0 or later"
    );
}

/// A `DEL` behind the holder's back is seen by the next `SET … IFEQ` renewal (nil): `lost()` fires with
/// `RenewRejected` within one renewal period, and the release is `NotHeld`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deleted_lock_is_lost_at_the_next_renewal() {
    let t = Ifeq::start();
    let a = t.connect(Events::none()).await;
    let key = unique("deleted");
    let lease = a.acquire(&key, &AcquireOptions::try_once()).await.unwrap();
    // Past the deferred start (half a period), so the renewal loop runs.
    tokio::time::sleep(TIMEOUT / 4).await;
    let deleted_at = Instant::now();
    assert_eq!(t.redis(&["DEL", &lock_key(&key)]), "1");
    let reason = tokio::time::timeout(TIMEOUT, lease.lost()).await.unwrap();
    assert_eq!(reason, LossReason::RenewRejected);
    assert!(
        deleted_at.elapsed() < TIMEOUT / 3 + Duration::from_millis(150),
        "noticed after {:?}",
        deleted_at.elapsed()
    );
    assert!(!lease.is_held());
    assert!(matches!(
        lease.release().await,
        Err(LockError::NotHeld { .. })
    ));
}

/// Four clients take turns on one lock, 40 grants in all: in grant order (each grant happens while no
/// other is held, so the order of grants is the order of the holds), every token is larger than the last,
/// though the misses' wasted `INCR`s leave gaps.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tokens_strictly_increase_under_contention() {
    const CLIENTS: usize = 4;
    const ROUNDS: usize = 10;
    let t = Ifeq::start();
    let key = unique("contended");
    let grants = Arc::new(std::sync::Mutex::new(Vec::new()));
    let mut tasks = Vec::new();
    for _ in 0..CLIENTS {
        let client = t.connect(Events::none()).await;
        let (key, grants) = (key.clone(), grants.clone());
        tasks.push(tokio::spawn(async move {
            let wait = AcquireOptions::wait(Duration::from_secs(10));
            for _ in 0..ROUNDS {
                let lease = client.acquire(&key, &wait).await.unwrap();
                grants.lock().unwrap().push(lease.token().0);
                tokio::time::sleep(Duration::from_millis(2)).await;
                lease.release().await.unwrap();
            }
        }));
    }
    for task in tasks {
        task.await.unwrap();
    }
    let tokens = grants.lock().unwrap().clone();
    assert_eq!(tokens.len(), CLIENTS * ROUNDS);
    assert!(
        tokens.windows(2).all(|w| w[0] < w[1]),
        "tokens out of grant order: {tokens:?}"
    );
    let counter: u64 = t
        .redis(&["GET", &format!("{}:fence", lock_key(&key))])
        .parse()
        .unwrap();
    println!(
        "{} grants, tokens {}..={}, counter {counter} (misses' INCRs included)",
        tokens.len(),
        tokens[0],
        tokens[tokens.len() - 1]
    );
    assert!(counter >= *tokens.last().unwrap());
}

/// A critical section sends no script: the server counts one `MULTI`/`SET`/`INCR`/`EXEC` to acquire,
/// `SET` (with `IFEQ`) to renew and `DELIFEQ` to release, and no `EVALSHA`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_server_runs_no_script() {
    let t = Ifeq::start();
    let a = t.connect(Events::none()).await;
    let key = unique("commands");
    let lease = a.acquire(&key, &AcquireOptions::try_once()).await.unwrap();
    // Two renewal periods: at least one renewal.
    tokio::time::sleep(TIMEOUT * 2 / 3 + Duration::from_millis(50)).await;
    lease.release().await.unwrap();
    let (exec, delifeq) = (t.calls("exec"), t.calls("delifeq"));
    assert_eq!((exec, delifeq), (1, 1));
    assert!(t.calls("set") >= 2, "the acquire's SET and a renewal");
    assert_eq!(t.evalsha_calls() + t.calls("eval"), 0);
}

/// What the server counted over a run (`INFO commandstats` before and after, the probes' own `INFO`
/// left out): commands (those run inside scripts included), script calls, and server µs. A script's
/// µs include its commands', which are counted again on their own lines: where scripts ran (the rows
/// here run all their lock commands in scripts) only the scripts' µs are summed.
#[derive(Debug, Clone, Copy, Default)]
struct ServerWork {
    commands: u64,
    scripts: u64,
    usec: u64,
    script_usec: u64,
}

impl ServerWork {
    fn read(server: &RedisServer) -> Self {
        let info = server.command(&["INFO", "commandstats"]).unwrap();
        let stats = lockbench_servers::redis::commandstats(&info);
        let mut work = ServerWork::default();
        for (name, stat) in stats.iter().filter(|(name, _)| *name != "info") {
            work.commands += stat.calls;
            work.usec += stat.usec;
            if name.starts_with("eval") {
                work.scripts += stat.calls;
                work.script_usec += stat.usec;
            }
        }
        work
    }

    fn since(self, before: ServerWork) -> Self {
        ServerWork {
            commands: self.commands - before.commands,
            scripts: self.scripts - before.scripts,
            usec: self.usec - before.usec,
            script_usec: self.script_usec - before.script_usec,
        }
    }

    /// Server time, µs, each command's counted once.
    fn server_usec(&self) -> f64 {
        (if self.scripts > 0 {
            self.script_usec
        } else {
            self.usec
        }) as f64
    }
}

/// One row's client on the shared Valkey server, reporting to `events`.
async fn row_client(row: &str, url: &str, events: Events) -> Arc<dyn Locker> {
    use lockers::redis::{RedisGuardThread, RedisWatchdog, WatchdogConfig};
    match row {
        "valkey-ifeq" => Ifeq.connect(url, events).await,
        "redis-guard-thread" => Arc::new(
            RedisGuardThread::connect(url, config(), events)
                .await
                .unwrap(),
        ),
        _ => {
            let watchdog = WatchdogConfig {
                renewal: Renewal::new(TIMEOUT),
                key_prefix: PREFIX.into(),
                ..WatchdogConfig::default()
            };
            Arc::new(RedisWatchdog::connect(url, watchdog, events).await.unwrap())
        }
    }
}

/// Calls per critical section of `valkey-ifeq` beside the scripted rows, on one Valkey server: 200
/// uncontended acquire/release cycles (shorter than half a renewal period: no renewal runs), then one
/// lock held for 5 renewal periods, whose commands beyond one cycle's are its renewals'. Prints what the
/// server counted and what each client sent (run with `--nocapture`); checks valkey-ifeq's exact counts.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_per_critical_section_beside_the_scripted_rows() {
    const CYCLES: u64 = 200;
    const PERIODS: u32 = 5;
    let server = RedisServer::start_valkey().unwrap();
    for row in ["valkey-ifeq", "redis-watchdog", "redis-guard-thread"] {
        let log = EventLog::new();
        let client = row_client(row, &server.url(), Events::to(log.clone())).await;
        let key = unique("cycles");
        let (before, sent_before) = (ServerWork::read(&server), client.requests_sent().unwrap());
        let started = Instant::now();
        for _ in 0..CYCLES {
            let lease = client
                .acquire(&key, &AcquireOptions::try_once())
                .await
                .unwrap();
            lease.release().await.unwrap();
        }
        let cycle = started.elapsed() / CYCLES as u32;
        let work = ServerWork::read(&server).since(before);
        let sent = client.requests_sent().unwrap() - sent_before;
        let per_cycle = work.commands / CYCLES;
        println!(
            "{row}: per critical section {:.2} server commands ({:.2} scripts), {:.2} requests sent, \
             {:.1} µs server time, {} µs per cycle (this build)",
            work.commands as f64 / CYCLES as f64,
            work.scripts as f64 / CYCLES as f64,
            sent as f64 / CYCLES as f64,
            work.server_usec() / CYCLES as f64,
            cycle.as_micros()
        );
        let before = ServerWork::read(&server);
        let lease = client
            .acquire(&key, &AcquireOptions::try_once())
            .await
            .unwrap();
        tokio::time::sleep(TIMEOUT / 3 * PERIODS + TIMEOUT / 6).await;
        lease.release().await.unwrap();
        let held = ServerWork::read(&server).since(before);
        let renewals = log.count(|e| matches!(e, LockEvent::Renewed { .. })) as u64;
        let per_renewal = (held.commands - per_cycle) as f64 / renewals.max(1) as f64;
        println!(
            "{row}: per renewal {per_renewal:.2} server commands, {:.1} µs server time ({renewals} renewals)",
            (held.server_usec() - work.server_usec() / CYCLES as f64) / renewals.max(1) as f64
        );
        if row == "valkey-ifeq" {
            // MULTI, SET, INCR, EXEC, DELIFEQ; the client counts the same five. One SET … IFEQ per renewal.
            assert_eq!(
                (work.commands, work.scripts, sent),
                (5 * CYCLES, 0, 5 * CYCLES)
            );
            assert!(renewals >= u64::from(PERIODS) - 2, "{renewals} renewals");
            assert_eq!((held.commands, held.scripts), (5 + renewals, 0));
        }
        client.close().await;
    }
}

/// On a Valkey cluster the transaction goes to the master of the lock's slot (both keys share the
/// `{name}` tag): a lease is taken with a token, renewed past its timeout and released.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cluster_takes_renews_and_releases() {
    let cluster = RedisCluster::start_with(RedisOptions::of(Flavor::Valkey)).unwrap();
    let a = Ifeq.connect(&cluster.url(), Events::none()).await;
    let b = Ifeq.connect(&cluster.url(), Events::none()).await;
    let key = unique("cluster");
    let first = a.acquire(&key, &AcquireOptions::try_once()).await.unwrap();
    tokio::time::sleep(TIMEOUT + TIMEOUT / 2).await;
    assert!(first.is_held(), "renewed past its timeout");
    support::expect_busy(b.as_ref(), &key).await;
    let first_token = first.token();
    first.release().await.unwrap();
    let second = b.acquire(&key, &AcquireOptions::try_once()).await.unwrap();
    assert!(second.token() > first_token);
    second.release().await.unwrap();
}
