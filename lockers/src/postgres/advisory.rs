//! `postgres-advisory`: a session-level advisory lock (`pg_try_advisory_lock` /
//! `pg_advisory_lock` on `hashtextextended(key, 0)`), held on a connection kept for the hold.
//!
//! # Lock
//! Each hold has a connection of its own (taken from the client's idle connections, or opened): an
//! advisory lock belongs to the session, so the session is the lease. One statement takes the lock
//! and, in the same session right after the grant, bumps the key's fencing counter
//! (`lockbench_fencing`) and returns it: a try-once uses `pg_try_advisory_lock` (no row: held by
//! someone else), a wait uses `pg_advisory_lock` under `lock_timeout` = the time left (the server
//! queues waiters and wakes the next one when the lock is freed; `lock_not_available` is our
//! `Timeout`). Release is `pg_advisory_unlock` (false: not held, `NotHeld`), after which the connection
//! goes back to the idle ones.
//!
//! # Lease and loss
//! There is no TTL on the server: the lock lasts as long as the session. The holder learns that the
//! session is alive by asking it: about every renewal period (TTL/3) a `SELECT 1` on the hold's
//! connection moves the local deadline to its send time plus the TTL. The checks of a client's holds
//! are sent by its one renewal scheduler (`crate::batch_renewal`, one check per call, each on its own
//! connection), so taking and freeing a lock spawns no task. `lost()` resolves as soon as the
//! connection ends (`ChannelClosed`, marked by the connection's own task: the server freed the lock
//! when it saw the session go), or when no check answered before the deadline (`Expired`: the server
//! may still hold the lock for us, but we cannot know). Only [`LeaseMode::Watchdog`] exists; a fixed lease is
//! `Unsupported`.
//!
//! # Cancellation
//! An acquire dropped mid-statement drops its connection: the socket closes and the server ends the
//! session, freeing a lock it may have granted; a session still waiting notices within
//! `client_connection_check_interval` (250 ms). A dropped lease unlocks in the background (or, without
//! a runtime, closes its connection).

use std::future::Future;
use std::sync::{Arc, Mutex, Weak};
use std::time::Instant;

use async_trait::async_trait;
use tokio_postgres::Statement;

use super::connection::{
    BACKEND, Connection, FENCING_TABLE, PostgresConfig, ServerAddress, client_config,
    is_lock_timeout, pg_error, timeout_setting,
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
pub const ID: &str = "postgres-advisory";

/// Takes the lock if free and bumps the key's token (no row: busy).
pub const TRY_LOCK: &str = "WITH l AS (SELECT pg_try_advisory_lock(hashtextextended($1, 0)) AS ok) \
     INSERT INTO lockbench_fencing AS f (key, token) SELECT $1, 1 FROM l WHERE l.ok \
     ON CONFLICT (key) DO UPDATE SET token = f.token + 1 RETURNING f.token";
/// Waits for the lock (at most `lock_timeout` = $2) and bumps the key's token.
const LOCK: &str = "WITH l AS (SELECT set_config('lock_timeout', $2, false), \
     pg_advisory_lock(hashtextextended($1, 0))) \
     INSERT INTO lockbench_fencing AS f (key, token) SELECT $1, 1 FROM l \
     ON CONFLICT (key) DO UPDATE SET token = f.token + 1 RETURNING f.token";
/// Frees the lock (false: this session did not hold it).
pub const UNLOCK: &str = "SELECT pg_advisory_unlock(hashtextextended($1, 0))";
const CHECK: &str = "SELECT 1";

/// A connection with this strategy's statements prepared on it.
#[derive(Debug)]
struct Session {
    connection: Connection,
    try_lock: Statement,
    lock: Statement,
    unlock: Statement,
    check: Statement,
}

impl Session {
    async fn open(config: &ServerAddress) -> Result<Self, LockError> {
        let (connection, [try_lock, lock, unlock, check]) =
            Connection::open_prepared(config, FENCING_TABLE, [TRY_LOCK, LOCK, UNLOCK, CHECK])
                .await?;
        Ok(Session {
            connection,
            try_lock,
            lock,
            unlock,
            check,
        })
    }
}

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
        session
            .connection
            .sending()
            .query_one(&session.check, &[])
            .await
            .map_err(|e| pg_error("session check", &e))?;
        Ok(vec![RenewOutcome::Extended {
            remaining_before: None,
        }])
    }
}

