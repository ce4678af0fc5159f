//! What the PostgreSQL strategies share: settings, connections (each with its connection task and a
//! signal when it ends), the tables they need and error mapping.

use std::str::FromStr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio::sync::watch;
use tokio_postgres::config::SslMode;
use tokio_postgres::{Client, Config, NoTls, Statement};
use tokio_postgres_rustls::MakeRustlsConnect;

use crate::error::LockError;
use crate::lease::{LeaseState, LossReason};

/// The table of `postgres-lease`: one row per lock key, kept after release (its token must keep
/// growing).
pub const LEASE_TABLE: &str = "lockbench_leases";
/// The table of `postgres-advisory`'s fencing counters, one row per lock key.
pub const FENCING_TABLE: &str = "lockbench_fencing";

/// A query of the server processes of the sessions that hold lock `key`: the session granted its
/// advisory lock (`postgres-advisory`), or the connection of the client whose live lease row it is
/// (`postgres-lease`). Run as a superuser (or a member of `pg_signal_backend`), `SELECT
/// pg_terminate_backend(pid) FROM (…) s` ends them, as an administrator or a session timeout would.
/// `key` is quoted as a literal (for the simple query protocol).
pub fn holder_sessions(key: &str) -> String {
    let key = format!("'{}'", key.replace('\'', "''"));
    format!(
        "SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted \
         AND ((classid::bigint << 32) | objid::bigint) = hashtextextended({key}, 0) \
         UNION SELECT a.pid FROM pg_stat_activity a JOIN lockbench_leases l \
         ON a.application_name = 'lockbench ' || split_part(l.holder, ':', 1) \
         WHERE l.key = {key} AND l.expires_at >= now()"
    )
}

/// The tables both strategies need. lockbench runs this on servers it starts; on a user's server a
/// missing table is a one-line error quoting what to create.
pub const SCHEMA: &str = "CREATE TABLE IF NOT EXISTS lockbench_leases (key text PRIMARY KEY, \
     holder text NOT NULL, token bigint NOT NULL, expires_at timestamptz NOT NULL); \
     CREATE TABLE IF NOT EXISTS lockbench_fencing (key text PRIMARY KEY, token bigint NOT NULL)";

/// How a PostgreSQL strategy talks to its server (the SQL strategies' shared settings).
pub type PostgresConfig = crate::sql_config::SqlConfig;

/// The backend named by PostgreSQL errors.
pub(super) const BACKEND: &str = "postgres";

/// A `Backend` error for a failed PostgreSQL operation `what`.
pub(super) fn pg_error(what: &str, error: &tokio_postgres::Error) -> LockError {
    LockError::backend(BACKEND, format!("{what}: {}", one_line(error)))
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

/// Where a strategy connects: the client settings and, when the address asks for TLS, the rustls
/// connector built from its `ca=` (and `cert=`/`key=`) files.
#[derive(Clone)]
pub(super) struct ServerAddress {
    config: Config,
    tls: Option<MakeRustlsConnect>,
    /// Statements executed on every connection opened to it (see [`Connection::sending`]).
    requests: Arc<AtomicU64>,
}

impl ServerAddress {
    /// The same address, its connections named `lockbench <name>` (`application_name`).
    pub(super) fn named(mut self, name: &str) -> Self {
        self.config.application_name(format!("lockbench {name}"));
        self
    }

    /// Statements executed so far on the connections opened to it: what `pg_stat_statements` counts
    /// of this client (preparing a statement is no execution).
    pub(super) fn requests(&self) -> u64 {
        self.requests.load(Ordering::Relaxed)
    }
}

impl std::fmt::Debug for ServerAddress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerAddress")
            .field("hosts", &self.config.get_hosts())
            .field("ports", &self.config.get_ports())
            .field("tls", &self.tls.is_some())
            .finish_non_exhaustive()
    }
}

/// The client settings of `url` (`postgres://user[:pass]@host:port/db`, with `ca=ca.pem` and
/// optionally `cert=`/`key=` for TLS, see [`crate::address`]), bounded by `config` (checked first). TLS is used when
/// the URL gives `ca=` or asks for it (`sslmode=require`); it then needs `ca=` (no system roots are
/// built in) and verifies the server's certificate and name.
pub(super) fn client_config(
    url: &str,
    config: &PostgresConfig,
) -> Result<ServerAddress, LockError> {
    config.validate()?;
    let shown = crate::address::redact(url);
    let parts = crate::address::split(url)?;
    let mut parsed = Config::from_str(&parts.bare)
        .map_err(|e| LockError::Config(format!("postgres address {shown}: {e}")))?;
    if let Some(credentials) = &parts.credentials {
        parsed
            .user(&credentials.user)
            .password(credentials.password.as_bytes());
    }
    let wants_tls = parsed.get_ssl_mode() == SslMode::Require || !parts.tls.is_empty();
    let tls = match (wants_tls, parts.tls.read_ca()?) {
        (false, _) => None,
        (true, None) => {
            return Err(LockError::Config(format!(
                "postgres address {shown}: TLS needs ca=FILE (the server's certificate authority; no system roots are built in)"
            )));
        }
        (true, Some(ca)) => {
            parsed.ssl_mode(SslMode::Require);
            Some(rustls_connector(&ca, parts.tls.read_client()?, &shown)?)
        }
    };
    parsed
        .connect_timeout(config.connect_timeout)
        .application_name("lockbench")
        // A session waiting for a lock notices within this that its client has gone (a cancelled
        // acquire), instead of taking the lock for nobody.
        .options("-c client_connection_check_interval=250");
    Ok(ServerAddress {
        config: parsed,
        tls,
        requests: Arc::default(),
    })
}

