//! The strategy registry: one [`Strategy`] entry per strategy id, the only place the driver learns
//! which strategies exist and every fact the commands read of one (its server, how it renews, whether
//! it takes part in many-locks, its counterpart, whether it is a peer) and, per server kind, how a
//! user's server address is checked. Adding a strategy is adding one entry to `NATIVE` (and its
//! connect function); a peer is one entry of the peer catalog (`lockers::peer::catalog`). Everything
//! else reaches a strategy through `dyn Locker`.

use std::collections::BTreeSet;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, LazyLock};
use std::time::Duration;

use lockers::etcd::EtcdLease;
use lockers::memory::MemoryServer;
use lockers::peer::catalog::{self, PeerSpec};

pub use added::{
    ADDED_ADAPTER_LOGS, add_adapter, add_version, added, added_adapter_args, added_log_dir,
    log_added_adapters_under,
};
use lockers::mysql::get_lock::MysqlGetLock;
use lockers::mysql::lease::MysqlLease;
use lockers::peer::{PeerLocker, PeerProcesses};
use lockers::postgres::advisory::PostgresAdvisory;
use lockers::postgres::lease::PostgresLease;
use lockers::redis::{
    KeyspaceVariant, RedisGuardThread, RedisWatchdog, Redisson, Redlock, RenewalMode, ValkeyIfeq,
};
use lockers::zookeeper::ZooKeeperLock;
use lockers::{Capabilities, Events, LockError, Locker, Renewal};

use lockbench_reports::many_locks;

use crate::backends::{AddressCheckFuture, EndpointAddrs, ServerKind};

mod added;
pub mod beside;
mod choice;
mod connect;
use connect::*;
pub mod versions;
use crate::kinds::endpoints::{required, required_list};
use crate::kinds::{self, ServerKindExt};
pub use choice::StrategyChoice;

/// What every strategy is configured from: the workload's renewal setting (the watchdog lease's TTL and
/// renewal ratio), which each strategy's config embeds as it is (Redisson's lockWatchdogTimeout;
/// ZooKeeper's session timeout; etcd's lease TTL, rounded up to whole seconds by the strategy).
pub type StrategySettings = Renewal;

/// What a client is built against: the server addresses of the run and what the clients of a case in
/// one process share: for `memory`, the one in-process server; for a peer whose adapter serves many
/// clients, its one adapter process.
#[derive(Debug, Clone)]
pub struct Endpoints {
    /// The addresses of the external servers.
    pub addrs: EndpointAddrs,
    /// The shared in-process server of a case (the `memory` strategy's "server").
    pub memory: Arc<MemoryServer>,
    /// The case's peer adapter processes (each client its own library client in them).
    pub peers: Arc<PeerProcesses>,
}

impl Endpoints {
    /// Endpoints with a fresh in-process server and no adapter processes yet.
    pub fn new(addrs: EndpointAddrs) -> Self {
        Endpoints {
            addrs,
            memory: MemoryServer::new(),
            peers: PeerProcesses::new(),
        }
    }

    /// The Redis URL, or a `Config` error.
    pub fn redis_url(&self) -> Result<&str, LockError> {
        required(self.addrs.redis.as_deref(), "redis server")
    }

    /// The URLs of the independent Redis nodes (Redlock), or a `Config` error.
    pub fn redis_node_urls(&self) -> Result<&[String], LockError> {
        required_list(&self.addrs.redis_nodes, "independent redis nodes")
    }

    /// The etcd endpoints, or a `Config` error.
    pub fn etcd_endpoints(&self) -> Result<&[String], LockError> {
        required_list(&self.addrs.etcd, "etcd server")
    }

    /// The PostgreSQL URL, or a `Config` error.
    pub fn postgres_url(&self) -> Result<&str, LockError> {
        required(self.addrs.postgres.as_deref(), "postgres server")
    }

    /// The MySQL URL, or a `Config` error.
    pub fn mysql_url(&self) -> Result<&str, LockError> {
        required(self.addrs.mysql.as_deref(), "mysql server")
    }

    /// The ZooKeeper connect string, or a `Config` error.
    pub fn zookeeper_connect(&self) -> Result<&str, LockError> {
        required(self.addrs.zookeeper.as_deref(), "zookeeper server")
    }
}

