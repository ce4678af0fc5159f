//! One case's results: how it ended, the library and processes that ran it, when locks were granted,
//! and the orphaned holds and late renewals the server saw.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::cost::{ClientCost, DriverCost, ServerCost};
use super::faults::FaultWindow;
use super::measures::{Capabilities, Latencies, Operations, Renewal, Throughput, Window};
use super::safety::{HolderSample, Safety};
use super::trials::Trials;

/// How a case ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CaseStatus {
    /// Ran for its whole length.
    Complete,
    /// Stopped early (Ctrl-C); the figures cover what ran.
    Interrupted,
    /// Not run: the strategy cannot do what the case asks (e.g. a fixed lease); see `error`.
    Skipped,
    /// Could not start or failed while running; see `error`.
    Failed,
}

/// One strategy under one lease mode.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CaseResult {
    /// Strategy id.
    pub strategy: String,
    /// `watchdog` or `fixed:<duration>`.
    pub lease: String,
    /// How the case ended.
    pub status: CaseStatus,
    /// Why it was skipped or failed, one line.
    pub error: Option<String>,
    /// What the strategy declared.
    pub capabilities: Option<Capabilities>,
    /// The measured window.
    pub window: Window,
    /// Counts of what the holders did in the measured window.
    pub operations: Operations,
    /// Completed critical sections per second.
    pub throughput: Throughput,
    /// Latency distributions of the measured window.
    pub latency: Latencies,
    /// Renewal health, from the strategies' events only.
    pub renewal: Renewal,
    /// The safety oracle's three measures, over the whole case.
    pub safety: Safety,
    /// What the clients cost.
    pub client_cost: ClientCost,
    /// What the server did for this case; null when there is no server or it could not be asked.
    pub server_cost: Option<ServerCost>,
    /// The driver's own cost per cycle.
    pub driver: DriverCost,
    /// Raw HdrHistograms (values in nanoseconds) by name (`acquire`, `handoff`, `hold`, `release`,
    /// `renew_round_trip`, `renew_lag`, `renew_margin`, `loss_lateness`), base64 V2-deflate.
    pub histograms: BTreeMap<String, String>,
    /// The faults injected during the case, in start order (empty when the scenario injects none;
    /// missing in files written before faults existed).
    #[serde(default)]
    pub faults: Vec<FaultWindow>,
    /// A stretch of one key's believed-held intervals for the holder timeline; null when the case
    /// did not run (missing in files written before samples existed).
    #[serde(default)]
    pub holder_sample: Option<HolderSample>,
    /// The trials this case pools (each with its own seed); null for a single run (and in files
    /// written before trials existed). With trials, every count above is summed over them, every
    /// distribution comes from their merged histograms, and `safety.verdict` is violated when any
    /// trial was.
    #[serde(default)]
    pub trials: Option<Trials>,
    /// Orphaned holds (the workload's `orphan_after`): how long each left its lock unavailable;
    /// null when no task was orphaned (missing in older files).
    #[serde(default)]
    pub orphans: Option<Orphans>,
    /// Renew calls the server ran on lock keys after their release, counted from `MONITOR` (the
    /// renewal-after-unlock check, redisson#7272); null when the case did not count them.
    #[serde(default)]
    pub renew_after_unlock: Option<RenewAfterUnlock>,
    /// Peers: the adapter's JSON-lines round trip to its library's process, in ms, the smallest of 8
    /// pings when the client connected (`Locker::protocol_round_trip`). Each acquire and each release
    /// pays about one, so about twice this per cycle is protocol, not library. Null for lockbench's own
    /// strategies.
    #[serde(default)]
    pub protocol_round_trip_ms: Option<f64>,
    /// Peers: the library and the version the adapter's running process reported having loaded (its
    /// `hello`), checked against the pinned version before the case ran. Null for lockbench's own
    /// strategies (and in older files).
    #[serde(default)]
    pub library: Option<LoadedLibrary>,
    /// Peers: how the case's clients were mapped to adapter processes (each client its own library
    /// client either way): all in one process, as lockbench's own rows run theirs in one lockbench
    /// process, or one process per client when a fault acts on one client's process. Null for
    /// lockbench's own strategies (and in older files).
    #[serde(default)]
    pub adapter_processes: Option<AdapterProcesses>,
    /// Why a case that ran has no verdict: a fault it injects did not take effect
    /// (`fault not applied: pause_worker: …`, from [`FaultWindow::applied`]); with trials, every
    /// trial's fault failed so. A case whose fault did not apply says nothing about the lock under
    /// that fault, so it is neither safe nor violated. Null otherwise (and in older files).
    #[serde(default)]
    pub fault_not_applied: Option<String>,
    /// When locks were granted over the case, for cases that inject faults: the latency-over-time
    /// chart and the longest stretch without a grant. With trials, the first trial's. Null for cases
    /// without faults (and in older files).
    #[serde(default)]
    pub availability: Option<Availability>,
}

