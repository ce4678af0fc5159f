//! `redisson-classic` and `redisson` against real redis-servers: the conformance suite for both, then
//! what makes them Redisson — a renewal error ends classic renewal for good (the lock is lost while
//! `redisson` and `redis-watchdog` keep theirs), `WAIT` after lock writes with a replica (counted by the
//! primary's `INFO commandstats`), an acquire no replica confirmed fails and is undone, every final
//! unlock publishes, and no renew call reaches a key after its release (read from `MONITOR`). The
//! conformance suites and the cases that break something on purpose (a blackholed or reset connection,
//! a busy script, a paused replica) run on Redis and on Valkey (`on_valkey::…`).
#![allow(clippy::unwrap_used)]

use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use lockbench_servers::{Direction, Fault, Proxy, RedisOptions, RedisPair, RedisServer};
use lockers::redis::{
    ConnectionSettings, Generation, RedisWatchdog, Redisson, RedissonConfig, RetryDelay, Topology,
    WatchdogConfig,
};
use lockers::{AcquireOptions, EventLog, Events, LockError, LockEvent, Locker, LossReason};

#[path = "support/redis.rs"]
mod support;

use support::{
    Flavor, PREFIX, Setup, Strategy, TIMEOUT, expect_busy, lock_key, on_each_flavor, unique,
};

fn config(generation: Generation) -> RedissonConfig {
    RedissonConfig {
        renewal: lockers::Renewal::new(TIMEOUT),
        key_prefix: PREFIX.into(),
        ..RedissonConfig::new(generation)
    }
}

/// Redisson clients of one generation.
struct Row(Generation);

#[async_trait]
impl Strategy for Row {
    type Client = Redisson;

    async fn connect(&self, url: &str, events: Events) -> Arc<Redisson> {
        Arc::new(
            Redisson::connect(url, config(self.0), events)
                .await
                .unwrap(),
        )
    }
}

mod classic {
    use super::*;
    on_each_flavor!(@conformance |flavor| Setup::start_on(flavor, Row(Generation::Classic)););
}

mod scheduler {
    use super::*;
    on_each_flavor!(@conformance |flavor| Setup::start_on(flavor, Row(Generation::Scheduler)););
}

// The faults on Valkey too. The proxy's blackholes and resets happen between the client and the
// server, which sees none of them: on Valkey they run in their cheapest forms (one blackhole with its
// reset, one reset under a written renewal); the longer outages (the 3-retry and watchdog riders)
// stay on Redis only.
on_each_flavor!(
    classic_stops_renewing_after_one_error,
    a_reset_under_a_written_renewal_waits_for_its_timeout,
    classic_renewal_retries_busy,
    acquire_no_replica_confirmed_fails_and_is_undone,
);

/// A server of `flavor`.
fn server_of(flavor: Flavor) -> RedisServer {
    RedisServer::start_with(RedisOptions::of(flavor)).unwrap()
}

#[test]
fn ids_and_capabilities() {
    let caps = Redisson::CAPABILITIES;
    assert!(caps.reentrant && caps.auto_renew && caps.fixed_lease && caps.wait_notify);
    assert!(!caps.fencing, "Redisson has no fencing token");
    assert!(!caps.lost_signal, "Redisson never tells the holder");
}

// ---------------------------------------------------------------------------------------------------
// A renewal error (redisson#2515, #3194).
// ---------------------------------------------------------------------------------------------------

/// The watchdog timeout of the renewal-error test: long enough that a retry one period after the
/// failure still lands well before the TTL runs out.
const LONG: Duration = Duration::from_millis(3000);
/// Its renewal period.
const LONG_PERIOD: Duration = Duration::from_millis(1000);

/// Redisson's command timeouts scaled down (3 s → 150 ms, 1.5 s → 50 ms; 3 retries kept), so a
/// renewal gives up after about 4 × 150 ms of silence.
fn quick_connection() -> ConnectionSettings {
    ConnectionSettings {
        response_timeout: Duration::from_millis(150),
        ..ConnectionSettings::default()
    }
}

