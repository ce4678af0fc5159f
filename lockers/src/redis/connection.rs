//! The connection every Redis strategy client opens: one multiplexed, self-reconnecting command connection
//! (redis-rs's `ConnectionManager`), the settings that bound how long connecting and answering may take,
//! and the conversion of redis-rs errors into [`LockError::Backend`] with backend `"redis"`.
//!
//! A connect to an unreachable address fails within [`ConnectionSettings::connect_timeout`]; it never
//! hangs and never retries past that bound. Once connected, a broken connection is re-established in the
//! background by the manager; the command that saw the break fails (and is reported by its caller).
//!
//! Every Redis connection of a client (commands, pub/sub, a guard thread's blocking connection, each
//! Redlock node) comes from the one `redis::Client` built by [`open_client`], so an ACL user
//! (`redis://user:pass@host`) and TLS (`rediss://host?ca=ca.pem[&cert=c.pem&key=c.key]`, rustls) hold
//! for all of them. Errors and `Debug` show the address redacted.
//!
//! Every command a client sends is counted ([`commands_sent`]): the requests the server saw from this
//! process, a script call counting once however many `redis.call`s it runs (Redis's own `INFO
//! commandstats` counts those too, so it cannot tell them apart). Commands go through [`Commands`]
//! (the multiplexed connection), `count_sent` (pub/sub subscriptions, a guard thread's blocking
//! connection) and `count_handshake` (`AUTH`/`SELECT` when a connection opens; `CLIENT SETINFO` is
//! not sent). A test checks the count against what `MONITOR` saw.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use redis::aio::{ConnectionLike, ConnectionManager, ConnectionManagerConfig};
use redis::{Cmd, Pipeline, RedisFuture, Value};

use crate::address;
use crate::error::LockError;

/// The backend name every Redis error carries.
pub const BACKEND: &str = "redis";

impl From<redis::RedisError> for LockError {
    fn from(error: redis::RedisError) -> Self {
        LockError::backend(BACKEND, error)
    }
}

/// How long a Redis client may wait for the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnectionSettings {
    /// Bound on establishing a connection, including the first connect (default 1 s).
    pub connect_timeout: Duration,
    /// Bound on one command's answer; past it the command fails with a `Backend` error (default 1 s).
    pub response_timeout: Duration,
}

impl Default for ConnectionSettings {
    fn default() -> Self {
        ConnectionSettings {
            connect_timeout: Duration::from_secs(1),
            response_timeout: Duration::from_secs(1),
        }
    }
}

impl ConnectionSettings {
    /// Checks the settings; a `Config` error names the bad one.
    pub fn validate(&self) -> Result<(), LockError> {
        if self.connect_timeout.is_zero() {
            return Err(LockError::Config(
                "connection.connect_timeout must be > 0".into(),
            ));
        }
        if self.response_timeout.is_zero() {
            return Err(LockError::Config(
                "connection.response_timeout must be > 0".into(),
            ));
        }
        Ok(())
    }
}

/// The client every connection to `url` is opened from: `redis://[user:pass@]host:port[/db]`, or
/// `rediss://…` for TLS, with `?ca=<pem>` (trusted CAs; default the system's roots) and optionally
/// `&cert=<pem>&key=<pem>` (a client certificate). TLS files on a `redis://` URL, an unreadable file or
/// a bad URL are a `Config` error; the error shows the URL redacted.
pub fn open_client(url: &str) -> Result<redis::Client, LockError> {
    let shown = address::redact(url);
    let parts = address::split(url)?;
    let bad = |e: redis::RedisError| LockError::Config(format!("redis url {shown:?}: {e}"));
    let mut info =
        redis::IntoConnectionInfo::into_connection_info(parts.bare.as_str()).map_err(bad)?;
    // No `CLIENT SETINFO` on connect: every command the server sees is one the strategy sent.
    let quiet = info.redis_settings().clone().set_skip_set_lib_name();
    info = info.set_redis_settings(quiet);
    if let Some(credentials) = parts.credentials {
        let mut settings = info.redis_settings().clone();
        if !credentials.user.is_empty() {
            settings = settings.set_username(&credentials.user);
        }
        if !credentials.password.is_empty() {
            settings = settings.set_password(&credentials.password);
        }
        info = info.set_redis_settings(settings);
    }
    if parts.tls.is_empty() {
        return redis::Client::open(info).map_err(bad);
    }
    if !matches!(info.addr(), redis::ConnectionAddr::TcpTls { .. }) {
        return Err(LockError::Config(format!(
            "redis url {shown:?}: ca=, cert= and key= need a rediss:// URL"
        )));
    }
    let certificates = redis::TlsCertificates {
        client_tls: parts
            .tls
            .read_client()?
            .map(|identity| redis::ClientTlsConfig {
                client_cert: identity.cert,
                client_key: identity.key,
            }),
        root_cert: parts.tls.read_ca()?,
    };
    redis::Client::build_with_tls(info, certificates).map_err(bad)
}

