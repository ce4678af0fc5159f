//! The strategy registry: one [`Strategy`] entry per strategy id, the only place the driver learns
//! which strategies exist. Adding a strategy is adding one entry to [`STRATEGIES`] (and its connect
//! function); everything else reaches it through `dyn Locker`.

use std::collections::BTreeSet;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use lockers::etcd::{EtcdConfig, EtcdLease};
use lockers::memory::{MemoryConfig, MemoryLocker, MemoryServer};
use lockers::peer::PeerLocker;
use lockers::peer::catalog::{self, PeerBackend};
use lockers::redis::{
    ConnectionSettings, Generation, GuardThreadConfig, KeyspaceConfig, KeyspaceVariant,
    RedisGuardThread, RedisKeyspace, RedisWatchdog, Redisson, RedissonConfig, Redlock,
    RedlockConfig, RenewalMode, ScaledTimeouts, Topology, WatchdogConfig,
};
use lockers::zookeeper::{ZkConfig, ZooKeeperLock};
use lockers::{Capabilities, Events, LockError, Locker, Renewal};

use crate::backends::{EndpointAddrs, ServerKind};
use crate::base::suggest;

/// What every strategy is configured from: the workload's renewal setting (the watchdog lease's TTL and
/// renewal ratio), which each strategy's config embeds as it is (Redisson's lockWatchdogTimeout;
/// ZooKeeper's session timeout; etcd's lease TTL, rounded up to whole seconds by the strategy).
pub type StrategySettings = Renewal;

/// What a client is built against: the server addresses of the run and, for `memory`, the one
/// in-process server every client of a case shares.
#[derive(Debug, Clone)]
pub struct Endpoints {
    /// The addresses of the external servers.
    pub addrs: EndpointAddrs,
    /// The shared in-process server of a case (the `memory` strategy's "server").
    pub memory: Arc<MemoryServer>,
}

impl Endpoints {
    /// Endpoints with a fresh in-process server.
    pub fn new(addrs: EndpointAddrs) -> Self {
        Endpoints {
            addrs,
            memory: MemoryServer::new(),
        }
    }

    /// The Redis URL, or a `Config` error.
    pub fn redis_url(&self) -> Result<&str, LockError> {
        self.addrs
            .redis
            .as_deref()
            .ok_or_else(|| LockError::Config("no redis server in this run".into()))
    }

    /// The URLs of the independent Redis nodes (Redlock), or a `Config` error.
    pub fn redis_node_urls(&self) -> Result<&[String], LockError> {
        if self.addrs.redis_nodes.is_empty() {
            return Err(LockError::Config(
                "no independent redis nodes in this run".into(),
            ));
        }
        Ok(&self.addrs.redis_nodes)
    }

    /// The etcd endpoints, or a `Config` error.
    pub fn etcd_endpoints(&self) -> Result<&[String], LockError> {
        if self.addrs.etcd.is_empty() {
            return Err(LockError::Config("no etcd server in this run".into()));
        }
        Ok(&self.addrs.etcd)
    }

    /// The ZooKeeper connect string, or a `Config` error.
    pub fn zookeeper_connect(&self) -> Result<&str, LockError> {
        self.addrs
            .zookeeper
            .as_deref()
            .ok_or_else(|| LockError::Config("no zookeeper server in this run".into()))
    }
}

/// A boxed connect future.
pub type ConnectFuture<'a> =
    Pin<Box<dyn Future<Output = Result<Arc<dyn Locker>, LockError>> + Send + 'a>>;

/// Builds one client (one `Locker`, its own connections) that reports to `events`.
pub type Connect = for<'a> fn(&'a Endpoints, &'a StrategySettings, Events) -> ConnectFuture<'a>;

/// One registered strategy.
#[derive(Debug, Clone, Copy)]
pub struct Strategy {
    /// The id used everywhere (CLI, results, charts).
    pub id: &'static str,
    /// One line: what the strategy is.
    pub description: &'static str,
    /// Where its lock state lives; a run starts this server unless the user gave its address.
    pub server: ServerKind,
    /// Whether `--strategies all` includes it (controls are left out).
    pub in_all: bool,
    /// What it declares, without connecting (the live client's `capabilities()` is what the results
    /// record; a difference is reported).
    pub capabilities: fn(&StrategySettings) -> Result<Capabilities, LockError>,
    /// Builds a client.
    pub connect: Connect,
}

