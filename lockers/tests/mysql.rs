//! `mysql-get-lock` and `mysql-lease` on a real MariaDB (one server for the whole binary): the
//! conformance suite for both, a session killed by the server, a lease row outliving its session,
//! long keys, TLS, and bad input.
#![allow(clippy::unwrap_used)]

use std::io::Write;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use async_trait::async_trait;
use lockbench_servers::{MariaDbOptions, MariaDbServer, TestCertificates};
use lockers::conformance::Target;
use lockers::mysql::get_lock::MysqlGetLock;
use lockers::mysql::lease::MysqlLease;
use lockers::mysql::{HELD_LOCKS, MysqlConfig, SCHEMA, holder_sessions, lock_name};
use lockers::{AcquireOptions, Events, Lease, LockError, Locker, LossReason, Renewal};

/// Watchdog TTL of the clients: second-scale tests.
const TTL: Duration = Duration::from_secs(1);

/// The binary's one server, with the strategies' tables. (A static is never dropped: the server dies
/// with this process, and the next server start removes its data directory.)
fn server() -> &'static MariaDbServer {
    static SERVER: OnceLock<MariaDbServer> = OnceLock::new();
    SERVER.get_or_init(|| {
        let server = MariaDbServer::start().unwrap();
        server.query(SCHEMA).unwrap();
        server
    })
}

fn config() -> MysqlConfig {
    MysqlConfig {
        renewal: Renewal::new(TTL),
        ..MysqlConfig::default()
    }
}

/// Runs `sql` as the server's user, off the async threads.
async fn admin(sql: String) -> Vec<Vec<Option<String>>> {
    tokio::task::spawn_blocking(move || server().query(&sql).unwrap())
        .await
        .unwrap()
}

/// Ends the sessions that hold `key` (`KILL CONNECTION`), as an operator would; how many.
async fn kill_holders(key: &str) -> usize {
    let ids = admin(holder_sessions(key)).await;
    for id in &ids {
        admin(format!("KILL CONNECTION {}", id[0].as_deref().unwrap())).await;
    }
    ids.len()
}

/// Which MySQL strategy a client runs.
#[derive(Debug, Clone, Copy)]
enum Row {
    GetLock,
    Lease,
}

/// A client of `row` on the server at `url`.
async fn connect(row: Row, url: &str, events: Events) -> Result<Arc<dyn Locker>, LockError> {
    Ok(match row {
        Row::GetLock => Arc::new(MysqlGetLock::connect(url, config(), events).await?),
        Row::Lease => Arc::new(MysqlLease::connect(url, config(), events).await?),
    })
}

#[async_trait]
impl Target for Row {
    async fn client(&self, events: Events) -> Arc<dyn Locker> {
        connect(*self, &server().url(), events).await.unwrap()
    }

    fn watchdog_timeout(&self) -> Duration {
        TTL
    }

    fn short_lease(&self) -> Duration {
        Duration::from_millis(500)
    }

    /// An operator ends the holder's session (`KILL`): a user lock goes with it. A lease row outlives
    /// its session, so it is deleted instead.
    async fn remove_behind_back(&self, lease: &Lease) {
        let key = lease.key();
        let ended = match self {
            Row::GetLock => kill_holders(key).await,
            Row::Lease => {
                let name = lock_name(key).replace('\'', "''");
                admin(format!(
                    "DELETE FROM lockbench_leases WHERE name = '{name}'"
                ))
                .await;
                1
            }
        };
        assert_eq!(ended, 1, "one session or row held {key}");
    }
}

mod get_lock {
    lockers::conformance_tests!(super::Row::GetLock);
}

mod lease {
    lockers::conformance_tests!(super::Row::Lease);
}

/// A killed session loses its user lock: the holder learns it at its next check (`ChannelClosed`),
/// and the next holder's token is greater.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_session_loses_its_lock_by_the_next_check() {
    let a = Row::GetLock.client(Events::none()).await;
    let b = Row::GetLock.client(Events::none()).await;
    let key = format!("killed:{:08x}", rand::random::<u32>());
    let lease = a.acquire(&key, &AcquireOptions::try_once()).await.unwrap();
    let started = std::time::Instant::now();
    assert_eq!(kill_holders(&key).await, 1);
    let next = b.acquire(&key, &AcquireOptions::try_once()).await.unwrap();
    assert!(next.token() > lease.token());
    let reason = tokio::time::timeout(TTL, lease.lost()).await.unwrap();
    assert!(matches!(reason, LossReason::ChannelClosed(_)), "{reason}");
    // Found by a check (every TTL/3), well before the deadline would have expired it.
    assert!(started.elapsed() < TTL * 2 / 3, "{:?}", started.elapsed());
    next.release().await.unwrap();
}

