//! The proof of holding a lock ([`Lease`]), the state a lease shares with its strategy's renewal
//! ([`LeaseState`]), and the options an acquire takes ([`AcquireOptions`], [`LeaseMode`]).

use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use tokio::sync::watch;

use crate::error::LockError;
use crate::event::{Events, LockEvent};

/// A fencing token: strictly increasing per key across all holders, so a protected resource can reject a
/// write from a holder that has been superseded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct FencingToken(pub u64);

impl fmt::Display for FencingToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// Who holds a lock, within one client. Two acquires with the same owner on the same client are the same
/// holder (re-entrant where the strategy supports it); Redisson's equivalent is the thread id.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct OwnerId(Arc<str>);

impl OwnerId {
    /// An owner with the given name.
    pub fn new(name: impl Into<Arc<str>>) -> Self {
        OwnerId(name.into())
    }

    /// A fresh owner nobody else has.
    pub fn unique() -> Self {
        OwnerId(format!("{:016x}", rand::random::<u64>()).into())
    }

    /// The owner's name.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for OwnerId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// How long a lease lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LeaseMode {
    /// Renewed until released: the strategy's own timeout is the TTL and something (a watchdog, a thread, a
    /// keep-alive, a session) keeps extending it (Redisson's `lock()` without a lease time).
    Watchdog,
    /// Expires after the given time and is never renewed (Redisson's `lock(leaseTime)`).
    Fixed(Duration),
}

/// Options for [`crate::Locker::acquire`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AcquireOptions {
    /// How long to wait for a held lock. `None` tries once.
    pub wait: Option<Duration>,
    /// Renewed or fixed lease.
    pub lease: LeaseMode,
    /// The holder's identity within the client; `None` makes every acquire a new owner.
    pub owner: Option<OwnerId>,
}

impl AcquireOptions {
    /// Try once, watchdog lease, fresh owner.
    pub fn try_once() -> Self {
        AcquireOptions {
            wait: None,
            lease: LeaseMode::Watchdog,
            owner: None,
        }
    }

    /// Wait up to `wait`, watchdog lease, fresh owner.
    pub fn wait(wait: Duration) -> Self {
        AcquireOptions {
            wait: Some(wait),
            ..Self::try_once()
        }
    }

    /// The same options with a fixed lease of `ttl`.
    pub fn fixed(self, ttl: Duration) -> Self {
        AcquireOptions {
            lease: LeaseMode::Fixed(ttl),
            ..self
        }
    }

    /// The same options with the given owner.
    pub fn owner(self, owner: OwnerId) -> Self {
        AcquireOptions {
            owner: Some(owner),
            ..self
        }
    }
}

/// Why a strategy believes a lease is gone.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum LossReason {
    /// The server answered a renewal with "not yours" (key deleted, expired or taken).
    RenewRejected,
    /// The conservative local deadline passed without a successful renewal (or a fixed lease ran out).
    Expired,
    /// The session (ZooKeeper) expired.
    SessionExpired,
    /// The lease was revoked or its keep-alive reported TTL ≤ 0 (etcd).
    LeaseRevoked,
    /// The renewal channel (keep-alive stream, connection, event subscription) ended.
    ChannelClosed(String),
    /// The lock was taken by another client (observed, for example, through a notification).
    TakenOver,
    /// The holder released it; a `lost()` future obtained before the last release resolves with this.
    Released,
}

impl fmt::Display for LossReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LossReason::RenewRejected => f.write_str("renewal rejected by the server"),
            LossReason::Expired => f.write_str("local deadline passed"),
            LossReason::SessionExpired => f.write_str("session expired"),
            LossReason::LeaseRevoked => f.write_str("lease revoked"),
            LossReason::ChannelClosed(why) => write!(f, "renewal channel closed: {why}"),
            LossReason::TakenOver => f.write_str("taken over by another client"),
            LossReason::Released => f.write_str("released by the holder"),
        }
    }
}

/// What a lease shares with the strategy that renews it: the conservative local deadline and the loss
/// signal. Re-entrant holds of one lock share one state.
///
/// The deadline only moves forward, and only by a renewal that the server confirmed; it is computed from
/// the time the request was *sent*, so it never claims more than the server granted.
pub struct LeaseState {
    key: Arc<str>,
    epoch: Instant,
    deadline_nanos: AtomicU64,
    lost: watch::Sender<Option<LossReason>>,
    events: Events,
}

impl fmt::Debug for LeaseState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LeaseState")
            .field("key", &self.key)
            .field("deadline", &self.deadline())
            .field("lost", &self.loss())
            .finish()
    }
}

impl LeaseState {
    /// A live lease on `key` whose local deadline is `deadline`. Losses are reported to `events`.
    pub fn new(key: Arc<str>, deadline: Instant, events: Events) -> Arc<Self> {
        let epoch = Instant::now();
        let state = LeaseState {
            key,
            epoch,
            deadline_nanos: AtomicU64::new(0),
            lost: watch::Sender::new(None),
            events,
        };
        state.extend_to(deadline);
        Arc::new(state)
    }

    /// The lock key.
    pub fn key(&self) -> &Arc<str> {
        &self.key
    }

    /// The conservative local deadline: the lease is certainly not held after it.
    pub fn deadline(&self) -> Instant {
        self.epoch + Duration::from_nanos(self.deadline_nanos.load(Ordering::Acquire))
    }

