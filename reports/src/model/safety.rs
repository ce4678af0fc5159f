//! The safety oracle's findings: the verdict, the violations, overlaps, lost updates and fencing.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::measures::Summary;

// Named in doc links only.
#[cfg(doc)]
use super::FaultWindow;

/// `safe`, `violated` or `unknown`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// None of the [`Violation`]s was found.
    Safe,
    /// At least one [`Violation`] was found ([`Safety::reasons`] names which).
    Violated,
    /// No verdict: the case did not run (skipped or failed before its workers started), or it ran
    /// but gives nothing to judge ([`Safety::no_verdict`] says why).
    Unknown,
}

/// Why a case that ran has no verdict; its `error` (or `fault_not_applied`) has the one-line detail.
/// None of these is safe: each says the experiment did not happen as described. None of them stands
/// against a violation the case saw: that makes it violated, and the reason becomes its `error`.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum NoVerdict {
    /// No acquire succeeded, and nothing broke.
    HeldNoLock,
    /// Locks were held but no critical section ran to its end (no write landed, no holder gave up on
    /// a noticed loss), and nothing broke.
    NoCompletedSection,
    /// No key was ever wanted by two clients at once, so nobody could have overlapped anyone.
    NoContention,
    /// A fault the case injects did not take effect ([`FaultWindow::applied`]).
    FaultNotApplied,
    /// A fault's window ended before its planned end ([`FaultWindow::cut_short`]).
    FaultCutShort,
    /// A worker process exited outside a fault (a signal or an exit code nobody asked for).
    WorkerDied,
    /// The case stopped before its measured window began (interrupted during the warm-up, or a
    /// window of 0 ms): only the warm-up ran.
    NothingMeasured,
}

impl NoVerdict {
    /// The reasons in the order a case is checked for them (the first that holds is its reason).
    pub const ALL: [NoVerdict; 7] = [
        NoVerdict::WorkerDied,
        NoVerdict::FaultCutShort,
        NoVerdict::FaultNotApplied,
        NoVerdict::NothingMeasured,
        NoVerdict::HeldNoLock,
        NoVerdict::NoCompletedSection,
        NoVerdict::NoContention,
    ];

    /// The cell text (`no contention`).
    pub fn words(self) -> &'static str {
        match self {
            NoVerdict::HeldNoLock => "held no lock",
            NoVerdict::NoCompletedSection => "no critical section completed",
            NoVerdict::NoContention => "no contention",
            NoVerdict::FaultNotApplied => "fault not applied",
            NoVerdict::FaultCutShort => "fault cut short",
            NoVerdict::WorkerDied => "worker died",
            NoVerdict::NothingMeasured => "nothing measured",
        }
    }

    /// What it means, for a report's legend.
    pub fn meaning(self) -> &'static str {
        match self {
            NoVerdict::HeldNoLock => "no acquire succeeded, so no evidence either way",
            NoVerdict::NoCompletedSection => {
                "locks were held but no critical section ran to its end (a write, or giving up on a noticed loss), so there is nothing to judge"
            }
            NoVerdict::NoContention => {
                "one client per key: no key was wanted by two clients at once, so nobody could overlap anyone"
            }
            NoVerdict::FaultNotApplied => "the fault did not take effect",
            NoVerdict::FaultCutShort => {
                "the fault's window ended before its planned end (the case stopped first)"
            }
            NoVerdict::WorkerDied => {
                "a worker process exited outside any fault; what it reported before is kept, but the trial is not judged safe"
            }
            NoVerdict::NothingMeasured => {
                "the case stopped before its measured window began, so only its warm-up ran"
            }
        }
    }
}

/// One way a case can fail to be a lock; any of them makes the case violated.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Violation {
    /// Believed-held intervals of different holders on one key intersected ([`Overlap`]).
    Overlap,
    /// Writes to the protected counters were lost ([`LostUpdates`]).
    LostUpdates,
    /// The resource accepted writes from superseded holders ([`Fencing::stale_accepted`]).
    StaleWritesAccepted,
    /// A later lease got a smaller token than an earlier one ([`Fencing::token_regressions`]): the
    /// legitimate holder's writes are rejected, so fencing cannot be trusted.
    TokenRegressions,
    /// Two leases carried the same token ([`Fencing::duplicate_tokens`]).
    DuplicateTokens,
}

