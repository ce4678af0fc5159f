//! The Redis strategies on a Redis Cluster (`redis+cluster://`) of 3 masters and 3 replicas started
//! here, shared by every test of this file (each test uses its own keys, spread over the masters by
//! their hash tags): the conformance suite for `redis-watchdog` (per-lock and batched),
//! `redis-guard-thread`, `redisson` and `redisson-classic` (in Redisson's cluster mode, `WAIT` after
//! each lock write on the key's master) and `redis-keyspace` (the shadow variant, and the naive
//! variant's honest cases: keyspace events come from each key's own master); batched renewal split by
//! slot (one call per slot, no `CROSSSLOT`); a lock held through a master kill (a keyspace-shadow one
//! too: its subscription follows the slot to the promoted replica, which it configures) and through a
//! manual `CLUSTER FAILOVER`; a cluster with an ACL user (a wrong password is one line without it);
//! Redisson's `WAIT` on the connection that wrote while a slot migrates (`ASK`); and Redlock, which
//! needs independent servers, saying so in one line. A Valkey cluster, shared the same way, serves the
//! `redis-watchdog` conformance suite, one master kill under three rows' locks at once (the watchdog's,
//! the guard thread's, the keyspace shadow's) and Redisson's manual failover (`on_valkey…`).
#![allow(clippy::unwrap_used)]

use std::time::{Duration, Instant};

use lockbench_servers::{Flavor, RedisCluster, RedisOptions};
use lockers::redis::{
    KeyspaceVariant, RedisWatchdog, Redisson, RedissonConfig, Redlock, RedlockConfig, RenewalMode,
    Topology, WatchdogConfig,
};
use lockers::{AcquireOptions, EventLog, Events, Lease, LockError, LockEvent, Locker, Renewal};

#[path = "support/cluster.rs"]
mod shared;
#[path = "support/redis.rs"]
mod support;

use shared::*;
use support::on_each_flavor;

mod watchdog_per_lock {
    use super::*;
    lockers::conformance_tests!(OnCluster::start(Row::Watchdog(RenewalMode::PerLock)).await);
}

mod watchdog_batched {
    use super::*;
    lockers::conformance_tests!(
        OnCluster::start(Row::Watchdog(RenewalMode::Batched { chunk: 100 })).await
    );
}

mod guard_thread {
    use super::*;
    lockers::conformance_tests!(OnCluster::start(Row::GuardThread).await);
}

mod redisson {
    use super::*;
    lockers::conformance_tests!(
        OnCluster::start(Row::Redisson(lockers::redis::Generation::Scheduler)).await
    );
}

mod redisson_classic {
    use super::*;
    lockers::conformance_tests!(
        OnCluster::start(Row::Redisson(lockers::redis::Generation::Classic)).await
    );
}

mod keyspace_shadow {
    use super::*;
    lockers::conformance_tests!(OnCluster::start(Row::Keyspace(KeyspaceVariant::Shadow)).await);
}

/// The naive variant's honest cases (see `redis_keyspace.rs` for the two it fails by design).
mod keyspace_naive {
    use super::*;
    lockers::conformance_tests!(@cases OnCluster::start(Row::Keyspace(KeyspaceVariant::Naive)).await;
        mutual_exclusion, release_then_reacquire, try_once_on_held_lock, wait_timeout_is_honoured,
        fixed_lease_expires, tokens_strictly_increase, stale_release_is_not_held,
        stale_release_keeps_newer_hold_of_same_owner, cancelled_acquire_leaks_nothing,
        reentrant_acquire_and_release, non_reentrant_same_owner_times_out,
        undeclared_lease_mode_is_unsupported, dropped_lease_is_released);
}

/// The conformance suite on the Valkey cluster, for `redis-watchdog`: its cluster client is the one
/// every scripted row shares (the keyspace shadow variant's events from each master are exercised on
/// Valkey by the master kill below).
mod on_valkey_cluster {
    use super::*;

    lockers::conformance_tests!(
        OnCluster::start_on(Flavor::Valkey, Row::Watchdog(RenewalMode::PerLock)).await
    );
}

