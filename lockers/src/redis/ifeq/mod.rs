//! `valkey-ifeq`: a lock without Lua, on the commands Valkey added for it, measured against the
//! scripted rows (`redis-watchdog`, `redis-guard-thread`).
//!
//! - The lock is a string at `P{name}` whose value names one acquire (`<client id>:<owner>:<nonce>`,
//!   the holder value of `redis-guard-thread`), with the fencing counter `P{name}:fence` beside it.
//! - Acquire: one transaction, `MULTI` / `SET P{name} value NX PX ttl` / `INCR P{name}:fence` / `EXEC`,
//!   sent as one round trip. `EXEC` answers `[OK, n]` (taken, token `n`) or `[nil, n]` (held: the
//!   token is thrown away). Waiters poll with [`PollBackoff`](crate::redis::PollBackoff), as
//!   `redis-guard-thread`'s do. Not re-entrant: a second acquire by the same owner finds the key
//!   taken.
//! - [`LeaseMode::Watchdog`](crate::LeaseMode::Watchdog): TTL = the watchdog timeout, renewed every
//!   period (timeout / 3 by default) as `redis-watchdog`'s per-lock loop is, with
//!   `SET P{name} value IFEQ value PX ttl` (Valkey 8.1). `OK` extends the local deadline; nil means
//!   the value no longer holds the lock, and `lost()` fires
//!   ([`LossReason::RenewRejected`](crate::LossReason::RenewRejected)). An error emits `RenewFailed`
//!   and is retried every third of a period until the local deadline
//!   ([`LossReason::Expired`](crate::LossReason::Expired)). The renewal does not learn the TTL left
//!   before it (no `PTTL` is sent), so its `Renewed` events carry no safety margin.
//!   [`LeaseMode::Fixed`](crate::LeaseMode::Fixed): that TTL, never renewed.
//! - Release: `DELIFEQ P{name} value` (Valkey 9.0): 1 released, 0
//!   [`LockError::NotHeld`](crate::LockError::NotHeld). Renewal stops first, whatever the answer.
//!
//! **Why the fencing tokens stay in acquisition order without a script.** A transaction runs whole
//! and alone: no other client's command runs between its `SET NX` and its `INCR`. So when two
//! acquires succeed one after the other, the first one's `INCR` ran before the second one's `SET`
//! could succeed, and the second token is larger. An attempt whose `SET NX` fails still runs its
//! `INCR` (a transaction does not stop at a nil answer), so tokens have gaps, which fencing allows:
//! tokens only need to grow. What a script would add is skipping the wasted `INCR`; a `SET` and an
//! `INCR` sent separately would not do: the lock could expire and be taken, with its `INCR`, in
//! between, handing the later holder the smaller token. In a cluster both keys share the `{name}` slot,
//! as a transaction requires.
//!
//! **Found by asking the server.** `connect` asks `COMMAND INFO DELIFEQ` (nil where the command does
//! not exist) and looks for an `IFEQ` token among `COMMAND DOCS SET`'s arguments, not at version
//! strings; Redis 7.0 lacks both and is refused with one line naming the Valkey version that added each
//! (Redis 8.4's `IFEQ` and `DELEX` are a different pair: `DELIFEQ` is missing there).
//!
//! It takes the settings of `redis-guard-thread` ([`GuardThreadConfig`](crate::redis::GuardThreadConfig):
//! the watchdog timeout, the waiters' back-off, key prefix, client id, connection), and its renewals run
//! on the client's shared connection, not on threads.
//!
//! | module | what it holds |
//! |---|---|
//! | `commands` | the claim's transaction, `SET … IFEQ`, `DELIFEQ`; the server check |
//! | `locker` | [`ValkeyIfeq`]: polling acquire, grant, per-lock renewal, release |

mod commands;
mod locker;

pub use commands::ID;
pub use locker::ValkeyIfeq;
