//! Changes against an earlier results file (`--baseline OLD.json`): cases are matched by scenario,
//! lease mode and strategy; each match gives the throughput, acquire p50/p99 and violation changes.
//!
//! A match *changed* when its verdict changed or its throughput moved by more than the noise: the
//! larger relative spread (max − min over mean) of the two cases' per-trial critical-section counts,
//! and never less than [`NOISE_FLOOR_PCT`] (a single run shows no spread). A *new violation* is a
//! match that was not violated before and is now; a *regression* is a new violation or a throughput
//! drop beyond the noise. These are what `lockbench report --fail-on` gates on.

use crate::comparison::Comparison;
use crate::format::change_pct;
use crate::grid::{Grid, Violations, ran, verdict_word};
use crate::model::{CaseResult, Verdict};

/// The least relative throughput change counted as beyond noise, in percent: the reports' tie rule
/// ([`crate::rules::TIE_PCT`]), for cases whose trials show a smaller spread or none.
pub const NOISE_FLOOR_PCT: f64 = crate::rules::TIE_PCT;

/// One matched case: old and new figures.
#[derive(Debug, Clone, PartialEq)]
pub struct CaseDelta {
    /// The row label (scenario, lease).
    pub row: String,
    /// Strategy id.
    pub strategy: String,
    /// Throughput, old and new (CS/s).
    pub throughput: (f64, f64),
    /// Acquire p50, old and new (ms).
    pub acquire_p50: (Option<f64>, Option<f64>),
    /// Acquire p99, old and new (ms).
    pub acquire_p99: (Option<f64>, Option<f64>),
    /// Violations, old and new.
    pub violations: (Violations, Violations),
    /// Verdict words, old and new.
    pub verdict: (&'static str, &'static str),
    /// Whether the case was violated, old and new.
    pub violated: (bool, bool),
    /// The throughput change, in percent, that counts as beyond noise for this case.
    pub noise_pct: f64,
}

impl CaseDelta {
    /// The throughput change in percent (`None` when the old figure is 0).
    pub fn throughput_change_pct(&self) -> Option<f64> {
        change_pct(Some(self.throughput.0), Some(self.throughput.1))
    }

    /// Whether throughput moved by more than the noise (from 0 to anything counts).
    fn throughput_moved(&self) -> bool {
        match self.throughput_change_pct() {
            Some(pct) => pct.abs() > self.noise_pct,
            None => self.throughput.1 > 0.0,
        }
    }

    /// Whether the case changed beyond noise: another verdict, or throughput moved by more than the
    /// noise.
    pub fn changed(&self) -> bool {
        self.verdict.0 != self.verdict.1 || self.throughput_moved()
    }

    /// Whether it was not violated before and is now.
    pub fn new_violation(&self) -> bool {
        !self.violated.0 && self.violated.1
    }

    /// Whether it got worse: a new violation, or throughput dropped by more than the noise.
    pub fn regression(&self) -> bool {
        self.new_violation() || (self.throughput_moved() && self.throughput.1 < self.throughput.0)
    }
}

/// The relative spread of a case's trials, in percent: (max − min) / mean of the critical sections
/// each trial completed (their measured windows are equally long); 0 for a single run.
pub fn trial_spread_pct(case: &CaseResult) -> f64 {
    let Some(trials) = &case.trials else {
        return 0.0;
    };
    let counts: Vec<f64> = trials.each.iter().map(|t| t.completed as f64).collect();
    if counts.len() < 2 {
        return 0.0;
    }
    let mean = counts.iter().sum::<f64>() / counts.len() as f64;
    let max = counts.iter().copied().fold(f64::MIN, f64::max);
    let min = counts.iter().copied().fold(f64::MAX, f64::min);
    if mean > 0.0 {
        (max - min) / mean * 100.0
    } else {
        0.0
    }
}

/// Every difference between two comparisons.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Deltas {
    /// Cases both files measured, in the new file's order.
    pub matched: Vec<CaseDelta>,
    /// `row strategy` of cases only the new file has.
    pub only_new: Vec<String>,
    /// `row strategy` of cases only the old file has.
    pub only_old: Vec<String>,
}

impl Deltas {
    /// The matches that changed beyond noise, in order.
    pub fn changed(&self) -> impl Iterator<Item = &CaseDelta> {
        self.matched.iter().filter(|d| d.changed())
    }

    /// How many matches are new violations.
    pub fn new_violations(&self) -> usize {
        self.matched.iter().filter(|d| d.new_violation()).count()
    }

    /// How many matches regressed.
    pub fn regressions(&self) -> usize {
        self.matched.iter().filter(|d| d.regression()).count()
    }

    /// One line: `3 of 145 cases changed beyond noise (2 slower); 1 new violation`.
    pub fn summary(&self) -> String {
        let changed = self.changed().count();
        let slower = self
            .changed()
            .filter(|d| d.regression() && !d.new_violation())
            .count();
        let new = self.new_violations();
        format!(
            "{changed} of {} case{} changed beyond noise{}; {new} new violation{}",
            self.matched.len(),
            if self.matched.len() == 1 { "" } else { "s" },
            if slower > 0 {
                format!(" ({slower} slower)")
            } else {
                String::new()
            },
            if new == 1 { "" } else { "s" },
        )
    }
}

