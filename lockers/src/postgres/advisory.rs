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
//! may still hold the lock for us, but we cannot know). Only [`LeaseMode::Watchdog`](crate::LeaseMode::Watchdog) exists; a fixed lease is
//! `Unsupported`.
//!
//! # Cancellation
//! An acquire dropped mid-statement drops its connection: the socket closes and the server ends the
//! session, freeing a lock it may have granted; a session still waiting notices within
//! `client_connection_check_interval` (250 ms). A dropped lease unlocks in the background (or, without
//! a runtime, closes its connection).

use std::time::Instant;

use async_trait::async_trait;
use tokio_postgres::Statement;

use super::connection::{
    BACKEND, Connection, FENCING_TABLE, PostgresConfig, ServerAddress, client_config,
    is_lock_timeout, pg_error, timeout_setting,
};
use crate::error::LockError;
use crate::event::Events;
use crate::lease::LeaseState;
use crate::renewal::RenewOutcome;
use crate::sql_session_lock::{SessionLock, SessionLocks};
use std::sync::Arc;

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

/// One client taking advisory locks (see the [module docs](self)).
pub type PostgresAdvisory = SessionLock<AdvisoryLocks>;

/// A connection with this strategy's statements prepared on it.
#[derive(Debug)]
pub struct AdvisorySession {
    connection: Connection,
    try_lock: Statement,
    lock: Statement,
    unlock: Statement,
    check: Statement,
}

/// The advisory locks of one `postgres-advisory` client: where its sessions connect.
#[derive(Debug)]
pub struct AdvisoryLocks {
    client_config: ServerAddress,
}

#[async_trait]
impl SessionLocks for AdvisoryLocks {
    const ID: &'static str = ID;
    const BACKEND: &'static str = BACKEND;
    const LOCK: &'static str = "an advisory lock";
    type Session = AdvisorySession;

    async fn open(&self) -> Result<AdvisorySession, LockError> {
        let (connection, [try_lock, lock, unlock, check]) = Connection::open_prepared(
            &self.client_config,
            FENCING_TABLE,
            [TRY_LOCK, LOCK, UNLOCK, CHECK],
        )
        .await?;
        Ok(AdvisorySession {
            connection,
            try_lock,
            lock,
            unlock,
            check,
        })
    }

    fn requests(&self) -> u64 {
        self.client_config.requests()
    }

    fn is_closed(session: &AdvisorySession) -> bool {
        session.connection.is_closed()
    }

    fn tie(session: &AdvisorySession, state: Arc<LeaseState>) {
        session.connection.tie(state);
    }

    fn untie(session: &AdvisorySession) {
        session.connection.untie();
    }

    async fn take(
        session: &AdvisorySession,
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

    async fn check(session: &AdvisorySession) -> Result<RenewOutcome, LockError> {
        session
            .connection
            .sending()
            .query_one(&session.check, &[])
            .await
            .map_err(|e| pg_error("session check", &e))?;
        Ok(RenewOutcome::Extended {
            remaining_before: None,
        })
    }

    async fn unlock(session: &AdvisorySession, key: &str) -> Result<bool, LockError> {
        let row = session
            .connection
            .sending()
            .query_one(&session.unlock, &[&key])
            .await
            .map_err(|e| pg_error("unlock", &e))?;
        Ok(row.get(0))
    }
}

impl PostgresAdvisory {
    /// Connects to the server at `url` (`postgres://user[:pass]@host:port/db`) and checks that the
    /// fencing table exists. An unreachable server or a wrong password is a `Backend` error, a
    /// missing table a `Config` error saying what to create; neither message contains the password.
    pub async fn connect(
        url: &str,
        config: PostgresConfig,
        events: Events,
    ) -> Result<Self, LockError> {
        let locks = AdvisoryLocks {
            client_config: client_config(url, &config)?,
        };
        let first = locks.open().await?;
        Ok(SessionLock::start(locks, first, config, events))
    }
}
