//! The overlap oracle (safety measure 1) and the hand-off latency, computed from believed-held
//! intervals as workers report them, with bounded memory.
//!
//! Each worker reports its intervals in batches, in its own order, with a *low bound*: no interval it
//! reports later starts before that time. The minimum of those bounds is a watermark; per key, the
//! intervals that start before the watermark are swept in start order against the intervals still
//! active (ending after the swept start). Each intersecting pair of different clients is counted once,
//! exactly, whatever order batches arrive in. Memory holds only the intervals newer than the
//! watermark.
//!
//! Definitions:
//! - *overlap*: two intervals of different clients on one key that intersect; the pair's overlap time
//!   is the length of the intersection.
//! - *too-late loss signal*: an interval that ended because its holder noticed `lost()`, after another
//!   holder's interval on the key had already started. Its *lateness* is the notice time minus that
//!   start (the earliest one).
//! - *orphan wait*: for an interval that ended orphaned (its task ended without release or drop),
//!   the time from its end until another client's interval on the key starts; `None` when none
//!   started before the case ended.
//! - *hand-off*: for an interval whose acquire call started before the key's previous interval ended
//!   (it was waiting) and that starts after every earlier interval ended: its start minus that end.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use lockbench_reports::model::{HolderSample, OverlapExample};

use super::availability::{Grants, longest_blocked};
use super::histogram::{Hist, new_hist, record};
use super::holder_sample::{HolderSampler, held};
use crate::base::holds::{BatchQueue, COLLECT_EVERY, EndedBy, HistoryOp, Interval, IntervalBatch};
use lockbench_reports::model::{Availability, Gap};

/// An interval waiting for the watermark, ordered by (start, arrival).
#[derive(Debug, Clone, Copy)]
struct Pending {
    start: u64,
    seq: u64,
    client: u32,
    interval: Interval,
}

impl PartialEq for Pending {
    fn eq(&self, other: &Self) -> bool {
        (self.start, self.seq) == (other.start, other.seq)
    }
}

impl Eq for Pending {}

impl PartialOrd for Pending {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Pending {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        (self.start, self.seq).cmp(&(other.start, other.seq))
    }
}

#[derive(Debug)]
struct Active {
    client: u32,
    interval: Interval,
    counted_late: bool,
}

#[derive(Debug, Default)]
struct KeyState {
    pending: BinaryHeap<Reverse<Pending>>,
    active: Vec<Active>,
    max_end: u64,
    /// The client whose interval ends at `max_end`.
    max_end_client: u32,
    /// The end of the key's orphaned interval no other client has acquired after yet.
    orphaned_at: Option<u64>,
    /// The union of the key's swept intervals, as disjoint spans in time order.
    held: Vec<(u64, u64)>,
    overlapped: bool,
    queued: bool,
}

/// What the oracle found.
#[derive(Debug)]
pub(crate) struct OracleFindings {
    /// Intersecting pairs.
    pub pairs: u64,
    /// Sum of intersections, ns.
    pub total_ns: u64,
    /// Longest intersection, ns.
    pub max_ns: u64,
    /// Keys with a pair.
    pub keys: u64,
    /// Pairs whose earlier interval did not end by a noticed loss.
    pub unnoticed_pairs: u64,
    /// Intervals that ended by a noticed loss.
    pub lost_fired: u64,
    /// Of those, how many after another holder had started.
    pub lost_too_late: u64,
    /// Lateness of late loss signals, ns.
    pub lateness: Hist,
    /// Hand-off latency, ns (intervals starting in the measured window).
    pub handoff: Hist,
    /// The first pairs (times relative to the case start).
    pub examples: Vec<OverlapExample>,
    /// A stretch of one key's intervals for the holder timeline.
    pub holder_sample: Option<HolderSample>,
    /// Per orphaned interval: its end (after the start of the measured window), and how long after it
    /// another client acquired the key (`None`: nobody did before the case ended), ns.
    pub orphan_waits: Vec<(u64, Option<u64>)>,
    /// Every grant by time, with how long its acquire waited.
    pub grants: Grants,
    /// Whether any key was wanted by two clients at once: an acquire started while another client
    /// held the key (it waited, or overlapped). Without it nobody could have overlapped anyone.
    pub contended: bool,
    /// Per key, the times some client held it: the union of its intervals as disjoint (start, end)
    /// spans in time order, ns (see [`Self::waited`]).
    pub held: Vec<Vec<(u64, u64)>>,
    /// Every operation the workers recorded (cases that record their history), in arrival order.
    pub history: Vec<HistoryOp>,
    /// Every granted acquire's wait: (key, called, granted), monotonic ns.
    pub waits: Vec<(u32, u64, u64)>,
    /// The case start, monotonic ns.
    pub case_start: u64,
}

