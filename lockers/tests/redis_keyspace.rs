//! `redis-keyspace` against a real redis-server (one per test, started by lockbench-servers): the
//! conformance suite for the shadow variant, the cases the naive variant can honestly claim, then what
//! is specific to keyspace notifications — the shadow key holding a lock at `hz 10` and `hz 100` (with
//! the measured event delays), the naive variant's flaw, a `CLIENT KILL TYPE pubsub` during a hold,
//! waiters woken by `del`/`expired` events, and the server's `notify-keyspace-events` setting. The
//! conformance suites and the cases that break something on purpose (a `DEL` behind the naive holder,
//! a pub/sub kill) run on Redis and on Valkey (`shadow::on_valkey::…`, `on_valkey::…`).
#![allow(clippy::unwrap_used)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use lockbench_servers::{RedisOptions, poll};
use lockers::redis::{
    KeyspaceConfig, KeyspaceVariant as Variant, RedisKeyspace, ScriptRole, script_shas,
};
use lockers::{AcquireOptions, EventLog, Events, LockEvent, Locker, LossReason, Renewal};

#[path = "support/redis.rs"]
mod support;

use support::{
    Flavor, PREFIX, Setup, Strategy, TIMEOUT, expect_busy, lock_key, on_each_flavor, unique,
};

fn config() -> KeyspaceConfig {
    KeyspaceConfig {
        renewal: Renewal::new(TIMEOUT),
        key_prefix: PREFIX.into(),
        ..KeyspaceConfig::default()
    }
}

/// redis-keyspace clients of one variant.
struct Keyspace(Variant);

impl Keyspace {
    fn start(variant: Variant) -> Setup<Keyspace> {
        Self::start_on(Flavor::Redis, variant)
    }

    fn start_on(flavor: Flavor, variant: Variant) -> Setup<Keyspace> {
        Setup::start_on(flavor, Keyspace(variant))
    }

    fn start_with(variant: Variant, options: RedisOptions) -> Setup<Keyspace> {
        Setup::start_with(Keyspace(variant), options)
    }
}

#[async_trait]
impl Strategy for Keyspace {
    type Client = RedisKeyspace;

    async fn connect(&self, url: &str, events: Events) -> Arc<RedisKeyspace> {
        connect_with(url, self.0, config(), events).await
    }
}

async fn connect_with(
    url: &str,
    variant: Variant,
    config: KeyspaceConfig,
    events: Events,
) -> Arc<RedisKeyspace> {
    Arc::new(
        RedisKeyspace::connect(url, variant, config, events)
            .await
            .unwrap(),
    )
}

/// The shadow variant claims every case its capabilities declare, on Redis and on Valkey.
mod shadow {
    use super::*;

    on_each_flavor!(@conformance |flavor| Keyspace::start_on(flavor, Variant::Shadow););
}

/// The conformance cases the naive variant can honestly claim on the server `$target` runs.
macro_rules! naive_conformance {
    ($target:expr) => {
        lockers::conformance_tests!(@cases $target;
            mutual_exclusion, release_then_reacquire, try_once_on_held_lock, wait_timeout_is_honoured,
            fixed_lease_expires, tokens_strictly_increase, stale_release_is_not_held,
            stale_release_keeps_newer_hold_of_same_owner, cancelled_acquire_leaks_nothing,
            reentrant_acquire_and_release, non_reentrant_same_owner_times_out,
            undeclared_lease_mode_is_unsupported, dropped_lease_is_released);
    };
}

/// The naive variant runs every case except the two it fails by design (see the module docs of
/// `lockers::redis::keyspace`): `watchdog_lease_outlives_timeout` (a contender gets in at each expiry;
/// [`naive_contender_gets_in_while_the_holder_believes_it_holds`] proves it) and
/// `lost_when_removed_behind_back` (a `DEL` publishes no `expired` event, so the naive holder never
/// learns; [`naive_holder_never_learns_of_a_del`] shows it).
mod naive {
    use super::*;

    naive_conformance!(Keyspace::start(Variant::Naive));

    /// The same cases on Valkey.
    mod on_valkey {
        use super::*;

        naive_conformance!(Keyspace::start_on(Flavor::Valkey, Variant::Naive));
    }
}

on_each_flavor!(
    naive_holder_never_learns_of_a_del,
    shadow_keeps_the_lock_through_a_pubsub_kill,
);

/// The `trigger_lag` of every `Renewed` event (each must carry one).
fn trigger_lags(log: &EventLog) -> Vec<Duration> {
    log.snapshot()
        .into_iter()
        .filter_map(|e| match e {
            LockEvent::Renewed { trigger_lag, .. } => Some(trigger_lag.expect("a trigger lag")),
            _ => None,
        })
        .collect()
}

fn quantile(sorted: &[Duration], q: f64) -> Duration {
    sorted[((sorted.len() - 1) as f64 * q).round() as usize]
}