/// Every strategy lockbench knows.
pub const STRATEGIES: &[Strategy] = &[
    Strategy {
        id: lockers::memory::ID,
        description: "in-process reference: TTLs, timer renewal, fencing counter; every client of a case shares one MemoryServer",
        server: ServerKind::InProcess,
        in_all: true,
        capabilities: memory_capabilities,
        connect: CONNECT_MEMORY,
    },
    Strategy {
        id: lockers::redis::watchdog::ID,
        description: "lockbench's improved RLock: Redisson's hash lock and timeout/3 watchdog, plus lost() signal, retries until the deadline, INCR fencing",
        server: ServerKind::Redis,
        in_all: true,
        capabilities: |_| Ok(RedisWatchdog::CAPABILITIES),
        connect: CONNECT_REDIS_WATCHDOG,
    },
    Strategy {
        id: lockers::redis::watchdog::BATCHED_ID,
        description: "redis-watchdog with batched renewal: one scheduler per client renews due locks in chunks of 100",
        server: ServerKind::Redis,
        in_all: true,
        capabilities: |_| Ok(RedisWatchdog::CAPABILITIES),
        connect: CONNECT_REDIS_WATCHDOG_BATCHED,
    },
    Strategy {
        id: lockers::redis::redisson::CLASSIC_ID,
        description: "Redisson before 3.44, faithfully: one renewal timer per lock; a renewal error stops renewal for good, silently",
        server: ServerKind::Redis,
        in_all: true,
        capabilities: |_| Ok(Redisson::CAPABILITIES),
        connect: CONNECT_REDISSON_CLASSIC,
    },
    Strategy {
        id: lockers::redis::redisson::ID,
        description: "Redisson 3.44+, faithfully: one scheduler per client renews every held lock each tick in chunks of 100; WAIT with replicas",
        server: ServerKind::Redis,
        in_all: true,
        capabilities: |_| Ok(Redisson::CAPABILITIES),
        connect: CONNECT_REDISSON,
    },
    Strategy {
        id: lockers::redis::guard_thread::ID,
        description: "SET NX PX + one OS thread per held lock renewing every ttl/3 on its own connection; polling waiters",
        server: ServerKind::Redis,
        in_all: true,
        capabilities: |_| Ok(RedisGuardThread::CAPABILITIES),
        connect: CONNECT_REDIS_GUARD_THREAD,
    },
    Strategy {
        id: lockers::redis::keyspace::NAIVE_ID,
        description: "re-acquires when its own key's expired event arrives (already too late: unsafe by design)",
        server: ServerKind::Redis,
        in_all: true,
        capabilities: |_| Ok(KeyspaceVariant::Naive.capabilities()),
        connect: CONNECT_REDIS_KEYSPACE_NAIVE,
    },
    Strategy {
        id: lockers::redis::keyspace::SHADOW_ID,
        description: "renews when a shadow key (2/3 of the TTL) expires; as good as Redis's expiry-event delivery",
        server: ServerKind::Redis,
        in_all: true,
        capabilities: |_| Ok(KeyspaceVariant::Shadow.capabilities()),
        connect: CONNECT_REDIS_KEYSPACE_SHADOW,
    },
    Strategy {
        id: lockers::redis::redlock::ID,
        description: "Redlock: SET NX PX on N independent masters (5), held on a majority within the validity time; extended on a majority; no fencing token",
        server: ServerKind::RedisNodes,
        in_all: true,
        capabilities: |_| Ok(Redlock::CAPABILITIES),
        connect: CONNECT_REDLOCK,
    },
    Strategy {
        id: lockers::etcd::ID,
        description: "etcd lease kept alive every TTL/3 on one stream per client; concurrency.Mutex queue ordered by create revision",
        server: ServerKind::Etcd,
        in_all: true,
        capabilities: |_| Ok(EtcdLease::CAPABILITIES),
        connect: CONNECT_ETCD,
    },
    Strategy {
        id: lockers::zookeeper::ID,
        description: "Curator's ephemeral-sequential recipe; the session is the lease, probed every timeout/3",
        server: ServerKind::ZooKeeper,
        in_all: true,
        capabilities: |_| Ok(ZooKeeperLock::CAPABILITIES),
        connect: CONNECT_ZOOKEEPER,
    },
    Strategy {
        id: "memory-unshared",
        description: "control without mutual exclusion: each client has its own MemoryServer, so the oracle must report violations",
        server: ServerKind::PerClient,
        in_all: false,
        capabilities: memory_capabilities,
        connect: CONNECT_MEMORY_UNSHARED,
    },
    // Peers: the real libraries, each driven by its adapter process (`adapters/`), read beside the
    // lockbench strategy that models it (`lockbench compare --peers`).
    Strategy {
        id: "py-redis-py",
        description: "peer: redis-py's Lock (Python), fixed lease, no renewal; through its adapter process",
        server: ServerKind::Redis,
        in_all: false,
        capabilities: |_| peer_capabilities("py-redis-py"),
        connect: CONNECT_PEER_PY_REDIS_PY,
    },
    Strategy {
        id: "py-redis-lock",
        description: "peer: python-redis-lock with auto_renewal (a renewal thread); through its adapter process",
        server: ServerKind::Redis,
        in_all: false,
        capabilities: |_| peer_capabilities("py-redis-lock"),
        connect: CONNECT_PEER_PY_REDIS_LOCK,
    },
    Strategy {
        id: "py-kazoo",
        description: "peer: kazoo's Lock (Python, ZooKeeper recipe); through its adapter process",
        server: ServerKind::ZooKeeper,
        in_all: false,
        capabilities: |_| peer_capabilities("py-kazoo"),
        connect: CONNECT_PEER_PY_KAZOO,
    },
    Strategy {
        id: "py-etcd3",
        description: "peer: python-etcd3's Lock (a lease per lock); through its adapter process",
        server: ServerKind::Etcd,
        in_all: false,
        capabilities: |_| peer_capabilities("py-etcd3"),
        connect: CONNECT_PEER_PY_ETCD3,
    },
    Strategy {
        id: "node-redlock",
        description: "peer: the redlock npm package with using() auto-extension, on the Redlock nodes; through its adapter process",
        server: ServerKind::RedisNodes,
        in_all: false,
        capabilities: |_| peer_capabilities("node-redlock"),
        connect: CONNECT_PEER_NODE_REDLOCK,
    },
    Strategy {
        id: "jvm-curator",
        description: "peer: Apache Curator's InterProcessMutex (JVM); through its adapter process",
        server: ServerKind::ZooKeeper,
        in_all: false,
        capabilities: |_| peer_capabilities("jvm-curator"),
        connect: CONNECT_PEER_JVM_CURATOR,
    },
    Strategy {
        id: "jvm-redisson-3.43",
        description: "peer: Redisson 3.43.0's RLock (JVM), one renewal timer per lock; through its adapter process",
        server: ServerKind::Redis,
        in_all: false,
        capabilities: |_| peer_capabilities("jvm-redisson-3.43"),
        connect: CONNECT_PEER_JVM_REDISSON_3_43,
    },
    Strategy {
        id: "jvm-redisson",
        description: "peer: Redisson 3.52.0's RLock (JVM), the 3.44+ renewal scheduler; through its adapter process",
        server: ServerKind::Redis,
        in_all: false,
        capabilities: |_| peer_capabilities("jvm-redisson"),
        connect: CONNECT_PEER_JVM_REDISSON,
    },
    Strategy {
        id: "jvm-redisson-4",
        description: "peer: Redisson 4.7.0's RLock (JVM); through its adapter process",
        server: ServerKind::Redis,
        in_all: false,
        capabilities: |_| peer_capabilities("jvm-redisson-4"),
        connect: CONNECT_PEER_JVM_REDISSON_4,
    },
    Strategy {
        id: "go-etcd-mutex",
        description: "peer: etcd's Go concurrency.Mutex on a Session (the recipe etcd-lease models); through its adapter process",
        server: ServerKind::Etcd,
        in_all: false,
        capabilities: |_| peer_capabilities("go-etcd-mutex"),
        connect: CONNECT_PEER_GO_ETCD_MUTEX,
    },
    Strategy {
        id: "go-redsync",
        description: "peer: go-redsync (Redlock for Go), fixed leases, on the Redlock nodes; through its adapter process",
        server: ServerKind::RedisNodes,
        in_all: false,
        capabilities: |_| peer_capabilities("go-redsync"),
        connect: CONNECT_PEER_GO_REDSYNC,
    },
];