/// A library as a peer's running process loaded it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct LoadedLibrary {
    /// The library's name, as the adapter says it (`Redisson RLock`).
    pub name: String,
    /// Its version, as the running process loaded it (a jar's manifest, Go's build info, Python's
    /// package metadata, the node package's `package.json`).
    pub version: String,
}

/// How a peer case's clients were mapped to adapter processes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct AdapterProcesses {
    /// The clients (each its own library client: its own connection, session, renewal).
    pub clients: u32,
    /// The adapter processes they ran in.
    pub processes: u32,
}

impl std::fmt::Display for AdapterProcesses {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let clients = match self.clients {
            1 => "1 client".to_owned(),
            n => format!("{n} clients"),
        };
        match self.processes {
            1 => write!(f, "{clients} in 1 process"),
            p if p == self.clients => write!(f, "{clients}, 1 process each"),
            p => write!(f, "{clients} in {p} processes"),
        }
    }
}

/// When locks were granted over a case, in bins of `bin_ms` from the case start (warm-up included).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Availability {
    /// The bin width (100 ms, doubled for long cases so a case has at most 600 bins).
    pub bin_ms: f64,
    /// Locks granted in each bin.
    pub grants: Vec<u32>,
    /// The longest wait of an acquire granted in each bin, ms (from the acquire call to the grant);
    /// null when none was granted in the bin.
    pub max_wait_ms: Vec<Option<f64>>,
    /// The longest stretch of the measured window in which no client was granted any lock (exact to
    /// within a bin). It includes the time a holder worked: see `longest_blocked` for the lock's
    /// unavailability. Null when the window is empty.
    pub longest_gap: Option<Gap>,
    /// The longest stretch of the measured window in which some client waited for a key that no
    /// client held: the lock unavailable (a crashed or partitioned holder's lease running out, a
    /// failover, a frozen server); of zero length, at the window's start, when no client ever waited
    /// for a key nobody held. Null in files written before it was measured.
    #[serde(default)]
    pub longest_blocked: Option<Gap>,
}

impl Availability {
    /// The lock's measured unavailability: [`Self::longest_blocked`], or in older files, which lack
    /// it, [`Self::longest_gap`] (no grant, which also counts a holder's working time).
    pub fn unavailable(&self) -> Option<Gap> {
        self.longest_blocked.or(self.longest_gap)
    }
}

/// A stretch of time, ms from the case start.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Gap {
    /// Start.
    pub from_ms: f64,
    /// End.
    pub to_ms: f64,
}

impl CaseResult {
    /// A whole-case amount (the server's figures cover warm-up and measured window alike) per critical
    /// section the resource accepted over the same span; `None` when none completed.
    pub fn per_critical_section(&self, amount: f64) -> Option<f64> {
        let done = self.safety.lost_updates.completed_writes;
        (done > 0).then(|| amount / done as f64)
    }
}

/// Orphaned holds: tasks that ended without releasing or dropping their lease while the process lived.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Orphans {
    /// Orphaned holds.
    pub holds: u64,
    /// Per orphan: from its task's end until another client acquired the key, capped at the end
    /// of the case when nobody did.
    pub unavailable_ms: Vec<f64>,
    /// Of those, how many were still unavailable when the case ended (the figure is then the cap).
    pub capped: u64,
}

/// Renew calls after unlock, as the server saw them (`MONITOR`, scripts recognised by their SHA).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RenewAfterUnlock {
    /// Top-level renew calls the server ran.
    pub renew_calls: u64,
    /// Lock keys named by a renew call after the release of that key's last hold.
    pub on_released_keys: u64,
    /// Releases the server ran.
    pub releases: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_process_mapping_reads_as_a_phrase() {
        let at = |clients, processes| AdapterProcesses { clients, processes }.to_string();
        assert_eq!(at(16, 1), "16 clients in 1 process");
        assert_eq!(at(16, 16), "16 clients, 1 process each");
        assert_eq!(at(1, 1), "1 client in 1 process");
        assert_eq!(at(16, 4), "16 clients in 4 processes");
    }
}