/// One client taking advisory locks (see the [module docs](self)).
#[derive(Debug)]
pub struct PostgresAdvisory {
    client_config: ServerAddress,
    config: PostgresConfig,
    events: Events,
    idle: Idle,
    /// Checks the sessions of the client's holds; its task ends when the client is dropped.
    checks: BatchRenewer<Weak<Session>>,
}

impl PostgresAdvisory {
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

    /// Connects to the server at `url` (`postgres://user[:pass]@host:port/db`) and checks that the
    /// fencing table exists. An unreachable server or a wrong password is a `Backend` error, a
    /// missing table a `Config` error saying what to create; neither message contains the password.
    pub async fn connect(
        url: &str,
        config: PostgresConfig,
        events: Events,
    ) -> Result<Self, LockError> {
        let client_config = client_config(url, &config)?;
        let first = Session::open(&client_config).await?;
        // One check per call: each hold's session is a connection of its own.
        let checks = BatchRenewer::start(
            RenewalPlan::from(config.renewal),
            1,
            events.clone(),
            BACKEND,
            |sessions: &[&Weak<Session>]| check(sessions[0]),
        );
        Ok(PostgresAdvisory {
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
                Some(session) if session.connection.is_closed() => continue,
                Some(session) => return Ok(session),
                None => return Session::open(&self.client_config).await,
            }
        }
    }

    /// Takes the lock on `session`: its token, or `None` when someone else holds it for the wait.
    async fn take(
        &self,
        session: &Session,
        key: &str,
        give_up: Option<Instant>,
    ) -> Result<Option<u64>, LockError> {
        let client = session.connection.sending();
        let left = give_up.map(|g| g.saturating_duration_since(Instant::now()));
        let rows = match left {
            Some(left) if !left.is_zero() => {
                let setting = timeout_setting(left);
                match client.query(&session.lock, &[&key, &setting]).await {
                    Err(e) if is_lock_timeout(&e) => return Ok(None),
                    other => other,
                }
            }
            _ => client.query(&session.try_lock, &[&key]).await,
        }
        .map_err(|e| pg_error("lock", &e))?;
        Ok(rows.first().map(|row| row.get::<_, i64>(0).unsigned_abs()))
    }
}

#[async_trait]
impl Locker for PostgresAdvisory {
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
                what: "fixed leases (an advisory lock lasts as long as its session)".into(),
            });
        }
        let started = Instant::now();
        let give_up = opts.wait.map(|w| started + w);
        let session = self.session().await?;
        let sent_at = Instant::now();
        // An error may come after the grant (the token's upsert): the session is then dropped, which
        // ends it on the server and frees the lock.
        let Some(token) = self.take(&session, key, give_up).await? else {
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
        session.connection.tie(state.clone());
        let checks = self
            .checks
            .schedule(Arc::downgrade(&session), state.clone(), sent_at);
        let handle = AdvisoryHold {
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

/// One held advisory lock: its session and its place in the client's checks.
#[derive(Debug)]
struct AdvisoryHold {
    session: Option<Arc<Session>>,
    key: Arc<str>,
    state: Arc<LeaseState>,
    checks: Option<Unschedule<Weak<Session>>>,
    idle: Idle,
    events: Events,
}

impl AdvisoryHold {
    /// Unlocks on the session; the session goes back to the idle ones when the server confirmed it.
    async fn unlock(session: Arc<Session>, key: &str, idle: &Idle) -> Result<bool, LockError> {
        let row = session
            .connection
            .sending()
            .query_one(&session.unlock, &[&key])
            .await
            .map_err(|e| pg_error("unlock", &e))?;
        let freed: bool = row.get(0);
        session.connection.untie();
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
impl LeaseHandle for AdvisoryHold {
    async fn release(mut self: Box<Self>) -> Result<(), LockError> {
        self.stop_checks();
        let live = self.state.mark_released();
        let Some(session) = self.session.take() else {
            return Err(LockError::NotHeld {
                key: self.key.to_string(),
            });
        };
        if !live {
            // Lost: the session is gone or unknown; dropping it closes it.
            return Err(LockError::NotHeld {
                key: self.key.to_string(),
            });
        }
        if !Self::unlock(session, &self.key, &self.idle).await? {
            return Err(LockError::NotHeld {
                key: self.key.to_string(),
            });
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
