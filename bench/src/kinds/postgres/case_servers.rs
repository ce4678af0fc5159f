//! The PostgreSQL set-ups a case starts for itself: a primary with a streaming replica (`failover`;
//! optionally with a delayed replication link) and one server in a network namespace of its own
//! with short TCP keepalives (`keepalive_partition`), whose sessions a [`SessionWatch`] follows.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use lockbench_reports::model::ServerInfo;
use lockbench_servers::postgres::{DATABASE, Session as PostgresSession, first_value};
use lockbench_servers::{
    NamespacedPostgres, Partition, PostgresOptions, PostgresPair, PostgresServer, Proxy,
};

use super::prepare_own_postgres;
use crate::kinds::case_servers::{
    CaseServers, CaseStarts, FailoverReport, NAMESPACED_KEEPALIVES as KEEPALIVES, SessionWatch,
    Start, case_info, fail_over_pair, lag_link, lag_words, promoted,
};
use crate::kinds::{EndpointAddrs, ServerKind};

/// The PostgreSQL set-ups, with how long each takes to start and stop.
pub(super) const STARTS: CaseStarts = CaseStarts {
    // A primary + streaming replica (failover: a fresh server from `initdb` and its copy from
    // `pg_basebackup`; measured 1.36-1.52 s to start both, 2.7 s on a busy machine, then the tables
    // and the replication link's proxy).
    pair: Some(Start {
        start: |lag| Ok(Box::new(Pair::start(lag)?)),
        takes: Duration::from_millis(2000),
    }),
    // One server (no replica), plus its namespace and link.
    namespaced: Some(Start {
        start: |()| Ok(Box::new(Namespaced::start()?)),
        takes: Duration::from_millis(1000),
    }),
    sentinels: None,
    sharded: None,
    cluster: None,
    nodes: None,
    restartable: None,
};

/// What the server logs when keepalive (or the user timeout) gave up a client's connection.
const TIMED_OUT: &str = "could not receive data from client: Connection timed out";

/// How long one statement of a [`SessionWatch`] may take.
const WATCH_TIMEOUT: Duration = Duration::from_secs(2);

/// A PostgreSQL primary + streaming replica; `lag` is the proxy on the replication link when it is
/// delayed.
#[derive(Debug)]
pub(super) struct Pair {
    pub(super) pair: PostgresPair,
    lag: Option<Proxy>,
}

impl Pair {
    /// Starts a PostgreSQL primary with a streaming replica and the tables its rows need, the
    /// Spring JDBC peer's included (created on the primary, replicated). With a `replication_lag`,
    /// the replica streams through a proxy that delays the primary's WAL by it. Blocking (about a
    /// second).
    pub(super) fn start(replication_lag: Duration) -> Result<Self, String> {
        let pair = PostgresPair::start().map_err(|e| format!("postgres primary + replica: {e}"))?;
        prepare_own_postgres(pair.primary()).map_err(|e| format!("postgres tables: {e}"))?;
        let lag = lag_link(pair.primary().addr(), replication_lag, |proxy| {
            pair.replicate_through(proxy.addr())
                .map_err(|e| format!("streaming through the link proxy: {e}"))
        })?;
        Ok(Pair { pair, lag })
    }

    /// Kills the primary and compares the lock state it held just before (lease, fencing and
    /// INT_LOCK rows, and the advisory locks its sessions held, which are never replicated) with
    /// the replica's right after, and how far the replica's received WAL was behind the primary's.
    /// Nothing pauses the clients' writes first (PostgreSQL has no `CLIENT PAUSE`): a statement that
    /// commits between the snapshot and the kill, a few milliseconds, is counted as the snapshot saw
    /// it.
    fn kill_primary(&self) -> Result<FailoverReport, String> {
        let (primary, replica) = (self.pair.primary(), self.pair.replica());
        let before = snapshot(primary);
        let written = primary
            .query("SELECT pg_current_wal_lsn()::text")
            .ok()
            .and_then(|rows| first_value(&rows));
        primary
            .kill()
            .map_err(|e| format!("killing the primary: {e}"))?;
        let unreplicated = written.and_then(|lsn| {
            replica
                .query(&format!(
                    "SELECT greatest(pg_wal_lsn_diff('{lsn}', pg_last_wal_receive_lsn()), 0)::bigint"
                ))
                .ok()
                .and_then(|rows| first_value(&rows))
                .and_then(|bytes| bytes.parse().ok())
        });
        let after = snapshot(replica);
        Ok(FailoverReport::compare(
            (primary.addr(), &before),
            (replica.addr(), &after),
            unreplicated,
        ))
    }
}

