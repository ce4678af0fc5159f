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
//! (the server may still hold the lock for us, but we cannot know). Only [`LeaseMode::Watchdog`](crate::LeaseMode::Watchdog)
//! exists; a fixed lease is `Unsupported`.
//!
//! # Cancellation
//! An acquire dropped mid-statement drops its connection, which the client then closes: the server
//! ends the session and frees a lock it may have granted (a `GET_LOCK` still waiting is not
//! interrupted by the close: the server frees that lock as soon as it is granted and the session
//! reads the closed socket). A dropped lease unlocks in the background (or, without a runtime, closes
//! its connection).

use std::sync::Arc;
use std::time::Instant;

use async_trait::async_trait;
use mysql_async::prelude::Queryable;

use super::connection::{
    BACKEND, Connection, FENCING_TABLE, MysqlConfig, ServerAddress, client_config, lock_name,
};
use crate::error::LockError;
use crate::event::Events;
use crate::lease::LeaseState;
use crate::renewal::RenewOutcome;
use crate::sql_session_lock::{SessionLock, SessionLocks};

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

/// One client taking user locks (see the [module docs](self)).
pub type MysqlGetLock = SessionLock<UserLocks>;

/// The user locks of one `mysql-get-lock` client: where its sessions connect.
#[derive(Debug)]
pub struct UserLocks {
    client_config: ServerAddress,
}

#[async_trait]
impl SessionLocks for UserLocks {
    const ID: &'static str = ID;
    const BACKEND: &'static str = BACKEND;
    const LOCK: &'static str = "a user lock";
    type Session = Connection;

    async fn open(&self) -> Result<Connection, LockError> {
        Connection::open_checked(&self.client_config, FENCING_TABLE).await
    }

    fn requests(&self) -> u64 {
        self.client_config.requests()
    }

    fn is_closed(session: &Connection) -> bool {
        session.is_closed()
    }

    fn tie(session: &Connection, state: Arc<LeaseState>) {
        session.tie(state);
    }

    fn untie(session: &Connection) {
        session.untie();
    }

    async fn take(
        session: &Connection,
        key: &str,
        give_up: Option<Instant>,
    ) -> Result<Option<u64>, LockError> {
        let seconds = give_up.map_or(0.0, |g| {
            g.saturating_duration_since(Instant::now()).as_secs_f64()
        });
        let name = lock_name(key);
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

    async fn check(session: &Connection) -> Result<RenewOutcome, LockError> {
        match session
            .send("session check", |c| Box::pin(c.query_drop(CHECK)))
            .await
        {
            Ok(()) => Ok(RenewOutcome::Extended {
                remaining_before: None,
            }),
            // The session ended: its lease is lost already (`ChannelClosed`), no renewal failed.
            Err(_) if session.is_closed() => Ok(RenewOutcome::Gone),
            Err(e) => Err(e),
        }
    }

    async fn unlock(session: &Connection, key: &str) -> Result<bool, LockError> {
        let name = lock_name(key);
        let freed: Option<Option<i64>> = session
            .send("unlock", |c| Box::pin(c.exec_first(UNLOCK, (name,))))
            .await?;
        Ok(freed.flatten() == Some(1))
    }
}

impl MysqlGetLock {
    /// Connects to the server at `url` (`mysql://user[:pass]@host:port/db`) and checks that the
    /// fencing table exists. An unreachable server, a wrong password or an address that is not
    /// MySQL is a `Backend` error, a missing table a `Config` error saying what to create; no message
    /// contains the password.
    pub async fn connect(
        url: &str,
        config: MysqlConfig,
        events: Events,
    ) -> Result<Self, LockError> {
        let locks = UserLocks {
            client_config: client_config(url, &config)?,
        };
        let first = locks.open().await?;
        Ok(SessionLock::start(locks, first, config, events))
    }
}
