//! The server kinds, one entry each: everything that is true of a kind (whether a lock on it is
//! distributed, its command-line flag and secret variable, how a given address is probed, checked
//! and its version read, how lockbench starts one, where its addresses sit among a run's endpoints
//! and how a proxy is put in front of them, whether `MONITOR` follows it, which server faults it
//! offers, as abilities: [`ServerFault`]) lives in its [`KindEntry`], keyed by its id
//! ([`ServerKind`], shared with the peers' catalog), so shared code never asks "which server is
//! this?" by name. Each kind with a server has
//! a folder of its own (`redis/`, `redis_nodes/`, `etcd/`, `zookeeper/`, `postgres/`, `mysql/`) with the same
//! skeleton; the two without one (in-process, per-client) are here. A kind that is another kind's
//! entry on another program (`valkey/`, `valkey_nodes/`: the Redis kinds on `valkey-server`) has a
//! `mod.rs` only.
//!
//! # Adding a kind
//! 1. A launcher in `servers/` (a fresh data directory, loopback only, a free port, stopped on drop,
//!    its version).
//! 2. Its id: a variant of [`ServerKind`] (`lockers/src/kind.rs`) with its name.
//! 3. A folder `kinds/<kind>/` with the same files as the others: `mod.rs`, its `KIND` and its
//!    [`KindEntry`] (flag, address and secret handling, probes, version, start, endpoints, proxies,
//!    monitor, the faults it offers: [`ServerFaults`]); `check.rs`, its [`ServerEntry::client_check`]; `case_servers.rs`, the
//!    set-ups its faults start per case ([`CaseServers`], offered as [`CaseStarts`]); `counters.rs`,
//!    its outside counters read into a [`counters::StatsSnapshot`]; `held.rs`, its
//!    [`held::HeldProbe`], what `lockbench scale` reads of it while a client only holds locks. A
//!    field for its addresses in [`EndpointAddrs`].
//! 4. Its registration: one line in [`entry`], whose `match` has no catch-all.
//! 5. Its strategies, registered in `strategies` with the folder's `KIND`.

use std::any::Any;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::time::Duration;

use lockbench_servers::ServerError;
use lockers::LockError;

use self::counters::ReadCounters;
use self::held::HeldProbe;

pub use self::case_servers::{CaseServers, CaseStarts, FailoverReport, SessionWatch, Start};
pub use self::endpoints::EndpointAddrs;
pub use self::offered_faults::{EndSessions, REDIS_PRIMARY_COMMANDS, ServerFault, ServerFaults};
pub use self::postgres::prepare_own_postgres;
pub use lockers::ServerKind;

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

pub mod address;
pub mod case_servers;
pub mod counters;
pub mod endpoints;
pub mod etcd;
pub mod held;
pub mod mysql;
pub mod offered_faults;
pub mod postgres;
pub mod redis;
pub mod redis_nodes;
mod sql_case_servers;
pub mod valkey;
pub mod valkey_nodes;
pub mod zookeeper;

/// How long a probe of a given server may take.
const PROBE_TIMEOUT: Duration = Duration::from_secs(2);

/// What is true of one server kind.
#[derive(Debug)]
pub struct KindEntry {
    /// Its id (whose [`name`](ServerKind::name) listings and results use).
    pub kind: ServerKind,
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
    /// Checks a given address as the strategies connect to it (user and password, TLS, a cluster's
    /// layout read from the seeds, the primary asked of the Sentinels): `Ok(Some(version))` when the
    /// server told its version. `None`: only probed.
    pub client_check: Option<ClientCheck>,
    /// The addresses a client of it is given from a run's endpoints (a peer's adapter), or a
    /// `Config` error when the run has none.
    pub client_addresses: fn(&EndpointAddrs) -> Result<Vec<String>, LockError>,
    /// Whether its addresses name a user that is no secret without a password (PostgreSQL's
    /// `lockbench@`): a peer's adapter may take such an address.
    pub user_is_no_secret: bool,
    /// Whether a peer's adapter is given the password of its address through its environment
    /// ([`lockers::peer::credentials::PASSWORD_VARIABLE`]), out of the address (lockbench's own
    /// MariaDB has one).
    pub peers_read_password: bool,
    /// What a run's address of it stands for when that is many servers behind one address, which a
    /// peer's adapter cannot take (`a Redis Cluster`).
    pub many_servers_behind: fn(&EndpointAddrs) -> Option<&'static str>,
    /// Starts one on loopback.
    pub start: fn() -> Result<Started, ServerError>,
    /// Puts a server's address (as strategies take it) into a run's endpoints.
    pub set_endpoint: fn(&mut EndpointAddrs, &str),
    /// The sockets in `endpoints` a per-client proxy stands in front of, in order.
    pub proxied_sockets: fn(&EndpointAddrs) -> Result<Vec<SocketAddr>, String>,
    /// `endpoints` with those sockets replaced by the proxies' (same order), keeping what surrounds
    /// them (credentials, a database, a chroot).
    pub via_proxies: fn(&mut EndpointAddrs, &[SocketAddr]),
    /// The server faults it offers beyond a pause and the network faults every server takes.
    pub faults: ServerFaults,
    /// Whether `MONITOR` can follow its servers (the renewal-after-unlock count, a peer's requests).
    pub monitor: Option<Monitor>,
    /// Whether its counters count the commands its scripts run with the clients' own, so that the
    /// requests a native client sent are the client's own tally (checked against `MONITOR`).
    pub requests_from_tally: bool,
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

/// Checks a server address as the strategies connect to it ([`ServerEntry::client_check`]).
pub type ClientCheck = for<'a> fn(&'a str) -> AddressCheckFuture<'a>;

