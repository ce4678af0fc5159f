//! Where a scale step's figures are read: the server's counters and process (locks held, CPU time)
//! and the client's process (lockbench's own, or a peer's adapter).

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::Duration;

use lockers::Locker;

use crate::backends::stats::StatsSource;
use crate::backends::{Backend, ServerKind};
use crate::base::proc_stat;
use crate::kinds::ServerKindExt;
use crate::kinds::held::{HeldProbe, NOT_COUNTED};

/// Where a server's counters are read, and its process for CPU time when known.
#[derive(Debug, Clone)]
pub(crate) struct ServerProbe {
    pub(super) held: HeldProbe,
    pub(super) socket: Option<SocketAddr>,
    pub(super) stats: Option<StatsSource>,
    pid: Option<u32>,
}

impl ServerProbe {
    /// The probe of `server`; `pids` gives the process of a server this process did not start.
    pub(crate) fn of(server: &Backend, pids: &BTreeMap<ServerKind, u32>) -> Self {
        ServerProbe {
            held: server
                .kind()
                .server()
                .map_or(NOT_COUNTED, |entry| entry.held),
            socket: server.socket(),
            stats: server.stats_source(),
            pid: server.pid().or_else(|| pids.get(&server.kind()).copied()),
        }
    }

    /// The locks the server holds now, counted by the server as its kind's
    /// [`HeldProbe::locks_held`] says; `None` where not counted or unreadable. Blocking.
    fn locks_held(&self) -> Option<u64> {
        (self.held.locks_held)(self.socket?)
    }
}

/// [`ServerProbe::locks_held`] off the async threads; `None` without a server.
pub(super) async fn server_locks_held(server: Option<ServerProbe>) -> Option<u64> {
    let server = server?;
    tokio::task::spawn_blocking(move || server.locks_held())
        .await
        .ok()
        .flatten()
}

impl ServerProbe {
    /// The server's CPU seconds so far from `/proc`, when its process is known, as its kind's
    /// [`HeldProbe::process_cpu_seconds`] reads them (PostgreSQL's children too).
    pub(super) fn process_cpu_seconds(&self) -> Option<f64> {
        (self.held.process_cpu_seconds)(self.pid?)
    }
}

/// The process whose CPU time, resident set and threads are a client's: lockbench's own, or for a peer
/// the adapter process its library holds and renews its locks in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum ClientProcess {
    /// This process.
    Own,
    /// A peer's adapter process.
    Adapter(u32),
}

impl ClientProcess {
    /// The adapter process of a peer's client, else this process.
    pub(super) fn of(locker: &dyn Locker) -> Self {
        locker
            .peer()
            .and_then(|p| p.adapter_process())
            .map_or(ClientProcess::Own, ClientProcess::Adapter)
    }

    /// CPU time, resident set and threads, from `/proc`.
    pub(super) fn sample(self) -> Option<proc_stat::ProcSample> {
        match self {
            ClientProcess::Own => proc_stat::sample(None),
            ClientProcess::Adapter(pid) => proc_stat::sample(Some(pid)),
        }
    }

    /// CPU time so far, finer than `/proc/<pid>/stat`'s clock ticks: `getrusage` for this process, the
    /// threads' scheduler run times for an adapter (whose library's threads live as long as it does).
    pub(super) fn cpu_time(self) -> Duration {
        match self {
            ClientProcess::Own => proc_stat::process_cpu_time(),
            ClientProcess::Adapter(pid) => proc_stat::threads_cpu_time(pid).unwrap_or_default(),
        }
    }
}
