//! Availability over time: when locks were granted and how long the granted acquires had waited, in
//! time bins from the case start, with bounded memory (bins double in width past [`MAX_BINS`]); the
//! longest stretch of the measured window in which no lock was granted at all; and the longest in
//! which some client waited for a key that no client held (the lock unavailable, [`longest_blocked`]).
//! Fault scenarios chart it with the fault window shaded, instead of reading a throughput of 0 as
//! "broken".

use lockbench_reports::model::{Availability, Gap};

/// The first bin width: 100 ms.
const FIRST_BIN_NS: u64 = 100_000_000;
/// At most this many bins; past it, neighbouring bins merge (the width doubles).
const MAX_BINS: usize = 600;

#[derive(Debug, Clone, Copy)]
struct Bin {
    grants: u32,
    max_wait_ns: u64,
    /// The first and last grant in the bin, ns from the case start.
    first: u64,
    last: u64,
}

impl Bin {
    const EMPTY: Bin = Bin {
        grants: 0,
        max_wait_ns: 0,
        first: u64::MAX,
        last: 0,
    };

    fn merge(self, other: Bin) -> Bin {
        Bin {
            grants: self.grants + other.grants,
            max_wait_ns: self.max_wait_ns.max(other.max_wait_ns),
            first: self.first.min(other.first),
            last: self.last.max(other.last),
        }
    }
}

/// Grants of one case, by time.
#[derive(Debug, Clone)]
pub(crate) struct Grants {
    case_start: u64,
    bin_ns: u64,
    bins: Vec<Bin>,
}

impl Grants {
    /// Grants of a case that started at `case_start` (monotonic ns).
    pub(crate) fn new(case_start: u64) -> Self {
        Grants {
            case_start,
            bin_ns: FIRST_BIN_NS,
            bins: Vec::new(),
        }
    }

    /// A lock granted at `start` to an acquire called at `acquire_started` (monotonic ns).
    pub(crate) fn add(&mut self, acquire_started: u64, start: u64) {
        let at = start.saturating_sub(self.case_start);
        let mut index = (at / self.bin_ns) as usize;
        while index >= MAX_BINS {
            self.coarsen();
            index = (at / self.bin_ns) as usize;
        }
        if self.bins.len() <= index {
            self.bins.resize(index + 1, Bin::EMPTY);
        }
        let bin = &mut self.bins[index];
        *bin = bin.merge(Bin {
            grants: 1,
            max_wait_ns: start.saturating_sub(acquire_started),
            first: at,
            last: at,
        });
    }

    fn coarsen(&mut self) {
        self.bin_ns *= 2;
        self.bins = self
            .bins
            .chunks(2)
            .map(|pair| pair.iter().fold(Bin::EMPTY, |a, b| a.merge(*b)))
            .collect();
    }

    /// The series up to `window_end_ns` (from the case start), and the longest stretch of the measured
    /// window `[window_start_ns, window_end_ns]` without a grant.
    pub(crate) fn finish(&self, window_start_ns: u64, window_end_ns: u64) -> Availability {
        let ms = |ns: u64| ns as f64 / 1e6;
        let bins = window_end_ns.div_ceil(self.bin_ns) as usize;
        let series: Vec<Bin> = (0..bins)
            .map(|i| self.bins.get(i).copied().unwrap_or(Bin::EMPTY))
            .collect();
        let mut longest: Option<(u64, u64)> = None;
        let mut previous = window_start_ns;
        let grants_in_window = series
            .iter()
            .filter(|b| b.grants > 0)
            .flat_map(|b| [b.first, b.last])
            .filter(|&t| (window_start_ns..=window_end_ns).contains(&t));
        for at in grants_in_window.chain([window_end_ns]) {
            if longest.is_none_or(|(from, to)| at.saturating_sub(previous) > to - from) {
                longest = Some((previous, at.max(previous)));
            }
            previous = previous.max(at);
        }
        Availability {
            bin_ms: ms(self.bin_ns),
            grants: series.iter().map(|b| b.grants).collect(),
            max_wait_ms: series
                .iter()
                .map(|b| (b.grants > 0).then(|| ms(b.max_wait_ns)))
                .collect(),
            longest_gap: longest.map(|(from, to)| Gap {
                from_ms: ms(from),
                to_ms: ms(to),
            }),
            longest_blocked: None,
        }
    }
}

/// The longest stretch of `[from, to]` in which some client waited for a key that no client held: per
/// key, the union of its waits (`(key, called, returned)`: an acquire from its call to its grant or
/// its giving up) less the spans in which some client held the key (`held`, per key, disjoint and in
/// time order), from the key's first hold on: before it the clients were still starting (a first
/// acquire's wait includes connecting), not kept out. All times are monotonic ns. A hold a client
/// believed in counts as held, even one the server had already ended; a crashed holder's lease, which
/// nobody holds, counts as unavailable.
pub(crate) fn longest_blocked(
    waits: impl IntoIterator<Item = (u32, u64, u64)>,
    held: &[Vec<(u64, u64)>],
    from: u64,
    to: u64,
) -> Option<(u64, u64)> {
    let mut by_key: Vec<Vec<(u64, u64)>> = vec![Vec::new(); held.len()];
    for (key, called, returned) in waits {
        let (start, end) = (called.max(from), returned.min(to));
        if let Some(spans) = by_key.get_mut(key as usize)
            && start < end
        {
            spans.push((start, end));
        }
    }
    let mut longest: Option<(u64, u64)> = None;
    for (mut waits, held) in by_key.into_iter().zip(held) {
        let first_hold = held.first().map_or(from, |&(start, _)| start);
        waits.retain_mut(|(start, end)| {
            *start = (*start).max(first_hold);
            start < end
        });
        waits.sort_unstable();
        for (start, end) in union(&waits) {
            for stretch in less(start, end, held) {
                if longest.is_none_or(|(a, b)| stretch.1 - stretch.0 > b - a) {
                    longest = Some(stretch);
                }
            }
        }
    }
    longest
}