/// Connects a holder of the strategy called `row` to `url`.
async fn holder(row: &str, url: &str, events: Events) -> Arc<dyn Locker> {
    let redisson = |generation| RedissonConfig {
        renewal: lockers::Renewal::new(LONG),
        key_prefix: PREFIX.into(),
        connection: quick_connection(),
        retry_interval: Duration::from_millis(50),
        ..RedissonConfig::new(generation)
    };
    match row {
        "redisson-classic" => Arc::new(
            Redisson::connect(url, redisson(Generation::Classic), events)
                .await
                .unwrap(),
        ),
        "redisson" => Arc::new(
            Redisson::connect(url, redisson(Generation::Scheduler), events)
                .await
                .unwrap(),
        ),
        // The 3.44+ scheduler with 3.43's retry defaults (3 attempts, constant interval).
        "redisson-3-retries" => {
            let config = RedissonConfig {
                retry_attempts: 3,
                retry_delay: RetryDelay::Constant,
                ..redisson(Generation::Scheduler)
            };
            Arc::new(Redisson::connect(url, config, events).await.unwrap())
        }
        _ => {
            let config = WatchdogConfig {
                renewal: lockers::Renewal::new(LONG),
                key_prefix: PREFIX.into(),
                connection: quick_connection(),
                ..WatchdogConfig::default()
            };
            Arc::new(RedisWatchdog::connect(url, config, events).await.unwrap())
        }
    }
}

/// What a holder whose first renewal hit a blackhole and a connection reset went through.
struct AfterError {
    /// `RenewFailed` events.
    failed: usize,
    /// `Renewed` events after the failure.
    renewed_after: usize,
    /// Whether another client took the lock within 2 timeouts, and when (after the acquire).
    taken_after: Option<Duration>,
    /// The holder's `lost()`, if it resolved meanwhile.
    lost: Option<LossReason>,
}

/// Holds a watchdog lease through a proxy; the requests of its first renewal and of every retry are
/// dropped (a blackhole from 0.7 to `until_periods` periods after the acquire, at most a third of
/// the TTL; Redisson's retries are spent 0.6 periods after the renewal was first sent) and the connection is then reset. Another client, straight
/// to the server, waits for the lock for 2 timeouts.
async fn renewal_error(row: &str, until_periods: f64, flavor: Flavor) -> AfterError {
    let server = server_of(flavor);
    let proxy = Proxy::start(server.addr()).unwrap();
    let log = EventLog::new();
    let proxied = format!("redis://{}", proxy.addr());
    let a = holder(row, &proxied, Events::to(log.clone())).await;
    let b = holder(row, &server.url(), Events::none()).await;
    let key = unique("renewal-error");
    let lease = a.acquire(&key, &AcquireOptions::try_once()).await.unwrap();
    let acquired = Instant::now();
    tokio::time::sleep_until((acquired + LONG_PERIOD.mul_f64(0.7)).into()).await;
    proxy.set(Direction::Upstream, Fault::Blackhole);
    tokio::time::sleep_until((acquired + LONG_PERIOD.mul_f64(until_periods)).into()).await;
    proxy.reset_all();
    proxy.set(Direction::Upstream, Fault::Pass);
    let failed_at = log.count(|e| matches!(e, LockEvent::Renewed { .. }));
    let taken = b.acquire(&key, &AcquireOptions::wait(LONG * 2)).await;
    let taken_after = match taken {
        Ok(lease) => {
            let at = acquired.elapsed();
            lease.release().await.unwrap();
            Some(at)
        }
        Err(LockError::Timeout { .. }) => None,
        Err(e) => panic!("{row}: contender failed: {e}"),
    };
    let lost = tokio::time::timeout(Duration::ZERO, lease.lost())
        .await
        .ok();
    let report = AfterError {
        failed: log.count(|e| matches!(e, LockEvent::RenewFailed { .. })),
        renewed_after: log.count(|e| matches!(e, LockEvent::Renewed { .. })) - failed_at,
        taken_after,
        lost,
    };
    eprintln!(
        "{row}: {} renewal failures, {} renewals after, taken after {:?}, lost {:?}",
        report.failed, report.renewed_after, report.taken_after, report.lost
    );
    let _ = lease.release().await;
    report
}

/// Classic Redisson stops renewing after one error: the lock expires a TTL after the last renewal and
/// another client takes it while the holder never heard of a loss until its deadline.
async fn classic_stops_renewing_after_one_error(flavor: Flavor) {
    let r = renewal_error("redisson-classic", 1.7, flavor).await;
    assert_eq!(r.failed, 1, "one failed renewal, then none attempted");
    assert_eq!(r.renewed_after, 0, "classic renewed after an error");
    let taken = r.taken_after.expect("the lock outlived its TTL unrenewed");
    assert!(
        taken >= LONG - Duration::from_millis(100) && taken < LONG * 2,
        "taken after {taken:?}, expected about one TTL after the acquire"
    );
    assert_eq!(
        r.lost,
        Some(LossReason::Expired),
        "lost() only at the deadline"
    );
}

