//! The behaviour suite every strategy must pass, written once and run against each strategy on a real
//! server (enabled by the `conformance` feature).
//!
//! Each case is a plain `async fn(&dyn Target)` that panics with the case name on a failure. A case that
//! needs a capability the strategy does not declare says so on stderr and returns: a strategy is not failed
//! for lacking a feature, and the listing of capabilities reports the lack. [`conformance_tests!`] turns
//! every case into its own `#[tokio::test]`.
//!
//! [`conformance_tests!`]: crate::conformance_tests

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use async_trait::async_trait;

use crate::error::LockError;
use crate::event::{EventLog, Events, LockEvent};
use crate::lease::{AcquireOptions, Lease, OwnerId};
use crate::locker::Locker;

/// A strategy under test, with the server it talks to.
#[async_trait]
pub trait Target: Send + Sync {
    /// A new client with its own connections, as a separate process would have, reporting to `events`.
    async fn client(&self, events: Events) -> Arc<dyn Locker>;

    /// The watchdog timeout the clients are configured with (short: second-scale tests).
    fn watchdog_timeout(&self) -> Duration;

    /// A fixed lease the strategy can honour exactly and that is short enough for tests.
    fn short_lease(&self) -> Duration;

    /// Removes the lock behind its holder's back, as an operator or a bug would (DEL, revoke, delete).
    async fn remove_behind_back(&self, lease: &Lease);

    /// Allowance for server round trips and scheduling in timing assertions.
    fn slack(&self) -> Duration {
        Duration::from_millis(250)
    }
}

/// Generates one `#[tokio::test]` per conformance case: this macro holds the one list of cases. `$target`
/// is an expression (it may `.await`) evaluated inside each test, so each test gets its own server.
/// `@cases $target; case, ...` generates a chosen subset.
#[macro_export]
macro_rules! conformance_tests {
    ($target:expr) => {
        $crate::conformance_tests!(@cases $target;
            mutual_exclusion, release_then_reacquire, try_once_on_held_lock, wait_timeout_is_honoured,
            fixed_lease_expires, watchdog_lease_outlives_timeout, tokens_strictly_increase,
            stale_release_is_not_held, stale_release_keeps_newer_hold_of_same_owner,
            lost_when_removed_behind_back, cancelled_acquire_leaks_nothing,
            reentrant_acquire_and_release, non_reentrant_same_owner_times_out,
            undeclared_lease_mode_is_unsupported, events_follow_the_lease_protocol,
            dropped_lease_is_released);
    };
    (@cases $target:expr; $($case:ident),* $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $case() {
                let target = $target;
                $crate::conformance::$case(&target).await;
            }
        )*
    };
}

fn unique_key(case: &str) -> String {
    format!("conf:{case}:{:08x}", rand::random::<u32>())
}

fn skip(case: &str, strategy: &str, lacks: &str) {
    eprintln!("conformance {case}: skipped, {strategy} declares no {lacks}");
}

async fn expect_lease(locker: &dyn Locker, key: &str, opts: &AcquireOptions, case: &str) -> Lease {
    match locker.acquire(key, opts).await {
        Ok(lease) => lease,
        Err(e) => panic!("{case}: {} failed to acquire {key:?}: {e}", locker.id()),
    }
}

/// `locker` takes `key` with `opts` and lets it go again.
async fn expect_free(locker: &dyn Locker, key: &str, opts: &AcquireOptions, case: &str) {
    let lease = expect_lease(locker, key, opts, case).await;
    if let Err(e) = lease.release().await {
        panic!("{case}: {} failed to release {key:?}: {e}", locker.id());
    }
}

/// Releases `lease`, then checks that `other` can take `key` at once (and lets it go again).
async fn release_then_free(lease: Lease, other: &dyn Locker, key: &str, case: &str) {
    if let Err(e) = lease.release().await {
        panic!("{case}: release of {key:?} failed: {e}");
    }
    expect_free(other, key, &AcquireOptions::try_once(), case).await;
}