/// A rustls connector trusting the CA certificates in `ca` (PEM), with a client certificate when
/// given.
fn rustls_connector(
    ca: &[u8],
    client: Option<crate::address::ClientIdentity>,
    shown: &str,
) -> Result<MakeRustlsConnect, LockError> {
    let bad = |what: &str, e: &dyn std::fmt::Display| {
        LockError::Config(format!("postgres address {shown}: {what}: {e}"))
    };
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(ca) {
        let cert = cert.map_err(|e| bad("ca", &e))?;
        roots.add(cert).map_err(|e| bad("ca", &e))?;
    }
    if roots.is_empty() {
        return Err(bad("ca", &"no certificate in the file"));
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| bad("tls", &e))?
        .with_root_certificates(roots);
    let config = match client {
        None => builder.with_no_client_auth(),
        Some(identity) => {
            let certs = CertificateDer::pem_slice_iter(&identity.cert)
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| bad("cert", &e))?;
            let key = PrivateKeyDer::from_pem_slice(&identity.key).map_err(|e| bad("key", &e))?;
            builder
                .with_client_auth_cert(certs, key)
                .map_err(|e| bad("cert", &e))?
        }
    };
    Ok(MakeRustlsConnect::new(config))
}

/// The lease that ends with a connection (an advisory lock's), if one does.
type Holder = Arc<Mutex<Option<Arc<LeaseState>>>>;

/// One connection: its client, a signal that says why the connection ended, and the lease its end
/// marks lost.
#[derive(Debug)]
pub(super) struct Connection {
    client: Client,
    closed: watch::Receiver<Option<String>>,
    task: tokio::task::AbortHandle,
    requests: Arc<AtomicU64>,
    holder: Holder,
}

impl Connection {
    /// Connects to `address` (failure: one line, without the password).
    pub(super) async fn open(address: &ServerAddress) -> Result<Self, LockError> {
        let (tx, closed) = watch::channel(None);
        let holder = Holder::default();
        let connect = |e: tokio_postgres::Error| pg_error("connect", &e);
        let (client, task) = match &address.tls {
            None => {
                let (client, connection) = address.config.connect(NoTls).await.map_err(connect)?;
                (client, watch_connection(connection, tx, holder.clone()))
            }
            Some(tls) => {
                let (client, connection) =
                    address.config.connect(tls.clone()).await.map_err(connect)?;
                (client, watch_connection(connection, tx, holder.clone()))
            }
        };
        Ok(Connection {
            client,
            closed,
            task,
            requests: address.requests.clone(),
            holder,
        })
    }

    /// Connects to `address`, checks that `table` exists (see [`require_table`]) and prepares
    /// `statements` on the connection, in order.
    pub(super) async fn open_prepared<const N: usize>(
        address: &ServerAddress,
        table: &str,
        statements: [&str; N],
    ) -> Result<(Self, [Statement; N]), LockError> {
        let connection = Self::open(address).await?;
        require_table(&connection, table).await?;
        let mut prepared = Vec::with_capacity(N);
        for sql in statements {
            let statement = connection
                .client
                .prepare(sql)
                .await
                .map_err(|e| pg_error("prepare", &e))?;
            prepared.push(statement);
        }
        let prepared = prepared
            .try_into()
            .unwrap_or_else(|_| unreachable!("one statement prepared for each of the {N}"));
        Ok((connection, prepared))
    }

    /// The client, for one statement's execution, which is counted.
    pub(super) fn sending(&self) -> &Client {
        self.requests.fetch_add(1, Ordering::Relaxed);
        &self.client
    }

    /// Whether the connection has ended.
    pub(super) fn is_closed(&self) -> bool {
        self.client.is_closed() || self.closed.borrow().is_some()
    }

    /// Ties `state` to this connection: when the connection ends, `state` is lost with
    /// `ChannelClosed` and the reason, at once (at once here too if it has ended already). Until
    /// [`Connection::untie`].
    pub(super) fn tie(&self, state: Arc<LeaseState>) {
        *lock(&self.holder) = Some(state.clone());
        // The connection's task sets `closed` before it reads the holder: one of the two sees the end.
        if let Some(why) = self.closed.borrow().clone() {
            state.mark_lost(LossReason::ChannelClosed(why));
        }
    }

    /// Unties the lease [`Connection::tie`] tied.
    pub(super) fn untie(&self) {
        lock(&self.holder).take();
    }
}

fn lock(holder: &Holder) -> std::sync::MutexGuard<'_, Option<Arc<LeaseState>>> {
    holder
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Runs a connection's task, telling `tx` why it ended, then marking the lease tied to it lost.
fn watch_connection(
    connection: impl std::future::Future<Output = Result<(), tokio_postgres::Error>> + Send + 'static,
    tx: watch::Sender<Option<String>>,
    holder: Holder,
) -> tokio::task::AbortHandle {
    tokio::spawn(async move {
        let why = match connection.await {
            Ok(()) => "connection closed".to_owned(),
            Err(e) => one_line(&e),
        };
        tx.send_replace(Some(why.clone()));
        if let Some(state) = lock(&holder).take() {
            state.mark_lost(LossReason::ChannelClosed(why));
        }
    })
    .abort_handle()
}

impl Drop for Connection {
    fn drop(&mut self) {
        // Closes the socket: the server ends the session (and frees its advisory locks) at once.
        self.task.abort();
    }
}

/// Checks that `table` exists; if not, a `Config` error saying what to create (lockbench never
/// creates tables on a server it did not start).
pub(super) async fn require_table(connection: &Connection, table: &str) -> Result<(), LockError> {
    let row = connection
        .sending()
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
    require_table(&connection, LEASE_TABLE).await?;
    require_table(&connection, FENCING_TABLE).await?;
    let row = connection
        .sending()
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
