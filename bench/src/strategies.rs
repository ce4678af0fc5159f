//! The strategy registry: one [`Strategy`] entry per strategy id, the only place the driver learns
//! which strategies exist. Adding a strategy is adding one entry to [`STRATEGIES`] (and its connect
//! function); everything else reaches it through `dyn Locker`.

use std::collections::BTreeSet;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use lockers::etcd::{EtcdConfig, EtcdLease};
use lockers::memory::{MemoryConfig, MemoryLocker, MemoryServer};
use lockers::redis::{
    GuardThreadConfig, KeyspaceConfig, KeyspaceVariant, RedisGuardThread, RedisKeyspace,
    RedisWatchdog, RenewalMode, WatchdogConfig,
};
use lockers::zookeeper::{ZkConfig, ZooKeeperLock};
use lockers::{Capabilities, Events, LockError, Locker};

use crate::backends::{EndpointAddrs, ServerKind};

/// What every strategy is configured from: the workload's lease settings.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StrategySettings {
    /// TTL of a watchdog lease (Redisson's lockWatchdogTimeout; ZooKeeper's session timeout; etcd's
    /// lease TTL, rounded up to whole seconds by the strategy).
    pub watchdog_timeout: Duration,
    /// Renewal period as a fraction of the timeout (1/3, as Redisson and etcd's Session do).
    pub renew_ratio: f64,
}

impl StrategySettings {
    /// Settings with the given watchdog timeout, renewed every third of it.
    pub fn new(watchdog_timeout: Duration) -> Self {
        StrategySettings {
            watchdog_timeout,
            renew_ratio: 1.0 / 3.0,
        }
    }
}

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
        connect: connect_memory,
    },
    Strategy {
        id: lockers::redis::watchdog::ID,
        description: "Redisson's RLock: Lua hash lock, watchdog renewal every timeout/3, pub/sub wake-up, INCR fencing",
        server: ServerKind::Redis,
        in_all: true,
        capabilities: |_| Ok(RedisWatchdog::CAPABILITIES),
        connect: connect_redis_watchdog,
    },
    Strategy {
        id: lockers::redis::watchdog::BATCHED_ID,
        description: "redis-watchdog with batched renewal: one scheduler per client renews due locks in chunks of 100",
        server: ServerKind::Redis,
        in_all: true,
        capabilities: |_| Ok(RedisWatchdog::CAPABILITIES),
        connect: connect_redis_watchdog_batched,
    },
    Strategy {
        id: lockers::redis::guard_thread::ID,
        description: "SET NX PX + one OS thread per held lock renewing every ttl/3 on its own connection; polling waiters",
        server: ServerKind::Redis,
        in_all: true,
        capabilities: |_| Ok(RedisGuardThread::CAPABILITIES),
        connect: connect_redis_guard_thread,
    },
    Strategy {
        id: lockers::redis::keyspace::NAIVE_ID,
        description: "re-acquires when its own key's expired event arrives (already too late: unsafe by design)",
        server: ServerKind::Redis,
        in_all: true,
        capabilities: |_| Ok(KeyspaceVariant::Naive.capabilities()),
        connect: connect_redis_keyspace_naive,
    },
    Strategy {
        id: lockers::redis::keyspace::SHADOW_ID,
        description: "renews when a shadow key (2/3 of the TTL) expires; as good as Redis's expiry-event delivery",
        server: ServerKind::Redis,
        in_all: true,
        capabilities: |_| Ok(KeyspaceVariant::Shadow.capabilities()),
        connect: connect_redis_keyspace_shadow,
    },
    Strategy {
        id: lockers::etcd::ID,
        description: "etcd lease kept alive every TTL/3 on one stream per client; concurrency.Mutex queue ordered by create revision",
        server: ServerKind::Etcd,
        in_all: true,
        capabilities: |_| Ok(EtcdLease::CAPABILITIES),
        connect: connect_etcd,
    },
    Strategy {
        id: lockers::zookeeper::ID,
        description: "Curator's ephemeral-sequential recipe; the session is the lease, probed every timeout/3",
        server: ServerKind::ZooKeeper,
        in_all: true,
        capabilities: |_| Ok(ZooKeeperLock::CAPABILITIES),
        connect: connect_zookeeper,
    },
    Strategy {
        id: "memory-unshared",
        description: "control without mutual exclusion: each client has its own MemoryServer, so the oracle must report violations",
        server: ServerKind::PerClient,
        in_all: false,
        capabilities: memory_capabilities,
        connect: connect_memory_unshared,
    },
];

/// The entry for `id`.
pub fn find(id: &str) -> Option<&'static Strategy> {
    STRATEGIES.iter().find(|s| s.id == id)
}

/// Resolves a list of ids (`all` expands to every entry with `in_all`), keeping order and dropping
/// repeats. An unknown id is an error naming the known ones.
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
                let known: Vec<&str> = STRATEGIES.iter().map(|s| s.id).collect();
                format!("unknown strategy {id:?}; known: {}, all", known.join(", "))
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

fn memory_config(settings: &StrategySettings) -> MemoryConfig {
    MemoryConfig {
        watchdog_timeout: settings.watchdog_timeout,
        renew_ratio: settings.renew_ratio,
    }
}

