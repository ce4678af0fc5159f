//! What the SQL strategies whose lock belongs to the server session (`postgres-advisory`,
//! `mysql-get-lock`) share: the client ([`SessionLock`]) that gives each hold a connection of its
//! own (an idle one, or a new one), takes the lock on it, has the client's one renewal scheduler
//! check that session every renewal period, and unlocks on release, after which the connection goes
//! back to the idle ones; over a database's own statements and connection (`SessionLocks`). Each
//! database's module says what its statements do and how its connection notices its end.

use std::future::Future;
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use async_trait::async_trait;

use crate::batch_renewal::{BatchRenewer, Unschedule};
use crate::error::LockError;
use crate::event::{Events, LockEvent};
use crate::lease::{
    AcquireOptions, FencingToken, Lease, LeaseHandle, LeaseMode, LeaseState, OwnerId,
};
use crate::locker::{Capabilities, Locker};
use crate::renewal::{RenewOutcome, RenewalPlan, in_background};
use crate::sql_config::SqlConfig;

/// A database's session locks as [`SessionLock`] uses them: its connections (the sessions that
/// hold the locks) and one statement each to take a lock, check a session and unlock.
#[async_trait]
pub(crate) trait SessionLocks: std::fmt::Debug + Send + Sync + 'static {
    /// The strategy id.
    const ID: &'static str;
    /// The backend named in check errors.
    const BACKEND: &'static str;
    /// What the lock is, as an `Unsupported` fixed lease names it ("an advisory lock").
    const LOCK: &'static str;
    /// A connection (a server session) with what the statements need on it.
    type Session: std::fmt::Debug + Send + Sync + 'static;

    /// Opens a connection to the client's server.
    async fn open(&self) -> Result<Self::Session, LockError>;

    /// Statements sent so far by the client.
    fn requests(&self) -> u64;

    /// Whether `session`'s connection has ended.
    fn is_closed(session: &Self::Session) -> bool;

    /// Ties `state` to `session`: lost when the connection ends.
    fn tie(session: &Self::Session, state: Arc<LeaseState>);

    /// Unties the lease [`SessionLocks::tie`] tied.
    fn untie(session: &Self::Session);

    /// Takes `key`'s lock on `session`, waiting until `give_up` (none: try once), and bumps its
    /// fencing token: the token, or `None` when someone else held it for the wait.
    async fn take(
        session: &Self::Session,
        key: &str,
        give_up: Option<Instant>,
    ) -> Result<Option<u64>, LockError>;

    /// Checks that `session` is alive: `Extended` when it answers.
    async fn check(session: &Self::Session) -> Result<RenewOutcome, LockError>;

    /// Unlocks `key` on `session`: whether it held it.
    async fn unlock(session: &Self::Session, key: &str) -> Result<bool, LockError>;
}

/// The client's idle sessions.
type Idle<S> = Arc<Mutex<Vec<S>>>;

fn lock_idle<S>(idle: &Idle<S>) -> std::sync::MutexGuard<'_, Vec<S>> {
    idle.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The check that a held lock's session is alive. A session already given back (its hold
/// released) is `NotHeld`, whose answer the scheduler ignores.
fn check<L: SessionLocks>(
    session: &Weak<L::Session>,
) -> impl Future<Output = Result<Vec<RenewOutcome>, LockError>> + Send + use<L> {
    let session = session.upgrade();
    async move {
        let Some(session) = session else {
            return Err(LockError::NotHeld { key: String::new() });
        };
        Ok(vec![L::check(&session).await?])
    }
}

/// One client taking session locks through `L` (see `postgres::advisory` and `mysql::get_lock`).
#[derive(Debug)]
// Sealed: callers name a database's alias (`PostgresAdvisory`, …), never the crate-private trait.
#[allow(private_bounds)]
pub struct SessionLock<L: SessionLocks> {
    locks: L,
    config: SqlConfig,
    events: Events,
    idle: Idle<L::Session>,
    /// Checks the sessions of the client's holds; its task ends when the client is dropped.
    checks: BatchRenewer<Weak<L::Session>>,
}

// Sealed: callers name a database's alias (`PostgresAdvisory`, …), never the crate-private trait.
#[allow(private_bounds)]
impl<L: SessionLocks> SessionLock<L> {
    /// What every client of a session-lock strategy can do.
    pub const CAPABILITIES: Capabilities = Capabilities {
        reentrant: false,
        fencing: true,
        auto_renew: true,
        fixed_lease: false,
        wait_notify: true,
        lost_signal: true,
        hold_identity: true,
        min_ttl: Duration::from_millis(1),
        ttl_granularity: Duration::from_millis(1),
    };

    /// The client of `locks`, with `first` as its first idle session; starts its checks.
    pub(crate) fn start(locks: L, first: L::Session, config: SqlConfig, events: Events) -> Self {
        // One check per call: each hold's session is a connection of its own.
        let checks = BatchRenewer::start(
            RenewalPlan::from(config.renewal),
            1,
            events.clone(),
            L::BACKEND,
            |sessions: &[&Weak<L::Session>]| check::<L>(sessions[0]),
        );
        SessionLock {
            locks,
            config,
            events,
            idle: Arc::new(Mutex::new(vec![first])),
            checks,
        }
    }

