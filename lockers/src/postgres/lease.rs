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
//! A [`LeaseMode::Watchdog`](crate::LeaseMode::Watchdog) lease is renewed about every TTL/3 by the client's one renewal scheduler
//! (`crate::batch_renewal`, as `redis-watchdog`'s batched mode): each tick it sends one statement for
//! every row of the client that is due, [`RENEW_ROWS`] (`UPDATE … FROM unnest(keys, tokens) … WHERE
//! expires_at >= now() RETURNING key, token`), in chunks of at most [`RENEW_CHUNK`] rows. A due row
//! not returned is `Gone`: that lease alone is lost with `RenewRejected`. A failed statement is a
//! `RenewFailed` for each of its rows, retried a third of a period later, and each of them is lost at
//! its local deadline. A [`LeaseMode::Fixed`](crate::LeaseMode::Fixed) lease is never renewed and is lost at its local deadline.
//! The local deadline counts from the time the acquire or renewal was sent, less the
//! notice allowance, so it never claims more than the server's clock granted (on that clock, the
//! lease may outlive it by a round trip).
//!
//! # Renewal schedule
//! The scheduler ticks 12 times per renewal period while the client holds a watchdog lease; each row
//! is renewed every 11 ticks (12/11 times per period) in one of 11 phases, and the rows fill the
//! phases chunk by chunk. So N held rows cost at most ⌈N / [`RENEW_CHUNK`]⌉ + 10 statements per 11
//! ticks (11/12 of a period): one statement per round for up to a thousand rows. The thinnest
//! margin: a row is renewed at most a period after it was granted (its first renewal is due on a
//! tick of the period before that, each next one 11 ticks after the last was due), so it still has ⅔
//! of its TTL on the server (default ratio ⅓) as long as a statement goes out no more than a tick
//! late.
//! An acquire puts its row in the schedule and a release takes it out, each a push or a removal under
//! a short lock: no task is spawned and no thread woken per hold (the scheduler keeps ticking until a
//! tick passes with no row scheduled, and only a row scheduled after that wakes it). The scheduler
//! ends with the client.
//!
//! # Release
//! Release sets `expires_at = '-infinity'` on our token if it is still live (no row:
//! `NotHeld`); a stale release names its token, so it never frees a newer hold.
//!
//! # Connection
//! One connection per client, shared by its acquires, renewals and releases (pipelined), opened again
//! when it has ended. Its `application_name` is `lockbench <client id>`, and a row's holder is
//! `<client id>:<owner>`, so the server can tell which session holds a row ([`holder_sessions`](super::holder_sessions)).

use std::collections::HashSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use tokio::sync::Mutex;
use tokio_postgres::Statement;
use tokio_postgres::types::ToSql;

use super::connection::{
    BACKEND, Connection, LEASE_TABLE, PostgresConfig, ServerAddress, client_config, pg_error,
};
use crate::error::LockError;
use crate::event::Events;
use crate::sql_lease::{LeaseRows, SqlLease};

/// The strategy id.
pub const ID: &str = "postgres-lease";

/// Takes the key's row if it is free or expired, bumping its token (no row: busy). `$3`: the TTL in
/// seconds.
pub const ACQUIRE: &str = "INSERT INTO lockbench_leases AS l (key, holder, token, expires_at) \
     VALUES ($1, $2, 1, now() + make_interval(secs => $3)) \
     ON CONFLICT (key) DO UPDATE SET holder = EXCLUDED.holder, token = l.token + 1, \
     expires_at = EXCLUDED.expires_at WHERE l.expires_at < now() RETURNING l.token";
/// Renews the rows named by `$1` (keys) and `$2` (their tokens) that are still live, to `$3` seconds
/// from now; returns the key and token of each row it renewed.
pub const RENEW_ROWS: &str = "UPDATE lockbench_leases l \
     SET expires_at = now() + make_interval(secs => $3) \
     FROM unnest($1::text[], $2::bigint[]) AS u(key, token) \
     WHERE l.key = u.key AND l.token = u.token AND l.expires_at >= now() \
     RETURNING l.key, l.token";
/// Rows renewed by one [`RENEW_ROWS`] statement at most.
pub const RENEW_CHUNK: usize = 1000;
/// How many times per renewal period each row is renewed (12/11: see the [module docs](self)).
pub const RENEWALS_PER_PERIOD: f64 = crate::batch_renewal::RENEWALS_PER_PERIOD;
/// Frees our row (`$2`: our token) if it is still live (no row: not held).
pub const RELEASE: &str = "UPDATE lockbench_leases SET expires_at = '-infinity' \
     WHERE key = $1 AND token = $2 AND expires_at >= now()";

/// One client taking lease rows (see the [module docs](self)).
pub type PostgresLease = SqlLease<PostgresLeaseRows>;

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
            Connection::open_prepared(config, LEASE_TABLE, [ACQUIRE, RENEW_ROWS, RELEASE]).await?;
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

/// The lease rows of one `postgres-lease` client, on its connection (opened again when it has
/// ended).
#[derive(Debug)]
pub struct PostgresLeaseRows {
    config: ServerAddress,
    current: Mutex<Arc<Session>>,
}

impl PostgresLeaseRows {
    async fn get(&self) -> Result<Arc<Session>, LockError> {
        let mut current = self.current.lock().await;
        if current.connection.is_closed() {
            *current = Session::open(&self.config).await?;
        }
        Ok(current.clone())
    }
}

#[async_trait]
impl LeaseRows for PostgresLeaseRows {
    const ID: &'static str = ID;
    const BACKEND: &'static str = BACKEND;
    const RENEW_CHUNK: usize = RENEW_CHUNK;

    fn row_name(key: &str) -> Arc<str> {
        key.into()
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
        let session = self.get().await?;
        let sent_at = Instant::now();
        let rows = session
            .connection
            .sending()
            .query(&session.acquire, &[&name, &holder, &ttl.as_secs_f64()])
            .await
            .map_err(|e| pg_error("acquire", &e))?;
        Ok(rows.first().map(|row| (row.get(0), sent_at)))
    }

    /// The [`RENEW_ROWS`] statement for `rows`: per row, whether the server returned it.
    async fn renew(&self, rows: &[(Arc<str>, i64)], ttl: Duration) -> Result<Vec<bool>, LockError> {
        let keys: Vec<&str> = rows.iter().map(|(key, _)| &**key).collect();
        let tokens: Vec<i64> = rows.iter().map(|(_, token)| *token).collect();
        let session = self.get().await?;
        let renewed = session
            .connection
            .sending()
            .query(&session.renew, &[&keys, &tokens, &ttl.as_secs_f64()])
            .await
            .map_err(|e| pg_error("renew", &e))?;
        let renewed: HashSet<(&str, i64)> = renewed
            .iter()
            .map(|row| (row.get::<_, &str>(0), row.get::<_, i64>(1)))
            .collect();
        Ok(keys
            .into_iter()
            .zip(tokens)
            .map(|row| renewed.contains(&row))
            .collect())
    }

    async fn free(&self, name: &str, token: i64) -> Result<bool, LockError> {
        let session = self.get().await?;
        session
            .update(&session.release, &[&name, &token], "release")
            .await
    }
}

impl PostgresLease {
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
        let rows = PostgresLeaseRows {
            config: client_config,
            current: Mutex::new(first),
        };
        Ok(SqlLease::start(rows, client_id, config, events))
    }
}