/// Takes every lock of `names` at once (try-once).
async fn acquire_all(client: &dyn Locker, names: &[String]) -> Vec<Lease> {
    let mut leases = Vec::new();
    for name in names {
        leases.push(
            client
                .acquire(name, &AcquireOptions::try_once())
                .await
                .unwrap(),
        );
    }
    leases
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn batched_renewal_sends_one_call_per_slot() {
    let _no_failover = OnCluster::start(Row::GuardThread).await;
    let log = EventLog::new();
    let config = WatchdogConfig {
        renewal: Renewal::new(TIMEOUT),
        renewal_mode: RenewalMode::Batched { chunk: 100 },
        key_prefix: PREFIX.into(),
        ..WatchdogConfig::default()
    };
    let client = RedisWatchdog::connect(&CLUSTER.url(), config, Events::to(log.clone()))
        .await
        .unwrap();
    // Names spread over several slots (and so over the masters).
    let names: Vec<String> = (0..12).map(|i| unique(&format!("batch{i}"))).collect();
    let mut slots: Vec<u16> = names
        .iter()
        .map(|n| slot_of(&CLUSTER, &lock_key(n)))
        .collect();
    slots.sort_unstable();
    slots.dedup();
    let masters: std::collections::HashSet<_> = names
        .iter()
        .map(|n| CLUSTER.master_of(&lock_key(n)).unwrap().port())
        .collect();
    assert!(masters.len() > 1, "the keys landed on one master only");
    let leases = acquire_all(&client, &names).await;
    let before = client.renew_calls();
    tokio::time::sleep(TIMEOUT * 3).await;
    let calls = client.renew_calls() - before;
    let renewed = log.count(|e| matches!(e, LockEvent::Renewed { .. }));
    let failed = log.count(|e| matches!(e, LockEvent::RenewFailed { .. }));
    assert_eq!(
        failed,
        0,
        "renewals failed (CROSSSLOT?): {:?}",
        log.snapshot()
    );
    assert!(leases.iter().all(Lease::is_held));
    assert!(
        renewed >= names.len(),
        "{renewed} renewals for {} locks",
        names.len()
    );
    // Each tick sends one call per slot: calls are a whole multiple of the slots.
    assert!(
        calls > 0 && calls % slots.len() as u64 == 0,
        "{calls} calls for {} slots",
        slots.len()
    );
    for lease in leases {
        lease.release().await.unwrap();
    }
}

on_each_flavor!(a_redisson_lock_survives_a_manual_failover);

/// Kills the master of `key`'s slot.
fn kill_master(cluster: &RedisCluster, key: &str) -> std::net::SocketAddr {
    cluster.kill_master_of(key).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watchdog_lock_survives_a_master_kill() {
    let row = Row::Watchdog(RenewalMode::PerLock);
    survives(Flavor::Redis, &[(row, "kill-watchdog")], kill_master).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_guard_thread_lock_survives_a_master_kill() {
    survives(
        Flavor::Redis,
        &[(Row::GuardThread, "kill-guard")],
        kill_master,
    )
    .await;
}

/// The shadow key's `expired` event comes from the promoted replica, so the client must have moved
/// its subscription there and set `notify-keyspace-events` on it (`CONFIG SET` is not replicated).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_keyspace_shadow_lock_survives_a_master_kill() {
    let row = Row::Keyspace(KeyspaceVariant::Shadow);
    survives(Flavor::Redis, &[(row, "kill-keyspace")], kill_master).await;
}

/// On the Valkey cluster, one master kill for the three rows at once (each failover takes seconds):
/// the watchdog's, the guard thread's and the keyspace shadow's locks, all on the killed master,
/// survive it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_valkey_the_three_rows_locks_survive_one_master_kill() {
    let rows = [
        (Row::Watchdog(RenewalMode::PerLock), "kill-watchdog"),
        (Row::GuardThread, "kill-guard"),
        (Row::Keyspace(KeyspaceVariant::Shadow), "kill-keyspace"),
    ];
    survives(Flavor::Valkey, &rows, kill_master).await;
}

async fn a_redisson_lock_survives_a_manual_failover(flavor: Flavor) {
    let row = Row::Redisson(lockers::redis::Generation::Scheduler);
    survives(flavor, &[(row, "manual-redisson")], |cluster, key| {
        cluster.manual_failover_of(key).unwrap()
    })
    .await;
}

/// A cluster whose nodes switch the default user off and take an ACL user: a batch of locks on several
/// masters is taken, renewed and released through it; a wrong password is one line without it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cluster_with_an_acl_user_serves_locks_and_a_wrong_password_is_one_line() {
    const PASSWORD: &str = "cluster-acl-secret-33";
    let cluster = tokio::task::block_in_place(|| {
        RedisCluster::start_with(RedisOptions::with_acl_user("app", PASSWORD))
    })
    .unwrap();
    let config = || WatchdogConfig {
        renewal: Renewal::new(TIMEOUT),
        renewal_mode: RenewalMode::Batched { chunk: 100 },
        key_prefix: PREFIX.into(),
        ..WatchdogConfig::default()
    };
    let log = EventLog::new();
    let client = RedisWatchdog::connect(&cluster.url(), config(), Events::to(log.clone()))
        .await
        .unwrap();
    let names: Vec<String> = (0..6).map(|i| unique(&format!("acl{i}"))).collect();
    let leases = acquire_all(&client, &names).await;
    tokio::time::sleep(TIMEOUT * 2).await;
    assert!(leases.iter().all(Lease::is_held));
    assert!(log.count(|e| matches!(e, LockEvent::Renewed { .. })) >= leases.len());
    for lease in leases {
        lease.release().await.unwrap();
    }
    let wrong = cluster.url().replace(PASSWORD, "not-the-password");
    let error = RedisWatchdog::connect(&wrong, config(), Events::none())
        .await
        .unwrap_err()
        .to_string();
    assert!(
        !error.contains('\n') && !error.contains("not-the-password") && !error.contains(PASSWORD),
        "{error}"
    );
}

