//! `redis-guard-thread`: the lock teams write without Redisson, measured against `redis-watchdog`.
//!
//! - The lock is a string at `P{name}` whose value names the holder: `<client id>:<owner>:<nonce>`, with
//!   a fresh random nonce per acquire. Acquire is one script: `SET key value NX PX ttl` and, only when it
//!   succeeded, an `INCR` of the fencing counter `P{name}:fence` (the watchdog's companion key and its
//!   `lib.lua` helper), so a grant and its token are one atomic step.
//! - [`LeaseMode::Watchdog`](crate::LeaseMode::Watchdog): TTL = the watchdog timeout, renewed by **one dedicated OS thread per held
//!   lock** (`std::thread`, named `lb-guard-<first 6 chars of the client id>`). The thread opens its own
//!   blocking connection (`redis::Client::get_connection_with_timeout`) lazily, before its first renewal,
//!   sleeps `renewal.period()` (an `mpsc::Receiver::recv_timeout`, so a stop wakes it at once), and
//!   renews with a check-and-pexpire script that answers the PTTL it found, or 0 when the value is no
//!   longer ours (→ `lost()` with [`LossReason::RenewRejected`](crate::LossReason::RenewRejected)). A
//!   renewal error emits `RenewFailed`, drops the connection, and is retried every third of a period
//!   until the local deadline, then the lease is lost ([`LossReason::Expired`](crate::LossReason::Expired)).
//!   Every blocking call is bounded by the response timeout and by the local deadline.
//!   [`LeaseMode::Fixed`](crate::LeaseMode::Fixed): that TTL, no thread.
//! - Release is a check-and-delete script ([`LockError::NotHeld`](crate::LockError::NotHeld) when the value is not ours) sent on the
//!   client's multiplexed connection; the thread is told to stop first, whatever the answer.
//! - Drop without release sends the thread an *abandon* message: it runs the check-and-delete on its own
//!   blocking connection and exits, so no tokio runtime is needed. A fixed lease (no thread) is released
//!   in the background on the current tokio runtime, if any; otherwise it expires by its TTL.
//! - Waiters poll: each miss sleeps a back-off ([`PollBackoff`]: 10 ms, ×2, capped at 200 ms, ±25 %
//!   jitter by default), never past the caller's wait.
//! - Not re-entrant: a second acquire by the same owner finds the key taken (`SET NX`) and waits like
//!   anyone else.
//!
//! [`RedisGuardThread::live_threads`] says how many renewal threads are alive, so the driver can report
//! what a held lock costs. Closing or dropping the client makes every thread exit at its next wake-up
//! without renewing (its lease then expires).
//!
//! The string lock itself (holder values, the three scripts and their answers) is `string_lock`, shared
//! with `redis-keyspace`; the renewal threads are `renewal_thread`; the settings `config`.
//!
//! | module | what it holds |
//! |---|---|
//! | `config` | [`GuardThreadConfig`], [`PollBackoff`] |
//! | `renewal_thread` | one OS renewal thread per held lock, on its own blocking connection |
//! | `locker` | [`RedisGuardThread`]: polling acquire, grant, release |

mod config;
mod locker;
mod renewal_thread;

pub use config::{GuardThreadConfig, PollBackoff};
pub use locker::{ID, RedisGuardThread};
