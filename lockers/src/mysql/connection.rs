//! What the MySQL strategies share: settings, connections (one statement at a time each, marked
//! broken when one fails or is cut off), the tables they need, the server-side name of a key, and
//! error mapping.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mysql_async::prelude::Queryable;
use mysql_async::{Conn, Opts, OptsBuilder, SslOpts};
use sha2::{Digest, Sha256};

use crate::error::LockError;
use crate::lease::{LeaseState, LossReason};

/// The table of `mysql-lease`: one row per lock name, kept after release (its token must keep
/// growing).
pub const LEASE_TABLE: &str = "lockbench_leases";
/// The table of `mysql-get-lock`'s fencing counters, one row per lock name.
pub const FENCING_TABLE: &str = "lockbench_fencing";

/// The tables both strategies need (binary names: exact, case- and space-sensitive comparison;
/// expiry in UTC on the server's clock). lockbench runs this on servers it starts; on a user's
/// server a missing table is a one-line error quoting what to create.
pub const SCHEMA: &str = "CREATE TABLE IF NOT EXISTS lockbench_leases (name VARBINARY(64) PRIMARY KEY, \
     holder VARCHAR(255) NOT NULL, token BIGINT NOT NULL, expires_at DATETIME(6) NOT NULL, \
     session BIGINT UNSIGNED NOT NULL) ENGINE=InnoDB; \
     CREATE TABLE IF NOT EXISTS lockbench_fencing (name VARBINARY(64) PRIMARY KEY, \
     token BIGINT NOT NULL) ENGINE=InnoDB";

/// The longest name `GET_LOCK` takes on MySQL (64 characters; MariaDB takes 192 bytes).
pub const MAX_LOCK_NAME: usize = 64;

/// A key's name on the server (its user lock and its rows): the key itself when it is at most
/// [`MAX_LOCK_NAME`] bytes, else the hex SHA-256 of the key (64 characters), so that every key
/// fits the servers' limit on a lock name. A key that is itself 64 hex digits equal to another
/// key's hash would share its lock: that needs a SHA-256 preimage.
pub fn lock_name(key: &str) -> String {
    if key.len() <= MAX_LOCK_NAME {
        return key.to_owned();
    }
    Sha256::digest(key.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// A string as a MySQL hex literal (`X'…'`, never needs escaping).
pub(super) fn hex_literal(text: &str) -> String {
    let hex: String = text.bytes().map(|b| format!("{b:02X}")).collect();
    format!("X'{hex}'")
}

/// A query of the connection ids (`KILL`-able) of the sessions that hold lock `key`: the session
/// holding its user lock (`mysql-get-lock`), or the connection that last took or renewed its live
/// lease row (`mysql-lease`). Run it, then `KILL CONNECTION id` for each, as an administrator or a
/// session timeout would end them.
pub fn holder_sessions(key: &str) -> String {
    let name = hex_literal(&lock_name(key));
    format!(
        "SELECT IS_USED_LOCK({name}) AS id FROM DUAL WHERE IS_USED_LOCK({name}) IS NOT NULL \
         UNION SELECT session FROM lockbench_leases \
         WHERE name = {name} AND expires_at >= UTC_TIMESTAMP(6)"
    )
}

/// A query of how many locks the server holds, as it sees them: user locks granted to any session
/// (`information_schema.METADATA_LOCK_INFO`, from the `metadata_lock_info` plugin lockbench's
/// MariaDB loads) and lease rows not yet expired on the server's clock. On a server without the
/// plugin or the table it fails.
pub const HELD_LOCKS: &str = "SELECT (SELECT COUNT(*) FROM information_schema.METADATA_LOCK_INFO \
     WHERE LOCK_TYPE = 'User lock') \
     + (SELECT COUNT(*) FROM lockbench_leases WHERE expires_at > UTC_TIMESTAMP(6))";

/// How a MySQL strategy talks to its server (the SQL strategies' shared settings).
pub type MysqlConfig = crate::sql_config::SqlConfig;

/// The backend named by MySQL errors.
pub(super) const BACKEND: &str = "mysql";

/// A `Backend` error for a failed MySQL operation `what`.
pub(super) fn my_error(what: &str, error: &mysql_async::Error) -> LockError {
    LockError::backend(BACKEND, format!("{what}: {}", one_line(error)))
}

/// The client's error on one line (a server error with its code and state).
fn one_line(error: &mysql_async::Error) -> String {
    match error {
        mysql_async::Error::Server(e) => format!("ERROR {} ({}): {}", e.code, e.state, e.message),
        other => other.to_string().replace('\n', " "),
    }
}

/// Where a strategy connects: the client options (TLS from the address's `ca=`) and its bound.
#[derive(Clone)]
pub(super) struct ServerAddress {
    opts: Opts,
    /// The address without credentials, for messages.
    shown: String,
    connect_timeout: Duration,
    /// Statements sent on every connection opened to it.
    requests: Arc<AtomicU64>,
}

impl ServerAddress {
    /// Statements sent so far on the connections opened to it.
    pub(super) fn requests(&self) -> u64 {
        self.requests.load(Ordering::Relaxed)
    }
}

impl std::fmt::Debug for ServerAddress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerAddress")
            .field("address", &self.shown)
            .finish_non_exhaustive()
    }
}

