//! `redis-watchdog` against a real redis-server (one per test, started by lockbench-servers), in both
//! renewal modes: the conformance suite, then what is specific to the watchdog — renewal seen from the
//! server (`INFO commandstats`), loss detection after a `DEL` and during a `SIGSTOP` of the server,
//! re-entrancy counts in the hash, batched renewal costs, pub/sub subscriptions of waiters, bad input;
//! and the conformance suite once on Valkey.
#![allow(clippy::unwrap_used)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use lockbench_servers::poll;
use lockers::redis::{RedisWatchdog, RenewalMode, WatchdogConfig};
use lockers::{
    AcquireOptions, EventLog, Events, Lease, LockError, LockEvent, Locker, OwnerId, Renewal,
};
use tokio::task::JoinHandle;

#[path = "support/redis.rs"]
mod support;

use support::{
    Flavor, PREFIX, Setup, Strategy, TIMEOUT, assert_margins_in_range, expect_busy, lock_key,
    on_each_flavor, renewal_margins, unique,
};

/// The renewal period: TIMEOUT × 1/3.
const PERIOD: Duration = Duration::from_millis(200);

fn config(mode: RenewalMode) -> WatchdogConfig {
    WatchdogConfig {
        renewal: Renewal::new(TIMEOUT),
        renewal_mode: mode,
        key_prefix: PREFIX.into(),
        ..WatchdogConfig::default()
    }
}

/// redis-watchdog clients in one renewal mode.
struct Watchdog(RenewalMode);

impl Watchdog {
    fn start(mode: RenewalMode) -> Setup<Watchdog> {
        Self::start_on(Flavor::Redis, mode)
    }

    fn start_on(flavor: Flavor, mode: RenewalMode) -> Setup<Watchdog> {
        Setup::start_on(flavor, Watchdog(mode))
    }
}

#[async_trait]
impl Strategy for Watchdog {
    type Client = RedisWatchdog;

    async fn connect(&self, url: &str, events: Events) -> Arc<RedisWatchdog> {
        Arc::new(
            RedisWatchdog::connect(url, config(self.0), events)
                .await
                .unwrap(),
        )
    }
}

