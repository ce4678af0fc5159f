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
//! A [`LeaseMode::Watchdog`](crate::LeaseMode::Watchdog) lease is renewed about every TTL/3 by the client's one renewal scheduler
//! (`crate::batch_renewal`, as `postgres-lease`'s): each tick it sends one request for every row of
//! the client that is due, in chunks of at most [`RENEW_CHUNK`] rows. MySQL's `UPDATE` returns no
//! rows, so the request is three statements sent together ([`renew_rows_sql`]): the new expiry in a
//! session variable, the `UPDATE` of the rows still live with our tokens, and a `SELECT` of the rows
//! that now carry that expiry. A due row not returned is `Gone`: that lease alone is lost with
//! `RenewRejected`. A failed request is a `RenewFailed` for each of its rows, retried a third of a
//! period later, and each of them is lost at its local deadline. A [`LeaseMode::Fixed`](crate::LeaseMode::Fixed) lease is never
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
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use mysql_async::prelude::Queryable;
use tokio::sync::Mutex;

use super::connection::{
    BACKEND, Connection, LEASE_TABLE, MysqlConfig, ServerAddress, client_config, hex_literal,
    lock_name,
};
use crate::error::LockError;
use crate::event::Events;
use crate::sql_lease::{LeaseRows, SqlLease};

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

/// One client taking lease rows (see the [module docs](self)).
pub type MysqlLease = SqlLease<MysqlLeaseRows>;

/// The lease rows of one `mysql-lease` client, on its connection (opened again when it has ended).
#[derive(Debug)]
pub struct MysqlLeaseRows {
    config: ServerAddress,
    current: Mutex<Arc<Connection>>,
}

impl MysqlLeaseRows {
    async fn get(&self) -> Result<Arc<Connection>, LockError> {
        let mut current = self.current.lock().await;
        if current.is_closed() {
            *current = Arc::new(Connection::open_checked(&self.config, LEASE_TABLE).await?);
        }
        Ok(current.clone())
    }
}

#[async_trait]
impl LeaseRows for MysqlLeaseRows {
    const ID: &'static str = ID;
    const BACKEND: &'static str = BACKEND;
    const RENEW_CHUNK: usize = RENEW_CHUNK;

    fn row_name(key: &str) -> Arc<str> {
        lock_name(key).into()
    }

    fn requests(&self) -> u64 {
        self.config.requests()
    }

    async fn try_take(
        &self,
        name: &str,
        holder: &str,
        ttl: Duration,
    ) -> Result<Option<(i64, Instant)>, LockError> {
        let sent_at = Instant::now();
        let connection = self.get().await?;
        let params = (name.to_owned(), holder.to_owned(), ttl.as_micros() as u64);
        let (changed, token) = connection
            .send("acquire", |c| {
                Box::pin(async move {
                    c.exec_drop(ACQUIRE, params).await?;
                    Ok((c.affected_rows(), c.last_insert_id()))
                })
            })
            .await?;
        Ok((changed > 0).then(|| (token.unwrap_or(0) as i64, sent_at)))
    }

    /// The renewal request for `rows` ([`renew_rows_sql`]): per row, whether the server returned
    /// it.
    async fn renew(&self, rows: &[(Arc<str>, i64)], ttl: Duration) -> Result<Vec<bool>, LockError> {
        let borrowed: Vec<(&str, i64)> = rows.iter().map(|(n, t)| (&**n, *t)).collect();
        let sql = renew_rows_sql(&borrowed, ttl.as_micros());
        let connection = self.get().await?;
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
            .map(|(name, token)| renewed.contains(&(name.as_bytes(), *token)))
            .collect())
    }

    async fn free(&self, name: &str, token: i64) -> Result<bool, LockError> {
        let connection = self.get().await?;
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

impl MysqlLease {
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
        let rows = MysqlLeaseRows {
            config: client_config,
            current: Mutex::new(Arc::new(first)),
        };
        Ok(SqlLease::start(rows, client_id, config, events))
    }
}
