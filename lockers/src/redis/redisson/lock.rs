//! What both Redisson rows send to the server, as Redisson's `RedissonLock` / `RedissonBaseLock` do
//! (3.43.0 and 4.x alike): the acquire, release and renew scripts (`scripts/redisson_*.lua`), each
//! followed by the replica sync of `replica_sync` when the topology has replicas, and the release path
//! of a lease.
//!
//! - Acquire: `exists == 0 or hexists` → `HINCRBY` + `PEXPIRE` (the TTL is always re-set, also by a
//!   re-entry); otherwise the PTTL. If the replica sync fails with "None of slaves were synced", 3.47+
//!   releases the hold again (`handleNoSync`) and tries the acquire again up to `retryAttempts` times
//!   (`ServiceManager.execute`) before failing with that error; 3.43 to 3.46 fail at once and leave the
//!   hold ([`UnsyncedLockCall`]). 3.47+ likewise tries an unconfirmed release again (with the same
//!   unlock latch); 3.43 to 3.46 fail it at once.
//! - Names: Redisson's own (`redisson_keys`, `unlock_latch`), so that a model and a Redisson client on
//!   one lock share its hash, unlock channel and latch naming.
//! - Release: the unlock script with its unlock latch key (a retried release reads the first answer
//!   from it), always `PUBLISH`ing on the final release; then the latch is deleted by a separate
//!   `DEL` that nobody waits for. Renewal is cancelled after the server answered (Redisson cancels in
//!   the unlock future's handler), also when the release failed or its future was dropped.
//! - Renew: 1 (the TTL was set to the watchdog timeout) or 0 (no longer held); one lock per call
//!   (classic) or one chunk per call (3.44+). A renew call that times out, loses its connection or is
//!   answered `BUSY` (or another error Redisson retries) is re-sent up to `retryAttempts` (3.43: 3, 3.52: 4) more times,
//!   as Redisson's `RedisExecutor` does for `syncedEval`; only once those are spent does the renewal see
//!   an error (acquire and release: `NoRetry`).

use std::sync::Arc;
use std::sync::LazyLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use async_trait::async_trait;

use super::config::{RedissonConfig, UnsyncedLockCall};
use super::timer::RedissonTimer;
use crate::error::LockError;
use crate::event::Events;
use crate::lease::LeaseHandle;
use crate::redis::acquire;
use crate::redis::keys::LockKeys;
use crate::redis::scripts::{self, Attempt, LuaScript, acquire_attempt, ttl_millis, unexpected};
use crate::redis::transport::cluster::by_slot;
use crate::redis::transport::connection::{BACKEND, RedisConnection};
use crate::redis::transport::replica_sync::{ReplicaSync, is_no_synced_slaves};
use crate::renewal::{HoldTicket, Holds, in_background};

/// The message a release publishes (Redisson's `LockPubSub.UNLOCK_MESSAGE`).
const UNLOCK_MESSAGE: &str = "0";

/// How long the unlock latch lives: `(timeout + retryInterval) × retryAttempts` with Redisson 3.43's
/// defaults (3 s, 1.5 s, 3).
const UNLOCK_LATCH_TTL: Duration = Duration::from_millis(13_500);

/// Redisson's acquire: `{1, 0}` or `{0, pttl}`.
pub(crate) static REDISSON_ACQUIRE: LazyLock<LuaScript> = LazyLock::new(|| {
    LuaScript::with_lib(
        "redisson_acquire",
        include_str!("../scripts/redisson_acquire.lua"),
    )
});

/// Redisson's release: -1 (not held), 0 (holds remain) or 1 (freed and published).
pub(crate) static REDISSON_RELEASE: LazyLock<LuaScript> = LazyLock::new(|| {
    LuaScript::with_lib(
        "redisson_release",
        include_str!("../scripts/redisson_release.lua"),
    )
});

/// Redisson's classic renewal of one lock: 1 or 0.
pub(crate) static REDISSON_RENEW: LazyLock<LuaScript> = LazyLock::new(|| {
    LuaScript::with_lib(
        "redisson_renew",
        include_str!("../scripts/redisson_renew.lua"),
    )
});

/// Redisson 3.44+'s renewal of a chunk: one 1 or 0 per lock.
pub(crate) static REDISSON_RENEW_BATCH: LazyLock<LuaScript> = LazyLock::new(|| {
    LuaScript::with_lib(
        "redisson_renew_batch",
        include_str!("../scripts/redisson_renew_batch.lua"),
    )
});

