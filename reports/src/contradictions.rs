//! Contradictions between two runs (`lockbench report NEW --baseline OLD --fail-on contradiction`):
//! the first-screen cells whose two measurements cannot both be right as far as their own trials can
//! tell. Where [`crate::delta`] names what changed beyond noise, this names what the runs disagree on
//! beyond their uncertainty, so a team can tell a result it can repeat from one it cannot:
//!
//! - a verdict cell (scenario × lease × strategy) whose 95 % Wilson intervals for the violation rate
//!   exclude each other. A case whose trials all ran carries its interval ([`Trials::interval`]); a
//!   single run is one trial; trials stopped at their first violation give no rate, except when every
//!   trial that ran was violated: their k of n gives an interval all the same ([`wilson`]), so "broke
//!   at trial 1" against "0 of 20" is a contradiction, against "0 of 3" it is not;
//! - a scorecard "breaks under" entry present in one run and absent from the other, judged by the same
//!   intervals (a strategy that broke once in three trials and held in three is no contradiction);
//! - a scorecard CS/s figure whose 95 % intervals ([`RateInterval`]: the mean of the trials' own
//!   rates, Student's t) exclude each other; a single trial has no interval, so its figure never
//!   contradicts another.
//!
//! [`Trials::interval`]: crate::model::Trials::interval

use crate::comparison::Comparison;
use crate::grid::{Grid, Row, interval, ran, violated_of};
use crate::model::CaseResult;
use crate::rate_interval::{RateInterval, wilson};
use crate::rules::headline_row;
use crate::scorecard::{cs_per_s, predicted};

/// What the count line counts, in words.
pub const RULE: &str = "first-screen cells whose two runs exclude each other: verdicts and \"breaks under\" entries by the 95 % Wilson intervals of their violation rates, CS/s by the 95 % intervals of their mean per-trial rates (Student's t)";

/// The 95 % interval of the violation rate of a case that ran: its trials' own, else the Wilson
/// interval of its k of n; `None` for trials stopped at their first violation after some held (sequential
/// sampling: they say when the case broke, not how often).
pub fn violation_interval(case: &CaseResult) -> Option<(f64, f64)> {
    match &case.trials {
        Some(t) if t.stopped_early => {
            (t.runs > 0 && t.violated == t.runs).then(|| wilson(t.violated, t.runs))
        }
        Some(t) if t.runs == 0 => None,
        Some(t) => Some(t.interval().unwrap_or_else(|| wilson(t.violated, t.runs))),
        None => {
            let (k, n) = violated_of(case);
            Some(wilson(k, n))
        }
    }
}

/// Whether two intervals have no point in common.
fn apart(a: (f64, f64), b: (f64, f64)) -> bool {
    a.1 < b.0 || b.1 < a.0
}

/// One first-screen cell the two runs contradict each other on.
#[derive(Debug, Clone, PartialEq)]
pub struct Contradiction {
    /// The cell: `verdict process-pause × redisson`, `breaks under (unexpected) × redisson: process-pause`,
    /// `CS/s baseline × redis-watchdog`.
    pub cell: String,
    /// The baseline file's figure, with the trials it rests on.
    pub old: String,
    /// This run's figure, likewise.
    pub new: String,
}

/// `3 of 3 trials violated (95 % 44–100 %)`, `broke at trial 1 (1 of 1 violated, 95 % 21–100 %)`.
fn verdict_figure(case: &CaseResult, (low, high): (f64, f64)) -> String {
    let (k, n) = violated_of(case);
    let range = interval(low, high);
    match &case.trials {
        Some(t) if t.stopped_early => {
            format!(
                "broke at trial {} ({k} of {n} violated, 95 % {range})",
                t.ran()
            )
        }
        _ => format!(
            "{k} of {n} trial{} violated (95 % {range})",
            if n == 1 { "" } else { "s" }
        ),
    }
}

/// `770 CS/s (95 % 745–795) over 3 trials`.
fn speed_figure(estimate: &RateInterval) -> String {
    format!(
        "{} over {} trial{}",
        cs_per_s(estimate),
        estimate.n,
        if estimate.n == 1 { "" } else { "s" }
    )
}

