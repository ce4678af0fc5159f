//! The terminal summary of a results file: one row per case with throughput, latency, renewal and the
//! three safety measures, then one line per skipped or failed case. Figures are formatted as the
//! reports format them ([`lockbench_reports::format`]), so terminal and report agree.

use std::fmt::Write as _;

use crate::base::verbosity;
use lockbench_reports::format::ms;
use lockbench_reports::grid::{data_words, verdict_word};
use lockbench_reports::model::{CaseResult, Results, Verdict};

const HEADERS: [&str; 16] = [
    "strategy",
    "lease",
    "status",
    "CS/s",
    "acq p50",
    "acq p99",
    "handoff",
    "hold p50",
    "renew/s",
    "margin min",
    "overlaps",
    "lost upd",
    "stale rej/acc",
    "late lost",
    "errors",
    "verdict",
];

fn row(case: &CaseResult) -> [String; 16] {
    let s = &case.safety;
    let errors: u64 = case.operations.acquire_errors.values().sum::<u64>()
        + case.operations.release_errors.values().sum::<u64>();
    let stale = match (s.fencing.stale_rejected, s.fencing.stale_accepted) {
        (Some(r), Some(a)) => format!("{r}/{a}"),
        _ => "n/a".to_owned(),
    };
    let status = format!("{:?}", case.status).to_lowercase();
    let word = match s.verdict {
        Verdict::Unknown if s.no_verdict.is_none() && case.fault_not_applied.is_none() => "-",
        _ => verdict_word(Some(case)),
    };
    // The verdict says how many trials it rests on ("VIOLATED 1/3", or "VIOLATED at trial 1" when
    // the trials stopped there) and what became of the data ("· data harmed").
    let mut verdict = match &case.trials {
        Some(t) if s.verdict != Verdict::Unknown && t.stopped_early => {
            format!("{word} at trial {}", t.ran())
        }
        Some(t) if s.verdict != Verdict::Unknown => format!("{word} {}/{}", t.violated, t.runs),
        _ => word.to_owned(),
    };
    if let Some(data) = data_words(case) {
        verdict = format!("{verdict} · {data}");
    }
    [
        case.strategy.clone(),
        case.lease.clone(),
        status,
        format!("{:.1}", case.throughput.completed_per_s),
        ms(case.latency.acquire.p50_ms),
        ms(case.latency.acquire.p99_ms),
        ms(case.latency.handoff.p50_ms),
        ms(case.latency.hold.p50_ms),
        format!("{:.1}", case.renewal.renewals_per_s),
        ms(case.renewal.margin.min_ms),
        format!("{} ({} ms)", s.overlap.pairs, ms(Some(s.overlap.total_ms))),
        s.lost_updates.lost.to_string(),
        stale,
        format!("{}/{}", s.lost_signal.too_late, s.lost_signal.fired),
        errors.to_string(),
        verdict,
    ]
}

