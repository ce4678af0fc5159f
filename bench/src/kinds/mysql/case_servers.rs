//! The MariaDB set-ups a case starts for itself: a primary with an asynchronous GTID replica
//! (`failover`; optionally with a delayed replication link) and one server in a network namespace
//! of its own with short TCP keepalives (`keepalive_partition`). Both are the shared SQL set-ups
//! (`PrimaryReplica`, `NamespacedSql`) over what is MariaDB's own here: how its servers start, list
//! their sessions and log a keepalive's end, and the lock state a failover compares.

use std::net::Ipv4Addr;
use std::time::Duration;

use lockbench_servers::mariadb::Session;
use lockbench_servers::{
    Keepalives, MariaDbOptions, MariaDbPair, MariaDbServer, NamespacedMariaDb, ServerError,
};

use super::prepare_own_mysql;
use crate::kinds::case_servers::{CaseStarts, Start};
use crate::kinds::sql_case_servers::{
    NamespacedSql, PrimaryReplica, SqlPair, SqlServer, replicated_by_inherent_methods,
    served_by_inherent_methods,
};
use crate::kinds::{EndpointAddrs, ServerKind};

/// The MariaDB set-ups, with how long each takes to start and stop.
pub(super) const STARTS: CaseStarts = CaseStarts {
    // A primary + GTID replica (failover: two fresh data directories from `mariadb-install-db`, both
    // servers, the replica caught up, then the tables and the link's proxy). Not timed alone: a run of
    // mysql-failover's two 3 s cases, each starting its own pair, took 8.9-9.9 s (debug build).
    pair: Some(Start {
        start: |lag| Ok(Box::new(PrimaryReplica::<MariaDbPair>::start(lag)?)),
        takes: Duration::from_millis(3000),
    }),
    // One server (no replica), plus its namespace and link.
    namespaced: Some(Start {
        start: |()| Ok(Box::new(NamespacedSql::<MariaDbServer>::start()?)),
        takes: Duration::from_millis(1500),
    }),
    sentinels: None,
    sharded: None,
    cluster: None,
    nodes: None,
    restartable: None,
};

/// The bytes a binlog file starts with before its first event (its magic number).
const BINLOG_HEADER: u64 = 4;

impl SqlPair for MariaDbPair {
    type Server = MariaDbServer;
    const DESCRIBED: &'static str = "MariaDB primary + GTID replica";
    const REPLICATING: &'static str = "replicating";

    replicated_by_inherent_methods!(MariaDbServer);

    /// Its lease and fencing rows (names in hex), and the user locks its sessions hold (user locks
    /// live in the sessions of the server that granted them; a replica shows none of its
    /// primary's): `lease NAME` → its token and holder, `fencing NAME` → its token, `user_lock NAME`
    /// → granted.
    const LOCK_STATE: &'static str = "SELECT CONCAT('lease ', HEX(name)), CONCAT(token, ' ', holder) \
         FROM lockbench_leases \
         UNION ALL SELECT CONCAT('fencing ', HEX(name)), token FROM lockbench_fencing \
         UNION ALL SELECT CONCAT('user_lock ', TABLE_SCHEMA), 'granted' \
         FROM information_schema.METADATA_LOCK_INFO WHERE LOCK_TYPE = 'User lock'";
    /// The primary's binlog file and the position written up to in it.
    type Written = (String, u64);

    fn written(primary: &MariaDbServer) -> Option<(String, u64)> {
        let rows = primary.query("SHOW MASTER STATUS").ok()?;
        let row = rows.into_iter().next()?;
        Some((
            row.first()?.clone()?,
            row.get(1)?.clone()?.parse::<u64>().ok()?,
        ))
    }

    fn unreplicated(replica: &MariaDbServer, (file, position): (String, u64)) -> Option<u64> {
        // `SHOW SLAVE STATUS`: the primary's binlog file it reads (6th column) and the position
        // it has received up to in it (7th).
        let rows = replica.query("SHOW SLAVE STATUS").ok()?;
        let row = rows.first()?;
        let (read_file, read) = (row.get(5)?.as_deref()?, row.get(6)?.as_deref()?);
        let read: u64 = read.parse().ok()?;
        // A replica that has received nothing yet (its link still delayed) names no file: all
        // the primary wrote after the file's 4-byte header is unreplicated.
        if read_file.is_empty() {
            return Some(position.saturating_sub(BINLOG_HEADER));
        }
        (read_file == file).then(|| position.saturating_sub(read))
    }
}