/// Redisson's `RedissonObject.prefixName(prefix, name)`: `prefix:name` when the name already has a
/// `{` (its hash tag then stays the key's), else `prefix:{name}`.
fn prefix_name(prefix: &str, name: &str) -> String {
    if name.contains('{') {
        format!("{prefix}:{name}")
    } else {
        format!("{prefix}:{{{name}}}")
    }
}

/// The keys of the lock called `name` under `prefix`, named as Redisson names those of the `RLock`
/// called `P{name}` (`getRawName()`; the JVM adapters lock `lockbench:{<key>}`): the lock hash is
/// that name itself, and the unlock channel is Redisson's `getChannelName()`,
/// `redisson_lock__channel:P{name}`, so a release by either reaches the other's waiters.
pub(crate) fn redisson_keys(prefix: &str, name: &str) -> Result<LockKeys, LockError> {
    let mut keys = LockKeys::new(prefix, name)?;
    keys.channel = prefix_name("redisson_lock__channel", &keys.lock);
    Ok(keys)
}

/// A fresh unlock latch key of the lock at `keys`: Redisson's `getUnlockLatchName(requestId)`,
/// `redisson_unlock_latch:P{name}:<request id>`, the request id being 16 random bytes in hex
/// (`ServiceManager.generateId`).
fn unlock_latch(keys: &LockKeys) -> String {
    format!(
        "{}:{:032x}",
        prefix_name("redisson_unlock_latch", &keys.lock),
        rand::random::<u128>()
    )
}

/// One held lock as a renew call names it.
#[derive(Debug, Clone)]
pub(crate) struct RenewTarget {
    /// The lock key on the server.
    pub(crate) key: Arc<str>,
    /// The owner field.
    pub(crate) owner: Arc<str>,
}

/// What a client's leases and renewals share.
#[derive(Debug)]
pub(crate) struct Core {
    pub(crate) connection: RedisConnection,
    pub(crate) config: RedissonConfig,
    pub(crate) events: Events,
    pub(crate) holds: Holds,
    sync: ReplicaSync,
    renew_calls: AtomicU64,
    /// Redisson's timer, which renewal ticks, retry pauses and renew calls' response timeouts wait on.
    pub(crate) timer: RedissonTimer,
    /// Redisson's response timeout for a lock write: `timeout`, plus `slavesSyncTimeout` when it is
    /// followed by `WAIT`.
    response_timeout: Duration,
}

impl Core {
    /// Connects (with room for a `WAIT` in the response timeout when replicas may be waited for) and
    /// loads the scripts.
    pub(crate) async fn connect(
        url: &str,
        config: RedissonConfig,
        events: Events,
    ) -> Result<Self, LockError> {
        config.validate()?;
        let sync = ReplicaSync::new(
            config.topology,
            config.check_lock_synced_slaves,
            config.slaves_sync_timeout,
        );
        let tick = config.timer_tick();
        let timer = RedissonTimer::start(tick);
        let mut settings = config.connection;
        if sync.enabled() {
            settings.response_timeout += config.slaves_sync_timeout;
        }
        let response_timeout = settings.response_timeout;
        // Renew calls time out on the timer, up to a tick late; the connection's own timeout (which
        // acquire and release keep) is a tick longer so that the timer's fires first.
        settings.response_timeout += tick;
        let connection = RedisConnection::connect(url, settings).await?;
        connection.rescan_every(config.cluster_scan_interval, config.sentinel_scan_interval);
        let all = [
            &*REDISSON_ACQUIRE,
            &*REDISSON_RELEASE,
            &*REDISSON_RENEW,
            &*REDISSON_RENEW_BATCH,
        ];
        scripts::load(&mut connection.commands(), &all).await?;
        Ok(Core {
            connection,
            config,
            events,
            holds: Holds::default(),
            sync,
            renew_calls: AtomicU64::new(0),
            timer,
            response_timeout,
        })
    }

    /// Renew script calls so far (one per lock per renewal, or one per chunk).
    pub(crate) fn renew_calls(&self) -> u64 {
        self.renew_calls.load(Ordering::Relaxed)
    }

    /// One acquire attempt with a TTL of `ttl_ms`, tried again while no replica confirms it as
    /// [`UnsyncedLockCall`] says.
    pub(crate) async fn try_acquire(
        &self,
        keys: &LockKeys,
        owner: &str,
        ttl_ms: u64,
    ) -> Result<Attempt, LockError> {
        let mut retries = 0;
        loop {
            match self.try_acquire_synced(keys, owner, ttl_ms).await {
                Err(error) if self.retry_unsynced(&error, &mut retries).await => {}
                outcome => return outcome,
            }
        }
    }

