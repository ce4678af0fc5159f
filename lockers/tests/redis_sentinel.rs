//! The Redis strategies behind Sentinel (`redis+sentinel://`), against a primary, a replica and 3
//! Sentinels started here: a lock taken before the primary dies is still held, renewed and exclusive
//! on the replica the Sentinels promote, and the clients follow the promotion without being told; also
//! with an ACL user on the servers (the default user off), and a wrong password is one line without it.
//! Also over TLS everywhere. The keyspace strategy sets its notification flags again on the promoted replica (`CONFIG SET` is
//! not replicated), so its shadow lock is renewed there by events. On Valkey's servers and Sentinels the
//! three rows' locks go through one failover together (the pinned Valkey build has no TLS).
#![allow(clippy::unwrap_used)]

use std::time::{Duration, Instant};

use lockbench_servers::{Flavor, RedisOptions, RedisSentinels, poll};
use lockers::redis::{
    GuardThreadConfig, KeyspaceConfig, KeyspaceVariant, RedisGuardThread, RedisKeyspace,
    RedisWatchdog, Redisson, RedissonConfig, Topology, WatchdogConfig,
};
use lockers::{AcquireOptions, EventLog, Events, LockError, LockEvent, Locker, Renewal};

/// Long enough for the lease to outlive the failover (the Sentinels need ~1 s to agree the primary
/// is down, then elect and promote).
const TIMEOUT: Duration = Duration::from_secs(6);

/// One row's part in a failover: its two clients (the first reporting to `log`) and the lock they share.
struct Holder<'a> {
    first: &'a dyn Locker,
    second: &'a dyn Locker,
    log: &'a EventLog,
    key: &'a str,
}

