//! The outside counters of Redlock's independent Redis nodes: each node's `INFO commandstats` and
//! `INFO cpu` (as the Redis kind reads them), summed over the nodes.

use std::net::SocketAddr;

use crate::kinds::counters::StatsSnapshot;

/// The counters of the nodes, summed; a single node alone is not read.
pub(crate) fn read(
    nodes: &[(SocketAddr, Option<u32>)],
    auth: Option<(&str, &str)>,
) -> Option<StatsSnapshot> {
    if nodes.len() < 2 {
        return None;
    }
    crate::kinds::redis::counters::read(nodes, auth)
}