    /// Whether a lock call that failed with `error` after `retries` retries is tried again, as
    /// `ServiceManager.execute` does in 3.47+ (acquire and release, not renewal): when no replica
    /// confirmed it and `retryAttempts` are left, after the retry's pause (`retries` is counted up).
    async fn retry_unsynced(&self, error: &LockError, retries: &mut u32) -> bool {
        let config = &self.config;
        if config.unsynced_lock_call != UnsyncedLockCall::UndoneAndRetried
            || !is_no_synced_slaves(error)
            || *retries >= config.retry_attempts
        {
            return false;
        }
        *retries += 1;
        let pause = config
            .retry_delay
            .pause(config.retry_interval, *retries, false);
        self.timer.sleep(pause.unwrap_or_default()).await;
        true
    }

    /// One acquire script call and its replica sync.
    async fn try_acquire_synced(
        &self,
        keys: &LockKeys,
        owner: &str,
        ttl_ms: u64,
    ) -> Result<Attempt, LockError> {
        let mut connection = self.connection.commands();
        let mut call = REDISSON_ACQUIRE.prepare();
        call.key(&keys.lock).arg(ttl_ms).arg(owner);
        let written = self.sync.write(&mut connection, &keys.lock, &call).await?;
        let answer = match self.sync.confirmed(written) {
            Ok(answer) => answer,
            Err(error) => {
                if self.config.unsynced_lock_call == UnsyncedLockCall::UndoneAndRetried
                    && is_no_synced_slaves(&error)
                {
                    // `handleNoSync`: undo the unconfirmed hold; its own outcome is not reported.
                    let latch = unlock_latch(keys);
                    let _ = self.release_synced(keys, owner, ttl_ms, &latch).await;
                }
                return Err(error);
            }
        };
        acquire_attempt(&REDISSON_ACQUIRE, answer)
    }

    /// Releases one hold. `Ok(true)` when it freed the lock; `NotHeld` when the owner held none. An
    /// unlock no replica confirmed is tried again as [`UnsyncedLockCall`] says, with the same unlock
    /// latch (a retry whose first try ran reads that try's answer from it).
    pub(crate) async fn release(
        &self,
        keys: &LockKeys,
        owner: &str,
        ttl_ms: u64,
    ) -> Result<bool, LockError> {
        let latch = unlock_latch(keys);
        let mut retries = 0;
        loop {
            match self.release_synced(keys, owner, ttl_ms, &latch).await {
                Err(error) if self.retry_unsynced(&error, &mut retries).await => {}
                outcome => return outcome,
            }
        }
    }

    /// One unlock script call (with its unlock latch `latch`) and its replica sync.
    async fn release_synced(
        &self,
        keys: &LockKeys,
        owner: &str,
        ttl_ms: u64,
        latch: &str,
    ) -> Result<bool, LockError> {
        let mut connection = self.connection.commands();
        let mut call = REDISSON_RELEASE.prepare();
        call.key(&keys.lock)
            .key(&keys.channel)
            .key(latch)
            .arg(UNLOCK_MESSAGE)
            .arg(ttl_ms)
            .arg(owner)
            .arg(ttl_millis(UNLOCK_LATCH_TTL));
        let written = self.sync.write(&mut connection, &keys.lock, &call).await?;
        let answer: i64 = self.sync.confirmed(written)?;
        // Redisson deletes the latch with a write it does not wait for.
        let mut background = connection.clone();
        let latch = latch.to_owned();
        in_background(async move {
            let _: Result<i64, _> = redis::cmd("DEL")
                .arg(&latch)
                .query_async(&mut background)
                .await;
        });
        acquire::hash_released(&REDISSON_RELEASE, answer, keys, &self.events)
    }

    /// Renews one lock: `Ok(true)` renewed, `Ok(false)` no longer held.
    pub(crate) async fn renew_one(&self, target: &RenewTarget) -> Result<bool, LockError> {
        let ttl_ms = ttl_millis(self.config.renewal.ttl);
        let answer: i64 = self
            .with_retries(&target.key, || {
                let mut call = REDISSON_RENEW.prepare();
                call.key(&*target.key).arg(ttl_ms).arg(&*target.owner);
                call
            })
            .await?;
        renewed(&REDISSON_RENEW, answer)
    }

