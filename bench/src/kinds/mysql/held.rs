//! What `lockbench scale` reads of a MariaDB while its client only holds locks: the locks it holds
//! as it sees them ([`lockers::mysql::HELD_LOCKS`]), its `UPDATE`s (`mysql-lease`'s renewals, one
//! per renewal request), and the CPU time of `mariadbd`.

use std::net::SocketAddr;

use crate::kinds::held::{HELD_TIMEOUT, HeldProbe, own_process_cpu_seconds};

/// The held-lock probe of a MariaDB.
pub(super) const HELD: HeldProbe = HeldProbe {
    locks_held: mysql_count,
    // One process, a thread per session.
    process_cpu_seconds: own_process_cpu_seconds,
    script_stats: None,
    renewal_messages: None,
    renewal_counter: Some("update"),
    prepare: None,
    clean: None,
};

/// [`lockers::mysql::HELD_LOCKS`] read from the server at `addr` (as the user of a server lockbench
/// started); `None` when unreadable (a user's server, or one without the tables or the
/// `metadata_lock_info` plugin).
fn mysql_count(addr: SocketAddr) -> Option<u64> {
    let rows =
        lockbench_servers::mariadb::query(addr, lockers::mysql::HELD_LOCKS, HELD_TIMEOUT).ok()?;
    rows.first()?.first()?.as_deref()?.parse().ok()
}
