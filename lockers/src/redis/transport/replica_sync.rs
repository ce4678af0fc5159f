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
//! As Redisson's batch does, the script and its `WAIT` go in one pipeline: `WAIT` counts only the writes
//! of its own connection, so on any other (a route that moved to another server or node between the two,
//! a reconnect) it would return at once with every replica "synced". A `MOVED` or `ASK` answer to the
//! script sends the pipeline whole to the named node; a broken connection fails the write.
//!
//! Departure: Redisson 4.x also probes `WAITAOF` and uses it when the primary has AOF on; lockbench's servers run
//! without AOF, so `WAITAOF` is never sent here.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use redis::{ErrorKind, FromRedisValue, RedisResult, ScriptInvocation, ServerErrorKind};

use super::connection::{BACKEND, Commands};
use crate::error::LockError;

/// The error Redisson raises (`NoSyncedSlavesException` in 4.x, `IllegalStateException` before).
pub(crate) const NO_SYNCED_SLAVES: &str = "None of slaves were synced. Try to increase \
     slavesSyncTimeout setting or set checkLockSyncedSlaves = false.";

/// Where the lock lives, as Redisson's configuration mode tells it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Topology {
    /// `useSingleServer()`: Redisson never sends `WAIT`.
    #[default]
    Single,
    /// Master/slave, sentinel, replicated or cluster modes: after every lock write (acquire, renew,
    /// release) Redisson sends `WAIT <connected replicas> <slavesSyncTimeout>` when the primary reports
    /// replicas (`INFO replication` `connected_slaves`), and, with `checkLockSyncedSlaves`, fails the
    /// write when none confirmed.
    Replicated,
}

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

    /// Runs the lock write `call` on the lock at `key` and, when its server has replicas, `WAIT`s for
    /// them on the same connection (one pipeline), as Redisson does. The probe and the replica count are
    /// asked first, of the server holding `key` (in a cluster, its slot's master). Check the answer with
    /// [`confirmed`](Self::confirmed).
    pub(crate) async fn write<T: FromRedisValue>(
        &self,
        connection: &mut Commands,
        key: &str,
        call: &ScriptInvocation<'_>,
    ) -> RedisResult<Written<T>> {
        let Some((master, replicas)) = self.replicas_of(connection, key).await? else {
            let answer = call.invoke_async(connection).await?;
            return Ok(Written { answer, wait: None });
        };
        let mut pipeline = redis::pipe();
        pipeline
            .invoke_script(call)
            .cmd("WAIT")
            .arg(replicas)
            .arg(self.timeout_ms);
        let (answer, synced) = match pipeline.query_async(connection).await {
            Err(e) if e.kind() == ErrorKind::Server(ServerErrorKind::NoScript) => {
                call.load_async(connection).await?;
                pipeline.query_async(connection).await?
            }
            answer => answer?,
        };
        let wait = Wait {
            master,
            replicas,
            synced,
        };
        Ok(Written {
            answer,
            wait: Some(wait),
        })
    }

    /// The answer of a write, once its `WAIT` is read as Redisson reads it: a count other than asked
    /// clears that master's cached count; no replica confirmed with the check on is an `Err`.
    pub(crate) fn confirmed<T>(&self, written: Written<T>) -> Result<T, LockError> {
        if let Some(wait) = written.wait {
            if wait.synced != wait.replicas {
                self.known().remove(&wait.master);
            }
            if self.check && wait.synced == 0 {
                return Err(LockError::backend(BACKEND, NO_SYNCED_SLAVES));
            }
        }
        Ok(written.answer)
    }

    /// The master holding `key` and how many replicas a write there waits for; `None` when none.
    async fn replicas_of(
        &self,
        connection: &Commands,
        key: &str,
    ) -> RedisResult<Option<(String, i64)>> {
        if !self.enabled() {
            return Ok(None);
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
        Ok((replicas > 0).then_some((master, replicas)))
    }
}

/// A lock write's answer and, when it was followed by `WAIT`, what the wait found.
#[derive(Debug)]
pub(crate) struct Written<T> {
    answer: T,
    wait: Option<Wait>,
}

/// One `WAIT` after a write: on which master, for how many replicas, how many confirmed.
#[derive(Debug)]
struct Wait {
    master: String,
    replicas: i64,
    synced: i64,
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
