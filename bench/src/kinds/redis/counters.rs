//! Redis's outside counters: `INFO commandstats` (calls by command) and `INFO cpu`, summed over a
//! cluster's masters; the CPU time of a server lockbench started from `/proc`.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Mutex;

use lockbench_servers::probe;
use lockbench_servers::redis::commandstats;

use crate::kinds::counters::{COUNTERS_TIMEOUT, StatsSnapshot};

/// `AUTH`s this process's own probes sent, by Redis server: taken off the server's `auth` count, so the
/// figures hold the clients' authentications only (as `INFO` itself is left out).
static PROBE_AUTHS: Mutex<BTreeMap<SocketAddr, u64>> = Mutex::new(BTreeMap::new());

/// Notes one `AUTH` a probe of this process sends to `socket`; returns how many it has sent so far.
pub fn note_probe_auth(socket: SocketAddr) -> u64 {
    let mut sent = PROBE_AUTHS.lock().unwrap_or_else(|e| e.into_inner());
    let count = sent.entry(socket).or_default();
    *count += 1;
    *count
}

/// The counters of Redis servers: the first node's, and with more nodes (Redlock's independent
/// masters, a cluster's), their work summed with it.
pub(crate) fn read(
    nodes: &[(SocketAddr, Option<u32>)],
    auth: Option<(&str, &str)>,
) -> Option<StatsSnapshot> {
    let (&(socket, pid), more) = nodes.split_first()?;
    let mut sum = read_node(socket, pid, auth)?;
    for &(socket, pid) in more {
        let node = read_node(socket, pid, auth)?;
        for (command, calls) in node.requests {
            *sum.requests.entry(command).or_default() += calls;
        }
        sum.cpu_seconds = sum.cpu_seconds.zip(node.cpu_seconds).map(|(a, b)| a + b);
    }
    Some(sum)
}

/// One Redis server's counters, read as the ACL user `auth` (its own probe `AUTH`s taken off).
fn read_node(
    socket: SocketAddr,
    pid: Option<u32>,
    auth: Option<(&str, &str)>,
) -> Option<StatsSnapshot> {
    let info = |section| {
        let sent = auth.map(|_| note_probe_auth(socket)).unwrap_or(0);
        let reply = probe::resp_command_as(socket, auth, &["INFO", section], COUNTERS_TIMEOUT);
        (reply, sent)
    };
    let (stats, probe_auths) = info("commandstats");
    let mut requests = redis_commandstats(&stats.ok()?);
    if let Some(auths) = requests.get_mut("auth") {
        *auths = auths.saturating_sub(probe_auths);
    }
    let cpu = info("cpu").0.ok();
    let snapshot = StatsSnapshot {
        requests,
        client_requests: None,
        renew_calls: None,
        cpu_seconds: cpu.as_deref().map(redis_cpu),
    };
    Some(snapshot.with_process_cpu(pid))
}

/// Calls by command from `INFO commandstats`; the `INFO` calls of the snapshots themselves are left
/// out.
fn redis_commandstats(info: &str) -> BTreeMap<String, u64> {
    commandstats(info)
        .into_iter()
        .filter(|(name, _)| name != "info")
        .map(|(name, stat)| (name, stat.calls))
        .collect()
}

fn redis_cpu(info: &str) -> f64 {
    ["used_cpu_sys", "used_cpu_user"]
        .iter()
        .filter_map(|f| {
            lockbench_servers::redis::info_field(info, f)?
                .parse::<f64>()
                .ok()
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_commandstats_and_cpu() {
        let redis = "# Commandstats\r\ncmdstat_evalsha:calls=10,usec=50,usec_per_call=5.00\r\ncmdstat_info:calls=3,usec=1\r\n";
        assert_eq!(
            redis_commandstats(redis),
            BTreeMap::from([("evalsha".to_owned(), 10)])
        );
        assert!((redis_cpu("used_cpu_sys:1.5\r\nused_cpu_user:0.25\r\n") - 1.75).abs() < 1e-9);
    }
}
