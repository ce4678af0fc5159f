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
    /// The operations behind the intervals, when the case records its history (`--history`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub history: Vec<HistoryOp>,
}

impl IntervalBatch {
    /// A client's last batch of holds the driver recovered rather than heard from it (a killed
    /// worker's, taken from the resource's record; a remote worker's, whose clock is its own); with
    /// `history`, each hold's acquire and end are its history, its reads and writes unknown.
    pub(crate) fn recovered(client: u32, intervals: Vec<Interval>, history: bool) -> Self {
        let history = if history {
            intervals
                .iter()
                .flat_map(|i| HistoryOp::of_interval(client, i))
                .collect()
        } else {
            Vec::new()
        };
        IntervalBatch {
            client,
            intervals,
            low_bound: u64::MAX,
            history,
        }
    }
}

/// What a client did to the lock or the protected resource, as one entry of a case's history.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum HistoryKind {
    /// The lock was granted (a failed acquire is not recorded).
    Acquire,
    /// The client read the resource's counter (`value`, the answer).
    Read,
    /// The client wrote the counter (`value`); `accepted` is the resource's answer.
    Write,
    /// The client's belief in the lock ended: it called release or noticed the loss.
    Release,
}

/// One operation of a case's history, as invoked and completed on the run's monotonic clock: the
/// format `lockbench run --history` writes, one JSON object a line, for checkers outside lockbench
/// (docs/design.md, "The history").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct HistoryOp {
    /// The client index.
    pub client: u32,
    /// The key index.
    pub key: u32,
    /// What it did.
    pub op: HistoryKind,
    /// When the call started, ns.
    pub invoke_ns: u64,
    /// When it returned, ns.
    pub complete_ns: u64,
    /// The lease's fencing token (strategies with fencing only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token: Option<u64>,
    /// The value read, or written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<u64>,
    /// Whether the resource accepted the write.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub accepted: Option<bool>,
}

impl HistoryOp {
    /// An operation on the lock (no value).
    pub(crate) fn lock(
        client: u32,
        key: u32,
        op: HistoryKind,
        invoke_ns: u64,
        complete_ns: u64,
    ) -> Self {
        HistoryOp {
            client,
            key,
            op,
            invoke_ns,
            complete_ns,
            token: None,
            value: None,
            accepted: None,
        }
    }

    /// The acquire and the end of `interval`, for a hold known only by its interval (a killed
    /// worker's holds recovered from the resource, a remote worker's as the resource heard them).
    pub(crate) fn of_interval(client: u32, interval: &Interval) -> [Self; 2] {
        [
            HistoryOp::lock(
                client,
                interval.key,
                HistoryKind::Acquire,
                interval.acquire_started,
                interval.start,
            ),
            HistoryOp::lock(
                client,
                interval.key,
                HistoryKind::Release,
                interval.end,
                interval.end,
            ),
        ]
    }
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
