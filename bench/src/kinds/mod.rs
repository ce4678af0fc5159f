//! The server kinds, one entry each: everything that is true of a kind (its name, whether a lock on
//! it is distributed, its command-line flag and secret variable, how a given address is probed and
//! its version read, how lockbench starts one, where its addresses sit among a run's endpoints and
//! how a proxy is put in front of them, which server faults it takes) lives in its [`KindEntry`], so
//! shared code never asks "which server is this?" by name. Each kind with a server has a folder of
//! its own (`redis/`, `redis_nodes/`, `etcd/`, `zookeeper/`, `postgres/`) with the same skeleton;
//! the two without one (in-process, per-client) are here.
//!
//! # Adding a kind
//! 1. A launcher in `servers/` (a fresh data directory, loopback only, a free port, stopped on drop,
//!    its version).
//! 2. A folder `kinds/<kind>/` with the same files as the others: `mod.rs`, its [`KindEntry`] (name,
//!    flag, address and secret handling, probes, version, start, endpoints, proxies, faults, how long
//!    the servers its faults start per case take, [`CaseServers`]);
//!    `counters.rs`, its outside counters read into a [`counters::StatsSnapshot`]; `held.rs`, its
//!    [`held::HeldProbe`], what `lockbench scale` reads of it while a client only holds locks.
//! 3. Its registration: a variant of [`ServerKind`], added to [`ServerKind::ALL`], and its entry in
//!    [`ServerKind::entry`]; a field for its addresses in [`EndpointAddrs`]. No `match` on a kind ends
//!    in a catch-all, so the compiler names every other place that must say something about it (the
//!    strategies' own address check).
//! 4. Its strategies, registered in `strategies`.

use std::any::Any;
use std::net::SocketAddr;
use std::time::Duration;

use lockbench_servers::ServerError;

use self::counters::ReadCounters;
use self::held::HeldProbe;

pub use self::endpoints::EndpointAddrs;
pub use self::postgres::prepare_own_postgres;

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

pub mod counters;
pub mod endpoints;
pub mod etcd;
pub mod held;
pub mod postgres;
pub mod redis;
pub mod redis_nodes;
pub mod zookeeper;

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
    /// Whether its lock lives in the driver's own process, shared by every client of a case: its
    /// clients must run as tasks, and the faults of a client's process cannot reach it.
    pub in_driver_process: bool,
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
    /// How long starting the servers a fault gives each case of its own takes.
    pub case_servers: CaseServers,
    /// Reads its outside counters (its `counters.rs`).
    pub counters: ReadCounters,
    /// What `lockbench scale` reads of it while its client only holds locks (its `held.rs`).
    pub held: HeldProbe,
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
    /// Dropping a holder's packets silently in a network namespace of the server's own, so that only
    /// the server's TCP keepalive notices (a PostgreSQL lockbench starts in the namespace).
    pub keepalive_partition: bool,
}

/// The kind named `name` as listings and results name it (`redis`, `in-process`, ...).
pub fn kind_named(name: &str) -> Option<ServerKind> {
    ServerKind::ALL.into_iter().find(|k| k.name() == name)
}

/// Every kind's name, in [`ServerKind::ALL`]'s order.
pub fn kind_names() -> Vec<&'static str> {
    ServerKind::ALL.iter().map(|k| k.name()).collect()
}

/// How long a case's own servers take to start and stop, for the kinds whose faults start them per
/// case (the suite's plan adds it to each such case). `None` where the kind has no such servers.
#[derive(Debug, Clone, Copy, Default)]
pub struct CaseServers {
    /// A primary + replica pair ([`ServerFaults::replica_failover`]), or the nodes a node fault
    /// starts; half of it for one server in a network namespace of its own.
    pub pair: Option<Duration>,
    /// A cluster: 3 members for a leader kill ([`ServerFaults::leader_kill`]), or a Redis Cluster of
    /// 3 masters + 3 replicas for its failovers.
    pub cluster: Option<Duration>,
    /// A primary + replica watched by 3 Sentinels, for a Sentinel failover.
    pub sentinels: Option<Duration>,
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
            ServerKind::Redis => &redis::REDIS,
            ServerKind::RedisNodes => &redis_nodes::REDIS_NODES,
            ServerKind::Etcd => &etcd::ETCD,
            ServerKind::ZooKeeper => &zookeeper::ZOOKEEPER,
            ServerKind::Postgres => &postgres::POSTGRES,
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

    /// `address` with the password from the environment filled in where the address has none: the
    /// variable is the kind's ([`ServerEntry::secret_variable`]), filled in as the kind's
    /// [`fill_secret`](ServerEntry::fill_secret) says. A variable that is set but cannot be used is
    /// an error (the message never contains it).
    pub fn password_from_env(self, address: &str) -> Result<String, String> {
        let Some(server) = self.server() else {
            return Ok(address.to_owned());
        };
        let var = server.secret_variable;
        let Some(secret) = std::env::var_os(var) else {
            return Ok(address.to_owned());
        };
        let secret = secret
            .into_string()
            .map_err(|_| format!("{var} is not UTF-8"))?;
        (server.fill_secret)(address, &secret).map_err(|why| format!("{var} {why}"))
    }
}

static IN_PROCESS: KindEntry = KindEntry {
    name: "in-process",
    distributed: false,
    in_driver_process: true,
    server: None,
};

static PER_CLIENT: KindEntry = KindEntry {
    name: "per-client",
    distributed: false,
    in_driver_process: false,
    server: None,
};

/// The error of a proxy asked for without an address of `kind` to stand in front of.
fn no_proxy_address(kind: &str) -> String {
    format!("no {kind} address to put a proxy in front of")
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