/// A 600 ms watchdog lease stays held for 5 s while another client tries every 20 ms; every renewal
/// reports the TTL it found, within (0, timeout].
async fn holder_keeps_lock_for_5s(mode: RenewalMode, flavor: Flavor) {
    let t = Watchdog::start_on(flavor, mode);
    let log = EventLog::new();
    let (a, b) = (
        t.connect(Events::to(log.clone())).await,
        t.connect(Events::none()).await,
    );
    let key = unique("keeps");
    let lease = a.acquire(&key, &AcquireOptions::try_once()).await.unwrap();
    let until = Instant::now() + Duration::from_secs(5);
    let mut tries = 0;
    while Instant::now() < until {
        expect_busy(&*b, &key).await;
        assert!(lease.is_held(), "holder lost belief after {tries} tries");
        tries += 1;
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(tries >= 100, "only {tries} tries in 5 s");
    let margins = renewal_margins(&log);
    // 5 s / 200 ms = 25 renewals; allow for a slow machine but not for a stalled watchdog.
    assert!(margins.len() >= 18, "{} renewals in 5 s", margins.len());
    assert_margins_in_range(&margins);
    lease.release().await.unwrap();
    b.acquire(&key, &AcquireOptions::try_once()).await.unwrap();
}

/// After release the key is gone and no renew call reaches the server any more.
async fn release_stops_renewal_on_the_server(mode: RenewalMode, flavor: Flavor) {
    let t = Watchdog::start_on(flavor, mode);
    let a = t.connect(Events::none()).await;
    let key = unique("stops");
    let lease = a.acquire(&key, &AcquireOptions::try_once()).await.unwrap();
    let before = t.evalsha_calls();
    tokio::time::sleep(PERIOD * 3).await;
    let renewing = t.evalsha_calls() - before;
    assert!(
        renewing >= 2,
        "only {renewing} renew calls in 3 periods while held"
    );
    lease.release().await.unwrap();
    assert_eq!(t.redis(&["EXISTS", &lock_key(&key)]), "0");
    let (server_after, client_after) = (t.evalsha_calls(), a.renew_calls());
    tokio::time::sleep(PERIOD * 3).await;
    assert_eq!(
        t.evalsha_calls(),
        server_after,
        "script calls after release"
    );
    assert_eq!(a.renew_calls(), client_after, "renew calls after release");
    assert_eq!((a.held_locks(), a.scheduled_renewals()), (0, 0));
    assert_eq!(t.calls("publish"), 0, "an uncontended release published");
}

/// Deleting the key behind the holder's back fires `lost()` within one renewal period.
async fn delete_fires_lost_within_a_period(mode: RenewalMode, flavor: Flavor) {
    let t = Watchdog::start_on(flavor, mode);
    let a = t.connect(Events::none()).await;
    let key = unique("deleted");
    let lease = a.acquire(&key, &AcquireOptions::try_once()).await.unwrap();
    // Past the first renewal: batched mode's first one may come up to 1.5 periods after the acquire.
    tokio::time::sleep(PERIOD * 2 - PERIOD / 4).await;
    assert!(lease.is_held());
    let deleted_at = Instant::now();
    assert_eq!(t.redis(&["DEL", &lock_key(&key)]), "1");
    let bound = PERIOD + Duration::from_millis(150);
    let reason = tokio::time::timeout(bound, lease.lost())
        .await
        .unwrap_or_else(|_| panic!("lost() not resolved {bound:?} after the DEL"));
    eprintln!("noticed after {:?}: {reason}", deleted_at.elapsed());
    assert_eq!(reason, lockers::LossReason::RenewRejected);
    assert!(!lease.is_held());
    assert!(matches!(
        lease.release().await,
        Err(LockError::NotHeld { .. })
    ));
}

/// While the server is frozen (SIGSTOP) for longer than the timeout, `lost()` fires and `is_held()`
/// turns false by the local deadline — before the server could answer anything.
async fn frozen_server_loses_lease_by_deadline(mode: RenewalMode, flavor: Flavor) {
    let t = Watchdog::start_on(flavor, mode);
    let log = EventLog::new();
    let a = t.connect(Events::to(log.clone())).await;
    let key = unique("frozen");
    let lease = a.acquire(&key, &AcquireOptions::try_once()).await.unwrap();
    tokio::time::sleep(Duration::from_millis(50)).await;
    let frozen = t.freeze();
    let frozen_at = Instant::now();
    let deadline = lease.deadline();
    assert!(deadline <= frozen_at + TIMEOUT, "deadline beyond one TTL");
    let slack = Duration::from_millis(100);
    let reason = tokio::time::timeout_at((deadline + slack).into(), lease.lost())
        .await
        .unwrap_or_else(|_| panic!("lost() not resolved by the deadline + {slack:?}"));
    let noticed = Instant::now();
    assert!(noticed >= deadline, "lost before the deadline");
    assert!(!lease.is_held(), "still believed held after lost()");
    assert_eq!(reason, lockers::LossReason::Expired);
    // The server is still frozen: the loss was detected locally, not by an answer.
    assert!(frozen_at.elapsed() < TIMEOUT + Duration::from_millis(500));
    tokio::time::sleep_until((frozen_at + TIMEOUT + Duration::from_millis(300)).into()).await;
    drop(frozen);
    let failed = log.count(|e| matches!(e, LockEvent::RenewFailed { .. }));
    let lost = log.count(|e| matches!(e, LockEvent::Lost { .. }));
    assert_eq!(lost, 1, "one Lost event");
    eprintln!(
        "{failed} RenewFailed events while frozen; lost {:?} after freezing",
        noticed - frozen_at
    );
    // Resumed: the expired lock is free for others.
    let b = t.connect(Events::none()).await;
    b.acquire(&key, &AcquireOptions::wait(TIMEOUT))
        .await
        .unwrap();
}

/// Same owner twice: the hash counts 2; one release leaves it held (count 1), the second frees it.
async fn reentrant_counts_in_the_hash(mode: RenewalMode, flavor: Flavor) {
    let t = Watchdog::start_on(flavor, mode);
    let (a, b) = t.pair().await;
    let key = unique("reentrant");
    let opts = AcquireOptions::try_once().owner(OwnerId::new("worker-7"));
    let outer = a.acquire(&key, &opts).await.unwrap();
    let inner = a.acquire(&key, &opts).await.unwrap();
    assert_eq!(outer.token(), inner.token());
    let field = format!("{}:worker-7", a.config().client_id);
    assert_eq!(t.redis(&["HGET", &lock_key(&key), &field]), "2");
    assert_eq!(a.held_locks(), 1, "one renewal entry for both holds");
    inner.release().await.unwrap();
    assert_eq!(t.redis(&["HGET", &lock_key(&key), &field]), "1");
    expect_busy(&*b, &key).await;
    tokio::time::sleep(TIMEOUT).await;
    assert!(
        outer.is_held(),
        "outer hold not renewed after the inner release"
    );
    expect_busy(&*b, &key).await;
    let outer_token = outer.token();
    outer.release().await.unwrap();
    assert_eq!(t.redis(&["EXISTS", &lock_key(&key)]), "0");
    let next = b.acquire(&key, &AcquireOptions::try_once()).await.unwrap();
    assert!(next.token() > outer_token);
}

/// A release by someone who no longer holds the lock is `NotHeld` and leaves the holder's hash alone.
async fn non_owner_release_is_an_error(mode: RenewalMode, flavor: Flavor) {
    let t = Watchdog::start_on(flavor, mode);
    let (a, b) = t.pair().await;
    let key = unique("non-owner");
    let stale = a.acquire(&key, &AcquireOptions::try_once()).await.unwrap();
    t.redis(&["DEL", &lock_key(&key)]);
    let current = b.acquire(&key, &AcquireOptions::try_once()).await.unwrap();
    let before = t.redis(&["HGETALL", &lock_key(&key)]);
    match stale.release().await {
        Err(LockError::NotHeld { key: k }) => assert_eq!(k, key),
        other => panic!("non-owner release gave {other:?}"),
    }
    assert_eq!(t.redis(&["HGETALL", &lock_key(&key)]), before);
    assert!(current.is_held());
    current.release().await.unwrap();
}

/// A waiting acquire of `key` by `client` (up to 10 s), answering with when it returned.
fn spawn_waiter(
    client: &Arc<RedisWatchdog>,
    key: &str,
) -> JoinHandle<(Result<Lease, LockError>, Instant)> {
    let (client, key) = (client.clone(), key.to_owned());
    tokio::spawn(async move {
        let lease = client
            .acquire(&key, &AcquireOptions::wait(Duration::from_secs(10)))
            .await;
        (lease, Instant::now())
    })
}

/// Asserts that `waiter` got the lock within 250 ms of its release at `released_at` (a waiter sleeping
/// on the PTTL would take at least 400 ms), then releases it.
async fn expect_quick_handoff(
    waiter: JoinHandle<(Result<Lease, LockError>, Instant)>,
    released_at: Instant,
) {
    let (next, got_at) = waiter.await.unwrap();
    let handoff = got_at - released_at;
    assert!(next.is_ok(), "waiter failed: {next:?}");
    assert!(
        handoff < Duration::from_millis(250),
        "hand-off took {handoff:?}"
    );
    next.unwrap().release().await.unwrap();
}

/// A waiter wakes on the unlock message, long before the holder's TTL would have run out, and does
/// not poll while it waits.
async fn waiter_wakes_on_unlock_message(mode: RenewalMode, flavor: Flavor) {
    let t = Watchdog::start_on(flavor, mode);
    let (a, b) = t.pair().await;
    let key = unique("wake");
    let lease = a.acquire(&key, &AcquireOptions::try_once()).await.unwrap();
    let (server_before, a_before) = (t.evalsha_calls(), a.renew_calls());
    let waiter = spawn_waiter(&b, &key);
    tokio::time::sleep(Duration::from_millis(1200)).await;
    assert_eq!(t.subscribers(&format!("{}:unlock", lock_key(&key))), 1);
    let attempts = t.evalsha_calls() - server_before - (a.renew_calls() - a_before);
    // Retries happen only when the holder's TTL (≥ 400 ms, renewed) would have run out.
    assert!(
        attempts <= 6,
        "{attempts} acquire attempts while waiting 1.2 s"
    );
    let released_at = Instant::now();
    lease.release().await.unwrap();
    expect_quick_handoff(waiter, released_at).await;
    assert_eq!(
        t.calls("publish"),
        1,
        "the contended release did not publish once"
    );
}

/// Two waiters of one client on a lock held (with a long fixed lease) by another client: the holder's
/// unlock message wakes one of them, which gets the lock and releases it at once, uncontended. The
/// other must get the lock right after that release, not when the first holder's 5 s TTL would have run
/// out (a lost wake-up: it was never woken, so it never marked the new holder's hash for a publish).
async fn second_waiter_of_a_client_wakes_after_first_releases(mode: RenewalMode, flavor: Flavor) {
    let t = Watchdog::start_on(flavor, mode);
    let (a, b) = t.pair().await;
    let key = unique("second-waiter");
    let held = AcquireOptions::try_once().fixed(Duration::from_secs(5));
    let lease = a.acquire(&key, &held).await.unwrap();
    let tries_before = t.evalsha_calls();
    let mut waiters = tokio::task::JoinSet::new();
    for _ in 0..2 {
        let (b, key) = (b.clone(), key.clone());
        waiters.spawn(async move {
            let lease = b
                .acquire(&key, &AcquireOptions::wait(Duration::from_secs(10)))
                .await
                .unwrap();
            let got_at = Instant::now();
            lease.release().await.unwrap();
            got_at
        });
    }
    // Both waiters have tried once (the holder's fixed lease runs no renewals) and wait subscribed.
    let channel = format!("{}:unlock", lock_key(&key));
    let waiting = poll::until_async(Duration::from_secs(5), || {
        t.evalsha_calls() - tries_before >= 2 && t.subscribers(&channel) == 1
    });
    assert!(waiting.await, "the waiters are not both waiting");
    let released_at = Instant::now();
    lease.release().await.unwrap();
    let first = waiters.join_next().await.unwrap().unwrap();
    let second = tokio::time::timeout(Duration::from_secs(8), waiters.join_next())
        .await
        .expect("second waiter never got the lock")
        .unwrap()
        .unwrap();
    let (first, second) = (first - released_at, second - released_at);
    assert!(
        first < Duration::from_millis(300),
        "first waiter after {first:?}"
    );
    assert!(
        second < Duration::from_millis(500),
        "second waiter got the lock {second:?} after the holder's release (first after {first:?})"
    );
}

/// `CLIENT KILL TYPE pubsub` while a waiter waits: the dispatcher reconnects and resubscribes the
/// waiter's channel, so the release's unlock message still hands the lock over at once.
async fn waiter_survives_a_pubsub_kill(mode: RenewalMode, flavor: Flavor) {
    let t = Watchdog::start_on(flavor, mode);
    let (a, b) = t.pair().await;
    let key = unique("pubsub-kill");
    let channel = format!("{}:unlock", lock_key(&key));
    let lease = a.acquire(&key, &AcquireOptions::try_once()).await.unwrap();
    let waiter = spawn_waiter(&b, &key);
    let subscribed = poll::until_async(Duration::from_secs(5), || t.subscribers(&channel) == 1);
    assert!(subscribed.await, "waiter not subscribed");
    let killed: u32 = t
        .redis(&["CLIENT", "KILL", "TYPE", "pubsub"])
        .parse()
        .unwrap();
    assert_eq!(killed, 1, "the waiter's client's subscription");
    let killed_at = Instant::now();
    let resubscribed = poll::until_async(Duration::from_secs(1), || t.subscribers(&channel) == 1);
    assert!(resubscribed.await, "not resubscribed 1 s after the kill");
    eprintln!("resubscribed {:?} after the kill", killed_at.elapsed());
    tokio::time::sleep(PERIOD).await;
    let released_at = Instant::now();
    lease.release().await.unwrap();
    expect_quick_handoff(waiter, released_at).await;
}

/// Dropping an acquire that waits on pub/sub unsubscribes its channel and leaves no hold or renewal.
async fn cancelled_waiter_leaves_no_subscription(mode: RenewalMode, flavor: Flavor) {
    let t = Watchdog::start_on(flavor, mode);
    let (a, b) = t.pair().await;
    let key = unique("cancelled");
    let channel = format!("{}:unlock", lock_key(&key));
    let lease = a.acquire(&key, &AcquireOptions::try_once()).await.unwrap();
    let waiter = {
        let (b, key) = (b.clone(), key.clone());
        tokio::spawn(async move {
            b.acquire(&key, &AcquireOptions::wait(Duration::from_secs(30)))
                .await
        })
    };
    let subscribed = poll::until_async(Duration::from_secs(5), || t.subscribers(&channel) == 1);
    assert!(subscribed.await, "waiter not subscribed");
    waiter.abort();
    assert!(waiter.await.unwrap_err().is_cancelled());
    let unsubscribed = poll::until_async(Duration::from_secs(1), || t.subscribers(&channel) == 0);
    assert!(
        unsubscribed.await,
        "still subscribed 1 s after the waiter was dropped"
    );
    assert_eq!(t.redis(&["PUBSUB", "CHANNELS", &format!("{PREFIX}*")]), "");
    assert_eq!((b.held_locks(), b.scheduled_renewals()), (0, 0));
    lease.release().await.unwrap();
    tokio::time::sleep(PERIOD).await;
    assert_eq!(
        t.redis(&["EXISTS", &lock_key(&key)]),
        "0",
        "the dropped waiter took the lock"
    );
    assert_eq!(b.renew_calls(), 0);
}

/// One test per case in `$mode`, on the server program `$flavor`.
macro_rules! watchdog_tests {
    ($mode:expr, $flavor:ident; $($case:ident),* $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $case() {
                super::super::$case($mode, Flavor::$flavor).await;
            }
        )*
    };
}

