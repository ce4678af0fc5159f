//! The servers a run talks to: the addresses the user gave (checked before anything runs) or servers
//! lockbench starts itself (through `lockbench-servers`) and stops at the end — dropping [`Backends`]
//! kills them, and a Ctrl-C handler can kill them all with `lockbench_servers::kill_all_servers`.

pub mod address;
pub mod monitor;
pub mod stats;

use std::collections::BTreeSet;
use std::future::Future;
use std::net::{SocketAddr, TcpStream};
use std::pin::Pin;
use std::time::Duration;

use lockbench_reports::model::ServerInfo;
use lockbench_servers::{EtcdServer, RedisNodeOptions, RedisNodes, RedisServer, ZkServer, probe};
use serde::{Deserialize, Serialize};

use crate::base::error::BenchError;

const PROBE_TIMEOUT: Duration = Duration::from_secs(2);

/// Where a strategy's lock state lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ServerKind {
    /// In the lockbench process, shared by every client of a case (the `memory` strategy): clients
    /// must run as tasks.
    InProcess,
    /// Nowhere shared: each client has its own (a control without mutual exclusion).
    PerClient,
    /// A Redis server.
    Redis,
    /// N independent Redis servers (Redlock's masters; 5 when lockbench starts them).
    RedisNodes,
    /// An etcd cluster.
    Etcd,
    /// A ZooKeeper ensemble.
    ZooKeeper,
}

impl ServerKind {
    /// The name used in listings and results.
    pub fn name(self) -> &'static str {
        match self {
            ServerKind::InProcess => "in-process",
            ServerKind::PerClient => "per-client",
            ServerKind::Redis => "redis",
            ServerKind::RedisNodes => "redis-nodes",
            ServerKind::Etcd => "etcd",
            ServerKind::ZooKeeper => "zookeeper",
        }
    }

    /// Whether it is a real server process.
    pub fn is_external(self) -> bool {
        matches!(
            self,
            ServerKind::Redis | ServerKind::RedisNodes | ServerKind::Etcd | ServerKind::ZooKeeper
        )
    }
}

/// How a server the user gave is checked through the strategies' own client (user/password, TLS, a
/// cluster's layout read from the seeds, the primary asked of the Sentinels): the registry says it per
/// server kind (`strategies::check_address`). `Ok(Some(version))` when the server told its version;
/// an error is one line without the password.
pub type AddressCheck = for<'a> fn(ServerKind, &'a str) -> AddressCheckFuture<'a>;

/// What an [`AddressCheck`] returns.
pub type AddressCheckFuture<'a> =
    Pin<Box<dyn Future<Output = Result<Option<String>, lockers::LockError>> + Send + 'a>>;

/// Server addresses given on the command line (`Debug` shows them redacted).
#[derive(Clone, Default, PartialEq, Eq)]
pub struct GivenAddresses {
    /// `--redis`.
    pub redis: Option<String>,
    /// `--redis-nodes` (comma-separated URLs of independent servers).
    pub redis_nodes: Option<String>,
    /// `--etcd`.
    pub etcd: Option<String>,
    /// `--zk`.
    pub zookeeper: Option<String>,
}

impl std::fmt::Debug for GivenAddresses {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let shown = |a: &Option<String>| a.as_deref().map(lockers::address::redact);
        f.debug_struct("GivenAddresses")
            .field("redis", &shown(&self.redis))
            .field("redis_nodes", &shown(&self.redis_nodes))
            .field("etcd", &shown(&self.etcd))
            .field("zookeeper", &shown(&self.zookeeper))
            .finish()
    }
}

/// The addresses strategies connect to, as strategies take them (serializable, so worker processes
/// get them too; `Debug` shows them redacted).
#[derive(Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct EndpointAddrs {
    /// Redis URL (`redis://127.0.0.1:PORT/`).
    pub redis: Option<String>,
    /// URLs of the independent Redis servers (Redlock's nodes), in order.
    #[serde(default)]
    pub redis_nodes: Vec<String>,
    /// etcd endpoints (`http://127.0.0.1:PORT`).
    pub etcd: Vec<String>,
    /// ZooKeeper connect string (`127.0.0.1:PORT`).
    pub zookeeper: Option<String>,
    /// Whether the Redis primary has a replica (the failover topology): Redisson's rows then run in a
    /// replicated mode and `WAIT` after lock writes.
    #[serde(default)]
    pub redis_replicated: bool,
    /// URLs of the primary's replicas when lockbench started them beside it (the failover pair), for
    /// clients configured with them (the real Redisson's master/slave mode).
    #[serde(default)]
    pub redis_replicas: Vec<String>,
}