/// The client options of `url` (`mysql://user[:pass]@host:port/db` or `mariadb://…`, with `ca=ca.pem`
/// and optionally `cert=`/`key=` for TLS, see [`crate::address`]), bounded by `config` (checked first).
/// TLS is used when the URL gives `ca=` or asks for it (`require_ssl=true`); it then needs `ca=` (no
/// system roots are trusted) and verifies the server's certificate and name. The client connects over
/// TCP as given (never over a Unix socket the server names).
pub(super) fn client_config(url: &str, config: &MysqlConfig) -> Result<ServerAddress, LockError> {
    config.validate()?;
    let shown = crate::address::redact(url);
    let bad = |why: String| LockError::Config(format!("mysql address {shown}: {why}"));
    let parts = crate::address::split(url)?;
    let bare = match parts.bare.split_once("://") {
        Some(("mysql" | "mariadb", rest)) => format!("mysql://{rest}"),
        _ => return Err(bad("the scheme must be mysql:// or mariadb://".into())),
    };
    let parsed = Opts::from_url(&bare).map_err(|e| bad(e.to_string()))?;
    if parsed.db_name().is_none() {
        return Err(bad(
            "name the database: mysql://user@host:port/DATABASE".into()
        ));
    }
    let wants_tls = parsed.ssl_opts().is_some() || !parts.tls.is_empty();
    let mut builder = OptsBuilder::from_opts(parsed).prefer_socket(false);
    if let Some(credentials) = &parts.credentials {
        builder = builder
            .user(Some(credentials.user.clone()))
            .pass(Some(credentials.password.clone()));
    }
    builder = match (wants_tls, parts.tls.read_ca()?) {
        (false, _) => builder.ssl_opts(None::<SslOpts>),
        (true, None) => {
            return Err(bad(
                "TLS needs ca=FILE (the server's certificate authority; no system roots are trusted)"
                    .into(),
            ));
        }
        (true, Some(ca)) => {
            let identity = parts
                .tls
                .read_client()?
                .map(|id| mysql_async::ClientIdentity::new(id.cert.into(), id.key.into()));
            builder.ssl_opts(
                SslOpts::default()
                    .with_root_certs(vec![ca.into()])
                    .with_disable_built_in_roots(true)
                    .with_client_identity(identity),
            )
        }
    };
    Ok(ServerAddress {
        opts: builder.into(),
        shown,
        connect_timeout: config.connect_timeout,
        requests: Arc::default(),
    })
}