/// A boxed connect future.
pub type ConnectFuture<'a> =
    Pin<Box<dyn Future<Output = Result<Arc<dyn Locker>, LockError>> + Send + 'a>>;

/// Builds one client (one `Locker`, its own connections) that reports to `events`.
pub type Connect = for<'a> fn(&'a Endpoints, &'a StrategySettings, Events) -> ConnectFuture<'a>;

/// What the commands read of a strategy besides its id, server and client: how it renews, as
/// `lockbench scale` counts it, and whether a held count means something for it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Facts {
    /// Locks renewed per server call: `Some(chunk)` for batched renewal, `Some(1)` per lock, `None` when
    /// one call renews every lock of the client (etcd keep-alive, ZooKeeper session), there is no
    /// server, or the calls are not told apart.
    pub locks_per_renew_call: Option<u64>,
    /// How many times per renewal period it renews each lock (a little more than once for batched
    /// renewal), so the server calls it makes can be bounded.
    pub renewals_per_period: f64,
    /// Whether a held count means something for it, so it takes part in `compare`'s many-locks pass and
    /// in `lockbench scale` by default: false when its locks are lost and re-taken at every expiry by
    /// design.
    pub in_many_locks: bool,
    /// Whether `lockbench scale` measures the raw sender beside it: the yardstick of batched renewal
    /// (the same calls on the same schedule, no `lockers` code between), which its client-CPU target
    /// is a ratio to.
    pub yardstick: bool,
    /// Whether its lock is the holder's own connection (a PostgreSQL session-level advisory lock)
    /// rather than a lease the server expires: the report neither judges it among the watchdog leases
    /// nor expects a many-locks figure of it (one connection per held lock), and says so.
    pub connection_lock: bool,
    /// The warm-up a case gives it at least (its runtime compiles as it goes: the JVM rows), with the
    /// workload's faults moved by the same amount so they strike the same moment of the measured window.
    pub min_warmup: Duration,
    /// The smallest watchdog TTL it takes when above its capabilities' `min_ttl` (a peer's manifest
    /// says so: ShedLock's keep-alive refuses less than 30 s); zero for every other row.
    pub min_watchdog_ttl: Duration,
    /// The server command a renewal is when it is no script (`valkey-ifeq`'s `SET … IFEQ`, counted as
    /// `set`): `lockbench scale` counts its calls as the renewals. `None`: a renewal is a script call,
    /// or another kind's counter tells them apart.
    pub renewal_command: Option<&'static str>,
}

/// The many-locks cell of a strategy whose locks are lost and re-taken at every expiry by design
/// ([`Facts::in_many_locks`] false).
pub const RETAKEN_AT_EXPIRY: &str =
    "locks lost and re-taken at every expiry by design: a held count means nothing";

/// Renewal calls not told apart; a held count that means something.
const PLAIN: Facts = Facts {
    locks_per_renew_call: None,
    renewals_per_period: 1.0,
    in_many_locks: true,
    yardstick: false,
    connection_lock: false,
    min_warmup: Duration::ZERO,
    min_watchdog_ttl: Duration::ZERO,
    renewal_command: None,
};

/// One server call per lock renewal.
const PER_LOCK: Facts = Facts {
    locks_per_renew_call: Some(1),
    ..PLAIN
};

/// The batched watchdog's renewal: its default chunk of locks per call, a little more than once per
/// period; the raw sender stands beside it.
const BATCHED: Facts = Facts {
    locks_per_renew_call: Some(match RenewalMode::BATCHED_DEFAULT {
        RenewalMode::Batched { chunk } => chunk as u64,
        RenewalMode::PerLock => 1,
    }),
    renewals_per_period: lockers::redis::watchdog::BATCHED_RENEWALS_PER_PERIOD,
    yardstick: true,
    ..PLAIN
};

/// `postgres-lease`'s renewal: one statement per chunk of due rows, a little more than once per period.
const ROWS_BATCHED: Facts = Facts {
    locks_per_renew_call: Some(lockers::postgres::lease::RENEW_CHUNK as u64),
    renewals_per_period: lockers::postgres::lease::RENEWALS_PER_PERIOD,
    ..PLAIN
};

/// `mysql-lease`'s renewal: one request (three statements) per chunk of due rows, a little more than
/// once per period.
const MYSQL_ROWS_BATCHED: Facts = Facts {
    locks_per_renew_call: Some(lockers::mysql::lease::RENEW_CHUNK as u64),
    renewals_per_period: lockers::mysql::lease::RENEWALS_PER_PERIOD,
    ..PLAIN
};

