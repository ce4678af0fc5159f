//! Hold events: a worker says the moment it acquires a key and the moment its hold ends, so a fault can
//! aim at a client that holds a lock right now and measure how long the lock stayed unavailable. Sent
//! only when a case injects faults (one channel send per acquire and per release).

use serde::{Deserialize, Serialize};
use tokio::sync::mpsc;

use super::oracle::EndedBy;

/// What happened to a hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HoldChange {
    /// The acquire returned: the client holds the key.
    Acquired,
    /// The belief ended (released, loss noticed, or end of case).
    Ended(EndedBy),
}

/// One change, with the client's monotonic time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct HoldEvent {
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
pub type HoldSink = mpsc::UnboundedSender<HoldEvent>;
