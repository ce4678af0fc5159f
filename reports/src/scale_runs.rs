//! Several `lockbench scale` runs of one command as one Markdown table: per series and step, the
//! median of the runs with each run's value, and each series' client CPU against a yardstick series
//! measured in the same run (the raw sender a strategy's renewal is a ratio of). It knows only
//! [`ScaleResults`], so any series a scale run writes gets its rows.

use std::fmt::Write as _;

use crate::repeats::median_by;
use crate::scale::{ScalePoint, ScaleResults};

/// One column: its heading, its figure, how to print it, and whether each run's value follows.
struct Figure {
    heading: &'static str,
    value: fn(&ScalePoint) -> Option<f64>,
    decimals: usize,
    each_run: bool,
}

/// Client CPU per renewal, µs.
fn per_renewal_us(p: &ScalePoint) -> Option<f64> {
    (p.renewals_per_s > 0.0).then(|| p.client_cpu_percent / 100.0 * 1e6 / p.renewals_per_s)
}

const FIGURES: [Figure; 7] = [
    Figure {
        heading: "client CPU (% of a core)",
        value: |p| Some(p.client_cpu_percent),
        decimals: 2,
        each_run: true,
    },
    Figure {
        heading: "client CPU per renewal (µs)",
        value: per_renewal_us,
        decimals: 2,
        each_run: false,
    },
    Figure {
        heading: "renew calls/s",
        value: |p| p.renew_calls_per_s,
        decimals: 1,
        each_run: false,
    },
    Figure {
        heading: "bound/s",
        value: |p| p.renew_calls_bound_per_s,
        decimals: 1,
        each_run: false,
    },
    Figure {
        heading: "thinnest margin (ms)",
        value: |p| p.thinnest_margin_ms,
        decimals: 0,
        each_run: true,
    },
    Figure {
        heading: "margin p0.1 (ms)",
        value: |p| p.margin_p0_1_ms,
        decimals: 0,
        each_run: false,
    },
    Figure {
        heading: "client memory per held lock (bytes)",
        value: |p| (p.held_locks > 0).then(|| p.client_rss_bytes as f64 / p.held_locks as f64),
        decimals: 0,
        each_run: false,
    },
];

/// `median (a, b, c)` of the runs' values, or the median alone; `-` when no run has the figure.
fn cell(values: &[f64], decimals: usize, each_run: bool) -> String {
    let Some(median) = median_by(values, |v| *v) else {
        return "-".into();
    };
    if !each_run || values.len() < 2 {
        return format!("{median:.decimals$}");
    }
    let runs: Vec<String> = values.iter().map(|v| format!("{v:.decimals$}")).collect();
    format!("{median:.decimals$} ({})", runs.join(", "))
}

/// Each (series, step) in the order the runs first show them.
fn rows(runs: &[ScaleResults]) -> Vec<(&str, u64)> {
    let mut rows: Vec<(&str, u64)> = Vec::new();
    for run in runs {
        for series in &run.strategies {
            for point in &series.points {
                let row = (series.strategy.as_str(), point.held_locks);
                if !rows.contains(&row) {
                    rows.push(row);
                }
            }
        }
    }
    rows
}

/// The point of `strategy` at `held` in `run`, if it reached it.
fn point<'a>(run: &'a ScaleResults, strategy: &str, held: u64) -> Option<&'a ScalePoint> {
    run.strategies
        .iter()
        .filter(|s| s.strategy == strategy)
        .flat_map(|s| &s.points)
        .find(|p| p.held_locks == held)
}

/// The table of `runs` (one command run several times): a row per series and step with the median of
/// the runs (each run's value in brackets where the figure scatters), lost leases and failed renewals
/// summed over the runs; then, when `yardstick` names a series, a row per other series with its client
/// CPU ÷ the yardstick's in the same run; then the runs' dates, commits, settings and machine.
pub fn markdown_table(runs: &[ScaleResults], yardstick: Option<&str>) -> String {
    let headings: Vec<&str> = FIGURES.iter().map(|f| f.heading).collect();
    let mut out = format!(
        "| series | held | {} | lost, failed renewals (all runs) |\n|---|---|{}---|\n",
        headings.join(" | "),
        "---|".repeat(FIGURES.len())
    );
    let rows = rows(runs);
    for (strategy, held) in &rows {
        let points: Vec<&ScalePoint> = runs
            .iter()
            .filter_map(|r| point(r, strategy, *held))
            .collect();
        let cells: Vec<String> = FIGURES
            .iter()
            .map(|f| {
                let values: Vec<f64> = points.iter().filter_map(|p| (f.value)(p)).collect();
                cell(&values, f.decimals, f.each_run)
            })
            .collect();
        let lost: u64 = points.iter().map(|p| p.lost).sum();
        let failed: u64 = points.iter().map(|p| p.renew_failures).sum();
        let _ = writeln!(
            out,
            "| {strategy} | {held} | {} | {lost}, {failed} |",
            cells.join(" | ")
        );
    }
    if let Some(yardstick) = yardstick {
        for (strategy, held) in rows.iter().filter(|(s, _)| *s != yardstick) {
            let ratios: Vec<f64> = runs
                .iter()
                .filter_map(|r| {
                    let mine = point(r, strategy, *held)?;
                    let raw = point(r, yardstick, *held)?;
                    Some(mine.client_cpu_percent / raw.client_cpu_percent)
                })
                .collect();
            if ratios.is_empty() {
                continue;
            }
            // The ratio sits under client CPU; the other figures' cells and the losses' stay empty.
            let _ = writeln!(
                out,
                "| {strategy} ÷ {yardstick} | {held} | {} |{}",
                cell(&ratios, 2, true),
                " |".repeat(FIGURES.len())
            );
        }
    }
    let _ = writeln!(out, "\n{}", legend(runs, yardstick));
    out
}