async fn expect_busy(locker: &dyn Locker, key: &str, case: &str) {
    match locker.acquire(key, &AcquireOptions::try_once()).await {
        Err(LockError::Timeout { .. }) => {}
        Ok(lease) => panic!(
            "{case}: {} acquired {key:?} (token {}) while another holder had it",
            locker.id(),
            lease.token()
        ),
        Err(e) => panic!(
            "{case}: {} try-once on a held lock failed: {e}",
            locker.id()
        ),
    }
}

/// At least 8 contenders on separate clients take turns on one key; nobody is ever inside together.
pub async fn mutual_exclusion(t: &dyn Target) {
    const CASE: &str = "mutual_exclusion";
    const CONTENDERS: usize = 8;
    const ROUNDS: usize = 6;
    let key = unique_key(CASE);
    let inside = Arc::new(AtomicUsize::new(0));
    let overlaps = Arc::new(AtomicUsize::new(0));
    let completed = Arc::new(AtomicUsize::new(0));
    let ttl = t.watchdog_timeout();
    let mut tasks = Vec::new();
    for _ in 0..CONTENDERS {
        let locker = t.client(Events::none()).await;
        let (key, inside, overlaps, completed) = (
            key.clone(),
            inside.clone(),
            overlaps.clone(),
            completed.clone(),
        );
        tasks.push(tokio::spawn(async move {
            for _ in 0..ROUNDS {
                let opts = AcquireOptions::wait(Duration::from_secs(60));
                let called = Instant::now();
                let lease = expect_lease(locker.as_ref(), &key, &opts, CASE).await;
                if inside.fetch_add(1, Ordering::SeqCst) != 0 {
                    overlaps.fetch_add(1, Ordering::SeqCst);
                }
                tokio::time::sleep(Duration::from_millis(2)).await;
                // A lease granted after a wait longer than its TTL may be given up at once by a
                // holder that dates it from its first attempt (node-redlock's `using` does, and so
                // does the deadline of an adapter that cannot say when the winning attempt was
                // sent); any other lease must still be held.
                assert!(
                    lease.is_held() || called.elapsed() >= ttl,
                    "{CASE}: lease not held inside its section"
                );
                inside.fetch_sub(1, Ordering::SeqCst);
                // Such a lease, given up, is no longer the holder's to release.
                match lease.release().await {
                    Ok(()) => {}
                    Err(LockError::NotHeld { .. }) if called.elapsed() >= ttl => {}
                    Err(e) => panic!("{CASE}: release failed: {e}"),
                }
                completed.fetch_add(1, Ordering::SeqCst);
            }
        }));
    }
    for task in tasks {
        task.await.expect("contender task panicked");
    }
    assert_eq!(
        overlaps.load(Ordering::SeqCst),
        0,
        "{CASE}: holders overlapped"
    );
    assert_eq!(completed.load(Ordering::SeqCst), CONTENDERS * ROUNDS);
}

/// A released lock can be taken again, by another client and by the first.
pub async fn release_then_reacquire(t: &dyn Target) {
    const CASE: &str = "release_then_reacquire";
    let key = unique_key(CASE);
    let (a, b) = (
        t.client(Events::none()).await,
        t.client(Events::none()).await,
    );
    let once = AcquireOptions::try_once();
    let lease = expect_lease(a.as_ref(), &key, &once, CASE).await;
    release_then_free(lease, b.as_ref(), &key, CASE).await;
    expect_free(a.as_ref(), &key, &once, CASE).await;
}

/// A try-once on a held lock returns `Timeout` promptly and gives no lease.
pub async fn try_once_on_held_lock(t: &dyn Target) {
    const CASE: &str = "try_once_on_held_lock";
    let key = unique_key(CASE);
    let (a, b) = (
        t.client(Events::none()).await,
        t.client(Events::none()).await,
    );
    let held = expect_lease(a.as_ref(), &key, &AcquireOptions::try_once(), CASE).await;
    let started = Instant::now();
    expect_busy(b.as_ref(), &key, CASE).await;
    let took = started.elapsed();
    assert!(
        took < t.slack(),
        "{CASE}: try-once took {took:?}, more than the slack {:?}",
        t.slack()
    );
    held.release().await.expect("release");
}