impl CaseServers for Pair {
    fn kind(&self) -> ServerKind {
        ServerKind::Postgres
    }

    fn endpoints(&self) -> EndpointAddrs {
        EndpointAddrs {
            postgres: Some(self.pair.primary().url()),
            ..EndpointAddrs::default()
        }
    }

    fn stats_at(&self) -> Option<(SocketAddr, Option<u32>)> {
        let primary = self.pair.primary();
        Some((primary.addr(), Some(primary.pid())))
    }

    fn info(&self) -> ServerInfo {
        case_info(
            ServerKind::Postgres,
            self.pair.primary().version().to_owned(),
            format!(
                "primary + streaming replica started per case{}",
                lag_words(self.lag.as_ref())
            ),
            self.pair.primary().startup() + self.pair.replica().startup(),
        )
    }

    fn serving_pid(&self) -> Option<(u32, String)> {
        let primary = self.pair.primary();
        Some((
            primary.pid(),
            format!("postgres primary {}", primary.addr()),
        ))
    }

    fn fail_over(&self, redirect: &dyn Fn(SocketAddr)) -> Result<FailoverReport, String> {
        fail_over_pair(
            self.lag.as_ref(),
            self.pair.replica().addr(),
            redirect,
            || {
                let report = self.kill_primary()?;
                promoted(self.pair.promote_replica())?;
                Ok(report)
            },
        )
    }
}

/// One PostgreSQL in a network namespace of its own, with [`KEEPALIVES`].
#[derive(Debug)]
struct Namespaced(Arc<NamespacedPostgres>);

impl Namespaced {
    /// Starts it and the tables its rows need. Blocking (about a second).
    fn start() -> Result<Self, String> {
        let postgres = NamespacedPostgres::start(PostgresOptions {
            keepalives: Some(KEEPALIVES),
            ..PostgresOptions::default()
        })
        .map_err(|e| format!("postgres in a network namespace: {e}"))?;
        prepare_own_postgres(postgres.server()).map_err(|e| format!("postgres tables: {e}"))?;
        Ok(Namespaced(Arc::new(postgres)))
    }
}

impl CaseServers for Namespaced {
    fn kind(&self) -> ServerKind {
        ServerKind::Postgres
    }

    fn endpoints(&self) -> EndpointAddrs {
        EndpointAddrs {
            postgres: Some(self.0.server().url()),
            ..EndpointAddrs::default()
        }
    }

    fn stats_at(&self) -> Option<(SocketAddr, Option<u32>)> {
        Some((self.0.server().addr(), Some(self.0.server().pid())))
    }

    fn info(&self) -> ServerInfo {
        let p = &self.0;
        case_info(
            ServerKind::Postgres,
            p.server().version().to_owned(),
            format!(
                "one server in network namespace {} started per case (tcp_keepalives {} s / {} s × {}, tcp_user_timeout {} ms)",
                p.namespace().name(),
                KEEPALIVES.idle.as_secs(),
                KEEPALIVES.interval.as_secs(),
                KEEPALIVES.count,
                KEEPALIVES.limit().as_millis()
            ),
            p.server().startup(),
        )
    }

    fn serving_pid(&self) -> Option<(u32, String)> {
        let server = self.0.server();
        Some((
            server.pid(),
            format!("postgres {} (in a network namespace)", server.addr()),
        ))
    }

    fn keepalive_limit(&self) -> Option<Duration> {
        Some(KEEPALIVES.limit())
    }