/// Under the table: what the figures are and where the runs come from.
fn legend(runs: &[ScaleResults], yardstick: Option<&str>) -> String {
    let mut text = format!(
        "Medians of {} run{}, each run's value in brackets in run order. Client CPU: the client process, user + system; \
         renew calls/s: what the server counted, against the bound held ÷ renewal period ÷ locks per call; \
         thinnest margin: the least TTL a renewal found left, p0.1 the 0.1th percentile of those TTLs.",
        runs.len(),
        if runs.len() == 1 { "" } else { "s" }
    );
    if let Some(yardstick) = yardstick {
        let _ = write!(
            text,
            " A ÷ {yardstick}: client CPU against {yardstick}'s in the same run."
        );
    }
    if let (Some(first), Some(last)) = (runs.first(), runs.last()) {
        let s = &first.settings;
        let commits: Vec<&str> = runs
            .iter()
            .map(|r| {
                r.environment
                    .git_commit
                    .as_deref()
                    .map_or("unknown", |c| c.get(..7).unwrap_or(c))
            })
            .fold(Vec::new(), |mut seen, c| {
                if !seen.contains(&c) {
                    seen.push(c);
                }
                seen
            });
        let env = &first.environment;
        let _ = write!(
            text,
            " Runs from {} to {}, commit {}: watchdog timeout {:.0} ms, renewal every {:.0} ms, a {:.0} ms window per step; {}, {} cores, {}.",
            first.started_at,
            last.finished_at,
            commits.join(", "),
            s.watchdog_timeout_ms,
            s.renew_period_ms,
            s.hold_ms,
            env.cpu_model,
            env.cores,
            env.os
        );
    }
    for run in runs {
        for series in &run.strategies {
            if let Some(stop) = &series.stopped {
                let _ = write!(
                    text,
                    " {} (run of {}) {}.",
                    series.strategy,
                    run.started_at,
                    stop.describe(&stop.reason)
                );
            }
        }
    }
    text
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// A run of two series at 1000 held: `batched` and the raw sender, with these client CPUs.
    fn run(batched_cpu: f64, raw_cpu: f64, margin: f64) -> ScaleResults {
        let point = |cpu: f64| {
            format!(
                r#"{{"held_locks": 1000, "held_at_end": 1000, "fill_ms": 10.0, "window_ms": 1000.0,
                "renew_calls_per_s": 10.0, "renew_calls_bound_per_s": 10.0, "renewals_per_s": 1000.0,
                "renew_failures": 0, "lost": 1, "thinnest_margin_ms": {margin}, "margin_p0_1_ms": 2100.0,
                "server_cpu_ms_per_s": 4.0, "server_command_ms_per_s": 1.0, "client_cpu_percent": {cpu},
                "client_rss_bytes": 1048576, "client_threads": 4}}"#
            )
        };
        let text = format!(
            r#"{{"schema_version": 1, "complete": true, "started_at": "2026-01-01T00:00:00Z",
            "finished_at": "2026-01-01T00:01:00Z",
            "settings": {{"steps": [1000], "hold_ms": 1000.0, "watchdog_timeout_ms": 3000.0,
              "renew_period_ms": 1000.0, "acquire_concurrency": 64, "step_budget_ms": 60000.0,
              "max_threads": 10000, "max_rss_bytes": 4294967296}},
            "environment": {{"lockbench_version": "0.1.0", "git_commit": "abcdef0123", "os": "Debian",
              "kernel": "6", "cpu_model": "EPYC", "cores": 2, "memory_bytes": 1, "servers": []}},
            "strategies": [
              {{"strategy": "batched", "server": "redis", "locks_per_renew_call": 100,
                "points": [{}], "stopped": null}},
              {{"strategy": "raw", "server": "redis", "locks_per_renew_call": 100,
                "points": [{}], "stopped": null}}]}}"#,
            point(batched_cpu),
            point(raw_cpu)
        );
        ScaleResults::from_json(&text).unwrap()
    }

    #[test]
    fn medians_each_run_and_the_ratio_to_the_yardstick() {
        let runs = [
            run(6.0, 5.0, 2063.0),
            run(7.0, 5.0, 2060.0),
            run(6.6, 6.0, 2064.0),
        ];
        let table = markdown_table(&runs, Some("raw"));
        // Client CPU 6.6 (6.0, 7.0, 6.6); per renewal 6.6 % ÷ 1000/s = 66 µs.
        assert!(
            table.contains("| batched | 1000 | 6.60 (6.00, 7.00, 6.60) | 66.00 | 10.0 | 10.0 | 2063 (2063, 2060, 2064) | 2100 | 1049 | 3, 0 |"),
            "{table}"
        );
        // Ratios per run: 1.20, 1.40, 1.10.
        assert!(
            table.contains("| batched ÷ raw | 1000 | 1.20 (1.20, 1.40, 1.10) | | | | | | | |\n"),
            "{table}"
        );
        // Every row has the header's columns.
        let columns = |line: &str| line.matches('|').count();
        let lines: Vec<&str> = table.lines().take_while(|l| l.starts_with('|')).collect();
        assert!(
            lines.iter().all(|l| columns(l) == columns(lines[0])),
            "{table}"
        );
        assert!(!table.contains("raw ÷ raw"), "{table}");
        assert!(table.contains("Medians of 3 runs"), "{table}");
        assert!(table.contains("commit abcdef0:"), "{table}");
        let without = markdown_table(&runs, None);
        assert!(!without.contains(" ÷ raw |"), "{without}");
    }
}
