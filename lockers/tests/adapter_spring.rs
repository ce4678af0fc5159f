//! The Spring Integration lock registries (`adapters/jvm/SpringJdbcAdapter.java` on PostgreSQL,
//! `SpringRedisAdapter.java` on Redis) through their adapters: a conformance subset per row, one adapter
//! process (one JVM) per client, one server of each kind for the file; and the JDBC row's one-line error
//! on a PostgreSQL server without its table, which quotes the DDL lockbench runs on its own servers.
//! RedisLockRegistry declares no lost signal, so no case removes its key behind its holder's back.
//! `mutual_exclusion` is left out (17 s and 26 s here: many hand-overs through a 100 ms poll, each
//! client a JVM); every case below checks that a contender's try fails while the lock is held, and
//! `lockbench compare` checks exclusion under load (baseline, 4 clients, 3 trials: safe for both).
#![allow(clippy::unwrap_used)]

use std::sync::LazyLock;
use std::time::Duration;

use lockbench_servers::{PostgresServer, RedisServer};
use lockers::peer::PeerLocker;
use lockers::peer::catalog::{self, spring_int_lock_key};
use lockers::{Events, LockError};

#[path = "support/peers.rs"]
mod peers;

use peers::{Peer, config, spec};

/// The `INT_LOCK` statement the jvm-spring-jdbc manifest declares (its `server_setup`).
fn int_lock_table() -> String {
    let spec = catalog::find("jvm-spring-jdbc").expect("manifest");
    spec.server_setup.clone().expect("server_setup")
}

/// The file's PostgreSQL, with the table JdbcLockRegistry needs (as lockbench's own servers get it).
static POSTGRES: LazyLock<PostgresServer> = LazyLock::new(|| {
    let server = PostgresServer::start().unwrap();
    server.query(&int_lock_table()).unwrap();
    server
});

/// The file's redis-server (each case uses keys of its own).
static REDIS: LazyLock<RedisServer> = LazyLock::new(|| RedisServer::start().unwrap());

/// Deletes the row `INT_LOCK` keeps for lock key `key`.
fn delete_row_sql(key: &str) -> String {
    format!(
        "DELETE FROM INT_LOCK WHERE LOCK_KEY = {}",
        spring_int_lock_key(key)
    )
}

fn spring_jdbc() -> Peer<()> {
    let server = tokio::task::block_in_place(|| LazyLock::force(&POSTGRES));
    Peer {
        spec: spec("jvm-spring-jdbc"),
        processes: lockers::peer::PeerProcesses::new(),
        servers: vec![server.url()],
        settings: Vec::new(),
        watchdog: Duration::from_secs(2),
        short_lease: Duration::from_millis(600),
        // A JVM waiter polls every 100 ms and may stall on a loaded machine.
        slack: Duration::from_millis(800),
        fixed_for_watchdog: None,
        remove: Box::new(|key| {
            let deleted = POSTGRES.query(&delete_row_sql(key));
            deleted.unwrap();
        }),
        _server: (),
    }
}

fn spring_redis() -> Peer<()> {
    let server = tokio::task::block_in_place(|| LazyLock::force(&REDIS));
    Peer {
        spec: spec("jvm-spring-redis"),
        processes: lockers::peer::PeerProcesses::new(),
        servers: vec![server.url()],
        settings: Vec::new(),
        watchdog: Duration::from_secs(2),
        short_lease: Duration::from_millis(600),
        slack: Duration::from_millis(800),
        fixed_for_watchdog: None,
        remove: Box::new(|_| unreachable!("RedisLockRegistry declares no lost_signal")),
        _server: (),
    }
}

mod jvm_spring_jdbc {
    use super::*;

    lockers::conformance_tests!(@cases spring_jdbc();
        watchdog_lease_outlives_timeout, stale_release_is_not_held, lost_when_removed_behind_back);

    /// Two departures from the suite, by the library's design, asserted so that a change shows:
    /// a lease's thread keeps the key's in-process ReentrantLock until it unlocks, so after a fixed lease
    /// expired its own JVM cannot take the key again (while no one holds the row) until the stale lease is
    /// released (`stale_release_keeps_newer_hold_of_same_owner` wants the re-take); and `unlock()` deletes
    /// the row by client id without looking at its expiry, so the adapter answers that release `ok` and a
    /// `Released` event follows the `Lost` one (`events_follow_the_lease_protocol` wants `NotHeld`; the
    /// caller's `release()` still says `NotHeld`, from the lease's own deadline).
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn an_expired_lease_blocks_its_own_jvm_and_releases_without_complaint() {
        use lockers::{AcquireOptions, EventLog, LockEvent, Locker};

        let peer = spring_jdbc();
        let log = EventLog::new();
        let client = peer.start(Events::to(log.clone())).await;
        let key = format!("expired:{:08x}", rand::random::<u32>());
        let fixed = AcquireOptions::try_once().fixed(peer.short_lease);
        let stale = client.acquire(&key, &fixed).await.unwrap();
        tokio::time::timeout(peer.short_lease + peer.slack, stale.lost())
            .await
            .unwrap();
        let again = client.acquire(&key, &AcquireOptions::try_once()).await;
        assert!(
            matches!(again, Err(LockError::Timeout { .. })),
            "re-take while the stale lease's thread holds the key: {again:?}"
        );
        let released = stale.release().await;
        assert!(
            matches!(released, Err(LockError::NotHeld { .. })),
            "{released:?}"
        );
        let after = client.acquire(&key, &AcquireOptions::try_once()).await;
        after.unwrap().release().await.unwrap();
        let names: Vec<&str> = log
            .snapshot()
            .iter()
            .filter(|e| e.key() == key)
            .map(|e| match e {
                LockEvent::Lost { .. } => "Lost",
                LockEvent::Released { .. } => "Released",
                _ => "other",
            })
            .filter(|n| *n != "other")
            .collect();
        assert_eq!(names, ["Lost", "Released", "Released"], "events of {key}");
    }

