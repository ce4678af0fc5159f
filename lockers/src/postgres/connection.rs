//! What the PostgreSQL strategies share: settings, connections (each with its connection task and a
//! signal when it ends), the tables they need and error mapping.

use std::str::FromStr;
use std::time::Duration;

use tokio::sync::watch;
use tokio_postgres::{Client, Config, NoTls};

use crate::error::LockError;
use crate::settings::Renewal;

/// The table of `postgres-lease`: one row per lock key, kept after release (its token must keep
/// growing).
pub const LEASE_TABLE: &str = "lockbench_leases";
/// The table of `postgres-advisory`'s fencing counters, one row per lock key.
pub const FENCING_TABLE: &str = "lockbench_fencing";

/// The tables both strategies need. lockbench runs this on servers it starts; on a user's server a
/// missing table is a one-line error quoting what to create.
pub const SCHEMA: &str = "CREATE TABLE IF NOT EXISTS lockbench_leases (key text PRIMARY KEY, \
     holder text NOT NULL, token bigint NOT NULL, expires_at timestamptz NOT NULL); \
     CREATE TABLE IF NOT EXISTS lockbench_fencing (key text PRIMARY KEY, token bigint NOT NULL)";

/// How a PostgreSQL strategy talks to its server.
#[derive(Debug, Clone, PartialEq)]
pub struct PostgresConfig {
    /// A watchdog lease's TTL and renewal period: `postgres-lease` renews its row every period;
    /// `postgres-advisory` checks the hold's session every period (its local deadline is the last
    /// answer plus the TTL).
    pub renewal: Renewal,
    /// Bound on connecting (TCP, start-up, authentication).
    pub connect_timeout: Duration,
    /// How often a waiting `postgres-lease` acquire tries again (a lease row wakes nobody).
    pub poll_interval: Duration,
}

impl Default for PostgresConfig {
    fn default() -> Self {
        PostgresConfig {
            renewal: Renewal::default(),
            connect_timeout: Duration::from_secs(5),
            poll_interval: Duration::from_millis(20),
        }
    }
}

impl PostgresConfig {
    /// Checks the settings; a `Config` error names the bad one.
    pub fn validate(&self) -> Result<(), LockError> {
        self.renewal.validate()?;
        if self.connect_timeout.is_zero() {
            return Err(LockError::Config("connect_timeout must be > 0".into()));
        }
        if self.poll_interval.is_zero() {
            return Err(LockError::Config("poll_interval must be > 0".into()));
        }
        Ok(())
    }
}

/// A `Backend` error for a failed PostgreSQL operation `what`.
pub(super) fn pg_error(what: &str, error: &tokio_postgres::Error) -> LockError {
    LockError::backend("postgres", format!("{what}: {}", one_line(error)))
}

/// The client's error on one line (a server error with its severity and message).
fn one_line(error: &tokio_postgres::Error) -> String {
    match error.as_db_error() {
        Some(db) => format!("{}: {}", db.severity(), db.message()),
        None => error.to_string().replace('\n', " "),
    }
}

/// Whether `error` is the server's `lock_not_available` (a `lock_timeout` that ran out).
pub(super) fn is_lock_timeout(error: &tokio_postgres::Error) -> bool {
    error.code() == Some(&tokio_postgres::error::SqlState::LOCK_NOT_AVAILABLE)
}

/// The client settings of `url` (`postgres://user[:pass]@host:port/db`), bounded by `config`. A URL
/// that asks for TLS (`sslmode=require` or stricter) is a `Config` error: this client speaks plain TCP.
pub(super) fn client_config(url: &str, config: &PostgresConfig) -> Result<Config, LockError> {
    let shown = crate::address::redact(url);
    let mut parsed = Config::from_str(url)
        .map_err(|e| LockError::Config(format!("postgres address {shown}: {e}")))?;
    if parsed.get_ssl_mode() == tokio_postgres::config::SslMode::Require {
        return Err(LockError::Config(format!(
            "postgres address {shown}: TLS (sslmode=require) is not supported by lockbench's PostgreSQL client yet"
        )));
    }
    parsed
        .connect_timeout(config.connect_timeout)
        .application_name("lockbench")
        // A session waiting for a lock notices within this that its client has gone (a cancelled
        // acquire), instead of taking the lock for nobody.
        .options("-c client_connection_check_interval=250");
    Ok(parsed)
}

