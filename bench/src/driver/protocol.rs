//! What the driver and a worker process (`lockbench worker`) say to each other, one JSON object per
//! line: the driver writes a [`WorkerJob`] (a remote worker's TCP connection: a [`ChildSpec`]), then
//! [`ToChild`] messages, on the worker's stdin; the worker answers with [`FromChild`] messages on its
//! stdout (the same connection). A remote worker first sends [`Hello`] with the run's token and reads
//! `ok`.

use lockbench_reports::model::Capabilities;
use serde::{Deserialize, Serialize};

use lockbench_reports::scale::ScaleSeries;

use super::many_locks::job::HoldManyJob;
use super::resource_socket::ResourceAddress;
use super::tally::WorkerTally;
use super::worker::CasePlan;
use crate::backends::EndpointAddrs;
use crate::base::holds::HoldEvent;
use crate::base::holds::IntervalBatch;
use crate::faults::workers::{LibraryStarve, WorkerCommand};

/// The first line a worker process reads: what to run.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum WorkerJob {
    /// One client of a case.
    Case(Box<ChildSpec>),
    /// One client holding many locks ([`super::many_locks`]).
    HoldMany(Box<HoldManyJob>),
}

/// What one client of a case runs (a remote worker's first line).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct ChildSpec {
    /// The case.
    pub plan: CasePlan,
    /// This worker's client index.
    pub client: u32,
    /// Where the protected resource is.
    pub resource: ResourceAddress,
    /// The driver's clock when it sent this spec (remote workers, which share no clock with it:
    /// the worker takes the difference to its own clock as the offset of every driver time).
    #[serde(default)]
    pub driver_now_ns: Option<u64>,
    /// Server addresses (this client's: a fault may put a proxy in front of the server).
    pub endpoints: EndpointAddrs,
    /// Send a [`FromChild::Hold`] for every acquire and end of hold (cases with faults).
    #[serde(default)]
    pub report_holds: bool,
}

/// Driver → worker.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum ToChild {
    /// Start now; times are machine-wide monotonic nanoseconds.
    Go {
        /// The case start.
        go_ns: u64,
        /// Start of the measured window.
        measure_from_ns: u64,
        /// When to stop by itself (None: wait for `Stop`).
        stop_at_ns: Option<u64>,
    },
    /// Stop now.
    Stop,
    /// A fault's command (CPU starvation, a CPU hog).
    Fault(WorkerCommand),
}

/// Worker → driver.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum FromChild {
    /// Connected and ready; what the live client declares.
    Ready {
        /// The client's capabilities.
        capabilities: Capabilities,
        /// Its protocol round trip in ns, for peers ([`lockers::Locker::protocol_round_trip`]).
        #[serde(default)]
        protocol_round_trip_ns: Option<u64>,
        /// The library and version its process loaded, for peers ([`lockers::Locker::loaded_library`]).
        #[serde(default)]
        library: Option<(String, String)>,
        /// The pid of the adapter process its peer client runs in ([`lockers::Locker::adapter_process`]):
        /// each worker starts its own, so each client has a process of its own.
        #[serde(default)]
        adapter_pid: Option<u32>,
    },
    /// Believed-held intervals for the oracle.
    Intervals(IntervalBatch),
    /// An acquire or the end of a hold, at once (cases with faults).
    Hold(HoldEvent),
    /// What the adapter of a peer worker held of its library's threads when the worker was told to
    /// starve (sent before it starves its own runtime).
    LibraryStarved(LibraryStarve),
    /// The final figures; the worker exits after it.
    Report(Box<WorkerTally>),
    /// A hold-many job's series; the worker exits after it.
    Series(Box<ScaleSeries>),
    /// Something failed; one line.
    Error {
        /// What.
        message: String,
    },
}

/// A remote worker's first line.
#[derive(Clone, Serialize, Deserialize)]
pub(crate) struct Hello {
    /// The run's worker token.
    pub token: String,
}

impl std::fmt::Debug for Hello {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Hello").finish_non_exhaustive()
    }
}
