//! What `lockbench scale` reads of a PostgreSQL while its client only holds locks: the locks it
//! holds as it sees them (`POSTGRES_HELD`), its `UPDATE`s (`postgres-lease`'s renewals), and the
//! CPU time of the postmaster and its sessions.

use std::net::SocketAddr;

use crate::base::proc_stat;
use crate::kinds::held::{HELD_TIMEOUT, HeldProbe};

/// The held-lock probe of a PostgreSQL.
pub(super) const HELD: HeldProbe = HeldProbe {
    locks_held: postgres_count,
    // Each session is served by a child process of the postmaster: their CPU is the server's too.
    process_cpu_seconds: proc_stat::tree_cpu_seconds,
    script_stats: None,
    renewal_messages: None,
    renewal_counter: Some("update"),
    prepare: None,
    clean: None,
};

/// The locks a PostgreSQL server lockbench started holds, as it sees them: granted advisory locks
/// (`pg_locks`, every session's), lease rows not yet expired on the server's clock
/// (`lockbench_leases`), and Spring JDBC's `INT_LOCK` rows not yet expired (their `EXPIRED_AFTER` is
/// the client's UTC time, a `timestamp` without zone). Every table is there on a server lockbench
/// prepared; on a user's server the query fails and nothing is counted.
const POSTGRES_HELD: &str = "SELECT (SELECT count(*) FROM pg_locks \
     WHERE locktype = 'advisory' AND granted) \
     + (SELECT count(*) FROM lockbench_leases WHERE expires_at > now()) \
     + (SELECT count(*) FROM int_lock WHERE expired_after > now() AT TIME ZONE 'UTC')";

/// [`POSTGRES_HELD`] read from the server at `addr`; `None` when unreadable.
fn postgres_count(addr: SocketAddr) -> Option<u64> {
    let rows = lockbench_servers::postgres::query(addr, POSTGRES_HELD, HELD_TIMEOUT).ok()?;
    rows.first()?.first()?.as_deref()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use lockers::postgres::PostgresConfig;
    use lockers::postgres::advisory::PostgresAdvisory;
    use lockers::{AcquireOptions, Events, Locker};

    use super::*;

    /// PostgreSQL's count is what its server holds: a live session's two advisory locks, one live lease
    /// row and one live Spring row; a released lock and expired rows are not counted.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn postgres_counts_what_its_server_holds() {
        let server = lockbench_servers::PostgresServer::start().expect("postgres");
        crate::kinds::prepare_own_postgres(&server).expect("tables");
        server
            .query(
                "INSERT INTO lockbench_leases VALUES ('live', 'h', 1, now() + interval '1 minute'), \
                 ('expired', 'h', 2, now() - interval '1 second'); \
                 INSERT INTO int_lock VALUES ('00000000-0000-3000-8000-000000000001', 'DEFAULT', \
                 'c', now(), (now() AT TIME ZONE 'UTC') + interval '1 minute'), \
                 ('00000000-0000-3000-8000-000000000002', 'DEFAULT', 'c', now(), \
                 (now() AT TIME ZONE 'UTC') - interval '1 second')",
            )
            .expect("rows");
        let advisory =
            PostgresAdvisory::connect(&server.url(), PostgresConfig::default(), Events::none())
                .await
                .expect("connect");
        let once = AcquireOptions::try_once();
        let held = [
            advisory.acquire("a", &once).await.expect("a"),
            advisory.acquire("b", &once).await.expect("b"),
        ];
        advisory
            .acquire("c", &once)
            .await
            .expect("c")
            .release()
            .await
            .expect("release c");
        let addr = server.addr();
        let count = tokio::task::spawn_blocking(move || postgres_count(addr))
            .await
            .expect("count");
        assert_eq!(count, Some(4));
        drop(held);
    }
}
