//! `redis-guard-thread` against a real redis-server (one per test, started by lockbench-servers): the
//! conformance suite, then what is specific to it — one OS thread per held lock (counted by the client
//! and cross-checked in `/proc/self/task`), renewal margins, loss on a replaced value and during a
//! `SIGSTOP` of the server, release by the thread itself when a lease is dropped outside any runtime,
//! polling back-off, no re-entrancy, bad input. The conformance suite and the cases that break
//! something on purpose (a replaced value, a `SIGSTOP`) run on Redis and on Valkey (`on_valkey::…`).
#![allow(clippy::unwrap_used)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use lockers::redis::{GuardThreadConfig, RedisGuardThread};
use lockers::{
    AcquireOptions, EventLog, Events, LockError, LockEvent, Locker, LossReason, OwnerId, Renewal,
};

#[path = "support/redis.rs"]
mod support;

use support::{
    Flavor, PREFIX, Setup, Strategy, TIMEOUT, assert_margins_in_range, lock_key, on_each_flavor,
    renewal_margins, unique,
};

fn config() -> GuardThreadConfig {
    GuardThreadConfig {
        renewal: Renewal::new(TIMEOUT),
        key_prefix: PREFIX.into(),
        ..GuardThreadConfig::default()
    }
}

/// redis-guard-thread clients with the test settings.
struct GuardThread;

impl GuardThread {
    fn start() -> Setup<GuardThread> {
        Self::start_on(Flavor::Redis)
    }

    fn start_on(flavor: Flavor) -> Setup<GuardThread> {
        Setup::start_on(flavor, GuardThread)
    }
}

#[async_trait]
impl Strategy for GuardThread {
    type Client = RedisGuardThread;

    async fn connect(&self, url: &str, events: Events) -> Arc<RedisGuardThread> {
        connect_with(url, config(), events).await
    }
}

async fn connect_with(
    url: &str,
    config: GuardThreadConfig,
    events: Events,
) -> Arc<RedisGuardThread> {
    Arc::new(
        RedisGuardThread::connect(url, config, events)
            .await
            .unwrap(),
    )
}

on_each_flavor!(
    @conformance |flavor| GuardThread::start_on(flavor);
    replaced_value_is_noticed_by_the_next_renewal,
    frozen_server_loses_the_lease_at_its_deadline,
);

/// Threads of this process whose OS name is `name` (`/proc/self/task/*/comm`).
fn threads_named(name: &str) -> usize {
    std::fs::read_dir("/proc/self/task")
        .unwrap()
        .filter_map(|task| std::fs::read_to_string(task.ok()?.path().join("comm")).ok())
        .filter(|comm| comm.trim_end() == name)
        .count()
}

/// A line of `/proc/self/status`, e.g. `Threads` or `VmRSS`.
fn status_field(field: &str) -> String {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .unwrap()
        .trim()
        .to_owned()
}