/// In `$mode`: on Redis the conformance suite and every case of the watchdog; on Valkey the
/// conformance suite and the cases that break something on purpose (a `DEL` behind the holder, a
/// frozen server, a killed pub/sub connection), which is where the fork could answer differently.
macro_rules! both_modes {
    ($mode:expr) => {
        use super::*;

        /// On Redis.
        mod on_redis {
            use super::*;

            lockers::conformance_tests!(Watchdog::start_on(Flavor::Redis, $mode));
            both_modes!(@faults $mode, Redis);
            watchdog_tests!($mode, Redis;
                holder_keeps_lock_for_5s, release_stops_renewal_on_the_server,
                reentrant_counts_in_the_hash, non_owner_release_is_an_error,
                waiter_wakes_on_unlock_message,
                second_waiter_of_a_client_wakes_after_first_releases,
                cancelled_waiter_leaves_no_subscription);
        }

        /// On Valkey: the same scripts on the Redis fork.
        mod on_valkey {
            use super::*;

            lockers::conformance_tests!(Watchdog::start_on(Flavor::Valkey, $mode));
            both_modes!(@faults $mode, Valkey);
        }
    };
    (@faults $mode:expr, $flavor:ident) => {
        watchdog_tests!($mode, $flavor;
            delete_fires_lost_within_a_period, frozen_server_loses_lease_by_deadline,
            waiter_survives_a_pubsub_kill);
    };
}