/// The union of `spans` (sorted by start) as disjoint spans in time order.
fn union(spans: &[(u64, u64)]) -> Vec<(u64, u64)> {
    let mut merged: Vec<(u64, u64)> = Vec::new();
    for &(start, end) in spans {
        match merged.last_mut() {
            Some(last) if start <= last.1 => last.1 = last.1.max(end),
            _ => merged.push((start, end)),
        }
    }
    merged
}

/// What of `[start, end)` no span of `held` (disjoint, in time order) covers.
fn less(start: u64, end: u64, held: &[(u64, u64)]) -> Vec<(u64, u64)> {
    let mut left = Vec::new();
    let mut at = start;
    let first = held.partition_point(|&(_, e)| e <= start);
    for &(h_start, h_end) in &held[first..] {
        if h_start >= end {
            break;
        }
        if h_start > at {
            left.push((at, h_start));
        }
        at = at.max(h_end);
    }
    if at < end {
        left.push((at, end));
    }
    left
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    #[test]
    fn bins_hold_grants_and_the_longest_wait() {
        let mut g = Grants::new(1_000 * MS);
        g.add(1_000 * MS, 1_010 * MS);
        g.add(1_020 * MS, 1_090 * MS);
        g.add(1_050 * MS, 1_350 * MS);
        let a = g.finish(0, 400 * MS);
        assert_eq!(a.bin_ms, 100.0);
        assert_eq!(a.grants, [2, 0, 0, 1]);
        assert_eq!(a.max_wait_ms, [Some(70.0), None, None, Some(300.0)]);
        let gap = a.longest_gap.expect("gap");
        assert_eq!((gap.from_ms, gap.to_ms), (90.0, 350.0));
    }

    #[test]
    fn the_gap_counts_only_the_measured_window_and_its_ends() {
        let mut g = Grants::new(0);
        g.add(0, 50 * MS);
        g.add(0, 1_000 * MS);
        // Warm-up up to 300 ms: the grant at 50 ms is before the window; the window's start to the
        // grant at 1 s is the longest stretch, longer than from it to the window's end.
        let gap = g.finish(300 * MS, 1_500 * MS).longest_gap.expect("gap");
        assert_eq!((gap.from_ms, gap.to_ms), (300.0, 1_000.0));
        // No grant in the window at all: the whole window.
        let gap = Grants::new(0).finish(0, 800 * MS).longest_gap.expect("gap");
        assert_eq!((gap.from_ms, gap.to_ms), (0.0, 800.0));
    }

    #[test]
    fn memory_is_bounded_by_doubling_the_bin_width() {
        let mut g = Grants::new(0);
        for i in 0..10_000u64 {
            g.add(i * 10 * MS, i * 10 * MS + MS);
        }
        assert!(g.bins.len() <= MAX_BINS, "{}", g.bins.len());
        let a = g.finish(0, 100_000 * MS);
        assert_eq!(a.bin_ms, 200.0);
        assert_eq!(a.grants.iter().sum::<u32>(), 10_000);
    }

    #[test]
    fn blocked_is_waiting_for_a_key_nobody_holds() {
        // Before a key's first hold the clients were starting, not kept out.
        let late = vec![vec![(200, 400)]];
        assert_eq!(
            longest_blocked([(0, 10, 200), (0, 20, 450)], &late, 0, 1_000),
            Some((400, 450))
        );
        // Key 0 held 0-100 and 300-400; a client waits 50-350 (granted at 300, after a 200 ms
        // stretch with nobody holding: a crashed holder's lease running out, say).
        let held = vec![vec![(0, 100), (300, 400)], vec![(0, 1_000)]];
        let waits = [(0, 50, 300), (0, 60, 320), (1, 10, 900)];
        assert_eq!(longest_blocked(waits, &held, 0, 1_000), Some((100, 300)));
        // Waiting while another holds is not unavailability, nor is a key nobody waits for.
        assert_eq!(longest_blocked([(0, 10, 90)], &held, 0, 1_000), None);
        assert_eq!(longest_blocked([], &held, 0, 1_000), None);
        // Clipped to the window.
        assert_eq!(
            longest_blocked([(0, 50, 300)], &held, 150, 1_000),
            Some((150, 300))
        );
        // A wait that ran to the end of the case with nobody holding counts up to the end.
        assert_eq!(
            longest_blocked([(0, 450, 2_000)], &held, 0, 1_000),
            Some((450, 1_000))
        );
    }
}