fn key(scenario: &str, case: &CaseResult) -> (String, String, String) {
    (
        scenario.to_owned(),
        case.lease.clone(),
        case.strategy.clone(),
    )
}

/// The changes from `old` to `new`.
pub fn compare(old: &Comparison, new: &Comparison) -> Deltas {
    let old_grid = Grid::new(old);
    let new_grid = Grid::new(new);
    let old_cases: Vec<((String, String, String), &CaseResult)> = old_grid
        .cases()
        .filter(|(_, c)| ran(c))
        .map(|(row, c)| (key(row.scenario(), c), c))
        .collect();
    let mut deltas = Deltas::default();
    let mut seen = Vec::new();
    for (row, case) in new_grid.cases().filter(|(_, c)| ran(c)) {
        let k = key(row.scenario(), case);
        let name = format!("{} {}", row.label, case.strategy);
        match old_cases.iter().find(|(ok, _)| *ok == k) {
            Some((_, before)) => deltas.matched.push(CaseDelta {
                row: row.label.clone(),
                strategy: case.strategy.clone(),
                throughput: (
                    before.throughput.completed_per_s,
                    case.throughput.completed_per_s,
                ),
                acquire_p50: (before.latency.acquire.p50_ms, case.latency.acquire.p50_ms),
                acquire_p99: (before.latency.acquire.p99_ms, case.latency.acquire.p99_ms),
                violations: (Violations::of(before), Violations::of(case)),
                verdict: (verdict_word(Some(before)), verdict_word(Some(case))),
                violated: (
                    before.safety.verdict == Verdict::Violated,
                    case.safety.verdict == Verdict::Violated,
                ),
                noise_pct: NOISE_FLOOR_PCT
                    .max(trial_spread_pct(before))
                    .max(trial_spread_pct(case)),
            }),
            None => deltas.only_new.push(name),
        }
        seen.push(k);
    }
    for (row, case) in old_grid.cases().filter(|(_, c)| ran(c)) {
        if !seen.contains(&key(row.scenario(), case)) {
            deltas
                .only_old
                .push(format!("{} {}", row.label, case.strategy));
        }
    }
    deltas
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Trial, Trials};

    fn delta(throughput: (f64, f64), violated: (bool, bool), noise_pct: f64) -> CaseDelta {
        let word = |v: bool| if v { "VIOLATED" } else { "safe" };
        let none = Violations {
            overlaps: 0,
            overlap_ms: 0.0,
            lost_updates: 0,
            stale_accepted: None,
        };
        CaseDelta {
            row: "baseline".into(),
            strategy: "memory".into(),
            throughput,
            acquire_p50: (None, None),
            acquire_p99: (None, None),
            violations: (none, none),
            verdict: (word(violated.0), word(violated.1)),
            violated,
            noise_pct,
        }
    }

    #[test]
    fn changes_within_noise_are_not_changes() {
        let same = delta((100.0, 108.0), (false, false), 10.0);
        assert!(!same.changed() && !same.regression());
        let noisy = delta((100.0, 70.0), (false, false), 40.0);
        assert!(!noisy.changed(), "a 30 % drop inside a 40 % trial spread");
        let slower = delta((100.0, 85.0), (false, false), 10.0);
        assert!(slower.changed() && slower.regression() && !slower.new_violation());
        let faster = delta((100.0, 130.0), (false, false), 10.0);
        assert!(faster.changed() && !faster.regression());
        let broke = delta((100.0, 100.0), (false, true), 10.0);
        assert!(broke.changed() && broke.regression() && broke.new_violation());
        let mended = delta((100.0, 100.0), (true, false), 10.0);
        assert!(mended.changed() && !mended.regression());
        let deltas = Deltas {
            matched: vec![same, slower, faster, broke, mended],
            ..Deltas::default()
        };
        assert_eq!(
            deltas.summary(),
            "4 of 5 cases changed beyond noise (1 slower); 1 new violation"
        );
        assert_eq!(deltas.regressions(), 2);
    }

    #[test]
    fn the_spread_comes_from_the_trials() {
        let fixture = include_str!("../tests/fixtures/run-redis-watchdog.json");
        let mut case = crate::model::Results::from_json(fixture)
            .expect("fixture")
            .cases
            .remove(0);
        assert_eq!(trial_spread_pct(&case), 0.0, "a single run has no spread");
        let trial = |completed| Trial {
            seed: 1,
            verdict: Verdict::Safe,
            reasons: Vec::new(),
            completed,
            measured_ms: None,
        };
        case.trials = Some(Trials {
            runs: 3,
            violated: 0,
            rate_low: Some(0.0),
            rate_high: Some(0.7),
            stopped_early: false,
            fault_not_applied: 0,
            unknown: 0,
            stopped_by: None,
            each: vec![trial(795), trial(761), trial(745)],
        });
        let spread = trial_spread_pct(&case);
        assert!((spread - 50.0 / 767.0 * 100.0).abs() < 1e-9, "{spread}");
    }
}
