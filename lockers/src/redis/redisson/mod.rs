//! `redisson-classic` and `redisson`: Redisson's `RLock`, faithfully, in its two generations of the lock
//! watchdog ([`Generation`]). Source read: redisson/redisson at tags `redisson-3.43.0` (classic) and
//! `redisson-3.44.0` / 4.7 (scheduler): `RedissonLock.java`, `RedissonBaseLock.java`,
//! `renewal/{LockRenewalScheduler,RenewalTask,LockTask}.java`, `command/CommandAsyncService.java`
//! (`syncedEval`), `config/Config.java` (defaults).
//!
//! What both generations share (`lock`):
//! - Redisson's names on the wire: the lock called `name` is the `RLock` a Redisson client calls
//!   `P{name}` (`getLock("lockbench:{name}")` with the default prefix, as the JVM adapters name theirs).
//!   Its hash is that key; its unlock channel is Redisson's `getChannelName()`,
//!   `redisson_lock__channel:P{name}`; a release's unlock latch is `getUnlockLatchName(requestId)`,
//!   `redisson_unlock_latch:P{name}:<32 hex digits>`. Both are `RedissonObject.prefixName`, which adds
//!   braces around the name only when it has no `{` (ours always has its hash tag, so the lock's keys
//!   and channel stay in one cluster slot). The same in 3.43.0, 3.52.0 and 4.7.0.
//! - Wire compatibility: interoperates with Redisson's `RLock` on one lock name (single server or
//!   master/slave; see the departures for a cluster). The two exclude each other through the one hash,
//!   and a release by either wakes the other's waiters, as two Redisson clients do. Measured by
//!   `redisson_and_its_models_hand_off_on_one_lock` (`lockers/tests/adapter_jvm.rs`, 3.43.0, 3.52.0
//!   and 4.7.0): a hand-off of 10–80 ms either way with 5.4 s of PTTL left; with the names used before
//!   (`P{name}:unlock`) every waiter slept out the holder's PTTL, either way.
//! - The lock is a hash at `P{name}`; the field is `<client id>:<owner>` (Redisson: `<uuid>:<thread
//!   id>`), the value the re-entry count. Acquire: when the hash is absent or the field exists,
//!   `HINCRBY` and `PEXPIRE` (the TTL is always re-set); otherwise the PTTL comes back.
//! - `LeaseMode::Watchdog` (`lock()` without a lease time): TTL = `lockWatchdogTimeout` (30 s),
//!   renewed every third of it. `LeaseMode::Fixed(d)` (`lock(leaseTime)`): TTL `d`, never renewed.
//! - Release: the unlock script always publishes Redisson's `UNLOCK_MESSAGE` (`0`) on
//!   `redisson_lock__channel:P{name}` on the final release; re-entrant
//!   releases re-set the TTL; a release by a non-owner is [`LockError::NotHeld`](crate::LockError::NotHeld) (Redisson's
//!   `IllegalMonitorStateException`); renewal is cancelled once the server answered.
//! - Waiting (`tryLock(wait)`): try, subscribe to the unlock channel, then retry whenever an unlock
//!   message arrives (one message wakes one waiter, as `LockPubSub` releases its latch once for
//!   `UNLOCK_MESSAGE`) or the holder's PTTL elapses, until the wait is over.
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
//! - Any message on the unlock channel wakes one waiter; Redisson's `LockPubSub` wakes one on `0`, all
//!   on `1` (`READ_UNLOCK_MESSAGE`) and ignores others. An `RLock`'s channel carries only `0` (read-write
//!   locks publish `1` on `redisson_rwlock:<name>`), so no message that reaches it is told apart.
//! - Publishing and subscribing are always `PUBLISH` / `SUBSCRIBE`. In a Redis Cluster where Redisson
//!   finds sharded pub/sub (Redis 7+, `shardedSubscriptionMode` `AUTO`, its default), Redisson publishes
//!   with `SPUBLISH` and listens with `SSUBSCRIBE`, and neither kind of subscriber gets the other kind
//!   of message: there a model and the library on one lock still exclude each other, but a release by
//!   one reaches none of the other's waiters, which wait for the PTTL. Single server and master/slave
//!   (what the rows and the JVM adapters run) are not affected.
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
