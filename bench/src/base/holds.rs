//! Holds, the leaf types every layer above shares: believed-held [`Interval`]s (how each ended:
//! [`EndedBy`]) as workers report them in [`IntervalBatch`]es for the oracle, and hold events: a worker
//! says the moment it acquires a key and the moment its hold ends, so a fault can aim at a client that
//! holds a lock right now and measure how long the lock stayed unavailable. Hold events are sent only
//! when a case injects faults (one channel send per acquire and per release).

use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};
use tokio::sync::mpsc;

/// How a believed-held interval ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(into = "u8", try_from = "u8")]
pub enum EndedBy {
    /// The holder called release.
    Released,
    /// The holder noticed `lost()` (or `is_held()` turned false before its write).
    Lost,
    /// The case ended while it held.
    Stopped,
    /// The task ended without releasing or dropping its lease (`orphan_after`): the worker's "thread"
    /// died while the lease stays referenced, so the strategy may keep renewing it.
    Orphaned,
}

impl From<EndedBy> for u8 {
    fn from(e: EndedBy) -> u8 {
        match e {
            EndedBy::Released => 0,
            EndedBy::Lost => 1,
            EndedBy::Stopped => 2,
            EndedBy::Orphaned => 3,
        }
    }
}

impl TryFrom<u8> for EndedBy {
    type Error = String;

    fn try_from(v: u8) -> Result<Self, String> {
        match v {
            0 => Ok(EndedBy::Released),
            1 => Ok(EndedBy::Lost),
            2 => Ok(EndedBy::Stopped),
            3 => Ok(EndedBy::Orphaned),
            other => Err(format!("bad interval end {other}")),
        }
    }
}

impl EndedBy {
    /// The name the results use: `released`, `lost`, `stopped` or `orphaned`.
    pub fn name(self) -> &'static str {
        match self {
            EndedBy::Released => "released",
            EndedBy::Lost => "lost",
            EndedBy::Stopped => "stopped",
            EndedBy::Orphaned => "orphaned",
        }
    }
}

/// One believed-held interval, times in monotonic nanoseconds. Serialized as a compact array.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(from = "IntervalWire", into = "IntervalWire")]
pub struct Interval {
    /// Key index.
    pub key: u32,
    /// When the acquire call started.
    pub acquire_started: u64,
    /// When the acquire returned (belief starts).
    pub start: u64,
    /// When the holder called release or noticed the loss (belief ends).
    pub end: u64,
    /// How it ended.
    pub ended_by: EndedBy,
}

type IntervalWire = (u32, u64, u64, u64, EndedBy);

impl From<IntervalWire> for Interval {
    fn from((key, acquire_started, start, end, ended_by): IntervalWire) -> Self {
        Interval {
            key,
            acquire_started,
            start,
            end,
            ended_by,
        }
    }
}

impl From<Interval> for IntervalWire {
    fn from(i: Interval) -> Self {
        (i.key, i.acquire_started, i.start, i.end, i.ended_by)
    }
}

/// A worker's batch of intervals.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct IntervalBatch {
    /// The client index.
    pub client: u32,
    /// Intervals in the client's order.
    pub intervals: Vec<Interval>,
    /// No later interval of this client starts before this (u64::MAX: the client is done).
    pub low_bound: u64,
}

/// Where workers leave interval batches for the oracle without waking anyone: the oracle (or a worker
/// process's forwarder) collects them on its own tick. Waking a parked task from the hot path would cost
/// the worker a futex system call per batch.
#[derive(Debug, Clone, Default)]
pub(crate) struct BatchQueue(Arc<Mutex<Vec<IntervalBatch>>>);

impl BatchQueue {
    /// An empty queue.
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// Leaves a batch.
    pub(crate) fn push(&self, batch: IntervalBatch) {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).push(batch);
    }

    /// Takes every batch left so far, in arrival order.
    pub(crate) fn take(&self) -> Vec<IntervalBatch> {
        std::mem::take(&mut *self.0.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

/// How often batches are collected from a [`BatchQueue`].
pub(crate) const COLLECT_EVERY: std::time::Duration = std::time::Duration::from_millis(50);

/// What happened to a hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum HoldChange {
    /// The acquire returned: the client holds the key.
    Acquired,
    /// The belief ended (released, loss noticed, or end of case).
    Ended(EndedBy),
}

/// One change, with the client's monotonic time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct HoldEvent {
    /// Client index.
    pub client: u32,
    /// Key index.
    pub key: u32,
    /// When (machine-wide monotonic ns).
    pub at_ns: u64,
    /// What.
    pub change: HoldChange,
}

/// Where a worker sends its hold events.
pub(crate) type HoldSink = mpsc::UnboundedSender<HoldEvent>;