impl OracleFindings {
    /// Whether an acquire of `key` that got no lock, called at `called` and given up (an error, or the
    /// end of the case) at `returned`, waited while another client held the key: some interval on it
    /// overlapped the call. The caller held no lock of its own meanwhile (a client holds one at a
    /// time), so any such interval is another client's.
    pub(crate) fn waited(&self, key: u32, called: u64, returned: u64) -> bool {
        let Some(spans) = self.held.get(key as usize) else {
            return false;
        };
        // Spans are disjoint and in order, so their ends rise: the first ending after the call is
        // the only one that can overlap it first.
        let first = spans.partition_point(|&(_, end)| end <= called);
        spans.get(first).is_some_and(|&(start, _)| start < returned)
    }
}

impl OracleFindings {
    /// The case's availability over its measured window (`warmup_ns` to `warmup_ns + measured_ns`
    /// from the case start): grants by time, and the longest stretch in which a client,
    /// granted or not (`cut`: the acquires that got no lock, `(key, called, returned)`), waited for a
    /// key nobody held.
    pub(crate) fn availability(
        &self,
        cut: &[(u32, u64, u64)],
        warmup_ns: u64,
        measured_ns: u64,
    ) -> Availability {
        let case_start = self.case_start;
        let mut availability = self.grants.finish(warmup_ns, warmup_ns + measured_ns);
        let from = case_start + warmup_ns;
        let waits = self.waits.iter().chain(cut).copied();
        let ms = |ns: u64| ns.saturating_sub(case_start) as f64 / 1e6;
        // Nobody ever waited for a free key: a stretch of zero length (measured, not missing).
        let (start, end) =
            longest_blocked(waits, &self.held, from, from + measured_ns).unwrap_or((from, from));
        availability.longest_blocked = Some(Gap {
            from_ms: ms(start),
            to_ms: ms(end),
        });
        availability
    }
}

const MAX_EXAMPLES: usize = 20;

/// The streaming sweep of one case.
#[derive(Debug)]
pub(crate) struct Oracle {
    keys: Vec<KeyState>,
    low_bounds: Vec<u64>,
    queue: Vec<u32>,
    seq: u64,
    case_start: u64,
    measure_from: u64,
    found: OracleFindings,
    sampler: HolderSampler,
}

impl Oracle {
    /// An oracle for `keys` keys and `clients` clients whose intervals all start after `case_start`;
    /// hand-offs count from `measure_from`.
    pub(crate) fn new(keys: u32, clients: u32, case_start: u64, measure_from: u64) -> Self {
        Oracle {
            keys: (0..keys).map(|_| KeyState::default()).collect(),
            low_bounds: vec![case_start; clients as usize],
            queue: Vec::new(),
            seq: 0,
            case_start,
            measure_from,
            found: OracleFindings {
                pairs: 0,
                total_ns: 0,
                max_ns: 0,
                keys: 0,
                unnoticed_pairs: 0,
                lost_fired: 0,
                lost_too_late: 0,
                lateness: new_hist(),
                handoff: new_hist(),
                examples: Vec::new(),
                holder_sample: None,
                orphan_waits: Vec::new(),
                grants: Grants::new(case_start),
                contended: false,
                held: Vec::new(),
                history: Vec::new(),
                waits: Vec::new(),
                case_start,
            },
            sampler: HolderSampler::new(keys),
        }
    }

    /// Takes a batch and sweeps what the new watermark allows.
    pub(crate) fn add(&mut self, batch: IntervalBatch) {
        self.found.history.extend(batch.history);
        for interval in batch.intervals {
            let Some(state) = self.keys.get_mut(interval.key as usize) else {
                continue;
            };
            self.seq += 1;
            self.found
                .grants
                .add(interval.acquire_started, interval.start);
            self.found
                .waits
                .push((interval.key, interval.acquire_started, interval.start));
            state.pending.push(Reverse(Pending {
                start: interval.start,
                seq: self.seq,
                client: batch.client,
                interval,
            }));
            if !state.queued {
                state.queued = true;
                self.queue.push(interval.key);
            }
        }
        if let Some(bound) = self.low_bounds.get_mut(batch.client as usize) {
            *bound = (*bound).max(batch.low_bound);
        }
        let watermark = self.low_bounds.iter().copied().min().unwrap_or(u64::MAX);
        self.sweep(watermark);
    }

