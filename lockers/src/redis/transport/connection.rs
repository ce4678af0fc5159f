//! The connection every Redis strategy client opens: one multiplexed, self-reconnecting command connection
//! (redis-rs's `ConnectionManager`) that counts what it sends, on the client the `client` module builds.
//!
//! A connect to an unreachable address fails within [`ConnectionSettings::connect_timeout`]; it never
//! hangs and never retries past that bound. Once connected, a broken connection is re-established in the
//! background by the manager; the command that saw the break fails (and is reported by its caller).
//!
//! Further connections of a client (pub/sub, a guard thread's blocking connection) are opened from
//! [`RedisConnection::client`]. Errors and `Debug` show the address redacted. A `redis+sentinel://`
//! address sends commands to whichever server the Sentinels name primary, asking them again after an
//! error a failover causes (see the `sentinel` module). A `redis+cluster://` address sends each
//! command to the master of its key's slot, following `MOVED` (see the `cluster` module).
//! Every connection of a client counts what it sends in one count ([`RedisConnection::requests_sent`]).

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use redis::aio::ConnectionLike;
use redis::{Cmd, Pipeline, RedisFuture, Value};

pub use super::client::{BACKEND, ConnectionSettings, open_client};
use super::client::{RequestCount, error_of, error_of_all};
use super::cluster::{ClusterAddress, ClusterRoute, slot};
use super::counted::CountedManager;
use super::sentinel::{SentinelAddress, SentinelRoute};
use crate::address;
use crate::error::LockError;

/// The shared command connection, counting what it sends (see [`RedisConnection::requests_sent`]). Cloning is cheap:
/// every clone pipelines on the one socket.
#[derive(Clone)]
pub struct Commands(Route);

/// Where commands go: one server, whichever the Sentinels name primary, or each key's master in a
/// cluster.
// The direct route is every command's path and is cloned per operation: kept inline, unboxed.
#[allow(clippy::large_enum_variant)]
#[derive(Clone)]
enum Route {
    Direct(CountedManager),
    Sentinel(Arc<SentinelRoute>),
    Cluster(Arc<ClusterRoute>),
}

impl fmt::Debug for Commands {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Commands")
    }
}

impl Commands {
    fn client(&self) -> redis::Client {
        match &self.0 {
            Route::Direct(manager) => manager.client().clone(),
            Route::Sentinel(route) => route.client(),
            Route::Cluster(route) => route.client(),
        }
    }

    fn client_of_shard(&self, shard: Option<u16>) -> redis::Client {
        match &self.0 {
            Route::Cluster(route) => route.client_of_slot(shard),
            _ => self.client(),
        }
    }

    /// The server commands go to now, `host:port` (in a cluster, the first master).
    pub(crate) fn server(&self) -> String {
        self.client().get_connection_info().addr().to_string()
    }

    /// Whether commands go to a Redis Cluster (a batch script call must then name keys of one slot).
    pub(crate) fn is_cluster(&self) -> bool {
        matches!(self.0, Route::Cluster(_))
    }

    /// Commands bound to the server holding `key` now: in a cluster, its slot's master, for a command
    /// that must follow a write on the same connection (`WAIT`); elsewhere these same commands.
    pub(crate) fn pinned_to(&self, key: &str) -> Commands {
        self.pinned_to_shard(Some(slot(key.as_bytes())))
    }

    /// Commands bound to the master serving `shard` now (see [`RedisConnection::shard_of_slots`]);
    /// outside a cluster, these same commands.
    pub(crate) fn pinned_to_shard(&self, shard: Option<u16>) -> Commands {
        match (&self.0, shard) {
            (Route::Cluster(route), Some(shard)) => match route.node_of_slot(shard) {
                Ok(node) => Commands(Route::Direct(node.manager)),
                Err(_) => self.clone(),
            },
            _ => self.clone(),
        }
    }
}