/// Waiting on a held lock gives up after the wait, not much later and never earlier.
pub async fn wait_timeout_is_honoured(t: &dyn Target) {
    const CASE: &str = "wait_timeout_is_honoured";
    let key = unique_key(CASE);
    let (a, b) = (
        t.client(Events::none()).await,
        t.client(Events::none()).await,
    );
    let held = expect_lease(a.as_ref(), &key, &AcquireOptions::try_once(), CASE).await;
    let wait = Duration::from_millis(400);
    let started = Instant::now();
    let result = b.acquire(&key, &AcquireOptions::wait(wait)).await;
    let took = started.elapsed();
    assert!(
        matches!(result, Err(LockError::Timeout { .. })),
        "{CASE}: expected Timeout, got {result:?}"
    );
    assert!(took >= wait, "{CASE}: gave up after {took:?} < {wait:?}");
    assert!(
        took <= wait + t.slack(),
        "{CASE}: gave up after {took:?}, over {wait:?} + slack"
    );
    held.release().await.expect("release");
}

/// A fixed lease expires without renewal; the holder knows by its deadline and another owner gets in.
pub async fn fixed_lease_expires(t: &dyn Target) {
    const CASE: &str = "fixed_lease_expires";
    let a = t.client(Events::none()).await;
    if !a.capabilities().fixed_lease {
        return skip(CASE, a.id(), "fixed_lease");
    }
    let b = t.client(Events::none()).await;
    let key = unique_key(CASE);
    let ttl = t.short_lease();
    let before = Instant::now();
    let lease = expect_lease(
        a.as_ref(),
        &key,
        &AcquireOptions::try_once().fixed(ttl),
        CASE,
    )
    .await;
    assert!(lease.deadline() <= before + ttl + Duration::from_millis(1));
    let wait = ttl * 4 + t.slack();
    let next = expect_lease(
        b.as_ref(),
        &key,
        &AcquireOptions::wait(wait).fixed(ttl),
        CASE,
    )
    .await;
    let got_in = before.elapsed();
    assert!(
        got_in >= ttl,
        "{CASE}: second owner got in after {got_in:?}, before the {ttl:?} lease ran out"
    );
    assert!(
        got_in <= ttl + t.slack() * 2,
        "{CASE}: second owner got in only after {got_in:?} (lease {ttl:?})"
    );
    assert!(
        !lease.is_held(),
        "{CASE}: expired lease still believed held"
    );
    tokio::time::timeout(t.slack(), lease.lost())
        .await
        .expect("lost() of an expired lease did not resolve");
    drop(next);
}

/// A watchdog lease stays held for 5× its timeout while another client keeps trying.
pub async fn watchdog_lease_outlives_timeout(t: &dyn Target) {
    const CASE: &str = "watchdog_lease_outlives_timeout";
    let log = EventLog::new();
    let a = t.client(Events::to(log.clone())).await;
    if !a.capabilities().auto_renew {
        return skip(CASE, a.id(), "auto_renew");
    }
    let b = t.client(Events::none()).await;
    let key = unique_key(CASE);
    let timeout = t.watchdog_timeout();
    let lease = expect_lease(a.as_ref(), &key, &AcquireOptions::try_once(), CASE).await;
    let until = Instant::now() + timeout * 5;
    let mut tries = 0;
    while Instant::now() < until {
        expect_busy(b.as_ref(), &key, CASE).await;
        assert!(
            lease.is_held(),
            "{CASE}: holder lost belief after {tries} tries"
        );
        tries += 1;
        tokio::time::sleep((timeout / 10).max(Duration::from_millis(20))).await;
    }
    let renewed = log.count(|e| matches!(e, LockEvent::Renewed { .. }));
    assert!(
        renewed >= 4,
        "{CASE}: only {renewed} Renewed events over 5 timeouts"
    );
    release_then_free(lease, b.as_ref(), &key, CASE).await;
}

