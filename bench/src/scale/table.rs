//! The terminal view of a scale run: one row per (strategy, step), where strategies stopped and why, and
//! the DESIGN §8 checks a scale run answers.

use std::fmt::Write as _;

use lockbench_reports::scale::ScaleResults;

use crate::measure::{Bound, Check, render_checks};
use crate::table::grid;

const HEADERS: [&str; 15] = [
    "strategy",
    "held",
    "held end",
    "fill s",
    "calls/s",
    "bound/s",
    "renew/s",
    "srv CPU ms/s",
    "srv cmd ms/s",
    "client CPU %",
    "RSS MiB",
    "threads",
    "failed",
    "lost",
    "margin ms",
];

fn opt(value: Option<f64>, decimals: usize) -> String {
    value.map_or_else(|| "-".to_owned(), |v| format!("{v:.decimals$}"))
}

/// The table of a scale run, then where strategies stopped, then the DESIGN §8 checks.
pub fn render(results: &ScaleResults) -> String {
    let mut rows: Vec<[String; 15]> = Vec::new();
    for series in &results.strategies {
        for p in &series.points {
            rows.push([
                series.strategy.clone(),
                p.held_locks.to_string(),
                p.held_at_end.to_string(),
                format!("{:.1}", p.fill_ms / 1e3),
                opt(p.renew_calls_per_s, 1),
                opt(p.renew_calls_bound_per_s, 1),
                format!("{:.0}", p.renewals_per_s),
                opt(p.server_cpu_ms_per_s, 1),
                opt(p.server_command_ms_per_s, 1),
                format!("{:.2}", p.client_cpu_percent),
                format!("{:.1}", p.client_rss_bytes as f64 / f64::from(1 << 20)),
                p.client_threads.to_string(),
                p.renew_failures.to_string(),
                p.lost.to_string(),
                opt(p.thinnest_margin_ms, 0),
            ]);
        }
    }
    let mut out = grid(&HEADERS, &rows, 1);
    for series in &results.strategies {
        if let Some(stop) = &series.stopped {
            let _ = writeln!(
                out,
                "{}: stopped at {} held (filling step {}): {}",
                series.strategy, stop.held, stop.step, stop.reason
            );
        }
    }
    let s = &results.settings;
    let _ = writeln!(
        out,
        "watchdog timeout {} ms, renewal every {} ms, {} ms window per step. calls/s: renew requests the \
         server received (Redis EVALSHA, etcd LeaseKeepAlive, ZooKeeper packets); bound/s: held ÷ period ÷ \
         locks per call; renew/s: per-lock renewals; failed, lost: since the step began filling; margin: the \
         least TTL a renewal in the window found left.",
        s.watchdog_timeout_ms, s.renew_period_ms, s.hold_ms
    );
    let checks = checks(results);
    if !checks.is_empty() {
        out.push_str(&render_checks("targets (DESIGN §8)", &checks));
    }
    out
}

