//! The server kinds, one entry each: everything that is true of a kind (its name, whether a lock on
//! it is distributed, its command-line flag and secret variable, how a given address is probed and
//! its version read, how lockbench starts one, where its addresses sit among a run's endpoints and
//! how a proxy is put in front of them, which server faults it takes) lives in its [`KindEntry`], so
//! shared code never asks "which server is this?" by name.
//!
//! # Adding a kind
//! 1. A launcher in `servers/` (a fresh data directory, loopback only, a free port, stopped on drop,
//!    its version).
//! 2. A variant of [`ServerKind`], added to [`ServerKind::ALL`], and its entry in
//!    [`ServerKind::entry`]; a field for its addresses in
//!    [`EndpointAddrs`]. No `match` on a kind ends in a catch-all, so the
//!    compiler names every other place that must say something about it (server counters in
//!    `stats`, the strategies' own address check).
//! 3. Its strategies, registered in `strategies`.

use std::any::Any;
use std::net::SocketAddr;
use std::time::Duration;

use lockbench_servers::{
    EtcdServer, PostgresServer, RedisNodeOptions, RedisNodes, RedisServer, ServerError, ZkServer,
    probe,
};

use super::{EndpointAddrs, address};

/// How long a probe of a given server may take.
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
    /// A PostgreSQL server.
    Postgres,
}

/// What is true of one server kind.
#[derive(Debug)]
pub struct KindEntry {
    /// The name used in listings and results.
    pub name: &'static str,
    /// Whether a lock on it is one a team could deploy across machines (the report's candidates).
    pub distributed: bool,
    /// The server process, when the kind has one.
    pub server: Option<ServerEntry>,
}

/// What is true of a kind that is a real server process.
pub struct ServerEntry {
    /// The long flag naming a server the user runs (`redis` for `--redis`).
    pub flag: &'static str,
    /// The flag's value name in `--help`.
    pub value_name: &'static str,
    /// The flag's help text.
    pub help: &'static str,
    /// The environment variable with the password of a given server.
    pub secret_variable: &'static str,
    /// `address` with the secret `secret` (from [`secret_variable`](Self::secret_variable)) filled in
    /// where it has none; the error never contains the secret.
    pub fill_secret: fn(address: &str, secret: &str) -> Result<String, String>,
    /// The sockets a given address names, each probed with a TCP connect before the run.
    pub sockets: fn(&str) -> Result<Vec<SocketAddr>, String>,
    /// A given address as the strategies take it.
    pub as_endpoint: fn(&str) -> String,
    /// The version of a given server (at `address`, first socket `first`), read by a plain probe;
    /// `Ok(None)` when it does not tell; an error is bad input, one line without the password.
    pub version: fn(address: &str, first: SocketAddr) -> Result<Option<String>, String>,
    /// Whether a given address is also checked through the strategies' own client.
    pub checked_by_client: fn(&str) -> bool,
    /// Starts one on loopback.
    pub start: fn() -> Result<Started, ServerError>,
    /// Puts a server's address (as strategies take it) into a run's endpoints.
    pub set_endpoint: fn(&mut EndpointAddrs, &str),
    /// The sockets in `endpoints` a per-client proxy stands in front of, in order.
    pub proxied_sockets: fn(&EndpointAddrs) -> Result<Vec<SocketAddr>, String>,
    /// `endpoints` with those sockets replaced by the proxies' (same order), keeping what surrounds
    /// them (credentials, a database, a chroot).
    pub via_proxies: fn(&mut EndpointAddrs, &[SocketAddr]),
    /// The server faults it takes beyond a pause and the network faults every server takes.
    pub faults: ServerFaults,
}

impl std::fmt::Debug for ServerEntry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerEntry")
            .field("flag", &self.flag)
            .field("secret_variable", &self.secret_variable)
            .field("faults", &self.faults)
            .finish_non_exhaustive()
    }
}

