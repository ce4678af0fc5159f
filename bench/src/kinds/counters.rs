//! A server's outside counters at one moment ([`StatsSnapshot`]): the shape each kind's
//! `counters.rs` reads its server's counters into, and what those readers share.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::Duration;

use crate::base::proc_stat;

/// How long one read of a server's counters may take.
pub(crate) const COUNTERS_TIMEOUT: Duration = Duration::from_secs(2);

/// Reads the counters of a server from its nodes (each socket with its process, when known: the
/// one server, Redlock's masters or a cluster's), probing as the ACL user `auth` where the kind has
/// users. `None` when it does not answer or has no counters. Blocking; a few milliseconds.
pub type ReadCounters =
    fn(nodes: &[(SocketAddr, Option<u32>)], auth: Option<(&str, &str)>) -> Option<StatsSnapshot>;

/// Counters of a server at one moment.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StatsSnapshot {
    /// Requests served so far, by command or method.
    pub requests: BTreeMap<String, u64>,
    /// Requests the clients sent so far, as the server counted them (etcd: gRPC messages received,
    /// stream messages included; ZooKeeper: packets received); `None` for Redis, whose counters
    /// include the commands its scripts ran: a case fills it from lockers' count of the commands its
    /// clients sent instead (`driver::case`).
    pub client_requests: Option<u64>,
    /// Renewal calls received so far, where the counters tell them apart (etcd: `LeaseKeepAlive`
    /// stream messages).
    pub renew_calls: Option<u64>,
    /// CPU seconds used so far, when known.
    pub cpu_seconds: Option<f64>,
}

impl StatsSnapshot {
    /// These counters with the CPU time of process `pid` from `/proc` when it is known and readable
    /// (it wins over what the server said of itself).
    pub(crate) fn with_process_cpu(mut self, pid: Option<u32>) -> Self {
        if let Some(sample) = pid.and_then(|pid| proc_stat::sample(Some(pid))) {
            self.cpu_seconds = Some(sample.cpu_seconds);
        }
        self
    }
}

/// The counters of a kind whose server is one socket, read by `read_one`; several sockets (more
/// than one endpoint given) are not read.
pub(crate) fn one_node(
    nodes: &[(SocketAddr, Option<u32>)],
    read_one: impl FnOnce(SocketAddr, Option<u32>) -> Option<StatsSnapshot>,
) -> Option<StatsSnapshot> {
    match nodes {
        [(socket, pid)] => read_one(*socket, *pid),
        _ => None,
    }
}