    /// Collects batches from `queue` every [`COLLECT_EVERY`] until `done` is set, then takes the rest,
    /// sweeps everything and returns the findings.
    pub(crate) async fn collect(
        mut self,
        queue: BatchQueue,
        done: crate::base::stop::StopSignal,
    ) -> OracleFindings {
        let mut tick = tokio::time::interval(COLLECT_EVERY);
        loop {
            tokio::select! {
                _ = done.wait() => break,
                _ = tick.tick() => {
                    for batch in queue.take() {
                        self.add(batch);
                    }
                }
            }
        }
        for batch in queue.take() {
            self.add(batch);
        }
        self.finish()
    }

    /// Sweeps everything left (every client is done or gone) and returns the findings.
    pub(crate) fn finish(mut self) -> OracleFindings {
        self.sweep(u64::MAX);
        for state in &mut self.keys {
            if let Some(at) = state.orphaned_at.take() {
                let since = at.saturating_sub(self.measure_from);
                self.found.orphan_waits.push((since, None));
            }
        }
        self.found.holder_sample = self.sampler.finish(self.case_start);
        self.found.held = self
            .keys
            .iter_mut()
            .map(|k| std::mem::take(&mut k.held))
            .collect();
        self.found
    }

    fn sweep(&mut self, watermark: u64) {
        let queue = std::mem::take(&mut self.queue);
        for key in queue {
            let Some(state) = self.keys.get_mut(key as usize) else {
                continue;
            };
            while let Some(Reverse(next)) = state.pending.peek().copied() {
                if next.start >= watermark && watermark != u64::MAX {
                    break;
                }
                state.pending.pop();
                let pairs_before = self.found.pairs;
                sweep_one(
                    state,
                    key,
                    next,
                    self.case_start,
                    self.measure_from,
                    &mut self.found,
                );
                let overlapped = self.found.pairs > pairs_before;
                self.sampler.add(next.client, next.interval, overlapped);
            }
            state.queued = !state.pending.is_empty();
            if state.queued {
                self.queue.push(key);
            }
        }
    }
}