/// The server faults a kind takes beyond pausing its process and the network faults of a proxy.
#[derive(Debug, Clone, Copy, Default)]
pub struct ServerFaults {
    /// The faults of one Redis primary: `CLIENT PAUSE`, a busy script, Sentinel and cluster
    /// failovers, a pub/sub kill, a restart.
    pub redis_primary: bool,
    /// Failover to a replica: the primary of a primary + asynchronous replica pair lockbench starts
    /// for the case is killed, the replica promoted and the clients' proxies pointed at it.
    pub replica_failover: bool,
    /// Killing the leader of a 3-member cluster lockbench starts for the case.
    pub leader_kill: bool,
    /// Killing, restarting or jumping the clock of one of N independent nodes.
    pub independent_nodes: bool,
    /// Ending a holder's session from the server (PostgreSQL's `pg_terminate_backend`).
    pub terminate_session: bool,
}

/// A server lockbench started: where it listens and the handle that stops it when dropped.
pub struct Started {
    /// Its address as strategies take it.
    pub address: String,
    /// Its sockets (one per node).
    pub sockets: Vec<SocketAddr>,
    /// The process of each socket.
    pub pids: Vec<Option<u32>>,
    /// Its own version report (empty when it did not answer).
    pub version: String,
    /// Time from start to ready.
    pub startup: Duration,
    /// The launcher's handle; dropping it stops the server.
    pub handle: Box<dyn Any + Send + Sync>,
}

/// The [`Started`] of one launched server process `$server`, whose `$address()` is its address as
/// strategies take it and `$socket()` where it listens.
macro_rules! one_server {
    ($server:expr, $address:ident, $socket:ident) => {{
        let server = $server;
        Started {
            address: server.$address(),
            sockets: vec![server.$socket()],
            pids: vec![Some(server.pid())],
            version: server.version().to_owned(),
            startup: server.startup(),
            handle: Box::new(server),
        }
    }};
}

impl std::fmt::Debug for Started {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Started")
            .field("sockets", &self.sockets)
            .field("pids", &self.pids)
            .field("version", &self.version)
            .finish_non_exhaustive()
    }
}

impl ServerKind {
    /// Every kind.
    pub const ALL: [ServerKind; 7] = [
        ServerKind::InProcess,
        ServerKind::PerClient,
        ServerKind::Redis,
        ServerKind::RedisNodes,
        ServerKind::Etcd,
        ServerKind::ZooKeeper,
        ServerKind::Postgres,
    ];

    /// Everything that is true of this kind.
    pub fn entry(self) -> &'static KindEntry {
        match self {
            ServerKind::InProcess => &IN_PROCESS,
            ServerKind::PerClient => &PER_CLIENT,
            ServerKind::Redis => &REDIS,
            ServerKind::RedisNodes => &REDIS_NODES,
            ServerKind::Etcd => &ETCD,
            ServerKind::ZooKeeper => &ZOOKEEPER,
            ServerKind::Postgres => &POSTGRES,
        }
    }

    /// The name used in listings and results.
    pub fn name(self) -> &'static str {
        self.entry().name
    }

    /// Whether it is a real server process.
    pub fn is_external(self) -> bool {
        self.entry().server.is_some()
    }

    /// Its server entry, when it is a real server process.
    pub fn server(self) -> Option<&'static ServerEntry> {
        self.entry().server.as_ref()
    }

    /// The server faults it takes (none without a server).
    pub fn faults(self) -> ServerFaults {
        self.server().map(|s| s.faults).unwrap_or_default()
    }
}

static IN_PROCESS: KindEntry = KindEntry {
    name: "in-process",
    distributed: false,
    server: None,
};

static PER_CLIENT: KindEntry = KindEntry {
    name: "per-client",
    distributed: false,
    server: None,
};

