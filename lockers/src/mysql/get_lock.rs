//! `mysql-get-lock`: a user lock (`GET_LOCK(name, timeout)` / `RELEASE_LOCK(name)`) on the key's
//! name ([`super::lock_name`]: the key, or its SHA-256 when longer than a MySQL lock name
//! may be), held by the session of a connection kept for the hold.
//!
//! # Lock
//! Each hold has a connection of its own (taken from the client's idle connections, or opened): a user
//! lock belongs to the session, so the session is the lease. One statement takes the lock and, in the
//! same session right after the grant, bumps the key's fencing counter (`lockbench_fencing`), whose
//! new value comes back as the statement's insert id ([`LOCK`]). A try-once asks `GET_LOCK` with a
//! timeout of 0 (no row written: held by someone else); a wait asks it with the time left (the server
//! queues waiters and wakes one when the lock is freed; no row written when it ran out is our
//! `Timeout`). Release is `RELEASE_LOCK` (anything but 1: not ours, `NotHeld`), after which the
//! connection goes back to the idle ones.
//!
//! # Lease and loss
//! There is no TTL on the server: the lock lasts as long as the session. The holder learns that the
//! session is alive by asking it: about every renewal period (TTL/3) a `SELECT 1` on the hold's
//! connection moves the local deadline to its send time plus the TTL. The checks of a client's holds
//! are sent by its one renewal scheduler (`crate::batch_renewal`, one check per call, each on its own
//! connection). `lost()` resolves with `ChannelClosed` when a statement on the hold's connection finds
//! it ended (the server freed the lock when it ended the session); the client keeps no reader on an
//! idle connection, so a session the server ended shows at the next check, within a renewal period,
//! not at once as `postgres-advisory`'s does. `Expired` when no check answered before the deadline
//! (the server may still hold the lock for us, but we cannot know). Only [`LeaseMode::Watchdog`]
//! exists; a fixed lease is `Unsupported`.
//!
//! # Cancellation
//! An acquire dropped mid-statement drops its connection, which the client then closes: the server
//! ends the session and frees a lock it may have granted (a `GET_LOCK` still waiting is not
//! interrupted by the close: the server frees that lock as soon as it is granted and the session
//! reads the closed socket). A dropped lease unlocks in the background (or, without a runtime, closes
//! its connection).

use std::future::Future;
use std::sync::{Arc, Mutex, Weak};
use std::time::Instant;

use async_trait::async_trait;
use mysql_async::prelude::Queryable;

use super::connection::{
    BACKEND, Connection, FENCING_TABLE, MysqlConfig, ServerAddress, client_config, lock_name,
};
use crate::batch_renewal::{BatchRenewer, Unschedule};
use crate::error::LockError;
use crate::event::{Events, LockEvent};
use crate::lease::{
    AcquireOptions, FencingToken, Lease, LeaseHandle, LeaseMode, LeaseState, OwnerId,
};
use crate::locker::{Capabilities, Locker};
use crate::renewal::{RenewOutcome, RenewalPlan, in_background};

/// The strategy id.
pub const ID: &str = "mysql-get-lock";

/// Waits up to `?3` seconds (0: not at all) for the user lock `?2` and, once granted, bumps the
/// key's token (`?1` = `?2` = the lock name): one row written (affected rows 1 or 2) and the token
/// as the insert id, or nothing written when the lock stayed busy.
pub const LOCK: &str = "INSERT INTO lockbench_fencing (name, token) \
     SELECT ?, LAST_INSERT_ID(1) FROM DUAL WHERE GET_LOCK(?, ?) = 1 \
     ON DUPLICATE KEY UPDATE token = LAST_INSERT_ID(token + 1)";
/// Frees the user lock (1: freed; 0: another session's; NULL: nobody's).
pub const UNLOCK: &str = "SELECT RELEASE_LOCK(?)";
const CHECK: &str = "SELECT 1";

/// A connection for holds.
type Session = Connection;

/// The client's idle sessions.
type Idle = Arc<Mutex<Vec<Session>>>;

/// The check that a held lock's session is alive: `Extended` when it answers. A session already
/// given back (its hold released) is `NotHeld`, whose answer the scheduler ignores.
fn check(
    session: &Weak<Session>,
) -> impl Future<Output = Result<Vec<RenewOutcome>, LockError>> + Send + use<> {
    let session = session.upgrade();
    async move {
        let Some(session) = session else {
            return Err(LockError::NotHeld { key: String::new() });
        };
        match session
            .send("session check", |c| Box::pin(c.query_drop(CHECK)))
            .await
        {
            Ok(()) => Ok(vec![RenewOutcome::Extended {
                remaining_before: None,
            }]),
            // The session ended: its lease is lost already (`ChannelClosed`), no renewal failed.
            Err(_) if session.is_closed() => Ok(vec![RenewOutcome::Gone]),
            Err(e) => Err(e),
        }
    }
}

