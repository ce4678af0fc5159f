//! `postgres-advisory` and `postgres-lease` on a real PostgreSQL (one server for the whole binary):
//! the conformance suite for both, a session ended by the server, and bad input.
#![allow(clippy::unwrap_used)]

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use async_trait::async_trait;
use lockbench_servers::PostgresServer;
use lockers::conformance::Target;
use lockers::postgres::advisory::PostgresAdvisory;
use lockers::postgres::lease::PostgresLease;
use lockers::postgres::{PostgresConfig, SCHEMA, holder_sessions};
use lockers::{AcquireOptions, Events, Lease, LockError, Locker, LossReason, Renewal};

/// Watchdog TTL of the clients: second-scale tests.
const TTL: Duration = Duration::from_secs(1);

/// The binary's one server, with the strategies' tables. (A static is never dropped: the server dies
/// with this process, and the next server start removes its data directory.)
fn server() -> &'static PostgresServer {
    static SERVER: OnceLock<PostgresServer> = OnceLock::new();
    SERVER.get_or_init(|| {
        let server = PostgresServer::start().unwrap();
        server.query(SCHEMA).unwrap();
        server
    })
}

fn config() -> PostgresConfig {
    PostgresConfig {
        renewal: Renewal::new(TTL),
        ..PostgresConfig::default()
    }
}

/// Runs `sql` as the server's superuser, off the async threads.
async fn admin(sql: String) -> Vec<Vec<Option<String>>> {
    tokio::task::spawn_blocking(move || server().query(&sql).unwrap())
        .await
        .unwrap()
}

/// Which PostgreSQL strategy a client runs.
#[derive(Debug, Clone, Copy)]
enum Row {
    Advisory,
    Lease,
}