/// A lock that is the holder's own connection (a session-level lock): thousands of held locks would
/// be thousands of connections.
const CONNECTION_LOCK: Facts = Facts {
    in_many_locks: false,
    connection_lock: true,
    ..PER_LOCK
};

/// Redisson 3.44+'s renewal: every held lock once per tick (a third of the timeout), in chunks of
/// `lockWatchdogBatchSize` per call.
const REDISSON_SCHEDULER: Facts = Facts {
    locks_per_renew_call: Some(lockers::redis::redisson::DEFAULT_BATCH_SIZE as u64),
    ..PLAIN
};

/// How a strategy's clients are built.
#[derive(Debug, Clone, Copy)]
enum Client {
    /// A `lockers` strategy: what it declares without connecting, and how a client connects.
    Native {
        capabilities: fn(&StrategySettings) -> Result<Capabilities, LockError>,
        connect: Connect,
    },
    /// A real library driven by its adapter process (`adapters/`), as the peer catalog describes it.
    Peer(&'static PeerSpec),
}

/// One registered strategy.
#[derive(Debug, Clone, Copy)]
pub struct Strategy {
    /// The id used everywhere (CLI, results, charts).
    pub id: &'static str,
    /// One line: what the strategy is.
    pub description: &'static str,
    /// Where its lock state lives; a run starts this server unless the user gave its address.
    pub server: ServerKind,
    /// Whether `--strategies all` includes it (controls and peers are left out).
    pub in_all: bool,
    /// How it renews, and whether it takes part in many-locks.
    pub facts: Facts,
    /// For a peer: the lockbench strategy that models it, which the report reads it beside (`None` for
    /// lockbench's own strategies).
    pub counterpart: Option<&'static str>,
    /// For a Redis row run on Valkey (`redis-watchdog~valkey`): the Redis row it is (its client, on
    /// the Valkey servers' addresses).
    pub valkey_twin_of: Option<&'static str>,
    client: Client,
}

impl Strategy {
    /// A `lockers` strategy of `server`, with the [`PLAIN`] facts and no counterpart.
    const fn native(
        id: &'static str,
        description: &'static str,
        server: ServerKind,
        capabilities: fn(&StrategySettings) -> Result<Capabilities, LockError>,
        connect: Connect,
    ) -> Self {
        Strategy {
            id,
            description,
            server,
            in_all: true,
            facts: PLAIN,
            counterpart: None,
            valkey_twin_of: None,
            client: Client::Native {
                capabilities,
                connect,
            },
        }
    }

    /// The row of a peer from the catalog; `None` for an adapter without a server (`py-memory`, which
    /// measures the adapter protocol's own cost and is no row).
    fn peer(spec: &'static PeerSpec) -> Option<Self> {
        let counterpart = spec.counterpart.as_str();
        let server = spec.backend?;
        Some(Strategy {
            id: spec.id.as_str(),
            description: spec.description.as_str(),
            server,
            in_all: false,
            // How its model renews (locks per server call, renewals per period), so `lockbench scale`
            // holds the library to its model's call bound: a library renewing otherwise shows there.
            facts: Facts {
                min_warmup: spec.warm_up(),
                min_watchdog_ttl: spec.min_watchdog_ttl,
                yardstick: false,
                in_many_locks: PLAIN.in_many_locks,
                ..NATIVE
                    .iter()
                    .find(|s| s.id == counterpart)
                    .map_or(PLAIN, |model| model.facts)
            },
            counterpart: Some(counterpart),
            valkey_twin_of: None,
            client: Client::Peer(spec),
        })
    }

    /// This Redis row (Redlock's: on Valkey nodes) run on Valkey, as a row of its own named
    /// `<id>~valkey`, left out of `all`; `None` for a row of another server.
    fn on_valkey(&self) -> Option<Self> {
        let server = kinds::valkey_twin(self.server)?;
        let leak = |text: String| -> &'static str { Box::leak(text.into_boxed_str()) };
        Some(Strategy {
            id: leak(format!("{}{ON_VALKEY}", self.id)),
            description: leak(format!("on Valkey: {}", self.description)),
            server,
            in_all: false,
            counterpart: self.counterpart.map(|m| leak(format!("{m}{ON_VALKEY}"))),
            valkey_twin_of: Some(self.id),
            // The raw sender beside batched renewal talks to the run's Redis.
            facts: Facts {
                yardstick: false,
                ..self.facts
            },
            ..*self
        })
    }