    /// The server can tell which sessions hold a lock (what the terminate_session fault ends): the
    /// holder's connections, named after the client id in its INT_LOCK row, and no other client's;
    /// none once it is released.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_server_finds_the_holders_sessions_by_its_row() {
        use lockers::{AcquireOptions, Locker};

        let peer = spring_jdbc();
        let (holder, other) = (
            peer.start(Events::none()).await,
            peer.start(Events::none()).await,
        );
        let key = format!("sessions:{:08x}", rand::random::<u32>());
        let lease = holder
            .acquire(&key, &AcquireOptions::try_once())
            .await
            .unwrap();
        let sessions = |key: &str| {
            let sql = format!(
                "SELECT a.application_name, count(*) FROM pg_stat_activity a WHERE a.pid IN ({}) \
                 GROUP BY 1",
                lockers::peer::catalog::spring_jdbc_holder_sessions(key)
            );
            POSTGRES.query(&sql).unwrap()
        };
        let held = sessions(&key);
        assert_eq!(held.len(), 1, "one client's sessions: {held:?}");
        let name = held[0][0].clone().unwrap();
        let row = POSTGRES
            .query(&format!(
                "SELECT CLIENT_ID FROM INT_LOCK WHERE LOCK_KEY = {}",
                spring_int_lock_key(&key)
            ))
            .unwrap();
        assert_eq!(
            Some(format!("lockbench {}", row[0][0].clone().unwrap())),
            Some(name)
        );
        let count: u32 = held[0][1].clone().unwrap().parse().unwrap();
        assert!(count >= 1, "{held:?}");
        lease.release().await.unwrap();
        assert!(sessions(&key).is_empty(), "released: {:?}", sessions(&key));
        drop(other);
    }
}

mod jvm_spring_redis {
    use super::*;

    lockers::conformance_tests!(@cases spring_redis();
        stale_release_is_not_held);

    /// Left out of the list: `watchdog_lease_outlives_timeout`, which counts `Renewed` events (the
    /// registry's TaskScheduler renews unseen). Instead: the lock outlives three TTLs, as the server sees
    /// it (the key is still there, its TTL refreshed) and as a contender does (each try is `Timeout`).
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn renewal_scheduler_keeps_the_key_past_its_ttl() {
        use lockers::{AcquireOptions, Locker};

        let peer = spring_redis();
        let (holder, other) = (
            peer.start(Events::none()).await,
            peer.start(Events::none()).await,
        );
        let key = format!("renewed:{:08x}", rand::random::<u32>());
        let lease = holder
            .acquire(&key, &AcquireOptions::try_once())
            .await
            .unwrap();
        let ttl = peer.watchdog;
        let until = std::time::Instant::now() + ttl * 3;
        while std::time::Instant::now() < until {
            let tried = other.acquire(&key, &AcquireOptions::try_once()).await;
            assert!(matches!(tried, Err(LockError::Timeout { .. })), "{tried:?}");
            tokio::time::sleep(ttl / 4).await;
        }
        let pttl = lockbench_servers::probe::resp_command(
            REDIS.addr(),
            &["PTTL", &format!("lockbench:{key}")],
            Duration::from_secs(2),
        )
        .unwrap();
        let left: i64 = pttl.trim().trim_start_matches(':').parse().unwrap();
        assert!(left > 0 && left <= ttl.as_millis() as i64, "PTTL {pttl:?}");
        lease.release().await.unwrap();
    }
}

/// On a PostgreSQL server without `INT_LOCK` (a user's, which lockbench never changes) the JDBC row's
/// hello fails with one `Config` line quoting the DDL of Spring's `schema-postgresql.sql`, the same
/// statement lockbench runs on servers it starts.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spring_jdbc_without_its_table_says_what_to_create() {
    let bare = tokio::task::spawn_blocking(|| PostgresServer::start().unwrap())
        .await
        .unwrap();
    let jdbc = spec("jvm-spring-jdbc");
    let result = PeerLocker::start(
        config(jdbc, vec![bare.url()], Duration::from_secs(2)),
        Events::none(),
    )
    .await;
    let message = match result {
        Err(LockError::Config(message)) => message,
        other => panic!("expected a Config error, got {other:?}"),
    };
    assert!(!message.contains('\n'), "{message}");
    let quoted = message
        .split_once("create it with: ")
        .unwrap_or_else(|| panic!("{message}"))
        .1;
    let ours = int_lock_table().replace("IF NOT EXISTS ", "");
    let words = |s: &str| s.split_whitespace().collect::<String>().to_lowercase();
    assert!(
        words(quoted).starts_with(&words(&ours)),
        "the jar's DDL {quoted:?} is not lockbench's {ours:?}"
    );
}