/// A client of `row` on the server at `url`.
async fn connect(row: Row, url: &str, events: Events) -> Result<Arc<dyn Locker>, LockError> {
    Ok(match row {
        Row::Advisory => Arc::new(PostgresAdvisory::connect(url, config(), events).await?),
        Row::Lease => Arc::new(PostgresLease::connect(url, config(), events).await?),
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

    /// An operator ends the holder's session (`pg_terminate_backend`): an advisory lock goes with
    /// it. A lease row outlives its session, so it is deleted instead.
    async fn remove_behind_back(&self, lease: &Lease) {
        let key = lease.key();
        let ended = match self {
            Row::Advisory => admin(format!(
                "SELECT pg_terminate_backend(pid) FROM ({}) s",
                holder_sessions(key)
            )),
            Row::Lease => admin(format!(
                "DELETE FROM lockbench_leases WHERE key = '{}' RETURNING key",
                key.replace('\'', "''")
            )),
        }
        .await;
        assert_eq!(ended.len(), 1, "one session or row held {key}");
    }
}

mod advisory {
    lockers::conformance_tests!(super::Row::Advisory);
}

mod lease {
    lockers::conformance_tests!(super::Row::Lease);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_side_session_end_is_noticed_at_once_and_frees_the_lock() {
    let a = Row::Advisory.client(Events::none()).await;
    let b = Row::Advisory.client(Events::none()).await;
    let key = format!("ended:{:08x}", rand::random::<u32>());
    let lease = a.acquire(&key, &AcquireOptions::try_once()).await.unwrap();
    let started = std::time::Instant::now();
    Row::Advisory.remove_behind_back(&lease).await;
    let reason = tokio::time::timeout(TTL, lease.lost()).await.unwrap();
    assert!(matches!(reason, LossReason::ChannelClosed(_)), "{reason}");
    // Noticed from the connection's end, well before a check would have found it.
    assert!(started.elapsed() < TTL / 3, "{:?}", started.elapsed());
    let next = b.acquire(&key, &AcquireOptions::try_once()).await.unwrap();
    assert!(next.token() > lease.token());
    next.release().await.unwrap();
}

/// A lease row is not session state: the server ending the holder's connection (found by the row's
/// holder) frees nothing; the next renewal reconnects and the lease lives on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lease_outlives_its_session_ended_by_the_server() {
    let a = Row::Lease.client(Events::none()).await;
    let b = Row::Lease.client(Events::none()).await;
    let key = format!("ended:{:08x}", rand::random::<u32>());
    let lease = a.acquire(&key, &AcquireOptions::try_once()).await.unwrap();
    let ended = admin(format!(
        "SELECT pg_terminate_backend(pid) FROM ({}) s",
        holder_sessions(&key)
    ))
    .await;
    assert_eq!(
        ended,
        vec![vec![Some("t".to_owned())]],
        "the holder's one session"
    );
    assert!(matches!(
        b.acquire(&key, &AcquireOptions::try_once()).await,
        Err(LockError::Timeout { .. })
    ));
    // Past a renewal, on a new connection: still held, and released as ours.
    let renewed = tokio::time::timeout(TTL / 2, lease.lost()).await;
    assert!(renewed.is_err(), "lost: {renewed:?}");
    lease.release().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_addresses_and_missing_tables_are_one_line_errors() {
    let port = lockbench_servers::free_ports(1).unwrap()[0];
    let unreachable = format!("postgres://app:s3cret@127.0.0.1:{port}/postgres");
    let error = connect(Row::Lease, &unreachable, Events::none())
        .await
        .unwrap_err();
    let text = error.to_string();
    assert!(matches!(error, LockError::Backend { .. }), "{text}");
    assert!(!text.contains("s3cret") && !text.contains('\n'), "{text}");
    let tls = format!("{}?sslmode=require", server().url());
    let error = connect(Row::Advisory, &tls, Events::none())
        .await
        .unwrap_err();
    assert!(error.to_string().contains("sslmode=require"), "{error}");
    // A database without the tables: the error says what to create.
    admin("CREATE DATABASE bare".into()).await;
    let bare = server().url().replace("/postgres", "/bare");
    for row in [Row::Lease, Row::Advisory] {
        let error = connect(row, &bare, Events::none()).await.unwrap_err();
        let text = error.to_string();
        assert!(matches!(error, LockError::Config(_)), "{text}");
        assert!(
            text.contains("CREATE TABLE IF NOT EXISTS lockbench_"),
            "{text}"
        );
        assert!(!text.contains('\n'), "{text}");
    }
}

/// What each client says it sent is what `pg_stat_statements` counted, in a database of its own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_sent_are_what_pg_stat_statements_counted() {
    admin("CREATE DATABASE counted".into()).await;
    admin("CREATE EXTENSION IF NOT EXISTS pg_stat_statements".into()).await;
    let url = server().url().replace("/postgres", "/counted");
    // The tables, through a connection to that database.
    tokio::task::spawn_blocking(|| {
        let addr = server().addr();
        lockbench_servers::postgres::query_in(addr, "counted", SCHEMA, Duration::from_secs(5))
            .unwrap();
    })
    .await
    .unwrap();
    let counted = |sql: &'static str| async move {
        let rows = admin(format!(
            "SELECT coalesce(sum(calls), 0)::bigint FROM pg_stat_statements \
             WHERE dbid = (SELECT oid FROM pg_database WHERE datname = 'counted') \
             AND query NOT LIKE '%{sql}%'"
        ))
        .await;
        rows[0][0].as_deref().unwrap().parse::<u64>().unwrap()
    };
    let before = counted("CREATE TABLE").await;
    let clients = [
        connect(Row::Advisory, &url, Events::none()).await.unwrap(),
        connect(Row::Lease, &url, Events::none()).await.unwrap(),
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
    }
    // Held past a renewal period: the lease row's renewals and the advisory session's checks.
    for client in &clients {
        let lease = client
            .acquire("counted:held", &AcquireOptions::try_once())
            .await
            .unwrap();
        tokio::time::sleep(TTL / 2).await;
        lease.release().await.unwrap();
    }
    let sent: u64 = clients.iter().map(|c| c.requests_sent().unwrap()).sum();
    let seen = counted("CREATE TABLE").await - before;
    // Two statements per cycle, one check or renewal at least per held lease, one table check each.
    assert!(sent >= 2 * 26 * 2 + 2 + 2, "{sent}");
    assert_eq!(
        seen, sent,
        "the server counted {seen}, the clients sent {sent}"
    );
}

/// `postgres-lease` renews all of a client's rows together: forty leases held for two renewal periods
/// cost a few statements (one per round of the client's scheduler), not one per lease per period;
/// every lease is renewed, and the one whose row was taken away is lost alone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_clients_rows_are_renewed_together_and_a_stolen_row_is_lost_alone() {
    const LEASES: usize = 40;
    let log = lockers::EventLog::new();
    let client = Row::Lease.client(Events::to(log.clone())).await;
    let prefix = format!("together:{:08x}", rand::random::<u32>());
    let mut leases = Vec::new();
    for i in 0..LEASES {
        let key = format!("{prefix}:{i}");
        leases.push(
            client
                .acquire(&key, &AcquireOptions::try_once())
                .await
                .unwrap(),
        );
    }
    let stolen = leases.pop().unwrap();
    admin(format!(
        "UPDATE lockbench_leases SET token = token + 1 WHERE key = '{}'",
        stolen.key()
    ))
    .await;
    let sent_before = client.requests_sent().unwrap();
    let period = TTL / 3;
    let reason = tokio::time::timeout(period * 2, stolen.lost())
        .await
        .unwrap();
    assert!(matches!(reason, LossReason::RenewRejected), "{reason}");
    tokio::time::sleep(period * 2).await;
    let sent = client.requests_sent().unwrap() - sent_before;
    let renewed = |key: &str| {
        log.count(|e| matches!(e, lockers::LockEvent::Renewed { key: k, .. } if &**k == key))
    };
    for lease in &leases {
        assert!(lease.is_held(), "{} lost", lease.key());
        assert!(
            renewed(lease.key()) >= 2,
            "{} renewed {}",
            lease.key(),
            renewed(lease.key())
        );
    }
    assert_eq!(renewed(stolen.key()), 0);
    // A round is 11/12 of a period: at most 4 rounds (and a retry) in the window, where renewing
    // each lease alone would have taken LEASES × 2.
    assert!(
        (2..=6).contains(&sent),
        "{sent} statements for {LEASES} leases"
    );
    for lease in leases {
        lease.release().await.unwrap();
    }
    assert!(matches!(
        stolen.release().await,
        Err(LockError::NotHeld { .. })
    ));
}