/// An outage shorter than Redisson's retry budget is absorbed by re-sending the renew call: classic
/// keeps its lock (what #3194's reporters saw fail were outages longer than the retries).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn classic_rides_out_an_outage_within_its_retries() {
    let r = renewal_error("redisson-classic", 1.25, Flavor::Redis).await;
    assert_eq!(r.failed, 0, "the renewal failed despite retries");
    assert!(r.renewed_after >= 2, "renewal stopped: {}", r.renewed_after);
    assert_eq!(r.taken_after, None, "the lock was taken");
}

/// Redisson 3.44+ retries at the next tick: with 3.43's retry budget (3 re-sends, at once after a
/// response timeout) the failure comes 0.6 periods after the renewal was due, the next tick before
/// expiry, and the lock stays held.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scheduler_retries_at_the_next_tick() {
    let r = renewal_error("redisson-3-retries", 1.7, Flavor::Redis).await;
    assert!(r.failed >= 1, "the failure is reported");
    assert!(r.renewed_after >= 2, "renewal resumed: {}", r.renewed_after);
    assert_eq!(r.taken_after, None, "the lock was taken");
    assert_eq!(r.lost, None);
}

/// A `redisson` holder (scaled timeouts) behind a proxy whose requests are blackholed from 0.7 of a
/// renewal period after its acquire, before its first renewal.
struct Blackholed {
    _server: RedisServer,
    _client: Arc<dyn Locker>,
    proxy: Proxy,
    log: Arc<EventLog>,
    lease: lockers::Lease,
    acquired: Instant,
}

async fn blackholed_before_the_first_renewal(name: &str, flavor: Flavor) -> Blackholed {
    let server = server_of(flavor);
    let proxy = Proxy::start(server.addr()).unwrap();
    let log = EventLog::new();
    let proxied = format!("redis://{}", proxy.addr());
    let a = holder("redisson", &proxied, Events::to(log.clone())).await;
    let lease = a
        .acquire(&unique(name), &AcquireOptions::try_once())
        .await
        .unwrap();
    let acquired = Instant::now();
    tokio::time::sleep_until((acquired + LONG_PERIOD.mul_f64(0.7)).into()).await;
    proxy.set(Direction::Upstream, Fault::Blackhole);
    Blackholed {
        _server: server,
        _client: a,
        proxy,
        log,
        lease,
        acquired,
    }
}

/// Redisson 3.52.0's retry budget, as measured with the real library (`jvm-redisson`, renewal-error):
/// 4 re-sends, each after a jittered `retryDelay` (scaled: 17-33 ms, then 33-67 ms), response timeouts
/// included. A renewal due 1 period (1 s) after the acquire into a blackhole fails only after 5 response
/// timeouts (5 × 150 ms) and 4 pauses: 1.87-1.98 s after the acquire (3.43's budget: 1.6 s), so the
/// next tick comes about a TTL after the acquire, too late.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scheduler_spends_the_retry_budget_of_3_52() {
    let Blackholed {
        _server,
        _client,
        proxy,
        log,
        lease,
        acquired,
    } = blackholed_before_the_first_renewal("retry-budget", Flavor::Redis).await;
    let failed = |log: &EventLog| log.count(|e| matches!(e, LockEvent::RenewFailed { .. })) > 0;
    while !failed(&log) && acquired.elapsed() < LONG {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let failed_after = acquired.elapsed();
    proxy.reset_all();
    proxy.set(Direction::Upstream, Fault::Pass);
    eprintln!("redisson: the renewal failed {failed_after:?} after the acquire");
    assert!(
        (Duration::from_millis(1850)..Duration::from_millis(2400)).contains(&failed_after),
        "renewal failed {failed_after:?} after the acquire, expected 1.87-1.98 s (4 jittered retries)"
    );
    drop(lease);
}

