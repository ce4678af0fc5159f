//! Redis behind Sentinel: `redis+sentinel://[user:pass@]host:port[,host:port…]/service[/db]`;
//! `rediss+sentinel://…/service[/db][?ca=ca.pem[&cert=c.pem&key=c.key]]` speaks TLS to the Sentinels
//! and to every primary they name, with the same files.
//!
//! The client asks the Sentinels, in the order given, which server is the primary of `service`
//! (`SENTINEL MASTER`, skipping a Sentinel that holds its primary for down) and opens the command connection there, authenticating with
//! the address's user and password (the Sentinels themselves are asked without them, or with the
//! password alone when one answers `NOAUTH`: its own `requirepass`). When a command
//! on the primary fails as a failover makes it fail (the connection broke or was refused, an answer
//! timed out, or the server answers `READONLY` because it was demoted), the Sentinels are asked
//! again, at most once per [`ASK_AT_MOST_EVERY`], and a newly named primary gets a new connection
//! that later commands use; the command that failed is not retried (its caller reports it).
//!
//! Further connections (pub/sub, a guard thread's blocking connection) are opened from
//! [`SentinelRoute::client`], the primary named last; when one of them breaks, its owner calls
//! [`SentinelRoute::ask_again`] and opens the next one wherever the Sentinels point by then. Sentinel
//! queries go to the Sentinels, so they are not counted among the requests the Redis servers saw.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use redis::aio::ConnectionManagerConfig;

use super::client::{BACKEND, ConnectionSettings, RequestCount, open_parts};
use super::counted::CountedManager;
use crate::address::{self, Credentials, TlsFiles};
use crate::error::LockError;

/// The scheme of a Sentinel address.
pub(crate) const SCHEME: &str = "redis+sentinel://";
/// The scheme of a Sentinel address over TLS.
pub(crate) const TLS_SCHEME: &str = "rediss+sentinel://";
/// The port a Sentinel listens on unless the address says otherwise.
const DEFAULT_PORT: u16 = 26379;
/// The Sentinels are asked again after a failed command at most this often.
pub(crate) const ASK_AT_MOST_EVERY: Duration = Duration::from_millis(100);

/// A parsed Sentinel address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SentinelAddress {
    /// `host:port` of each Sentinel, in the order to ask them.
    pub sentinels: Vec<String>,
    /// The name the Sentinels monitor the primary under.
    pub service: String,
    /// The database on the primary.
    pub db: i64,
    /// The primary's user and password.
    pub credentials: Option<Credentials>,
    /// TLS to the Sentinels and the primaries (`rediss+sentinel://`), with these files (none: the
    /// system's roots).
    pub tls: Option<TlsFiles>,
}

impl SentinelAddress {
    /// A client of the server at `host_port` (a primary, with its database; a Sentinel, with db 0
    /// as given) over TLS when the address asks for it, logged in with `credentials`.
    fn client_of(
        &self,
        host_port: &str,
        credentials: Option<&Credentials>,
        shown: &str,
    ) -> Result<redis::Client, LockError> {
        let plain = TlsFiles::default();
        let (scheme, tls) = match &self.tls {
            Some(tls) => ("rediss", tls),
            None => ("redis", &plain),
        };
        open_parts(
            &format!("{scheme}://{host_port}/{}", self.db),
            credentials,
            tls,
            shown,
        )
    }

