//! The protected resource every critical section touches: one counter per key and the highest fencing
//! token written per key (docs/design.md §5, safety measures 2 and 3).
//!
//! A critical section reads the counter (announcing its lease's token), works, and writes the value it
//! read plus one with its token. The resource rejects a write whose token is lower than the highest
//! written one (fencing), and counts, for the oracle:
//!
//! - accepted writes and the final counters: their difference is the number of lost updates;
//! - *stale* writes: writes arriving after a lease with a higher token was granted on the key and its
//!   holder read the counter (the writer had been superseded). Rejected ones are what fencing saved;
//!   accepted ones slipped through because the newer holder had not written yet, or because the token
//!   did not increase (`duplicate_tokens`: equal to the highest written, from another lease);
//! - *token regressions*: reads announcing a token lower than one announced before on the key by a lease
//!   acquired earlier (a later lease got a smaller token: the tokens went backwards, as after a
//!   failover that lost increments); a holder that acquired earlier and reads late is not one.
//!
//! Strategies without fencing tokens send none; their writes are all accepted and stale writes are not
//! counted (the overlap and lost-update measures still apply).
//!
//! With worker processes, the lockbench process serves the resource over a Unix socket
//! ([`super::resource_socket`]), and each worker also tells it, before touching the protected data,
//! that a hold began, and, before releasing, that it ended: the resource's [`HoldLog`] then knows every
//! hold of a worker that is SIGKILLed — those it had not yet reported to the oracle, and the one it
//! held when it died, which is closed at the kill — so no interval is lost or invented.

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::base::clock::MonoClock;
use crate::base::holds::{EndedBy, Interval};
use crate::base::stop::StopSignal;

/// The resource's verdict on a write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WriteVerdict {
    /// Written.
    Accepted,
    /// Refused: a higher token was written before.
    Rejected,
}

#[derive(Debug, Default)]
struct Cell {
    counter: u64,
    accepted: u64,
    /// Highest token written and the lease that wrote it.
    written: Option<(u64, u64)>,
    /// Highest token announced by a read, and when its lease was acquired.
    granted: u64,
    granted_acquired_at: u64,
    token_regressions: u64,
    stale_rejected: u64,
    stale_accepted: u64,
    duplicate_tokens: u64,
}

/// The resource's totals at the end of a case.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct ResourceTotals {
    /// Accepted writes.
    pub completed_writes: u64,
    /// Accepted writes in the measured window (the warm-up's excluded).
    pub measured_writes: u64,
    /// Sum of the counters.
    pub final_counter_sum: u64,
    /// Stale writes rejected.
    pub stale_rejected: u64,
    /// Stale writes accepted (duplicates included).
    pub stale_accepted: u64,
    /// Accepted writes with a token equal to the highest written, from another lease.
    pub duplicate_tokens: u64,
    /// Reads announcing a token below the highest announced before (tokens went backwards).
    pub token_regressions: u64,
}

/// Holds at most this many ended holds per client (far more than a worker reports between two
/// interval batches).
const HOLD_LOG_PER_CLIENT: usize = 4096;

/// The holds each worker announced, as the resource heard of them.
#[derive(Debug, Default)]
pub(crate) struct HoldLog {
    clients: Mutex<HashMap<u32, ClientHolds>>,
    /// Keep every ended hold (remote workers: the log is the oracle's only record), not only the
    /// last [`HOLD_LOG_PER_CLIENT`].
    keep_all: std::sync::atomic::AtomicBool,
}

#[derive(Debug, Default)]
struct ClientHolds {
    open: Option<Interval>,
    ended: VecDeque<Interval>,
}

impl HoldLog {
    fn clients(&self) -> std::sync::MutexGuard<'_, HashMap<u32, ClientHolds>> {
        self.clients.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// `client` acquired `key`: its acquire call started at `acquire_started`, returned at `start`.
    pub(crate) fn began(&self, client: u32, key: u32, acquire_started: u64, start: u64) {
        let mut clients = self.clients();
        let holds = clients.entry(client).or_default();
        holds.open = Some(Interval {
            key,
            acquire_started,
            start,
            end: start,
            ended_by: EndedBy::Stopped,
        });
    }

    /// `client`'s hold of `key` ended at `end`.
    pub(crate) fn ended(&self, client: u32, key: u32, end: u64, ended_by: EndedBy) {
        let mut clients = self.clients();
        let holds = clients.entry(client).or_default();
        if let Some(mut open) = holds.open.take_if(|o| o.key == key) {
            open.end = end.max(open.start);
            open.ended_by = ended_by;
            if holds.ended.len() >= HOLD_LOG_PER_CLIENT && !self.keep_all.load(Ordering::Relaxed) {
                holds.ended.pop_front();
            }
            holds.ended.push_back(open);
        }
    }

    /// Keeps every hold from now on (see [`HoldLog::all`]).
    pub(crate) fn keep_all(&self) {
        self.keep_all.store(true, Ordering::Relaxed);
    }