impl Violation {
    /// The name used in results and reports (`token_regressions`).
    pub fn name(self) -> &'static str {
        match self {
            Violation::Overlap => "overlap",
            Violation::LostUpdates => "lost_updates",
            Violation::StaleWritesAccepted => "stale_writes_accepted",
            Violation::TokenRegressions => "token_regressions",
            Violation::DuplicateTokens => "duplicate_tokens",
        }
    }

    /// A few words for people (`tokens went backwards`).
    pub fn words(self) -> &'static str {
        match self {
            Violation::Overlap => "overlapping holders",
            Violation::LostUpdates => "lost updates",
            Violation::StaleWritesAccepted => "stale writes accepted",
            Violation::TokenRegressions => "tokens went backwards",
            Violation::DuplicateTokens => "duplicate tokens",
        }
    }
}

/// The safety oracle's findings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Safety {
    /// Violated if any measure found something (see `reasons`).
    pub verdict: Verdict,
    /// What made the case violated, in [`Violation`] order; empty when safe (and in files written
    /// before reasons were recorded).
    #[serde(default)]
    pub reasons: Vec<Violation>,
    /// Measure 1: overlapping believed-held intervals.
    pub overlap: Overlap,
    /// Measure 2: lost updates of the protected counters.
    pub lost_updates: LostUpdates,
    /// Measure 3: fencing at the protected resource.
    pub fencing: Fencing,
    /// How often `lost()` came too late.
    pub lost_signal: LostSignal,
    /// Whether the protected data came through, beside the verdict (which also counts a broken
    /// promise, overlapping holders, that fencing may have made harmless): `intact` when no update
    /// was lost and no stale write accepted, else `harmed`. Null when there is no verdict; missing in
    /// older files ([`Safety::data_state`] reads it off their counts).
    #[serde(default)]
    pub data: Option<DataState>,
    /// Why a case that ran has no verdict (`verdict` unknown); null when it has one, when it did not
    /// run, and in older files.
    #[serde(default)]
    pub no_verdict: Option<NoVerdict>,
}

impl Safety {
    /// `data`, or for files written before it was recorded, what their counts say; `None` when the
    /// case has no verdict.
    pub fn data_state(&self) -> Option<DataState> {
        if self.verdict == Verdict::Unknown {
            return None;
        }
        self.data.or_else(|| {
            Some(DataState::of(
                self.lost_updates.lost,
                self.fencing.stale_accepted,
            ))
        })
    }

    /// Whether fencing tokens protected the data: it is intact, the strategy has fencing, the
    /// resource rejected stale writes and no token went backwards (then a refused write may have been
    /// the rightful holder's).
    pub fn fenced(&self) -> bool {
        self.data_state() == Some(DataState::Intact)
            && self.fencing.enforced
            && self.fencing.stale_rejected.unwrap_or(0) > 0
            && self.fencing.token_regressions.unwrap_or(0) == 0
    }
}

/// What became of the protected data in a case.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum DataState {
    /// No update was lost and no stale write was accepted.
    Intact,
    /// Updates were lost, or the resource accepted stale writes.
    Harmed,
}

impl DataState {
    /// From `lost` updates and `stale_accepted` writes (None: no fencing, so none counted).
    pub fn of(lost: u64, stale_accepted: Option<u64>) -> Self {
        if lost > 0 || stale_accepted.unwrap_or(0) > 0 {
            DataState::Harmed
        } else {
            DataState::Intact
        }
    }

    /// `data intact`, `data harmed`.
    pub fn words(self) -> &'static str {
        match self {
            DataState::Intact => "data intact",
            DataState::Harmed => "data harmed",
        }
    }
}