/// A connection reset under a renew call already written does not end the attempt: Redisson fails only
/// the commands not yet written when a connection closes (`CommandsQueue.channelInactive`), so the
/// attempt ends at its response timeout (as the real 3.52.0 showed under `renewal-error`: its last
/// attempt failed at 2015 ms, after the reset at 1.9 s). The renewal due 1 s after the acquire goes
/// into a blackhole, the connection is reset 60 ms later and the path cleared: the renewal succeeds
/// only after the first attempt's 150 ms timeout, not right after the reset.
async fn a_reset_under_a_written_renewal_waits_for_its_timeout(flavor: Flavor) {
    let Blackholed {
        _server,
        _client,
        proxy,
        log,
        lease,
        acquired,
    } = blackholed_before_the_first_renewal("reset-written", flavor).await;
    // The first renew call is due a period after the acquire, on Redisson's timer.
    tokio::time::sleep_until((acquired + LONG_PERIOD + Duration::from_millis(60)).into()).await;
    proxy.set(Direction::Upstream, Fault::Pass);
    proxy.reset_all();
    let renewed = |log: &EventLog| {
        log.snapshot().into_iter().find_map(|e| match e {
            LockEvent::Renewed { done_at, .. } => Some(done_at),
            _ => None,
        })
    };
    while renewed(&log).is_none() && acquired.elapsed() < LONG {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let done = renewed(&log).expect("renewed after the reset") - acquired;
    eprintln!("redisson: the renewal succeeded {done:?} after the acquire");
    // The first attempt (sent at 1 s, at most a 12 ms timer tick late) times out at 1.15 s or later,
    // and the re-send follows a pause of at least 16 ms; right after the reset it would be 1.08-1.1 s.
    assert!(
        done >= LONG_PERIOD + Duration::from_millis(160),
        "the renewal succeeded {done:?} after the acquire, before the first attempt timed out"
    );
    drop(lease);
}

/// redis-watchdog retries until its deadline: the lock stays held.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watchdog_retries_until_the_deadline() {
    let r = renewal_error("redis-watchdog", 1.7, Flavor::Redis).await;
    assert!(r.failed >= 1);
    assert!(r.renewed_after >= 2, "renewal resumed: {}", r.renewed_after);
    assert_eq!(r.taken_after, None, "the lock was taken");
    assert_eq!(r.lost, None);
}

/// A Lua script that keeps Redis busy for `ARGV[1]` ms (the busy-server scenario's).
const BUSY_SCRIPT: &str = "local s = redis.call('TIME') local b = s[1] * 1000 + s[2] / 1000 \
    while true do local n = redis.call('TIME') \
    if n[1] * 1000 + n[2] / 1000 - b >= tonumber(ARGV[1]) then return 1 end end";

/// A `BUSY` spell at the first renewal, as measured with the real Redisson 3.43.0 (`jvm-redisson-3.43`,
/// docs/findings/redisson.md): Redisson re-sends a renewal answered `BUSY` after `retryInterval`, up to
/// `retryAttempts` (3) times, so classic renewal survives a spell shorter than that budget and stops
/// for good after a longer one. Two holders, `retryInterval` 500 ms and 20 ms, meet one 1 s script
/// (`BUSY` answers from about 0.9 to 1.8 s after the acquire; the first renewals are due at 1 s): the
/// first renews again, the second's lock expires a TTL after the acquire.
async fn classic_renewal_retries_busy(flavor: Flavor) {
    let server = server_of(flavor);
    let addr = server.addr();
    let classic = |retry_ms| RedissonConfig {
        renewal: lockers::Renewal::new(LONG),
        key_prefix: PREFIX.into(),
        connection: quick_connection(),
        retry_interval: Duration::from_millis(retry_ms),
        ..RedissonConfig::new(Generation::Classic)
    };
    let url = server.url();
    let patient = Redisson::connect(&url, classic(500), Events::none())
        .await
        .unwrap();
    let hasty = Redisson::connect(&url, classic(20), Events::none())
        .await
        .unwrap();
    let (patient_key, hasty_key) = (unique("busy-patient"), unique("busy-hasty"));
    let once = AcquireOptions::try_once();
    let patient_lease = patient.acquire(&patient_key, &once).await.unwrap();
    let hasty_lease = hasty.acquire(&hasty_key, &once).await.unwrap();
    let acquired = Instant::now();
    tokio::time::sleep_until((acquired + LONG_PERIOD.mul_f64(0.8)).into()).await;
    let command = |args: &[&str]| {
        lockbench_servers::probe::resp_command(addr, args, Duration::from_secs(5)).unwrap()
    };
    command(&["CONFIG", "SET", "lua-time-limit", "100"]);
    tokio::task::spawn_blocking(move || {
        lockbench_servers::probe::resp_command(
            addr,
            &["EVAL", BUSY_SCRIPT, "0", "1000"],
            Duration::from_secs(5),
        )
        .unwrap()
    })
    .await
    .unwrap();
    command(&["CONFIG", "SET", "lua-time-limit", "5000"]);
    tokio::time::sleep_until((acquired + LONG + LONG_PERIOD / 2).into()).await;
    let exists = |key: &str| command(&["EXISTS", &lock_key(key)]);
    eprintln!("{}", command(&["INFO", "errorstats"]));
    assert_eq!(
        exists(&patient_key),
        "1",
        "a BUSY spell shorter than the retries ended classic renewal"
    );
    assert_eq!(
        exists(&hasty_key),
        "0",
        "a BUSY spell longer than the retries did not end classic renewal"
    );
    patient_lease.release().await.unwrap();
    drop(hasty_lease);
}