mod per_lock {
    both_modes!(RenewalMode::PerLock);
}

mod batched {
    both_modes!(RenewalMode::BATCHED_DEFAULT);

    /// 1,000 held locks cost ⌈1000 / 100⌉ = 10 renew calls per period (times the schedule's 12/11, a
    /// renewal every 11 of its 12 ticks), counted by the client and by the server alike. The expected
    /// count is taken over the window as measured, so a sleep that wakes late does not fail it.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn thousand_locks_cost_one_call_per_chunk_per_period() {
        const LOCKS: usize = 1000;
        const CHUNK: usize = 100;
        const PERIODS: u32 = 5;
        let t = Watchdog::start(RenewalMode::Batched { chunk: CHUNK });
        let a = t.connect(Events::none()).await;
        let base = unique("many");
        let mut leases = Vec::with_capacity(LOCKS);
        for i in 0..LOCKS {
            let key = format!("{base}:{i}");
            leases.push(a.acquire(&key, &AcquireOptions::try_once()).await.unwrap());
        }
        assert_eq!(a.scheduled_renewals(), LOCKS);
        // Let the first renewals (spread by the acquires) settle onto the shared ticks.
        tokio::time::sleep(PERIOD * 2).await;
        let (client0, server0) = (a.renew_calls(), t.evalsha_calls());
        let opened = Instant::now();
        tokio::time::sleep(PERIOD * PERIODS).await;
        let (client1, server1) = (a.renew_calls(), t.evalsha_calls());
        let periods = opened.elapsed().as_secs_f64() / PERIOD.as_secs_f64();
        let (client, server) = (client1 - client0, server1 - server0);
        let per_period = LOCKS.div_ceil(CHUNK) as u64;
        let rate = per_period as f64 * lockers::redis::watchdog::BATCHED_RENEWALS_PER_PERIOD;
        let expected = (rate * periods).round() as u64;
        eprintln!(
            "{client} client / {server} server renew calls in {periods:.2} periods (expected {expected})"
        );
        assert!(
            client.abs_diff(expected) <= per_period,
            "{client} renew calls in {periods:.2} periods, expected {expected} ± {per_period}"
        );
        assert!(
            client.abs_diff(server) <= per_period,
            "client counted {client}, server {server}"
        );
        assert!(leases.iter().all(Lease::is_held));
        for lease in leases {
            lease.release().await.unwrap();
        }
        assert_eq!(a.scheduled_renewals(), 0);
    }
}

