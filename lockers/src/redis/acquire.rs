//! What the Redis strategies' acquires and leases share: what every one of them can do, reading a request
//! (the lease's TTL, the owner, how long to wait), ending a wait with [`LockError::Timeout`], registering a
//! granted hold and building its lease, and releasing a dropped lease in the background.

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::keys::LockKeys;
use super::scripts::ttl_millis;
use super::transport::connection::BACKEND;
use crate::error::LockError;
use crate::event::{Events, LockEvent};
use crate::lease::{
    AcquireOptions, FencingToken, Lease, LeaseHandle, LeaseMode, LeaseState, OwnerId,
};
use crate::locker::Capabilities;
use crate::renewal::{HoldTicket, Holds, StopRenewal, in_background};

/// What a Redis strategy can do, given whether it is re-entrant and whether waiters are woken by the
/// server: every one has fencing tokens (`INCR`), watchdog renewal, fixed leases, a lost signal and
/// millisecond TTLs (`PX`).
pub(super) const fn capabilities(reentrant: bool, wait_notify: bool) -> Capabilities {
    Capabilities {
        reentrant,
        fencing: true,
        auto_renew: true,
        fixed_lease: true,
        wait_notify,
        lost_signal: true,
        hold_identity: true,
        min_ttl: Duration::from_millis(1),
        ttl_granularity: Duration::from_millis(1),
    }
}

/// The error of an acquire on a closed client.
pub(super) fn closed() -> LockError {
    LockError::backend(BACKEND, "client closed")
}

/// One acquire as the caller asked for it.
#[derive(Debug)]
pub(super) struct Request {
    /// The lock's keys.
    pub(super) keys: Arc<LockKeys>,
    /// The owner (a fresh unique one when the caller named none).
    pub(super) owner: OwnerId,
    /// Watchdog or fixed.
    pub(super) mode: LeaseMode,
    /// The TTL each grant sets: the watchdog timeout or the fixed lease.
    pub(super) ttl: Duration,
    /// [`Self::ttl`] in whole milliseconds, as the scripts take it.
    pub(super) ttl_ms: u64,
    started: Instant,
    give_up: Option<Instant>,
}

impl Request {
    /// Reads `opts` for lock `key` under `prefix`; a zero fixed lease or an empty key is a `Config` error.
    pub(super) fn new(
        prefix: &str,
        key: &str,
        opts: &AcquireOptions,
        watchdog_timeout: Duration,
    ) -> Result<Self, LockError> {
        let ttl = match opts.lease {
            LeaseMode::Watchdog => watchdog_timeout,
            LeaseMode::Fixed(d) if d.is_zero() => {
                return Err(LockError::Config("fixed lease must be > 0".into()));
            }
            LeaseMode::Fixed(d) => d,
        };
        let keys = Arc::new(LockKeys::new(prefix, key)?);
        let started = Instant::now();
        Ok(Request {
            keys,
            owner: opts.owner.clone().unwrap_or_else(OwnerId::unique),
            mode: opts.lease,
            ttl,
            ttl_ms: ttl_millis(ttl),
            started,
            give_up: opts.wait.map(|w| started + w),
        })
    }

    /// Whether the caller waits for a held lock at all (not a try-once).
    pub(super) fn waits(&self) -> bool {
        self.give_up.is_some()
    }

    /// After a miss at `now`: the end of the wait while it is still ahead, else the `Timeout` error.
    pub(super) fn keep_waiting(&self, now: Instant) -> Result<Instant, LockError> {
        self.give_up
            .filter(|give_up| now < *give_up)
            .ok_or_else(|| LockError::Timeout {
                key: self.keys.name.to_string(),
                waited: self.started.elapsed(),
            })
    }

    /// Registers the hold granted with `token` to a request sent at `sent_at` for `owner`,
    /// starting its renewal with `renewal` if it is a watchdog lease and the entry has none yet, reports
    /// `Acquired`, and builds the lease with the release path `hold` makes. No await: a cancelled acquire
    /// either never gets here or gets a whole lease.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn grant<F>(
        self,
        holds: &Holds,
        events: &Events,
        owner: &Arc<str>,
        token: FencingToken,
        sent_at: Instant,
        renewal: Option<F>,
        hold: impl FnOnce(HoldTicket) -> Box<dyn LeaseHandle>,
    ) -> Lease
    where
        F: Fn(Arc<LeaseState>) -> Box<dyn StopRenewal>,
    {
        let start = match self.mode {
            LeaseMode::Watchdog => renewal
                .as_ref()
                .map(|f| f as &dyn Fn(Arc<LeaseState>) -> Box<dyn StopRenewal>),
            LeaseMode::Fixed(_) => None,
        };
        let name = &self.keys.name;
        // Before the renewal starts, so `Acquired` comes before every renewal event.
        events.emit(|| LockEvent::Acquired {
            key: name.clone(),
            token,
            mode: self.mode,
            sent_at,
            at: Instant::now(),
        });
        let (state, ticket) = holds.enter(name, owner, sent_at + self.ttl, events, start);
        Lease::new(self.owner, token, self.mode, sent_at, state, hold(ticket))
    }
}

/// Runs `release` (of a dropped lease) on the current tokio runtime. Outside a runtime nothing can be
/// sent: the lock expires by its TTL, unrenewed. Its answer is ignored: `NotHeld` or an error only means
/// the lease had already gone or will expire.
pub(super) fn release_in_background<F>(release: F)
where
    F: Future<Output = Result<(), LockError>> + Send + 'static,
{
    in_background(async move {
        let _ = release.await;
    });
}