/// Fencing tokens strictly increase across successive holders on different clients.
pub async fn tokens_strictly_increase(t: &dyn Target) {
    const CASE: &str = "tokens_strictly_increase";
    let a = t.client(Events::none()).await;
    if !a.capabilities().fencing {
        return skip(CASE, a.id(), "fencing");
    }
    let b = t.client(Events::none()).await;
    let key = unique_key(CASE);
    let mut last = None;
    for round in 0..6 {
        let locker = if round % 2 == 0 { &a } else { &b };
        let lease = expect_lease(locker.as_ref(), &key, &AcquireOptions::try_once(), CASE).await;
        let token = lease.token();
        if let Some(prev) = last {
            assert!(token > prev, "{CASE}: token {token} after {prev}");
        }
        last = Some(token);
        lease.release().await.expect("release");
    }
}

/// Releasing a lease that expired and was taken over is `NotHeld` and leaves the new holder's lock alone.
pub async fn stale_release_is_not_held(t: &dyn Target) {
    const CASE: &str = "stale_release_is_not_held";
    let a = t.client(Events::none()).await;
    if !a.capabilities().fixed_lease {
        return skip(CASE, a.id(), "fixed_lease");
    }
    let (b, c) = (
        t.client(Events::none()).await,
        t.client(Events::none()).await,
    );
    let key = unique_key(CASE);
    let ttl = t.short_lease();
    let stale = expect_lease(
        a.as_ref(),
        &key,
        &AcquireOptions::try_once().fixed(ttl),
        CASE,
    )
    .await;
    let wait = ttl * 4 + t.slack();
    let current = expect_lease(b.as_ref(), &key, &AcquireOptions::wait(wait), CASE).await;
    match stale.release().await {
        Err(LockError::NotHeld { .. }) => {}
        other => panic!("{CASE}: stale release gave {other:?}, expected NotHeld"),
    }
    expect_busy(c.as_ref(), &key, CASE).await;
    assert!(current.is_held());
    current
        .release()
        .await
        .expect("release by the current holder");
}

/// A lease that expired and was then taken again by the same owner on the same client: releasing the
/// stale lease is `NotHeld` and leaves the newer hold alone (same client and owner id, so only the hold
/// itself can tell them apart). A strategy that declares no `hold_identity` must show the flaw it
/// declares: the stale release succeeds and frees the newer hold.
pub async fn stale_release_keeps_newer_hold_of_same_owner(t: &dyn Target) {
    const CASE: &str = "stale_release_keeps_newer_hold_of_same_owner";
    let a = t.client(Events::none()).await;
    if !a.capabilities().fixed_lease {
        return skip(CASE, a.id(), "fixed_lease");
    }
    let b = t.client(Events::none()).await;
    let key = unique_key(CASE);
    let ttl = t.short_lease();
    let owner = OwnerId::new("worker-1");
    let once = AcquireOptions::try_once().owner(owner.clone());
    let stale = expect_lease(a.as_ref(), &key, &once.clone().fixed(ttl), CASE).await;
    tokio::time::timeout(ttl + t.slack(), stale.lost())
        .await
        .unwrap_or_else(|_| panic!("{CASE}: lost() of an expired fixed lease did not resolve"));
    // The server has let it go too once another client gets in.
    let wait = AcquireOptions::wait(ttl * 4 + t.slack());
    expect_free(b.as_ref(), &key, &wait, CASE).await;
    let current = expect_lease(a.as_ref(), &key, &once, CASE).await;
    if !a.capabilities().hold_identity {
        // The declared "no": the server knows the owner only, so the stale release ends the newer hold
        // (whatever it answers: the lease was lost, so `release` says NotHeld).
        let _ = stale.release().await;
        expect_free(b.as_ref(), &key, &AcquireOptions::try_once(), CASE).await;
        drop(current);
        return;
    }
    match stale.release().await {
        Err(LockError::NotHeld { .. }) => {}
        other => panic!("{CASE}: stale release gave {other:?}, expected NotHeld"),
    }
    expect_busy(b.as_ref(), &key, CASE).await;
    assert!(
        current.is_held(),
        "{CASE}: newer hold lost by the stale release"
    );
    release_then_free(current, b.as_ref(), &key, CASE).await;
}

