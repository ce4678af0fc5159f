//! The terminal view of a scale run: one row per (strategy, step) of the first pass, where strategies
//! stopped and why, with several passes what each strategy's passes came to (the report's many-locks
//! cell), and the docs/design.md §8 checks a scale run answers.

use std::fmt::Write as _;

use lockbench_reports::format::{self, fixed};
use lockbench_reports::many_locks;
use lockbench_reports::scale::{ScalePoint, ScaleResults};
use lockbench_reports::scale_pairs;

use crate::base::measure::{Bound, Check, render_checks};
use crate::base::table::grid;
use crate::strategies;

const HEADERS: [&str; 17] = [
    "strategy",
    "held",
    "held end",
    "srv held",
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
    "p0.1 ms",
];

/// The table of a scale run (its first pass), then where strategies stopped, what every strategy's
/// passes came to when there were several, then the docs/design.md §8 checks.
pub fn render(results: &ScaleResults) -> String {
    let mut rows: Vec<[String; 17]> = Vec::new();
    for series in &results.strategies {
        let name = if series.in_adapter_process {
            format!("{}†", series.strategy)
        } else {
            series.strategy.clone()
        };
        for p in &series.points {
            rows.push([
                name.clone(),
                p.held_locks.to_string(),
                p.held_at_end.to_string(),
                p.server_held
                    .map_or_else(|| "-".to_owned(), |n| n.to_string()),
                format!("{:.1}", p.fill_ms / 1e3),
                fixed(p.renew_calls_per_s, 1),
                fixed(p.renew_calls_bound_per_s, 1),
                format!("{:.0}", p.renewals_per_s),
                fixed(p.server_cpu_ms_per_s, 1),
                fixed(p.server_command_ms_per_s, 1),
                format!("{:.2}", p.client_cpu_percent),
                format!("{:.1}", p.client_rss_bytes as f64 / f64::from(1 << 20)),
                p.client_threads.to_string(),
                p.renew_failures.to_string(),
                p.lost.to_string(),
                fixed(p.thinnest_margin_ms, 0),
                fixed(p.margin_p0_1_ms, 0),
            ]);
        }
    }
    let mut out = grid(&HEADERS, &rows, 1);
    for series in &results.strategies {
        if let Some(stop) = &series.stopped {
            let _ = writeln!(out, "{}: {}", series.strategy, stop.describe(&stop.reason));
        }
    }
    if results.settings.passes > 1 {
        let _ = writeln!(
            out,
            "over {} passes (the rows above are the first; a loss is flagged when it repeats):",
            results.settings.passes
        );
        for series in &results.strategies {
            let cell = many_locks::of_passes(&series.cost_series().passes());
            let _ = writeln!(out, "  {}: {}", series.strategy, cell.text);
        }
    }
    for line in per_renewal(results) {
        let _ = writeln!(out, "{line}");
    }
    let s = &results.settings;
    let _ = writeln!(
        out,
        "watchdog timeout {} ms, renewal every {} ms, {} ms window per step. srv held: locks the server \
         itself held at the end (keys, ephemeral nodes, advisory locks, lease rows); calls/s: renew requests the \
         server received (Redis EVALSHA, etcd LeaseKeepAlive, ZooKeeper packets, PostgreSQL UPDATEs); bound/s: held ÷ period ÷ \
         locks per call (a library: its model's); renew/s: per-lock renewals the client reported (a library \
         reports none); failed, lost: since the step began filling; margin: the \
         least TTL a renewal in the window found left, p0.1: the 0.1th percentile of those TTLs. †: a real \
         library, whose client CPU, RSS and threads are its adapter process's. Every row first cycled \
         acquire and release for {} ms, unmeasured (the warm-up a JVM library needs). {}: the \
         batched calls sent on the same schedule and connection type without lockers code, the yardstick \
         of the client-CPU target.",
        s.watchdog_timeout_ms,
        s.renew_period_ms,
        s.hold_ms,
        s.warm_up_ms.unwrap_or(0.0),
        super::RAW_SENDER
    );
    let pairs = scale_pairs::render_markdown(std::slice::from_ref(results));
    if !pairs.is_empty() {
        out.push_str("\nlockbench's rows beside the libraries:\n\n");
        out.push_str(&pairs);
    }
    let checks = checks(results);
    if !checks.is_empty() {
        out.push_str(&render_checks("targets (docs/design.md §8)", &checks));
    }
    out
}

/// Whether every lock of a step was still held and renewed without a failure.
fn healthy(p: &ScalePoint) -> bool {
    p.renew_failures == 0 && p.lost == 0 && p.held_at_end == p.held_locks
}

