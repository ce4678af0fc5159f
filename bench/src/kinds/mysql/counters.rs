//! MariaDB's outside counters: statements by kind as the server counts them (`SHOW GLOBAL STATUS`,
//! `Com_*`), and the CPU time of `mariadbd` (one process, a thread per session) from `/proc`.

use std::collections::BTreeMap;
use std::net::SocketAddr;

use crate::kinds::counters::{COUNTERS_TIMEOUT, StatsSnapshot, one_node};

/// The statement counters a lock client moves, each with the kind it is reported as: a prepared
/// statement's execution counts as its kind (preparing it as none of them), `INSERT … SELECT`
/// (`mysql-get-lock`'s lock) as an insert, `SET` (`mysql-lease`'s renewal) as `set_option`. The
/// probe's own `SHOW STATUS` is none of them, and its connection asks the server nothing else.
const COUNTED: [(&str, &str); 6] = [
    ("Com_select", "select"),
    ("Com_insert", "insert"),
    ("Com_insert_select", "insert"),
    ("Com_update", "update"),
    ("Com_delete", "delete"),
    ("Com_set_option", "set"),
];

/// The counters of a MariaDB: statements by kind (what the strategies' clients count as sent:
/// equal, their connect-time settings query included), and the server's CPU. Readable on servers
/// lockbench started (it logs in as their user).
pub(crate) fn read(
    nodes: &[(SocketAddr, Option<u32>)],
    _auth: Option<(&str, &str)>,
) -> Option<StatsSnapshot> {
    one_node(nodes, |socket, pid| {
        let names: Vec<String> = COUNTED
            .iter()
            .map(|(name, _)| format!("'{name}'"))
            .collect();
        let sql = format!(
            "SHOW GLOBAL STATUS WHERE Variable_name IN ({})",
            names.join(", ")
        );
        let rows = lockbench_servers::mariadb::query(socket, &sql, COUNTERS_TIMEOUT).ok()?;
        let mut requests = BTreeMap::new();
        for row in rows {
            let [Some(name), Some(value)] = row.as_slice() else {
                continue;
            };
            if let Some((_, kind)) = COUNTED.iter().find(|(counted, _)| counted == name) {
                *requests.entry((*kind).to_owned()).or_default() +=
                    value.parse::<u64>().unwrap_or(0);
            }
        }
        let snapshot = StatsSnapshot {
            client_requests: Some(requests.values().sum()),
            renew_calls: None,
            requests,
            cpu_seconds: None,
        };
        Some(snapshot.with_process_cpu(pid))
    })
}