/// The event protocol every measurement rests on, per lease: `Acquired`, then any number of
/// `RenewScheduled`/`Renewed`/`RenewFailed`, then exactly one of `Released` or `Lost`, and nothing after
/// (a renewal attempt in flight when a lease is lost may still report its own `RenewFailed`; none is in
/// flight in these three cases).
/// Checked on a watchdog lease held past two renewal periods and released, on a fixed lease that expires
/// (where fixed leases exist), and on a lease removed behind its holder's back (where a lost signal is
/// declared).
pub async fn events_follow_the_lease_protocol(t: &dyn Target) {
    const CASE: &str = "events_follow_the_lease_protocol";
    let log = EventLog::new();
    let a = t.client(Events::to(log.clone())).await;
    let caps = a.capabilities();
    let base = unique_key(CASE);
    let mut keys = Vec::new();
    if caps.auto_renew {
        let key = format!("{base}:released");
        let lease = expect_lease(a.as_ref(), &key, &AcquireOptions::try_once(), CASE).await;
        tokio::time::sleep(t.watchdog_timeout()).await;
        lease.release().await.expect("release of a held lease");
        keys.push((key, "Released"));
    }
    if caps.fixed_lease {
        let key = format!("{base}:expired");
        let opts = AcquireOptions::try_once().fixed(t.short_lease());
        let lease = expect_lease(a.as_ref(), &key, &opts, CASE).await;
        tokio::time::timeout(t.short_lease() + t.slack(), lease.lost())
            .await
            .unwrap_or_else(|_| panic!("{CASE}: lost() of an expired fixed lease did not resolve"));
        tokio::time::sleep(t.slack()).await;
        let released = lease.release().await;
        assert!(
            matches!(released, Err(LockError::NotHeld { .. })),
            "{CASE}: release of an expired lease gave {released:?}"
        );
        keys.push((key, "Lost"));
    }
    if caps.auto_renew && caps.lost_signal {
        let key = format!("{base}:removed");
        let lease = expect_lease(a.as_ref(), &key, &AcquireOptions::try_once(), CASE).await;
        t.remove_behind_back(&lease).await;
        tokio::time::timeout(t.watchdog_timeout() + t.slack(), lease.lost())
            .await
            .unwrap_or_else(|_| panic!("{CASE}: lost() after a removal did not resolve"));
        let released = lease.release().await;
        assert!(
            matches!(released, Err(LockError::NotHeld { .. })),
            "{CASE}: release of a removed lease gave {released:?}"
        );
        keys.push((key, "Lost"));
    }
    // Late events (a renewal in flight at the end) would land now.
    tokio::time::sleep(t.watchdog_timeout() / 2).await;
    let events = log.snapshot();
    for (key, end) in keys {
        let names: Vec<&str> = events
            .iter()
            .filter(|e| e.key() == key)
            .map(event_name)
            .collect();
        let (first, rest) = names.split_first().unwrap_or((&"none", &[]));
        let (last, middle) = rest.split_last().unwrap_or((&"none", &[]));
        assert!(
            *first == "Acquired"
                && *last == end
                && middle
                    .iter()
                    .all(|n| matches!(*n, "RenewScheduled" | "Renewed" | "RenewFailed")),
            "{CASE}: {} events of {key:?} are {names:?}, expected Acquired, renewals, {end}",
            a.id()
        );
    }
}

fn event_name(event: &LockEvent) -> &'static str {
    match event {
        LockEvent::Acquired { .. } => "Acquired",
        LockEvent::RenewScheduled { .. } => "RenewScheduled",
        LockEvent::Renewed { .. } => "Renewed",
        LockEvent::RenewFailed { .. } => "RenewFailed",
        LockEvent::Lost { .. } => "Lost",
        LockEvent::Released { .. } => "Released",
    }
}