    /// These facts instead of the [`PLAIN`] ones.
    const fn with(self, facts: Facts) -> Self {
        Strategy { facts, ..self }
    }

    /// Left out of `--strategies all` (a control).
    const fn not_in_all(self) -> Self {
        Strategy {
            in_all: false,
            ..self
        }
    }

    /// Why the many-locks pass (`compare`'s, `lockbench scale` by default) leaves it out, in the words
    /// of its many-locks cell; `None` when it takes part.
    pub fn not_at_scale(&self) -> Option<&'static str> {
        if !self.server.is_external() {
            Some(many_locks::NO_SERVER_AT_SCALE)
        } else if self.facts.connection_lock {
            Some(many_locks::CONNECTION_LOCK_AT_SCALE)
        } else if !self.facts.in_many_locks {
            Some(RETAKEN_AT_EXPIRY)
        } else {
            None
        }
    }

    /// Whether it is a peer (a real library run through its adapter process).
    pub fn is_peer(&self) -> bool {
        matches!(self.client, Client::Peer(_))
    }

    /// The reference adapter it runs, for a peer.
    pub fn peer_spec(&self) -> Option<&'static catalog::PeerSpec> {
        match self.client {
            Client::Native { .. } => None,
            Client::Peer(spec) => Some(spec),
        }
    }

    /// What it declares, without connecting (the live client's `capabilities()` is what the results
    /// record; a difference is reported). For a peer whose runtime is missing, a `Config` error naming
    /// the install command.
    pub fn capabilities(&self, settings: &StrategySettings) -> Result<Capabilities, LockError> {
        match self.client {
            Client::Native { capabilities, .. } => capabilities(settings),
            Client::Peer(spec) => {
                spec.command()?;
                Ok(spec.capabilities)
            }
        }
    }

    /// Builds one client (one `Locker`, its own connections) that reports to `events`.
    pub fn connect<'a>(
        &self,
        endpoints: &'a Endpoints,
        settings: &'a StrategySettings,
        events: Events,
    ) -> ConnectFuture<'a> {
        if let Some(redis_row) = self.valkey_twin_of.and_then(find) {
            return Box::pin(async move {
                let on_valkey = Endpoints {
                    addrs: endpoints.addrs.valkey_as_redis(),
                    ..endpoints.clone()
                };
                redis_row.connect(&on_valkey, settings, events).await
            });
        }
        match self.client {
            Client::Native { connect, .. } => connect(endpoints, settings, events),
            Client::Peer(spec) => {
                let kind = self.server;
                Box::pin(async move {
                    let servers = peer_servers(endpoints, kind)?;
                    let replicas = &endpoints.addrs.redis_replicas;
                    let mut config = spec.config(servers, replicas, *settings)?;
                    if !spec.shipped {
                        config.log_dir = added::added_log_dir();
                    }
                    let client = PeerLocker::start_in(config, events, &endpoints.peers).await?;
                    Ok(Arc::new(client) as Arc<dyn Locker>)
                })
            }
        }
    }
}

/// What a Redis row's id ends with when it runs on Valkey (`redis-watchdog~valkey`).
pub const ON_VALKEY: &str = "~valkey";

/// Every strategy lockbench knows: `NATIVE` (lockbench's own), then a row per peer of the catalog
/// ([`catalog::peers`]), in the catalog's order; each followed by the Valkey twins of its Redis rows; the adapters a user
/// adds come after ([`added`]).
pub static STRATEGIES: LazyLock<Vec<Strategy>> = LazyLock::new(|| {
    let peers: Vec<Strategy> = catalog::peers().iter().filter_map(Strategy::peer).collect();
    let with_twins = |rows: &[Strategy]| {
        let twins: Vec<Strategy> = rows.iter().filter_map(Strategy::on_valkey).collect();
        [rows, &twins].concat()
    };
    [with_twins(NATIVE), with_twins(&peers)].concat()
});