/// The lease that ends with a connection (a user lock's), if one does.
type Holder = Arc<Mutex<Option<Arc<LeaseState>>>>;

/// One statement's work on a connection.
pub(super) type Work<'c, T> = Pin<Box<dyn Future<Output = mysql_async::Result<T>> + Send + 'c>>;

/// One connection: its client (one statement at a time), why it ended if it has, and the lease its
/// end marks lost.
#[derive(Debug)]
pub(crate) struct Connection {
    conn: tokio::sync::Mutex<Conn>,
    ended: Arc<Mutex<Option<String>>>,
    requests: Arc<AtomicU64>,
    holder: Holder,
}

impl Connection {
    /// Connects to `address` (failure: one line, without the password; an address that does not
    /// answer as MySQL says so).
    pub(super) async fn open(address: &ServerAddress) -> Result<Self, LockError> {
        let shown = &address.shown;
        let conn =
            match tokio::time::timeout(address.connect_timeout, Conn::new(address.opts.clone()))
                .await
            {
                Ok(Ok(conn)) => conn,
                Ok(Err(e)) if !is_foreign(&e) => return Err(my_error("connect", &e)),
                Ok(Err(e)) => {
                    return Err(LockError::backend(
                        BACKEND,
                        format!(
                            "connect: {shown} did not answer as a MySQL or MariaDB server ({})",
                            one_line(&e)
                        ),
                    ));
                }
                Err(_) => {
                    return Err(LockError::backend(
                        BACKEND,
                        format!(
                            "connect: {shown} sent no MySQL or MariaDB greeting within {:?}",
                            address.connect_timeout
                        ),
                    ));
                }
            };
        // Connecting asks the server for the settings the address does not give: one statement.
        let opts = &address.opts;
        if opts.max_allowed_packet().is_none() || opts.wait_timeout().is_none() {
            address.requests.fetch_add(1, Ordering::Relaxed);
        }
        Ok(Connection {
            conn: tokio::sync::Mutex::new(conn),
            ended: Arc::default(),
            requests: address.requests.clone(),
            holder: Holder::default(),
        })
    }

    /// Connects to `address` and checks that `table` exists (see [`require_table`]).
    pub(super) async fn open_checked(
        address: &ServerAddress,
        table: &str,
    ) -> Result<Self, LockError> {
        let connection = Self::open(address).await?;
        require_table(&connection, table).await?;
        Ok(connection)
    }

    /// Sends one statement (`work` on the client), counted. A statement that fails with a broken
    /// connection, or whose future is dropped before it ends (the protocol is then mid-exchange),
    /// ends the connection: it is not used again, and the lease tied to it is lost.
    pub(super) async fn send<T>(
        &self,
        what: &str,
        work: impl for<'c> FnOnce(&'c mut Conn) -> Work<'c, T>,
    ) -> Result<T, LockError> {
        self.send_statements(what, 1, work).await
    }

    /// [`Connection::send`] of `statements` statements sent together (counted as that many).
    pub(super) async fn send_statements<T>(
        &self,
        what: &str,
        statements: u64,
        work: impl for<'c> FnOnce(&'c mut Conn) -> Work<'c, T>,
    ) -> Result<T, LockError> {
        let mut conn = self.conn.lock().await;
        if let Some(why) = self.ended() {
            return Err(LockError::backend(BACKEND, format!("{what}: {why}")));
        }
        self.requests.fetch_add(statements, Ordering::Relaxed);
        let mut cut_off = CutOff(Some(self));
        let result = work(&mut conn).await;
        cut_off.0 = None;
        match result {
            Err(e) if e.is_fatal() || is_killed(&e) => {
                self.end(one_line(&e));
                Err(my_error(what, &e))
            }
            other => other.map_err(|e| my_error(what, &e)),
        }
    }

    /// Why the connection ended, if it has.
    fn ended(&self) -> Option<String> {
        lock(&self.ended).clone()
    }

    /// Whether the connection has ended.
    pub(super) fn is_closed(&self) -> bool {
        self.ended().is_some()
    }

    /// Marks the connection ended for `why` and the lease tied to it lost.
    fn end(&self, why: String) {
        lock(&self.ended).get_or_insert_with(|| why.clone());
        if let Some(state) = lock(&self.holder).take() {
            state.mark_lost(LossReason::ChannelClosed(why));
        }
    }

    /// Ties `state` to this connection: when the connection is found ended, `state` is lost with
    /// `ChannelClosed` and the reason. Until [`Connection::untie`].
    pub(super) fn tie(&self, state: Arc<LeaseState>) {
        *lock(&self.holder) = Some(state.clone());
        if let Some(why) = self.ended() {
            state.mark_lost(LossReason::ChannelClosed(why));
        }
    }

    /// Unties the lease [`Connection::tie`] tied.
    pub(super) fn untie(&self) {
        lock(&self.holder).take();
    }
}