impl SqlServer for MariaDbServer {
    const KIND: ServerKind = ServerKind::Mysql;
    const NAME: &'static str = "mariadb";
    const DESCRIBED: &'static str = "MariaDB";
    const SESSION_LIST: &'static str = "the process list";
    // Its session aborted while it waited for the next statement.
    const TIMED_OUT: &'static str = "Got timeout reading communication packets";
    type Session = Session;

    fn start_inside(keepalives: Keepalives) -> Result<NamespacedMariaDb, ServerError> {
        NamespacedMariaDb::start(MariaDbOptions {
            keepalives: Some(keepalives),
            ..MariaDbOptions::default()
        })
    }

    fn prepare(&self) -> Result<(), ServerError> {
        prepare_own_mysql(self)
    }

    fn endpoints(&self) -> EndpointAddrs {
        EndpointAddrs {
            mysql: Some(self.url()),
            ..EndpointAddrs::default()
        }
    }

    served_by_inherent_methods!();

    fn keepalive_words(k: Keepalives) -> String {
        format!(
            "tcp_keepalive {} s / {} s × {}; no user timeout",
            k.idle.as_secs(),
            k.interval.as_secs(),
            k.count,
        )
    }

    fn count_sessions(host: Ipv4Addr, ports: &[u16]) -> String {
        let hosts = ports
            .iter()
            .map(|port| format!("'{host}:{port}'"))
            .collect::<Vec<_>>()
            .join(",");
        format!("SELECT count(*) FROM information_schema.PROCESSLIST WHERE HOST IN ({hosts})")
    }

    fn open_session(&self, timeout: Duration) -> Result<Session, ServerError> {
        Session::connect(self.addr(), timeout)
    }

    fn session_query(
        session: &mut Session,
        sql: &str,
    ) -> Result<Vec<Vec<Option<String>>>, ServerError> {
        session.query(sql)
    }
}

#[cfg(test)]
mod tests {
    use lockers::mysql::MysqlConfig;
    use lockers::mysql::get_lock::MysqlGetLock;
    use lockers::mysql::lease::MysqlLease;
    use lockers::{AcquireOptions, Events, Locker};

    use super::*;
    use crate::kinds::CaseServers;

    /// A MariaDB failover's evidence counts a user lock (never replicated) and the lease and fencing
    /// rows written inside the replication lag as missing on the replica, and the promoted replica
    /// takes writes.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_mariadb_failover_sees_what_the_replica_lacks() {
        let servers = tokio::task::spawn_blocking(|| {
            PrimaryReplica::<MariaDbPair>::start(Duration::from_secs(2))
        })
        .await
        .expect("start")
        .expect("pair");
        let url = servers.pair.primary().url();
        let once = AcquireOptions::try_once();
        let get_lock = MysqlGetLock::connect(&url, MysqlConfig::default(), Events::none())
            .await
            .expect("connect");
        let lease = MysqlLease::connect(&url, MysqlConfig::default(), Events::none())
            .await
            .expect("connect");
        let held = [
            get_lock.acquire("a", &once).await.expect("a"),
            lease.acquire("b", &once).await.expect("b"),
        ];
        let (failover, servers) = tokio::task::spawn_blocking(move || {
            let failover = servers.fail_over(&|_| {});
            (failover, servers)
        })
        .await
        .expect("failover");
        let report = failover.expect("failover");
        assert_eq!(
            (report.primary_keys, report.missing_keys),
            (3, 3),
            "{report:?}"
        );
        assert!(
            report.unreplicated_bytes.is_some_and(|b| b > 0),
            "{report:?}"
        );
        servers
            .pair
            .replica()
            .query("INSERT INTO lockbench_fencing VALUES ('after', 1)")
            .expect("the promoted replica takes writes");
        drop(held);
    }
}