/// Polls `f` every 10 ms until it returns `want` or `within` passes; returns the last value.
async fn settle(within: Duration, want: usize, f: impl Fn() -> usize) -> usize {
    let until = Instant::now() + within;
    loop {
        let now = f();
        if now == want || Instant::now() >= until {
            return now;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

const HELD: usize = 100;

/// 100 held locks are 100 renewal threads; releasing or dropping them brings the count back to 0, by the
/// client's counter and by the OS's thread list.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_thread_per_held_lock_and_none_after_release_or_drop() {
    let t = GuardThread::start();
    let mut settings = config();
    settings.client_id = format!("t{:05x}", rand::random::<u32>() & 0xf_ffff);
    let a = connect_with(&t.server.url(), settings, Events::none()).await;
    let name = a.thread_name().to_owned();
    assert_eq!(name.len(), 15, "{name:?} is what the kernel keeps");
    assert_eq!((a.live_threads(), threads_named(&name)), (0, 0));
    let base = unique("threads");
    for round in ["release", "drop"] {
        let threads_before = status_field("Threads");
        let mut leases = Vec::new();
        for i in 0..HELD {
            let key = format!("{base}:{round}:{i}");
            leases.push(a.acquire(&key, &AcquireOptions::try_once()).await.unwrap());
        }
        assert_eq!(a.live_threads(), HELD, "{round}: counter while held");
        let named = settle(Duration::from_secs(2), HELD, || threads_named(&name)).await;
        assert_eq!(named, HELD, "{round}: OS threads named {name} while held");
        println!(
            "{round}: Threads {threads_before} before, {} while holding {HELD}",
            status_field("Threads")
        );
        if round == "release" {
            for lease in leases {
                lease.release().await.unwrap();
            }
        } else {
            drop(leases);
        }
        let left = settle(Duration::from_secs(2), 0, || a.live_threads()).await;
        assert_eq!(left, 0, "{round}: renewal threads still alive");
        assert_eq!(
            settle(Duration::from_secs(2), 0, || threads_named(&name)).await,
            0
        );
        println!("{round}: Threads {} after", status_field("Threads"));
    }
    // The dropped leases were released by their threads: every key is free at once.
    let b = t.connect(Events::none()).await;
    for i in 0..HELD {
        let key = format!("{base}:drop:{i}");
        b.acquire(&key, &AcquireOptions::try_once().fixed(TIMEOUT))
            .await
            .unwrap();
    }
}

/// A lease held for 2 s is renewed every ~200 ms by its thread, each renewal reporting the TTL it found.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn renewals_report_their_margin() {
    let t = GuardThread::start();
    let log = EventLog::new();
    let a = t.connect(Events::to(log.clone())).await;
    let key = unique("margin");
    let lease = a.acquire(&key, &AcquireOptions::try_once()).await.unwrap();
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert!(lease.is_held());
    let margins = renewal_margins(&log);
    // 2 s / 200 ms = 10 renewals; a slow machine may lose a couple, a stalled thread would lose all.
    assert!(margins.len() >= 7, "{} renewals in 2 s", margins.len());
    assert_margins_in_range(&margins);
    lease.release().await.unwrap();
}

/// A renewal that finds another value in the key fires `lost()` with `RenewRejected`, within a period.
async fn replaced_value_is_noticed_by_the_next_renewal(flavor: Flavor) {
    let t = GuardThread::start_on(flavor);
    let a = t.connect(Events::none()).await;
    let key = unique("replaced");
    let lease = a.acquire(&key, &AcquireOptions::try_once()).await.unwrap();
    let replaced_at = Instant::now();
    assert_eq!(
        t.redis(&["SET", &lock_key(&key), "intruder", "PX", "5000"]),
        "OK"
    );
    let reason = tokio::time::timeout(TIMEOUT, lease.lost()).await.unwrap();
    assert_eq!(reason, LossReason::RenewRejected);
    assert!(replaced_at.elapsed() < TIMEOUT / 3 + Duration::from_millis(150));
    assert!(matches!(
        lease.release().await,
        Err(LockError::NotHeld { .. })
    ));
    assert_eq!(
        t.redis(&["GET", &lock_key(&key)]),
        "intruder",
        "release touched another value"
    );
    assert_eq!(
        settle(Duration::from_secs(1), 0, || a.live_threads()).await,
        0
    );
}

/// With the server frozen, renewals time out (`RenewFailed`) and the lease is lost at its local deadline
/// (`Expired`), not much later; the thread then exits.
async fn frozen_server_loses_the_lease_at_its_deadline(flavor: Flavor) {
    let t = GuardThread::start_on(flavor);
    let log = EventLog::new();
    let a = t.connect(Events::to(log.clone())).await;
    let key = unique("frozen");
    let lease = a.acquire(&key, &AcquireOptions::try_once()).await.unwrap();
    tokio::time::sleep(Duration::from_millis(50)).await;
    let frozen = t.freeze();
    // Read after the freeze: a renewal that lands between a read and the freeze would move it.
    let deadline = lease.deadline();
    let reason = tokio::time::timeout(TIMEOUT * 2, lease.lost())
        .await
        .unwrap();
    let noticed = Instant::now();
    assert_eq!(reason, LossReason::Expired);
    assert!(noticed >= deadline, "lost before the deadline");
    assert!(
        noticed <= deadline + Duration::from_millis(150),
        "lost {:?} after the deadline",
        noticed - deadline
    );
    // Still frozen: the thread's own renewal is cut off at the deadline too; it reports that and exits.
    assert_eq!(
        settle(Duration::from_secs(1), 0, || a.live_threads()).await,
        0
    );
    drop(frozen);
    let failed = log.count(|e| matches!(e, LockEvent::RenewFailed { .. }));
    assert!(failed >= 1, "{:#?}", log.snapshot());
}

/// A lease dropped on a thread with no tokio runtime is released by its renewal thread: the lock is free
/// long before its TTL.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropped_outside_a_runtime_the_thread_releases() {
    let t = GuardThread::start();
    let mut settings = config();
    settings.renewal.ttl = Duration::from_secs(10);
    let a = connect_with(&t.server.url(), settings, Events::none()).await;
    let b = t.connect(Events::none()).await;
    let key = unique("no-runtime");
    let lease = a.acquire(&key, &AcquireOptions::try_once()).await.unwrap();
    let dropped_at = Instant::now();
    std::thread::spawn(move || {
        assert!(tokio::runtime::Handle::try_current().is_err());
        drop(lease);
    })
    .join()
    .unwrap();
    let next = b
        .acquire(&key, &AcquireOptions::wait(Duration::from_secs(2)))
        .await
        .unwrap();
    assert!(
        dropped_at.elapsed() < Duration::from_millis(500),
        "{:?}",
        dropped_at.elapsed()
    );
    assert_eq!(
        settle(Duration::from_secs(1), 0, || a.live_threads()).await,
        0
    );
    next.release().await.unwrap();
}