    /// Every hold of `client` (with [`HoldLog::keep_all`]), the one still open closed at `now`.
    pub(crate) fn all(&self, client: u32, now: u64) -> Vec<Interval> {
        self.of_killed(client, 0, now)
    }

    /// The holds of a client killed at `killed_at` that began at or after `since` (the low bound of
    /// the last batch it reported): the ended ones, and the one open at its death, closed then.
    pub(crate) fn of_killed(&self, client: u32, since: u64, killed_at: u64) -> Vec<Interval> {
        let clients = self.clients();
        let Some(holds) = clients.get(&client) else {
            return Vec::new();
        };
        let mut out: Vec<Interval> = holds
            .ended
            .iter()
            .filter(|i| i.start >= since)
            .copied()
            .collect();
        if let Some(open) = holds.open.filter(|o| o.start >= since) {
            out.push(Interval {
                end: killed_at.max(open.start),
                ..open
            });
        }
        out
    }
}

/// The protected resource of one case.
#[derive(Debug)]
pub(crate) struct Resource {
    /// The holds worker processes announced (see [`HoldLog`]).
    pub holds: HoldLog,
    cells: Vec<Mutex<Cell>>,
    clock: MonoClock,
    measure_from: AtomicU64,
    measured_writes: AtomicU64,
    target: Option<u64>,
    stop: StopSignal,
}

impl Resource {
    /// A resource for `keys` keys. When `target` is set, `stop` is set once that many writes were
    /// accepted in the measured window.
    pub(crate) fn new(keys: u32, clock: MonoClock, target: Option<u64>, stop: StopSignal) -> Self {
        Resource {
            holds: HoldLog::default(),
            cells: (0..keys).map(|_| Mutex::default()).collect(),
            clock,
            measure_from: AtomicU64::new(u64::MAX),
            measured_writes: AtomicU64::new(0),
            target,
            stop,
        }
    }

    /// Now on the resource's clock.
    pub(crate) fn now(&self) -> u64 {
        self.clock.now()
    }

    /// Starts counting writes toward the target from `ns` on.
    pub(crate) fn measure_from(&self, ns: u64) {
        self.measure_from.store(ns, Ordering::Release);
    }