static REDIS: KindEntry = KindEntry {
    name: "redis",
    distributed: true,
    server: Some(ServerEntry {
        flag: "redis",
        value_name: "URL",
        help: "Use this Redis instead of starting one: redis://[user[:pass]@]host:port[/db], \
               rediss://…/?ca=ca.pem for TLS, redis+sentinel://host:port[,…]/service (the primary its \
               Sentinels name) or redis+cluster://host:port[,…] (a Redis Cluster's nodes); \
               rediss+sentinel:// and rediss+cluster:// with ?ca= for TLS. The password may come from \
               LOCKBENCH_REDIS_PASSWORD.",
        secret_variable: "LOCKBENCH_REDIS_PASSWORD",
        fill_secret: address::fill_redis_secret,
        sockets: redis_sockets,
        as_endpoint: str::to_owned,
        version: |address, _| {
            // Through the strategies' own client (ACL user, TLS): a wrong password or an untrusted
            // certificate is bad input, reported before anything is measured.
            if checked_by_client(address) {
                // Checked through the strategies' own client, once the run is set up.
                Ok(None)
            } else if address::is_sentinel(address) {
                redis_version(&address::sentinel_primary_url(address)?)
            } else {
                redis_version(address)
            }
        },
        checked_by_client,
        start: || Ok(one_server!(RedisServer::start()?, url, addr)),
        set_endpoint: |endpoints, address| {
            endpoints.redis = Some(address.to_owned());
            // Behind Sentinel and in a cluster there are replicas: Redisson's sentinel and cluster
            // modes WAIT for them.
            endpoints.redis_replicated =
                address::is_sentinel(address) || address::is_cluster(address);
        },
        proxied_sockets: |endpoints| {
            let url = endpoints
                .redis
                .as_deref()
                .ok_or_else(|| no_proxy_address("redis"))?;
            if address::is_sentinel(url) {
                return Err(
                    "a proxy cannot stand between clients and the primary their Sentinels \
                            name: network faults need a direct Redis address"
                        .into(),
                );
            }
            if address::is_cluster(url) {
                return Err(
                    "a proxy cannot stand between clients and a cluster's nodes (MOVED answers \
                     name the nodes themselves): network faults need a direct Redis address"
                        .into(),
                );
            }
            Ok(vec![address::redis_socket(url)?])
        },
        via_proxies: |endpoints, proxies| {
            if let (Some(url), Some(proxy)) = (&endpoints.redis, proxies.first()) {
                endpoints.redis = Some(address::redis_url_via(url, *proxy));
            }
        },
        faults: ServerFaults {
            replica_failover: true,
            redis_primary: true,
            leader_kill: false,
            independent_nodes: false,
            terminate_session: false,
        },
    }),
};

static REDIS_NODES: KindEntry = KindEntry {
    name: "redis-nodes",
    distributed: true,
    server: Some(ServerEntry {
        flag: "redis-nodes",
        value_name: "URLS",
        help: "Use these independent Redis servers as Redlock's nodes instead of starting five \
               (URLs as for --redis, comma-separated).",
        secret_variable: "LOCKBENCH_REDIS_PASSWORD",
        fill_secret: address::fill_redis_secret,
        sockets: |address| {
            address
                .split(',')
                .map(|url| address::redis_socket(url.trim()))
                .collect()
        },
        // One URL per node, as strategies take them (`host:port` becomes `redis://host:port/`).
        as_endpoint: |address| {
            address
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
                .join(",")
        },
        version: |address, _| {
            let mut version = None;
            for url in address.split(',') {
                version = redis_version(url.trim())?;
            }
            Ok(version)
        },
        checked_by_client: |_| false,
        start: || {
            let nodes =
                RedisNodes::start(RedisNodes::DEFAULT_COUNT, RedisNodeOptions::default(), None)?;
            let version =
                probe::resp_command(nodes.node(0).addr(), &["INFO", "server"], PROBE_TIMEOUT)
                    .ok()
                    .and_then(|info| {
                        lockbench_servers::redis::info_field(&info, "redis_version")
                            .map(str::to_owned)
                    })
                    .unwrap_or_default();
            Ok(Started {
                address: nodes.urls().join(","),
                sockets: nodes.nodes().iter().map(|n| n.addr()).collect(),
                pids: nodes.nodes().iter().map(|n| n.pid()).collect(),
                version,
                startup: nodes.nodes().iter().map(|n| n.startup()).sum(),
                handle: Box::new(nodes),
            })
        },
        set_endpoint: |endpoints, address| {
            endpoints.redis_nodes = address.split(',').map(str::to_owned).collect();
        },
        proxied_sockets: |endpoints| {
            if endpoints.redis_nodes.is_empty() {
                return Err(no_proxy_address("redis-nodes"));
            }
            endpoints
                .redis_nodes
                .iter()
                .map(|url| address::redis_socket(url))
                .collect()
        },
        via_proxies: |endpoints, proxies| {
            endpoints.redis_nodes = endpoints
                .redis_nodes
                .iter()
                .zip(proxies)
                .map(|(url, proxy)| address::redis_url_via(url, *proxy))
                .collect();
        },
        faults: ServerFaults {
            replica_failover: false,
            redis_primary: false,
            leader_kill: false,
            independent_nodes: true,
            terminate_session: false,
        },
    }),
};

