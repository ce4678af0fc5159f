//! The value types of the contract: who holds ([`OwnerId`]), what a holder proves ([`FencingToken`]), what
//! an acquire asks for ([`AcquireOptions`], [`LeaseMode`]) and why a lease is gone ([`LossReason`]). They
//! sit below the events and the lease, which both speak of them.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

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
        }
    }
}