fn memory_capabilities(settings: &StrategySettings) -> Result<Capabilities, LockError> {
    let client = MemoryLocker::new(MemoryServer::new(), memory_config(settings), Events::none())?;
    Ok(client.capabilities())
}

fn connect_memory<'a>(
    endpoints: &'a Endpoints,
    settings: &'a StrategySettings,
    events: Events,
) -> ConnectFuture<'a> {
    Box::pin(async move {
        let client = MemoryLocker::new(endpoints.memory.clone(), memory_config(settings), events)?;
        Ok(Arc::new(client) as Arc<dyn Locker>)
    })
}

fn connect_memory_unshared<'a>(
    _endpoints: &'a Endpoints,
    settings: &'a StrategySettings,
    events: Events,
) -> ConnectFuture<'a> {
    Box::pin(async move {
        let client = MemoryLocker::new(MemoryServer::new(), memory_config(settings), events)?;
        Ok(Arc::new(client) as Arc<dyn Locker>)
    })
}

fn connect_redis_watchdog_with(
    endpoints: &Endpoints,
    settings: &StrategySettings,
    events: Events,
    renewal: RenewalMode,
) -> ConnectFuture<'static> {
    let url = endpoints.redis_url().map(str::to_owned);
    let config = WatchdogConfig {
        watchdog_timeout: settings.watchdog_timeout,
        renew_ratio: settings.renew_ratio,
        renewal,
        ..WatchdogConfig::default()
    };
    Box::pin(async move {
        let client = RedisWatchdog::connect(&url?, config, events).await?;
        Ok(Arc::new(client) as Arc<dyn Locker>)
    })
}

fn connect_redis_watchdog<'a>(
    endpoints: &'a Endpoints,
    settings: &'a StrategySettings,
    events: Events,
) -> ConnectFuture<'a> {
    connect_redis_watchdog_with(endpoints, settings, events, RenewalMode::PerLock)
}

fn connect_redis_watchdog_batched<'a>(
    endpoints: &'a Endpoints,
    settings: &'a StrategySettings,
    events: Events,
) -> ConnectFuture<'a> {
    connect_redis_watchdog_with(endpoints, settings, events, RenewalMode::BATCHED_DEFAULT)
}

fn connect_redis_guard_thread<'a>(
    endpoints: &'a Endpoints,
    settings: &'a StrategySettings,
    events: Events,
) -> ConnectFuture<'a> {
    Box::pin(async move {
        let config = GuardThreadConfig {
            watchdog_timeout: settings.watchdog_timeout,
            renew_ratio: settings.renew_ratio,
            ..GuardThreadConfig::default()
        };
        let client = RedisGuardThread::connect(endpoints.redis_url()?, config, events).await?;
        Ok(Arc::new(client) as Arc<dyn Locker>)
    })
}

fn connect_redis_keyspace(
    endpoints: &Endpoints,
    settings: &StrategySettings,
    events: Events,
    variant: KeyspaceVariant,
) -> ConnectFuture<'static> {
    let url = endpoints.redis_url().map(str::to_owned);
    let config = KeyspaceConfig {
        watchdog_timeout: settings.watchdog_timeout,
        ..KeyspaceConfig::default()
    };
    Box::pin(async move {
        let client = RedisKeyspace::connect(&url?, variant, config, events).await?;
        Ok(Arc::new(client) as Arc<dyn Locker>)
    })
}

fn connect_redis_keyspace_naive<'a>(
    endpoints: &'a Endpoints,
    settings: &'a StrategySettings,
    events: Events,
) -> ConnectFuture<'a> {
    connect_redis_keyspace(endpoints, settings, events, KeyspaceVariant::Naive)
}

fn connect_redis_keyspace_shadow<'a>(
    endpoints: &'a Endpoints,
    settings: &'a StrategySettings,
    events: Events,
) -> ConnectFuture<'a> {
    connect_redis_keyspace(endpoints, settings, events, KeyspaceVariant::Shadow)
}

fn connect_etcd<'a>(
    endpoints: &'a Endpoints,
    settings: &'a StrategySettings,
    events: Events,
) -> ConnectFuture<'a> {
    Box::pin(async move {
        let config = EtcdConfig {
            watchdog_ttl: settings.watchdog_timeout,
            keep_alive_ratio: settings.renew_ratio,
            ..EtcdConfig::default()
        };
        let client = EtcdLease::connect(endpoints.etcd_endpoints()?, config, events).await?;
        Ok(Arc::new(client) as Arc<dyn Locker>)
    })
}

fn connect_zookeeper<'a>(
    endpoints: &'a Endpoints,
    settings: &'a StrategySettings,
    events: Events,
) -> ConnectFuture<'a> {
    Box::pin(async move {
        let config = ZkConfig {
            session_timeout: settings.watchdog_timeout,
            probe_ratio: settings.renew_ratio,
            ..ZkConfig::default()
        };
        let client = ZooKeeperLock::connect(endpoints.zookeeper_connect()?, config, events).await?;
        Ok(Arc::new(client) as Arc<dyn Locker>)
    })
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
    }

    #[tokio::test]
    async fn declared_capabilities_match_the_live_client() {
        let settings = StrategySettings::new(Duration::from_secs(1));
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
