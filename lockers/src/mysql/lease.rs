//! `mysql-lease`: a lease row per lock name (`lockbench_leases`), taken and freed by one statement
//! each and renewed in batches, on the server's clock (`UTC_TIMESTAMP(6)`).
//!
//! # Lock
//! `INSERT … ON DUPLICATE KEY UPDATE` ([`ACQUIRE`]) either creates the key's row or takes over an
//! expired one, setting `expires_at` to now + TTL and bumping the row's token, which is the fencing
//! token (a row is never deleted, so the token of a key only grows) and comes back as the statement's
//! insert id; a live row is left as it is (no row changed: someone else holds it). A waiting acquire
//! tries again every [`poll_interval`](super::MysqlConfig::poll_interval): a row wakes nobody
//! (`wait_notify: false`).
//!
//! # Lease and loss
//! A [`LeaseMode::Watchdog`] lease is renewed about every TTL/3 by the client's one renewal scheduler
//! (`crate::batch_renewal`, as `postgres-lease`'s): each tick it sends one request for every row of
//! the client that is due, in chunks of at most [`RENEW_CHUNK`] rows. MySQL's `UPDATE` returns no
//! rows, so the request is three statements sent together ([`renew_rows_sql`]): the new expiry in a
//! session variable, the `UPDATE` of the rows still live with our tokens, and a `SELECT` of the rows
//! that now carry that expiry. A due row not returned is `Gone`: that lease alone is lost with
//! `RenewRejected`. A failed request is a `RenewFailed` for each of its rows, retried a third of a
//! period later, and each of them is lost at its local deadline. A [`LeaseMode::Fixed`] lease is never
//! renewed and is lost at its local deadline. The local deadline counts from the time the acquire or
//! renewal was sent, less the notice allowance, so it never claims more than the server's clock
//! granted. The schedule is `postgres-lease`'s (12 ticks per period, each row renewed 12/11 times per
//! period).
//!
//! # Release
//! Release sets `expires_at` to the past on our token if it is still live (no row changed:
//! `NotHeld`); a stale release names its token, so it never frees a newer hold.
//!
//! # Connection
//! One connection per client, shared by its acquires, renewals and releases (one statement at a time),
//! opened again when it has ended. A row's holder is `<client id>:<owner>`, and its `session` the
//! connection id that last took or renewed it, so the server can tell which session holds a row
//! ([`holder_sessions`](super::holder_sessions)).

use std::collections::HashSet;
use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use mysql_async::prelude::Queryable;
use tokio::sync::Mutex;

use super::connection::{
    BACKEND, Connection, LEASE_TABLE, MysqlConfig, ServerAddress, client_config, hex_literal,
    lock_name,
};
use crate::batch_renewal::{BatchRenewer, Unschedule};
use crate::error::LockError;
use crate::event::{Events, LockEvent};
use crate::lease::{
    AcquireOptions, FencingToken, Lease, LeaseHandle, LeaseMode, LeaseState, OwnerId,
    notice_allowance,
};
use crate::locker::{Capabilities, Locker};
use crate::renewal::{RenewOutcome, RenewalPlan, in_background};

/// The strategy id.
pub const ID: &str = "mysql-lease";

/// Takes the key's row (`?1`: its name, `?2`: the holder, `?3`: the TTL in microseconds) if it is
/// new or expired, bumping its token (returned as the insert id); a live row is left unchanged (no
/// row changed: busy). `expires_at` is assigned last: the assignments see the values before it.
pub const ACQUIRE: &str = "INSERT INTO lockbench_leases (name, holder, token, expires_at, session) \
     VALUES (?, ?, LAST_INSERT_ID(1), UTC_TIMESTAMP(6) + INTERVAL ? MICROSECOND, CONNECTION_ID()) \
     ON DUPLICATE KEY UPDATE \
     holder = IF(expires_at < UTC_TIMESTAMP(6), VALUES(holder), holder), \
     token = IF(expires_at < UTC_TIMESTAMP(6), LAST_INSERT_ID(token + 1), token), \
     session = IF(expires_at < UTC_TIMESTAMP(6), VALUES(session), session), \
     expires_at = IF(expires_at < UTC_TIMESTAMP(6), VALUES(expires_at), expires_at)";