/// A waiter on a lock held for 1 s polls with the default back-off (10 ms doubling to 200 ms): about 9
/// tries, not one per millisecond and not one per second.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn waiters_poll_with_backoff() {
    let t = GuardThread::start();
    let (a, b) = t.pair().await;
    let key = unique("backoff");
    let hold = Duration::from_secs(1);
    let lease = a
        .acquire(&key, &AcquireOptions::try_once().fixed(hold))
        .await
        .unwrap();
    let calls_before = t.evalsha_calls();
    let next = b
        .acquire(&key, &AcquireOptions::wait(Duration::from_secs(3)))
        .await
        .unwrap();
    let tries = t.evalsha_calls() - calls_before;
    // Nominal pauses 10+20+40+80+160 = 310 ms, then 200 ms each: 1 + 5 + 4 = 10 tries by 1.11 s.
    assert!(
        (6..=14).contains(&tries),
        "{tries} tries while a 1 s lease ran out"
    );
    drop(lease);
    next.release().await.unwrap();
}

/// `SET NX` semantics: the same owner cannot take the lock twice.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn not_reentrant() {
    let t = GuardThread::start();
    let a = t.connect(Events::none()).await;
    assert!(!a.capabilities().reentrant && !a.capabilities().wait_notify);
    let key = unique("reenter");
    let opts = AcquireOptions::try_once().owner(OwnerId::new("worker"));
    let lease = a.acquire(&key, &opts).await.unwrap();
    assert!(matches!(
        a.acquire(&key, &opts).await,
        Err(LockError::Timeout { .. })
    ));
    lease.release().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_is_a_clear_error() {
    let t = GuardThread::start();
    let a = t.connect(Events::none()).await;
    let err = a
        .acquire("", &AcquireOptions::try_once())
        .await
        .unwrap_err();
    assert_eq!(err.kind(), "config", "{err}");
    let zero = AcquireOptions::try_once().fixed(Duration::ZERO);
    assert_eq!(a.acquire("k", &zero).await.unwrap_err().kind(), "config");
    let mut bad = config();
    bad.poll.jitter = 2.0;
    let err = RedisGuardThread::connect(&t.server.url(), bad, Events::none())
        .await
        .unwrap_err();
    assert!(err.to_string().contains("poll.jitter"), "{err}");
    // Nothing listens on port 1: a Backend error within the connect timeout, not a hang.
    let started = Instant::now();
    let err = RedisGuardThread::connect("redis://127.0.0.1:1/", config(), Events::none())
        .await
        .unwrap_err();
    assert_eq!(err.kind(), "backend", "{err}");
    assert!(started.elapsed() < Duration::from_secs(3));
    assert_eq!(
        RedisGuardThread::connect("http://x", config(), Events::none())
            .await
            .unwrap_err()
            .kind(),
        "config"
    );
}
