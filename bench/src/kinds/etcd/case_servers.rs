//! A 3-member etcd cluster started for a case of its own (`leader_kill`).

use std::net::SocketAddr;
use std::time::Duration;

use lockbench_reports::model::ServerInfo;
use lockbench_servers::EtcdCluster;

use crate::kinds::case_servers::{
    CaseServers, CaseStarts, LEADER_TIMEOUT, Start, case_info, kill_leader_of,
};
use crate::kinds::{EndpointAddrs, ServerKind};

/// A 3-member etcd cluster (leader loss; measured 0.6 s, 3.0 s at load ~10).
pub(super) const STARTS: CaseStarts = CaseStarts {
    cluster: Some(Start {
        start: |()| {
            EtcdCluster::start(3)
                .map(|c| Box::new(Cluster(c)) as Box<dyn CaseServers>)
                .map_err(|e| format!("3-member etcd cluster: {e}"))
        },
        takes: Duration::from_millis(1500),
    }),
    pair: None,
    sentinels: None,
    sharded: None,
    nodes: None,
    restartable: None,
    namespaced: None,
};

/// A 3-member etcd cluster.
#[derive(Debug)]
struct Cluster(EtcdCluster);

impl CaseServers for Cluster {
    fn kind(&self) -> ServerKind {
        ServerKind::Etcd
    }

    fn endpoints(&self) -> EndpointAddrs {
        EndpointAddrs {
            etcd: self.0.endpoints(),
            ..EndpointAddrs::default()
        }
    }

    /// A member that was not the leader at the start, so a leader kill leaves it standing.
    fn stats_at(&self) -> Option<(SocketAddr, Option<u32>)> {
        let c = &self.0;
        let m = c.member((c.leader().unwrap_or(0) + 1) % c.len());
        Some((m.client_addr(), Some(m.pid())))
    }

    fn info(&self) -> ServerInfo {
        case_info(
            ServerKind::Etcd,
            self.0.member(0).version().to_owned(),
            "3-member cluster started per case".to_owned(),
            self.0.startup(),
        )
    }

    fn serving_pid(&self) -> Option<(u32, String)> {
        let c = &self.0;
        c.wait_for_leader(LEADER_TIMEOUT).map(|i| {
            (
                c.member(i).pid(),
                format!("etcd leader {}", c.member(i).client_addr()),
            )
        })
    }

    fn kill_leader(&self) -> Result<(String, Option<Duration>), String> {
        let c = &self.0;
        kill_leader_of(
            || c.wait_for_leader(LEADER_TIMEOUT),
            |i| c.kill(i),
            |i| format!("etcd member {i} (leader) {}", c.member(i).client_addr()),
        )
    }
}