    /// Renews a chunk of locks: per lock, `true` renewed or `false` no longer held. One call, or in a
    /// cluster one per slot (a script's keys must share a slot), sent at once; a failed call fails the
    /// chunk.
    pub(crate) async fn renew_chunk(
        &self,
        targets: &[RenewTarget],
    ) -> Result<Vec<bool>, LockError> {
        let keys: Vec<&str> = targets.iter().map(|t| &*t.key).collect();
        let groups = by_slot(&keys, self.connection.is_cluster());
        let calls = groups.iter().map(|group| {
            let group: Vec<&RenewTarget> = group.iter().map(|&i| &targets[i]).collect();
            async move { self.renew_group(&group).await }
        });
        let answers = futures::future::join_all(calls).await;
        let mut renewed = vec![false; targets.len()];
        for (group, answers) in groups.iter().zip(answers) {
            for (&i, answer) in group.iter().zip(answers?) {
                renewed[i] = answer;
            }
        }
        Ok(renewed)
    }

    /// Renews locks of one slot in one call.
    async fn renew_group(&self, targets: &[&RenewTarget]) -> Result<Vec<bool>, LockError> {
        let ttl_ms = ttl_millis(self.config.renewal.ttl);
        let first = targets.first().map_or("", |t| &*t.key);
        let answers: Vec<i64> = self
            .with_retries(first, || {
                let mut call = REDISSON_RENEW_BATCH.prepare();
                for target in targets {
                    call.key(&*target.key);
                }
                call.arg(ttl_ms);
                for target in targets {
                    call.arg(&*target.owner);
                }
                call
            })
            .await?;
        if answers.len() != targets.len() {
            return Err(LockError::backend(
                BACKEND,
                format!(
                    "batch renewal answered {} results for {} locks",
                    answers.len(),
                    targets.len()
                ),
            ));
        }
        answers
            .into_iter()
            .map(|a| renewed(&REDISSON_RENEW_BATCH, a))
            .collect()
    }

    /// Sends the renew call `make` builds as Redisson's `RedisExecutor` sends a retryable write: a
    /// response timeout, a broken or refused connection, and a server error of Redisson's
    /// `RedisRetryException` family or `READONLY` ([`RETRIED_SERVER_ERRORS`]) re-send after the
    /// configured [`crate::redis::RetryDelay`] (3.43: a timeout at once, others after `retry_interval`), up to
    /// `retry_attempts` more times. Other server errors (`NOSCRIPT` after its
    /// reload, ...) are not retried. Each attempt counts as a renew call. The call is a write of the
    /// lock at `key`, synced as [`ReplicaSync::write`] does. Its response timeout and pauses fire on
    /// Redisson's timer (`super::timer`); a call whose connection dropped after it was written ends at
    /// that timeout, not at the drop.
    async fn with_retries<'s, T: redis::FromRedisValue>(
        &self,
        key: &str,
        make: impl Fn() -> redis::ScriptInvocation<'s>,
    ) -> Result<T, LockError> {
        let mut attempt = 0;
        loop {
            self.renew_calls.fetch_add(1, Ordering::Relaxed);
            let mut connection = self.connection.commands();
            let sent = Instant::now();
            let timed_out = self.timer.after(self.response_timeout);
            let call = make();
            let write = self.sync.write(&mut connection, key, &call);
            let error = match tokio::time::timeout_at(timed_out.into(), write).await {
                Ok(Ok(written)) => return self.sync.confirmed(written),
                Ok(Err(error)) if dropped_in_flight(&error, sent) => {
                    // Redisson fails only the commands not yet written when a connection closes
                    // (`CommandsQueue.channelInactive`): a written one waits for its response timeout.
                    tokio::time::sleep_until(timed_out.into()).await;
                    response_timeout()
                }
                Ok(Err(error)) => error,
                Err(_elapsed) => response_timeout(),
            };
            let retryable = error.is_timeout()
                || error.is_io_error()
                || error.is_connection_dropped()
                || error.is_connection_refusal()
                || error
                    .code()
                    .is_some_and(|code| RETRIED_SERVER_ERRORS.contains(&code));
            if !retryable || attempt >= self.config.retry_attempts {
                return Err(error.into());
            }
            let pause = self.config.retry_delay.pause(
                self.config.retry_interval,
                attempt,
                error.is_timeout(),
            );
            attempt += 1;
            if let Some(pause) = pause {
                self.timer.sleep(pause).await;
            }
        }
    }
}

