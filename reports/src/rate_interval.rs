//! The reports' 95 % intervals, each written once: a case's critical sections per second from its
//! trials' own rates (the scorecard's cell and "Fastest" line, and the CS/s contradictions between two
//! runs all read it), and a violation rate's Wilson interval ([`wilson`]: the trials' pooling, their
//! stopping rule, the verdict matrix and the findings).

use crate::model::CaseResult;

/// z of a two-sided 95 % interval: the normal quantile, and the t quantile beyond 30 degrees of
/// freedom.
pub const Z95: f64 = 1.959_963_984_540_054;

/// The 95 % Wilson score interval for a rate of `k` in `n`, the one interval of every violation rate
/// (`lockbench run` pools its trials and decides when to stop them with it); (0, 1) when `n` is 0. Unlike the normal approximation it
/// stays inside [0, 1] and is not degenerate at 0 of n.
pub fn wilson(k: u32, n: u32) -> (f64, f64) {
    if n == 0 {
        return (0.0, 1.0);
    }
    let p = f64::from(k.min(n)) / f64::from(n);
    let n = f64::from(n);
    let z2 = Z95 * Z95;
    let centre = p + z2 / (2.0 * n);
    let spread = Z95 * (p * (1.0 - p) / n + z2 / (4.0 * n * n)).sqrt();
    let denominator = 1.0 + z2 / n;
    (
        ((centre - spread) / denominator).max(0.0),
        ((centre + spread) / denominator).min(1.0),
    )
}

/// The 0.975 quantile of Student's t for 1 to 30 degrees of freedom (two-sided 95 %).
const T95: [f64; 30] = [
    12.7062, 4.3027, 3.1824, 2.7764, 2.5706, 2.4469, 2.3646, 2.3060, 2.2622, 2.2281, 2.2010,
    2.1788, 2.1604, 2.1448, 2.1314, 2.1199, 2.1098, 2.1009, 2.0930, 2.0860, 2.0796, 2.0739, 2.0687,
    2.0639, 2.0595, 2.0555, 2.0518, 2.0484, 2.0452, 2.0423,
];

/// The t quantile of a two-sided 95 % interval with `df` degrees of freedom: a table up to 30,
/// [`Z95`] beyond (within 4 % of t there); infinite for 0 (no interval).
pub fn t95(df: usize) -> f64 {
    match df {
        0 => f64::INFINITY,
        1..=30 => T95[df - 1],
        _ => Z95,
    }
}

/// A CS/s estimate: the mean of the per-trial rates and, from two trials on, its 95 % interval.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RateInterval {
    /// Critical sections per second: the mean of the trials' rates, or the case's pooled rate when
    /// fewer than two trials have one.
    pub mean: f64,
    /// Trials the estimate rests on (1 for a single run).
    pub n: usize,
    /// The 95 % interval (low, high) of the mean, its low end no lower than 0; `None` with fewer than
    /// two trials.
    pub bounds: Option<(f64, f64)>,
}