/// Per strategy, what one renewal cost at its largest healthy step (client CPU and server CPU per
/// renewal, client memory per lock) and, where a later step was not healthy or the strategy stopped,
/// where it collapsed and the load at which it did: the reason per-lock timers stop scaling.
fn per_renewal(results: &ScaleResults) -> Vec<String> {
    let mut lines = Vec::new();
    for series in &results.strategies {
        let Some(good) = series.points.iter().rev().find(|p| healthy(p)) else {
            continue;
        };
        if good.renewals_per_s == 0.0 {
            // A library that reports no renewals: its cost per renewal owed is in the pairs.
            continue;
        }
        let renewals = good.renewals_per_s.max(1e-9);
        let client_us = client_us_per_renewal(good);
        let server = good
            .server_cpu_ms_per_s
            .map(|ms| format!(", {} µs of server CPU", format::figure(ms * 1e3 / renewals)))
            .unwrap_or_default();
        let mut line = format!(
            "{}: at {} held, {:.0} renewals/s cost {} µs of client CPU each{server}; {:.0} bytes of client memory per lock",
            series.strategy,
            good.held_locks,
            good.renewals_per_s,
            format::figure(client_us),
            good.client_rss_bytes as f64 / good.held_locks.max(1) as f64
        );
        let broke = series
            .points
            .iter()
            .find(|p| p.held_locks > good.held_locks && !healthy(p));
        if let Some(bad) = broke {
            let _ = write!(
                line,
                "; collapsed by {} held ({} renewals failed, {} leases lost, {} still held): the client then used {:.0} % of a core and the server {} ms/s",
                bad.held_locks,
                bad.renew_failures,
                bad.lost,
                bad.held_at_end,
                bad.client_cpu_percent,
                fixed(bad.server_cpu_ms_per_s, 0)
            );
        } else if let Some(stop) = &series.stopped {
            let _ = write!(line, "; stopped at {} held: {}", stop.held, stop.reason);
        }
        lines.push(line);
    }
    lines
}

/// Client CPU per renewal at `p`, µs.
fn client_us_per_renewal(p: &ScalePoint) -> f64 {
    p.client_cpu_percent / 100.0 * 1e6 / p.renewals_per_s.max(1e-9)
}

/// The docs/design.md §8 checks a scale run answers: the batched watchdog's renew calls against held ÷ period ÷
/// batch size at every step, its thinnest renewal margin against ⅔ of the TTL (and, for information, the
/// margins' 0.1th percentile), and at 100k held or more its client CPU against the raw sender's in the
/// same run (at most 1.2 times; with client CPU per renewal beside it). Without a raw sender the old
/// absolute target stands: per 100k held locks at most 10% of a core with a 3 s timeout, scaled by
/// 3 s ÷ timeout for longer ones (1% at 30 s); with one, that figure is shown without a target.
pub fn checks(results: &ScaleResults) -> Vec<Check> {
    let mut checks = Vec::new();
    let raw = results
        .strategies
        .iter()
        .find(|s| s.strategy == super::RAW_SENDER);
    // The strategies the raw sender stands beside (the batched watchdog).
    let batched = results
        .strategies
        .iter()
        .filter(|s| strategies::find(&s.strategy).is_some_and(|strategy| strategy.facts.yardstick));
    for series in batched {
        for p in &series.points {
            let at = |what: &str| format!("{} {what} at {} held", series.strategy, p.held_locks);
            if let (Some(calls), Some(bound)) = (p.renew_calls_per_s, p.renew_calls_bound_per_s) {
                // A window holds length ÷ period ticks of calls, give or take the tick at an edge.
                let edge = results.settings.renew_period_ms / p.window_ms.max(1.0);
                checks.push(Check {
                    what: at("renew calls/s"),
                    value: calls,
                    baseline: bound,
                    unit: "/s",
                    target: Some(Bound::AtMost(1.0 + edge)),
                });
            }
            let ttl = results.settings.watchdog_timeout_ms;
            if let Some(margin) = p.thinnest_margin_ms {
                checks.push(Check {
                    what: at("thinnest margin"),
                    value: margin,
                    baseline: ttl,
                    unit: "ms",
                    target: Some(Bound::AtLeast(2.0 / 3.0)),
                });
            }
            if let Some(margin) = p.margin_p0_1_ms {
                checks.push(Check {
                    what: at("margin p0.1"),
                    value: margin,
                    baseline: ttl,
                    unit: "ms",
                    target: None,
                });
            }
            if p.held_locks < 100_000 {
                continue;
            }
            let beside = raw.and_then(|r| r.points.iter().find(|q| q.held_locks == p.held_locks));
            if let Some(raw) = beside {
                checks.push(Check {
                    what: at("client CPU ÷ raw sender's"),
                    value: p.client_cpu_percent,
                    baseline: raw.client_cpu_percent,
                    unit: "%",
                    target: Some(Bound::AtMost(1.2)),
                });
                checks.push(Check {
                    what: at("client CPU per renewal ÷ raw's"),
                    value: client_us_per_renewal(p),
                    baseline: client_us_per_renewal(raw),
                    unit: "µs",
                    target: None,
                });
            }
            let timeout_ms = results.settings.watchdog_timeout_ms.max(1.0);
            let per_100k = 100_000.0 / p.held_locks as f64;
            checks.push(Check {
                what: at("client CPU per 100k held"),
                value: p.client_cpu_percent * per_100k,
                baseline: 100.0,
                unit: "%",
                target: beside
                    .is_none()
                    .then(|| Bound::AtMost(0.10 * (3000.0 / timeout_ms).min(1.0))),
            });
        }
    }
    checks.extend(library_checks(results));
    checks
}

