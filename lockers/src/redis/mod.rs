//! Redis strategies over shared connection, script and key code.
//!
//! | module | what it holds | used by |
//! |---|---|---|
//! | [`connection`] | the multiplexed, reconnecting command connection; timeouts; `RedisError` → `LockError::Backend` | every Redis strategy |
//! | `keys` | key, fencing-counter and channel names with `{name}` hash tags; client ids; owner fields | every Redis strategy |
//! | `scripts` | Lua scripts (`scripts/*.lua`, with the shared `lib.lua`: fencing `INCR`, extend-only TTLs) called by SHA with reload on `NOSCRIPT` | every Redis strategy |
//! | `pubsub` | one pub/sub connection per client, fanning messages out to waiters per channel | waiters (watchdog; keyspace notifications) |
//! | `batch` | one scheduler per client renewing due locks in chunked script calls | `redis-watchdog` batched mode |
//! | `deferred` | per-lock renewal loops spawned only once a lease outlives half a period | `redis-watchdog` per-lock mode |
//! | [`watchdog`] | the `redis-watchdog` strategy ([`RedisWatchdog`]) | |
//!
//! Batched renewal timing: locks are renewed on a grid of ticks one renewal period apart; each lock at the
//! first tick at least half a period after its previous answer. So every held lock is renewed once per
//! period, between ½ and 1½ periods after its previous renewal, and N held locks cost ⌈N / chunk⌉ calls
//! per period.

pub mod connection;
pub mod watchdog;

mod batch;
mod deferred;
mod keys;
mod pubsub;
mod scripts;
mod watchdog_config;

pub use connection::{ConnectionSettings, RedisConnection};
pub use keys::random_client_id;
pub use watchdog::RedisWatchdog;
pub use watchdog_config::{RenewalMode, WatchdogConfig};

pub mod guard_thread;
pub mod keyspace;

pub use guard_thread::{GuardThreadConfig, PollBackoff, RedisGuardThread};
pub use keyspace::{KeyspaceConfig, RedisKeyspace, Variant as KeyspaceVariant};