/// The entry for `id`.
pub fn find(id: &str) -> Option<&'static Strategy> {
    STRATEGIES.iter().find(|s| s.id == id)
}

/// Resolves a list of ids (`all` expands to every entry with `in_all`), keeping order and dropping
/// repeats. An unknown id is an error suggesting the closest known id, or else naming them all.
pub fn resolve(ids: &[String]) -> Result<Vec<&'static Strategy>, String> {
    let mut chosen: Vec<&'static Strategy> = Vec::new();
    for id in ids
        .iter()
        .flat_map(|s| s.split(','))
        .map(str::trim)
        .filter(|s| !s.is_empty())
    {
        let entries: Vec<&'static Strategy> = if id == "all" {
            STRATEGIES.iter().filter(|s| s.in_all).collect()
        } else {
            vec![find(id).ok_or_else(|| {
                let known = STRATEGIES.iter().map(|s| s.id).chain(["all"]);
                match suggest::did_you_mean(id, known.clone()) {
                    Some(hint) => format!("unknown strategy '{id}'{hint}"),
                    None => format!(
                        "unknown strategy '{id}'; known: {}",
                        known.collect::<Vec<_>>().join(", ")
                    ),
                }
            })?]
        };
        for entry in entries {
            if !chosen.iter().any(|c| c.id == entry.id) {
                chosen.push(entry);
            }
        }
    }
    if chosen.is_empty() {
        return Err("no strategy selected".into());
    }
    Ok(chosen)
}