/// The targets against the libraries (docs/design.md §8), at the largest step at which a library read
/// beside each of lockbench's rows kept every lock: client CPU per renewal owed at most half the best
/// such library's, and memory per held lock at most the best such library's. If lockbench's row lost
/// locks there, it did less work than the library: that is a check of its own, which fails.
fn library_checks(results: &ScaleResults) -> Vec<Check> {
    // A library that lost locks (by the server's count) did less work: it is no yardstick.
    let pairs: Vec<_> = scale_pairs::pairs(std::slice::from_ref(results))
        .into_iter()
        .filter(|pair| pair.kept(1))
        .collect();
    let mut checks = Vec::new();
    let mut rows: Vec<&str> = Vec::new();
    for pair in &pairs {
        if !rows.contains(&pair.row.as_str()) {
            rows.push(&pair.row);
        }
    }
    for row in rows {
        let Some(held) = pairs.iter().filter(|p| p.row == row).map(|p| p.held).max() else {
            continue;
        };
        let at = pairs.iter().filter(|p| p.row == row && p.held == held);
        if let Some(lossy) = at.clone().find(|p| !p.kept(0)) {
            let believed = held as f64 - lossy.lost[0];
            let kept = lossy.server_held[0].map_or(believed, |n| n.min(believed));
            checks.push(Check {
                what: format!("{row} locks kept at {held} held (the libraries beside it kept all)"),
                value: kept.max(0.0),
                baseline: held as f64,
                unit: "locks",
                target: Some(Bound::AtLeast(1.0)),
            });
        }
        let best_cpu = at
            .clone()
            .min_by(|a, b| a.cpu_us_per_renewal[1].total_cmp(&b.cpu_us_per_renewal[1]));
        if let Some(best) = best_cpu {
            checks.push(Check {
                what: format!(
                    "{row} client CPU per renewal at {held} held ÷ {}'s",
                    best.peer
                ),
                value: best.cpu_us_per_renewal[0],
                baseline: best.cpu_us_per_renewal[1],
                unit: "µs",
                target: Some(Bound::AtMost(0.5)),
            });
        }
        let best_memory = at
            .filter_map(|p| Some((p, p.bytes_per_lock[0]?, p.bytes_per_lock[1]?)))
            .min_by(|a, b| a.2.total_cmp(&b.2));
        if let Some((best, ours, theirs)) = best_memory {
            checks.push(Check {
                what: format!("{row} memory per lock at {held} held ÷ {}'s", best.peer),
                value: ours,
                baseline: theirs,
                unit: "B",
                target: Some(Bound::AtMost(1.0)),
            });
        }
    }
    checks
}

#[cfg(test)]
mod tests {
    use lockbench_reports::scale::{SCALE_SCHEMA_VERSION, ScalePoint, ScaleSeries, ScaleStop};

    use super::*;
    use crate::commands::scale::{ScaleOptions, ScaleSpec};