impl ConnectionLike for Commands {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        if let Route::Cluster(route) = &self.0 {
            // Counted per node the command reaches.
            let route = route.clone();
            return Box::pin(async move { route.send(cmd).await });
        }
        // Counted by the connection it goes over.
        match &mut self.0 {
            Route::Cluster(_) => unreachable!("sent above"),
            Route::Direct(manager) => manager.req_packed_command(cmd),
            Route::Sentinel(route) => {
                let route = route.clone();
                Box::pin(async move {
                    let answer = route.manager().req_packed_command(cmd).await;
                    if let Some(e) = error_of(&answer) {
                        route.after_error(&e);
                    }
                    answer
                })
            }
        }
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        if let Route::Cluster(route) = &self.0 {
            let route = route.clone();
            return Box::pin(async move { route.send_pipeline(pipeline, offset, count).await });
        }
        match &mut self.0 {
            Route::Cluster(_) => unreachable!("sent above"),
            Route::Direct(manager) => manager.req_packed_commands(pipeline, offset, count),
            Route::Sentinel(route) => {
                let route = route.clone();
                Box::pin(async move {
                    let answer = route
                        .manager()
                        .req_packed_commands(pipeline, offset, count)
                        .await;
                    if let Some(e) = error_of_all(&answer) {
                        route.after_error(&e);
                    }
                    answer
                })
            }
        }
    }

    fn get_db(&self) -> i64 {
        match &self.0 {
            Route::Direct(manager) => manager.get_db(),
            Route::Sentinel(route) => route.db(),
            Route::Cluster(_) => 0,
        }
    }
}

/// One client's link to a Redis server: the shared command connection and the client it was opened
/// from (for further connections such as pub/sub). Cloning is cheap and shares the connection.
#[derive(Clone)]
pub struct RedisConnection {
    commands: Commands,
    settings: ConnectionSettings,
    requests: RequestCount,
}

impl fmt::Debug for RedisConnection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The address may carry a password; show only where it points.
        let addr = match &self.commands.0 {
            Route::Direct(manager) => manager.client().get_connection_info().addr().to_string(),
            Route::Sentinel(route) => format!("{} (via Sentinel)", route.primary()),
            Route::Cluster(route) => route.describe(),
        };
        f.debug_struct("RedisConnection")
            .field("addr", &addr)
            .field("settings", &self.settings)
            .finish()
    }
}

impl RedisConnection {
    /// Connects to `url` (`redis[s]://[user:pass@]host:port[/db][?ca=…]`, see [`open_client`], or
    /// `redis+sentinel://[user:pass@]host:port[,host:port…]/service[/db]`, the primary the Sentinels
    /// name, followed across failovers; or `redis+cluster://[user:pass@]host:port[,host:port…]`, a Redis
    /// Cluster's seeds). A bad URL is a `Config` error; a server that does not answer
    /// within `settings.connect_timeout` is a `Backend` error.
    pub async fn connect(url: &str, settings: ConnectionSettings) -> Result<Self, LockError> {
        settings.validate()?;
        let shown = address::redact(url);
        let config = settings.manager_config();
        let requests = RequestCount::default();
        let route = match (SentinelAddress::parse(url)?, ClusterAddress::parse(url)?) {
            (Some(sentinel), _) => Route::Sentinel(
                SentinelRoute::open(sentinel, shown.clone(), settings, config, requests.clone())
                    .await?,
            ),
            (None, Some(cluster)) => Route::Cluster(
                ClusterRoute::open(cluster, shown.clone(), settings, config, requests.clone())
                    .await?,
            ),
            (None, None) => {
                // The manager connects lazily; the first PING proves the server is there.
                Route::Direct(CountedManager::new_lazy(
                    open_client(url)?,
                    config,
                    requests.clone(),
                )?)
            }
        };
        let mut commands = Commands(route);
        let ping_cmd = redis::cmd("PING");
        let ping = ping_cmd.query_async::<String>(&mut commands);
        match tokio::time::timeout(settings.connect_timeout, ping).await {
            Ok(Ok(_pong)) => {}
            Ok(Err(e)) => return Err(e.into()),
            Err(_elapsed) => {
                return Err(LockError::backend(
                    BACKEND,
                    format!(
                        "no answer from {shown:?} within the connect timeout of {:?}",
                        settings.connect_timeout
                    ),
                ));
            }
        }
        Ok(RedisConnection {
            commands,
            settings,
            requests,
        })
    }

