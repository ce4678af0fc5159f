//! What the SQL lease-row strategies (`postgres-lease`, `mysql-lease`) share: the client
//! ([`SqlLease`]) that takes a row and polls while it is busy, books a granted row's lease (its local
//! deadline, its place in the client's one renewal schedule) and frees it on release, over a
//! database's own statements and connection (`LeaseRows`). Each database's module says what its
//! statements do; the bookkeeping here is the same for both.

use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;

use crate::batch_renewal::{BatchRenewer, Unschedule};
use crate::error::LockError;
use crate::event::{Events, LockEvent};
use crate::lease::{
    AcquireOptions, FencingToken, Lease, LeaseHandle, LeaseMode, LeaseState, OwnerId,
    notice_allowance,
};
use crate::locker::{Capabilities, Locker};
use crate::renewal::{RenewOutcome, RenewalPlan, in_background};
use crate::sql_config::SqlConfig;

/// A database's lease rows as [`SqlLease`] uses them: one statement (or request) each to take,
/// renew and free rows, on the client's connection (opened again when it has ended).
#[async_trait]
pub(crate) trait LeaseRows: std::fmt::Debug + Send + Sync + 'static {
    /// The strategy id.
    const ID: &'static str;
    /// The backend named in renewal errors.
    const BACKEND: &'static str;
    /// Rows renewed by one renewal request at most.
    const RENEW_CHUNK: usize;

    /// The row's name on the server for `key`.
    fn row_name(key: &str) -> Arc<str>;

    /// Statements sent so far by the client.
    fn requests(&self) -> u64;

    /// Tries once to take the row `name` for `holder` for `ttl`: its token and when the try was
    /// sent (the lease counts from then), or `None` when busy.
    async fn try_take(
        &self,
        name: &str,
        holder: &str,
        ttl: Duration,
    ) -> Result<Option<(i64, Instant)>, LockError>;

    /// Renews `rows` (name, token) that are still live to `ttl` from now: per row, whether it was.
    async fn renew(&self, rows: &[(Arc<str>, i64)], ttl: Duration) -> Result<Vec<bool>, LockError>;

    /// Frees our row `name` (our `token`) if it is still live: whether it was.
    async fn free(&self, name: &str, token: i64) -> Result<bool, LockError>;
}

/// A held row as its renewal names it.
#[derive(Debug)]
struct RowTarget {
    name: Arc<str>,
    token: i64,
}

/// One client taking lease rows through `R` (see `postgres::lease` and `mysql::lease`).
#[derive(Debug)]
pub struct SqlLease<R> {
    rows: Arc<R>,
    /// Renews the client's watchdog leases; its task ends when the client is dropped.
    renewer: BatchRenewer<RowTarget>,
    config: SqlConfig,
    events: Events,
    client_id: String,
}

// Sealed: callers name a database's alias (`PostgresLease`, …), never the crate-private trait.
#[allow(private_bounds)]
impl<R: LeaseRows> SqlLease<R> {
    /// What every client of a lease-row strategy can do.
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

    /// The client of `rows` (connected), whose holders start with `client_id`; starts its renewal
    /// scheduler, which renews due rows in chunks of at most [`LeaseRows::RENEW_CHUNK`].
    pub(crate) fn start(rows: R, client_id: String, config: SqlConfig, events: Events) -> Self {
        let rows = Arc::new(rows);
        let renewing = rows.clone();
        let ttl = config.renewal.ttl;
        let renewer = BatchRenewer::start(
            RenewalPlan::from(config.renewal),
            R::RENEW_CHUNK,
            events.clone(),
            R::BACKEND,
            move |targets: &[&RowTarget]| {
                let targets: Vec<(Arc<str>, i64)> = targets
                    .iter()
                    .map(|row| (row.name.clone(), row.token))
                    .collect();
                let rows = renewing.clone();
                async move {
                    let renewed = rows.renew(&targets, ttl).await?;
                    Ok(renewed
                        .into_iter()
                        .map(|renewed| match renewed {
                            true => RenewOutcome::Extended {
                                remaining_before: None,
                            },
                            false => RenewOutcome::Gone,
                        })
                        .collect())
                }
            },
        );
        SqlLease {
            rows,
            renewer,
            config,
            events,
            client_id,
        }
    }

    /// The lease of a granted row (no await: a cancelled acquire cannot leave a renewal behind).
    /// `held`: the lease's mode, the row's token, when the acquire was sent and the TTL granted.
    fn hold(
        &self,
        key: &str,
        name: Arc<str>,
        owner: OwnerId,
        (mode, token, sent_at, ttl): (LeaseMode, i64, Instant, Duration),
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
            rows: self.rows.clone(),
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

#[async_trait]
impl<R: LeaseRows> Locker for SqlLease<R> {
    fn id(&self) -> &str {
        R::ID
    }

    fn capabilities(&self) -> Capabilities {
        Self::CAPABILITIES
    }

    fn requests_sent(&self) -> Option<u64> {
        Some(self.rows.requests())
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
        let name = R::row_name(key);
        let started = Instant::now();
        let give_up = opts.wait.map(|w| started + w);
        loop {
            if let Some((token, sent_at)) = self.rows.try_take(&name, &holder, ttl).await? {
                let held = (opts.lease, token, sent_at, ttl);
                return Ok(self.hold(key, name, owner, held));
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

/// One held lease row.
#[derive(Debug)]
struct LeaseHold<R> {
    rows: Arc<R>,
    key: Arc<str>,
    name: Arc<str>,
    token: i64,
    state: Arc<LeaseState>,
    /// Takes the row out of the client's renewal schedule (a watchdog lease).
    renewal: Option<Unschedule<RowTarget>>,
    events: Events,
}

#[async_trait]
impl<R: LeaseRows> LeaseHandle for LeaseHold<R> {
    async fn release(mut self: Box<Self>) -> Result<(), LockError> {
        if let Some(renewal) = self.renewal.take() {
            renewal.stop();
        }
        let live = self.state.mark_released();
        let freed = self.rows.free(&self.name, self.token).await?;
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
            if let Ok(true) = self.rows.free(&self.name, self.token).await
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