impl RateInterval {
    /// The estimate of `rates` (critical sections per second of each trial): their mean with a
    /// Student-t 95 % interval, mean ± t(n−1) · s / √n; no interval for fewer than two; `None` when
    /// empty.
    ///
    /// Why t and not the normal z: a case has few trials (3 to 10), and with so few the sample
    /// standard deviation is itself uncertain; t widens the interval for that (4.30 · s / √3 at three
    /// trials, against 1.96 with z). It assumes the per-trial rates are roughly normal, which a rate
    /// counted over a window of hundreds of critical sections is. The interval is of the mean rate on
    /// this machine, under this run's conditions: the trials are interleaved with the other cases',
    /// so a drift of the machine falls on every case alike, but another machine or another day may
    /// give another mean.
    pub fn of_rates(rates: &[f64]) -> Option<RateInterval> {
        let n = rates.len();
        if n == 0 {
            return None;
        }
        let mean = rates.iter().sum::<f64>() / n as f64;
        if n < 2 {
            return Some(RateInterval {
                mean,
                n,
                bounds: None,
            });
        }
        let variance = rates.iter().map(|r| (r - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
        let half = t95(n - 1) * (variance / n as f64).sqrt();
        Some(RateInterval {
            mean,
            n,
            // A rate is never negative: a low end below 0 says only that.
            bounds: Some(((mean - half).max(0.0), mean + half)),
        })
    }

    /// The estimate of `case`: from its trials' rates ([`trial_rates`]) when at least two have one,
    /// else its pooled rate with no interval.
    pub fn of_case(case: &CaseResult) -> RateInterval {
        let rates = trial_rates(case);
        match RateInterval::of_rates(&rates) {
            Some(estimate) if estimate.n >= 2 => estimate,
            _ => RateInterval {
                mean: case.throughput.completed_per_s,
                n: rates.len().max(1),
                bounds: None,
            },
        }
    }

    /// Whether the two intervals have no point in common; false when either has none.
    pub fn apart(&self, other: &RateInterval) -> bool {
        match (self.bounds, other.bounds) {
            (Some(a), Some(b)) => a.1 < b.0 || b.1 < a.0,
            _ => false,
        }
    }
}

/// Critical sections per second of each trial of `case` that had a measured window: its completed
/// count over its own window (`measured_ms`), or, in files written before trials recorded their
/// windows, over an equal share of the case's pooled window. Empty without trials.
pub fn trial_rates(case: &CaseResult) -> Vec<f64> {
    let Some(trials) = &case.trials else {
        return Vec::new();
    };
    let share = case.window.measured_ms / trials.each.len().max(1) as f64;
    trials
        .each
        .iter()
        .filter_map(|t| {
            let window = t.measured_ms.unwrap_or(share);
            (window > 0.0).then(|| t.completed as f64 / window * 1e3)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 0.01
    }

    #[test]
    fn three_trials_take_t_with_two_degrees_of_freedom() {
        // Mean 12, sample sd 2, t(2) = 4.303: 12 ± 4.303 · 2 / √3 = 12 ± 4.97.
        let e = RateInterval::of_rates(&[10.0, 12.0, 14.0]).expect("an estimate");
        assert_eq!((e.mean, e.n), (12.0, 3));
        let (low, high) = e.bounds.expect("an interval");
        assert!(close(low, 7.03) && close(high, 16.97), "{low} {high}");
        // Two trials: t(1) = 12.706, sd √2, 11 ± 12.706 · √2 / √2, and a rate is never below 0.
        let (low, high) = RateInterval::of_rates(&[10.0, 12.0])
            .and_then(|e| e.bounds)
            .expect("an interval");
        assert!(low == 0.0 && close(high, 11.0 + 12.706), "{low} {high}");
        let (low, _) = RateInterval::of_rates(&[100.0, 102.0])
            .and_then(|e| e.bounds)
            .expect("an interval");
        assert!(close(low, 101.0 - 12.706), "{low}");
        // Agreeing trials: no spread, a point.
        let e = RateInterval::of_rates(&[5.0; 4]).expect("an estimate");
        assert_eq!(e.bounds, Some((5.0, 5.0)));
    }

    #[test]
    fn one_trial_or_none_gives_no_interval() {
        assert_eq!(RateInterval::of_rates(&[]), None);
        let e = RateInterval::of_rates(&[770.0]).expect("an estimate");
        assert_eq!((e.mean, e.n, e.bounds), (770.0, 1, None));
    }

    #[test]
    fn t_falls_to_z_beyond_its_table() {
        assert!(close(t95(2), 4.303));
        assert!(close(t95(30), 2.042));
        assert_eq!(t95(31), Z95);
        assert!(t95(0).is_infinite());
        // The table falls as the degrees of freedom grow.
        assert!((1..30).all(|df| t95(df) > t95(df + 1)));
    }

    /// The fixture's baseline redis-watchdog case (734 CS/s over 1 s, no trials).
    fn case() -> CaseResult {
        let c = crate::comparison::Comparison::read(include_str!(
            "../tests/fixtures/compare-quick.json"
        ))
        .expect("fixture");
        c.runs[0].results.cases[1].clone()
    }

    fn with_trials(mut case: CaseResult, each: &[(u64, Option<f64>)]) -> CaseResult {
        use crate::model::{Trial, Trials, Verdict};
        case.trials = Some(Trials {
            runs: each.len() as u32,
            violated: 0,
            rate_low: None,
            rate_high: None,
            stopped_early: false,
            fault_not_applied: 0,
            unknown: 0,
            stopped_by: None,
            each: each
                .iter()
                .enumerate()
                .map(|(i, &(completed, measured_ms))| Trial {
                    seed: i as u64,
                    verdict: Verdict::Safe,
                    reasons: Vec::new(),
                    completed,
                    measured_ms,
                })
                .collect(),
        });
        case
    }

    #[test]
    fn a_case_rests_on_its_trials_own_windows_else_an_equal_share() {
        // Each trial over its own window: 100 in 0.5 s, 240 in 1 s, 70 in 0.25 s.
        let c = with_trials(
            case(),
            &[(100, Some(500.0)), (240, Some(1000.0)), (70, Some(250.0))],
        );
        assert_eq!(trial_rates(&c), [200.0, 240.0, 280.0]);
        let e = RateInterval::of_case(&c);
        assert_eq!((e.mean, e.n), (240.0, 3));
        let (low, high) = e.bounds.expect("an interval");
        // sd 40: 240 ± 4.3027 · 40 / √3.
        assert!(
            close(high - 240.0, 99.37) && close(240.0 - low, 99.37),
            "{low} {high}"
        );
        // An older file: the pooled window (1 s here) shared out equally.
        let c = with_trials(case(), &[(200, None), (240, None), (280, None), (0, None)]);
        assert_eq!(trial_rates(&c), [800.0, 960.0, 1120.0, 0.0]);
        // A trial with an empty window has no rate.
        let c = with_trials(case(), &[(200, Some(0.0)), (240, Some(1000.0))]);
        let e = RateInterval::of_case(&c);
        assert_eq!((e.mean, e.n, e.bounds), (734.0, 1, None), "the pooled rate");
        // No trials: the pooled rate, one run.
        let e = RateInterval::of_case(&case());
        assert_eq!((e.mean, e.n, e.bounds), (734.0, 1, None));
    }

    #[test]
    fn intervals_apart_only_when_they_share_no_point() {
        let at = |low, high| RateInterval {
            mean: (low + high) / 2.0,
            n: 3,
            bounds: Some((low, high)),
        };
        assert!(at(1.0, 2.0).apart(&at(3.0, 4.0)));
        assert!(at(3.0, 4.0).apart(&at(1.0, 2.0)));
        assert!(!at(1.0, 3.0).apart(&at(2.0, 4.0)));
        let single = RateInterval {
            mean: 10.0,
            n: 1,
            bounds: None,
        };
        assert!(!single.apart(&at(1.0, 2.0)));
    }
}