    /// An idle session, or a new one.
    async fn session(&self) -> Result<L::Session, LockError> {
        loop {
            let idle = lock_idle(&self.idle).pop();
            match idle {
                Some(session) if L::is_closed(&session) => continue,
                Some(session) => return Ok(session),
                None => return self.locks.open().await,
            }
        }
    }
}

#[async_trait]
impl<L: SessionLocks> Locker for SessionLock<L> {
    fn id(&self) -> &str {
        L::ID
    }

    fn capabilities(&self) -> Capabilities {
        Self::CAPABILITIES
    }

    async fn acquire(&self, key: &str, opts: &AcquireOptions) -> Result<Lease, LockError> {
        if let LeaseMode::Fixed(_) = opts.lease {
            return Err(LockError::Unsupported {
                strategy: L::ID,
                what: format!("fixed leases ({} lasts as long as its session)", L::LOCK),
            });
        }
        let started = Instant::now();
        let give_up = opts.wait.map(|w| started + w);
        let session = self.session().await?;
        let sent_at = Instant::now();
        // An error may come after the grant (the token's upsert): the session is then dropped, which
        // ends it on the server and frees the lock.
        let Some(token) = L::take(&session, key, give_up).await? else {
            lock_idle(&self.idle).push(session);
            return Err(LockError::Timeout {
                key: key.to_owned(),
                waited: started.elapsed(),
            });
        };
        let key: Arc<str> = key.into();
        let token = FencingToken(token);
        self.events.emit(|| LockEvent::Acquired {
            key: key.clone(),
            token,
            mode: opts.lease,
            sent_at,
            at: Instant::now(),
        });
        let state = LeaseState::in_table(
            self.checks.lease_table(),
            key.clone(),
            sent_at + self.config.renewal.ttl,
            self.events.clone(),
            Duration::ZERO,
        );
        let session = Arc::new(session);
        L::tie(&session, state.clone());
        let checks = self
            .checks
            .schedule(Arc::downgrade(&session), state.clone(), sent_at);
        let handle = SessionHold::<L> {
            session: Some(session),
            key: key.clone(),
            state: state.clone(),
            checks: Some(checks),
            idle: self.idle.clone(),
            events: self.events.clone(),
        };
        Ok(Lease::new(
            opts.owner.clone().unwrap_or_else(OwnerId::unique),
            token,
            opts.lease,
            sent_at,
            state,
            Box::new(handle),
        ))
    }

    fn requests_sent(&self) -> Option<u64> {
        Some(self.locks.requests())
    }

    async fn close(&self) {
        self.checks.stop();
        lock_idle(&self.idle).clear();
    }
}

/// One held lock: its session and its place in the client's checks.
#[derive(Debug)]
struct SessionHold<L: SessionLocks> {
    session: Option<Arc<L::Session>>,
    key: Arc<str>,
    state: Arc<LeaseState>,
    checks: Option<Unschedule<Weak<L::Session>>>,
    idle: Idle<L::Session>,
    events: Events,
}

impl<L: SessionLocks> SessionHold<L> {
    /// Unlocks on the session; the session goes back to the idle ones when the server confirmed it.
    async fn unlock(
        session: Arc<L::Session>,
        key: &str,
        idle: &Idle<L::Session>,
    ) -> Result<bool, LockError> {
        let freed = L::unlock(&session, key).await?;
        L::untie(&session);
        if freed && let Ok(session) = Arc::try_unwrap(session) {
            lock_idle(idle).push(session);
        }
        Ok(freed)
    }

    /// Takes the hold out of the client's checks.
    fn stop_checks(&mut self) {
        if let Some(checks) = self.checks.take() {
            checks.stop();
        }
    }
}

#[async_trait]
impl<L: SessionLocks> LeaseHandle for SessionHold<L> {
    async fn release(mut self: Box<Self>) -> Result<(), LockError> {
        self.stop_checks();
        let live = self.state.mark_released();
        let not_held = || LockError::NotHeld {
            key: self.key.to_string(),
        };
        let Some(session) = self.session.take() else {
            return Err(not_held());
        };
        // Lost: the session is gone or unknown; dropping it closes it.
        if !live || !Self::unlock(session, &self.key, &self.idle).await? {
            return Err(not_held());
        }
        self.events.emit(|| LockEvent::Released {
            key: self.key.clone(),
            at: Instant::now(),
        });
        Ok(())
    }

    fn abandon(mut self: Box<Self>) {
        self.stop_checks();
        let live = self.state.mark_released();
        let Some(session) = self.session.take() else {
            return;
        };
        if !live {
            return;
        }
        // Without a runtime the session is dropped here, which closes it: the server frees the lock.
        in_background(async move {
            if let Ok(true) = Self::unlock(session, &self.key, &self.idle).await {
                self.events.emit(|| LockEvent::Released {
                    key: self.key.clone(),
                    at: Instant::now(),
                });
            }
        });
    }
}
