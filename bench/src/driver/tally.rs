//! `WorkerTally`: what one worker measured — counts, latency histograms, the per-second timeline and
//! its own cost accounting. Kept by the worker without sharing (no locks on the hot path), shipped as
//! JSON from worker processes, merged at the end of a case.

use std::collections::BTreeMap;

use lockbench_reports::model::ClientCost;
use serde::{Deserialize, Serialize};

use super::histogram::{Hist, as_base64, merge, new_hist};
use super::renewal::RenewalTally;

/// One worker's figures for the measured window.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct WorkerTally {
    /// Successful acquires.
    pub acquired: u64,
    /// Writes accepted.
    pub completed: u64,
    /// Critical sections abandoned on `lost()`.
    pub aborted_on_loss: u64,
    /// Writes rejected by fencing.
    pub rejected_writes: u64,
    /// Critical sections cut by the end of the case.
    pub stopped: u64,
    /// Failed acquires by kind.
    pub acquire_errors: BTreeMap<String, u64>,
    /// Failed releases by kind.
    pub release_errors: BTreeMap<String, u64>,
    /// Resource errors (worker processes only: the socket failed).
    pub resource_errors: u64,
    /// Acquire latency, ns.
    #[serde(with = "as_base64")]
    pub acquire: Hist,
    /// Hold time, ns.
    #[serde(with = "as_base64")]
    pub hold: Hist,
    /// Release call, ns.
    #[serde(with = "as_base64")]
    pub release: Hist,
    /// Completed critical sections per second of the window.
    pub timeline: Vec<u64>,
    /// Cycles in the window.
    pub cycles: u64,
    /// Sum of cycle wall times, ns.
    pub cycle_ns: u64,
    /// Sum of time inside acquire + release, ns.
    pub strategy_ns: u64,
    /// Sum of driver time (cycle minus acquire, release, task and waits), ns.
    pub overhead_ns: u64,
    /// The client's renewal figures.
    pub renewal: RenewalTally,
    /// Requests the clients counted ([`lockers::Locker::requests_sent`], 0 for a strategy that does
    /// not count), connecting and closing included: the requests a Redis server saw from this worker.
    #[serde(default)]
    pub redis_commands: u64,
    /// A remote worker's own process cost over the window (the driver cannot sample a process on
    /// another machine); not merged.
    #[serde(default)]
    pub own_cost: Option<ClientCost>,
    /// Why the strategy refused an acquire as misconfigured (the client then stopped).
    #[serde(default)]
    pub config_error: Option<String>,
    /// Acquire calls that got no lock, cut short by the end of the case or answered with an error:
    /// (key, when called, when given up, ns). The oracle's record says whether another client held
    /// the key meanwhile (contention).
    #[serde(default)]
    pub cut_acquires: Vec<(u32, u64, u64)>,
}

impl Default for WorkerTally {
    fn default() -> Self {
        WorkerTally {
            acquired: 0,
            completed: 0,
            aborted_on_loss: 0,
            rejected_writes: 0,
            stopped: 0,
            acquire_errors: BTreeMap::new(),
            release_errors: BTreeMap::new(),
            resource_errors: 0,
            acquire: new_hist(),
            hold: new_hist(),
            release: new_hist(),
            timeline: Vec::new(),
            cycles: 0,
            cycle_ns: 0,
            strategy_ns: 0,
            overhead_ns: 0,
            renewal: RenewalTally::default(),
            redis_commands: 0,
            own_cost: None,
            config_error: None,
            cut_acquires: Vec::new(),
        }
    }
}

fn add_counts(into: &mut BTreeMap<String, u64>, from: &BTreeMap<String, u64>) {
    for (kind, n) in from {
        *into.entry(kind.clone()).or_default() += n;
    }
}

impl WorkerTally {
    /// Adds another worker's figures.
    pub(crate) fn merge(&mut self, other: &WorkerTally) {
        self.acquired += other.acquired;
        self.completed += other.completed;
        self.aborted_on_loss += other.aborted_on_loss;
        self.rejected_writes += other.rejected_writes;
        self.stopped += other.stopped;
        add_counts(&mut self.acquire_errors, &other.acquire_errors);
        add_counts(&mut self.release_errors, &other.release_errors);
        self.resource_errors += other.resource_errors;
        merge(&mut self.acquire, &other.acquire);
        merge(&mut self.hold, &other.hold);
        merge(&mut self.release, &other.release);
        if self.timeline.len() < other.timeline.len() {
            self.timeline.resize(other.timeline.len(), 0);
        }
        for (slot, n) in self.timeline.iter_mut().zip(&other.timeline) {
            *slot += n;
        }
        self.cycles += other.cycles;
        self.cycle_ns += other.cycle_ns;
        self.strategy_ns += other.strategy_ns;
        self.overhead_ns += other.overhead_ns;
        self.renewal.merge(&other.renewal);
        self.redis_commands += other.redis_commands;
        self.cut_acquires.extend_from_slice(&other.cut_acquires);
        if self.config_error.is_none() {
            self.config_error.clone_from(&other.config_error);
        }
    }

    /// Counts one completed critical section in second `second` of the window.
    #[inline]
    pub(crate) fn count_completion(&mut self, second: usize) {
        if second >= self.timeline.len() {
            self.timeline.resize(second + 1, 0);
        }
        self.timeline[second] += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::driver::histogram::record;

    #[test]
    fn merges_and_travels_as_json() {
        let mut a = WorkerTally {
            completed: 2,
            ..WorkerTally::default()
        };
        a.count_completion(0);
        a.count_completion(2);
        *a.acquire_errors.entry("timeout".into()).or_default() += 1;
        record(&mut a.acquire, 5_000);
        let mut b = WorkerTally {
            completed: 1,
            ..WorkerTally::default()
        };
        b.count_completion(1);
        *b.acquire_errors.entry("timeout".into()).or_default() += 2;
        record(&mut b.acquire, 7_000);
        let json = serde_json::to_string(&b).expect("serializes");
        let b: WorkerTally = serde_json::from_str(&json).expect("parses");
        a.merge(&b);
        assert_eq!(a.completed, 3);
        assert_eq!(a.timeline, vec![1, 1, 1]);
        assert_eq!(a.acquire_errors.get("timeout"), Some(&3));
        assert_eq!(a.acquire.len(), 2);
    }
}