// ---------------------------------------------------------------------------------------------------
// WAIT with replicas.
// ---------------------------------------------------------------------------------------------------

/// `calls` of `cmdstat_<command>` on `server`.
fn calls(server: &RedisServer, command: &str) -> u64 {
    let info = server.command(&["INFO", "commandstats"]).unwrap();
    let prefix = format!("cmdstat_{command}:calls=");
    info.lines()
        .find_map(|l| l.strip_prefix(prefix.as_str()))
        .and_then(|rest| rest.split(',').next())
        .map_or(0, |n| n.parse().unwrap())
}

fn replicated(generation: Generation, topology: Topology) -> RedissonConfig {
    RedissonConfig {
        topology,
        ..config(generation)
    }
}

/// With a replica, every lock write is followed by a `WAIT`: the primary counts one probe (`WAIT 0 0`),
/// then one per acquire, renew call and release. In single-server mode it counts none.
async fn waits_after_lock_writes(generation: Generation) {
    let pair = RedisPair::start().unwrap();
    let primary = pair.primary();
    for topology in [Topology::Single, Topology::Replicated] {
        let a = Redisson::connect(
            &primary.url(),
            replicated(generation, topology),
            Events::none(),
        )
        .await
        .unwrap();
        let before = calls(primary, "wait");
        let lease = a
            .acquire(&unique("wait"), &AcquireOptions::try_once())
            .await
            .unwrap();
        // Two renewals, then the release half a period after the second was sent: its WAIT is back
        // and the next renewal is not yet due, so none is in flight beside the release. (A period
        // here runs from the previous renewal's answer, WAIT included, so a fixed sleep may see one.)
        let renewed = lockbench_servers::poll::until_async(TIMEOUT * 5, || a.renew_calls() >= 2);
        assert!(
            renewed.await,
            "{generation:?} {topology:?}: no second renewal"
        );
        tokio::time::sleep(TIMEOUT / 6).await;
        lease.release().await.unwrap();
        let waits = calls(primary, "wait") - before;
        let renewals = a.renew_calls();
        eprintln!("{generation:?} {topology:?}: {waits} WAITs, {renewals} renew calls");
        match topology {
            Topology::Single => assert_eq!(waits, 0),
            Topology::Replicated => {
                assert!(renewals >= 2, "only {renewals} renew calls");
                assert_eq!(
                    waits,
                    1 + 1 + renewals + 1,
                    "probe + acquire + renewals + release"
                );
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn classic_waits_after_lock_writes() {
    waits_after_lock_writes(Generation::Classic).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scheduler_waits_after_lock_writes() {
    waits_after_lock_writes(Generation::Scheduler).await;
}

/// A replica that confirms nothing (stopped with SIGSTOP, still connected) fails the acquire with
/// Redisson's error, and the unconfirmed hold is released again (3.47+; each of the 4 retries after
/// a pause scaled by `retry_interval`, short here).
async fn acquire_no_replica_confirmed_fails_and_is_undone(flavor: Flavor) {
    let pair = RedisPair::start_with(RedisOptions::of(flavor)).unwrap();
    let primary = pair.primary();
    let config = RedissonConfig {
        slaves_sync_timeout: Duration::from_millis(300),
        retry_interval: Duration::from_millis(20),
        ..replicated(Generation::Scheduler, Topology::Replicated)
    };
    let a = Redisson::connect(&primary.url(), config, Events::none())
        .await
        .unwrap();
    let key = unique("unsynced");
    pair.replica().pause().unwrap();
    let started = Instant::now();
    let result = a.acquire(&key, &AcquireOptions::try_once()).await;
    let took = started.elapsed();
    let exists = primary.command(&["EXISTS", &lock_key(&key)]).unwrap();
    pair.replica().resume().unwrap();
    match result {
        Err(LockError::Backend { source, .. }) => {
            assert!(
                source.to_string().starts_with("None of slaves were synced"),
                "{source}"
            );
        }
        other => panic!("expected the sync failure, got {other:?}"),
    }
    assert_eq!(exists, "0", "the unconfirmed hold was left on the primary");
    assert_eq!(a.held_locks(), 0);
    // The acquire's WAIT and the undoing release's WAIT each waited out the sync timeout.
    assert!(took >= Duration::from_millis(600), "took {took:?}");
}

// ---------------------------------------------------------------------------------------------------
// Unlock messages and renewals after unlock.
// ---------------------------------------------------------------------------------------------------

/// Every final unlock publishes, with or without waiters (the primary counts `PUBLISH`).
async fn every_unlock_publishes(generation: Generation) {
    let t = Setup::start(Row(generation));
    let a = t.connect(Events::none()).await;
    let key = unique("publish");
    for _ in 0..20 {
        let lease = a.acquire(&key, &AcquireOptions::try_once()).await.unwrap();
        lease.release().await.unwrap();
    }
    assert_eq!(t.calls("publish"), 20);
    let channel = format!("redisson_lock__channel:{}", lock_key(&key));
    assert_eq!(t.subscribers(&channel), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn classic_unlock_always_publishes() {
    every_unlock_publishes(Generation::Classic).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scheduler_unlock_always_publishes() {
    every_unlock_publishes(Generation::Scheduler).await;
}

/// The model speaks Redisson's names on the wire (issue 46 item 8): its waiter listens on
/// `redisson_lock__channel:<lock>` and is woken by the unlock a Redisson client sends (the hash deleted
/// and `0` published there), long before the holder's 5 s PTTL runs out; and its own final release
/// publishes Redisson's `0` there. Against the real Redisson: `adapter_jvm.rs`,
/// `redisson_and_its_models_hand_off_on_one_lock`.
async fn speaks_redissons_channel(generation: Generation) {
    use futures::StreamExt;

    let t = Setup::start(Row(generation));
    let a = t.connect(Events::none()).await;
    let key = unique("channel");
    let lock = lock_key(&key);
    let channel = format!("redisson_lock__channel:{lock}");
    // A Redisson client's hold: `<uuid>:<thread id>` → 1, a 5 s lease.
    t.redis(&["HSET", &lock, "8c0e0a6e-5d1c-4b8e-9a51-2f0c3c7d9e10:1", "1"]);
    t.redis(&["PEXPIRE", &lock, "5000"]);
    let waiting = tokio::spawn({
        let (a, key) = (a.clone(), key.clone());
        async move {
            let lease = a
                .acquire(&key, &AcquireOptions::wait(Duration::from_secs(8)))
                .await;
            (Instant::now(), lease)
        }
    });
    let deadline = Instant::now() + Duration::from_secs(5);
    while t.subscribers(&channel) == 0 {
        assert!(Instant::now() < deadline, "no waiter on {channel}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // Past the waiter's retry right after its subscription: it now sleeps until a message or the PTTL.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let mut listener = redis::Client::open(t.server.url().as_str())
        .unwrap()
        .get_async_pubsub()
        .await
        .unwrap();
    listener.subscribe(&channel).await.unwrap();
    // Redisson's unlock script: the hash deleted, UNLOCK_MESSAGE published.
    let released = Instant::now();
    t.redis(&["DEL", &lock]);
    t.redis(&["PUBLISH", &channel, "0"]);
    let (granted, lease) = waiting.await.unwrap();
    let took = granted.duration_since(released);
    eprintln!("{generation:?}: woken {took:?} after Redisson's unlock");
    assert!(
        took < Duration::from_secs(1),
        "the waiter slept {took:?} of the 5 s PTTL"
    );
    let mut messages = listener.on_message();
    let ours = messages.next().await.unwrap();
    assert_eq!(
        ours.get_payload::<String>().unwrap(),
        "0",
        "Redisson's own message"
    );
    lease.unwrap().release().await.unwrap();
    let theirs = tokio::time::timeout(Duration::from_secs(2), messages.next())
        .await
        .expect("no unlock message on Redisson's channel")
        .unwrap();
    assert_eq!(theirs.get_channel_name(), channel);
    assert_eq!(theirs.get_payload::<String>().unwrap(), "0");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn classic_speaks_redissons_channel() {
    speaks_redissons_channel(Generation::Classic).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scheduler_speaks_redissons_channel() {
    speaks_redissons_channel(Generation::Scheduler).await;
}

/// The commands a redis-server ran, read from `MONITOR` on a connection of its own.
struct Monitor {
    lines: Arc<Mutex<Vec<String>>>,
    stream: TcpStream,
}

impl Monitor {
    fn start(addr: SocketAddr) -> Monitor {
        let mut stream = TcpStream::connect(addr).unwrap();
        stream.write_all(b"MONITOR\r\n").unwrap();
        let lines = Arc::new(Mutex::new(Vec::new()));
        let mut reader = BufReader::new(stream.try_clone().unwrap());
        let sink = lines.clone();
        std::thread::spawn(move || {
            let mut line = String::new();
            while reader.read_line(&mut line).is_ok_and(|n| n > 0) {
                sink.lock().unwrap().push(std::mem::take(&mut line));
            }
        });
        Monitor { lines, stream }
    }

    /// Top-level `EVALSHA` calls (not commands run inside scripts), as their quoted arguments.
    fn script_calls(&self) -> Vec<Vec<String>> {
        let lines = self.lines.lock().unwrap();
        lines
            .iter()
            .filter(|l| !l.contains(" lua]"))
            .map(|l| {
                l.split('"')
                    .skip(1)
                    .step_by(2)
                    .map(str::to_owned)
                    .collect::<Vec<_>>()
            })
            .filter(|args| {
                args.first()
                    .is_some_and(|c| c.eq_ignore_ascii_case("evalsha"))
            })
            .collect()
    }
}

impl Drop for Monitor {
    fn drop(&mut self) {
        let _ = self.stream.shutdown(std::net::Shutdown::Both);
    }
}

/// What many short watchdog cycles on fresh keys (most held a few ms, every tenth past a renewal
/// period) sent, in the server's own order of commands (`MONITOR`).
struct Cycles {
    /// Renew calls the server ran.
    renewals: usize,
    /// Keys named by a renew call the server ran after that key's release.
    after_unlock: usize,
    /// The most scheduler timer chains seen alive.
    most_chains: usize,
    /// Lock keys left on the server a timeout after the last release.
    left: usize,
}

async fn short_cycles(generation: Generation) -> Cycles {
    let t = Setup::start(Row(generation));
    let monitor = Monitor::start(t.server.addr());
    let a = t.connect(Events::none()).await;
    let base = unique("cycles");
    let mut most_chains = 0;
    for i in 0..150u32 {
        let key = format!("{base}:{i}");
        let lease = a.acquire(&key, &AcquireOptions::try_once()).await.unwrap();
        // Every tenth hold outlasts a renewal period and the tick of Redisson's timer (100 ms at
        // 3.43's defaults), on which the renewal fires.
        let hold = if i % 10 == 9 {
            TIMEOUT / 3 + Duration::from_millis(160)
        } else {
            Duration::from_millis(u64::from(i % 7))
        };
        tokio::time::sleep(hold).await;
        most_chains = most_chains.max(a.renewal_chains());
        lease.release().await.unwrap();
    }
    tokio::time::sleep(TIMEOUT).await;
    let calls = monitor.script_calls();
    // calls[i] = ["EVALSHA", sha, numkeys, keys..., args...]; the first call is an acquire.
    let acquire_sha = calls[0][1].clone();
    let mut released = std::collections::HashSet::new();
    let (mut renewals, mut after_unlock) = (0, 0);
    for call in &calls {
        let numkeys: usize = call[2].parse().unwrap();
        let keys = &call[3..3 + numkeys];
        if numkeys == 3 && keys[2].starts_with("redisson_unlock_latch:") {
            released.insert(keys[0].clone());
        } else if call[1] != acquire_sha {
            renewals += 1;
            after_unlock += keys.iter().filter(|k| released.contains(*k)).count();
        }
    }
    assert_eq!(released.len(), 150, "MONITOR missed releases");
    assert_eq!(
        renewals,
        a.renew_calls() as usize,
        "server and client disagree"
    );
    let pattern = format!("{}*", lock_key(&base).trim_end_matches('}'));
    let left = t
        .redis(&["KEYS", &pattern])
        .lines()
        .filter(|l| !l.is_empty())
        .count();
    let cycles = Cycles {
        renewals,
        after_unlock,
        most_chains,
        left,
    };
    eprintln!(
        "{generation:?}: {} script calls, {renewals} renew calls, {after_unlock} on released keys, \
         at most {most_chains} scheduler chains, {left} lock keys left",
        calls.len()
    );
    cycles
}

/// Classic: a renewal timer runs only while its lock is held, so no renew call follows a release.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn classic_no_renewal_after_unlock() {
    let c = short_cycles(Generation::Classic).await;
    assert!(c.renewals >= 15, "only {} renew calls", c.renewals);
    assert_eq!(c.after_unlock, 0, "renew calls on keys after their release");
    assert_eq!((c.left, c.most_chains), (0, 0));
}

/// 3.44+: Redisson cancels a lock's renewal only once the unlock's answer is back, and a tick builds
/// its chunk from the locks registered when it is sent, so a renew call can reach the server right
/// after the release; it answers 0 and refreshes nothing (no key outlives the run). With restarted
/// timer chains (see `timer_chains_pile_up_after_idle`) ticks come often and such calls are common.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scheduler_renewals_after_unlock_refresh_nothing() {
    let c = short_cycles(Generation::Scheduler).await;
    assert!(c.renewals >= 15, "only {} renew calls", c.renewals);
    assert_eq!(c.left, 0, "a released lock was kept alive");
    assert!(c.most_chains >= 1);
}

/// Redisson's scheduler stops by clearing its `running` flag only: a lock taken right after the last
/// one was released starts a second timer chain while the first one's timer is still pending, and
/// both keep ticking.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn timer_chains_pile_up_after_idle() {
    let t = Setup::start(Row(Generation::Scheduler));
    let a = t.connect(Events::none()).await;
    let first = a
        .acquire(&unique("first"), &AcquireOptions::try_once())
        .await
        .unwrap();
    first.release().await.unwrap();
    let second = a
        .acquire(&unique("second"), &AcquireOptions::try_once())
        .await
        .unwrap();
    tokio::time::sleep(TIMEOUT / 3 + TIMEOUT / 6).await; // past the first chain's tick
    assert_eq!(a.renewal_chains(), 2);
    let before = a.renew_calls();
    // Two and a half periods: each chain ticks two or three times in it however late the sleep
    // wakes (a window of whole periods lets a late wake count a fourth tick).
    tokio::time::sleep(TIMEOUT * 5 / 6).await;
    let calls = a.renew_calls() - before;
    assert!(
        (4..=6).contains(&calls),
        "{calls} renew calls in 2.5 periods, one chain makes 2 or 3"
    );
    second.release().await.unwrap();
    tokio::time::sleep(TIMEOUT / 2).await;
    assert_eq!(a.renewal_chains(), 0, "chains outlived the last lock");
}

/// Waiters sleep until the unlock message: a waiter takes the lock soon after the release, long
/// before the holder's TTL would have run out.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn waiter_wakes_on_the_unlock_message() {
    let t = Setup::start(Row(Generation::Scheduler));
    let (a, b) = t.pair().await;
    let key = unique("wake");
    let lease = a.acquire(&key, &AcquireOptions::try_once()).await.unwrap();
    expect_busy(&*b, &key).await;
    let waiter = tokio::spawn({
        let (b, key) = (b.clone(), key.clone());
        async move {
            let lease = b
                .acquire(&key, &AcquireOptions::wait(TIMEOUT * 10))
                .await
                .unwrap();
            let at = Instant::now();
            lease.release().await.unwrap();
            at
        }
    });
    tokio::time::sleep(TIMEOUT * 2).await; // renewed meanwhile; the waiter sleeps on the PTTL
    let released = Instant::now();
    lease.release().await.unwrap();
    let took = waiter.await.unwrap().saturating_duration_since(released);
    assert!(
        took < Duration::from_millis(250),
        "waiter took {took:?} after the release"
    );
}

/// 3.44+: 250 held locks cost ⌈250 / 100⌉ = 3 renew calls per tick, one tick per period, counted by the
/// client and by the server alike; every lock is renewed on every tick.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scheduler_renews_every_lock_each_tick_in_chunks_of_100() {
    const LOCKS: usize = 250;
    let t = Setup::start(Row(Generation::Scheduler));
    let log = EventLog::new();
    let a = t.connect(Events::to(log.clone())).await;
    let base = unique("chunks");
    let mut leases = Vec::with_capacity(LOCKS);
    for i in 0..LOCKS {
        let key = format!("{base}:{i}");
        leases.push(a.acquire(&key, &AcquireOptions::try_once()).await.unwrap());
    }
    assert_eq!((a.scheduled_renewals(), a.renewal_chains()), (LOCKS, 1));
    tokio::time::sleep(TIMEOUT / 3).await;
    let (client0, server0) = (a.renew_calls(), t.evalsha_calls());
    let renewed0 = log.count(|e| matches!(e, LockEvent::Renewed { .. }));
    // Two and a half periods: two or three ticks, however late the sleep wakes.
    tokio::time::sleep(TIMEOUT * 5 / 6).await;
    let client = a.renew_calls() - client0;
    let server = t.evalsha_calls() - server0;
    let renewed = log.count(|e| matches!(e, LockEvent::Renewed { .. })) - renewed0;
    eprintln!("{client} client / {server} server renew calls, {renewed} renewals in 2.5 periods");
    assert!(
        (6..=9).contains(&client),
        "{client} renew calls in 2.5 periods, expected 3 per tick"
    );
    // The client counts a call when it sends it, the server when it runs it: a call in flight when one
    // of the counts is read is in one window and not the other (at most one at each edge, one way each).
    assert!(
        client.abs_diff(server) <= 1,
        "{client} renew calls sent, {server} run by the server"
    );
    // Chunks of 100, 100 and 50: about 250 / 3 renewals per call (a window edge may split a tick).
    let expected = client as usize * LOCKS / 3;
    assert!(
        renewed.abs_diff(expected) <= 100,
        "{renewed} renewals for {client} calls"
    );
    for lease in leases {
        lease.release().await.unwrap();
    }
    assert_eq!(a.scheduled_renewals(), 0);
}