#[derive(Debug)]
enum Managed {
    Redis(RedisServer),
    RedisNodes(RedisNodes),
    Etcd(EtcdServer),
    ZooKeeper(ZkServer),
}

impl Managed {
    fn pid(&self) -> u32 {
        match self {
            Managed::Redis(s) => s.pid(),
            Managed::RedisNodes(n) => n.node(0).pid().unwrap_or(0),
            Managed::Etcd(s) => s.pid(),
            Managed::ZooKeeper(s) => s.pid(),
        }
    }
}

/// One server in use. Its address may carry credentials: it is shown redacted (results, `Debug`).
pub struct Backend {
    kind: ServerKind,
    address: String,
    sockets: Vec<SocketAddr>,
    version: Option<String>,
    startup: Option<Duration>,
    managed: Option<Managed>,
}

impl std::fmt::Debug for EndpointAddrs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        use lockers::address::redact;
        f.debug_struct("EndpointAddrs")
            .field("redis", &self.redis.as_deref().map(redact))
            .field("redis_nodes", &redact(&self.redis_nodes.join(",")))
            .field("etcd", &redact(&self.etcd.join(",")))
            .field("zookeeper", &self.zookeeper.as_deref().map(redact))
            .field("redis_replicated", &self.redis_replicated)
            .field("redis_replicas", &redact(&self.redis_replicas.join(",")))
            .finish()
    }
}

impl std::fmt::Debug for Backend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Backend")
            .field("kind", &self.kind)
            .field("address", &lockers::address::redact(&self.address))
            .field("sockets", &self.sockets)
            .field("version", &self.version)
            .field("managed", &self.managed.is_some())
            .finish_non_exhaustive()
    }
}

impl Backend {
    /// The user and password in its address (the first one of a list), if any.
    pub fn credentials(&self) -> Option<lockers::address::Credentials> {
        address::credentials(self.address.split(',').next().unwrap_or(""))
    }

    /// Whether its address asks for TLS.
    pub fn is_tls(&self) -> bool {
        address::is_tls(&self.address)
    }

    /// Which server.
    pub fn kind(&self) -> ServerKind {
        self.kind
    }

    /// The first socket address (where statistics are asked).
    pub fn socket(&self) -> Option<SocketAddr> {
        self.sockets.first().copied()
    }

    /// Every socket with its server's process id (for servers lockbench started): Redlock's nodes,
    /// or the one server.
    pub fn nodes(&self) -> Vec<(SocketAddr, Option<u32>)> {
        self.sockets
            .iter()
            .enumerate()
            .map(|(i, socket)| {
                let pid = match &self.managed {
                    Some(Managed::RedisNodes(n)) if i < n.len() => n.node(i).pid(),
                    _ if i == 0 => self.pid(),
                    _ => None,
                };
                (*socket, pid)
            })
            .collect()
    }

    /// The process id, for servers lockbench started.
    pub fn pid(&self) -> Option<u32> {
        self.managed.as_ref().map(Managed::pid)
    }

    /// What the results say about it.
    pub fn info(&self) -> ServerInfo {
        ServerInfo {
            kind: self.kind.name().to_owned(),
            version: self.version.clone(),
            address: lockers::address::redact(&self.address),
            managed: self.managed.is_some(),
            startup_ms: self.startup.map(|d| d.as_secs_f64() * 1e3),
        }
    }
}

/// Every server of a run.
#[derive(Debug, Default)]
pub struct Backends {
    servers: Vec<Backend>,
}

impl Backends {
    /// Checks every address the user gave (unreachable → a usage error naming the flag; a Redis cluster,
    /// Sentinels over TLS and etcd also through `check`, the strategies' own client), then starts each
    /// needed server that was not given. Blocking work runs off the async threads.
    pub async fn prepare(
        needed: &BTreeSet<ServerKind>,
        given: &GivenAddresses,
        check: AddressCheck,
    ) -> Result<Self, BenchError> {
        let given = given.clone();
        let needed = needed.clone();
        let mut backends =
            tokio::task::spawn_blocking(move || Self::prepare_blocking(&needed, &given))
                .await
                .map_err(|e| BenchError::failed(format!("server set-up task failed: {e}")))??;
        for redis in backends.servers.iter_mut().filter(|s| {
            s.kind == ServerKind::Redis && s.managed.is_none() && checked_by_client(&s.address)
        }) {
            redis.version = check_access(check, redis).await?;
        }
        if let Some(etcd) = backends.servers.iter().find(|s| s.kind == ServerKind::Etcd)
            && etcd.managed.is_none()
        {
            check_access(check, etcd).await?;
        }
        Ok(backends)
    }

