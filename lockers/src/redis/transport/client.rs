//! Below every Redis connection: the `redis::Client` an address describes (ACL user, TLS files), the
//! settings that bound how long connecting and answering may take, the conversion of redis-rs errors
//! into [`LockError::Backend`] with backend `"redis"`, and the count of requests a client sent.
//!
//! Every Redis connection of a client (commands, pub/sub, a guard thread's blocking connection, each
//! Redlock node, each primary a Sentinel names) comes from a `redis::Client` built by [`open_client`] or
//! `open_parts`, so an ACL user (`redis://user:pass@host`) and TLS
//! (`rediss://host?ca=ca.pem[&cert=c.pem&key=c.key]`, rustls) hold for all of them. Errors show the
//! address redacted.
//!
//! Every command a client sends is counted in that client's [`RequestCount`] (read through
//! `Locker::requests_sent`): the requests the server saw from it, a script call counting once however
//! many `redis.call`s it runs (Redis's own `INFO commandstats` counts those too, so it cannot tell them
//! apart). Commands are counted by the multiplexed connection's manager (`counted`: answered or
//! timed-out requests, and every connection's handshake, after a reconnect too), by the pub/sub
//! connection (subscriptions), a guard thread's blocking connection and the cluster layout reads, and
//! by [`RequestCount::handshake`] (`AUTH`/`SELECT` when a connection opens; `CLIENT SETINFO` is not
//! sent). Tests check the count against what `MONITOR` saw, also through a server restart.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use crate::address::{self, Credentials, TlsFiles};
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

    /// The connection manager's configuration every `lockers` Redis connection uses: these timeouts, 2
    /// reconnect attempts between 20 ms and the connect timeout apart.
    pub fn manager_config(&self) -> redis::aio::ConnectionManagerConfig {
        redis::aio::ConnectionManagerConfig::new()
            .set_connection_timeout(Some(self.connect_timeout))
            .set_response_timeout(Some(self.response_timeout))
            .set_number_of_retries(2)
            .set_min_delay(Duration::from_millis(20))
            .set_max_delay(self.connect_timeout)
    }
}

/// The client every connection to `url` is opened from: `redis://[user:pass@]host:port[/db]`, or
/// `rediss://…` for TLS, with `?ca=<pem>` (trusted CAs; default the system's roots) and optionally
/// `&cert=<pem>&key=<pem>` (a client certificate). TLS files on a `redis://` URL, an unreadable file or
/// a bad URL are a `Config` error; the error shows the URL redacted.
pub fn open_client(url: &str) -> Result<redis::Client, LockError> {
    let shown = address::redact(url);
    let parts = address::split(url)?;
    open_parts(&parts.bare, parts.credentials.as_ref(), &parts.tls, &shown)
}

/// [`open_client`] from an address already taken apart: `bare` without credentials and TLS files;
/// `shown` is the redacted address for errors.
pub(crate) fn open_parts(
    bare: &str,
    credentials: Option<&Credentials>,
    tls: &TlsFiles,
    shown: &str,
) -> Result<redis::Client, LockError> {
    let bad = |e: redis::RedisError| LockError::Config(format!("redis url {shown:?}: {e}"));
    let mut info = redis::IntoConnectionInfo::into_connection_info(bare).map_err(bad)?;
    // No `CLIENT SETINFO` on connect: every command the server sees is one the strategy sent.
    let quiet = info.redis_settings().clone().set_skip_set_lib_name();
    info = info.set_redis_settings(quiet);
    if let Some(credentials) = credentials {
        let mut settings = info.redis_settings().clone();
        if !credentials.user.is_empty() {
            settings = settings.set_username(&credentials.user);
        }
        if !credentials.password.is_empty() {
            settings = settings.set_password(&credentials.password);
        }
        info = info.set_redis_settings(settings);
    }
    if tls.is_empty() {
        return redis::Client::open(info).map_err(bad);
    }
    if !matches!(info.addr(), redis::ConnectionAddr::TcpTls { .. }) {
        return Err(LockError::Config(format!(
            "redis url {shown:?}: ca=, cert= and key= need a rediss:// URL"
        )));
    }
    let certificates = redis::TlsCertificates {
        client_tls: tls.read_client()?.map(|identity| redis::ClientTlsConfig {
            client_cert: identity.cert,
            client_key: identity.key,
        }),
        root_cert: tls.read_ca()?,
    };
    redis::Client::build_with_tls(info, certificates).map_err(bad)
}

/// The error in a command's answer: a failed request, or an error the server answered (redis-rs
/// hands those back as `Ok(Value::ServerError)`; `query_async` turns them into `Err` only later).
pub(crate) fn error_of(answer: &redis::RedisResult<redis::Value>) -> Option<redis::RedisError> {
    match answer {
        Err(error) => Some(error.clone()),
        Ok(value) => server_error(value),
    }
}

/// [`error_of`] for a pipeline's answers: the first error among them.
pub(crate) fn error_of_all(
    answer: &redis::RedisResult<Vec<redis::Value>>,
) -> Option<redis::RedisError> {
    match answer {
        Err(error) => Some(error.clone()),
        Ok(values) => values.iter().find_map(server_error),
    }
}

fn server_error(value: &redis::Value) -> Option<redis::RedisError> {
    match value {
        redis::Value::ServerError(error) => Some(error.clone().into()),
        _ => None,
    }
}

/// The requests one client's connections sent: script calls count once, pipelines count each command
/// (`MULTI`/`EXEC` included), connection handshakes count their commands. Cloning shares the count; every
/// connection of a client (its command connection through reconnects, pub/sub, blocking connections,
/// the cluster layout reads) adds to the one count of the `RedisConnection` it was opened from.
#[derive(Debug, Clone, Default)]
pub(crate) struct RequestCount(Arc<AtomicU64>);

impl RequestCount {
    /// Requests counted so far.
    pub(crate) fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }

    /// Counts `n` requests sent.
    pub(crate) fn sent(&self, n: u64) {
        self.0.fetch_add(n, Ordering::Relaxed);
    }

    /// Takes back `n` requests counted when sent that never reached a server (their link was broken).
    pub(crate) fn unsent(&self, n: u64) {
        self.0.fetch_sub(n, Ordering::Relaxed);
    }

    /// Counts the commands a new connection of `client` sends before any of ours: `AUTH` with a
    /// password, `SELECT` for a database other than 0.
    pub(crate) fn handshake(&self, client: &redis::Client) {
        let settings = client.get_connection_info().redis_settings();
        let auth = u64::from(settings.password().is_some());
        let select = u64::from(settings.db() != 0);
        self.sent(auth + select);
    }
}