/// Ends its connection when dropped armed: a statement cut off mid-exchange.
struct CutOff<'a>(Option<&'a Connection>);

impl Drop for CutOff<'_> {
    fn drop(&mut self) {
        if let Some(connection) = self.0 {
            connection.end("a statement was cut off".into());
        }
    }
}

/// Whether a failed connect means that something other than MySQL answered: anything but a server's
/// error, a TLS failure or a network one (refused, reset, unreachable).
fn is_foreign(error: &mysql_async::Error) -> bool {
    use std::io::ErrorKind;
    match error {
        mysql_async::Error::Server(_) => false,
        mysql_async::Error::Io(mysql_async::IoError::Io(e)) => !matches!(
            e.kind(),
            ErrorKind::ConnectionRefused
                | ErrorKind::ConnectionReset
                | ErrorKind::ConnectionAborted
                | ErrorKind::NotConnected
                | ErrorKind::AddrNotAvailable
                | ErrorKind::HostUnreachable
                | ErrorKind::NetworkUnreachable
                | ErrorKind::TimedOut
        ),
        mysql_async::Error::Io(_) => false,
        _ => true,
    }
}

/// Whether the server ended the session (`KILL`, ER_CONNECTION_KILLED).
fn is_killed(error: &mysql_async::Error) -> bool {
    matches!(error, mysql_async::Error::Server(e) if e.code == 1927)
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Checks that `table` exists in the address's database; if not, a `Config` error saying what to
/// create (lockbench never creates tables on a server it did not start).
pub(super) async fn require_table(connection: &Connection, table: &str) -> Result<(), LockError> {
    let table = table.to_owned();
    let found: Option<u64> = connection
        .send("check tables", |c| {
            Box::pin(c.exec_first(
                "SELECT COUNT(*) FROM information_schema.TABLES \
                 WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ?",
                (table.clone(),),
            ))
        })
        .await?;
    if found.unwrap_or(0) > 0 {
        return Ok(());
    }
    let create = SCHEMA
        .split("; ")
        .find(|s| s.contains(&table))
        .unwrap_or(SCHEMA);
    Err(LockError::Config(format!(
        "table {table} is missing on this MySQL server; create it with: {create}"
    )))
}

/// Checks a user's server as the strategies connect to it: reachable, the password right, both
/// tables there. Returns the server's version (`SELECT VERSION()`, e.g. `10.11.19-MariaDB-…`).
/// Errors are one line without the password.
pub async fn check_server(url: &str, connect_timeout: Duration) -> Result<String, LockError> {
    let config = MysqlConfig {
        connect_timeout,
        ..MysqlConfig::default()
    };
    let connection = Connection::open(&client_config(url, &config)?).await?;
    require_table(&connection, LEASE_TABLE).await?;
    require_table(&connection, FENCING_TABLE).await?;
    let version: Option<String> = connection
        .send("version", |c| Box::pin(c.query_first("SELECT VERSION()")))
        .await?;
    Ok(version.unwrap_or_default())
}