    fn prepare_blocking(
        needed: &BTreeSet<ServerKind>,
        given: &GivenAddresses,
    ) -> Result<Self, BenchError> {
        let mut servers = Vec::new();
        for (kind, flag, address) in [
            (ServerKind::Redis, "--redis", &given.redis),
            (ServerKind::RedisNodes, "--redis-nodes", &given.redis_nodes),
            (ServerKind::Etcd, "--etcd", &given.etcd),
            (ServerKind::ZooKeeper, "--zk", &given.zookeeper),
        ] {
            if let Some(address) = address {
                servers.push(check_given(kind, flag, address)?);
            }
        }
        for kind in needed.iter().copied().filter(|k| k.is_external()) {
            if !servers.iter().any(|s| s.kind == kind) {
                servers.push(start(kind)?);
            }
        }
        Ok(Backends { servers })
    }

    /// The server of `kind`, if the run has one.
    pub fn get(&self, kind: ServerKind) -> Option<&Backend> {
        self.servers.iter().find(|s| s.kind == kind)
    }

    /// The addresses strategies connect to.
    pub fn endpoints(&self) -> EndpointAddrs {
        let address = |kind| self.get(kind).map(|s| s.address.clone());
        EndpointAddrs {
            redis: address(ServerKind::Redis),
            redis_nodes: address(ServerKind::RedisNodes)
                .map(|a| a.split(',').map(str::to_owned).collect())
                .unwrap_or_default(),
            etcd: address(ServerKind::Etcd)
                .map(|a| a.split(',').map(str::to_owned).collect())
                .unwrap_or_default(),
            zookeeper: address(ServerKind::ZooKeeper),
            // Behind Sentinel and in a cluster there are replicas: Redisson's sentinel and cluster
            // modes WAIT for them.
            redis_replicated: address(ServerKind::Redis)
                .is_some_and(|a| self::address::is_sentinel(&a) || self::address::is_cluster(&a)),
            redis_replicas: Vec::new(),
        }
    }

    /// What the results say about the servers.
    pub fn infos(&self) -> Vec<ServerInfo> {
        self.servers.iter().map(Backend::info).collect()
    }
}

fn check_given(kind: ServerKind, flag: &str, address: &str) -> Result<Backend, BenchError> {
    let shown = lockers::address::redact(address);
    let bad = |why: String| BenchError::usage(format!("{flag} {shown}: {why}"));
    let address = &address::password_from_env(kind, address).map_err(bad)?;
    let sockets = match kind {
        // A cluster's counters are its masters' summed. Over TLS the plain probes can read neither
        // a cluster nor Sentinels: their hosts only.
        ServerKind::Redis
            if address::is_tls(address) && !address.trim().starts_with("rediss://") =>
        {
            address::hosts_of(address)
        }
        ServerKind::Redis if address::is_cluster(address) => address::cluster_masters(address),
        ServerKind::Redis => address::redis_socket(address).map(|a| vec![a]),
        ServerKind::RedisNodes => address
            .split(',')
            .map(|url| address::redis_socket(url.trim()))
            .collect(),
        ServerKind::Etcd => address::etcd_sockets(address),
        _ => address::zk_sockets(address),
    }
    .map_err(bad)?;
    for socket in &sockets {
        TcpStream::connect_timeout(socket, PROBE_TIMEOUT)
            .map_err(|e| bad(format!("cannot connect to {socket}: {e}")))?;
    }
    let address = match kind {
        // One URL per node, as strategies take them (`host:port` becomes `redis://host:port/`).
        ServerKind::RedisNodes => address
            .split(',')
            .map(str::trim)
            .map(|url| {
                if url.contains("://") {
                    url.to_owned()
                } else {
                    format!("redis://{url}/")
                }
            })
            .collect::<Vec<_>>()
            .join(","),
        _ => address.to_owned(),
    };
    let first = sockets[0];
    let version = match kind {
        ServerKind::Redis | ServerKind::RedisNodes => {
            // Through the strategies' own client (ACL user, TLS): a wrong password or an untrusted
            // certificate is bad input, reported before anything is measured.
            let urls = match kind {
                // Checked through the strategies' own client, once the run is set up.
                ServerKind::Redis if checked_by_client(&address) => Vec::new(),
                ServerKind::Redis if address::is_sentinel(&address) => {
                    vec![address::sentinel_primary_url(&address).map_err(bad)?]
                }
                ServerKind::Redis => vec![address.clone()],
                _ => address.split(',').map(|u| u.trim().to_owned()).collect(),
            };
            let mut version = None;
            for url in &urls {
                version = Some(redis_version(url).map_err(bad)?);
            }
            version.flatten()
        }
        ServerKind::Etcd if address::is_tls(&address) => None,
        ServerKind::Etcd => probe::http_get(first, "/version", PROBE_TIMEOUT)
            .ok()
            .and_then(|r| json_field(&r.body, "etcdserver")),
        _ => probe::four_letter_word(first, "srvr", PROBE_TIMEOUT)
            .ok()
            .and_then(|srvr| {
                srvr.lines()
                    .find_map(|l| l.strip_prefix("Zookeeper version: "))
                    .map(|v| v.split([',', '-']).next().unwrap_or(v).trim().to_owned())
            }),
    };
    Ok(Backend {
        kind,
        address,
        sockets,
        version,
        startup: None,
        managed: None,
    })
}