/// lockbench's own strategies (`lockers`) and the control.
const NATIVE: &[Strategy] = &[
    Strategy::native(
        lockers::memory::ID,
        "in-process reference: TTLs, timer renewal, fencing counter; every client of a case shares one MemoryServer",
        kinds::IN_PROCESS,
        memory_capabilities,
        CONNECT_MEMORY,
    ),
    Strategy::native(
        lockers::redis::watchdog::ID,
        "lockbench's improved RLock: Redisson's hash lock and timeout/3 watchdog, plus lost() signal, retries until the deadline, INCR fencing",
        kinds::redis::KIND,
        |_| Ok(RedisWatchdog::CAPABILITIES),
        CONNECT_REDIS_WATCHDOG,
    )
    .with(PER_LOCK),
    Strategy::native(
        lockers::redis::watchdog::BATCHED_ID,
        "redis-watchdog with batched renewal: one scheduler per client renews due locks in chunks of 100",
        kinds::redis::KIND,
        |_| Ok(RedisWatchdog::CAPABILITIES),
        CONNECT_REDIS_WATCHDOG_BATCHED,
    )
    .with(BATCHED),
    Strategy::native(
        lockers::redis::redisson::CLASSIC_ID,
        "Redisson before 3.44, faithfully: one renewal timer per lock; a renewal error stops renewal for good, silently",
        kinds::redis::KIND,
        |_| Ok(Redisson::CAPABILITIES),
        CONNECT_REDISSON_CLASSIC,
    )
    .with(PER_LOCK)
    // Left out of `all` to make room for PostgreSQL's rows in the 20-minute default suite: its cells
    // are read beside Redisson 3.43.0 in docs/findings/redisson.md, and it runs by name.
    .not_in_all(),
    Strategy::native(
        lockers::redis::redisson::ID,
        "Redisson 3.44+, faithfully: one scheduler per client renews every held lock each tick in chunks of 100; WAIT with replicas",
        kinds::redis::KIND,
        |_| Ok(Redisson::CAPABILITIES),
        CONNECT_REDISSON,
    )
    .with(REDISSON_SCHEDULER),
    Strategy::native(
        lockers::redis::guard_thread::ID,
        "SET NX PX + one OS thread per held lock renewing every ttl/3 on its own connection; polling waiters",
        kinds::redis::KIND,
        |_| Ok(RedisGuardThread::CAPABILITIES),
        CONNECT_REDIS_GUARD_THREAD,
    )
    .with(PER_LOCK),
    Strategy::native(
        lockers::redis::ifeq::ID,
        "no Lua: SET NX PX + INCR in one MULTI, renewed every TTL/3 by SET IFEQ, released by DELIFEQ (Valkey 9)",
        kinds::valkey::KIND,
        |_| Ok(ValkeyIfeq::CAPABILITIES),
        CONNECT_VALKEY_IFEQ,
    )
    // A renewal is one `SET … IFEQ`, no script.
    .with(Facts {
        renewal_command: Some("set"),
        ..PER_LOCK
    })
    // Left out of `all` (and the default suite, whose 20 minutes it would overrun by about 110 s):
    // it runs by name.
    .not_in_all(),
    // Its locks are lost and re-taken at every expiry by design, so a held count means nothing.
    Strategy::native(
        lockers::redis::keyspace::NAIVE_ID,
        "re-acquires when its own key's expired event arrives (already too late: unsafe by design)",
        kinds::redis::KIND,
        |_| Ok(KeyspaceVariant::Naive.capabilities()),
        CONNECT_REDIS_KEYSPACE_NAIVE,
    )
    .with(Facts {
        in_many_locks: false,
        ..PER_LOCK
    })
    // A demonstration of the notification race, unsafe by design: left out of `all` (and the default
    // suite) to make room for PostgreSQL's rows; it runs by name.
    .not_in_all(),
    Strategy::native(
        lockers::redis::keyspace::SHADOW_ID,
        "renews when a shadow key (2/3 of the TTL) expires; as good as Redis's expiry-event delivery",
        kinds::redis::KIND,
        |_| Ok(KeyspaceVariant::Shadow.capabilities()),
        CONNECT_REDIS_KEYSPACE_SHADOW,
    )
    .with(PER_LOCK),
    Strategy::native(
        lockers::redis::redlock::ID,
        "Redlock: SET NX PX on N independent masters (5), held on a majority within the validity time; extended on a majority; no fencing token",
        kinds::redis_nodes::KIND,
        |_| Ok(Redlock::CAPABILITIES),
        CONNECT_REDLOCK,
    ),
    Strategy::native(
        lockers::etcd::ID,
        "etcd lease kept alive every TTL/3 on one stream per client; concurrency.Mutex queue ordered by create revision",
        kinds::etcd::KIND,
        |_| Ok(EtcdLease::CAPABILITIES),
        CONNECT_ETCD,
    ),
    Strategy::native(
        lockers::zookeeper::ID,
        "Curator's ephemeral-sequential recipe; the session is the lease, probed every timeout/3",
        kinds::zookeeper::KIND,
        |_| Ok(ZooKeeperLock::CAPABILITIES),
        CONNECT_ZOOKEEPER,
    ),
    Strategy::native(
        lockers::postgres::advisory::ID,
        "PostgreSQL session-level advisory lock on a connection kept for the hold (checked every TTL/3); token from a per-key counter bumped in the same statement",
        kinds::postgres::KIND,
        |_| Ok(PostgresAdvisory::CAPABILITIES),
        CONNECT_POSTGRES_ADVISORY,
    )
    .with(CONNECTION_LOCK),
    Strategy::native(
        lockers::postgres::lease::ID,
        "PostgreSQL lease row taken by one INSERT ... ON CONFLICT on the server's clock, the client's rows renewed about every TTL/3 by one UPDATE per chunk of due rows; token bumped on every grant; polling waiters",
        kinds::postgres::KIND,
        |_| Ok(PostgresLease::CAPABILITIES),
        CONNECT_POSTGRES_LEASE,
    )
    .with(ROWS_BATCHED),
    // The MySQL rows run by name (not in `all`): the default suite has no room for them.
    Strategy::native(
        lockers::mysql::get_lock::ID,
        "MySQL/MariaDB user lock (GET_LOCK) on a connection kept for the hold (checked every TTL/3); token from a per-key counter bumped in the same statement",
        kinds::mysql::KIND,
        |_| Ok(MysqlGetLock::CAPABILITIES),
        CONNECT_MYSQL_GET_LOCK,
    )
    .with(CONNECTION_LOCK)
    .not_in_all(),
    Strategy::native(
        lockers::mysql::lease::ID,
        "MySQL/MariaDB lease row taken by one INSERT ... ON DUPLICATE KEY UPDATE on the server's clock, the client's rows renewed about every TTL/3 by one request per chunk of due rows; token bumped on every grant; polling waiters",
        kinds::mysql::KIND,
        |_| Ok(MysqlLease::CAPABILITIES),
        CONNECT_MYSQL_LEASE,
    )
    .with(MYSQL_ROWS_BATCHED)
    .not_in_all(),
    Strategy::native(
        "memory-unshared",
        "control without mutual exclusion: each client has its own MemoryServer, so the oracle must report violations",
        kinds::PER_CLIENT,
        memory_capabilities,
        CONNECT_MEMORY_UNSHARED,
    )
    .not_in_all(),
];