/// One connection: its client, and a signal that says why the connection ended.
#[derive(Debug)]
pub(super) struct Connection {
    pub(super) client: Client,
    closed: watch::Receiver<Option<String>>,
    task: tokio::task::AbortHandle,
}

impl Connection {
    /// Connects with `config` (failure: one line, without the password).
    pub(super) async fn open(config: &Config) -> Result<Self, LockError> {
        let (client, connection) = config
            .connect(NoTls)
            .await
            .map_err(|e| pg_error("connect", &e))?;
        let (tx, closed) = watch::channel(None);
        let task = tokio::spawn(async move {
            let why = match connection.await {
                Ok(()) => "connection closed".to_owned(),
                Err(e) => one_line(&e),
            };
            let _ = tx.send(Some(why));
        })
        .abort_handle();
        Ok(Connection {
            client,
            closed,
            task,
        })
    }

    /// Resolves with the reason when the connection ends.
    pub(super) fn ended(&self) -> impl std::future::Future<Output = String> + Send + 'static {
        let mut closed = self.closed.clone();
        async move {
            match closed.wait_for(Option::is_some).await {
                Ok(why) => why.clone().unwrap_or_default(),
                Err(_) => "connection task ended".to_owned(),
            }
        }
    }

    /// Whether the connection has ended.
    pub(super) fn is_closed(&self) -> bool {
        self.client.is_closed() || self.closed.borrow().is_some()
    }
}

impl Drop for Connection {
    fn drop(&mut self) {
        // Closes the socket: the server ends the session (and frees its advisory locks) at once.
        self.task.abort();
    }
}

/// Checks that `table` exists; if not, a `Config` error saying what to create (lockbench never
/// creates tables on a server it did not start).
pub(super) async fn require_table(client: &Client, table: &str) -> Result<(), LockError> {
    let row = client
        .query_one("SELECT to_regclass($1)::text", &[&table])
        .await
        .map_err(|e| pg_error("check tables", &e))?;
    let found: Option<String> = row.get(0);
    if found.is_some() {
        return Ok(());
    }
    let create = SCHEMA
        .split("; ")
        .find(|s| s.contains(table))
        .unwrap_or(SCHEMA);
    Err(LockError::Config(format!(
        "table {table} is missing on this PostgreSQL server; create it with: {create}"
    )))
}

/// `d` as PostgreSQL's `lock_timeout` takes it: whole milliseconds rounded up (never shorter than
/// the wait asked for), at least 1 (0 means forever).
pub(super) fn timeout_setting(d: Duration) -> String {
    format!("{}ms", d.as_micros().div_ceil(1000).max(1))
}

/// Checks a user's server as the strategies connect to it: reachable, the password right, both
/// tables there. Returns the server's version (`SHOW server_version`). Errors are one line without
/// the password.
pub async fn check_server(url: &str, connect_timeout: Duration) -> Result<String, LockError> {
    let config = PostgresConfig {
        connect_timeout,
        ..PostgresConfig::default()
    };
    let connection = Connection::open(&client_config(url, &config)?).await?;
    let client = &connection.client;
    require_table(client, LEASE_TABLE).await?;
    require_table(client, FENCING_TABLE).await?;
    let row = client
        .query_one("SHOW server_version", &[])
        .await
        .map_err(|e| pg_error("version", &e))?;
    let version: String = row.get(0);
    Ok(version
        .split_whitespace()
        .next()
        .unwrap_or_default()
        .to_owned())
}
