//! What `lockbench scale` reads of a kind's server while its client only holds locks
//! ([`HeldProbe`]): the shape each kind's `held.rs` fills in, and what those probes share.

use std::net::SocketAddr;
use std::time::Duration;

use crate::base::measure::RedisCommandStats;
use crate::base::proc_stat;

/// How long one probe of a server may take.
pub(crate) const HELD_TIMEOUT: Duration = Duration::from_secs(2);

/// What `lockbench scale` reads of a kind's server while its client only holds locks. Blocking
/// reads; `None` where not counted or unreadable.
#[derive(Debug, Clone, Copy)]
pub struct HeldProbe {
    /// The locks the server at the given socket holds now, counted by the server itself.
    pub locks_held: fn(SocketAddr) -> Option<u64>,
    /// The server's CPU seconds so far from `/proc`, given its process id.
    pub process_cpu_seconds: fn(u32) -> Option<f64>,
    /// Its scripts' calls and time so far, where a renewal is a script call (Redis `INFO
    /// commandstats`).
    pub script_stats: Option<fn(SocketAddr) -> Option<RedisCommandStats>>,
    /// The renewal messages received so far, where renewals are stream messages the counters tell
    /// apart (etcd's `LeaseKeepAlive`).
    pub renewal_messages: Option<fn(SocketAddr) -> Option<u64>>,
    /// The outside counter (a name in [`StatsSnapshot::requests`](super::counters::StatsSnapshot))
    /// nothing but renewals move while the client only holds.
    pub renewal_counter: Option<&'static str>,
    /// Readies a server lockbench started (never one the user gave) for a strategy's scale run, given
    /// the most client threads the run allows (Redis: a clean slate, no keyspace notifications left
    /// on by an earlier strategy, room for one connection per guard thread).
    pub prepare: Option<fn(SocketAddr, u64)>,
    /// Clears what a strategy's scale run left on a server lockbench started (Redis: fencing
    /// counters never expire).
    pub clean: Option<fn(SocketAddr)>,
}

/// The CPU seconds of process `pid` so far, its own (not its children's).
pub(crate) fn own_process_cpu_seconds(pid: u32) -> Option<f64> {
    proc_stat::sample(Some(pid)).map(|s| s.cpu_seconds)
}

/// What is read of a kind without a server, or one whose locks the scale run does not count:
/// nothing but its process's CPU time.
pub(crate) const NOT_COUNTED: HeldProbe = HeldProbe {
    locks_held: |_| None,
    process_cpu_seconds: own_process_cpu_seconds,
    script_stats: None,
    renewal_messages: None,
    renewal_counter: None,
    prepare: None,
    clean: None,
};
