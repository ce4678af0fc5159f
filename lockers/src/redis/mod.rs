//! Redis strategies, one folder per family, over shared transport (`transport/`) and shared lock code
//! (this level). Every strategy's client counts the requests its connections send, read through
//! [`Locker::requests_sent`](crate::Locker::requests_sent).
//!
//! | module | what it holds | used by |
//! |---|---|---|
//! | `transport` | client, counted connection (direct, Sentinel, cluster), pub/sub, keyevents, replica sync: everything that talks to Redis without knowing a lock | every Redis strategy |
//! | [`connection`] | (`transport::connection`, re-exported) the command connection and its settings | every Redis strategy; callers checking an address |
//! | `keys` | lock, fencing-counter, unlock-channel and shadow key names with `{name}` hash tags; key prefix, client ids, owner fields | every Redis strategy |
//! | `scripts` | Lua scripts (`scripts/*.lua`, with the shared `lib.lua`: fencing `INCR`, extend-only TTLs) called by SHA with reload on `NOSCRIPT`; the answers every script shares (acquire attempt, renew outcome, TTL in ms); the watchdog's scripts | every Redis strategy |
//! | `script_roles` | [`ScriptRole`], [`script_shas`]: every strategy's scripts by SHA1, for a `MONITOR` observer | callers |
//! | `acquire` | capabilities; reading a request (lease TTL, owner, wait); `Timeout`; the wait-and-retry loop of a pub/sub-woken acquire (`redis-watchdog`, Redisson); reading a hash lock's release answer; registering a grant and building its lease; releasing a dropped lease in the background | every Redis strategy |
//! | `deferred` | per-lock renewal loops spawned only once a lease outlives half a period (shared here because several families use it) | `redis-watchdog` per-lock mode, `redisson-classic`, `valkey-ifeq` |
//! | `string_lock` | the token-valued string lock (`SET NX PX` + `INCR`, check-and-pexpire, check-and-delete, optional shadow key) and its holder values | `redis-guard-thread`, `redis-keyspace`, `redlock` |
//! | [`watchdog`] | the `redis-watchdog` strategy ([`RedisWatchdog`]) with its config and batch scheduler | |
//! | [`guard_thread`] | the `redis-guard-thread` strategy ([`RedisGuardThread`]) with its config and renewal threads | |
//! | [`ifeq`] | the `valkey-ifeq` strategy ([`ValkeyIfeq`]): no scripts, Valkey's `SET … IFEQ` and `DELIFEQ`, fencing from a `MULTI`/`EXEC` | |
//! | [`keyspace`] | the `redis-keyspace-naive` / `-shadow` strategy ([`RedisKeyspace`]) with its config and holder task | |
//! | [`redisson`] | the `redisson-classic` / `redisson` strategy ([`Redisson`]) with its config, scripts and both renewers (and the `jvm-redisson*` peers' timeouts) | |
//! | [`redlock`] | the `redlock` strategy ([`Redlock`]) over N independent masters, using `string_lock`'s value, check-and-pexpire and check-and-delete | |
//!
//! Each strategy folder keeps its modules private and re-exports what callers use; shared code sits at
//! this level (`acquire`, `keys`, `scripts`, `string_lock`, `deferred`) or in `transport`.
//!
//! Renewal bookkeeping (extend the deadline, `Renewed`, "not yours", retry until the deadline) is
//! `crate::renewal::record_renewal`, shared by every renewer here: the per-lock loop, the batch scheduler,
//! the guard threads and the keyspace holders.
//!
//! Batched renewal timing (`crate::batch_renewal`, shared with `postgres-lease`): ticks of a twelfth of a period; each lock is renewed every
//! eleventh tick from the tick it was due at, in one of eleven phases, and the locks spread over the
//! phases in full chunks, so every held lock is renewed 12/11 times per period and N held locks cost at
//! most ⌈N / chunk⌉ + 10 calls per round.

mod transport;

pub mod guard_thread;
pub mod ifeq;
pub mod keyspace;
pub mod redisson;
pub mod redlock;
pub mod watchdog;

mod acquire;
#[cfg(test)]
mod config_checks;
mod deferred;
mod keys;
mod script_roles;
mod scripts;
mod string_lock;

pub use keys::random_client_id;
pub use transport::connection;
pub use transport::connection::{Commands, ConnectionSettings, RedisConnection};

pub use guard_thread::{GuardThreadConfig, PollBackoff, RedisGuardThread};
pub use ifeq::ValkeyIfeq;
pub use keyspace::{KeyspaceConfig, RedisKeyspace, Variant as KeyspaceVariant};
pub use redisson::{
    Generation, Redisson, RedissonConfig, RetryDelay, ScaledTimeouts, Topology, UnsyncedLockCall,
};
pub use redlock::{Redlock, RedlockConfig, quorum, validity};
pub use script_roles::{ScriptRole, script_shas};
pub use watchdog::{RedisWatchdog, RenewalMode, WatchdogConfig};