    /// The shared, multiplexed command connection (a cheap clone: every clone pipelines on one socket).
    pub fn commands(&self) -> Commands {
        self.commands.clone()
    }

    /// A client for the server commands go to now, for opening further connections (pub/sub) to it;
    /// in a cluster, any master's.
    pub fn client(&self) -> redis::Client {
        self.commands.client()
    }

    /// A client for the server holding `key` now: in a cluster, its slot's master; elsewhere
    /// [`Self::client`].
    pub fn client_for(&self, key: &[u8]) -> redis::Client {
        self.commands.client_of_shard(Some(slot(key)))
    }

    /// In a cluster, per slot, the shard serving it now, named by its master's first slot (`None`:
    /// no master known); elsewhere `None`.
    pub(crate) fn shard_of_slots(&self) -> Option<Vec<Option<u16>>> {
        match &self.commands.0 {
            Route::Cluster(route) => Some(route.shard_of_slots()),
            _ => None,
        }
    }

    /// A client for the master serving `shard` now (see [`Self::shard_of_slots`]); [`Self::client`]
    /// for `None`.
    pub(crate) fn client_of_shard(&self, shard: Option<u16>) -> redis::Client {
        self.commands.client_of_shard(shard)
    }

    /// Whether this connection goes to a Redis Cluster.
    pub fn is_cluster(&self) -> bool {
        self.commands.is_cluster()
    }

    /// Says that a further connection to [`Self::client`]'s server broke: behind Sentinel, the
    /// Sentinels are asked again for the primary (see the `sentinel` module); in a cluster, the
    /// layout is read again (see the `cluster` module); otherwise nothing.
    pub(crate) fn connection_broke(&self) {
        match &self.commands.0 {
            Route::Sentinel(route) => route.ask_again(),
            Route::Cluster(route) => route.refresh(),
            Route::Direct { .. } => {}
        }
    }

    /// Reads the layout again every `cluster` in a cluster, and asks the Sentinels for the primary
    /// again every `sentinel` behind Sentinel, without waiting for an error (Redisson's
    /// `scanInterval`), until the last clone of this connection is gone; nothing on one server.
    pub(crate) fn rescan_every(&self, cluster: Duration, sentinel: Duration) {
        match &self.commands.0 {
            Route::Cluster(route) => repeat(route, cluster, ClusterRoute::refresh),
            Route::Sentinel(route) => repeat(route, sentinel, SentinelRoute::ask_again),
            Route::Direct { .. } => {}
        }
    }

    /// The requests this connection and every connection opened from it (pub/sub, blocking renewal
    /// connections) have sent so far, connecting and reconnecting included: what the servers saw from
    /// this client. Clones share the count.
    pub fn requests_sent(&self) -> u64 {
        self.requests.get()
    }

    /// The count further connections of this client (pub/sub, blocking) add their requests to.
    pub(crate) fn requests(&self) -> &RequestCount {
        &self.requests
    }

    /// The timeouts this connection was opened with.
    pub fn settings(&self) -> ConnectionSettings {
        self.settings
    }
}

/// Calls `act` on `route` every `interval` until the route is gone.
fn repeat<R: Send + Sync + 'static>(route: &Arc<R>, interval: Duration, act: fn(&Arc<R>)) {
    let route = Arc::downgrade(route);
    tokio::spawn(async move {
        loop {
            tokio::time::sleep(interval).await;
            let Some(route) = route.upgrade() else {
                return;
            };
            act(&route);
        }
    });
}