    fn partition(&self, ports: &[u16]) -> Result<Partition, String> {
        self.0
            .namespace()
            .partition(ports)
            .map_err(|e| format!("partition: {e}"))
    }

    /// On one session of its own kept open for the fault, counting the server's "timed out" log
    /// lines from now on.
    fn watch_sessions(&self, ports: &[u16]) -> Result<Box<dyn SessionWatch>, String> {
        let server = self.0.server();
        let list = ports
            .iter()
            .map(u16::to_string)
            .collect::<Vec<_>>()
            .join(",");
        let count = format!(
            "SELECT count(*) FROM pg_stat_activity WHERE client_addr = '{}' AND client_port IN ({list})",
            self.0.namespace().host_addr()
        );
        let session = PostgresSession::connect(server.addr(), DATABASE, WATCH_TIMEOUT)
            .map_err(|e| format!("a session to watch pg_stat_activity: {e}"))?;
        Ok(Box::new(Sessions {
            postgres: self.0.clone(),
            session,
            count,
            log_mark: server.log_len(),
        }))
    }
}

/// The namespaced PostgreSQL's sessions from some client ports, watched on one session kept open.
#[derive(Debug)]
struct Sessions {
    postgres: Arc<NamespacedPostgres>,
    session: PostgresSession,
    /// Counts the watched sessions in `pg_stat_activity`.
    count: String,
    /// The server log's length when the watch began.
    log_mark: u64,
}

impl SessionWatch for Sessions {
    fn read(&mut self) -> Result<(u64, usize), String> {
        let rows = self
            .session
            .query(&self.count)
            .map_err(|e| format!("pg_stat_activity: {e}"))?;
        let live = first_value(&rows)
            .and_then(|v| v.parse().ok())
            .unwrap_or_default();
        let log = self.postgres.server().log_since(self.log_mark);
        Ok((live, log.matches(TIMED_OUT).count()))
    }

    fn timed_out_line(&self) -> &'static str {
        TIMED_OUT
    }
}

/// The lock state a PostgreSQL server holds, by row or lock: `lease KEY` → its token and holder,
/// `fencing KEY` → its token, `int_lock KEY` → the Spring JDBC peer's row's client id and expiry,
/// `advisory ID` → granted (advisory locks live in the sessions of the server that granted them; a
/// replica shows none of its primary's).
fn snapshot(server: &PostgresServer) -> BTreeMap<String, String> {
    const STATE: &str = "SELECT 'lease ' || key, token || ' ' || holder FROM lockbench_leases \
         UNION ALL SELECT 'fencing ' || key, token::text FROM lockbench_fencing \
         UNION ALL SELECT 'int_lock ' || lock_key, client_id || ' ' || expired_after FROM int_lock \
         UNION ALL SELECT 'advisory ' || classid || ':' || objid, 'granted' FROM pg_locks \
         WHERE locktype = 'advisory' AND granted";
    server
        .query(STATE)
        .unwrap_or_default()
        .into_iter()
        .filter_map(|row| match row.as_slice() {
            [Some(key), Some(value)] => Some((key.clone(), value.clone())),
            _ => None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A PostgreSQL pair has every row's table, the Spring JDBC peer's included, and a failover's
    /// evidence counts a Spring lock row written inside the replication lag as missing on the replica.
    #[test]
    fn a_postgres_failover_sees_the_spring_rows_the_replica_lacks() {
        let servers = Pair::start(Duration::from_secs(2)).expect("pair");
        servers
            .pair
            .primary()
            .query(
                "INSERT INTO INT_LOCK VALUES ('00000000-0000-3000-8000-000000000000', 'DEFAULT', \
                 '11111111-1111-4111-8111-111111111111', now(), now() + interval '1 minute')",
            )
            .expect("INT_LOCK on the primary");
        let report = servers.fail_over(&|_| {}).expect("failover");
        assert_eq!(
            (report.primary_keys, report.missing_keys),
            (1, 1),
            "{report:?}"
        );
        assert!(
            report.unreplicated_bytes.is_some_and(|b| b > 0),
            "{report:?}"
        );
    }
}