/// A 600 ms shadow-variant lock stays held for 5 s while another client tries every 20 ms. Returns the
/// renewals' trigger lags (shadow expiry event arrival − the shadow's nominal deadline).
async fn shadow_holds_for_5s(hz: u32) -> Vec<Duration> {
    let t = Keyspace::start_with(
        Variant::Shadow,
        RedisOptions {
            hz: Some(hz),
            ..RedisOptions::default()
        },
    );
    let log = EventLog::new();
    let (a, b) = (
        t.connect(Events::to(log.clone())).await,
        t.connect(Events::none()).await,
    );
    let key = unique("shadow-holds");
    let lease = a.acquire(&key, &AcquireOptions::try_once()).await.unwrap();
    let until = Instant::now() + Duration::from_secs(5);
    let mut tries = 0;
    while Instant::now() < until {
        expect_busy(&*b, &key).await;
        assert!(
            lease.is_held(),
            "hz {hz}: holder lost belief after {tries} tries: {lease:?}"
        );
        tries += 1;
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(tries >= 100, "only {tries} tries in 5 s");
    lease.release().await.unwrap();
    let mut lags = trigger_lags(&log);
    lags.sort();
    assert!(!lags.is_empty(), "hz {hz}: no renewal at all");
    println!(
        "hz {hz}: {} renewals in 5 s; trigger lag p50 {:?}, max {:?}",
        lags.len(),
        quantile(&lags, 0.5),
        quantile(&lags, 1.0)
    );
    // Shadow TTL 400 ms + lag per cycle: ≥ 10 renewals in 5 s when events come within ~100 ms.
    assert!(lags.len() >= 9, "hz {hz}: {} renewals in 5 s", lags.len());
    lags
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shadow_holds_at_hz_10() {
    let lags = shadow_holds_for_5s(10).await;
    // One active expiry cycle every 100 ms: events up to ~100 ms late. The median says so; the
    // slowest may add a busy machine's scheduling, and the hold above is what must not break.
    assert!(
        quantile(&lags, 0.5) < Duration::from_millis(130),
        "{lags:?}"
    );
    assert!(
        quantile(&lags, 1.0) < Duration::from_millis(300),
        "{lags:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shadow_holds_at_hz_100() {
    let lags = shadow_holds_for_5s(100).await;
    // One cycle every 10 ms.
    assert!(quantile(&lags, 0.5) < Duration::from_millis(30), "{lags:?}");
}

/// The naive flaw: when the lock key expires, a polling contender takes it (its own `SET NX` makes
/// Redis delete the expired key) before the naive holder's re-acquire arrives, while the holder still
/// believes it holds the lock. The holder learns it only afterwards (`TakenOver`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn naive_contender_gets_in_while_the_holder_believes_it_holds() {
    const TRIES: usize = 5;
    let t = Keyspace::start(Variant::Naive);
    let log = EventLog::new();
    let (a, b) = (
        t.connect(Events::to(log.clone())).await,
        t.connect(Events::none()).await,
    );
    let contender_lease = AcquireOptions::try_once().fixed(TIMEOUT * 2);
    for attempt in 1..=TRIES {
        let key = unique("naive-flaw");
        let held_at = Instant::now();
        let lease = a.acquire(&key, &AcquireOptions::try_once()).await.unwrap();
        // Poll for up to 3 lock lifetimes, every 5 ms.
        let mut taken = None;
        while held_at.elapsed() < TIMEOUT * 3 {
            // A fixed lease, with no listener: a naive contender would take the `expired` event its own
            // `SET NX` caused for the holder's key as its own expiry (see the strategy's doc).
            if let Ok(contender) = b.acquire(&key, &contender_lease).await {
                taken = Some((Instant::now(), lease.is_held(), contender));
                break;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        let Some((got_in_at, holder_believed, contender)) = taken else {
            println!("try {attempt}: the naive holder re-acquired every time; no overlap");
            continue;
        };
        let got_in_after = got_in_at - held_at;
        assert!(
            got_in_after >= TIMEOUT,
            "contender got in after {got_in_after:?}, before the TTL"
        );
        if !holder_believed {
            println!("try {attempt}: the holder had already noticed; trying again");
            continue;
        }
        let reason = tokio::time::timeout(Duration::from_secs(1), lease.lost())
            .await
            .unwrap();
        assert_eq!(reason, LossReason::TakenOver);
        // `lost()` may resolve a moment before the `Lost` event is recorded.
        let lost_event = || {
            log.snapshot().into_iter().find_map(|e| match e {
                LockEvent::Lost {
                    key: k,
                    detected_at,
                    ..
                } if *k == *key => Some(detected_at),
                _ => None,
            })
        };
        let mut noticed_at = lost_event();
        for _ in 0..50 {
            if noticed_at.is_some() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(2)).await;
            noticed_at = lost_event();
        }
        let noticed_at = noticed_at.unwrap();
        assert!(
            noticed_at > got_in_at,
            "the holder noticed before the contender got in"
        );
        println!(
            "try {attempt}: contender got in {got_in_after:?} after the naive acquire, while the holder \
             believed it held the lock; the holder noticed {:?} later (TakenOver)",
            noticed_at - got_in_at
        );
        contender.release().await.unwrap();
        return;
    }
    panic!("the naive flaw did not show in {TRIES} tries");
}

/// A `DEL` behind the naive holder's back publishes `del`, not `expired`: the naive holder never learns,
/// and its optimistic belief outlives the lock (the shadow variant passes this conformance case).
async fn naive_holder_never_learns_of_a_del(flavor: Flavor) {
    let t = Keyspace::start_on(flavor, Variant::Naive);
    let (a, b) = t.pair().await;
    let key = unique("naive-del");
    let lease = a.acquire(&key, &AcquireOptions::try_once()).await.unwrap();
    assert_eq!(t.redis(&["DEL", &lock_key(&key)]), "1");
    // A fixed lease: it does not expire (and publish `expired`) during the check.
    let intruder_lease = AcquireOptions::try_once().fixed(Duration::from_secs(5));
    let intruder = b.acquire(&key, &intruder_lease).await.unwrap();
    let lost = tokio::time::timeout(TIMEOUT * 2, lease.lost()).await;
    assert!(lost.is_err(), "naive holder noticed: {lost:?}");
    assert!(lease.is_held(), "the naive belief ran out");
    intruder.release().await.unwrap();
}

/// `CLIENT KILL TYPE pubsub` during a hold: the events published while the subscription is down are
/// lost, but the client notices the break, resubscribes, and renews at once, so the shadow-variant lock
/// is kept while a contender keeps trying.
async fn shadow_keeps_the_lock_through_a_pubsub_kill(flavor: Flavor) {
    let t = Keyspace::start_on(flavor, Variant::Shadow);
    let log = EventLog::new();
    let (a, b) = (
        t.connect(Events::to(log.clone())).await,
        t.connect(Events::none()).await,
    );
    let expired_channel = "__keyevent@0__:expired";
    assert_eq!(
        t.redis(&["PUBSUB", "NUMSUB", expired_channel])
            .lines()
            .nth(1),
        Some("2")
    );
    let key = unique("pubsub-kill");
    let lease = a.acquire(&key, &AcquireOptions::try_once()).await.unwrap();
    tokio::time::sleep(Duration::from_millis(450)).await;
    let killed_at = Instant::now();
    let killed: u32 = t
        .redis(&["CLIENT", "KILL", "TYPE", "pubsub"])
        .parse()
        .unwrap();
    assert_eq!(killed, 2, "both clients' subscriptions");
    let until = Instant::now() + Duration::from_secs(2);
    while Instant::now() < until {
        expect_busy(&*b, &key).await;
        assert!(lease.is_held(), "lost after the kill: {lease:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(a.subscriber_reconnects(), 1);
    assert_eq!(
        t.redis(&["PUBSUB", "NUMSUB", expired_channel])
            .lines()
            .nth(1),
        Some("2")
    );
    let after_kill: Vec<(Duration, Duration)> = log
        .snapshot()
        .into_iter()
        .filter_map(|e| match e {
            LockEvent::Renewed {
                sent_at,
                trigger_lag,
                ..
            } if sent_at > killed_at => Some((sent_at - killed_at, trigger_lag.unwrap())),
            _ => None,
        })
        .collect();
    println!("renewals after the kill (sent, from the kill; trigger lag): {after_kill:?}");
    let renewals_after: Vec<Duration> = after_kill.iter().map(|(sent, _)| *sent).collect();
    // The resubscription renewal comes within the reconnect back-off; then one per shadow expiry.
    assert!(
        renewals_after[0] < Duration::from_millis(250),
        "{renewals_after:?}"
    );
    assert!(renewals_after.len() >= 4, "{renewals_after:?}");
    lease.release().await.unwrap();
}

/// Waiters wake on the lock key's `del` (release) and `expired` events, not on their fallback re-check
/// (set to 5 s here).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn waiters_wake_on_del_and_expired_events() {
    let t = Keyspace::start_with(
        Variant::Shadow,
        RedisOptions {
            hz: Some(100),
            ..RedisOptions::default()
        },
    );
    let slow_recheck = KeyspaceConfig {
        waiter_recheck: Duration::from_secs(5),
        ..config()
    };
    let a = t.connect(Events::none()).await;
    let url = t.server.url();
    let b = connect_with(&url, Variant::Shadow, slow_recheck, Events::none()).await;
    let wait = AcquireOptions::wait(Duration::from_secs(3));

    let key = unique("wake-del");
    let lease = a.acquire(&key, &AcquireOptions::try_once()).await.unwrap();
    // Every command from here on goes to the slow log: the waiter's first attempt shows there once the
    // server has run it (the holder's renewals run other scripts).
    t.redis(&["CONFIG", "SET", "slowlog-log-slower-than", "0"]);
    t.redis(&["CONFIG", "SET", "slowlog-max-len", "1024"]);
    t.redis(&["SLOWLOG", "RESET"]);
    let waiter = {
        let (b, key, wait) = (b.clone(), key.clone(), wait.clone());
        tokio::spawn(async move { b.acquire(&key, &wait).await.map(|l| (Instant::now(), l)) })
    };
    let acquire_shas: Vec<&str> = script_shas()
        .into_iter()
        .filter(|(role, _)| *role == ScriptRole::Acquire)
        .map(|(_, sha)| sha)
        .collect();
    let tried = poll::until_async(Duration::from_secs(3), || {
        let log = t.redis(&["SLOWLOG", "GET", "1024"]);
        log.lines().any(|line| acquire_shas.contains(&line))
    });
    assert!(tried.await, "the waiter never tried");
    let released_at = Instant::now();
    lease.release().await.unwrap();
    let (got_in_at, next) = waiter.await.unwrap().unwrap();
    let after_del = got_in_at - released_at;
    assert!(
        after_del < Duration::from_millis(250),
        "woke {after_del:?} after the release"
    );
    next.release().await.unwrap();

    let key = unique("wake-expired");
    let ttl = Duration::from_millis(400);
    let started = Instant::now();
    let _expiring = a
        .acquire(&key, &AcquireOptions::try_once().fixed(ttl))
        .await
        .unwrap();
    let next = b.acquire(&key, &wait).await.unwrap();
    let got_in = started.elapsed();
    assert!(
        got_in >= ttl && got_in < ttl + Duration::from_millis(250),
        "got in after {got_in:?} (lease {ttl:?}, hz 100)"
    );
    println!(
        "waiter woke {after_del:?} after a release, {:?} after a {ttl:?} expiry",
        got_in - ttl
    );
    next.release().await.unwrap();
}

/// Connecting adds the flags the strategy needs to the user's own `notify-keyspace-events`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn notifications_are_added_to_the_users_flags() {
    let t = Keyspace::start_with(
        Variant::Naive,
        RedisOptions {
            notify_keyspace_events: Some("Kl".into()),
            ..RedisOptions::default()
        },
    );
    let a = t.connect(Events::none()).await;
    let reply = t.redis(&["CONFIG", "GET", "notify-keyspace-events"]);
    let flags = reply.lines().nth(1).unwrap();
    for flag in ['K', 'l', 'E', 'x', 'g'] {
        assert!(flags.contains(flag), "{flag} missing from {flags:?}");
    }
    assert_eq!(a.notify_keyspace_events(), flags);
}

/// A client that may not run CONFIG (an ACL here) fails to connect with a `Config` error naming the
/// setting, rather than running without events.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refused_config_is_a_clear_error() {
    let t = Keyspace::start(Variant::Shadow);
    let setup = [
        "ACL", "SETUSER", "noconfig", "on", ">pw", "~*", "&*", "+@all", "-config",
    ];
    assert_eq!(t.redis(&setup), "OK");
    let url = format!("redis://noconfig:pw@{}/", t.server.addr());
    let err = RedisKeyspace::connect(&url, Variant::Shadow, config(), Events::none())
        .await
        .unwrap_err();
    assert_eq!(err.kind(), "config", "{err}");
    assert!(err.to_string().contains("notify-keyspace-events"), "{err}");
    println!("{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_is_a_clear_error() {
    let t = Keyspace::start(Variant::Shadow);
    let a = t.connect(Events::none()).await;
    assert_eq!(a.id(), "redis-keyspace-shadow");
    assert_eq!(a.capabilities(), Variant::Shadow.capabilities());
    let err = a
        .acquire("", &AcquireOptions::try_once())
        .await
        .unwrap_err();
    assert_eq!(err.kind(), "config", "{err}");
    let bad = KeyspaceConfig {
        shadow_ratio: 1.5,
        ..config()
    };
    let err = RedisKeyspace::connect(&t.server.url(), Variant::Shadow, bad, Events::none())
        .await
        .unwrap_err();
    assert!(err.to_string().contains("shadow_ratio"), "{err}");
    let started = Instant::now();
    let err = RedisKeyspace::connect(
        "redis://127.0.0.1:1/",
        Variant::Naive,
        config(),
        Events::none(),
    )
    .await
    .unwrap_err();
    assert_eq!(err.kind(), "backend", "{err}");
    assert!(started.elapsed() < Duration::from_secs(3));
}
