//! The holder-timeline sample: a bounded stretch of consecutive believed-held intervals on one key,
//! taken by the overlap oracle as it sweeps (intervals arrive per key in start order).
//!
//! The stretch is centred on the first overlapping pair found on one of the first [`SAMPLED_KEYS`]
//! keys (the [`BEFORE`] intervals up to and including the one that overlapped, then the next
//! [`AFTER`]); when nothing overlapped there, it is the first [`HEAD`] intervals of key 0. Memory is
//! bounded by `SAMPLED_KEYS × BEFORE + HEAD + AFTER` intervals whatever the case length.

use std::collections::VecDeque;

use lockbench_reports::model::{HeldInterval, HolderSample};

use crate::base::holds::Interval;

/// Keys watched for a first overlap.
pub(crate) const SAMPLED_KEYS: u32 = 4;
/// Intervals kept before (and including) the first overlapping one.
pub(crate) const BEFORE: usize = 40;
/// Intervals kept after it.
pub(crate) const AFTER: usize = 40;
/// Intervals of key 0 kept from the start when nothing overlapped.
pub(crate) const HEAD: usize = 80;

#[derive(Debug)]
struct Frozen {
    key: u32,
    intervals: Vec<(u32, Interval)>,
}

/// Collects the sample; fed by the oracle's sweep.
#[derive(Debug)]
pub(crate) struct HolderSampler {
    recent: Vec<VecDeque<(u32, Interval)>>,
    head: Vec<(u32, Interval)>,
    frozen: Option<Frozen>,
}

impl HolderSampler {
    /// A sampler for a case with `keys` keys.
    pub(crate) fn new(keys: u32) -> Self {
        HolderSampler {
            recent: (0..keys.min(SAMPLED_KEYS))
                .map(|_| VecDeque::new())
                .collect(),
            head: Vec::new(),
            frozen: None,
        }
    }

    /// Takes the next swept interval of `client` on its key; `overlapped` says whether it intersects
    /// another client's interval that started before it.
    pub(crate) fn add(&mut self, client: u32, interval: Interval, overlapped: bool) {
        if let Some(frozen) = &mut self.frozen {
            if frozen.key == interval.key && frozen.intervals.len() < BEFORE + AFTER {
                frozen.intervals.push((client, interval));
            }
            return;
        }
        if interval.key == 0 && self.head.len() < HEAD {
            self.head.push((client, interval));
        }
        let Some(recent) = self.recent.get_mut(interval.key as usize) else {
            return;
        };
        if recent.len() == BEFORE {
            recent.pop_front();
        }
        recent.push_back((client, interval));
        if overlapped {
            self.frozen = Some(Frozen {
                key: interval.key,
                intervals: std::mem::take(recent).into(),
            });
        }
    }

    /// The sample, times relative to `case_start`; `None` when no interval was seen on key 0.
    pub(crate) fn finish(self, case_start: u64) -> Option<HolderSample> {
        let (key, anchor, intervals) = match self.frozen {
            Some(frozen) => (frozen.key, "first_overlap", frozen.intervals),
            None if !self.head.is_empty() => (0, "start", self.head),
            None => return None,
        };
        Some(HolderSample {
            key,
            anchor: anchor.to_owned(),
            intervals: intervals
                .iter()
                .map(|(client, i)| held(*client, i, case_start))
                .collect(),
        })
    }
}

/// An interval as the results show it: milliseconds since the case start.
pub(crate) fn held(client: u32, interval: &Interval, case_start: u64) -> HeldInterval {
    HeldInterval {
        client,
        start_ms: interval.start.saturating_sub(case_start) as f64 / 1e6,
        end_ms: interval.end.saturating_sub(case_start) as f64 / 1e6,
        ended_by: interval.ended_by.name().to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::holds::EndedBy;

    fn iv(key: u32, start: u64) -> Interval {
        Interval {
            key,
            acquire_started: start,
            start: start * 1_000_000,
            end: start * 1_000_000 + 500_000,
            ended_by: EndedBy::Released,
        }
    }

    #[test]
    fn without_overlap_the_sample_is_the_start_of_key_zero() {
        let mut s = HolderSampler::new(2);
        for t in 0..500 {
            s.add(t as u32 % 3, iv(t as u32 % 2, t), false);
        }
        let sample = s.finish(0).expect("sample");
        assert_eq!((sample.key, sample.anchor.as_str()), (0, "start"));
        assert_eq!(sample.intervals.len(), HEAD);
        assert_eq!(sample.intervals[0].start_ms, 0.0);
        assert_eq!(sample.intervals[1].start_ms, 2.0, "key 0 only");
    }

    #[test]
    fn the_first_overlap_freezes_a_window_around_it() {
        let mut s = HolderSampler::new(8);
        for t in 0..1000 {
            s.add(1, iv(1, t), t == 600);
            // Overlaps on keys past the sampled ones are ignored.
            s.add(2, iv(7, t), true);
        }
        let sample = s.finish(0).expect("sample");
        assert_eq!((sample.key, sample.anchor.as_str()), (1, "first_overlap"));
        assert_eq!(sample.intervals.len(), BEFORE + AFTER);
        let first = 600 - BEFORE as u64 + 1;
        assert_eq!(sample.intervals[0].start_ms, first as f64);
        assert_eq!(sample.intervals[BEFORE - 1].start_ms, 600.0);
        assert!(HolderSampler::new(1).finish(0).is_none());
    }
}
