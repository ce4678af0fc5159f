//! How each native strategy's client is built: one connect function per strategy, from the
//! endpoints and the workload's renewal setting (each entry of the registry names one), and the
//! settings each library takes for a run.

use std::sync::Arc;

use lockers::etcd::{EtcdConfig, EtcdLease};
use lockers::memory::{MemoryConfig, MemoryLocker, MemoryServer};
use lockers::mysql::get_lock::MysqlGetLock;
use lockers::mysql::lease::MysqlLease;
use lockers::postgres::PostgresConfig;
use lockers::postgres::advisory::PostgresAdvisory;
use lockers::postgres::lease::PostgresLease;
use lockers::redis::{
    ConnectionSettings, Generation, GuardThreadConfig, KeyspaceConfig, KeyspaceVariant,
    RedisGuardThread, RedisKeyspace, RedisWatchdog, Redisson, RedissonConfig, Redlock,
    RedlockConfig, RenewalMode, ScaledTimeouts, Topology, ValkeyIfeq, WatchdogConfig,
};
use lockers::zookeeper::{ZkConfig, ZooKeeperLock};
use lockers::{Capabilities, Events, LockError, Locker, Renewal};

use super::{Connect, ConnectFuture, Endpoints, StrategySettings};
use crate::kinds::endpoints::required;

/// A connect function from how one client is built from the endpoints and the renewal setting: every
/// entry of `NATIVE` is one call of this helper, so no strategy repeats the boxing.
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

pub(super) fn memory_capabilities(settings: &StrategySettings) -> Result<Capabilities, LockError> {
    let config = MemoryConfig { renewal: *settings };
    let client = MemoryLocker::new(MemoryServer::new(), config, Events::none())?;
    Ok(client.capabilities())
}

pub(super) const CONNECT_MEMORY: Connect = connect_with!(|endpoints, renewal, events| {
    let config = MemoryConfig { renewal };
    MemoryLocker::new(endpoints.memory.clone(), config, events)?
});

pub(super) const CONNECT_MEMORY_UNSHARED: Connect = connect_with!(|_endpoints, renewal, events| {
    MemoryLocker::new(MemoryServer::new(), MemoryConfig { renewal }, events)?
});

fn watchdog_config(renewal: Renewal, renewal_mode: RenewalMode) -> WatchdogConfig {
    WatchdogConfig {
        renewal,
        renewal_mode,
        ..WatchdogConfig::default()
    }
}

pub(super) const CONNECT_REDIS_WATCHDOG: Connect = connect_with!(|endpoints, renewal, events| {
    let config = watchdog_config(renewal, RenewalMode::PerLock);
    RedisWatchdog::connect(endpoints.redis_url()?, config, events).await?
});

pub(super) const CONNECT_REDIS_WATCHDOG_BATCHED: Connect =
    connect_with!(|endpoints, renewal, events| {
        let config = watchdog_config(renewal, RenewalMode::BATCHED_DEFAULT);
        RedisWatchdog::connect(endpoints.redis_url()?, config, events).await?
    });

pub(super) const CONNECT_REDIS_GUARD_THREAD: Connect =
    connect_with!(|endpoints, renewal, events| {
        let config = GuardThreadConfig {
            renewal,
            ..GuardThreadConfig::default()
        };
        RedisGuardThread::connect(endpoints.redis_url()?, config, events).await?
    });

pub(super) const CONNECT_VALKEY_IFEQ: Connect = connect_with!(|endpoints, renewal, events| {
    let config = GuardThreadConfig {
        renewal,
        ..GuardThreadConfig::default()
    };
    let url = required(endpoints.addrs.valkey.as_deref(), "valkey server")?;
    ValkeyIfeq::connect(url, config, events).await?
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

pub(super) const CONNECT_REDISSON_CLASSIC: Connect = connect_with!(|endpoints, renewal, events| {
    let config = redisson_config(endpoints, renewal, Generation::Classic);
    Redisson::connect(endpoints.redis_url()?, config, events).await?
});

pub(super) const CONNECT_REDISSON: Connect = connect_with!(|endpoints, renewal, events| {
    let config = redisson_config(endpoints, renewal, Generation::Scheduler);
    Redisson::connect(endpoints.redis_url()?, config, events).await?
});

fn keyspace_config(renewal: Renewal) -> KeyspaceConfig {
    KeyspaceConfig {
        renewal,
        ..KeyspaceConfig::default()
    }
}

pub(super) const CONNECT_REDIS_KEYSPACE_NAIVE: Connect =
    connect_with!(|endpoints, renewal, events| {
        let (url, config) = (endpoints.redis_url()?, keyspace_config(renewal));
        RedisKeyspace::connect(url, KeyspaceVariant::Naive, config, events).await?
    });

pub(super) const CONNECT_REDIS_KEYSPACE_SHADOW: Connect =
    connect_with!(|endpoints, renewal, events| {
        let (url, config) = (endpoints.redis_url()?, keyspace_config(renewal));
        RedisKeyspace::connect(url, KeyspaceVariant::Shadow, config, events).await?
    });

pub(super) const CONNECT_REDLOCK: Connect = connect_with!(|endpoints, renewal, events| {
    let config = RedlockConfig {
        renewal,
        ..RedlockConfig::default()
    };
    Redlock::connect(endpoints.redis_node_urls()?, config, events).await?
});

pub(super) const CONNECT_ETCD: Connect = connect_with!(|endpoints, renewal, events| {
    let config = EtcdConfig {
        renewal,
        ..EtcdConfig::default()
    };
    EtcdLease::connect(endpoints.etcd_endpoints()?, config, events).await?
});

pub(super) const CONNECT_ZOOKEEPER: Connect = connect_with!(|endpoints, renewal, events| {
    let config = ZkConfig {
        renewal,
        ..ZkConfig::default()
    };
    ZooKeeperLock::connect(endpoints.zookeeper_connect()?, config, events).await?
});

/// The SQL strategies' settings for a run (PostgreSQL's and MySQL's are one type): their defaults
/// with the workload's renewal.
fn sql_config(renewal: Renewal) -> PostgresConfig {
    PostgresConfig {
        renewal,
        ..PostgresConfig::default()
    }
}

pub(super) const CONNECT_POSTGRES_ADVISORY: Connect =
    connect_with!(|endpoints, renewal, events| {
        PostgresAdvisory::connect(endpoints.postgres_url()?, sql_config(renewal), events).await?
    });

pub(super) const CONNECT_POSTGRES_LEASE: Connect = connect_with!(|endpoints, renewal, events| {
    PostgresLease::connect(endpoints.postgres_url()?, sql_config(renewal), events).await?
});

pub(super) const CONNECT_MYSQL_GET_LOCK: Connect = connect_with!(|endpoints, renewal, events| {
    MysqlGetLock::connect(endpoints.mysql_url()?, sql_config(renewal), events).await?
});

pub(super) const CONNECT_MYSQL_LEASE: Connect = connect_with!(|endpoints, renewal, events| {
    MysqlLease::connect(endpoints.mysql_url()?, sql_config(renewal), events).await?
});
