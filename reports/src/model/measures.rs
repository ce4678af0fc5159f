//! What a case measured in its window: operations, throughput, latencies and renewal health.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// What a strategy declared it can do (`lockers::Capabilities`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Capabilities {
    /// Same owner may acquire again while holding.
    pub reentrant: bool,
    /// Leases carry strictly increasing fencing tokens.
    pub fencing: bool,
    /// Watchdog (renewed) leases.
    pub auto_renew: bool,
    /// Fixed leases that expire unrenewed.
    pub fixed_lease: bool,
    /// Waiters are woken by the server.
    pub wait_notify: bool,
    /// `lost()` resolves as soon as a loss is known.
    pub lost_signal: bool,
    /// Smallest TTL honoured.
    pub min_ttl_ms: f64,
    /// TTLs are rounded up to a multiple of this.
    pub ttl_granularity_ms: f64,
}

/// The measured window of a case.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Window {
    /// Warm-up before measuring.
    pub warmup_ms: f64,
    /// Length of the measured window (shorter than asked when interrupted or bounded by `cycles`).
    pub measured_ms: f64,
    /// Wall time of the whole case: set-up (clients, worker processes, servers a fault starts for the
    /// case), warm-up, measured window and tear-down; summed over trials. What a suite plans with.
    /// Null in files written before it was recorded.
    #[serde(default)]
    pub wall_ms: Option<f64>,
}

/// What the holders did in the measured window.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Operations {
    /// Successful acquires.
    pub acquired: u64,
    /// Critical sections whose write the resource accepted.
    pub completed: u64,
    /// Critical sections abandoned because `lost()` fired (on_lost = abort).
    pub aborted_on_loss: u64,
    /// Writes the resource rejected (stale fencing token).
    pub rejected_writes: u64,
    /// Critical sections cut short by the end of the case.
    pub stopped: u64,
    /// Failed acquires by `LockError` kind (`timeout`, `backend`, ...).
    pub acquire_errors: BTreeMap<String, u64>,
    /// Failed releases by kind (`not_held` after an expiry, ...).
    pub release_errors: BTreeMap<String, u64>,
}

/// Throughput of completed critical sections.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Throughput {
    /// Completed critical sections per second over the window.
    pub completed_per_s: f64,
    /// Completed critical sections in each whole second of the window.
    pub timeline_per_s: Vec<u64>,
}

/// A latency distribution. All fields but `count` are null when `count` is 0.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Summary {
    /// Samples.
    pub count: u64,
    /// Smallest sample.
    pub min_ms: Option<f64>,
    /// Mean.
    pub mean_ms: Option<f64>,
    /// Median.
    pub p50_ms: Option<f64>,
    /// 90th percentile.
    pub p90_ms: Option<f64>,
    /// 99th percentile.
    pub p99_ms: Option<f64>,
    /// 99.9th percentile.
    pub p999_ms: Option<f64>,
    /// Largest sample.
    pub max_ms: Option<f64>,
}

/// Latencies of the measured window.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Latencies {
    /// Successful acquires: from the call (closed loop) or from the intended start (open loop,
    /// `rate`), so a stalled server is not hidden (coordinated omission).
    pub acquire: Summary,
    /// Release → next holder: from the release call of one holder to the acquire returning in the
    /// next holder that was already waiting for the same key.
    pub handoff: Summary,
    /// From acquired to the release call (or to noticing a loss).
    pub hold: Summary,
    /// The release call.
    pub release: Summary,
}

/// Renewal health, built from `LockEvent`s only.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Renewal {
    /// Successful renewals (`Renewed` events) in the window.
    pub renewals: u64,
    /// Renewals per second.
    pub renewals_per_s: f64,
    /// Failed renewal attempts (`RenewFailed`).
    pub failures: u64,
    /// Round trip: `done_at - sent_at`.
    pub round_trip: Summary,
    /// Lag: `sent_at - scheduled_at`.
    pub lag: Summary,
    /// Margin: the TTL the server still had when the renewal landed (`remaining_ttl_before`).
    pub margin: Summary,
    /// `Lost` events by reason, whole case.
    pub losses: BTreeMap<String, u64>,
}
