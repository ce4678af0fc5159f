//! `redis-keyspace`: renewal driven by Redis keyspace notifications, in the two variants people try.
//!
//! Redis publishes `__keyevent@<db>__:expired` when it deletes an expired key and `__keyevent@<db>__:del`
//! on `DEL`, if `notify-keyspace-events` has `E` (keyevent channels), `x` (expired) and `g` (generic
//! commands, `DEL` among them). At connect the strategy reads the setting (`CONFIG GET`) and adds the
//! flags it lacks (`CONFIG SET`, keeping the user's flags), and again after each resubscription of its
//! pub/sub connection (the server may be a newly promoted or a restarted one). When it may not (CONFIG renamed or disabled,
//! an ACL), connecting fails with a `Config` error naming `notify-keyspace-events`: it never runs
//! without events.
//!
//! The lock is the token-valued string lock it shares with `redis-guard-thread` (`string_lock`: `SET NX
//! PX` + fencing `INCR` in one script, check-and-pexpire, check-and-delete). Each client has one pub/sub
//! connection (the `pubsub` dispatcher the watchdog's waiters use too) subscribed to the two keyevent
//! channels; `keyevents` hands each event to the holders and waiters of that key in this client, and
//! `holder` is what a holder does with it. Every client receives every `expired` and `del`
//! event of the database.
//!
//! - [`Variant::Naive`] (`redis-keyspace-naive`): the holder listens for its lock key's own `expired`
//!   event and re-acquires (`SET NX PX`, same value, same fencing token). By then the key is gone, so a
//!   contender can get in first; the holder learns it only when its re-acquire fails (`lost()` with
//!   [`LossReason::TakenOver`](crate::LossReason::TakenOver)). **Its belief is optimistic:** the
//!   holder trusts the expiry-triggered re-acquire to keep the key, so every `timeout / 3` it moves its
//!   local deadline to `now + timeout` without asking the server. `is_held()` therefore stays true from the moment the key expires until
//!   the re-acquire's answer arrives — and for good when no `expired` event comes (a `DEL` behind its
//!   back, an event lost while the subscriber was disconnected). This variant fails two conformance
//!   cases by design: `watchdog_lease_outlives_timeout` (a contender gets in at each expiry) and
//!   `lost_when_removed_behind_back` (a `DEL` publishes `del`, not `expired`, so nothing happens).
//!   It can also err the other way: a new holder whose own `SET NX` made Redis delete its
//!   predecessor's expired key receives that key's `expired` event after its acquire returns, takes it
//!   for its own expiry, and its re-acquire fails on its own key, so it reports `TakenOver` while it
//!   still holds the lock (its release still deletes the key). Found by a CI flake; kept, because a
//!   listener keyed by the lock name cannot tell the two events apart.
//! - [`Variant::Shadow`] (`redis-keyspace-shadow`): the acquire script also sets a shadow key
//!   `P{name}:shadow` with a TTL of `timeout × shadow_ratio` (default ⅔); the shadow's `expired` event
//!   triggers a check-and-pexpire of the real lock that also re-arms the shadow. A renewal answered 0
//!   fires `lost()` ([`LossReason::RenewRejected`](crate::LossReason::RenewRejected)); errors are
//!   retried until the local deadline (`RenewFailed`, then `Expired`). No timer backs it up: if the
//!   event comes later than the lock's remaining third (it fires only when the server actually deletes
//!   the key — lazily on access, or in its active expiry cycle, up to ~1/hz late), the local deadline
//!   passes and the lease is lost.
//!
//! Every `Renewed` event carries `trigger_lag`: the arrival of the triggering `expired` event minus the
//! watched key's nominal deadline (the send time of the command that set it plus its TTL; the server
//! set it a little later, so this over-states the lag by at most one round trip). `scheduled_at` is
//! that nominal deadline.
//!
//! When the pub/sub connection breaks (`CLIENT KILL TYPE pubsub`, a network blip), events published
//! meanwhile are lost for good. The dispatcher wakes every waiter, reconnects after 50 ms (failures back
//! off ×2 up to 1 s) and resubscribes; then every shadow holder renews at once (its shadow may have expired
//! unseen; `trigger_lag` = resubscription − nominal deadline, zero if not yet due), so a gap shorter
//! than the lock's remaining third keeps the lock. The naive holder does nothing on a reconnect: it
//! cannot tell that it missed its key's expiry.
//!
//! Waiters wake on their lock key's `del` and `expired` events (an event wakes every waiter of that key
//! in this client; one of them wins the retry), with a fallback re-check every `waiter_recheck`
//! (default 250 ms) so that a lost event cannot hang them. Not re-entrant (`SET NX`).
//! [`LeaseMode::Fixed`](crate::LeaseMode::Fixed) leases have no shadow and no listener.
//!
//! | module | what it holds |
//! |---|---|
//! | `config` | [`KeyspaceConfig`], [`Variant`], the two ids |
//! | `holder` | the holder task: shadow renewal or naive re-acquire on expiry events |
//! | `locker` | [`RedisKeyspace`]: acquire, waiting on `del`/`expired` events, grant, release |

mod config;
mod holder;
mod locker;

pub use crate::redis::transport::keyevents::NEEDED_NOTIFY_FLAGS;
pub use config::{KeyspaceConfig, NAIVE_ID, SHADOW_ID, Variant};
pub use locker::RedisKeyspace;