static ETCD: KindEntry = KindEntry {
    name: "etcd",
    distributed: true,
    server: Some(ServerEntry {
        flag: "etcd",
        value_name: "URLS",
        help: "Use this etcd instead of starting one: http://host:port, or \
               https://[user[:pass]@]host:port?ca=ca.pem (comma-separated). The password may come \
               from LOCKBENCH_ETCD_PASSWORD.",
        secret_variable: "LOCKBENCH_ETCD_PASSWORD",
        fill_secret: address::fill_etcd_secret,
        sockets: address::etcd_sockets,
        as_endpoint: str::to_owned,
        version: |address, first| {
            if address::is_tls(address) {
                return Ok(None);
            }
            Ok(probe::http_get(first, "/version", PROBE_TIMEOUT)
                .ok()
                .and_then(|r| json_field(&r.body, "etcdserver")))
        },
        checked_by_client: |_| true,
        start: || Ok(one_server!(EtcdServer::start()?, endpoint, client_addr)),
        set_endpoint: |endpoints, address| {
            endpoints.etcd = address.split(',').map(str::to_owned).collect();
        },
        proxied_sockets: |endpoints| {
            if endpoints.etcd.is_empty() {
                return Err(no_proxy_address("etcd"));
            }
            address::etcd_sockets(&endpoints.etcd.join(","))
        },
        via_proxies: |endpoints, proxies| {
            endpoints.etcd = endpoints
                .etcd
                .iter()
                .zip(proxies)
                .map(|(endpoint, proxy)| {
                    let endpoint = if endpoint.contains("://") {
                        endpoint.clone()
                    } else {
                        format!("http://{endpoint}")
                    };
                    address::address_via(&endpoint, *proxy)
                })
                .collect();
        },
        faults: ServerFaults {
            replica_failover: false,
            redis_primary: false,
            leader_kill: true,
            independent_nodes: false,
            terminate_session: false,
        },
    }),
};

static ZOOKEEPER: KindEntry = KindEntry {
    name: "zookeeper",
    distributed: true,
    server: Some(ServerEntry {
        flag: "zk",
        value_name: "HOSTS",
        help: "Use this ZooKeeper instead of starting one: [user:pass@]host:port[,host:port] (digest \
               auth; or LOCKBENCH_ZK_AUTH=user:pass).",
        secret_variable: "LOCKBENCH_ZK_AUTH",
        fill_secret: address::fill_zk_secret,
        sockets: address::zk_sockets,
        as_endpoint: str::to_owned,
        version: |_, first| {
            Ok(probe::four_letter_word(first, "srvr", PROBE_TIMEOUT)
                .ok()
                .and_then(|srvr| {
                    srvr.lines()
                        .find_map(|l| l.strip_prefix("Zookeeper version: "))
                        .map(|v| v.split([',', '-']).next().unwrap_or(v).trim().to_owned())
                }))
        },
        checked_by_client: |_| false,
        start: || Ok(one_server!(ZkServer::start()?, connect_string, addr)),
        set_endpoint: |endpoints, address| endpoints.zookeeper = Some(address.to_owned()),
        proxied_sockets: |endpoints| {
            address::zk_sockets(
                endpoints
                    .zookeeper
                    .as_deref()
                    .ok_or_else(|| no_proxy_address("zookeeper"))?,
            )
        },
        via_proxies: |endpoints, proxies| {
            if let Some(connect) = &endpoints.zookeeper {
                // Digest credentials before the hosts, a chroot after them.
                let (credentials, hosts) = match connect.rfind('@') {
                    Some(at) => connect.split_at(at + 1),
                    None => ("", connect.as_str()),
                };
                let chroot = hosts.find('/').map(|i| &hosts[i..]).unwrap_or("");
                let proxies: Vec<String> = proxies.iter().map(SocketAddr::to_string).collect();
                endpoints.zookeeper = Some(format!("{credentials}{}{chroot}", proxies.join(",")));
            }
        },
        faults: ServerFaults {
            replica_failover: false,
            redis_primary: false,
            leader_kill: true,
            independent_nodes: false,
            terminate_session: false,
        },
    }),
};

