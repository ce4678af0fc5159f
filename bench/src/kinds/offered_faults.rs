//! The server faults a kind offers, as abilities: a fault that needs one applies where the
//! strategy's kind offers it, and the refusal where it does not is said here, by the ability
//! ([`ServerFaults::offer`]). Some a kind offers on the run's own server by command (Redis's
//! `CLIENT PAUSE`, listed in its entry's [`ServerFaults::commands`]); ending a session it offers by a
//! function of its own ([`ServerFaults::end_sessions`]); the rest by the set-ups it starts for a case
//! ([`ServerFaults::own`], each kind's `case_servers.rs`): a kind offers a failover when it starts a
//! primary with a replica, a keepalive partition when it starts a server in a network namespace.

use std::net::SocketAddr;

use super::case_servers::CaseStarts;

/// What a kind can have done to its servers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServerFault {
    /// `CLIENT PAUSE` on its one primary (`client_pause`).
    ClientPause,
    /// A script that keeps its one primary busy (`busy_script`).
    BusyScript,
    /// `CLIENT KILL TYPE pubsub` on its one primary (`pubsub_kill`).
    PubsubKill,
    /// Ending a holder's session from the server (`terminate_session`).
    EndSession,
    /// Failing a primary over to its replica, started per case (`failover`).
    Failover,
    /// A failover decided by Sentinels, started per case (`sentinel_failover`).
    SentinelFailover,
    /// Failing a sharded cluster's master over, started per case (`cluster_master_kill`,
    /// `cluster_failover`).
    ClusterFailover,
    /// Killing a consensus cluster's leader, started per case (`leader_kill`).
    LeaderKill,
    /// Killing, restarting and speeding up the clock of independent nodes, started per case
    /// (`node_kill`, `node_restart`, `clock_jump`).
    NodeFaults,
    /// Restarting one server on its data dir, started per case (`server_restart`).
    Restart,
    /// Dropping a client's packets silently inside the network namespace of a server started per
    /// case, which notices only by TCP keepalive (`keepalive_partition`).
    KeepalivePartition,
}

/// The faults Redis's primary commands offer (`CLIENT PAUSE`, a busy script, `CLIENT KILL`).
pub const REDIS_PRIMARY_COMMANDS: &[ServerFault] = &[
    ServerFault::ClientPause,
    ServerFault::BusyScript,
    ServerFault::PubsubKill,
];

impl ServerFault {
    /// Why a strategy whose kind does not offer it is refused the fault that needs it.
    fn not_offered(self) -> &'static str {
        match self {
            ServerFault::ClientPause
            | ServerFault::BusyScript
            | ServerFault::PubsubKill
            | ServerFault::SentinelFailover
            | ServerFault::ClusterFailover => "it does not run on a single Redis primary",
            ServerFault::EndSession => "it holds no PostgreSQL or MySQL session",
            ServerFault::Failover => {
                "it does not run on a primary with a replica (Redis, PostgreSQL or MySQL)"
            }
            ServerFault::LeaderKill => "it has no etcd or ZooKeeper cluster",
            ServerFault::NodeFaults => {
                "it does not run on independent Redis nodes (Redlock's masters)"
            }
            ServerFault::Restart => "it does not run on one Redis server",
            ServerFault::KeepalivePartition => {
                "it does not run on PostgreSQL or MySQL (lockbench starts no other server in a network namespace)"
            }
        }
    }
}

/// The server faults a kind offers beyond pausing its process and the network faults of a proxy.
#[derive(Debug, Clone, Copy, Default)]
pub struct ServerFaults {
    /// The faults it offers by commands to the run's server ([`REDIS_PRIMARY_COMMANDS`]).
    pub commands: &'static [ServerFault],
    /// Ends the sessions holding a lock from the server (PostgreSQL's `pg_terminate_backend`).
    pub end_sessions: Option<EndSessions>,
    /// The servers it can start for a case of its own, by set-up (each kind's `case_servers.rs`).
    pub own: CaseStarts,
}

impl ServerFaults {
    /// Whether the kind offers `fault`.
    pub fn offers(&self, fault: ServerFault) -> bool {
        let own = &self.own;
        match fault {
            ServerFault::ClientPause | ServerFault::BusyScript | ServerFault::PubsubKill => {
                self.commands.contains(&fault)
            }
            ServerFault::EndSession => self.end_sessions.is_some(),
            ServerFault::Failover => own.pair.is_some(),
            ServerFault::SentinelFailover => own.sentinels.is_some(),
            ServerFault::ClusterFailover => own.sharded.is_some(),
            ServerFault::LeaderKill => own.cluster.is_some(),
            ServerFault::NodeFaults => own.nodes.is_some(),
            ServerFault::Restart => own.restartable.is_some(),
            ServerFault::KeepalivePartition => own.namespaced.is_some(),
        }
    }

    /// `Ok` when the kind offers `fault`, else why a strategy on it is refused the fault that
    /// needs it.
    pub fn offer(&self, fault: ServerFault) -> Result<(), String> {
        if self.offers(fault) {
            Ok(())
        } else {
            Err(fault.not_offered().to_owned())
        }
    }
}

/// Ends, from the server at a socket (as its superuser), the sessions holding the lock named by
/// the `&str`; how many it ended. Blocking.
pub type EndSessions = fn(SocketAddr, &str) -> Result<usize, String>;