/// Rows renewed by one renewal request at most.
pub const RENEW_CHUNK: usize = 1000;
/// How many times per renewal period each row is renewed (12/11: see the [module docs](self)).
pub const RENEWALS_PER_PERIOD: f64 = crate::batch_renewal::RENEWALS_PER_PERIOD;
/// Frees our row (`?2`: our token) if it is still live (no row changed: not held).
pub const RELEASE: &str = "UPDATE lockbench_leases SET expires_at = '1000-01-01' \
     WHERE name = ? AND token = ? AND expires_at >= UTC_TIMESTAMP(6)";

/// The renewal request of `rows` (lock name, token) to `micros` from now: three statements, sent
/// together, whose last returns the name and token of every row renewed.
pub fn renew_rows_sql(rows: &[(&str, i64)], micros: u128) -> String {
    let names: Vec<String> = rows.iter().map(|(name, _)| hex_literal(name)).collect();
    let pairs: Vec<String> = rows
        .iter()
        .zip(&names)
        .map(|((_, token), name)| format!("({name}, {token})"))
        .collect();
    let (names, pairs) = (names.join(", "), pairs.join(", "));
    let ours = format!("name IN ({names}) AND (name, token) IN ({pairs})");
    format!(
        "SET @lockbench_until = UTC_TIMESTAMP(6) + INTERVAL {micros} MICROSECOND; \
         UPDATE lockbench_leases SET expires_at = @lockbench_until, session = CONNECTION_ID() \
         WHERE {ours} AND expires_at >= UTC_TIMESTAMP(6); \
         SELECT name, token FROM lockbench_leases WHERE {ours} AND expires_at = @lockbench_until"
    )
}

/// The client's connection, opened again when it has ended.
#[derive(Debug)]
struct Sessions {
    config: ServerAddress,
    current: Mutex<Arc<Connection>>,
}

impl Sessions {
    async fn get(&self) -> Result<Arc<Connection>, LockError> {
        let mut current = self.current.lock().await;
        if current.is_closed() {
            *current = Arc::new(Connection::open_checked(&self.config, LEASE_TABLE).await?);
        }
        Ok(current.clone())
    }
}

/// A held row as its renewal names it.
#[derive(Debug)]
struct RowTarget {
    name: String,
    token: i64,
}

/// The renewal request for `rows`, to `micros` from now: per row, `Extended` if the server
/// returned it, else `Gone`.
fn renew_rows(
    sessions: Arc<Sessions>,
    rows: &[&RowTarget],
    micros: u128,
) -> impl Future<Output = Result<Vec<RenewOutcome>, LockError>> + Send + use<> {
    let targets: Vec<(String, i64)> = rows.iter().map(|r| (r.name.clone(), r.token)).collect();
    async move {
        let borrowed: Vec<(&str, i64)> = targets.iter().map(|(n, t)| (n.as_str(), *t)).collect();
        let sql = renew_rows_sql(&borrowed, micros);
        let connection = sessions.get().await?;
        let renewed: Vec<(Vec<u8>, i64)> = connection
            .send_statements("renew", 3, |c| {
                Box::pin(async move {
                    let mut result = c.query_iter(sql).await?;
                    let mut rows = Vec::new();
                    while !result.is_empty() {
                        rows.extend(result.collect::<(Vec<u8>, i64)>().await?);
                    }
                    Ok(rows)
                })
            })
            .await?;
        let renewed: HashSet<(&[u8], i64)> = renewed
            .iter()
            .map(|(name, token)| (name.as_slice(), *token))
            .collect();
        Ok(borrowed
            .iter()
            .map(
                |(name, token)| match renewed.contains(&(name.as_bytes(), *token)) {
                    true => RenewOutcome::Extended {
                        remaining_before: None,
                    },
                    false => RenewOutcome::Gone,
                },
            )
            .collect())
    }
}

/// One client taking lease rows (see the [module docs](self)).
#[derive(Debug)]
pub struct MysqlLease {
    sessions: Arc<Sessions>,
    /// Renews the client's watchdog leases; its task ends when the client is dropped.
    renewer: BatchRenewer<RowTarget>,
    config: MysqlConfig,
    events: Events,
    client_id: String,
}

impl MysqlLease {
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