/// One client taking user locks (see the [module docs](self)).
#[derive(Debug)]
pub struct MysqlGetLock {
    client_config: ServerAddress,
    config: MysqlConfig,
    events: Events,
    idle: Idle,
    /// Checks the sessions of the client's holds; its task ends when the client is dropped.
    checks: BatchRenewer<Weak<Session>>,
}

impl MysqlGetLock {
    /// What every client of this strategy can do.
    pub const CAPABILITIES: Capabilities = Capabilities {
        reentrant: false,
        fencing: true,
        auto_renew: true,
        fixed_lease: false,
        wait_notify: true,
        lost_signal: true,
        hold_identity: true,
        min_ttl: std::time::Duration::from_millis(1),
        ttl_granularity: std::time::Duration::from_millis(1),
    };

    /// Connects to the server at `url` (`mysql://user[:pass]@host:port/db`) and checks that the
    /// fencing table exists. An unreachable server, a wrong password or an address that is not
    /// MySQL is a `Backend` error, a missing table a `Config` error saying what to create; no message
    /// contains the password.
    pub async fn connect(
        url: &str,
        config: MysqlConfig,
        events: Events,
    ) -> Result<Self, LockError> {
        let client_config = client_config(url, &config)?;
        let first = Session::open_checked(&client_config, FENCING_TABLE).await?;
        // One check per call: each hold's session is a connection of its own.
        let checks = BatchRenewer::start(
            RenewalPlan::from(config.renewal),
            1,
            events.clone(),
            BACKEND,
            |sessions: &[&Weak<Session>]| check(sessions[0]),
        );
        Ok(MysqlGetLock {
            client_config,
            config,
            events,
            idle: Arc::new(Mutex::new(vec![first])),
            checks,
        })
    }

    /// An idle session, or a new one.
    async fn session(&self) -> Result<Session, LockError> {
        loop {
            let idle = self
                .idle
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner())
                .pop();
            match idle {
                Some(session) if session.is_closed() => continue,
                Some(session) => return Ok(session),
                None => return Session::open(&self.client_config).await,
            }
        }
    }

    /// Takes the lock on `session`: its token, or `None` when someone else held it for the wait.
    async fn take(
        session: &Session,
        name: &str,
        give_up: Option<Instant>,
    ) -> Result<Option<u64>, LockError> {
        let seconds = give_up.map_or(0.0, |g| {
            g.saturating_duration_since(Instant::now()).as_secs_f64()
        });
        let name = name.to_owned();
        let (written, token) = session
            .send("lock", |c| {
                Box::pin(async move {
                    c.exec_drop(LOCK, (name.clone(), name, seconds)).await?;
                    Ok((c.affected_rows(), c.last_insert_id()))
                })
            })
            .await?;
        Ok((written > 0).then_some(token.unwrap_or(0)))
    }
}

#[async_trait]
impl Locker for MysqlGetLock {
    fn id(&self) -> &str {
        ID
    }

    fn capabilities(&self) -> Capabilities {
        Self::CAPABILITIES
    }

    async fn acquire(&self, key: &str, opts: &AcquireOptions) -> Result<Lease, LockError> {
        if let LeaseMode::Fixed(_) = opts.lease {
            return Err(LockError::Unsupported {
                strategy: ID,
                what: "fixed leases (a user lock lasts as long as its session)".into(),
            });
        }
        let started = Instant::now();
        let give_up = opts.wait.map(|w| started + w);
        let session = self.session().await?;
        let sent_at = Instant::now();
        // An error may come after the grant (the token's upsert): the session is then dropped, which
        // ends it on the server and frees the lock.
        let Some(token) = Self::take(&session, &lock_name(key), give_up).await? else {
            self.idle
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner())
                .push(session);
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
            std::time::Duration::ZERO,
        );
        let session = Arc::new(session);
        session.tie(state.clone());
        let checks = self
            .checks
            .schedule(Arc::downgrade(&session), state.clone(), sent_at);
        let handle = GetLockHold {
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
        Some(self.client_config.requests())
    }

    async fn close(&self) {
        self.checks.stop();
        self.idle
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .clear();
    }
}

/// One held user lock: its session and its place in the client's checks.
#[derive(Debug)]
struct GetLockHold {
    session: Option<Arc<Session>>,
    key: Arc<str>,
    state: Arc<LeaseState>,
    checks: Option<Unschedule<Weak<Session>>>,
    idle: Idle,
    events: Events,
}

impl GetLockHold {
    /// Unlocks on the session; the session goes back to the idle ones when the server confirmed it.
    async fn unlock(session: Arc<Session>, key: &str, idle: &Idle) -> Result<bool, LockError> {
        let name = lock_name(key);
        let freed: Option<Option<i64>> = session
            .send("unlock", |c| Box::pin(c.exec_first(UNLOCK, (name,))))
            .await?;
        let freed = freed.flatten() == Some(1);
        session.untie();
        if freed && let Ok(session) = Arc::try_unwrap(session) {
            idle.lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner())
                .push(session);
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
impl LeaseHandle for GetLockHold {
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
