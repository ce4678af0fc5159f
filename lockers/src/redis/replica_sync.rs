//! Redisson's replica sync after lock writes (`CommandAsyncService.syncedEval`, 3.22 to 4.x): with a
//! topology that has replicas, each lock write (acquire, renew, release script) is followed on the same
//! connection by `WAIT <replicas> <slavesSyncTimeout>`, and a write no replica confirmed fails with
//! "None of slaves were synced" when `checkLockSyncedSlaves` is on.
//!
//! As Redisson does it:
//! - single-server mode never waits;
//! - the first synced write of a client probes `WAIT 0 0` (is the command supported?);
//! - the number of replicas comes from `INFO replication` (`connected_slaves`) and is cached per
//!   master (per `MasterSlaveEntry` in Redisson: a cluster has one per shard); a `WAIT` that confirmed
//!   a different number clears that master's entry, so its next write asks again;
//! - no replica connected (0): the write is not followed by `WAIT`.
//!
//! Departures: Redisson pipelines the script and `WAIT` in one batch; here `WAIT` is sent after the
//! script's answer (one more loopback round trip, tens of µs, beside a `WAIT` of up to a second).
//! Redisson 4.x also probes `WAITAOF` and uses it when the primary has AOF on; lockbench's servers run
//! without AOF, so `WAITAOF` is never sent here.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use super::connection::Commands;

use super::connection::BACKEND;
use super::redisson_config::Topology;
use crate::error::LockError;

/// The error Redisson raises (`NoSyncedSlavesException` in 4.x, `IllegalStateException` before).
pub(crate) const NO_SYNCED_SLAVES: &str = "None of slaves were synced. Try to increase \
     slavesSyncTimeout setting or set checkLockSyncedSlaves = false.";

/// One client's replica-sync state.
#[derive(Debug)]
pub(crate) struct ReplicaSync {
    topology: Topology,
    check: bool,
    timeout_ms: u64,
    probed: AtomicBool,
    /// Replicas last seen connected, by master (`host:port`); none = ask the server.
    replicas: Mutex<HashMap<String, i64>>,
}

impl ReplicaSync {
    /// Syncing as `topology` asks, waiting up to `timeout` for replicas; `check` fails unconfirmed
    /// writes.
    pub(crate) fn new(topology: Topology, check: bool, timeout: Duration) -> Self {
        ReplicaSync {
            topology,
            check,
            timeout_ms: u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX),
            probed: AtomicBool::new(false),
            replicas: Mutex::new(HashMap::new()),
        }
    }

    /// Whether lock writes may be followed by `WAIT`.
    pub(crate) fn enabled(&self) -> bool {
        self.topology == Topology::Replicated
    }

    /// Called after a write of the lock at `key` on `connection` succeeded: waits for the replicas
    /// as Redisson does, on the connection to the server holding `key` (in a cluster, its slot's
    /// master; `WAIT` counts the writes of its own connection). `Err` when the wait itself failed, or
    /// when no replica confirmed and the check is on.
    pub(crate) async fn after_write(
        &self,
        connection: &Commands,
        key: &str,
    ) -> Result<(), LockError> {
        if !self.enabled() {
            return Ok(());
        }
        let connection = &mut connection.pinned_to(key);
        let master = connection.server();
        if !self.probed.swap(true, Ordering::Relaxed) {
            let _: i64 = redis::cmd("WAIT")
                .arg(0)
                .arg(0)
                .query_async(connection)
                .await?;
        }
        let known = self.known().get(&master).copied();
        let replicas = match known {
            Some(n) => n,
            None => {
                let info: String = redis::cmd("INFO")
                    .arg("replication")
                    .query_async(connection)
                    .await?;
                let n = connected_replicas(&info);
                self.known().insert(master.clone(), n);
                n
            }
        };
        if replicas == 0 {
            return Ok(());
        }
        let synced: i64 = redis::cmd("WAIT")
            .arg(replicas)
            .arg(self.timeout_ms)
            .query_async(connection)
            .await?;
        if synced != replicas {
            self.known().remove(&master);
        }
        if self.check && synced == 0 {
            return Err(LockError::backend(BACKEND, NO_SYNCED_SLAVES));
        }
        Ok(())
    }
}

impl ReplicaSync {
    fn known(&self) -> std::sync::MutexGuard<'_, HashMap<String, i64>> {
        self.replicas.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// `connected_slaves` of an `INFO replication` answer (0 when absent).
fn connected_replicas(info: &str) -> i64 {
    info.lines()
        .find_map(|line| line.strip_prefix("connected_slaves:"))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or(0)
}

/// Whether `error` is the "no replica confirmed" failure.
pub(crate) fn is_no_synced_slaves(error: &LockError) -> bool {
    error.to_string().contains(NO_SYNCED_SLAVES)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_connected_replicas() {
        let info = "# Replication\r\nrole:master\r\nconnected_slaves:2\r\nslave0:ip=127.0.0.1\r\n";
        assert_eq!(connected_replicas(info), 2);
        assert_eq!(connected_replicas("role:master\r\n"), 0);
    }
}
