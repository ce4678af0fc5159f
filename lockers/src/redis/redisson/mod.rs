//! `redisson-classic` and `redisson`: Redisson's `RLock`, faithfully, in its two generations of the lock
//! watchdog ([`Generation`]). Source read: redisson/redisson at tags `redisson-3.43.0` (classic) and
//! `redisson-3.44.0` / 4.7 (scheduler): `RedissonLock.java`, `RedissonBaseLock.java`,
//! `renewal/{LockRenewalScheduler,RenewalTask,LockTask}.java`, `command/CommandAsyncService.java`
//! (`syncedEval`), `config/Config.java` (defaults).
//!
//! What both generations share (`lock`):
//! - The lock is a hash at `P{name}`; the field is `<client id>:<owner>` (Redisson: `<uuid>:<thread
//!   id>`), the value the re-entry count. Acquire: when the hash is absent or the field exists,
//!   `HINCRBY` and `PEXPIRE` (the TTL is always re-set); otherwise the PTTL comes back.
//! - `LeaseMode::Watchdog` (`lock()` without a lease time): TTL = `lockWatchdogTimeout` (30 s),
//!   renewed every third of it. `LeaseMode::Fixed(d)` (`lock(leaseTime)`): TTL `d`, never renewed.
//! - Release: the unlock script always publishes on `P{name}:unlock` on the final release; re-entrant
//!   releases re-set the TTL; a release by a non-owner is [`LockError::NotHeld`](crate::LockError::NotHeld) (Redisson's
//!   `IllegalMonitorStateException`); renewal is cancelled once the server answered.
//! - Waiting (`tryLock(wait)`): try, subscribe to the unlock channel, then retry whenever an unlock
//!   message arrives or the holder's PTTL elapses, until the wait is over.
//! - With [`Topology::Replicated`], each lock write is followed by `WAIT` on
//!   its connection, as `replica_sync` describes.
//! - No fencing token: Redisson has none, so [`Capabilities::fencing`](crate::Capabilities::fencing) is false and every lease's
//!   `token()` is 0.
//! - No lost-lease signal: Redisson never tells the holder that renewal stopped or that the server
//!   answered "not yours"; [`Capabilities::lost_signal`](crate::Capabilities::lost_signal) is false and `lost()` resolves at the
//!   conservative local deadline (the server's TTL runs out at about the same time).
//!
//! Renewal: `classic` (one timer per lock, stops for good on an error) or `scheduler`
//! (one scheduler per client, chunks of 100, retries at the next tick). Either way an "error" is what
//! is left after Redisson's command retries (`retryAttempts` 3 re-sends of a renew call that timed out,
//! lost its connection or was answered `BUSY` or another error Redisson retries): an outage shorter
//! than that budget costs nothing.
//!
//! Departures, each forced by lockbench's contract or harmless to what is measured:
//! - A lease dropped without release stops its renewal at once and releases in the background (the
//!   contract's drop rule; a Java `RLock` has no drop). A lease neither released nor dropped is renewed
//!   forever, as in Redisson.
//! - The acquire script answers `{1, 0}` where Redisson's answers nil (same server work).
//! - In a cluster, the 3.44+ scheduler groups held locks by slot and renews one slot after the other, in
//!   chunks of 100 within a slot; here a tick's chunks of 100 span slots and each chunk is split by slot,
//!   its calls sent together (`cluster::by_slot`): the same script, but more calls when a chunk spans
//!   slots, and the slots renewed at once rather than in turn.
//!
//! | module | what it holds |
//! |---|---|
//! | `config` | [`RedissonConfig`], [`Generation`], [`RetryDelay`], [`Topology`], [`UnsyncedLockCall`], [`ScaledTimeouts`] |
//! | `lock` | Redisson's acquire, release and renew scripts, their retries, a lease's release path |
//! | `classic` | one renewal timer per lock, ended for good by an error (Redisson < 3.44) |
//! | `scheduler` | one renewal scheduler per client, chunks of 100, errors retried at the next tick (Redisson ≥ 3.44) |
//! | `timer` | Redisson's timer: renewal ticks, retry pauses and renew calls' response timeouts fire at the end of its tick |
//! | `locker` | [`Redisson`]: acquire, grant, the choice of renewer |

mod classic;
mod config;
mod lock;
mod locker;
mod scheduler;
mod timer;

pub use config::{
    DEFAULT_BATCH_SIZE, Generation, RedissonConfig, RetryDelay, ScaledTimeouts, Topology,
    UnsyncedLockCall,
};
pub(crate) use lock::{REDISSON_ACQUIRE, REDISSON_RELEASE, REDISSON_RENEW, REDISSON_RENEW_BATCH};
pub use locker::{CLASSIC_ID, ID, Redisson};
