//! `redlock`: the published Redlock algorithm (redis.io, "Distributed Locks with Redis") over N
//! independent Redis masters (5 by default; lockbench starts them, users pass their addresses).
//!
//! - **Acquire**: a fresh random value per attempt's lease (`<client id>:<owner>:<nonce>`, the string
//!   lock's holder value), then `SET key value NX PX ttl` on every node **concurrently**, each bounded
//!   by a per-node timeout ([`RedlockConfig::node_timeout`], default 0.5 % of the TTL within 5–50 ms:
//!   "small compared to the auto-release time", so a dead node costs little validity). The lock is held
//!   when a majority (⌊N/2⌋ + 1) said `OK` **and** the validity `ttl − elapsed − drift` is positive,
//!   drift = 1 % of the TTL + 2 ms. The lease's local deadline is `start + ttl − drift` (measured from
//!   before the first `SET` was sent), i.e. the attempt's end plus its validity.
//! - **Miss**: the check-and-delete script runs on every node (undoing the partial votes, also on
//!   nodes that did not answer: their `SET` may have landed; skipped when every node said no), then the
//!   client sleeps `retry_delay + random(0..retry_jitter)`, 200 ms + 0..+100 ms by default (node-redlock
//!   sleeps 200 ± 100 ms: its jitter also shortens the pause), and tries again until the wait elapses ([`LockError::Timeout`](crate::LockError::Timeout); a [`LockError::Backend`](crate::LockError::Backend) instead when fewer
//!   than a majority of nodes answered at all, so an outage is not reported as contention).
//! - **Release**: the check-and-delete script on every node. It succeeds only when a majority confirmed
//!   the value was still ours and deleted it; otherwise the lease is [`LockError::NotHeld`](crate::LockError::NotHeld) (some other
//!   client could have held a majority meanwhile). A lease whose local deadline had passed is `NotHeld`
//!   even if its keys were still there (it was no longer valid), after deleting them. When so many
//!   nodes failed to answer that neither outcome is certain, the answer is a `Backend` error.
//! - **Watchdog mode** ([`LeaseMode::Watchdog`](crate::LeaseMode::Watchdog)): every `ttl × renewal.ratio` (1/3, like every renewing
//!   strategy here) the lease is extended with the check-and-pexpire script on every node. An extension
//!   reaching a majority moves the local deadline to `extend start + ttl − drift` (the validity computed
//!   from the extension's start, never more); `Renewed.remaining_ttl_before` is the **majority-th
//!   largest** remaining TTL the nodes reported (the time left until fewer than a majority would still
//!   have held the key, the quorum's real margin; `min` would be dragged by one stale node). When the
//!   "not ours" answers alone make a majority impossible the lease is lost at once
//!   ([`LossReason::RenewRejected`](crate::LossReason::RenewRejected)); any other miss is `RenewFailed`
//!   and retried every third of a period until the local deadline, then lost
//!   ([`LossReason::Expired`](crate::LossReason::Expired)). node-redlock's `using` extends when the
//!   lock is within `automaticExtensionThreshold` (500 ms) of expiry; lockbench uses the shared
//!   `renewal.ratio` schedule so all renewing rows are compared alike. Redisson's `RedissonRedLock` is
//!   deprecated (its javadoc points to `RLock`), so there is no Redisson row for Redlock.
//!   [`LeaseMode::Fixed`](crate::LeaseMode::Fixed): that TTL, never extended.
//! - **No fencing token**: [`Capabilities::fencing`](crate::Capabilities::fencing) is false and every lease carries
//!   [`FencingToken(0)`](crate::FencingToken): a placeholder, never a fencing token. The driver reads tokens
//!   only from strategies declaring fencing, so the oracle never counts it as a duplicate or a
//!   regression — and nothing stops a paused holder's stale write: that is the point Kleppmann makes.
//! - Not re-entrant (each acquire is a new value; `SET NX` finds it taken). Waiters poll.
//!
//! Every node has its own multiplexed, self-reconnecting connection ([`RedisConnection`](crate::redis::RedisConnection)); a node that
//! was killed and restarted is reached again without intervention (its script cache is reloaded on
//! `NOSCRIPT`). All nodes must answer at connect time.
//!
//! | module | what it holds |
//! |---|---|
//! | `config` | [`RedlockConfig`]; majority and validity arithmetic |
//! | `locker` | [`Redlock`]: acquire on a majority, extend, release on every node |

mod config;
mod locker;

pub use config::{RedlockConfig, quorum, validity};
pub use locker::{ID, Redlock};