/// Aligned columns two spaces apart, the first `left` left-aligned and the rest right-aligned: a line
/// of `headers`, then one line per row.
pub(crate) fn grid<R: AsRef<[String]>>(headers: &[&str], rows: &[R], left: usize) -> String {
    let mut widths: Vec<usize> = headers.iter().map(|h| h.chars().count()).collect();
    for row in rows {
        for (w, cell) in widths.iter_mut().zip(row.as_ref()) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let header: Vec<String> = headers.iter().map(|h| (*h).to_owned()).collect();
    let mut out = String::new();
    for cells in std::iter::once(header.as_slice()).chain(rows.iter().map(AsRef::as_ref)) {
        let mut text = String::new();
        for (i, (cell, &w)) in cells.iter().zip(&widths).enumerate() {
            if i > 0 {
                text.push_str("  ");
            }
            if i < left {
                let _ = write!(text, "{cell:<w$}");
            } else {
                let _ = write!(text, "{cell:>w$}");
            }
        }
        out.push_str(text.trim_end());
        out.push('\n');
    }
    out
}

/// The table, ready to print (latencies in ms).
pub(crate) fn render(results: &Results) -> String {
    let rows: Vec<[String; 16]> = results.cases.iter().map(row).collect();
    let mut out = grid(&HEADERS, &rows, 3);
    for case in &results.cases {
        if let Some(error) = &case.error {
            let _ = writeln!(out, "{} {}: {error}", case.strategy, case.lease);
        }
        if let Some(why) = &case.fault_not_applied {
            let _ = writeln!(out, "{} {}: no verdict, {why}", case.strategy, case.lease);
        }
        if case.driver.cycles > 0 && verbosity::verbose() {
            let _ = writeln!(
                out,
                "{} {}: driver overhead {:.0} ns/cycle (cycle {:.0} ns, in strategy {:.0} ns, {} cycles)",
                case.strategy,
                case.lease,
                case.driver.overhead_ns,
                case.driver.cycle_ns,
                case.driver.strategy_ns,
                case.driver.cycles
            );
        }
        if let Some(o) = &case.orphans {
            let times: Vec<String> = o.unavailable_ms.iter().map(|t| format!("{t:.0}")).collect();
            let _ = writeln!(
                out,
                "{} {}: {} orphaned hold(s), lock unavailable {} ms after the task ended ({} still at the end)",
                case.strategy,
                case.lease,
                o.holds,
                times.join(", "),
                o.capped
            );
        }
        if let Some(r) = &case.renew_after_unlock {
            let _ = writeln!(
                out,
                "{} {}: server saw {} renew calls, {} on released keys, {} releases (MONITOR)",
                case.strategy, case.lease, r.renew_calls, r.on_released_keys, r.releases
            );
        }
    }
    let _ = writeln!(
        out,
        "latencies in ms; overlaps = pairs (total time); stale = rejected/accepted; late lost = too late/fired"
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_verdict_says_how_many_trials_it_rests_on() {
        let fixture = include_str!("../../../reports/tests/fixtures/run-redis-watchdog.json");
        let mut results: Results = serde_json::from_str(fixture).expect("the fixture parses");
        let case = &mut results.cases[0];
        case.safety.verdict = Verdict::Violated;
        case.trials = Some(lockbench_reports::model::Trials {
            runs: 3,
            violated: 1,
            rate_low: Some(0.06),
            rate_high: Some(0.79),
            stopped_early: false,
            fault_not_applied: 0,
            unknown: 0,
            each: Vec::new(),
            stopped_by: None,
        });
        assert!(
            render(&results).contains("VIOLATED 1/3"),
            "{}",
            render(&results)
        );
    }

    #[test]
    fn a_violated_verdict_says_whether_the_data_came_through() {
        let fixture = include_str!("../../../reports/tests/fixtures/run-redis-watchdog.json");
        let mut results: Results = serde_json::from_str(fixture).expect("the fixture parses");
        results.cases.truncate(1);
        let s = &mut results.cases[0].safety;
        s.verdict = Verdict::Violated;
        s.fencing.enforced = true;
        s.fencing.stale_rejected = Some(1);
        s.fencing.stale_accepted = Some(0);
        s.lost_updates.lost = 0;
        s.data = Some(lockbench_reports::model::DataState::Intact);
        let text = render(&results);
        assert!(text.contains("VIOLATED · data intact (fenced)"), "{text}");
        let s = &mut results.cases[0].safety;
        s.lost_updates.lost = 2;
        s.data = None; // as an older file: read off the counts
        let text = render(&results);
        assert!(text.contains("VIOLATED · data harmed"), "{text}");
        results.cases[0].safety.verdict = Verdict::Unknown;
        results.cases[0].fault_not_applied = Some("fault not applied: pause_worker: gone".into());
        let text = render(&results);
        assert!(text.contains("no verdict, fault not applied"), "{text}");
        assert!(!text.contains("safe"), "{text}");
    }

    #[test]
    fn formats_milliseconds() {
        assert_eq!(ms(None), "-");
        assert_eq!(ms(Some(0.0456)), "0.046");
        assert_eq!(ms(Some(52.25)), "52.2");
        assert_eq!(ms(Some(4200.4)), "4200");
    }
}