    /// Parses `url` if it is a Sentinel address (`None` for any other scheme).
    pub(crate) fn parse(url: &str) -> Result<Option<Self>, LockError> {
        let over_tls = url.starts_with(TLS_SCHEME);
        if !url.starts_with(SCHEME) && !over_tls {
            return Ok(None);
        }
        let shown = address::redact(url);
        let bad = |why: &str| LockError::Config(format!("sentinel address {shown:?}: {why}"));
        let parts = address::split(url)?;
        if !over_tls && !parts.tls.is_empty() {
            return Err(bad("ca=, cert= and key= need a rediss+sentinel:// address"));
        }
        let scheme = if over_tls { TLS_SCHEME } else { SCHEME };
        let rest = &parts.bare[scheme.len()..];
        if rest.contains('?') {
            return Err(bad("unknown query parameters"));
        }
        let (hosts, path) = rest
            .split_once('/')
            .ok_or_else(|| bad("the service name is missing (…/service)"))?;
        let (service, db) = match path.split_once('/') {
            Some((service, db)) => (
                service,
                db.parse::<i64>()
                    .map_err(|_| bad("the database after the service must be a number"))?,
            ),
            None => (path, 0),
        };
        if service.is_empty() {
            return Err(bad("the service name is missing (…/service)"));
        }
        let sentinels = hosts
            .split(',')
            .map(|host| match host.rsplit_once(':') {
                Some((name, port)) if !name.is_empty() && port.parse::<u16>().is_ok() => {
                    Ok(host.to_owned())
                }
                None if !host.is_empty() => Ok(format!("{host}:{DEFAULT_PORT}")),
                _ => Err(bad("each Sentinel must be host or host:port")),
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Some(SentinelAddress {
            sentinels,
            service: service.to_owned(),
            db,
            credentials: parts.credentials,
            tls: over_tls.then_some(parts.tls),
        }))
    }
}

/// The primary a route uses now.
struct Current {
    primary: String,
    client: redis::Client,
    manager: CountedManager,
}

/// The command connection to whichever server the Sentinels name primary (see the module doc).
pub(crate) struct SentinelRoute {
    address: SentinelAddress,
    shown: String,
    settings: ConnectionSettings,
    config: ConnectionManagerConfig,
    /// The count every primary's connection adds to.
    requests: RequestCount,
    current: RwLock<Current>,
    asking: AtomicBool,
    last_asked: Mutex<Option<Instant>>,
    /// Where the asking runs, also when a renewal thread (no runtime of its own) calls for it.
    runtime: tokio::runtime::Handle,
}

impl SentinelRoute {
    /// Asks the Sentinels of `address` for the primary and opens a lazy connection to it.
    pub(crate) async fn open(
        address: SentinelAddress,
        shown: String,
        settings: ConnectionSettings,
        config: ConnectionManagerConfig,
        requests: RequestCount,
    ) -> Result<Arc<Self>, LockError> {
        let primary = ask_sentinels(&address, settings.connect_timeout).await?;
        let current = connect(&address, &shown, &primary, &config, &requests)?;
        Ok(Arc::new(SentinelRoute {
            address,
            shown,
            settings,
            config,
            requests,
            current: RwLock::new(current),
            asking: AtomicBool::new(false),
            last_asked: Mutex::new(None),
            runtime: tokio::runtime::Handle::current(),
        }))
    }

    /// The connection to the current primary (a cheap clone).
    pub(crate) fn manager(&self) -> CountedManager {
        self.read().manager.clone()
    }

    /// A client for the current primary, for further connections.
    pub(crate) fn client(&self) -> redis::Client {
        self.read().client.clone()
    }

    /// The database on the primary.
    pub(crate) fn db(&self) -> i64 {
        self.address.db
    }