/// A strategy that declares no re-entrancy makes a second acquire by the holding owner wait like anyone
/// else: a try-once is `Timeout`, and the first hold is untouched.
pub async fn non_reentrant_same_owner_times_out(t: &dyn Target) {
    const CASE: &str = "non_reentrant_same_owner_times_out";
    let a = t.client(Events::none()).await;
    if a.capabilities().reentrant {
        return skip(CASE, a.id(), "lack of re-entrancy (it is re-entrant)");
    }
    let key = unique_key(CASE);
    let opts = AcquireOptions::try_once().owner(OwnerId::new("worker-1"));
    let held = expect_lease(a.as_ref(), &key, &opts, CASE).await;
    match a.acquire(&key, &opts).await {
        Err(LockError::Timeout { .. }) => {}
        other => panic!("{CASE}: same-owner re-acquire gave {other:?}, expected Timeout"),
    }
    let wait = AcquireOptions::wait(Duration::from_millis(200)).owner(OwnerId::new("worker-1"));
    match a.acquire(&key, &wait).await {
        Err(LockError::Timeout { .. }) => {}
        other => panic!("{CASE}: same-owner waiting re-acquire gave {other:?}, expected Timeout"),
    }
    assert!(held.is_held(), "{CASE}: the first hold was lost");
    held.release().await.expect("release");
}

/// A lease mode the strategy declares it lacks (`fixed_lease`, `auto_renew`) is `Unsupported`, with no
/// lock taken.
pub async fn undeclared_lease_mode_is_unsupported(t: &dyn Target) {
    const CASE: &str = "undeclared_lease_mode_is_unsupported";
    let a = t.client(Events::none()).await;
    let caps = a.capabilities();
    let key = unique_key(CASE);
    let mut lacking = Vec::new();
    if !caps.fixed_lease {
        lacking.push(AcquireOptions::try_once().fixed(t.short_lease()));
    }
    if !caps.auto_renew {
        lacking.push(AcquireOptions::try_once());
    }
    if lacking.is_empty() {
        return skip(CASE, a.id(), "lack of a lease mode (it has both)");
    }
    for opts in lacking {
        match a.acquire(&key, &opts).await {
            Err(LockError::Unsupported { .. }) => {}
            other => panic!(
                "{CASE}: {} acquire with {:?} gave {other:?}, expected Unsupported",
                a.id(),
                opts.lease
            ),
        }
    }
    if caps.auto_renew || caps.fixed_lease {
        let opts = match caps.auto_renew {
            true => AcquireOptions::try_once(),
            false => AcquireOptions::try_once().fixed(t.short_lease()),
        };
        expect_free(a.as_ref(), &key, &opts, CASE).await;
    }
}

/// `lost()` resolves soon after the lock is removed behind the holder's back.
pub async fn lost_when_removed_behind_back(t: &dyn Target) {
    const CASE: &str = "lost_when_removed_behind_back";
    let a = t.client(Events::none()).await;
    let caps = a.capabilities();
    if !(caps.lost_signal && caps.auto_renew) {
        return skip(CASE, a.id(), "lost_signal with auto_renew");
    }
    let key = unique_key(CASE);
    let lease = expect_lease(a.as_ref(), &key, &AcquireOptions::try_once(), CASE).await;
    let removed_at = Instant::now();
    t.remove_behind_back(&lease).await;
    let bound = t.watchdog_timeout() + t.slack();
    let reason = tokio::time::timeout(bound, lease.lost())
        .await
        .unwrap_or_else(|_| panic!("{CASE}: lost() did not resolve within {bound:?}"));
    eprintln!(
        "{CASE}: {} noticed after {:?}: {reason}",
        a.id(),
        removed_at.elapsed()
    );
    assert!(!lease.is_held());
}

