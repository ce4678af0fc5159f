//! ZooKeeper's outside counters: `mntr`'s `zk_packets_received` and `zk_packets_sent`; the CPU time
//! of a server lockbench started from `/proc`.

use std::collections::BTreeMap;
use std::net::SocketAddr;

use lockbench_servers::probe;

use crate::kinds::counters::{COUNTERS_TIMEOUT, StatsSnapshot, one_node};

/// The counters of a ZooKeeper server (one host).
pub(crate) fn read(
    nodes: &[(SocketAddr, Option<u32>)],
    _auth: Option<(&str, &str)>,
) -> Option<StatsSnapshot> {
    one_node(nodes, |socket, pid| {
        let mntr = probe::four_letter_word(socket, "mntr", COUNTERS_TIMEOUT).ok()?;
        let requests = zk_mntr(&mntr);
        let snapshot = StatsSnapshot {
            client_requests: requests.get("packets_received").copied(),
            renew_calls: None,
            requests,
            cpu_seconds: None,
        };
        Some(snapshot.with_process_cpu(pid))
    })
}

/// `zk_packets_received` and `zk_packets_sent` from `mntr`.
fn zk_mntr(mntr: &str) -> BTreeMap<String, u64> {
    mntr.lines()
        .filter_map(|line| {
            let (name, value) = line.split_once('\t')?;
            let name = name.strip_prefix("zk_")?;
            if !matches!(name, "packets_received" | "packets_sent") {
                return None;
            }
            Some((name.to_owned(), value.trim().parse().ok()?))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_mntr() {
        let zk = "zk_version\t3.8.0\nzk_packets_received\t100\nzk_packets_sent\t99\n";
        assert_eq!(zk_mntr(zk).get("packets_received"), Some(&100));
    }
}