    /// A finished run of `spec` with `strategies`.
    fn results_of(spec: &ScaleSpec, strategies: Vec<ScaleSeries>) -> ScaleResults {
        ScaleResults {
            schema_version: SCALE_SCHEMA_VERSION,
            complete: true,
            started_at: String::new(),
            finished_at: String::new(),
            settings: spec.to_model(),
            environment: crate::base::environment::collect(Vec::new()),
            strategies,
        }
    }

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
            margin_p0_1_ms: None,
            server_cpu_ms_per_s: Some(3.0),
            server_command_ms_per_s: None,
            client_cpu_percent: cpu,
            client_rss_bytes: 32 << 20,
            client_threads: 4,
            server_held: None,
        }
    }

    /// A lockbench row that lost locks where the library beside it kept them all fails a check of its
    /// own: the cost comparison is not dropped in its favour.
    #[test]
    fn a_row_that_lost_locks_beside_a_library_fails_its_check() {
        let spec = ScaleOptions::default()
            .spec()
            .unwrap_or_else(|e| panic!("{e}"));
        let held = spec.steps[0];
        let results = |lost| {
            results_of(
                &spec,
                vec![
                    ScaleSeries {
                        strategy: "redisson".into(),
                        server: "redis".into(),
                        points: vec![ScalePoint {
                            lost,
                            ..point(held, 10.0, 0.5)
                        }],
                        ..ScaleSeries::default()
                    },
                    ScaleSeries {
                        strategy: "jvm-redisson".into(),
                        server: "redis".into(),
                        beside: vec!["redisson".into()],
                        points: vec![point(held, 10.0, 5.0)],
                        ..ScaleSeries::default()
                    },
                ],
            )
        };
        let kept = |checks: &[Check]| {
            checks
                .iter()
                .find(|c| c.what.contains("locks kept"))
                .map(|c| (c.value, c.baseline))
        };
        let whole = library_checks(&results(0));
        assert_eq!(kept(&whole), None);
        assert!(
            whole
                .iter()
                .any(|c| c.what.contains("client CPU per renewal"))
        );
        let lossy = library_checks(&results(10));
        assert_eq!(kept(&lossy), Some(((held - 10) as f64, held as f64)));
        assert!(
            lossy
                .iter()
                .any(|c| c.what.contains("client CPU per renewal"))
        );
    }

    #[test]
    fn rows_stops_and_checks() {
        let spec = ScaleOptions {
            in_process: true,
            ..ScaleOptions::default()
        }
        .spec()
        .unwrap_or_else(|e| panic!("{e}"));
        let results = results_of(
            &spec,
            vec![
                ScaleSeries {
                    strategy: "redis-watchdog-batched".into(),
                    server: "redis".into(),
                    locks_per_renew_call: Some(100),
                    points: vec![point(1000, 10.0, 0.5), point(100_000, 1300.0, 25.0)],
                    stopped: None,
                    ..ScaleSeries::default()
                },
                ScaleSeries {
                    strategy: "redis-watchdog".into(),
                    server: "redis".into(),
                    locks_per_renew_call: Some(1),
                    points: vec![
                        point(100_000, 100_000.0, 90.0),
                        ScalePoint {
                            lost: 7,
                            held_at_end: 60_000,
                            ..point(140_000, 60_000.0, 98.0)
                        },
                    ],
                    stopped: None,
                    ..ScaleSeries::default()
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
                    ..ScaleSeries::default()
                },
            ],
        );
        let table = render(&results);
        assert!(
            table.contains(
                "redis-guard-thread: stopped at 9990 held (filling step 10000): thread cap"
            ),
            "{table}"
        );
        // 90 % of a core for 100k renewals/s: 9 µs each; 32 MiB over 100k locks.
        assert!(
            table.contains(
                "redis-watchdog: at 100000 held, 100000 renewals/s cost 9.00 µs of client CPU each, \
                 0.030 µs of server CPU; 336 bytes of client memory per lock; collapsed by 140000 held \
                 (0 renewals failed, 7 leases lost, 60000 still held)"
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

        // With the raw sender beside it, the CPU target is the ratio to the raw sender's.
        let mut results = results;
        results.strategies.push(ScaleSeries {
            strategy: crate::commands::scale::RAW_SENDER.into(),
            server: "redis".into(),
            locks_per_renew_call: Some(100),
            points: vec![point(1000, 10.0, 0.4), point(100_000, 1000.0, 20.0)],
            stopped: None,
            ..ScaleSeries::default()
        });
        let with_raw = super::checks(&results);
        let find = |what: &str| {
            with_raw
                .iter()
                .find(|c| c.what.contains(what))
                .unwrap_or_else(|| panic!("no {what:?} in {with_raw:?}"))
        };
        let ratio = find("client CPU ÷ raw sender's at 100000 held");
        assert!((ratio.ratio() - 1.25).abs() < 1e-9, "{ratio:?}");
        assert_eq!(ratio.met(), Some(false), "25 % against 20 %: 1.25 > 1.2");
        assert_eq!(find("client CPU per 100k held").met(), None);
        assert_eq!(find("client CPU per renewal").met(), None);
        assert_eq!(with_raw.len(), 5, "{with_raw:?}");
        let table = render(&results);
        assert!(table.contains("raw-batch-sender"), "{table}");
    }
}