/// The servers a set of strategies needs.
pub fn servers_needed(strategies: &[&Strategy]) -> BTreeSet<ServerKind> {
    strategies.iter().map(|s| s.server).collect()
}

/// Why the Redis strategies that cannot run on a Redis Cluster (the peers) cannot.
pub const NOT_ON_REDIS_CLUSTER: &str = "a peer's adapter takes one server address";

/// Whether the Redis strategy `id` runs on a Redis Cluster (see [`NOT_ON_REDIS_CLUSTER`]).
pub fn runs_on_redis_cluster(id: &str) -> bool {
    !is_peer(id)
}

/// Whether `id` is a peer (a library run through its adapter process).
pub fn is_peer(id: &str) -> bool {
    id != "py-memory" && catalog::find(id).is_some()
}

/// The lockbench strategy that models peer `id` (the report's pairing); `None` for native ids.
pub fn counterpart(id: &str) -> Option<&'static str> {
    catalog::find(id)
        .filter(|_| is_peer(id))
        .map(|spec| spec.counterpart)
}

/// Why peer `id` cannot run here (its runtime or adapter is not installed; the message names the
/// install command), or `Ok` when it can.
pub fn peer_available(id: &str) -> Result<(), LockError> {
    let spec = catalog::find(id)
        .ok_or_else(|| LockError::Config(format!("no reference adapter {id:?}")))?;
    spec.command(&catalog::adapters_dir()).map(|_| ())
}

/// What peer `id` declares; a `Config` error naming the install command when its runtime is missing.
fn peer_capabilities(id: &str) -> Result<Capabilities, LockError> {
    peer_available(id)?;
    catalog::find(id)
        .map(|spec| spec.capabilities)
        .ok_or_else(|| LockError::Config(format!("no reference adapter {id:?}")))
}

/// The server addresses a peer's adapter is given, by the server it needs. Addresses with credentials
/// or TLS files are refused: the adapters do not take them yet, and their logs must not see them. So
/// are Sentinel addresses: the adapters take one server.
fn peer_servers(endpoints: &Endpoints, backend: PeerBackend) -> Result<Vec<String>, LockError> {
    let servers = peer_addresses(endpoints, backend)?;
    for server in &servers {
        if crate::backends::address::is_sentinel(server)
            || crate::backends::address::is_cluster(server)
        {
            return Err(LockError::Config(
                "peer adapters take one Redis server, not a Sentinel or cluster address".into(),
            ));
        }
        let parts = lockers::address::split(server)?;
        if parts.credentials.is_some() || !parts.tls.is_empty() {
            return Err(LockError::Config(format!(
                "peer adapters do not support servers with a password or TLS ({})",
                lockers::address::redact(server)
            )));
        }
    }
    Ok(servers)
}

