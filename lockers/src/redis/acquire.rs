//! What the Redis strategies' acquires and leases share: what every one of them can do, reading a request
//! (the lease's TTL, the owner, how long to wait), ending a wait with [`LockError::Timeout`], the
//! try-subscribe-retry loop of the strategies whose waiters are woken by unlock messages
//! ([`Request::until_granted`]), registering a granted hold and building its lease, and releasing a dropped
//! lease in the background.

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::keys::LockKeys;
use super::scripts::{Attempt, LuaScript, ttl_millis, unexpected};
use super::transport::connection::BACKEND;
use super::transport::pubsub::{PubSub, Subscription};
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
    /// Reads `opts` for lock `key` under `prefix`, with the keys [`LockKeys::new`] names; a zero fixed
    /// lease or an empty key is a `Config` error.
    pub(super) fn new(
        prefix: &str,
        key: &str,
        opts: &AcquireOptions,
        watchdog_timeout: Duration,
    ) -> Result<Self, LockError> {
        Self::named(prefix, key, opts, watchdog_timeout, LockKeys::new)
    }

    /// As [`Self::new`], with the keys `keys` names (a strategy whose channel is named otherwise).
    pub(super) fn named(
        prefix: &str,
        key: &str,
        opts: &AcquireOptions,
        watchdog_timeout: Duration,
        keys: fn(&str, &str) -> Result<LockKeys, LockError>,
    ) -> Result<Self, LockError> {
        let ttl = match opts.lease {
            LeaseMode::Watchdog => watchdog_timeout,
            LeaseMode::Fixed(d) if d.is_zero() => {
                return Err(LockError::Config("fixed lease must be > 0".into()));
            }
            LeaseMode::Fixed(d) => d,
        };
        let keys = Arc::new(keys(prefix, key)?);
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

    /// Tries until an attempt is granted, the way Redisson's `tryLock(wait)` does: try; on the first miss
    /// subscribe to the lock's unlock channel (`waiters`), wait for the server to confirm it (within
    /// `confirm`), and try again at once, so an unlock between the miss and the subscription is caught by
    /// that retry; on every later miss sleep until an unlock message, the holder's remaining time
    /// (`holder_left` of the PTTL the miss answered; `None`: no bound but the wait's end) or the wait's
    /// end. The wake-up is armed before each attempt, so an unlock published while it runs still wakes.
    /// `attempt(subscribed)` makes one attempt; an error ends the acquire with that error, and a miss past
    /// the wait's end ends it with `Timeout`. Answers the granted token and when its attempt was sent.
    pub(super) async fn until_granted<Try, Sent>(
        &self,
        waiters: &PubSub,
        confirm: ConfirmWithin,
        holder_left: impl Fn(i64) -> Option<Duration>,
        mut attempt: Try,
    ) -> Result<(FencingToken, Instant), LockError>
    where
        Try: FnMut(bool) -> Sent,
        Sent: Future<Output = Result<Attempt, LockError>>,
    {
        let mut subscription: Option<Subscription> = None;
        loop {
            // Armed before the attempt: an unlock published while it runs still wakes us.
            let wakeup = subscription.as_ref().map(Subscription::arm);
            let sent = attempt(subscription.is_some());
            let sent_at = Instant::now();
            let pttl = match sent.await? {
                Attempt::Acquired(token) => return Ok((token, sent_at)),
                Attempt::Busy(pttl) => pttl,
            };
            let now = Instant::now();
            let give_up = self.keep_waiting(now)?;
            let until = holder_left(pttl).map_or(give_up, |left| (now + left).min(give_up));
            match wakeup {
                Some(wakeup) => {
                    tokio::select! {
                        _ = wakeup => {}
                        _ = tokio::time::sleep_until(until.into()) => {}
                    }
                }
                None => {
                    // First miss: subscribe, then retry at once once confirmed (or the bound passed).
                    let joined = subscription.insert(waiters.wait_on(&self.keys.channel));
                    let within = match confirm {
                        ConfirmWithin::HolderLeft => until,
                        ConfirmWithin::Wait => give_up,
                    };
                    let _ = tokio::time::timeout_at(within.into(), joined.confirmed()).await;
                }
            }
        }
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

/// How long a waiter's first miss waits for the server to confirm its subscription before it tries again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum ConfirmWithin {
    /// Until the holder's remaining time (or the wait's end, if sooner): `redis-watchdog`.
    HolderLeft,
    /// Until the wait's end (Redisson awaits the subscription within the wait).
    Wait,
}

/// Reads the answer of a hash lock's release script (`redis-watchdog`'s and Redisson's alike): 1 freed the
/// lock (reported as `Released`: `Ok(true)`), 0 left re-entrant holds (`Ok(false)`), -1 found no hold of
/// the owner (`NotHeld`).
pub(super) fn hash_released(
    script: &LuaScript,
    answer: i64,
    keys: &LockKeys,
    events: &Events,
) -> Result<bool, LockError> {
    match answer {
        1 => {
            events.emit(|| LockEvent::Released {
                key: keys.name.clone(),
                at: Instant::now(),
            });
            Ok(true)
        }
        0 => Ok(false),
        -1 => Err(LockError::NotHeld {
            key: keys.name.to_string(),
        }),
        other => Err(unexpected(script, &[other])),
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