    /// Moves the deadline forward to `deadline` (never backward).
    pub fn extend_to(&self, deadline: Instant) {
        let nanos = deadline.saturating_duration_since(self.epoch).as_nanos();
        let nanos = u64::try_from(nanos).unwrap_or(u64::MAX);
        self.deadline_nanos.fetch_max(nanos, Ordering::AcqRel);
    }

    /// Records that the lease is gone. Only the first call counts (it emits [`LockEvent::Lost`], except for
    /// [`LossReason::Released`]); returns whether this call was it. The event is recorded before anyone
    /// waiting in [`LeaseState::wait_lost`] wakes, so a reader of the event log after `lost()` sees it.
    pub fn mark_lost(&self, reason: LossReason) -> bool {
        let detected_at = Instant::now();
        self.lost.send_if_modified(|slot| {
            if slot.is_some() {
                return false;
            }
            if reason != LossReason::Released {
                self.events.emit(|| LockEvent::Lost {
                    key: self.key.clone(),
                    detected_at,
                    reason: reason.clone(),
                });
            }
            *slot = Some(reason.clone());
            true
        })
    }

    /// The loss reason, if the lease is known to be gone.
    pub fn loss(&self) -> Option<LossReason> {
        self.lost.borrow().clone()
    }

    /// Not lost and the deadline not passed.
    pub fn is_held(&self) -> bool {
        self.lost.borrow().is_none() && Instant::now() < self.deadline()
    }

    /// Resolves when the lease is marked lost, or when the local deadline passes without an extension (then
    /// it marks the lease lost with [`LossReason::Expired`]).
    pub async fn wait_lost(&self) -> LossReason {
        let mut rx = self.lost.subscribe();
        loop {
            if let Some(reason) = rx.borrow_and_update().clone() {
                return reason;
            }
            let deadline = self.deadline();
            tokio::select! {
                // `self` owns the sender, so `changed` cannot fail while we are here.
                _ = rx.changed() => {}
                _ = tokio::time::sleep_until(deadline.into()) => {
                    if Instant::now() >= self.deadline() {
                        self.mark_lost(LossReason::Expired);
                    }
                }
            }
        }
    }
}

/// The strategy-specific part of a lease: how to release it and how to abandon it.
#[async_trait]
pub trait LeaseHandle: Send + Sync + fmt::Debug {
    /// Releases the hold on the server. Must stop renewal whatever the outcome. Returns
    /// [`LockError::NotHeld`] when the server says the caller no longer held it.
    async fn release(self: Box<Self>) -> Result<(), LockError>;

    /// Called from `Drop` without a release: stop renewal now, release in the background if possible.
    /// Must not block and must not panic, also outside a tokio runtime.
    fn abandon(self: Box<Self>);
}

/// The proof of holding a lock. Release it with [`Lease::release`]; dropping it stops renewal at once and
/// releases in the background.
#[derive(Debug)]
pub struct Lease {
    key: Arc<str>,
    owner: OwnerId,
    token: FencingToken,
    mode: LeaseMode,
    acquired_at: Instant,
    state: Arc<LeaseState>,
    handle: Option<Box<dyn LeaseHandle>>,
}

impl Lease {
    /// Assembles a lease. `sent_at` is when the acquire request that succeeded was sent; `state` carries the
    /// deadline computed from it.
    pub fn new(
        owner: OwnerId,
        token: FencingToken,
        mode: LeaseMode,
        sent_at: Instant,
        state: Arc<LeaseState>,
        handle: Box<dyn LeaseHandle>,
    ) -> Self {
        Lease {
            key: state.key().clone(),
            owner,
            token,
            mode,
            acquired_at: sent_at,
            state,
            handle: Some(handle),
        }
    }

    /// The lock key.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// The holder's owner id.
    pub fn owner(&self) -> &OwnerId {
        &self.owner
    }

    /// The fencing token (strictly increasing per key across holders).
    pub fn token(&self) -> FencingToken {
        self.token
    }

    /// The lease mode.
    pub fn mode(&self) -> LeaseMode {
        self.mode
    }

    /// When the acquire request that succeeded was sent (the base of the first deadline).
    pub fn acquired_at(&self) -> Instant {
        self.acquired_at
    }

    /// The conservative local deadline.
    pub fn deadline(&self) -> Instant {
        self.state.deadline()
    }

    /// The holder's local belief: not known lost and the deadline not passed.
    pub fn is_held(&self) -> bool {
        self.state.is_held()
    }

    /// Resolves (with the reason) once the strategy knows the lease is gone, or the local deadline passes.
    /// The future owns what it needs, so it can be spawned or raced against the guarded work.
    pub fn lost(&self) -> impl Future<Output = LossReason> + Send + 'static {
        let state = self.state.clone();
        async move { state.wait_lost().await }
    }

    /// The shared state (for strategies and instrumentation).
    pub fn state(&self) -> &Arc<LeaseState> {
        &self.state
    }

    /// Releases the lock. Renewal stops whatever the outcome; [`LockError::NotHeld`] means it had already
    /// expired or been taken.
    pub async fn release(mut self) -> Result<(), LockError> {
        match self.handle.take() {
            Some(handle) => handle.release().await,
            None => Err(LockError::NotHeld {
                key: self.key.to_string(),
            }),
        }
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        if let Some(handle) = self.handle.take() {
            handle.abandon();
        }
    }
}
