//! A 3-node ZooKeeper ensemble started for a case of its own (`leader_kill`).

use std::net::SocketAddr;
use std::time::Duration;

use lockbench_reports::model::ServerInfo;
use lockbench_servers::ZkEnsemble;

use crate::kinds::case_servers::{
    CaseServers, CaseStarts, LEADER_TIMEOUT, Start, case_info, kill_leader_of,
};
use crate::kinds::{EndpointAddrs, ServerKind};

/// A 3-node ZooKeeper ensemble (leader loss; measured 3.3 s, 8.0 s at load ~10: three JVMs).
pub(super) const STARTS: CaseStarts = CaseStarts {
    cluster: Some(Start {
        start: |()| {
            ZkEnsemble::start(3)
                .map(|z| Box::new(Ensemble(z)) as Box<dyn CaseServers>)
                .map_err(|e| format!("3-node ZooKeeper ensemble: {e}"))
        },
        takes: Duration::from_secs(4),
    }),
    pair: None,
    sentinels: None,
    sharded: None,
    nodes: None,
    restartable: None,
    namespaced: None,
};

/// A 3-node ZooKeeper ensemble.
#[derive(Debug)]
struct Ensemble(ZkEnsemble);

impl CaseServers for Ensemble {
    fn kind(&self) -> ServerKind {
        ServerKind::ZooKeeper
    }

    fn endpoints(&self) -> EndpointAddrs {
        EndpointAddrs {
            zookeeper: Some(self.0.connect_string()),
            ..EndpointAddrs::default()
        }
    }

    /// A node that was not the leader at the start, so a leader kill leaves it standing.
    fn stats_at(&self) -> Option<(SocketAddr, Option<u32>)> {
        let z = &self.0;
        let n = z.node((z.leader().unwrap_or(0) + 1) % z.len());
        Some((n.addr(), Some(n.pid())))
    }

    fn info(&self) -> ServerInfo {
        case_info(
            ServerKind::ZooKeeper,
            self.0.node(0).version().to_owned(),
            "3-node ensemble started per case".to_owned(),
            self.0.startup(),
        )
    }

    fn serving_pid(&self) -> Option<(u32, String)> {
        let z = &self.0;
        z.wait_for_leader(LEADER_TIMEOUT).map(|i| {
            (
                z.node(i).pid(),
                format!("zookeeper leader {}", z.node(i).addr()),
            )
        })
    }

    fn kill_leader(&self) -> Result<(String, Option<Duration>), String> {
        let z = &self.0;
        kill_leader_of(
            || z.wait_for_leader(LEADER_TIMEOUT),
            |i| z.kill(i),
            |i| format!("zookeeper node {i} (leader) {}", z.node(i).addr()),
        )
    }
}
