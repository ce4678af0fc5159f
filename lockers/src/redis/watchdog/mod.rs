//! `redis-watchdog`: Redisson's `RLock` on one Redis server, with a fencing token, a lost-lease signal,
//! the safety margin of every renewal, and optional batched renewal.
//!
//! - The lock is a hash at `P{name}`; the field is `<client id>:<owner>`, the value the re-entry count.
//!   Acquire, renew and release are Lua scripts called by SHA (see `scripts/`). A fresh acquire `INCR`s
//!   the fencing counter `P{name}:fence`; a re-entry returns the holder's token.
//! - [`LeaseMode::Watchdog`](crate::LeaseMode::Watchdog): TTL = the watchdog timeout, renewed every
//!   timeout × ratio until released, per lock ([`RenewalMode::PerLock`], the default) or batched
//!   ([`RenewalMode::Batched`]). Re-entrant holds of one owner share one renewal.
//!   [`LeaseMode::Fixed`](crate::LeaseMode::Fixed): that TTL, never renewed.
//! - A renewal answered 0 (gone) fires `lost()`; a renewal error emits `RenewFailed` and is retried until
//!   the conservative local deadline, which then fires `lost()`. Release stops renewal first, whatever
//!   the release then answers.
//! - Release by a non-owner (or of an expired lock) is [`LockError::NotHeld`](crate::LockError::NotHeld); the last release deletes
//!   the key and publishes an unlock message on `P{name}:unlock`.
//! - Waiters share the client's one pub/sub connection: a waiter subscribes, retries, and then sleeps
//!   until an unlock message, the holder's remaining TTL, or its own wait deadline.
//!
//! Departures from Redisson (the faithful rows are `redisson-classic` and `redisson`,
//! [`crate::redis::redisson`]), each on purpose:
//! - **lost() signal**: Redisson only logs a failed renewal and never tells the holder; here a renewal
//!   answered 0 or the local deadline passing resolves `lost()`, so a careful holder can stop.
//! - **Retries until the deadline**: classic Redisson drops the renewal entry after one error (after its
//!   command retries) and 3.44+ waits for the next tick; here a failed renewal is retried every third of
//!   a period until the lease's local deadline (a short outage or one `BUSY` answer costs nothing).
//! - **Extend-only TTLs**: Redisson re-sets the TTL on re-entry and partial release; here they only
//!   ever grow (a short hold re-entering a long one would otherwise cut the server TTL below the long
//!   hold's local deadline).
//! - **Publish only to registered waiters**: Redisson publishes on every final unlock; here the release
//!   publishes only when a contender marked the hash while it was held (no message nobody reads).
//! - **Fencing token**: an `INCR` on `P{name}:fence` in the acquire script (Redisson has none).
//! - **Hold identity**: a release checks the hold's fencing token, so a stale lease of an owner that
//!   has since re-acquired cannot free the newer hold (Redisson's owner field alone cannot tell them
//!   apart).
//!
//! | module | what it holds |
//! |---|---|
//! | `config` | [`WatchdogConfig`], [`RenewalMode`] |
//! | `batch` | a lock's target in the batched mode's scheduler (`crate::batch_renewal`): key and owner inline |
//! | `locker` | [`RedisWatchdog`]: acquire, grant, per-lock renewal start, a lease's release path |

mod batch;
mod config;
mod locker;

pub use crate::batch_renewal::BatchSchedule;
pub use config::{RenewalMode, WatchdogConfig};
pub use locker::{
    BATCHED_ID, BATCHED_RENEWALS_PER_PERIOD, BATCHED_SCHEDULE, ID, RedisWatchdog,
    batch_renewal_script,
};
