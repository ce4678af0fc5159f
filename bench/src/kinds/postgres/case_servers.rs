//! The PostgreSQL set-ups a case starts for itself: a primary with a streaming replica (`failover`;
//! optionally with a delayed replication link) and one server in a network namespace of its own
//! with short TCP keepalives (`keepalive_partition`). Both are the shared SQL set-ups
//! (`PrimaryReplica`, `NamespacedSql`) over what is PostgreSQL's own here: how its servers start,
//! list their sessions and log a keepalive's end, and the lock state a failover compares.

use std::net::Ipv4Addr;
use std::time::Duration;

use lockbench_servers::postgres::{DATABASE, Session as PostgresSession, first_value};
use lockbench_servers::{
    Keepalives, NamespacedPostgres, PostgresOptions, PostgresPair, PostgresServer, ServerError,
};

use super::prepare_own_postgres;
use crate::kinds::case_servers::{CaseStarts, Start};
use crate::kinds::sql_case_servers::{
    NamespacedSql, PrimaryReplica, SqlPair, SqlServer, replicated_by_inherent_methods,
    served_by_inherent_methods,
};
use crate::kinds::{EndpointAddrs, ServerKind};

/// The PostgreSQL set-ups, with how long each takes to start and stop.
pub(super) const STARTS: CaseStarts = CaseStarts {
    // A primary + streaming replica (failover: a fresh server from `initdb` and its copy from
    // `pg_basebackup`; measured 1.36-1.52 s to start both, 2.7 s on a busy machine, then the tables
    // and the replication link's proxy).
    pair: Some(Start {
        start: |lag| Ok(Box::new(PrimaryReplica::<PostgresPair>::start(lag)?)),
        takes: Duration::from_millis(2000),
    }),
    // One server (no replica), plus its namespace and link.
    namespaced: Some(Start {
        start: |()| Ok(Box::new(NamespacedSql::<PostgresServer>::start()?)),
        takes: Duration::from_millis(1000),
    }),
    sentinels: None,
    sharded: None,
    cluster: None,
    nodes: None,
    restartable: None,
};

impl SqlPair for PostgresPair {
    type Server = PostgresServer;
    const DESCRIBED: &'static str = "primary + streaming replica";
    const REPLICATING: &'static str = "streaming";

    replicated_by_inherent_methods!(PostgresServer);

    /// Its lease, fencing and INT_LOCK rows, and the advisory locks its sessions hold (advisory
    /// locks live in the sessions of the server that granted them; a replica shows none of its
    /// primary's): `lease KEY` → its token and holder, `fencing KEY` → its token, `int_lock KEY` →
    /// the Spring JDBC peer's row's client id and expiry, `advisory ID` → granted.
    const LOCK_STATE: &'static str = "SELECT 'lease ' || key, token || ' ' || holder \
         FROM lockbench_leases \
         UNION ALL SELECT 'fencing ' || key, token::text FROM lockbench_fencing \
         UNION ALL SELECT 'int_lock ' || lock_key, client_id || ' ' || expired_after FROM int_lock \
         UNION ALL SELECT 'advisory ' || classid || ':' || objid, 'granted' FROM pg_locks \
         WHERE locktype = 'advisory' AND granted";
    /// The primary's current WAL position.
    type Written = String;

    fn written(primary: &PostgresServer) -> Option<String> {
        primary
            .query("SELECT pg_current_wal_lsn()::text")
            .ok()
            .and_then(|rows| first_value(&rows))
    }

    /// How far the replica's received WAL is behind `lsn`.
    fn unreplicated(replica: &PostgresServer, lsn: String) -> Option<u64> {
        replica
            .query(&format!(
                "SELECT greatest(pg_wal_lsn_diff('{lsn}', pg_last_wal_receive_lsn()), 0)::bigint"
            ))
            .ok()
            .and_then(|rows| first_value(&rows))
            .and_then(|bytes| bytes.parse().ok())
    }
}

impl SqlServer for PostgresServer {
    const KIND: ServerKind = ServerKind::Postgres;
    const NAME: &'static str = "postgres";
    const DESCRIBED: &'static str = "server";
    const SESSION_LIST: &'static str = "pg_stat_activity";
    const TIMED_OUT: &'static str = "could not receive data from client: Connection timed out";
    type Session = PostgresSession;

    fn start_inside(keepalives: Keepalives) -> Result<NamespacedPostgres, ServerError> {
        NamespacedPostgres::start(PostgresOptions {
            keepalives: Some(keepalives),
            ..PostgresOptions::default()
        })
    }

    fn prepare(&self) -> Result<(), ServerError> {
        prepare_own_postgres(self)
    }

    fn endpoints(&self) -> EndpointAddrs {
        EndpointAddrs {
            postgres: Some(self.url()),
            ..EndpointAddrs::default()
        }
    }

    served_by_inherent_methods!();

    fn keepalive_words(k: Keepalives) -> String {
        format!(
            "tcp_keepalives {} s / {} s × {}, tcp_user_timeout {} ms",
            k.idle.as_secs(),
            k.interval.as_secs(),
            k.count,
            k.limit().as_millis()
        )
    }

    fn count_sessions(host: Ipv4Addr, ports: &[u16]) -> String {
        let list = ports
            .iter()
            .map(u16::to_string)
            .collect::<Vec<_>>()
            .join(",");
        format!(
            "SELECT count(*) FROM pg_stat_activity WHERE client_addr = '{host}' AND client_port IN ({list})"
        )
    }

    fn open_session(&self, timeout: Duration) -> Result<PostgresSession, ServerError> {
        PostgresSession::connect(self.addr(), DATABASE, timeout)
    }

    fn session_query(
        session: &mut PostgresSession,
        sql: &str,
    ) -> Result<Vec<Vec<Option<String>>>, ServerError> {
        session.query(sql)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kinds::CaseServers;

    /// A PostgreSQL pair has every row's table, the Spring JDBC peer's included, and a failover's
    /// evidence counts a Spring lock row written inside the replication lag as missing on the replica.
    #[test]
    fn a_postgres_failover_sees_the_spring_rows_the_replica_lacks() {
        let servers = PrimaryReplica::<PostgresPair>::start(Duration::from_secs(2)).expect("pair");
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
