//! `postgres-lease`: a lease row per lock key (`lockbench_leases`), taken, renewed and freed by one
//! statement each, on the server's clock.
//!
//! # Lock
//! `INSERT … ON CONFLICT (key) DO UPDATE … WHERE expires_at < now()` either creates the key's row or
//! takes over an expired one, setting `expires_at = now() + TTL` and bumping the row's token, which is
//! the fencing token (a row is never deleted, so the token of a key only grows); no row back means
//! someone else holds it. A waiting acquire tries again every
//! [`poll_interval`](super::PostgresConfig::poll_interval): a row wakes nobody (`wait_notify: false`).
//!
//! # Lease and loss
//! A [`LeaseMode::Watchdog`] lease is renewed every TTL/3 by the renewal machinery (`UPDATE … SET
//! expires_at = now() + TTL WHERE key = … AND token = … AND expires_at >= now()`; no row: `Gone`, the
//! lease is lost with `RenewRejected`). A [`LeaseMode::Fixed`] lease is never renewed and is lost at
//! its local deadline. The local deadline counts from the time the statement was sent, so it never
//! claims more than the server's clock granted (on that clock, the lease may outlive it by a round
//! trip). Release sets `expires_at = '-infinity'` on our token if it is still live (no row:
//! `NotHeld`); a stale release names its token, so it never frees a newer hold.
//!
//! # Connection
//! One connection per client, shared by its acquires, renewals and releases (pipelined), opened again
//! when it has ended. Its `application_name` is `lockbench <client id>`, and a row's holder is
//! `<client id>:<owner>`, so the server can tell which session holds a row ([`holder_sessions`](super::holder_sessions)).

use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use tokio::sync::Mutex;
use tokio_postgres::Statement;
use tokio_postgres::types::ToSql;

use super::connection::{
    Connection, LEASE_TABLE, PostgresConfig, ServerAddress, client_config, pg_error,
};
use crate::error::LockError;
use crate::event::{Events, LockEvent};
use crate::lease::{
    AcquireOptions, FencingToken, Lease, LeaseHandle, LeaseMode, LeaseState, OwnerId,
    notice_allowance,
};
use crate::locker::{Capabilities, Locker};
use crate::renewal::{RenewOutcome, RenewalPlan, in_background, renew_until_lost};

/// The strategy id.
pub const ID: &str = "postgres-lease";

/// Takes the key's row if it is free or expired, bumping its token (no row: busy). `$3`: the TTL in
/// seconds.
pub const ACQUIRE: &str = "INSERT INTO lockbench_leases AS l (key, holder, token, expires_at) \
     VALUES ($1, $2, 1, now() + make_interval(secs => $3)) \
     ON CONFLICT (key) DO UPDATE SET holder = EXCLUDED.holder, token = l.token + 1, \
     expires_at = EXCLUDED.expires_at WHERE l.expires_at < now() RETURNING l.token";
const RENEW: &str = "UPDATE lockbench_leases SET expires_at = now() + make_interval(secs => $3) \
     WHERE key = $1 AND token = $2 AND expires_at >= now()";
/// Frees our row (`$2`: our token) if it is still live (no row: not held).
pub const RELEASE: &str = "UPDATE lockbench_leases SET expires_at = '-infinity' \
     WHERE key = $1 AND token = $2 AND expires_at >= now()";

/// The client's connection with this strategy's statements prepared on it.
#[derive(Debug)]
struct Session {
    connection: Connection,
    acquire: Statement,
    renew: Statement,
    release: Statement,
}

impl Session {
    async fn open(config: &ServerAddress) -> Result<Arc<Self>, LockError> {
        let (connection, [acquire, renew, release]) =
            Connection::open_prepared(config, LEASE_TABLE, [ACQUIRE, RENEW, RELEASE]).await?;
        Ok(Arc::new(Session {
            connection,
            acquire,
            renew,
            release,
        }))
    }

    /// Runs an `UPDATE` of our row with `params`: whether it touched it.
    async fn update(
        &self,
        statement: &Statement,
        params: &[&(dyn ToSql + Sync)],
        what: &str,
    ) -> Result<bool, LockError> {
        self.connection
            .sending()
            .execute(statement, params)
            .await
            .map(|n| n == 1)
            .map_err(|e| pg_error(what, &e))
    }
}

/// The client's connection, opened again when it has ended.
#[derive(Debug)]
struct Sessions {
    config: ServerAddress,
    current: Mutex<Arc<Session>>,
}

impl Sessions {
    async fn get(&self) -> Result<Arc<Session>, LockError> {
        let mut current = self.current.lock().await;
        if current.connection.is_closed() {
            *current = Session::open(&self.config).await?;
        }
        Ok(current.clone())
    }
}

/// One client taking lease rows (see the [module docs](self)).
#[derive(Debug)]
pub struct PostgresLease {
    sessions: Arc<Sessions>,
    config: PostgresConfig,
    events: Events,
    client_id: String,
}

impl PostgresLease {
    /// What every client of this strategy can do.
    pub const CAPABILITIES: Capabilities = Capabilities {
        reentrant: false,
        fencing: true,
        auto_renew: true,
        fixed_lease: true,
        wait_notify: false,
        lost_signal: true,
        hold_identity: true,
        min_ttl: Duration::from_millis(1),
        ttl_granularity: Duration::from_micros(1),
    };

