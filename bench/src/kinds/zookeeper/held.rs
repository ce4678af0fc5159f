//! What `lockbench scale` reads of a ZooKeeper while its client only holds locks: its ephemeral
//! nodes (`mntr`'s `zk_ephemerals_count`), and its packets received, which only renewals (pings)
//! move.

use std::net::SocketAddr;

use lockbench_servers::probe;

use crate::kinds::held::{HELD_TIMEOUT, HeldProbe, own_process_cpu_seconds};

/// The held-lock probe of a ZooKeeper.
pub(super) const HELD: HeldProbe = HeldProbe {
    locks_held,
    process_cpu_seconds: own_process_cpu_seconds,
    script_stats: None,
    renewal_messages: None,
    renewal_counter: Some("packets_received"),
    prepare: None,
    clean: None,
};

/// Ephemeral nodes in ZooKeeper (`mntr`'s `zk_ephemerals_count`).
fn locks_held(addr: SocketAddr) -> Option<u64> {
    probe::four_letter_word(addr, "mntr", HELD_TIMEOUT)
        .ok()?
        .lines()
        .find_map(|line| line.strip_prefix("zk_ephemerals_count\t"))?
        .trim()
        .parse()
        .ok()
}