/// What a [`ClientCheck`] returns: `Ok(Some(version))` when the server told its version; an error
/// is one line without the password.
pub type AddressCheckFuture<'a> =
    Pin<Box<dyn Future<Output = Result<Option<String>, LockError>> + Send + 'a>>;

/// How `MONITOR` follows a kind's servers.
#[derive(Debug, Clone, Copy)]
pub struct Monitor {
    /// Whether renewals after unlock are counted on it: each lock key lives on one of its servers
    /// (not so on Redlock's independent nodes, where a key freed on one says nothing of a majority).
    pub renewals_after_unlock: bool,
}

/// Every kind, in [`ServerKind::ALL`]'s order.
pub fn all() -> impl Iterator<Item = ServerKind> {
    ServerKind::ALL.into_iter()
}

/// The kind named `name` as listings and results name it (`redis`, `in-process`, ...).
pub fn kind_named(name: &str) -> Option<ServerKind> {
    ServerKind::named(name)
}

/// Every kind's name, in [`ServerKind::ALL`]'s order.
pub fn kind_names() -> Vec<&'static str> {
    all().map(ServerKind::name).collect()
}

/// Everything that is true of `kind`: its registration, one line per kind.
pub fn entry(kind: ServerKind) -> &'static KindEntry {
    match kind {
        ServerKind::InProcess => &IN_PROCESS_ENTRY,
        ServerKind::PerClient => &PER_CLIENT_ENTRY,
        ServerKind::Redis => &redis::REDIS,
        ServerKind::RedisNodes => &redis_nodes::REDIS_NODES,
        ServerKind::Etcd => &etcd::ETCD,
        ServerKind::ZooKeeper => &zookeeper::ZOOKEEPER,
        ServerKind::Postgres => &postgres::POSTGRES,
        ServerKind::Mysql => &mysql::MYSQL,
        ServerKind::Valkey => &valkey::VALKEY,
        ServerKind::ValkeyNodes => &valkey_nodes::VALKEY_NODES,
    }
}

/// The kind a row of `kind` runs on when it runs on Valkey (its `~valkey` twin): Valkey for Redis,
/// Valkey nodes for Redlock's Redis nodes; `None` for a kind Valkey does not stand in for.
pub fn valkey_twin(kind: ServerKind) -> Option<ServerKind> {
    match kind {
        ServerKind::Redis => Some(valkey::KIND),
        ServerKind::RedisNodes => Some(valkey_nodes::KIND),
        _ => None,
    }
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

/// What a kind's entry says of it, asked of the kind id itself.
pub trait ServerKindExt: Copy {
    /// Everything that is true of this kind ([`entry`]).
    fn entry(self) -> &'static KindEntry;

    /// Whether it is a real server process.
    fn is_external(self) -> bool {
        self.entry().server.is_some()
    }

    /// Its server entry, when it is a real server process.
    fn server(self) -> Option<&'static ServerEntry> {
        self.entry().server.as_ref()
    }

    /// The server faults it takes (none without a server).
    fn faults(self) -> ServerFaults {
        self.server().map(|s| s.faults).unwrap_or_default()
    }

    /// `address` with the password from the environment filled in where the address has none: the
    /// variable is the kind's ([`ServerEntry::secret_variable`]), filled in as the kind's
    /// [`fill_secret`](ServerEntry::fill_secret) says. A variable that is set but cannot be used is
    /// an error (the message never contains it).
    fn password_from_env(self, address: &str) -> Result<String, String> {
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

impl ServerKindExt for ServerKind {
    fn entry(self) -> &'static KindEntry {
        entry(self)
    }
}

/// The in-process kind's id: the lock lives in the driver (the `memory` strategy).
pub const IN_PROCESS: ServerKind = ServerKind::InProcess;

static IN_PROCESS_ENTRY: KindEntry = KindEntry {
    kind: IN_PROCESS,
    distributed: false,
    in_driver_process: true,
    server: None,
};

/// The per-client kind's id: each client its own lock (the control without mutual exclusion).
pub const PER_CLIENT: ServerKind = ServerKind::PerClient;

static PER_CLIENT_ENTRY: KindEntry = KindEntry {
    kind: PER_CLIENT,
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
            assert_eq!(kind.entry().kind, kind);
            // A kind with a server is a distributed lock; one without is a reference or a control.
            assert_eq!(kind.is_external(), kind.entry().distributed, "{kind:?}");
        }
    }
}