fn sweep_one(
    state: &mut KeyState,
    key: u32,
    next: Pending,
    case_start: u64,
    measure_from: u64,
    found: &mut OracleFindings,
) {
    let x = next.interval;
    state.active.retain(|a| a.interval.end > x.start);
    for a in state.active.iter_mut().filter(|a| a.client != next.client) {
        let overlap = a.interval.end.min(x.end).saturating_sub(x.start);
        if overlap == 0 {
            continue;
        }
        found.pairs += 1;
        found.contended = true;
        found.total_ns += overlap;
        found.max_ns = found.max_ns.max(overlap);
        if !state.overlapped {
            state.overlapped = true;
            found.keys += 1;
        }
        if a.interval.ended_by == EndedBy::Lost {
            if !a.counted_late {
                a.counted_late = true;
                found.lost_too_late += 1;
                record(&mut found.lateness, a.interval.end - x.start);
            }
        } else {
            found.unnoticed_pairs += 1;
        }
        if found.examples.len() < MAX_EXAMPLES {
            found.examples.push(OverlapExample {
                key,
                first: held(a.client, &a.interval, case_start),
                second: held(next.client, &x, case_start),
            });
        }
    }
    if state.max_end > 0
        && state.max_end <= x.start
        && x.acquire_started < state.max_end
        && x.start >= measure_from
    {
        record(&mut found.handoff, x.start - state.max_end);
    }
    // The orphan's worker stops after it, so the next interval to start is another client's.
    if let Some(at) = state.orphaned_at
        && x.start >= at
    {
        state.orphaned_at = None;
        found
            .orphan_waits
            .push((at.saturating_sub(measure_from), Some(x.start - at)));
    }
    if x.acquire_started < state.max_end && state.max_end_client != next.client {
        found.contended = true;
    }
    // Swept in start order, so a new interval either extends the last span or starts a later one.
    match state.held.last_mut() {
        Some(span) if x.start <= span.1 => span.1 = span.1.max(x.end),
        _ => state.held.push((x.start, x.end)),
    }
    if x.end >= state.max_end {
        state.max_end = x.end;
        state.max_end_client = next.client;
    }
    match x.ended_by {
        EndedBy::Lost => found.lost_fired += 1,
        EndedBy::Orphaned => state.orphaned_at = Some(x.end),
        _ => {}
    }
    state.active.push(Active {
        client: next.client,
        interval: x,
        counted_late: false,
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Test times are in microseconds (histograms resolve ~64 ns).
    const US: u64 = 1000;

    fn iv(key: u32, acquire_started: u64, start: u64, end: u64, ended_by: EndedBy) -> Interval {
        Interval {
            key,
            acquire_started: acquire_started * US,
            start: start * US,
            end: end * US,
            ended_by,
        }
    }

    fn batch(client: u32, intervals: Vec<Interval>, low_bound: u64) -> IntervalBatch {
        IntervalBatch {
            client,
            intervals,
            low_bound: low_bound.saturating_mul(US),
            history: Vec::new(),
        }
    }

    fn near(ns: u64, us: u64) -> bool {
        ns.abs_diff(us * US) <= us * US / 500 + 64
    }

    #[test]
    fn disjoint_holders_give_hand_offs_and_no_overlap() {
        let mut o = Oracle::new(1, 2, 0, 0);
        o.add(batch(0, vec![iv(0, 10, 10, 100, EndedBy::Released)], 110));
        o.add(batch(
            1,
            vec![iv(0, 50, 130, 200, EndedBy::Released)],
            u64::MAX,
        ));
        o.add(batch(0, vec![], u64::MAX));
        let f = o.finish();
        assert_eq!((f.pairs, f.total_ns, f.keys), (0, 0, 0));
        assert_eq!(f.handoff.len(), 1);
        assert!(near(f.handoff.max(), 30), "{}", f.handoff.max());
    }

    #[test]
    fn contention_is_an_acquire_that_started_while_another_client_held_its_key() {
        // Client 1 called acquire at 50, while client 0 held key 0 until 100: contended.
        let mut o = Oracle::new(1, 2, 0, 0);
        o.add(batch(
            0,
            vec![iv(0, 10, 10, 100, EndedBy::Released)],
            u64::MAX,
        ));
        o.add(batch(
            1,
            vec![iv(0, 50, 130, 200, EndedBy::Released)],
            u64::MAX,
        ));
        assert!(o.finish().contended);
        // One client, one key, back to back: nobody else ever wanted it.
        let mut o = Oracle::new(1, 1, 0, 0);
        o.add(batch(
            0,
            vec![
                iv(0, 0, 1, 10, EndedBy::Released),
                iv(0, 10, 11, 20, EndedBy::Released),
            ],
            u64::MAX,
        ));
        let f = o.finish();
        assert!(!f.contended);
        // Its own acquire cut by the end of the case at 20 waited for nobody; one called at 15
        // (another client's, still waiting) waited for the hold that ended at 20.
        assert!(!f.waited(0, 20 * US, 25 * US));
        assert!(f.waited(0, 15 * US, 25 * US));
        assert!(!f.waited(7, 0, 25 * US), "no such key");
    }

    #[test]
    fn a_failed_acquire_waited_only_if_another_hold_overlapped_the_call() {
        // A frozen server: client 0 holds key 0 over [10, 100]; client 1's acquire, called at 50,
        // fails at 80; client 2's, called at 120 after the hold ended, fails at 150; client 2 then
        // holds [300, 400] itself. Key 1 is held over [0, 30] and [30, 60] (one span).
        let mut o = Oracle::new(2, 3, 0, 0);
        o.add(batch(
            0,
            vec![
                iv(0, 10, 10, 100, EndedBy::Released),
                iv(1, 0, 0, 30, EndedBy::Released),
            ],
            u64::MAX,
        ));
        o.add(batch(
            1,
            vec![iv(1, 30, 30, 60, EndedBy::Released)],
            u64::MAX,
        ));
        o.add(batch(
            2,
            vec![iv(0, 200, 300, 400, EndedBy::Released)],
            u64::MAX,
        ));
        let f = o.finish();
        assert!(
            f.waited(0, 50 * US, 80 * US),
            "the hold overlapped the call"
        );
        assert!(
            !f.waited(0, 120 * US, 150 * US),
            "nobody held the key between 120 and 150, though its last hold ended at 400"
        );
        assert!(f.waited(0, 390 * US, 420 * US));
        assert!(!f.waited(0, 400 * US, 420 * US), "ended as the call began");
        assert!(f.waited(1, 40 * US, 45 * US), "inside the merged span");
        assert!(!f.waited(1, 60 * US, 90 * US));
    }

    #[test]
    fn pairs_are_counted_once_whatever_the_batch_order() {
        // A [100, 400] on key 0 noticed its loss at 400; B started at 250 and C at 300, D elsewhere.
        let a = iv(0, 100, 100, 400, EndedBy::Lost);
        let b = iv(0, 120, 250, 600, EndedBy::Released);
        let c = iv(0, 130, 300, 350, EndedBy::Released);
        let d = iv(1, 0, 0, 1000, EndedBy::Released);
        for order in [[0, 1, 2, 3], [3, 2, 1, 0], [1, 3, 0, 2]] {
            let batches = [
                batch(0, vec![a], u64::MAX),
                batch(1, vec![b], u64::MAX),
                batch(2, vec![c], u64::MAX),
                batch(3, vec![d], u64::MAX),
            ];
            let mut o = Oracle::new(2, 4, 0, 0);
            for i in order {
                o.add(batches[i].clone());
            }
            let f = o.finish();
            // A∩B = 150, A∩C = 50, B∩C = 50.
            assert_eq!(f.pairs, 3, "order {order:?}");
            assert_eq!(f.total_ns, 250 * US);
            assert_eq!(f.max_ns, 150 * US);
            assert_eq!(f.keys, 1);
            assert_eq!((f.lost_fired, f.lost_too_late), (1, 1));
            assert!(
                near(f.lateness.max(), 150),
                "noticed 150 us after B acquired"
            );
            assert_eq!(f.unnoticed_pairs, 1, "B∩C: B never noticed anything");
            assert_eq!(f.examples.len(), 3);
        }
    }

    #[test]
    fn a_loss_noticed_in_time_is_not_late_and_one_client_never_overlaps_itself() {
        let mut o = Oracle::new(1, 2, 0, 0);
        o.add(batch(
            0,
            vec![
                iv(0, 0, 0, 100, EndedBy::Lost),
                iv(0, 90, 100, 200, EndedBy::Released),
            ],
            u64::MAX,
        ));
        o.add(batch(
            1,
            vec![iv(0, 50, 150, 300, EndedBy::Released)],
            u64::MAX,
        ));
        let f = o.finish();
        assert_eq!(
            f.pairs, 1,
            "only client 1 against client 0's second interval"
        );
        assert_eq!((f.lost_fired, f.lost_too_late), (1, 0));
    }

    #[test]
    fn the_watermark_bounds_what_is_kept() {
        // Two clients alternate on one key; each waits while the other holds.
        let mut o = Oracle::new(1, 2, 0, 0);
        for round in 0..1000u64 {
            let t = round * 100;
            let a = iv(0, t.saturating_sub(20), t, t + 40, EndedBy::Released);
            o.add(batch(0, vec![a], t + 41));
            o.add(batch(
                1,
                vec![iv(0, t + 30, t + 50, t + 90, EndedBy::Released)],
                t + 91,
            ));
            assert!(o.keys[0].pending.len() <= 2, "{}", o.keys[0].pending.len());
            assert!(o.keys[0].active.len() <= 2);
        }
        let f = o.finish();
        assert_eq!(f.pairs, 0);
        assert_eq!(
            f.handoff.len(),
            1999,
            "every interval but the first was a hand-off"
        );
        assert!(near(f.handoff.max(), 10));
    }

    #[test]
    fn intervals_travel_as_compact_arrays() {
        let i = Interval {
            key: 3,
            acquire_started: 1,
            start: 2,
            end: 3,
            ended_by: EndedBy::Stopped,
        };
        let json = serde_json::to_string(&i).expect("serializes");
        assert_eq!(json, "[3,1,2,3,2]");
        assert_eq!(serde_json::from_str::<Interval>(&json).expect("parses"), i);
        assert!(serde_json::from_str::<Interval>("[3,1,2,3,9]").is_err());
    }
}