static POSTGRES: KindEntry = KindEntry {
    name: "postgres",
    distributed: true,
    server: Some(ServerEntry {
        flag: "postgres",
        value_name: "URL",
        help: "Use this PostgreSQL instead of starting one: postgres://user[:pass]@host:port/db, \
               ?sslmode=require&ca=ca.pem (optionally &cert=&key=) for TLS. The tables the \
               strategies need must exist (the error says what to create). The password may come \
               from LOCKBENCH_POSTGRES_PASSWORD.",
        secret_variable: "LOCKBENCH_POSTGRES_PASSWORD",
        fill_secret: address::fill_etcd_secret,
        sockets: |address| address::postgres_socket(address).map(|s| vec![s]),
        as_endpoint: str::to_owned,
        // Read through the strategies' own client (it logs in as the user).
        version: |_, _| Ok(None),
        checked_by_client: |_| true,
        start: || {
            let s = PostgresServer::start()?;
            prepare_own_postgres(&s)?;
            Ok(one_server!(s, url, addr))
        },
        set_endpoint: |endpoints, address| endpoints.postgres = Some(address.to_owned()),
        proxied_sockets: |endpoints| {
            let url = endpoints
                .postgres
                .as_deref()
                .ok_or_else(|| no_proxy_address("postgres"))?;
            address::postgres_socket(url).map(|s| vec![s])
        },
        via_proxies: |endpoints, proxies| {
            if let (Some(url), Some(proxy)) = (&endpoints.postgres, proxies.first()) {
                endpoints.postgres = Some(address::address_via(url, *proxy));
            }
        },
        faults: ServerFaults {
            replica_failover: true,
            redis_primary: false,
            leader_kill: false,
            independent_nodes: false,
            terminate_session: true,
        },
    }),
};

/// Gives a PostgreSQL server lockbench started (never a user's) what its rows need: the strategies'
/// tables, the Spring JDBC peer's `INT_LOCK`, and `pg_stat_statements`' view. On a primary with a
/// replica, they replicate.
pub fn prepare_own_postgres(server: &PostgresServer) -> Result<(), ServerError> {
    server.query(lockers::postgres::SCHEMA)?;
    server.query(lockers::peer::catalog::SPRING_INT_LOCK_TABLE)?;
    server.query("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")?;
    Ok(())
}

fn no_proxy_address(kind: &str) -> String {
    format!("no {kind} address to put a proxy in front of")
}

/// The sockets of a given Redis address. A cluster's counters are its masters' summed. Over TLS the
/// plain probes can read neither a cluster nor Sentinels: their hosts only.
fn redis_sockets(address: &str) -> Result<Vec<SocketAddr>, String> {
    if address::is_tls(address) && !address.trim().starts_with("rediss://") {
        address::hosts_of(address)
    } else if address::is_cluster(address) {
        address::cluster_masters(address)
    } else {
        address::redis_socket(address).map(|a| vec![a])
    }
}

/// Whether a Redis address is checked through the strategies' own client rather than a plain probe: a
/// cluster (its layout comes from the seeds) and Sentinels over TLS.
fn checked_by_client(address: &str) -> bool {
    address::is_cluster(address) || (address::is_sentinel(address) && address::is_tls(address))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_is_listed_once_with_its_own_name_and_flag() {
        let names: std::collections::BTreeSet<_> =
            ServerKind::ALL.iter().map(|k| k.name()).collect();
        assert_eq!(names.len(), ServerKind::ALL.len());
        let flags: Vec<_> = ServerKind::ALL
            .iter()
            .filter_map(|k| k.server())
            .map(|s| s.flag)
            .collect();
        let unique: std::collections::BTreeSet<_> = flags.iter().collect();
        assert_eq!(unique.len(), flags.len(), "{flags:?}");
        for kind in ServerKind::ALL {
            // A kind with a server is a distributed lock; one without is a reference or a control.
            assert_eq!(kind.is_external(), kind.entry().distributed, "{kind:?}");
        }
    }
}