fn peer_addresses(endpoints: &Endpoints, backend: PeerBackend) -> Result<Vec<String>, LockError> {
    Ok(match backend {
        PeerBackend::None => Vec::new(),
        PeerBackend::Redis => vec![endpoints.redis_url()?.to_owned()],
        PeerBackend::RedisMany => endpoints.redis_node_urls()?.to_vec(),
        PeerBackend::ZooKeeper => vec![endpoints.zookeeper_connect()?.to_owned()],
        PeerBackend::Etcd => endpoints.etcd_endpoints()?.to_vec(),
    })
}

/// A connect function from how one client is built from the endpoints and the renewal setting: every
/// entry of [`STRATEGIES`] is one call of this helper, so no strategy repeats the boxing.
macro_rules! connect_with {
    (|$endpoints:ident, $renewal:ident, $events:ident| $build:expr) => {{
        fn connect<'a>(
            $endpoints: &'a Endpoints,
            settings: &'a StrategySettings,
            $events: Events,
        ) -> ConnectFuture<'a> {
            let $renewal = *settings;
            Box::pin(async move {
                let client = $build;
                Ok(Arc::new(client) as Arc<dyn Locker>)
            })
        }
        connect
    }};
}

/// A connect function that starts peer `$id`'s adapter process.
macro_rules! connect_peer {
    ($id:literal) => {
        connect_with!(|endpoints, renewal, events| {
            let spec = catalog::find($id)
                .ok_or_else(|| LockError::Config(format!("no reference adapter {:?}", $id)))?;
            let servers = peer_servers(endpoints, spec.backend)?;
            PeerLocker::start(spec.config(servers, renewal)?, events).await?
        })
    };
}

const CONNECT_PEER_PY_REDIS_PY: Connect = connect_peer!("py-redis-py");
const CONNECT_PEER_PY_REDIS_LOCK: Connect = connect_peer!("py-redis-lock");
const CONNECT_PEER_PY_KAZOO: Connect = connect_peer!("py-kazoo");
const CONNECT_PEER_PY_ETCD3: Connect = connect_peer!("py-etcd3");
const CONNECT_PEER_NODE_REDLOCK: Connect = connect_peer!("node-redlock");
const CONNECT_PEER_JVM_CURATOR: Connect = connect_peer!("jvm-curator");
const CONNECT_PEER_JVM_REDISSON_3_43: Connect = connect_peer!("jvm-redisson-3.43");
const CONNECT_PEER_JVM_REDISSON: Connect = connect_peer!("jvm-redisson");
const CONNECT_PEER_JVM_REDISSON_4: Connect = connect_peer!("jvm-redisson-4");
const CONNECT_PEER_GO_ETCD_MUTEX: Connect = connect_peer!("go-etcd-mutex");
const CONNECT_PEER_GO_REDSYNC: Connect = connect_peer!("go-redsync");

fn memory_capabilities(settings: &StrategySettings) -> Result<Capabilities, LockError> {
    let config = MemoryConfig { renewal: *settings };
    let client = MemoryLocker::new(MemoryServer::new(), config, Events::none())?;
    Ok(client.capabilities())
}

const CONNECT_MEMORY: Connect = connect_with!(|endpoints, renewal, events| {
    let config = MemoryConfig { renewal };
    MemoryLocker::new(endpoints.memory.clone(), config, events)?
});

const CONNECT_MEMORY_UNSHARED: Connect = connect_with!(|_endpoints, renewal, events| {
    MemoryLocker::new(MemoryServer::new(), MemoryConfig { renewal }, events)?
});

fn watchdog_config(renewal: Renewal, renewal_mode: RenewalMode) -> WatchdogConfig {
    WatchdogConfig {
        renewal,
        renewal_mode,
        ..WatchdogConfig::default()
    }
}

