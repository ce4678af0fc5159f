//! PostgreSQL's outside counters: statements by kind as `pg_stat_statements` counts them, and the
//! CPU time of the postmaster and its sessions (its children) from `/proc`.

use std::collections::BTreeMap;
use std::net::SocketAddr;

use crate::base::proc_stat;
use crate::kinds::counters::{COUNTERS_TIMEOUT, StatsSnapshot, one_node};

/// Calls per kind of statement (its first word) in `pg_stat_statements`, without the statistics
/// queries themselves.
const PG_STATEMENTS: &str = "SELECT split_part(ltrim(query), ' ', 1), sum(calls)::bigint \
 FROM pg_stat_statements WHERE query NOT LIKE '%pg_stat_statements%' GROUP BY 1";

/// The counters of a PostgreSQL server: statements as pg_stat_statements counts them (each
/// execution once), by kind of statement; lockbench's own statistics queries left out. Readable on
/// servers lockbench started (it logs in as their trusted superuser).
pub(crate) fn read(
    nodes: &[(SocketAddr, Option<u32>)],
    _auth: Option<(&str, &str)>,
) -> Option<StatsSnapshot> {
    one_node(nodes, |socket, pid| {
        let rows =
            lockbench_servers::postgres::query(socket, PG_STATEMENTS, COUNTERS_TIMEOUT).ok()?;
        let mut requests = BTreeMap::new();
        for row in rows {
            if let [Some(kind), Some(calls)] = row.as_slice() {
                *requests.entry(kind.to_lowercase()).or_default() +=
                    calls.parse::<u64>().unwrap_or(0);
            }
        }
        // Each session is a child process of the postmaster: the server's CPU is theirs too.
        Some(StatsSnapshot {
            client_requests: Some(requests.values().sum()),
            renew_calls: None,
            requests,
            cpu_seconds: pid.and_then(proc_stat::tree_cpu_seconds),
        })
    })
}