/// The entry for `id` (a user's added adapter too, and a row `id@version` whose version is installed).
pub fn find(id: &str) -> Option<&'static Strategy> {
    every()
        .find(|s| s.id == id)
        .or_else(|| versions::split(id).and_then(|_| added::installed_version(id)))
}

/// Every strategy: [`STRATEGIES`], then the adapters a user added.
pub fn every() -> impl Iterator<Item = &'static Strategy> + Clone {
    STRATEGIES.iter().chain(added())
}

/// Resolves a list of ids as [`StrategyChoice::from_lists`] does, into its entries (for the commands
/// that need only them).
pub fn resolve(ids: &[String]) -> Result<Vec<&'static Strategy>, String> {
    StrategyChoice::from_lists(ids).map(StrategyChoice::into_entries)
}

/// The servers a set of strategies needs.
pub fn servers_needed(strategies: &[&Strategy]) -> BTreeSet<ServerKind> {
    strategies.iter().map(|s| s.server).collect()
}

/// Checks a server the user gave as the strategies connect to it (the
/// [`AddressCheck`](crate::backends::AddressCheck) of
/// [`Backends::prepare`](crate::backends::Backends::prepare)), as its kind's entry says
/// ([`ServerEntry::client_check`](crate::kinds::ServerEntry)): Redis through the strategies'
/// connection (user/password, TLS, a cluster's layout read from the seeds or the primary asked of the
/// Sentinels), then its version from `INFO` (`None` if `INFO` is not allowed); etcd by a client of the
/// etcd strategy, which asks one member for its status. Other servers are only probed, by `backends`.
pub fn check_address(kind: ServerKind, address: &str) -> AddressCheckFuture<'_> {
    match kind.server().and_then(|s| s.client_check) {
        Some(check) => check(address),
        None => Box::pin(async { Ok(None) }),
    }
}