/// Acquires dropped part-way leave no renewal running and no lock held beyond its TTL.
pub async fn cancelled_acquire_leaks_nothing(t: &dyn Target) {
    const CASE: &str = "cancelled_acquire_leaks_nothing";
    let log = EventLog::new();
    let a = t.client(Events::to(log.clone())).await;
    let b = t.client(Events::none()).await;
    let timeout = t.watchdog_timeout();
    let base = unique_key(CASE);
    // Uncontended acquires cut off at many points of their round trips.
    let cut_offs_us = [0u64, 20, 50, 100, 200, 400, 800, 1_500, 3_000, 6_000];
    let mut keys = Vec::new();
    for (i, us) in cut_offs_us.iter().enumerate() {
        let key = format!("{base}:{i}");
        let once = AcquireOptions::try_once();
        let acquire = a.acquire(&key, &once);
        if let Ok(Ok(lease)) = tokio::time::timeout(Duration::from_micros(*us), acquire).await {
            drop(lease);
        }
        keys.push(key);
    }
    // A waiter cut off while it waits on a held lock.
    let waited_key = format!("{base}:waited");
    let holder = expect_lease(b.as_ref(), &waited_key, &AcquireOptions::try_once(), CASE).await;
    let long_wait = AcquireOptions::wait(Duration::from_secs(30));
    let waiter = a.acquire(&waited_key, &long_wait);
    assert!(
        tokio::time::timeout(timeout / 4, waiter).await.is_err(),
        "{CASE}: waiter finished while the lock was held"
    );
    holder.release().await.expect("release");
    keys.push(waited_key);
    // Anything taken by a dropped future expires within one TTL unless an orphan renews it.
    tokio::time::sleep(timeout + t.slack()).await;
    let renewed_before = log.count(|e| matches!(e, LockEvent::Renewed { .. }));
    for key in &keys {
        let lease = b.acquire(key, &AcquireOptions::try_once()).await;
        match lease {
            Ok(lease) => lease.release().await.expect("release"),
            Err(e) => panic!("{CASE}: {key:?} still locked after its TTL: {e}"),
        }
    }
    tokio::time::sleep(timeout / 2).await;
    let renewed_after = log.count(|e| matches!(e, LockEvent::Renewed { .. }));
    assert_eq!(
        renewed_before, renewed_after,
        "{CASE}: renewals still running after every acquire was dropped"
    );
}

/// The same owner acquires twice and must release twice.
pub async fn reentrant_acquire_and_release(t: &dyn Target) {
    const CASE: &str = "reentrant_acquire_and_release";
    let a = t.client(Events::none()).await;
    if !a.capabilities().reentrant {
        return skip(CASE, a.id(), "reentrant");
    }
    let b = t.client(Events::none()).await;
    let key = unique_key(CASE);
    let opts = AcquireOptions::try_once().owner(OwnerId::new("worker-1"));
    let outer = expect_lease(a.as_ref(), &key, &opts, CASE).await;
    let inner = expect_lease(a.as_ref(), &key, &opts, CASE).await;
    assert_eq!(
        outer.token(),
        inner.token(),
        "{CASE}: re-entry is the same hold"
    );
    inner.release().await.expect("inner release");
    expect_busy(b.as_ref(), &key, CASE).await;
    assert!(outer.is_held(), "{CASE}: outer hold lost by inner release");
    release_then_free(outer, b.as_ref(), &key, CASE).await;
}

/// Dropping a lease without releasing it frees the lock soon, well before its TTL.
pub async fn dropped_lease_is_released(t: &dyn Target) {
    const CASE: &str = "dropped_lease_is_released";
    let (a, b) = (
        t.client(Events::none()).await,
        t.client(Events::none()).await,
    );
    let key = unique_key(CASE);
    let timeout = t.watchdog_timeout();
    let lease = expect_lease(a.as_ref(), &key, &AcquireOptions::try_once(), CASE).await;
    let dropped_at = Instant::now();
    drop(lease);
    let next = expect_lease(b.as_ref(), &key, &AcquireOptions::wait(timeout * 2), CASE).await;
    let took = dropped_at.elapsed();
    // The key's TTL ran from the acquire, before the drop: three quarters of it after the drop leaves
    // a quarter (75 ms at the shortest timeout here, redis-py's 300 ms with its 100 ms polls) between
    // a release and an expiry.
    assert!(
        took < timeout * 3 / 4,
        "{CASE}: lock freed {took:?} after drop; a background release should beat the {timeout:?} TTL"
    );
    next.release().await.expect("release");
}