/// The DESIGN §8 checks a scale run answers: the batched watchdog's renew calls against held ÷ period ÷
/// batch size at every step, its thinnest renewal margin against ⅔ of the TTL, and its client CPU per 100k
/// held locks at 100k or more: at most 10% of a core with a 3 s timeout, scaled by 3 s ÷ timeout for
/// longer ones (1% at 30 s), so a million locks at 30 s may take 10% (cost grows with the locks due,
/// never faster).
pub fn checks(results: &ScaleResults) -> Vec<Check> {
    let mut checks = Vec::new();
    let batched = results
        .strategies
        .iter()
        .filter(|s| s.strategy == lockers::redis::watchdog::BATCHED_ID);
    for series in batched {
        for p in &series.points {
            if let (Some(calls), Some(bound)) = (p.renew_calls_per_s, p.renew_calls_bound_per_s) {
                // A window holds length ÷ period ticks of calls, give or take the tick at an edge.
                let edge = results.settings.renew_period_ms / p.window_ms.max(1.0);
                checks.push(Check {
                    what: format!("{} renew calls/s at {} held", series.strategy, p.held_locks),
                    value: calls,
                    baseline: bound,
                    unit: "/s",
                    target: Some(Bound::AtMost(1.0 + edge)),
                });
            }
            if let Some(margin) = p.thinnest_margin_ms {
                checks.push(Check {
                    what: format!(
                        "{} thinnest margin at {} held",
                        series.strategy, p.held_locks
                    ),
                    value: margin,
                    baseline: results.settings.watchdog_timeout_ms,
                    unit: "ms",
                    target: Some(Bound::AtLeast(2.0 / 3.0)),
                });
            }
            if p.held_locks >= 100_000 {
                let timeout_ms = results.settings.watchdog_timeout_ms.max(1.0);
                let per_100k = 100_000.0 / p.held_locks as f64;
                checks.push(Check {
                    what: format!(
                        "{} client CPU per 100k held at {} held",
                        series.strategy, p.held_locks
                    ),
                    value: p.client_cpu_percent * per_100k,
                    baseline: 100.0,
                    unit: "%",
                    target: Some(Bound::AtMost(0.10 * (3000.0 / timeout_ms).min(1.0))),
                });
            }
        }
    }
    checks
}

#[cfg(test)]
mod tests {
    use lockbench_reports::scale::{SCALE_SCHEMA_VERSION, ScalePoint, ScaleSeries, ScaleStop};

    use super::*;
    use crate::scale::ScaleOptions;

    fn point(held: u64, calls: f64, cpu: f64) -> ScalePoint {
        ScalePoint {
            held_locks: held,
            held_at_end: held,
            fill_ms: 100.0,
            window_ms: 10_000.0,
            renew_calls_per_s: Some(calls),
            renew_calls_bound_per_s: Some(held as f64 / 100.0),
            renewals_per_s: held as f64,
            renew_failures: 0,
            lost: 0,
            thinnest_margin_ms: None,
            server_cpu_ms_per_s: Some(3.0),
            server_command_ms_per_s: None,
            client_cpu_percent: cpu,
            client_rss_bytes: 32 << 20,
            client_threads: 4,
        }
    }

    #[test]
    fn rows_stops_and_checks() {
        let spec = ScaleOptions {
            in_process: true,
            ..ScaleOptions::default()
        }
        .spec()
        .unwrap_or_else(|e| panic!("{e}"));
        let results = ScaleResults {
            schema_version: SCALE_SCHEMA_VERSION,
            complete: true,
            started_at: String::new(),
            finished_at: String::new(),
            settings: spec.to_model(),
            environment: crate::environment::collect(Vec::new()),
            strategies: vec![
                ScaleSeries {
                    strategy: "redis-watchdog-batched".into(),
                    server: "redis".into(),
                    locks_per_renew_call: Some(100),
                    points: vec![point(1000, 10.0, 0.5), point(100_000, 1300.0, 25.0)],
                    stopped: None,
                },
                ScaleSeries {
                    strategy: "redis-guard-thread".into(),
                    server: "redis".into(),
                    locks_per_renew_call: Some(1),
                    points: vec![point(1000, 1000.0, 3.0)],
                    stopped: Some(ScaleStop {
                        held: 9_990,
                        step: 10_000,
                        reason: "thread cap 10000 reached".into(),
                    }),
                },
            ],
        };
        let table = render(&results);
        assert!(
            table.contains(
                "redis-guard-thread: stopped at 9990 held (filling step 10000): thread cap"
            ),
            "{table}"
        );
        let checks = checks(&results);
        // Batched only: calls at both steps, CPU at 100k.
        assert_eq!(checks.len(), 3, "{checks:?}");
        assert_eq!(checks[0].met(), Some(true));
        assert_eq!(
            checks[1].met(),
            Some(false),
            "1300 calls/s against a bound of 1000"
        );
        assert_eq!(checks[2].met(), Some(false), "25% of a core");
        assert!(table.contains("MISSED"), "{table}");
    }
}