/// A lease row is not session state: the server ending the holder's connection frees nothing; the
/// next renewal reconnects and the lease lives on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lease_outlives_its_session_killed_by_the_server() {
    let a = Row::Lease.client(Events::none()).await;
    let b = Row::Lease.client(Events::none()).await;
    let key = format!("killed:{:08x}", rand::random::<u32>());
    let lease = a.acquire(&key, &AcquireOptions::try_once()).await.unwrap();
    assert_eq!(kill_holders(&key).await, 1, "the holder's one session");
    assert!(matches!(
        b.acquire(&key, &AcquireOptions::try_once()).await,
        Err(LockError::Timeout { .. })
    ));
    // Past a renewal, on a new connection: still held, and released as ours.
    let renewed = tokio::time::timeout(TTL / 2, lease.lost()).await;
    assert!(renewed.is_err(), "lost: {renewed:?}");
    lease.release().await.unwrap();
}

/// A row's expiry is the server's: a row moved into the past on the server is taken over at once,
/// with a greater token, and its holder learns it at its next renewal.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expired_row_is_taken_over_with_a_greater_token() {
    let a = Row::Lease.client(Events::none()).await;
    let b = Row::Lease.client(Events::none()).await;
    let key = format!("expired:{:08x}", rand::random::<u32>());
    let lease = a.acquire(&key, &AcquireOptions::try_once()).await.unwrap();
    admin(format!(
        "UPDATE lockbench_leases SET expires_at = UTC_TIMESTAMP(6) - INTERVAL 1 SECOND \
         WHERE name = '{key}'"
    ))
    .await;
    let next = b.acquire(&key, &AcquireOptions::try_once()).await.unwrap();
    assert!(next.token() > lease.token());
    let reason = tokio::time::timeout(TTL, lease.lost()).await.unwrap();
    assert!(matches!(reason, LossReason::RenewRejected), "{reason}");
    next.release().await.unwrap();
}

/// Keys longer than a MySQL lock name may be are locked by their hash, on both strategies, and
/// still exclude each other.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn long_keys_are_locked_by_their_hash() {
    let key = format!("long:{}", "k".repeat(300));
    let name = lock_name(&key);
    assert_eq!(name.len(), 64);
    assert_eq!(lock_name("short"), "short");
    for row in [Row::GetLock, Row::Lease] {
        let (a, b) = (
            row.client(Events::none()).await,
            row.client(Events::none()).await,
        );
        let lease = a.acquire(&key, &AcquireOptions::try_once()).await.unwrap();
        assert!(matches!(
            b.acquire(&key, &AcquireOptions::try_once()).await,
            Err(LockError::Timeout { .. })
        ));
        lease.release().await.unwrap();
        b.acquire(&key, &AcquireOptions::try_once())
            .await
            .unwrap()
            .release()
            .await
            .unwrap();
    }
    let rows = admin(format!(
        "SELECT (SELECT count(*) FROM lockbench_fencing WHERE name = '{name}') \
         + (SELECT count(*) FROM lockbench_leases WHERE name = '{name}')"
    ))
    .await;
    assert_eq!(rows[0][0].as_deref(), Some("2"));
}

/// A server with TLS: both strategies connect with `?ca=` and lock.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_with_the_servers_ca() {
    let certificates = TestCertificates::generate().unwrap();
    let tls = lockbench_servers::certs::TlsFiles::of(&certificates);
    let ca = tls.ca.display().to_string();
    let secured = tokio::task::spawn_blocking(move || {
        let server = MariaDbServer::start_with(MariaDbOptions {
            tls: Some(tls),
            ..MariaDbOptions::default()
        })
        .unwrap();
        server.query(SCHEMA).unwrap();
        server
    })
    .await
    .unwrap();
    let url = format!("{}?ca={ca}", secured.url());
    for row in [Row::GetLock, Row::Lease] {
        let client = connect(row, &url, Events::none()).await.unwrap();
        client
            .acquire("tls", &AcquireOptions::try_once())
            .await
            .unwrap()
            .release()
            .await
            .unwrap();
    }
    let plain_only = format!("{}?require_ssl=true", server().url());
    let error = connect(Row::Lease, &plain_only, Events::none())
        .await
        .unwrap_err();
    assert!(error.to_string().contains("TLS needs ca=FILE"), "{error}");
    drop(secured);
}

