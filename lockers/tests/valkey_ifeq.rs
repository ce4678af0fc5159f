//! `valkey-ifeq` against a real valkey-server (one per test, started by lockbench-servers): the
//! conformance suite, then what is specific to it — the one-line refusal of a Redis 7.0 that lacks the
//! commands, loss after a `DEL` behind the holder's back, fencing tokens under contention, and the
//! commands it sends (no script at all).
#![allow(clippy::unwrap_used)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use lockbench_servers::{Flavor, RedisOptions, RedisServer};
use lockers::redis::{GuardThreadConfig, ValkeyIfeq};
use lockers::{AcquireOptions, Events, LockError, Locker, LossReason, Renewal};

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