/// Whether a Redis address is checked through the strategies' own client rather than a plain probe: a
/// cluster (its layout comes from the seeds) and Sentinels over TLS.
fn checked_by_client(address: &str) -> bool {
    address::is_cluster(address) || (address::is_sentinel(address) && address::is_tls(address))
}

/// Checks the server the user gave, `server`, through `check`: an error is bad input, one line naming
/// the flag, without the password.
async fn check_access(check: AddressCheck, server: &Backend) -> Result<Option<String>, BenchError> {
    let flag = match server.kind {
        ServerKind::Redis => "--redis",
        ServerKind::RedisNodes => "--redis-nodes",
        ServerKind::Etcd => "--etcd",
        _ => "--zk",
    };
    check(server.kind, &server.address).await.map_err(|e| {
        BenchError::usage(format!(
            "{flag} {}: {e}",
            lockers::address::redact(&server.address)
        ))
    })
}

/// Connects to the Redis at `url` as the strategies do and reads its version (`None` if `INFO` is
/// not allowed). The error is one line without the password.
fn redis_version(url: &str) -> Result<Option<String>, String> {
    let client = lockers::redis::connection::open_client(url).map_err(|e| e.to_string())?;
    let mut connection = client
        .get_connection_with_timeout(PROBE_TIMEOUT)
        .map_err(|e| format!("cannot connect: {e}"))?;
    let info: Option<String> = redis::cmd("INFO").arg("server").query(&mut connection).ok();
    Ok(info.and_then(|info| {
        lockbench_servers::redis::info_field(&info, "redis_version").map(str::to_owned)
    }))
}

fn json_field(body: &str, field: &str) -> Option<String> {
    let value: serde_json::Value = serde_json::from_str(body).ok()?;
    value.get(field)?.as_str().map(str::to_owned)
}

fn start(kind: ServerKind) -> Result<Backend, BenchError> {
    let failed = |e: lockbench_servers::ServerError| {
        BenchError::failed(format!("could not start {}: {e}", kind.name()))
    };
    let (address, sockets, version, startup, managed) = match kind {
        ServerKind::Redis => {
            let s = RedisServer::start().map_err(failed)?;
            (
                s.url(),
                vec![s.addr()],
                s.version().to_owned(),
                s.startup(),
                Managed::Redis(s),
            )
        }
        ServerKind::RedisNodes => {
            let nodes =
                RedisNodes::start(RedisNodes::DEFAULT_COUNT, RedisNodeOptions::default(), None)
                    .map_err(failed)?;
            let version =
                probe::resp_command(nodes.node(0).addr(), &["INFO", "server"], PROBE_TIMEOUT)
                    .ok()
                    .and_then(|info| {
                        lockbench_servers::redis::info_field(&info, "redis_version")
                            .map(str::to_owned)
                    })
                    .unwrap_or_default();
            (
                nodes.urls().join(","),
                nodes.nodes().iter().map(|n| n.addr()).collect(),
                version,
                nodes.nodes().iter().map(|n| n.startup()).sum(),
                Managed::RedisNodes(nodes),
            )
        }
        ServerKind::Etcd => {
            let s = EtcdServer::start().map_err(failed)?;
            let socket = s.client_addr();
            (
                s.endpoint(),
                vec![socket],
                s.version().to_owned(),
                s.startup(),
                Managed::Etcd(s),
            )
        }
        _ => {
            let s = ZkServer::start().map_err(failed)?;
            let socket = s.addr();
            let connect = s.connect_string();
            (
                connect,
                vec![socket],
                s.version().to_owned(),
                s.startup(),
                Managed::ZooKeeper(s),
            )
        }
    };
    Ok(Backend {
        kind,
        address,
        sockets,
        version: (!version.is_empty()).then_some(version),
        startup: Some(startup),
        managed: Some(managed),
    })
}
