//! Which fault applies to which strategy, and what a fault needs from the run — in one place.
//!
//! | fault | applies to | needs |
//! |---|---|---|
//! | `pause_worker`, `crash_worker`, `starve_worker`, `cpu_hog`, `cgroup_quota` | every strategy with a lock server (not `memory`, whose server lives in the driver) | `workers = "processes"` |
//! | `proxy_delay`, `proxy_blackhole`, `proxy_reset` | every strategy with a real server | a TCP proxy per client and server address |
//! | `pause_server` | every strategy with a real server | a server lockbench started (its pid) |
//! | `client_pause` | Redis strategies | |
//! | `pubsub_kill` | Redis strategies that use pub/sub (waiters woken by the server, keyspace events) | |
//! | `failover` | Redis strategies | a primary + replica started per case, clients behind proxies |
//! | `leader_kill` | etcd and ZooKeeper strategies | a 3-member cluster / ensemble started per case |

use lockers::Capabilities;

use super::spec::{FaultKind, FaultScope};
use crate::backends::ServerKind;
use crate::strategies::Strategy;

/// Whether `kind` applies to `strategy` (which declares `caps`); the error says why not, one line.
pub fn applies(kind: FaultKind, strategy: &Strategy, caps: &Capabilities) -> Result<(), String> {
    let server = strategy.server;
    let ok = match kind.scope() {
        FaultScope::WorkerProcess => server != ServerKind::InProcess,
        FaultScope::Network => server.is_external(),
        FaultScope::Server => match kind {
            FaultKind::PauseServer => server.is_external(),
            FaultKind::ClientPause | FaultKind::Failover => server == ServerKind::Redis,
            FaultKind::PubsubKill => server == ServerKind::Redis && caps.wait_notify,
            FaultKind::LeaderKill => {
                matches!(server, ServerKind::Etcd | ServerKind::ZooKeeper)
            }
            _ => false,
        },
    };
    if ok {
        return Ok(());
    }
    let why = match kind {
        FaultKind::PubsubKill if server == ServerKind::Redis => {
            "it uses no pub/sub connection (its waiters poll)"
        }
        FaultKind::ClientPause | FaultKind::Failover | FaultKind::PubsubKill => {
            "it is not a Redis strategy"
        }
        FaultKind::LeaderKill => "it has no etcd or ZooKeeper cluster",
        _ if kind.scope() == FaultScope::WorkerProcess => {
            "its lock server lives in the driver process, so its clients cannot run as worker processes"
        }
        _ => "it has no server to fault",
    };
    Err(format!("{kind} does not apply to {}: {why}", strategy.id))
}

/// Whether a fault of `kind` needs the clients in worker processes.
pub fn needs_processes(kind: FaultKind) -> bool {
    kind.scope() == FaultScope::WorkerProcess
}

/// Whether a fault of `kind` needs the clients' connections to go through TCP proxies.
pub fn needs_proxies(kind: FaultKind) -> bool {
    kind.scope() == FaultScope::Network || kind == FaultKind::Failover
}

/// The servers of `kind` a case must start for itself (a fault destroys them), if any.
pub fn own_topology(kind: FaultKind) -> Option<Topology> {
    match kind {
        FaultKind::Failover => Some(Topology::RedisPair),
        FaultKind::LeaderKill => Some(Topology::Cluster),
        _ => None,
    }
}

/// A server set-up a case starts for itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Topology {
    /// A Redis primary with one asynchronous replica.
    RedisPair,
    /// A 3-member etcd cluster or 3-node ZooKeeper ensemble (whichever the strategy uses).
    Cluster,
}

impl Topology {
    /// The server kinds this topology replaces the run's shared servers for.
    pub fn replaces(self) -> &'static [ServerKind] {
        match self {
            Topology::RedisPair => &[ServerKind::Redis],
            Topology::Cluster => &[ServerKind::Etcd, ServerKind::ZooKeeper],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::strategies::{STRATEGIES, StrategySettings, find};

    fn check(kind: FaultKind, id: &str) -> Result<(), String> {
        let s = find(id).expect("registered");
        let caps = (s.capabilities)(&StrategySettings::new(std::time::Duration::from_secs(1)))
            .expect("caps");
        applies(kind, s, &caps)
    }

    #[test]
    fn applicability_follows_the_table() {
        assert!(check(FaultKind::PauseWorker, "redis-watchdog").is_ok());
        assert!(
            check(FaultKind::PauseWorker, "memory")
                .expect_err("memory")
                .contains("driver process")
        );
        assert!(check(FaultKind::PubsubKill, "redis-keyspace-shadow").is_ok());
        assert!(
            check(FaultKind::PubsubKill, "redis-guard-thread")
                .expect_err("polls")
                .contains("no pub/sub")
        );
        assert!(check(FaultKind::Failover, "etcd-lease").is_err());
        assert!(check(FaultKind::LeaderKill, "zookeeper").is_ok());
        assert!(check(FaultKind::LeaderKill, "redis-watchdog").is_err());
        // Every kind applies to at least one registered strategy.
        for kind in FaultKind::ALL {
            assert!(
                STRATEGIES.iter().any(|s| check(kind, s.id).is_ok()),
                "{kind}"
            );
        }
    }
}