    /// Connects to the server at `url` (`mysql://user[:pass]@host:port/db`) and checks that the
    /// lease table exists. An unreachable server, a wrong password or an address that is not MySQL
    /// is a `Backend` error, a missing table a `Config` error saying what to create; no message
    /// contains the password.
    pub async fn connect(
        url: &str,
        config: MysqlConfig,
        events: Events,
    ) -> Result<Self, LockError> {
        let client_id = format!("{:08x}", rand::random::<u32>());
        let client_config = client_config(url, &config)?;
        let first = Connection::open_checked(&client_config, LEASE_TABLE).await?;
        let sessions = Arc::new(Sessions {
            config: client_config,
            current: Mutex::new(Arc::new(first)),
        });
        let renewing = sessions.clone();
        let micros = config.renewal.ttl.as_micros();
        let renewer = BatchRenewer::start(
            RenewalPlan::from(config.renewal),
            RENEW_CHUNK,
            events.clone(),
            BACKEND,
            move |rows| renew_rows(renewing.clone(), rows, micros),
        );
        Ok(MysqlLease {
            sessions,
            renewer,
            config,
            events,
            client_id,
        })
    }

    /// Tries once to take `name`'s row for `holder` for `ttl`: its token, or `None` when busy.
    async fn try_take(
        &self,
        name: &str,
        holder: &str,
        ttl: Duration,
    ) -> Result<Option<i64>, LockError> {
        let connection = self.sessions.get().await?;
        let params = (name.to_owned(), holder.to_owned(), ttl.as_micros() as u64);
        let (changed, token) = connection
            .send("acquire", |c| {
                Box::pin(async move {
                    c.exec_drop(ACQUIRE, params).await?;
                    Ok((c.affected_rows(), c.last_insert_id()))
                })
            })
            .await?;
        Ok((changed > 0).then(|| token.unwrap_or(0) as i64))
    }
}

#[async_trait]
impl Locker for MysqlLease {
    fn id(&self) -> &str {
        ID
    }

    fn capabilities(&self) -> Capabilities {
        Self::CAPABILITIES
    }

    fn requests_sent(&self) -> Option<u64> {
        Some(self.sessions.config.requests())
    }

    async fn close(&self) {
        self.renewer.stop();
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
        let name = lock_name(key);
        let started = Instant::now();
        let give_up = opts.wait.map(|w| started + w);
        loop {
            let sent_at = Instant::now();
            if let Some(token) = self.try_take(&name, &holder, ttl).await? {
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

impl MysqlLease {
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
        let name = lock_name(key);
        let key: Arc<str> = key.into();
        let fencing = FencingToken(token.unsigned_abs());
        self.events.emit(|| LockEvent::Acquired {
            key: key.clone(),
            token: fencing,
            mode,
            sent_at,
            at: Instant::now(),
        });
        let (deadline, allowance) = (sent_at + ttl, notice_allowance(ttl));
        let (state, renewal) = match mode {
            LeaseMode::Watchdog => {
                // Its deadline sits beside the other rows' the scheduler reads each tick.
                let table = self.renewer.lease_table();
                let events = self.events.clone();
                let state = LeaseState::in_table(table, key.clone(), deadline, events, allowance);
                let row = RowTarget {
                    name: name.clone(),
                    token,
                };
                let renewal = self.renewer.schedule(row, state.clone(), sent_at);
                (state, Some(renewal))
            }
            LeaseMode::Fixed(_) => {
                let events = self.events.clone();
                let state = LeaseState::noticing_early(key.clone(), deadline, events, allowance);
                (state, None)
            }
        };
        let handle = LeaseHold {
            sessions: self.sessions.clone(),
            key,
            name,
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
    name: String,
    token: i64,
    state: Arc<LeaseState>,
    /// Takes the row out of the client's renewal schedule (a watchdog lease).
    renewal: Option<Unschedule<RowTarget>>,
    events: Events,
}

impl LeaseHold {
    /// Frees our row if it is still ours and live: whether it was.
    async fn free(sessions: &Sessions, name: &str, token: i64) -> Result<bool, LockError> {
        let connection = sessions.get().await?;
        let params = (name.to_owned(), token);
        connection
            .send("release", |c| {
                Box::pin(async move {
                    c.exec_drop(RELEASE, params).await?;
                    Ok(c.affected_rows() == 1)
                })
            })
            .await
    }
}

#[async_trait]
impl LeaseHandle for LeaseHold {
    async fn release(mut self: Box<Self>) -> Result<(), LockError> {
        if let Some(renewal) = self.renewal.take() {
            renewal.stop();
        }
        let live = self.state.mark_released();
        let freed = Self::free(&self.sessions, &self.name, self.token).await?;
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

    fn abandon(mut self: Box<Self>) {
        if let Some(renewal) = self.renewal.take() {
            renewal.stop();
        }
        let live = self.state.mark_released();
        // Without a runtime the row is left to expire by its TTL.
        in_background(async move {
            if let Ok(true) = Self::free(&self.sessions, &self.name, self.token).await
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
