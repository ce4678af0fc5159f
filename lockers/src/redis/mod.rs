//! Redis strategies over shared connection, script, key, lock and pub/sub code.
//!
//! | module | what it holds | used by |
//! |---|---|---|
//! | `client` | the `redis::Client` an address describes (ACL user, TLS); timeouts; `RedisError` → `LockError::Backend`; the count of commands sent | every connection |
//! | `counted` | one server's self-reconnecting connection manager, counting the requests the server sees, each reconnect's handshake included | [`connection`], `sentinel`, `cluster` |
//! | [`connection`] | the multiplexed, reconnecting command connection, direct, behind Sentinel or to a cluster | every Redis strategy |
//! | `cluster` | `redis+cluster://` (`rediss+cluster://` over TLS) addresses: hash slots, the slot → master layout, `MOVED`/`ASK`, batches split by slot | [`connection`], batch renewals |
//! | `sentinel` | `redis+sentinel://` (`rediss+sentinel://` over TLS) addresses: the primary asked of the Sentinels, asked again after a failover-like error | [`connection`] |
//! | `keys` | lock, fencing-counter, unlock-channel and shadow key names with `{name}` hash tags; key prefix, client ids, owner fields | every Redis strategy |
//! | `scripts` | Lua scripts (`scripts/*.lua`, with the shared `lib.lua`: fencing `INCR`, extend-only TTLs) called by SHA with reload on `NOSCRIPT`; the answers every script shares (acquire attempt, renew outcome, TTL in ms); the watchdog's scripts | every Redis strategy |
//! | `acquire` | capabilities; reading a request (lease TTL, owner, wait); `Timeout`; registering a grant and building its lease; releasing a dropped lease in the background | every Redis strategy |
//! | `pubsub` | one pub/sub connection per client: waiters woken one per message (unlock channels), listeners handed every message with its arrival time and told of breaks and resubscriptions | `redis-watchdog` waiters; `keyevents` |
//! | `string_lock` | the token-valued string lock (`SET NX PX` + `INCR`, check-and-pexpire, check-and-delete, optional shadow key) and its holder values | `redis-guard-thread`, `redis-keyspace` |
//! | `watchdog_config` | [`WatchdogConfig`], [`RenewalMode`] | `redis-watchdog` |
//! | `batch` | one scheduler per client renewing due locks in chunked script calls | `redis-watchdog` batched mode |
//! | `deferred` | per-lock renewal loops spawned only once a lease outlives half a period | `redis-watchdog` per-lock mode |
//! | [`watchdog`] | the `redis-watchdog` strategy ([`RedisWatchdog`]) | |
//! | `guard_thread_config` | [`GuardThreadConfig`], [`PollBackoff`] | `redis-guard-thread` |
//! | `renewal_thread` | one OS renewal thread per held lock, on its own blocking connection | `redis-guard-thread` |
//! | [`guard_thread`] | the `redis-guard-thread` strategy ([`RedisGuardThread`]) | |
//! | `keyspace_config` | [`KeyspaceConfig`], [`KeyspaceVariant`] | `redis-keyspace` |
//! | `keyevents` | `notify-keyspace-events` set-up; keyevent `expired`/`del` messages routed by key to holders and waiters | `redis-keyspace` |
//! | `keyspace_holder` | the holder task: shadow renewal or naive re-acquire on expiry events | `redis-keyspace` |
//! | [`keyspace`] | the `redis-keyspace-naive` / `-shadow` strategy ([`RedisKeyspace`]) | |
//! | `redisson_config` | [`RedissonConfig`], [`Generation`], [`RetryDelay`], [`Topology`], [`ScaledTimeouts`] | `redisson-classic`, `redisson` (and the `jvm-redisson*` peers' timeouts) |
//! | `replica_sync` | Redisson's `WAIT` after lock writes when the topology has replicas | `redisson-classic`, `redisson` |
//! | `redisson_lock` | Redisson's acquire, release and renew scripts and a lease's release path | `redisson-classic`, `redisson` |
//! | `redisson_classic` | one renewal timer per lock, ended for good by an error (Redisson < 3.44) | `redisson-classic` |
//! | `redisson_scheduler` | one renewal scheduler per client, chunks of 100, errors retried at the next tick (Redisson ≥ 3.44) | `redisson` |
//! | [`redisson`] | the `redisson-classic` / `redisson` strategy ([`Redisson`]) | |
//! | `redlock_config` | [`RedlockConfig`]; majority and validity arithmetic | `redlock` |
//! | [`redlock`] | the `redlock` strategy ([`Redlock`]) over N independent masters, using `string_lock`'s value, check-and-pexpire and check-and-delete | |
//!
//! Renewal bookkeeping (extend the deadline, `Renewed`, "not yours", retry until the deadline) is
//! `crate::renewal::record_renewal`, shared by every renewer here: the per-lock loop, the batch scheduler,
//! the guard threads and the keyspace holders.
//!
//! Batched renewal timing: locks are renewed on a grid of ticks one renewal period apart; each lock at the
//! first tick at least half a period after its previous answer. So every held lock is renewed once per
//! period, between ½ and 1½ periods after its previous renewal, and N held locks cost ⌈N / chunk⌉ calls
//! per period.

mod client;
mod cluster;
pub mod connection;
mod counted;
pub mod guard_thread;
pub mod keyspace;
pub mod redisson;
pub mod redlock;
pub mod watchdog;

mod acquire;
mod batch;
#[cfg(test)]
mod config_checks;
mod deferred;
mod guard_thread_config;
mod keyevents;
mod keys;
mod keyspace_config;
mod keyspace_holder;
mod pubsub;
mod redisson_classic;
mod redisson_config;
mod redisson_lock;
mod redisson_scheduler;
mod redlock_config;
mod renewal_thread;
mod replica_sync;
mod script_roles;
mod scripts;
mod sentinel;
mod string_lock;
mod watchdog_config;

pub use connection::{Commands, ConnectionSettings, RedisConnection, commands_sent};
pub use keys::random_client_id;
pub use watchdog::RedisWatchdog;
pub use watchdog_config::{RenewalMode, WatchdogConfig};

pub use guard_thread::{GuardThreadConfig, PollBackoff, RedisGuardThread};
pub use keyspace::{KeyspaceConfig, RedisKeyspace, Variant as KeyspaceVariant};
pub use redisson::Redisson;
pub use redisson_config::{Generation, RedissonConfig, RetryDelay, ScaledTimeouts, Topology};
pub use redlock::Redlock;
pub use redlock_config::{RedlockConfig, quorum, validity};
pub use script_roles::{ScriptRole, script_shas};