/// Each holder's first client takes its lock, the primary dies, and every lock is still held, renewed
/// and exclusive on the replica the Sentinels promote.
async fn survives_the_failover(group: &RedisSentinels, holders: &[Holder<'_>]) {
    let mut leases = Vec::new();
    for holder in holders {
        let once = AcquireOptions::try_once();
        leases.push(holder.first.acquire(holder.key, &once).await.unwrap());
    }
    // The replica has the locks before its primary dies.
    let primary = group.pair().primary();
    let acked = tokio::task::block_in_place(|| primary.command(&["WAIT", "1", "5000"]));
    assert_eq!(acked.unwrap(), "1", "the replica did not receive the lock");
    let old = group.pair().primary().addr();
    let renewed_before: Vec<usize> = holders.iter().map(|h| renewals(h.log)).collect();
    group.pair().primary().kill().unwrap();
    let killed = Instant::now();
    let promoted =
        tokio::task::block_in_place(|| group.wait_for_new_primary(old, Duration::from_secs(20)));
    assert!(promoted.is_some(), "the Sentinels promoted no replica");
    for ((holder, lease), before) in holders.iter().zip(leases).zip(renewed_before) {
        still_held_on_the_new_primary(holder, lease, before).await;
    }
    assert!(killed.elapsed() < Duration::from_secs(30));
}

/// `Renewed` events in `log`.
fn renewals(log: &EventLog) -> usize {
    log.count(|e| matches!(e, LockEvent::Renewed { .. }))
}

/// After the failover: `lease` (with `before` renewals at the kill) is renewed on the new primary, still
/// held and exclusive, and free for the second client once released.
async fn still_held_on_the_new_primary(holder: &Holder<'_>, lease: lockers::Lease, before: usize) {
    let Holder {
        second, log, key, ..
    } = *holder;
    // A renewal on the new primary (renewals run every TIMEOUT / 3).
    let renewed = || renewals(log) > before;
    assert!(
        poll::until_async(TIMEOUT, renewed).await,
        "{key}: no renewal after the failover"
    );
    assert!(lease.is_held(), "{key}: the lease was lost in the failover");
    // The second client has sent nothing since the primary died: its first command finds the old
    // connection broken (a `Backend` error) and makes it ask the Sentinels; the next ones go to the
    // new primary.
    let mut taken = second.acquire(key, &AcquireOptions::try_once()).await;
    let retry_until = Instant::now() + Duration::from_secs(3);
    while matches!(taken, Err(LockError::Backend { .. })) && Instant::now() < retry_until {
        tokio::time::sleep(Duration::from_millis(100)).await;
        taken = second.acquire(key, &AcquireOptions::try_once()).await;
    }
    assert!(
        matches!(taken, Err(LockError::Timeout { .. })),
        "{key}: the promoted replica must still have the lock: {taken:?}"
    );
    lease.release().await.unwrap();
    second
        .acquire(key, &AcquireOptions::try_once())
        .await
        .unwrap()
        .release()
        .await
        .unwrap();
}

async fn watchdog(url: &str, events: Events) -> RedisWatchdog {
    let renewal = Renewal::new(TIMEOUT);
    let config = WatchdogConfig {
        renewal,
        ..WatchdogConfig::default()
    };
    RedisWatchdog::connect(url, config, events).await.unwrap()
}

async fn guard_thread(url: &str, events: Events) -> RedisGuardThread {
    let renewal = Renewal::new(TIMEOUT);
    let config = GuardThreadConfig {
        renewal,
        ..GuardThreadConfig::default()
    };
    RedisGuardThread::connect(url, config, events)
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watchdog_lock_survives_a_sentinel_failover() {
    let group = RedisSentinels::start().unwrap();
    let log = EventLog::new();
    let first = watchdog(&group.url(), Events::to(log.clone())).await;
    let second = watchdog(&group.url(), Events::none()).await;
    survives_the_failover(
        &group,
        &[Holder {
            first: &first,
            second: &second,
            log: &log,
            key: "sentinel-watchdog",
        }],
    )
    .await;
}

/// The same over TLS everywhere (clients to the Sentinels and the primary, the Sentinels to the servers,
/// replication), with an ACL user: `rediss+sentinel://…?ca=` with the test CA.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watchdog_lock_survives_a_sentinel_failover_over_tls() {
    let certificates = lockbench_servers::TestCertificates::generate().unwrap();
    let tls = lockbench_servers::certs::TlsFiles::of(&certificates);
    let options = RedisOptions::with_acl_user_and_tls("app", "sentinel-tls-secret-8", tls);
    let group = RedisSentinels::start_with(options).unwrap();
    assert!(
        group.url().starts_with("rediss+sentinel://app:"),
        "{}",
        group.url()
    );
    let log = EventLog::new();
    let first = watchdog(&group.url(), Events::to(log.clone())).await;
    let second = watchdog(&group.url(), Events::none()).await;
    survives_the_failover(
        &group,
        &[Holder {
            first: &first,
            second: &second,
            log: &log,
            key: "sentinel-tls-watchdog",
        }],
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_guard_thread_lock_survives_a_sentinel_failover() {
    let group = RedisSentinels::start().unwrap();
    let log = EventLog::new();
    let first = guard_thread(&group.url(), Events::to(log.clone())).await;
    let second = guard_thread(&group.url(), Events::none()).await;
    survives_the_failover(
        &group,
        &[Holder {
            first: &first,
            second: &second,
            log: &log,
            key: "sentinel-guard",
        }],
    )
    .await;
}

async fn keyspace_shadow(url: &str, events: Events) -> RedisKeyspace {
    let config = KeyspaceConfig {
        renewal: Renewal::new(TIMEOUT),
        ..KeyspaceConfig::default()
    };
    RedisKeyspace::connect(url, KeyspaceVariant::Shadow, config, events)
        .await
        .unwrap()
}

/// The notification flags the replica of `group` runs with.
fn replica_flags(group: &RedisSentinels) -> String {
    let replica = group.pair().replica();
    replica
        .command(&["CONFIG", "GET", "notify-keyspace-events"])
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_keyspace_lock_survives_a_sentinel_failover_with_events_from_the_new_primary() {
    let group = RedisSentinels::start().unwrap();
    let flags = replica_flags(&group);
    assert!(!flags.contains('x'), "the replica was never asked: {flags}");
    let log = EventLog::new();
    let first = keyspace_shadow(&group.url(), Events::to(log.clone())).await;
    let second = keyspace_shadow(&group.url(), Events::none()).await;
    let key = "sentinel-keyspace";
    survives_the_failover(
        &group,
        &[Holder {
            first: &first,
            second: &second,
            log: &log,
            key,
        }],
    )
    .await;
    let flags = replica_flags(&group);
    assert!(flags.contains('x') && flags.contains('E'), "{flags}");
}

/// On Valkey's servers and Sentinels, one failover for the three rows at once (each failover takes
/// seconds): the watchdog's, the guard thread's and the keyspace shadow's locks all survive it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_valkey_the_three_rows_locks_survive_one_sentinel_failover() {
    let group = RedisSentinels::start_with(RedisOptions::of(Flavor::Valkey)).unwrap();
    let url = group.url();
    let logs = [EventLog::new(), EventLog::new(), EventLog::new()];
    let watchdogs = (
        watchdog(&url, Events::to(logs[0].clone())).await,
        watchdog(&url, Events::none()).await,
    );
    let guards = (
        guard_thread(&url, Events::to(logs[1].clone())).await,
        guard_thread(&url, Events::none()).await,
    );
    let keyspaces = (
        keyspace_shadow(&url, Events::to(logs[2].clone())).await,
        keyspace_shadow(&url, Events::none()).await,
    );
    let holders = [
        Holder {
            first: &watchdogs.0,
            second: &watchdogs.1,
            log: &logs[0],
            key: "valkey-watchdog",
        },
        Holder {
            first: &guards.0,
            second: &guards.1,
            log: &logs[1],
            key: "valkey-guard",
        },
        Holder {
            first: &keyspaces.0,
            second: &keyspaces.1,
            log: &logs[2],
            key: "valkey-keyspace",
        },
    ];
    survives_the_failover(&group, &holders).await;
    let flags = replica_flags(&group);
    assert!(flags.contains('x') && flags.contains('E'), "{flags}");
}

#[tokio::test]
async fn a_sentinel_that_knows_no_such_service_is_a_one_line_error() {
    let group = RedisSentinels::start().unwrap();
    let url = group.url().replace("/lockbench", "/unknown");
    let error = RedisWatchdog::connect(&url, WatchdogConfig::default(), Events::none())
        .await
        .unwrap_err()
        .to_string();
    assert!(error.contains("no Sentinel named a primary"), "{error}");
    assert!(!error.contains('\n'), "{error}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_an_acl_user_the_clients_log_in_on_every_primary() {
    const PASSWORD: &str = "sentinel-acl-secret-31";
    let group = RedisSentinels::start_with(RedisOptions::with_acl_user("app", PASSWORD)).unwrap();
    let url = group.url();
    assert!(url.starts_with("redis+sentinel://app:"), "{url}");
    let log = EventLog::new();
    let first = watchdog(&url, Events::to(log.clone())).await;
    let second = watchdog(&url, Events::none()).await;
    survives_the_failover(
        &group,
        &[Holder {
            first: &first,
            second: &second,
            log: &log,
            key: "sentinel-acl",
        }],
    )
    .await;

    let wrong = url.replace(PASSWORD, "not-the-password");
    let error = RedisWatchdog::connect(&wrong, WatchdogConfig::default(), Events::none())
        .await
        .unwrap_err()
        .to_string();
    assert!(error.contains("authentication failed"), "{error}");
    assert!(!error.contains("not-the-password"), "{error}");
    assert!(!error.contains('\n'), "{error}");
}

/// Connections the Sentinels of `group` have accepted so far (their own count, `INFO stats`;
/// Sentinels keep no command statistics). Each call opens one on each Sentinel, counted too.
fn connections_received(group: &RedisSentinels) -> u64 {
    group
        .sentinels()
        .iter()
        .map(|sentinel| {
            let info = sentinel.command(&["INFO", "stats"]).unwrap();
            info.lines()
                .find_map(|line| line.trim().strip_prefix("total_connections_received:"))
                .and_then(|n| n.parse::<u64>().ok())
                .unwrap()
        })
        .sum()
}

/// Redisson's `scanInterval` behind Sentinel: an idle Redisson client asks the Sentinels for the
/// primary on its timer (here every 300 ms, each question on a connection of its own), as many times
/// as the Sentinels count; a watchdog client asks only after errors, and the timer stops with its
/// client.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redisson_asks_the_sentinels_on_its_scan_timer() {
    const SCAN: Duration = Duration::from_millis(300);
    const IDLE: Duration = Duration::from_millis(1650);
    let group = RedisSentinels::start().unwrap();
    let opened_during = |idle: Duration| {
        let group = &group;
        async move {
            let before = tokio::task::block_in_place(|| connections_received(group));
            tokio::time::sleep(idle).await;
            let after = tokio::task::block_in_place(|| connections_received(group));
            // Less the connection each Sentinel counted for the second reading.
            after - before - group.sentinels().len() as u64
        }
    };
    let asked_while_idle = || opened_during(IDLE);
    // A new group's Sentinels are still linking up to each other (connections they count too).
    let settled_by = Instant::now() + Duration::from_secs(10);
    while opened_during(Duration::from_millis(500)).await != 0 {
        assert!(Instant::now() < settled_by, "the Sentinels kept connecting");
    }
    let watchdog = watchdog(&group.url(), Events::none()).await;
    assert_eq!(
        asked_while_idle().await,
        0,
        "the watchdog row has no scan timer"
    );
    drop(watchdog);
    let config = RedissonConfig {
        topology: Topology::Replicated,
        sentinel_scan_interval: SCAN,
        ..RedissonConfig::new(lockers::redis::Generation::Scheduler)
    };
    let redisson = Redisson::connect(&group.url(), config, Events::none())
        .await
        .unwrap();
    let asked = asked_while_idle().await;
    assert!(
        // 5.5 scans nominally; a sleep that wakes late may see one more.
        (4..=7).contains(&asked),
        "{asked} questions in {IDLE:?}, one per {SCAN:?} expected"
    );
    drop(redisson);
    tokio::time::sleep(SCAN * 2).await;
    assert_eq!(
        asked_while_idle().await,
        0,
        "the scan timer outlived its client"
    );
}