    /// The current primary, `host:port`.
    pub(crate) fn primary(&self) -> String {
        self.read().primary.clone()
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, Current> {
        self.current.read().unwrap_or_else(|e| e.into_inner())
    }

    /// After a failed command: asks the Sentinels again ([`Self::ask_again`]) when `error` is one a
    /// failover causes.
    pub(crate) fn after_error(self: &Arc<Self>, error: &redis::RedisError) {
        let failover_like = error.is_io_error()
            || error.is_connection_dropped()
            || error.is_connection_refusal()
            || error.is_timeout()
            || error.code() == Some("READONLY");
        if failover_like {
            self.ask_again();
        }
    }

    /// Asks the Sentinels for the primary again, in the background, unless they were asked less than
    /// [`ASK_AT_MOST_EVERY`] ago or are being asked now. For connections that broke outside the
    /// command connection (pub/sub, a renewal thread's own).
    pub(crate) fn ask_again(self: &Arc<Self>) {
        {
            let mut last = self.last_asked.lock().unwrap_or_else(|e| e.into_inner());
            if last.is_some_and(|at| at.elapsed() < ASK_AT_MOST_EVERY) {
                return;
            }
            if self.asking.swap(true, Ordering::AcqRel) {
                return;
            }
            *last = Some(Instant::now());
        }
        let route = self.clone();
        self.runtime.spawn(async move {
            route.follow().await;
            route.asking.store(false, Ordering::Release);
        });
    }

    /// Asks the Sentinels for the primary and switches to it if it changed.
    async fn follow(&self) {
        let Ok(primary) = ask_sentinels(&self.address, self.settings.connect_timeout).await else {
            return;
        };
        if primary == self.read().primary {
            return;
        }
        if let Ok(next) = connect(
            &self.address,
            &self.shown,
            &primary,
            &self.config,
            &self.requests,
        ) {
            *self.current.write().unwrap_or_else(|e| e.into_inner()) = next;
        }
    }
}

/// Opens a lazy connection to `primary` (`host:port`) with the address's credentials, counting in
/// `requests`.
fn connect(
    address: &SentinelAddress,
    shown: &str,
    primary: &str,
    config: &ConnectionManagerConfig,
    requests: &RequestCount,
) -> Result<Current, LockError> {
    let client = address.client_of(primary, address.credentials.as_ref(), shown)?;
    let manager = CountedManager::new_lazy(client.clone(), config.clone(), requests.clone())?;
    Ok(Current {
        primary: primary.to_owned(),
        client,
        manager,
    })
}

/// The primary the first Sentinel that knows `address.service` names, `host:port`; each Sentinel
/// gets `timeout` to answer.
async fn ask_sentinels(address: &SentinelAddress, timeout: Duration) -> Result<String, LockError> {
    let mut why = Vec::new();
    for sentinel in &address.sentinels {
        let asking = ask_one(address, sentinel);
        match tokio::time::timeout(timeout, asking).await {
            Ok(Ok(Some(primary))) => return Ok(primary),
            Ok(Ok(None)) => why.push(format!(
                "{sentinel}: knows no live primary of {:?}",
                address.service
            )),
            Ok(Err(e)) => why.push(format!("{sentinel}: {e}")),
            Err(_) => why.push(format!("{sentinel}: no answer within {timeout:?}")),
        }
    }
    Err(LockError::backend(
        BACKEND,
        format!("no Sentinel named a primary ({})", why.join("; ")),
    ))
}

/// What one Sentinel says: the primary's `host:port`, or `None` when it does not know `service` or
/// holds its primary for down (`s_down`/`o_down` in its flags). A Sentinel that did not take part in a
/// promotion learns of it from the others' hello messages, up to 2 s later, and meanwhile names the
/// dead primary flagged down; skipping it finds one that knows.
/// A Sentinel that answers `NOAUTH` (its own `requirepass`) is asked again with the address's password.
async fn ask_one(address: &SentinelAddress, sentinel: &str) -> redis::RedisResult<Option<String>> {
    let password = address.credentials.as_ref().map(|c| c.password.as_str());
    let state = match sentinel_master(address, sentinel, None).await {
        Err(e) if e.code() == Some("NOAUTH") && password.is_some() => {
            sentinel_master(address, sentinel, password).await
        }
        other => other,
    };
    let state = match state {
        Ok(state) => state,
        Err(e) if e.code() == Some("ERR") => return Ok(None),
        Err(e) => return Err(e),
    };
    let down = state
        .get("flags")
        .is_some_and(|flags| flags.split(',').any(|f| f == "s_down" || f == "o_down"));
    Ok(match (state.get("ip"), state.get("port")) {
        (Some(ip), Some(port)) if !down => Some(format!("{ip}:{port}")),
        _ => None,
    })
}

/// `SENTINEL MASTER service` of the Sentinel at `sentinel` as a field map, on a connection
/// authenticated with `password` (the default user) when given, over TLS when the address asks.
async fn sentinel_master(
    address: &SentinelAddress,
    sentinel: &str,
    password: Option<&str>,
) -> redis::RedisResult<HashMap<String, String>> {
    let login = password.map(|password| Credentials {
        user: String::new(),
        password: password.to_owned(),
    });
    let sentinel_address = SentinelAddress {
        db: 0,
        ..address.clone()
    };
    let client = sentinel_address
        .client_of(sentinel, login.as_ref(), sentinel)
        .map_err(|e| {
            redis::RedisError::from((
                redis::ErrorKind::InvalidClientConfig,
                "bad sentinel address",
                e.to_string(),
            ))
        })?;
    let mut connection = client.get_multiplexed_async_connection().await?;
    redis::cmd("SENTINEL")
        .arg("MASTER")
        .arg(&address.service)
        .query_async(&mut connection)
        .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sentinel_addresses_parse() {
        let parsed = SentinelAddress::parse("redis+sentinel://app:p%40w@10.0.0.1:5000,h2/orders/3")
            .expect("valid")
            .expect("a sentinel address");
        assert_eq!(parsed.sentinels, ["10.0.0.1:5000", "h2:26379"]);
        assert_eq!((parsed.service.as_str(), parsed.db), ("orders", 3));
        let credentials = parsed.credentials.expect("credentials");
        assert_eq!(credentials.password, "p@w");
        assert!(
            SentinelAddress::parse("redis://h:1")
                .expect("other scheme")
                .is_none()
        );
        let tls = SentinelAddress::parse("rediss+sentinel://h:1/orders?ca=/tmp/ca.pem")
            .expect("valid")
            .expect("a sentinel address");
        assert_eq!(tls.service, "orders");
        assert!(tls.tls.is_some_and(|files| files.ca.is_some()));
        for bad in [
            "redis+sentinel://h:1",
            "redis+sentinel://h:1/",
            "redis+sentinel://h:x/s",
            "redis+sentinel://h:1/s/x",
            "redis+sentinel://u:secret@h:1/s?ca=/tmp/ca.pem",
        ] {
            let error = SentinelAddress::parse(bad).expect_err(bad).to_string();
            assert!(!error.contains("secret"), "{error}");
        }
    }
}