/// Commands this process's Redis clients sent so far.
static SENT: AtomicU64 = AtomicU64::new(0);

/// How many commands every Redis client of this process has sent so far (script calls count once;
/// pipelines count each command, `MULTI`/`EXEC` included). The difference across a case is the
/// requests its clients sent.
pub fn commands_sent() -> u64 {
    SENT.load(Ordering::Relaxed)
}

/// Counts `n` commands sent outside [`Commands`] (subscriptions, blocking connections).
pub(crate) fn count_sent(n: u64) {
    SENT.fetch_add(n, Ordering::Relaxed);
}

/// Counts the commands a new connection of `client` sends before any of ours: `AUTH` with a
/// password, `SELECT` for a database other than 0.
pub(crate) fn count_handshake(client: &redis::Client) {
    let settings = client.get_connection_info().redis_settings();
    let auth = u64::from(settings.password().is_some());
    let select = u64::from(settings.db() != 0);
    count_sent(auth + select);
}

/// The shared command connection, counting what it sends (see [`commands_sent`]). Cloning is cheap:
/// every clone pipelines on the one socket.
#[derive(Clone)]
pub struct Commands(ConnectionManager);

impl fmt::Debug for Commands {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Commands")
    }
}

impl ConnectionLike for Commands {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        count_sent(1);
        self.0.req_packed_command(cmd)
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        let wrapper = if pipeline.is_transaction() { 2 } else { 0 };
        count_sent((pipeline.len() + wrapper) as u64);
        self.0.req_packed_commands(pipeline, offset, count)
    }

    fn get_db(&self) -> i64 {
        self.0.get_db()
    }
}

/// One client's link to a Redis server: the parsed address (for further connections such as pub/sub)
/// and the shared command connection. Cloning is cheap and shares the connection.
#[derive(Clone)]
pub struct RedisConnection {
    client: redis::Client,
    commands: Commands,
    settings: ConnectionSettings,
}

impl fmt::Debug for RedisConnection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The address may carry a password; show only where it points.
        let addr = &self.client.get_connection_info().addr();
        f.debug_struct("RedisConnection")
            .field("addr", &addr.to_string())
            .field("settings", &self.settings)
            .finish()
    }
}

impl RedisConnection {
    /// Connects to `url` (`redis[s]://[user:pass@]host:port[/db][?ca=…]`, see [`open_client`]). A bad
    /// URL is a `Config` error; a server that does not answer within `settings.connect_timeout` is a
    /// `Backend` error.
    pub async fn connect(url: &str, settings: ConnectionSettings) -> Result<Self, LockError> {
        settings.validate()?;
        let client = open_client(url)?;
        let url = address::redact(url);
        let config = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(settings.connect_timeout))
            .set_response_timeout(Some(settings.response_timeout))
            .set_number_of_retries(2)
            .set_min_delay(Duration::from_millis(20))
            .set_max_delay(settings.connect_timeout);
        // The manager connects lazily; the first PING proves the server is there, within the bound.
        let mut commands = Commands(ConnectionManager::new_lazy_with_config(
            client.clone(),
            config,
        )?);
        count_handshake(&client);
        let ping_cmd = redis::cmd("PING");
        let ping = ping_cmd.query_async::<String>(&mut commands);
        match tokio::time::timeout(settings.connect_timeout, ping).await {
            Ok(Ok(_pong)) => {}
            Ok(Err(e)) => return Err(e.into()),
            Err(_elapsed) => {
                return Err(LockError::backend(
                    BACKEND,
                    format!(
                        "no answer from {url:?} within the connect timeout of {:?}",
                        settings.connect_timeout
                    ),
                ));
            }
        }
        Ok(RedisConnection {
            client,
            commands,
            settings,
        })
    }

    /// The shared, multiplexed command connection (a cheap clone: every clone pipelines on one socket).
    pub fn commands(&self) -> Commands {
        self.commands.clone()
    }

    /// The parsed client, for opening further connections (pub/sub) to the same server.
    pub fn client(&self) -> &redis::Client {
        &self.client
    }

    /// The timeouts this connection was opened with.
    pub fn settings(&self) -> ConnectionSettings {
        self.settings
    }
}