/// A cluster that speaks TLS to clients, between its nodes and to its replicas (`rediss+cluster://`
/// with the test CA), with an ACL user: locks on several masters are taken, renewed and released,
/// and a master kill is followed over TLS.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tls_cluster_serves_locks_through_a_master_kill() {
    const PASSWORD: &str = "cluster-tls-secret-12";
    let certificates = lockbench_servers::TestCertificates::generate().unwrap();
    let tls = lockbench_servers::certs::TlsFiles::of(&certificates);
    let options = RedisOptions::with_acl_user_and_tls("app", PASSWORD, tls);
    let cluster = tokio::task::block_in_place(|| RedisCluster::start_with(options)).unwrap();
    assert!(cluster.url().starts_with("rediss+cluster://app:"));
    let config = WatchdogConfig {
        renewal: Renewal::new(Duration::from_secs(6)),
        renewal_mode: RenewalMode::Batched { chunk: 100 },
        key_prefix: PREFIX.into(),
        ..WatchdogConfig::default()
    };
    let log = EventLog::new();
    let client = RedisWatchdog::connect(&cluster.url(), config, Events::to(log.clone()))
        .await
        .unwrap();
    let names: Vec<String> = (0..6).map(|i| unique(&format!("tls{i}"))).collect();
    let leases = acquire_all(&client, &names).await;
    let key = lock_key(&names[0]);
    let old = cluster.master_of(&key).unwrap().addr();
    tokio::task::block_in_place(|| {
        wait_replicated(&cluster, &key);
        cluster.kill_master_of(&key).unwrap();
        cluster
            .wait_for_new_master(&key, old, Duration::from_secs(20))
            .expect("a new master");
    });
    let renewed = log.count(|e| matches!(e, LockEvent::Renewed { .. }));
    let deadline = Instant::now() + Duration::from_secs(6);
    while log.count(|e| matches!(e, LockEvent::Renewed { .. })) < renewed + names.len() {
        assert!(
            Instant::now() < deadline,
            "no renewals after the failover: {:?}",
            log.snapshot()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(leases.iter().all(Lease::is_held));
    for lease in leases {
        lease.release().await.unwrap();
    }
}

/// Redisson counts each master's replicas on its own (one `MasterSlaveEntry` per shard): a master that
/// lost its replica takes writes without `WAIT`, and another master's writes still wait for its one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redisson_waits_for_each_masters_own_replicas() {
    let cluster = tokio::task::block_in_place(RedisCluster::start).unwrap();
    let master_port = |name: &str| cluster.master_of(&lock_key(name)).unwrap().port();
    let lone = unique("lone");
    let paired = (0..)
        .map(|i| unique(&format!("paired{i}")))
        .find(|n| master_port(n) != master_port(&lone))
        .unwrap();
    let lone_master = cluster.master_of(&lock_key(&lone)).unwrap();
    tokio::task::block_in_place(|| cluster.replica_of(lone_master).unwrap().kill()).unwrap();
    let waits = |name: &str| {
        let info = cluster
            .master_of(&lock_key(name))
            .unwrap()
            .command(&["INFO", "commandstats"]);
        lockbench_servers::redis::commandstats(&info.unwrap())
            .get("wait")
            .map_or(0, |s| s.calls)
    };
    let config = RedissonConfig {
        renewal: Renewal::new(TIMEOUT),
        key_prefix: PREFIX.into(),
        topology: Topology::Replicated,
        ..RedissonConfig::new(lockers::redis::Generation::Scheduler)
    };
    let client = Redisson::connect(&cluster.url(), config, Events::none())
        .await
        .unwrap();
    // The replica's master may still count it connected for a moment: wait until it does not.
    let deadline = Instant::now() + Duration::from_secs(5);
    while lone_master
        .command(&["INFO", "replication"])
        .unwrap()
        .contains("connected_slaves:1")
    {
        assert!(
            Instant::now() < deadline,
            "the master still counts its dead replica"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let (lone_before, paired_before) = (waits(&lone), waits(&paired));
    let first = client
        .acquire(&lone, &AcquireOptions::try_once())
        .await
        .unwrap();
    let second = client
        .acquire(&paired, &AcquireOptions::try_once())
        .await
        .unwrap();
    // The probe `WAIT 0 0` goes to whichever master the first write went to.
    assert!(
        waits(&lone) - lone_before <= 1,
        "no WAIT on a master without replicas"
    );
    assert!(
        waits(&paired) > paired_before,
        "the other master's write waited for its replica"
    );
    first.release().await.unwrap();
    second.release().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redlock_refuses_a_cluster_in_one_line() {
    let url = "redis+cluster://app:secret@127.0.0.1:1";
    let error = Redlock::connect(&[url.to_owned()], RedlockConfig::default(), Events::none())
        .await
        .unwrap_err();
    let text = error.to_string();
    assert!(matches!(error, LockError::Config(_)), "{text}");
    assert!(text.contains("Cluster") && !text.contains('\n') && !text.contains("secret"));
}

/// `CLUSTER SLOTS` calls the nodes of `cluster` have answered so far (their own count).
fn layout_reads(cluster: &RedisCluster) -> u64 {
    cluster
        .nodes()
        .iter()
        .map(|node| {
            let info = node.command(&["INFO", "commandstats"]).unwrap();
            lockbench_servers::redis::commandstats(&info)
                .get("cluster|slots")
                .map_or(0, |s| s.calls)
        })
        .sum()
}

/// Redisson's `scanInterval`: an idle Redisson client reads the layout again on its timer (here
/// every 300 ms), as many times as the nodes count; a watchdog client reads it only after errors,
/// and the timer stops with its client. On a cluster of its own, so no other test's reads count.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redisson_reads_the_layout_on_its_scan_timer() {
    const SCAN: Duration = Duration::from_millis(300);
    const IDLE: Duration = Duration::from_millis(1650);
    let cluster = tokio::task::block_in_place(|| RedisCluster::start().unwrap());
    let reads_while_idle = || async {
        let before = tokio::task::block_in_place(|| layout_reads(&cluster));
        tokio::time::sleep(IDLE).await;
        tokio::task::block_in_place(|| layout_reads(&cluster)) - before
    };
    let config = WatchdogConfig {
        key_prefix: PREFIX.into(),
        ..WatchdogConfig::default()
    };
    let watchdog = RedisWatchdog::connect(&cluster.url(), config, Events::none())
        .await
        .unwrap();
    assert_eq!(
        reads_while_idle().await,
        0,
        "the watchdog row has no scan timer"
    );
    drop(watchdog);
    let config = RedissonConfig {
        key_prefix: PREFIX.into(),
        topology: Topology::Replicated,
        cluster_scan_interval: SCAN,
        ..RedissonConfig::new(lockers::redis::Generation::Scheduler)
    };
    let redisson = Redisson::connect(&cluster.url(), config, Events::none())
        .await
        .unwrap();
    let reads = reads_while_idle().await;
    assert!(
        // 5.5 scans nominally; a sleep that wakes late may see one more.
        (4..=7).contains(&reads),
        "{reads} layout reads in {IDLE:?}, one per {SCAN:?} expected"
    );
    drop(redisson);
    tokio::time::sleep(SCAN * 2).await;
    assert_eq!(
        reads_while_idle().await,
        0,
        "the scan timer outlived its client"
    );
}

/// Resumes a paused node when dropped (also when the test fails).
struct Resume<'a>(&'a lockbench_servers::RedisNode);

impl Drop for Resume<'_> {
    fn drop(&mut self) {
        let _ = self.0.resume();
    }
}