/// A failed attempt's error when Redisson's response timeout ended it.
fn response_timeout() -> redis::RedisError {
    redis::RedisError::from(std::io::Error::new(
        std::io::ErrorKind::TimedOut,
        "Redisson's response timeout (on its timer)",
    ))
}

/// How long after its send a command whose connection dropped is taken to have been written: redis-rs
/// does not say whether a command was on the wire, and one sent on a connection already known broken
/// fails within microseconds.
const WRITTEN_AFTER: Duration = Duration::from_millis(1);

/// Whether `error` is a connection that dropped (not one refused) under a command sent at `sent` that
/// was already written.
fn dropped_in_flight(error: &redis::RedisError, sent: Instant) -> bool {
    (error.is_connection_dropped() || error.is_io_error())
        && !error.is_connection_refusal()
        && !error.is_timeout()
        && sent.elapsed() >= WRITTEN_AFTER
}

/// The server errors Redisson's `RedisExecutor` re-sends after `retryInterval` (3.43.0: the subclasses of
/// `RedisRetryException`, and `RedisReadonlyException`). Measured with the real 3.43.0 under a `BUSY`
/// server: a renewal answered `BUSY` is re-sent `retryAttempts` times before "Can't update lock
/// expiration" (`lockers/tests/redisson.rs`, `classic_renewal_retries_busy`).
pub(crate) const RETRIED_SERVER_ERRORS: &[&str] = &[
    "BUSY",
    "TRYAGAIN",
    "CLUSTERDOWN",
    "MASTERDOWN",
    "LOADING",
    "NOREPLICAS",
    "WAIT",
    "READONLY",
];

/// Reads a renew answer: 1 renewed, 0 not held.
fn renewed(script: &LuaScript, answer: i64) -> Result<bool, LockError> {
    match answer {
        1 => Ok(true),
        0 => Ok(false),
        other => Err(unexpected(script, &[other])),
    }
}

/// A Redisson lease's release path.
#[derive(Debug)]
pub(crate) struct RedissonHold {
    pub(crate) core: Arc<Core>,
    pub(crate) ticket: HoldTicket,
    pub(crate) keys: Arc<LockKeys>,
    pub(crate) ttl_ms: u64,
}

/// Leaves the hold (cancelling renewal on the last one) when dropped: after the release's answer, or
/// when the release future is dropped before it came.
struct LeaveOnDrop<'a>(&'a Holds, &'a HoldTicket);

impl Drop for LeaveOnDrop<'_> {
    fn drop(&mut self) {
        self.0.leave(self.1);
    }
}

#[async_trait]
impl LeaseHandle for RedissonHold {
    async fn release(self: Box<Self>) -> Result<(), LockError> {
        let _leave = LeaveOnDrop(&self.core.holds, &self.ticket);
        let owner = &self.ticket.owner;
        self.core
            .release(&self.keys, owner, self.ttl_ms)
            .await
            .map(|_freed| ())
    }

    fn abandon(self: Box<Self>) {
        self.core.holds.leave(&self.ticket);
        acquire::release_in_background(async move {
            let hold = self;
            let owner = &hold.ticket.owner;
            hold.core
                .release(&hold.keys, owner, hold.ttl_ms)
                .await
                .map(|_freed| ())
        });
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// The names Redisson 3.43.0, 3.52.0 and 4.7.0 give the `RLock` called `lb:{orders:7}`.
    #[test]
    fn names_are_redissons() {
        let keys = redisson_keys("lb:", "orders:7").unwrap();
        assert_eq!(keys.lock, "lb:{orders:7}");
        assert_eq!(keys.channel, "redisson_lock__channel:lb:{orders:7}");
        let latch = unlock_latch(&keys);
        let id = latch
            .strip_prefix("redisson_unlock_latch:lb:{orders:7}:")
            .unwrap();
        assert!(
            id.len() == 32
                && id
                    .bytes()
                    .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase()),
            "{latch}"
        );
        assert_ne!(latch, unlock_latch(&keys));
    }

    /// `prefixName` adds a hash tag only to a name without a `{`.
    #[test]
    fn prefix_name_keeps_an_existing_hash_tag() {
        assert_eq!(prefix_name("p", "a{b}c"), "p:a{b}c");
        assert_eq!(prefix_name("p", "ab"), "p:{ab}");
        assert_eq!(prefix_name("p", "a}b"), "p:{a}b}");
    }
}