#[tokio::test]
async fn invalid_config_is_a_config_error_naming_the_field() {
    type Spoil = fn(&mut WatchdogConfig);
    let cases: [(&str, Spoil); 4] = [
        ("renewal.ttl", |c| c.renewal.ttl = Duration::ZERO),
        ("renewal.ratio", |c| c.renewal.ratio = 1.5),
        ("renewal_mode.chunk", |c| {
            c.renewal_mode = RenewalMode::Batched { chunk: 0 }
        }),
        ("key_prefix", |c| c.key_prefix = "x}".into()),
    ];
    for (field, spoil) in cases {
        let mut config = WatchdogConfig::default();
        spoil(&mut config);
        // Validation comes before any connect, so no server is needed.
        let err = RedisWatchdog::connect("redis://127.0.0.1:1/", config, Events::none())
            .await
            .unwrap_err();
        assert_eq!(err.kind(), "config", "{field}: {err}");
        assert!(err.to_string().contains(field), "{err} should name {field}");
    }
    let bad_url =
        RedisWatchdog::connect("http://nowhere", WatchdogConfig::default(), Events::none())
            .await
            .unwrap_err();
    assert_eq!(bad_url.kind(), "config", "{bad_url}");
}

#[tokio::test]
async fn unreachable_server_is_a_backend_error_within_the_connect_timeout() {
    let mut config = WatchdogConfig::default();
    config.connection.connect_timeout = Duration::from_millis(300);
    // Nothing listens: refused at once.
    let port = lockbench_servers::free_ports(1).unwrap()[0];
    let started = Instant::now();
    let err = RedisWatchdog::connect(
        &format!("redis://127.0.0.1:{port}/"),
        config.clone(),
        Events::none(),
    )
    .await
    .unwrap_err();
    assert_eq!(err.kind(), "backend", "{err}");
    assert!(
        started.elapsed() < Duration::from_millis(800),
        "refused after {:?}",
        started.elapsed()
    );
    // Something listens but never answers: cut off by the connect timeout.
    let silent = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("redis://{}/", silent.local_addr().unwrap());
    let started = Instant::now();
    let err = RedisWatchdog::connect(&url, config, Events::none())
        .await
        .unwrap_err();
    let took = started.elapsed();
    assert_eq!(err.kind(), "backend", "{err}");
    assert!(
        took >= Duration::from_millis(250) && took < Duration::from_millis(800),
        "gave up after {took:?}"
    );
}

