//! Changes against an earlier results file (`--baseline OLD.json`): cases are matched by scenario,
//! lease mode and strategy; each match gives the throughput, acquire p50/p99 and violation changes.

use crate::comparison::Comparison;
use crate::grid::{Grid, Violations, ran, verdict_word};
use crate::model::CaseResult;

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