    /// Connects to the server at `url` (`postgres://user[:pass]@host:port/db`) and checks that the
    /// lease table exists. An unreachable server or a wrong password is a `Backend` error, a missing
    /// table a `Config` error saying what to create; neither message contains the password.
    pub async fn connect(
        url: &str,
        config: PostgresConfig,
        events: Events,
    ) -> Result<Self, LockError> {
        let client_id = format!("{:08x}", rand::random::<u32>());
        // The server names the client's connection as its rows name their holder.
        let client_config = client_config(url, &config)?.named(&client_id);
        let first = Session::open(&client_config).await?;
        Ok(PostgresLease {
            sessions: Arc::new(Sessions {
                config: client_config,
                current: Mutex::new(first),
            }),
            config,
            events,
            client_id,
        })
    }
}

#[async_trait]
impl Locker for PostgresLease {
    fn id(&self) -> &str {
        ID
    }

    fn capabilities(&self) -> Capabilities {
        Self::CAPABILITIES
    }

    fn requests_sent(&self) -> Option<u64> {
        Some(self.sessions.config.requests())
    }

    async fn acquire(&self, key: &str, opts: &AcquireOptions) -> Result<Lease, LockError> {
        let ttl = match opts.lease {
            LeaseMode::Watchdog => self.config.renewal.ttl,
            LeaseMode::Fixed(ttl) if ttl.is_zero() => {
                return Err(LockError::Config("fixed lease must be > 0".into()));
            }
            LeaseMode::Fixed(ttl) => ttl,
        };
        let owner = opts.owner.clone().unwrap_or_else(OwnerId::unique);
        let holder = format!("{}:{owner}", self.client_id);
        let started = Instant::now();
        let give_up = opts.wait.map(|w| started + w);
        let seconds = ttl.as_secs_f64();
        loop {
            let session = self.sessions.get().await?;
            let sent_at = Instant::now();
            let rows = session
                .connection
                .sending()
                .query(&session.acquire, &[&key, &holder, &seconds])
                .await
                .map_err(|e| pg_error("acquire", &e))?;
            if let Some(row) = rows.first() {
                let token: i64 = row.get(0);
                return Ok(self.hold(key, owner, opts.lease, token, sent_at, ttl));
            }
            let Some(give_up) = give_up.filter(|g| Instant::now() < *g) else {
                return Err(LockError::Timeout {
                    key: key.to_owned(),
                    waited: started.elapsed(),
                });
            };
            let next = (Instant::now() + self.config.poll_interval).min(give_up);
            tokio::time::sleep_until(next.into()).await;
        }
    }
}

impl PostgresLease {
    /// The lease of a granted row (no await: a cancelled acquire cannot leave a renewal behind).
    fn hold(
        &self,
        key: &str,
        owner: OwnerId,
        mode: LeaseMode,
        token: i64,
        sent_at: Instant,
        ttl: Duration,
    ) -> Lease {
        let key: Arc<str> = key.into();
        let fencing = FencingToken(token.unsigned_abs());
        self.events.emit(|| LockEvent::Acquired {
            key: key.clone(),
            token: fencing,
            mode,
            sent_at,
            at: Instant::now(),
        });
        let state = LeaseState::noticing_early(
            key.clone(),
            sent_at + ttl,
            self.events.clone(),
            notice_allowance(ttl),
        );
        let renewal = match mode {
            LeaseMode::Watchdog => {
                let (sessions, key) = (self.sessions.clone(), key.clone());
                let seconds = ttl.as_secs_f64();
                let renew = move || {
                    let (sessions, key) = (sessions.clone(), key.clone());
                    async move {
                        let session = sessions.get().await?;
                        let held = session
                            .update(&session.renew, &[&&*key, &token, &seconds], "renew")
                            .await?;
                        Ok(match held {
                            true => RenewOutcome::Extended {
                                remaining_before: None,
                            },
                            false => RenewOutcome::Gone,
                        })
                    }
                };
                let plan = RenewalPlan::from(self.config.renewal);
                let task =
                    renew_until_lost(state.clone(), plan, sent_at, self.events.clone(), renew);
                Some(tokio::spawn(task).abort_handle())
            }
            LeaseMode::Fixed(_) => None,
        };
        let handle = LeaseHold {
            sessions: self.sessions.clone(),
            key,
            token,
            state: state.clone(),
            renewal,
            events: self.events.clone(),
        };
        Lease::new(owner, fencing, mode, sent_at, state, Box::new(handle))
    }
}

/// One held lease row.
#[derive(Debug)]
struct LeaseHold {
    sessions: Arc<Sessions>,
    key: Arc<str>,
    token: i64,
    state: Arc<LeaseState>,
    renewal: Option<tokio::task::AbortHandle>,
    events: Events,
}

impl LeaseHold {
    /// Frees our row if it is still ours and live: whether it was.
    async fn free(sessions: &Sessions, key: &str, token: i64) -> Result<bool, LockError> {
        let session = sessions.get().await?;
        session
            .update(&session.release, &[&key, &token], "release")
            .await
    }
}

#[async_trait]
impl LeaseHandle for LeaseHold {
    async fn release(self: Box<Self>) -> Result<(), LockError> {
        if let Some(renewal) = &self.renewal {
            renewal.abort();
        }
        let live = self.state.mark_released();
        let freed = Self::free(&self.sessions, &self.key, self.token).await?;
        if !(freed && live) {
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

    fn abandon(self: Box<Self>) {
        if let Some(renewal) = &self.renewal {
            renewal.abort();
        }
        let live = self.state.mark_released();
        // Without a runtime the row is left to expire by its TTL.
        in_background(async move {
            if let Ok(true) = Self::free(&self.sessions, &self.key, self.token).await
                && live
            {
                self.events.emit(|| LockEvent::Released {
                    key: self.key.clone(),
                    at: Instant::now(),
                });
            }
        });
    }
}