#[tokio::test]
async fn empty_key_and_zero_fixed_lease_are_config_errors() {
    let t = Watchdog::start(RenewalMode::PerLock);
    let a = t.connect(Events::none()).await;
    let err = a
        .acquire("", &AcquireOptions::try_once())
        .await
        .unwrap_err();
    assert_eq!(err.kind(), "config", "{err}");
    let err = a
        .acquire("k", &AcquireOptions::try_once().fixed(Duration::ZERO))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), "config", "{err}");
}

#[tokio::test]
async fn close_stops_renewal_and_refuses_new_acquires() {
    let t = Watchdog::start(RenewalMode::PerLock);
    let a = t.connect(Events::none()).await;
    let lease = a
        .acquire("closing", &AcquireOptions::try_once())
        .await
        .unwrap();
    a.close().await;
    let calls = a.renew_calls();
    tokio::time::sleep(PERIOD * 2).await;
    assert_eq!(a.renew_calls(), calls, "renewal kept running after close");
    assert_eq!(
        a.acquire("other", &AcquireOptions::try_once())
            .await
            .unwrap_err()
            .kind(),
        "backend"
    );
    // Left to expire: the local belief ends at the deadline.
    assert_eq!(
        tokio::time::timeout(TIMEOUT, lease.lost()).await.unwrap(),
        lockers::LossReason::Expired
    );
}

on_each_flavor!(flushed_script_cache_is_reloaded_on_noscript);

/// `SCRIPT FLUSH` behind the client's back: the next acquire and release reload their scripts.
async fn flushed_script_cache_is_reloaded_on_noscript(flavor: Flavor) {
    let t = Watchdog::start_on(flavor, RenewalMode::PerLock);
    let a = t.connect(Events::none()).await;
    t.redis(&["SCRIPT", "FLUSH"]);
    let lease = a
        .acquire("flushed", &AcquireOptions::try_once())
        .await
        .unwrap();
    t.redis(&["SCRIPT", "FLUSH"]);
    lease.release().await.unwrap();
    assert_eq!(t.redis(&["EXISTS", &lock_key("flushed")]), "0");
    // Four scripts loaded at connect, then acquire and release each reloaded after a NOSCRIPT.
    assert_eq!(t.calls("script|load"), 6, "scripts were not reloaded");
}