/// The cases of `grid` that ran, keyed by scenario, lease and strategy.
fn keyed<'g, 'a>(
    grid: &'g Grid<'a>,
) -> Vec<((&'a str, &'g str, &'a str), &'g Row<'a>, &'a CaseResult)> {
    grid.cases()
        .filter(|(_, c)| ran(c))
        .map(|(row, c)| {
            (
                (row.scenario(), row.lease.as_str(), c.strategy.as_str()),
                row,
                c,
            )
        })
        .collect()
}

/// Every first-screen cell on which `old` (the baseline file) and `new` contradict each other, in
/// the new file's order: verdict cells, then "breaks under" entries, then CS/s figures.
pub fn find(old: &Comparison, new: &Comparison) -> Vec<Contradiction> {
    let old_grid = Grid::new(old);
    let new_grid = Grid::new(new);
    let before = keyed(&old_grid);
    let mut verdicts = Vec::new();
    let mut breaks = Vec::new();
    for (key, row, case) in keyed(&new_grid) {
        let Some((_, old_row, was)) = before.iter().find(|(k, ..)| *k == key) else {
            continue;
        };
        let (Some(a), Some(b)) = (violation_interval(was), violation_interval(case)) else {
            continue;
        };
        if !apart(a, b) {
            continue;
        }
        let (old_figure, new_figure) = (verdict_figure(was, a), verdict_figure(case, b));
        verdicts.push(Contradiction {
            cell: format!("verdict {} × {}", row.label, case.strategy),
            old: old_figure.clone(),
            new: new_figure.clone(),
        });
        // The scorecard lists a row under "breaks under" when any trial there violated.
        let (k_old, k_new) = (violated_of(was).0, violated_of(case).0);
        if (k_old > 0) != (k_new > 0) {
            // The entry's column is the one of the run that lists it.
            let listed = if k_new > 0 {
                predicted(row, case)
            } else {
                predicted(old_row, was)
            };
            let column = if listed { "predicted" } else { "unexpected" };
            breaks.push(Contradiction {
                cell: format!("breaks under ({column}) × {}: {}", case.strategy, row.label),
                old: old_figure,
                new: new_figure,
            });
        }
    }
    let mut speeds = Vec::new();
    // The scorecard's CS/s cells, when both first screens measure under the same row.
    let heads = (headline_row(&old_grid), headline_row(&new_grid));
    if let (Some(old_head), Some(new_head)) = heads
        && old_head.scenario() == new_head.scenario()
        && old_head.lease == new_head.lease
    {
        for s in &new_grid.strategies {
            let (Some(was), Some(case)) = (
                old_head.case(&s.id).filter(|c| ran(c)),
                new_head.case(&s.id).filter(|c| ran(c)),
            ) else {
                continue;
            };
            let (a, b) = (RateInterval::of_case(was), RateInterval::of_case(case));
            if a.apart(&b) {
                speeds.push(Contradiction {
                    cell: format!("CS/s {} × {}", new_head.label, s.id),
                    old: speed_figure(&a),
                    new: speed_figure(&b),
                });
            }
        }
    }
    verdicts.extend(breaks);
    verdicts.extend(speeds);
    verdicts
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Trial, Trials, Verdict, Violation};

    fn fixture() -> Comparison {
        Comparison::read(include_str!("../tests/fixtures/compare-quick.json")).expect("fixture")
    }

    #[test]
    fn wilson_matches_known_intervals() {
        // Newcombe 1998, Table I; R's prop.test without continuity correction.
        for (k, n, low, high) in [
            (0, 3, 0.0, 0.5615),
            (3, 3, 0.4385, 1.0),
            (1, 3, 0.0615, 0.7923),
            (0, 10, 0.0, 0.2775),
            (5, 10, 0.2366, 0.7634),
            (81, 263, 0.2553, 0.3662),
            (1, 1, 0.2065, 1.0),
        ] {
            let (l, h) = wilson(k, n);
            assert!(
                (l - low).abs() < 1e-4 && (h - high).abs() < 1e-4,
                "{k}/{n}: {l} {h}"
            );
        }
        assert_eq!(wilson(0, 0), (0.0, 1.0));
    }

    /// `trials` trials of `completed` critical sections each in a 1 s window, `violated` of them
    /// violated; stopped at the first violation when `stopped`.
    fn trials(violated: u32, runs: u32, stopped: bool, completed: &[u64]) -> Trials {
        let (low, high) = wilson(violated, runs);
        Trials {
            runs,
            violated,
            rate_low: (!stopped).then_some(low),
            rate_high: (!stopped).then_some(high),
            stopped_early: stopped,
            fault_not_applied: 0,
            unknown: 0,
            stopped_by: None,
            each: completed
                .iter()
                .enumerate()
                .map(|(i, &completed)| Trial {
                    seed: i as u64,
                    verdict: Verdict::Safe,
                    reasons: Vec::new(),
                    completed,
                    measured_ms: Some(1000.0),
                })
                .collect(),
        }
    }

    /// The fixture with redis-watchdog's watchdog case of lease-too-short given `t` (violated when
    /// any trial was).
    fn with_lease_too_short(t: Trials) -> Comparison {
        let mut c = fixture();
        for run in &mut c.runs {
            if run.results.scenario.name != "lease-too-short" {
                continue;
            }
            for case in &mut run.results.cases {
                if case.strategy == "redis-watchdog" && case.lease == "watchdog" {
                    if t.violated > 0 {
                        case.safety.verdict = Verdict::Violated;
                        case.safety.reasons = vec![Violation::Overlap];
                        case.safety.overlap.pairs = 1;
                    }
                    case.trials = Some(t.clone());
                }
            }
        }
        c
    }

    #[test]
    fn a_verdict_both_runs_cannot_hold_is_a_contradiction_and_noise_is_not() {
        let held_20 = with_lease_too_short(trials(0, 20, false, &[]));
        let broke_first = with_lease_too_short(trials(1, 1, true, &[]));
        let found = find(&held_20, &broke_first);
        let cells: Vec<&str> = found.iter().map(|c| c.cell.as_str()).collect();
        assert_eq!(
            cells,
            [
                "verdict lease-too-short · watchdog × redis-watchdog",
                "breaks under (unexpected) × redis-watchdog: lease-too-short · watchdog",
            ]
        );
        assert_eq!(found[0].old, "0 of 20 trials violated (95 % 0–16 %)");
        assert_eq!(
            found[0].new,
            "broke at trial 1 (1 of 1 violated, 95 % 21–100 %)"
        );
        // Either way round.
        assert_eq!(find(&broke_first, &held_20).len(), 2);
        // Three trials held cannot rule out a rate of one in two: no contradiction.
        let held_3 = with_lease_too_short(trials(0, 3, false, &[]));
        assert_eq!(find(&held_3, &broke_first), []);
        // Trials stopped at a violation after some held give no rate: nothing to contradict.
        let broke_third = with_lease_too_short(trials(1, 3, true, &[]));
        assert_eq!(find(&held_20, &broke_third), []);
        // 1 of 20 against 18 of 20: both break, so the scorecard lists both; only the rate differs.
        let rare = with_lease_too_short(trials(1, 20, false, &[]));
        let often = with_lease_too_short(trials(18, 20, false, &[]));
        let found = find(&rare, &often);
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(found[0].cell.starts_with("verdict "), "{found:?}");
        // A file against itself contradicts nothing.
        assert_eq!(find(&fixture(), &fixture()), []);
    }

    /// The fixture with redis-watchdog's baseline case over 1 s trials of `completed`, their pooled
    /// rate and window; as an older file wrote it (no window per trial) when `old`.
    fn with_baseline_rate(completed: &[u64], old: bool) -> Comparison {
        let mut c = fixture();
        let n = completed.len();
        for run in &mut c.runs {
            for case in &mut run.results.cases {
                if case.strategy == "redis-watchdog" && run.results.scenario.name == "baseline" {
                    case.throughput.completed_per_s =
                        completed.iter().sum::<u64>() as f64 / n as f64;
                    case.window.measured_ms = 1000.0 * n as f64;
                    let mut t = trials(0, n as u32, false, completed);
                    if old {
                        t.each.iter_mut().for_each(|t| t.measured_ms = None);
                    }
                    case.trials = Some(t);
                }
            }
        }
        c
    }

    #[test]
    fn throughputs_whose_intervals_exclude_each_other_contradict() {
        // 770 ± 4.303 · 25 / √3 = 708–832; 560 ± 4.303 · 20 / √3 = 510–610.
        let fast = with_baseline_rate(&[745, 770, 795], false);
        let slow = with_baseline_rate(&[540, 560, 580], false);
        let found = find(&fast, &slow);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].cell, "CS/s baseline × redis-watchdog");
        assert_eq!(found[0].old, "770 CS/s (95 % 708–832) over 3 trials");
        assert_eq!(found[0].new, "560 CS/s (95 % 510–610) over 3 trials");
        // Older files share the pooled window out equally: the same intervals.
        let old = (
            with_baseline_rate(&[745, 770, 795], true),
            with_baseline_rate(&[540, 560, 580], true),
        );
        assert_eq!(find(&old.0, &old.1), found);
        // Intervals that overlap are the same figure measured twice: 740 ± 99 = 641–839.
        let close = with_baseline_rate(&[700, 740, 780], false);
        assert_eq!(find(&fast, &close), []);
        // Trial ranges apart (650–710 against 745–795) are not enough: three trials cannot tell
        // 680 ± 75 = 605–755 from 708–832.
        let apart_ranges = with_baseline_rate(&[650, 680, 710], false);
        assert_eq!(find(&fast, &apart_ranges), []);
        // A single run has no interval to compare.
        let mut single = fixture();
        single.runs[0].results.cases[1].throughput.completed_per_s = 300.0;
        assert_eq!(find(&fast, &single), []);
    }
}