/// Measure 1. A holder believes it holds a key from the acquire returning until it calls release or
/// notices a loss; two such intervals of different holders on one key that intersect are a violation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Overlap {
    /// Intersecting pairs of intervals.
    pub pairs: u64,
    /// Sum of the pairs' intersection lengths.
    pub total_ms: f64,
    /// Longest intersection.
    pub max_ms: f64,
    /// Keys with at least one pair.
    pub keys: u64,
    /// Pairs whose earlier holder never noticed a loss (it released normally, or ignored `lost()`).
    pub unnoticed_pairs: u64,
    /// The first pairs found (at most 20), for timelines.
    pub examples: Vec<OverlapExample>,
}

/// One overlapping pair. Times are relative to the start of the case.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct OverlapExample {
    /// Key index.
    pub key: u32,
    /// The holder that acquired first.
    pub first: HeldInterval,
    /// The holder that acquired while the first still believed it held the key.
    pub second: HeldInterval,
}

/// A stretch of consecutive believed-held intervals on one key (every interval on the key whose start
/// falls between the first and the last sampled start, in start order), for the holder timeline.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct HolderSample {
    /// Key index.
    pub key: u32,
    /// Where the stretch was taken: `first_overlap` (around the first overlapping pair found on the
    /// first keys) or `start` (the first intervals of key 0, when nothing overlapped there).
    #[schemars(extend("enum" = ["first_overlap", "start"]))]
    pub anchor: String,
    /// The intervals, in start order (at most a hundred or so).
    pub intervals: Vec<HeldInterval>,
}

/// One believed-held interval.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct HeldInterval {
    /// Client index.
    pub client: u32,
    /// Acquire returned.
    pub start_ms: f64,
    /// Release called or loss noticed.
    pub end_ms: f64,
    /// How it ended: `released`, `lost` (noticed `lost()`), `stopped` (end of case) or `orphaned`
    /// (the task ended without releasing or dropping its lease).
    #[schemars(extend("enum" = ["released", "lost", "stopped", "orphaned"]))]
    pub ended_by: String,
}

/// Measure 2 (Jepsen's lock-set idea): each critical section reads a counter, works, writes counter+1.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct LostUpdates {
    /// Writes the resource accepted (whole case).
    pub completed_writes: u64,
    /// Sum of the final counters.
    pub final_counter_sum: u64,
    /// `completed_writes - final_counter_sum`: updates overwritten by a holder that read before them.
    pub lost: u64,
}

/// Measure 3: the resource keeps the highest token written per key and rejects lower ones.
///
/// A write is *stale* when, as it reaches the resource, a lease with a higher token has already been
/// granted on the key and its holder has read the counter (the writer was superseded).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Fencing {
    /// Whether the strategy has fencing tokens (the resource checks them only then).
    pub enforced: bool,
    /// Stale writes rejected: fencing saved the data. Null when not enforced.
    pub stale_rejected: Option<u64>,
    /// Stale writes accepted: the newer holder had not written yet, so the resource could not tell
    /// (plus `duplicate_tokens`). Null when not enforced.
    pub stale_accepted: Option<u64>,
    /// Writes accepted with a token equal to the highest written one but from another lease: tokens
    /// that failed to increase (e.g. after a failover). Counted in `stale_accepted` too.
    pub duplicate_tokens: Option<u64>,
    /// Reads announcing a token lower than one already announced on the key: a later lease got a
    /// smaller token (tokens went backwards, e.g. after a failover lost the counter's last
    /// increments). Null when not enforced or in files written before this was measured.
    #[serde(default)]
    pub token_regressions: Option<u64>,
}

/// How timely `lost()` was. A loss signal is *too late* when another holder had already acquired the
/// key before the holder noticed `lost()` (its interval overlaps a later holder's).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct LostSignal {
    /// Critical sections that ended because the holder noticed `lost()` (whole case).
    pub fired: u64,
    /// Of those, how many came after another holder had acquired the key.
    pub too_late: u64,
    /// For late signals: notice time minus the other holder's acquire (a lower bound of the
    /// loss-detection latency).
    pub lateness: Summary,
}