    fn cell(&self, key: u32) -> Option<std::sync::MutexGuard<'_, Cell>> {
        let cell = self.cells.get(usize::try_from(key).ok()?)?;
        Some(cell.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// Reads `key`'s counter, announcing the reader's token, for a lease acquired in an unknown
    /// order (every lower token after a higher one counts as a regression). Unknown keys read 0.
    #[cfg(test)]
    pub(crate) fn read(&self, key: u32, token: Option<u64>) -> u64 {
        self.read_acquired(key, token, u64::MAX)
    }

    /// Reads `key`'s counter, announcing the reader's token and when its lease was acquired
    /// (`acquired_at`, ns). A *token regression* is a lease acquired after the lease with the
    /// highest token announced so far, yet with a lower token: the tokens went backwards. A lower
    /// token from a lease acquired earlier is only a late reader (e.g. a holder paused before its
    /// read), which fencing handles; it is not counted.
    pub(crate) fn read_acquired(&self, key: u32, token: Option<u64>, acquired_at: u64) -> u64 {
        let Some(mut cell) = self.cell(key) else {
            return 0;
        };
        if let Some(token) = token {
            if token < cell.granted && acquired_at >= cell.granted_acquired_at {
                cell.token_regressions += 1;
            }
            if token >= cell.granted {
                cell.granted = token;
                cell.granted_acquired_at = acquired_at;
            }
        }
        cell.counter
    }

    /// Writes `value` to `key` for lease `lease` with `token` (see the module docs for the rule).
    pub(crate) fn write(
        &self,
        key: u32,
        value: u64,
        token: Option<u64>,
        lease: u64,
    ) -> WriteVerdict {
        let Some(mut cell) = self.cell(key) else {
            return WriteVerdict::Rejected;
        };
        if let Some(token) = token {
            let superseded = token < cell.granted;
            let mut duplicate = false;
            if let Some((written, writer)) = cell.written {
                if token < written {
                    cell.stale_rejected += 1;
                    return WriteVerdict::Rejected;
                }
                duplicate = token == written && writer != lease;
            }
            if duplicate {
                cell.duplicate_tokens += 1;
            }
            if duplicate || superseded {
                cell.stale_accepted += 1;
            }
            if cell.written.is_none_or(|(written, _)| token >= written) {
                cell.written = Some((token, lease));
            }
        }
        cell.counter = value;
        cell.accepted += 1;
        drop(cell);
        if self.clock.now() >= self.measure_from.load(Ordering::Acquire) {
            let done = self.measured_writes.fetch_add(1, Ordering::AcqRel) + 1;
            if self.target.is_some_and(|t| done >= t) {
                self.stop.set();
            }
        }
        WriteVerdict::Accepted
    }

    /// Accepted writes in the measured window so far (for progress).
    pub(crate) fn measured_writes(&self) -> u64 {
        self.measured_writes.load(Ordering::Acquire)
    }

    /// The totals over every key.
    pub(crate) fn totals(&self) -> ResourceTotals {
        let mut totals = ResourceTotals::default();
        for cell in &self.cells {
            let cell = cell.lock().unwrap_or_else(|e| e.into_inner());
            totals.completed_writes += cell.accepted;
            totals.final_counter_sum += cell.counter;
            totals.stale_rejected += cell.stale_rejected;
            totals.stale_accepted += cell.stale_accepted;
            totals.duplicate_tokens += cell.duplicate_tokens;
            totals.token_regressions += cell.token_regressions;
        }
        totals.measured_writes = self.measured_writes();
        totals
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_late_reader_is_not_a_token_regression_but_a_later_lease_with_a_smaller_token_is() {
        let r = resource();
        // A acquired at 10 with token 5 and was paused before reading; B acquired at 20 with 6.
        r.read_acquired(0, Some(6), 20);
        r.read_acquired(0, Some(5), 10);
        assert_eq!(r.totals().token_regressions, 0, "A is late, not backwards");
        // C acquired at 30 after B, yet got token 4.
        r.read_acquired(0, Some(4), 30);
        assert_eq!(r.totals().token_regressions, 1);
    }

    fn resource() -> Resource {
        Resource::new(2, MonoClock::new(), None, StopSignal::new())
    }

    #[test]
    fn serial_holders_lose_nothing() {
        let r = resource();
        for token in 1..=5 {
            let v = r.read(0, Some(token));
            assert_eq!(
                r.write(0, v + 1, Some(token), token),
                WriteVerdict::Accepted
            );
        }
        let t = r.totals();
        assert_eq!((t.completed_writes, t.final_counter_sum), (5, 5));
        assert_eq!(
            (t.stale_rejected, t.stale_accepted, t.duplicate_tokens),
            (0, 0, 0)
        );
    }

    #[test]
    fn a_superseded_writer_is_stale_accepted_until_the_newer_holder_writes() {
        let r = resource();
        let a = r.read(0, Some(1)); // A holds token 1 ...
        let b = r.read(0, Some(2)); // ... its lease expires, B gets token 2 and reads the same value.
        assert_eq!(r.write(0, a + 1, Some(1), 10), WriteVerdict::Accepted); // stale, accepted
        assert_eq!(r.write(0, b + 1, Some(2), 20), WriteVerdict::Accepted);
        let t = r.totals();
        assert_eq!(
            t.completed_writes - t.final_counter_sum,
            1,
            "one lost update"
        );
        assert_eq!((t.stale_accepted, t.stale_rejected), (1, 0));
        assert_eq!(t.token_regressions, 0);
    }

    #[test]
    fn a_smaller_token_after_a_larger_one_is_a_regression() {
        let r = resource();
        r.read(0, Some(5));
        r.read(0, Some(3)); // e.g. the counter's last increments were lost in a failover
        r.read(0, Some(6));
        r.read(1, Some(1));
        assert_eq!(r.totals().token_regressions, 1);
    }

    #[test]
    fn fencing_rejects_a_write_behind_a_newer_one() {
        let r = resource();
        let a = r.read(1, Some(1));
        let b = r.read(1, Some(2));
        assert_eq!(r.write(1, b + 1, Some(2), 20), WriteVerdict::Accepted);
        assert_eq!(r.write(1, a + 1, Some(1), 10), WriteVerdict::Rejected);
        let t = r.totals();
        assert_eq!((t.completed_writes, t.final_counter_sum), (1, 1));
        assert_eq!((t.stale_rejected, t.stale_accepted), (1, 0));
    }

    #[test]
    fn equal_tokens_from_two_leases_are_duplicates() {
        let r = resource();
        let a = r.read(0, Some(7));
        assert_eq!(r.write(0, a + 1, Some(7), 1), WriteVerdict::Accepted);
        let b = r.read(0, Some(7));
        assert_eq!(r.write(0, b + 1, Some(7), 2), WriteVerdict::Accepted);
        assert_eq!(
            r.write(0, b + 2, Some(7), 2),
            WriteVerdict::Accepted,
            "same lease again"
        );
        let t = r.totals();
        assert_eq!((t.duplicate_tokens, t.stale_accepted), (1, 1));
    }

    #[test]
    fn without_tokens_every_write_is_accepted() {
        let r = resource();
        let a = r.read(0, None);
        let b = r.read(0, None);
        r.write(0, b + 1, None, 2);
        assert_eq!(r.write(0, a + 1, None, 1), WriteVerdict::Accepted);
        let t = r.totals();
        assert_eq!(
            (t.completed_writes, t.final_counter_sum, t.stale_accepted),
            (2, 1, 0)
        );
    }

    #[test]
    fn the_target_sets_stop() {
        let stop = StopSignal::new();
        let r = Resource::new(1, MonoClock::new(), Some(3), stop.clone());
        r.write(0, 1, None, 1);
        assert_eq!(r.measured_writes(), 0, "not measuring yet");
        r.measure_from(0);
        r.write(0, 2, None, 1);
        r.write(0, 3, None, 1);
        assert!(!stop.is_set());
        r.write(0, 4, None, 1);
        assert!(stop.is_set());
    }
}