const CONNECT_REDIS_WATCHDOG: Connect = connect_with!(|endpoints, renewal, events| {
    let config = watchdog_config(renewal, RenewalMode::PerLock);
    RedisWatchdog::connect(endpoints.redis_url()?, config, events).await?
});

const CONNECT_REDIS_WATCHDOG_BATCHED: Connect = connect_with!(|endpoints, renewal, events| {
    let config = watchdog_config(renewal, RenewalMode::BATCHED_DEFAULT);
    RedisWatchdog::connect(endpoints.redis_url()?, config, events).await?
});

const CONNECT_REDIS_GUARD_THREAD: Connect = connect_with!(|endpoints, renewal, events| {
    let config = GuardThreadConfig {
        renewal,
        ..GuardThreadConfig::default()
    };
    RedisGuardThread::connect(endpoints.redis_url()?, config, events).await?
});

/// Redisson's settings for a run: its defaults, except that the command timeouts are scaled with the
/// watchdog timeout ([`ScaledTimeouts`]).
fn redisson_config(
    endpoints: &Endpoints,
    renewal: Renewal,
    generation: Generation,
) -> RedissonConfig {
    let scaled = ScaledTimeouts::for_ttl(renewal.ttl);
    let defaults = RedissonConfig::new(generation);
    RedissonConfig {
        renewal,
        topology: if endpoints.addrs.redis_replicated {
            Topology::Replicated
        } else {
            Topology::Single
        },
        retry_interval: scaled.retry_interval,
        connection: ConnectionSettings {
            response_timeout: scaled.response_timeout,
            ..defaults.connection
        },
        ..defaults
    }
}

const CONNECT_REDISSON_CLASSIC: Connect = connect_with!(|endpoints, renewal, events| {
    let config = redisson_config(endpoints, renewal, Generation::Classic);
    Redisson::connect(endpoints.redis_url()?, config, events).await?
});

const CONNECT_REDISSON: Connect = connect_with!(|endpoints, renewal, events| {
    let config = redisson_config(endpoints, renewal, Generation::Scheduler);
    Redisson::connect(endpoints.redis_url()?, config, events).await?
});

fn keyspace_config(renewal: Renewal) -> KeyspaceConfig {
    KeyspaceConfig {
        renewal,
        ..KeyspaceConfig::default()
    }
}

const CONNECT_REDIS_KEYSPACE_NAIVE: Connect = connect_with!(|endpoints, renewal, events| {
    let (url, config) = (endpoints.redis_url()?, keyspace_config(renewal));
    RedisKeyspace::connect(url, KeyspaceVariant::Naive, config, events).await?
});

const CONNECT_REDIS_KEYSPACE_SHADOW: Connect = connect_with!(|endpoints, renewal, events| {
    let (url, config) = (endpoints.redis_url()?, keyspace_config(renewal));
    RedisKeyspace::connect(url, KeyspaceVariant::Shadow, config, events).await?
});

const CONNECT_REDLOCK: Connect = connect_with!(|endpoints, renewal, events| {
    let config = RedlockConfig {
        renewal,
        ..RedlockConfig::default()
    };
    Redlock::connect(endpoints.redis_node_urls()?, config, events).await?
});

const CONNECT_ETCD: Connect = connect_with!(|endpoints, renewal, events| {
    let config = EtcdConfig {
        renewal,
        ..EtcdConfig::default()
    };
    EtcdLease::connect(endpoints.etcd_endpoints()?, config, events).await?
});

const CONNECT_ZOOKEEPER: Connect = connect_with!(|endpoints, renewal, events| {
    let config = ZkConfig {
        renewal,
        ..ZkConfig::default()
    };
    ZooKeeperLock::connect(endpoints.zookeeper_connect()?, config, events).await?
});

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

    #[tokio::test]
    async fn declared_capabilities_match_the_live_client() {
        let settings = StrategySettings::new(std::time::Duration::from_secs(1));
        let endpoints = Endpoints::new(EndpointAddrs::default());
        for strategy in STRATEGIES.iter().filter(|s| !s.server.is_external()) {
            let declared = (strategy.capabilities)(&settings).expect("capabilities");
            let client = (strategy.connect)(&endpoints, &settings, Events::none())
                .await
                .expect("connects");
            assert_eq!(client.capabilities(), declared, "{}", strategy.id);
        }
    }
}