/// Why the Redis strategies that cannot run on a Redis Cluster (the peers) cannot.
pub const NOT_ON_REDIS_CLUSTER: &str = "a peer's adapter takes one server address";

/// Whether the Redis strategy `id` runs on a Redis Cluster (see [`NOT_ON_REDIS_CLUSTER`]).
pub fn runs_on_redis_cluster(id: &str) -> bool {
    !is_peer(id)
}

/// Whether `id` is a peer (a library run through its adapter process).
pub fn is_peer(id: &str) -> bool {
    find(id).is_some_and(Strategy::is_peer)
}

/// The lockbench strategy that models peer `id` (the report's pairing); `None` for native ids.
pub fn counterpart(id: &str) -> Option<&'static str> {
    find(id).and_then(|s| s.counterpart)
}

/// Why peer `id` cannot run here (its runtime or adapter is not installed; the message names the
/// install command), or `Ok` when it can.
pub fn peer_available(id: &str) -> Result<(), LockError> {
    let spec = find(id)
        .and_then(Strategy::peer_spec)
        .ok_or_else(|| LockError::Config(format!("no adapter {id:?}")))?;
    spec.command().map(|_| ())
}

/// The server addresses a peer's adapter is given, by the server it needs. Addresses with credentials
/// or TLS files are refused (a PostgreSQL user without a password is not a secret): the adapters do not
/// take them, and their logs must not see them; but a password on a kind whose adapters read it from
/// their environment (the MySQL kind) is given there, out of the address. So are Sentinel
/// addresses refused: the adapters take one server.
pub fn peer_servers(endpoints: &Endpoints, kind: ServerKind) -> Result<Vec<String>, LockError> {
    let Some(server) = kind.server() else {
        return Ok(Vec::new());
    };
    let servers = (server.client_addresses)(&endpoints.addrs)?;
    for address in &servers {
        if crate::kinds::address::is_sentinel(address) || crate::kinds::address::is_cluster(address)
        {
            return Err(LockError::Config(
                "peer adapters take one Redis server, not a Sentinel or cluster address".into(),
            ));
        }
        let parts = lockers::address::split(address)?;
        let secret = parts
            .credentials
            .as_ref()
            .is_some_and(|c| !server.user_is_no_secret || !c.password.is_empty())
            && !server.peers_read_password;
        if secret || !parts.tls.is_empty() {
            return Err(LockError::Config(format!(
                "peer adapters do not support servers with a password or TLS ({})",
                lockers::address::redact(address)
            )));
        }
    }
    Ok(servers)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_endpoints_are_config_errors() {
        let endpoints = Endpoints::new(EndpointAddrs::default());
        assert!(matches!(endpoints.redis_url(), Err(LockError::Config(_))));
        assert!(matches!(
            endpoints.etcd_endpoints(),
            Err(LockError::Config(_))
        ));
        assert!(matches!(
            endpoints.zookeeper_connect(),
            Err(LockError::Config(_))
        ));
    }

    #[test]
    fn ids_are_unique_and_resolve() {
        let ids: BTreeSet<&str> = STRATEGIES.iter().map(|s| s.id).collect();
        assert_eq!(ids.len(), STRATEGIES.len());
        let all = resolve(&["all".into()]).expect("all");
        assert!(all.iter().all(|s| s.in_all));
        assert!(all.iter().any(|s| s.id == "memory"));
        let some = resolve(&["memory,memory-unshared".into(), "memory".into()]).expect("list");
        assert_eq!(
            some.iter().map(|s| s.id).collect::<Vec<_>>(),
            ["memory", "memory-unshared"]
        );
        let err = resolve(&["redis-nope".into()]).expect_err("unknown");
        assert!(err.contains("known: memory"), "{err}");
        let err = resolve(&["redis-watchdg".into()]).expect_err("misspelled");
        assert_eq!(
            err,
            "unknown strategy 'redis-watchdg'; did you mean 'redis-watchdog'?"
        );
    }

    #[test]
    fn peer_rows_are_the_catalog_s_adapters_with_a_server_after_the_native_rows() {
        let peers: Vec<&str> = STRATEGIES
            .iter()
            .filter(|s| s.is_peer() && s.valkey_twin_of.is_none())
            .map(|s| s.id)
            .collect();
        let with_server: Vec<&str> = catalog::peers()
            .iter()
            .filter(|p| p.backend.is_some())
            .map(|p| p.id.as_str())
            .collect();
        assert_eq!(peers, with_server);
        assert!(!is_peer("py-memory") && find("py-memory").is_none());
        assert!(
            STRATEGIES
                .iter()
                .skip_while(|s| !s.is_peer())
                .all(Strategy::is_peer),
            "peers come after lockbench's own rows"
        );
        for peer in STRATEGIES.iter().filter(|s| s.is_peer()) {
            assert!(!peer.in_all, "{}", peer.id);
            let model = peer.counterpart.expect("a peer has a counterpart");
            assert!(find(model).is_some_and(|m| !m.is_peer()), "{}", peer.id);
        }
        assert_eq!(counterpart("go-redsync"), Some("redlock"));
        assert_eq!(counterpart("redlock"), None);
    }

    #[test]
    fn the_facts_name_the_yardstick_row_and_the_rows_left_out_of_many_locks() {
        let ids = |keep: fn(&Facts) -> bool| -> Vec<&str> {
            STRATEGIES
                .iter()
                .filter(|s| keep(&s.facts) && s.valkey_twin_of.is_none())
                .map(|s| s.id)
                .collect()
        };
        assert_eq!(ids(|f| f.yardstick), ["redis-watchdog-batched"]);
        assert_eq!(
            ids(|f| !f.in_many_locks),
            [
                "redis-keyspace-naive",
                "postgres-advisory",
                "mysql-get-lock"
            ]
        );
        let batched = find("redis-watchdog-batched").expect("registered").facts;
        assert_eq!(batched.locks_per_renew_call, Some(100));
        assert!(batched.renewals_per_period > 1.0);
        let calls = |id| find(id).expect("registered").facts.locks_per_renew_call;
        assert_eq!(calls("redisson"), Some(100));
        assert_eq!(calls("redisson-classic"), Some(1));
    }

    #[test]
    fn every_redis_row_has_a_valkey_twin_and_valkey_ifeq_runs_on_valkey_only() {
        for row in STRATEGIES.iter().filter(|s| s.valkey_twin_of.is_none()) {
            let twin = find(&format!("{}{ON_VALKEY}", row.id));
            match row.server {
                ServerKind::Redis | ServerKind::RedisNodes => {
                    let twin = twin.expect("a twin");
                    assert_eq!(twin.valkey_twin_of, Some(row.id));
                    assert!(
                        !twin.in_all && twin.is_peer() == row.is_peer(),
                        "{}",
                        twin.id
                    );
                }
                _ => assert!(twin.is_none(), "{}", row.id),
            }
        }
        assert_eq!(
            find("redlock~valkey").expect("twin").server,
            kinds::valkey_nodes::KIND
        );
        assert_eq!(
            find("jvm-redisson~valkey").and_then(|s| s.counterpart),
            Some("redisson~valkey")
        );
        let ifeq = find("valkey-ifeq").expect("registered");
        assert_eq!(
            (ifeq.server, ifeq.facts.renewal_command),
            (kinds::valkey::KIND, Some("set"))
        );
        assert!(STRATEGIES.iter().all(|s| !s.id.contains('@')));
    }

    #[tokio::test]
    async fn declared_capabilities_match_the_live_client() {
        let settings = StrategySettings::new(std::time::Duration::from_secs(1));
        let endpoints = Endpoints::new(EndpointAddrs::default());
        for strategy in STRATEGIES.iter().filter(|s| !s.server.is_external()) {
            let declared = strategy.capabilities(&settings).expect("capabilities");
            let client = strategy
                .connect(&endpoints, &settings, Events::none())
                .await
                .expect("connects");
            assert_eq!(client.capabilities(), declared, "{}", strategy.id);
        }
    }
}