/// A listener on loopback that greets every connection with `greeting` (nothing when empty) and
/// keeps it open.
fn impostor(greeting: &'static [u8]) -> std::net::SocketAddr {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        let mut open = Vec::new();
        for mut stream in listener.incoming().flatten() {
            let _ = stream.write_all(greeting);
            open.push(stream);
        }
    });
    addr
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_addresses_and_missing_tables_are_one_line_errors() {
    let one_line = |error: &LockError| {
        let text = error.to_string();
        assert!(!text.contains("s3cret") && !text.contains('\n'), "{text}");
        text
    };
    let port = lockbench_servers::free_ports(1).unwrap()[0];
    let unreachable = format!("mysql://app:s3cret@127.0.0.1:{port}/db");
    let error = connect(Row::Lease, &unreachable, Events::none())
        .await
        .unwrap_err();
    assert!(matches!(error, LockError::Backend { .. }), "{error}");
    one_line(&error);
    // Something else listens there: one line saying it is not MySQL.
    let redis_like = impostor(b"-ERR unknown command\r\n");
    let short = MysqlConfig {
        connect_timeout: Duration::from_millis(500),
        ..config()
    };
    for addr in [redis_like, impostor(b"")] {
        let url = format!("mysql://app:s3cret@{addr}/db");
        let error = MysqlLease::connect(&url, short.clone(), Events::none())
            .await
            .unwrap_err();
        let text = one_line(&error);
        assert!(text.contains("MySQL or MariaDB"), "{text}");
    }
    let wrong_password = server().url().replace(":lockbench@", ":wrong@");
    let error = connect(Row::GetLock, &wrong_password, Events::none())
        .await
        .unwrap_err();
    assert!(one_line(&error).contains("Access denied"), "{error}");
    let error = connect(
        Row::GetLock,
        "postgres://a:s3cret@127.0.0.1:1/db",
        Events::none(),
    )
    .await
    .unwrap_err();
    assert!(one_line(&error).contains("mysql://"), "{error}");
    // A database without the tables: the error says what to create.
    admin("CREATE DATABASE IF NOT EXISTS bare".into()).await;
    let bare = format!("{}/bare", server().url().rsplit_once('/').unwrap().0);
    for row in [Row::Lease, Row::GetLock] {
        let error = connect(row, &bare, Events::none()).await.unwrap_err();
        let text = one_line(&error);
        assert!(matches!(error, LockError::Config(_)), "{text}");
        assert!(
            text.contains("CREATE TABLE IF NOT EXISTS lockbench_"),
            "{text}"
        );
    }
}

/// The server's statement counters by kind (`Com_*`; a prepared statement's execution counts as its
/// kind, preparing it as none of them): what a client sends, and not the probe's `SHOW STATUS`.
const COUNTED: &str = "SHOW GLOBAL STATUS WHERE Variable_name IN ('Com_select', 'Com_insert', \
     'Com_insert_select', 'Com_update', 'Com_delete', 'Com_set_option')";

/// What each client says it sent is what the server counted (a server of its own: the counters are
/// global), its connect-time settings query included; and the locks it holds are what the server
/// counts as held.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_sent_are_what_the_server_counted() {
    let own = tokio::task::spawn_blocking(|| {
        let server = MariaDbServer::start().unwrap();
        server.query(SCHEMA).unwrap();
        server
    })
    .await
    .unwrap();
    let addr = own.addr();
    let counted = || async move {
        tokio::task::spawn_blocking(move || {
            let timeout = Duration::from_secs(5);
            let rows = lockbench_servers::mariadb::query(addr, COUNTED, timeout).unwrap();
            rows.iter()
                .map(|row| row[1].as_deref().unwrap().parse::<u64>().unwrap())
                .sum::<u64>()
        })
        .await
        .unwrap()
    };
    let before = counted().await;
    let clients = [
        connect(Row::GetLock, &own.url(), Events::none())
            .await
            .unwrap(),
        connect(Row::Lease, &own.url(), Events::none())
            .await
            .unwrap(),
    ];
    for client in &clients {
        for i in 0..25 {
            let key = format!("counted:{i}");
            let lease = client
                .acquire(&key, &AcquireOptions::try_once())
                .await
                .unwrap();
            lease.release().await.unwrap();
        }
        // Held past a renewal period: the lease row's renewals and the user lock's checks.
        let lease = client
            .acquire("counted:held", &AcquireOptions::try_once())
            .await
            .unwrap();
        tokio::time::sleep(TTL / 2).await;
        lease.release().await.unwrap();
    }
    let sent: u64 = clients.iter().map(|c| c.requests_sent().unwrap()).sum();
    let seen = counted().await - before;
    // Two statements per cycle, a check or a renewal (three statements) at least per held lease, a
    // settings query and a table check per connection.
    assert!(sent >= 2 * 26 * 2 + 1 + 3 + 2 * 2, "{sent}");
    assert_eq!(
        seen, sent,
        "the server counted {seen}, the clients sent {sent}"
    );
    // What the server holds: two user locks and a live lease row, not a released lock.
    let once = AcquireOptions::try_once();
    let held = [
        clients[0].acquire("a", &once).await.unwrap(),
        clients[0].acquire("b", &once).await.unwrap(),
        clients[1].acquire("a", &once).await.unwrap(),
    ];
    clients[1]
        .acquire("c", &once)
        .await
        .unwrap()
        .release()
        .await
        .unwrap();
    let count = tokio::task::spawn_blocking(move || {
        let rows = lockbench_servers::mariadb::query(addr, HELD_LOCKS, Duration::from_secs(5));
        rows.unwrap()[0][0].clone()
    })
    .await
    .unwrap();
    assert_eq!(count.as_deref(), Some("3"));
    drop(held);
}