/// `WAIT` counts only the writes of its own connection, so Redisson's replica sync must run it on the
/// connection that wrote. A slot being migrated sends the write to the importing master (`ASK`) without
/// changing the layout: a `WAIT` sent to the slot's master by the layout would find nothing to wait for
/// and report every replica synced. Here the importing master's replica is stopped, so the write, there,
/// is confirmed by no replica and the acquire fails with Redisson's "None of slaves were synced".
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redisson_waits_on_the_connection_that_wrote() {
    let _alone = FAILOVERS.write().await;
    let name = unique("asked");
    let key = lock_key(&name);
    let source = CLUSTER.master_of(&key).unwrap();
    let target = (0..)
        .filter_map(|i| CLUSTER.master_of(&lock_key(&unique(&format!("other{i}")))))
        .find(|node| node.port() != source.port())
        .unwrap();
    let id = |node: &lockbench_servers::RedisNode| {
        node.command(&["CLUSTER", "MYID"])
            .unwrap()
            .trim()
            .to_owned()
    };
    let slot = slot_of(&CLUSTER, &key).to_string();
    let (source_id, target_id) = (id(source), id(target));
    let setslot = |node: &lockbench_servers::RedisNode, args: &[&str]| {
        let mut command = vec!["CLUSTER", "SETSLOT", &slot];
        command.extend_from_slice(args);
        node.command(&command).unwrap();
    };
    setslot(target, &["IMPORTING", &source_id]);
    setslot(source, &["MIGRATING", &target_id]);
    let replica = CLUSTER.replica_of(target).unwrap();
    replica.pause().unwrap();
    let resume = Resume(replica);

    let config = RedissonConfig {
        renewal: Renewal::new(TIMEOUT),
        key_prefix: PREFIX.into(),
        topology: Topology::Replicated,
        slaves_sync_timeout: Duration::from_millis(300),
        // 3.47+ tries an unsynced acquire 4 more times, each after a pause scaled by this.
        retry_interval: Duration::from_millis(20),
        ..RedissonConfig::new(lockers::redis::Generation::Scheduler)
    };
    let client = Redisson::connect(&CLUSTER.url(), config, Events::none())
        .await
        .unwrap();
    let outcome = client.acquire(&name, &AcquireOptions::try_once()).await;

    drop(resume);
    setslot(source, &["STABLE"]);
    setslot(target, &["STABLE"]);
    let _ = target.command(&["DEL", &key]);
    match outcome {
        Err(error) => assert!(
            error.to_string().contains("None of slaves were synced"),
            "{error}"
        ),
        Ok(lease) => panic!(
            "acquired on {} with its only replica stopped: {lease:?}",
            target.addr()
        ),
    }
}
