//! The words and figures both report formats show — environment, workload lines, the verdict cells,
//! the headline table, the changes table — as plain text cells, so Markdown and HTML differ only in
//! layout.

use crate::comparison::{Comparison, StrategyInfo};
use crate::delta::{CaseDelta, Deltas, NOISE_FLOOR_PCT};
use crate::format::{change_pct, duration_ms, ms, rate, signed_count, signed_pct};
use crate::grid::{
    Grid, Row, Violations, data_words, ran, rate_interval, trials_line, verdict_with_data,
    verdict_word, violated_of, why_not,
};
use crate::model::{CaseResult, CaseStatus, Expectation, Results, Verdict};

/// The report's title.
pub fn title(c: &Comparison) -> String {
    if c.runs.len() == 1 && c.suite == crate::comparison::SINGLE_RUN {
        format!("lockbench run — {}", c.runs[0].results.scenario.name)
    } else if c.suite == crate::comparison::SELECTED {
        "lockbench comparison — selected scenarios".to_owned()
    } else {
        format!("lockbench comparison — {} suite", c.suite)
    }
}

/// The user's workload, one line, then its notes (time compression, broken ratios, exceptions); empty
/// when each scenario ran its own.
pub fn user_workload_lines(c: &Comparison) -> Vec<String> {
    c.workload
        .iter()
        .flat_map(|w| std::iter::once(w.summary.clone()).chain(w.notes.iter().cloned()))
        .collect()
}

/// One line each: when, what, where (machine, software, servers), and whether it is complete.
pub fn environment_lines(c: &Comparison) -> Vec<String> {
    let mut lines = Vec::new();
    let scenarios: Vec<&str> = c
        .runs
        .iter()
        .map(|r| r.results.scenario.name.as_str())
        .collect();
    lines.push(format!(
        "Run {} → {}: {} scenario(s) ({}), {} strategies.",
        c.started_at,
        c.finished_at,
        scenarios.len(),
        scenarios.join(", "),
        c.strategies.len()
    ));
    for note in &c.notes {
        lines.push(format!("Not run: {note}"));
    }
    if !c.complete {
        lines.push(
            "INCOMPLETE: the suite was cut short or a case did not finish; the figures cover what ran."
                .to_owned(),
        );
    }
    if let Some(first) = c.runs.first() {
        let e = &first.results.environment;
        lines.push(format!(
            "Machine: {}, kernel {}, {} cores ({}), {:.1} GiB memory.",
            e.os,
            e.kernel,
            e.cores,
            e.cpu_model,
            e.memory_bytes as f64 / (1u64 << 30) as f64
        ));
        lines.push(format!(
            "lockbench {}{}.",
            e.lockbench_version,
            e.git_commit
                .as_deref()
                .map(|c| format!(" (commit {})", &c[..c.len().min(12)]))
                .unwrap_or_default()
        ));
    }
    let mut servers: Vec<String> = Vec::new();
    for run in &c.runs {
        for s in &run.results.environment.servers {
            let line = format!(
                "{} {}{}",
                s.kind,
                s.version.as_deref().unwrap_or("(version unknown)"),
                if s.managed {
                    " (started by lockbench on loopback)"
                } else {
                    " (given)"
                }
            );
            if !servers.contains(&line) {
                servers.push(line);
            }
        }
    }
    if !servers.is_empty() {
        lines.push(format!("Servers: {}.", servers.join("; ")));
    }
    lines.extend(library_lines(c));
    lines
}

/// The libraries the peer rows' processes loaded and how their clients were mapped to adapter
/// processes (`Libraries: Redisson RLock 3.52.0 (jvm-redisson, 16 clients in 1 process), …`), and a
/// `Not run:` line for each case that failed before it measured anything (such as a peer
/// whose loaded version is not its pin), with its one-line error.
fn library_lines(c: &Comparison) -> Vec<String> {
    let mut libraries: Vec<String> = Vec::new();
    let mut not_run: Vec<String> = Vec::new();
    for run in &c.runs {
        for case in &run.results.cases {
            if let Some(lib) = &case.library {
                let line = match case.adapter_processes {
                    Some(mapping) => {
                        format!(
                            "{} {} ({}, {mapping})",
                            lib.name, lib.version, case.strategy
                        )
                    }
                    None => format!("{} {} ({})", lib.name, lib.version, case.strategy),
                };
                if !libraries.contains(&line) {
                    libraries.push(line);
                }
            }
            if case.status == CaseStatus::Failed && case.operations.completed == 0 {
                not_run.push(format!(
                    "Not run: {} in {}: {}",
                    case.strategy,
                    run.results.scenario.name,
                    case.error
                        .as_deref()
                        .unwrap_or("failed before it measured anything")
                ));
            }
        }
    }
    let mut lines = Vec::new();
    if !libraries.is_empty() {
        lines.push(format!("Libraries: {}.", libraries.join(", ")));
    }
    lines.extend(not_run);
    lines
}

/// The workload of a run, one line.
pub fn workload_line(r: &Results) -> String {
    let w = &r.scenario.workload;
    let length = match (w.duration_ms, w.cycles) {
        (Some(d), _) => format!("{} measured", duration_ms(d)),
        (None, Some(n)) => format!("{n} cycles"),
        (None, None) => "unbounded".to_owned(),
    };
    format!(
        "{} clients on {} keys, task {}, leases {} (watchdog TTL {}), on lost() {}, {}; {length} after {} warm-up.",
        w.clients,
        w.keys,
        w.task,
        w.leases.join(", "),
        duration_ms(w.watchdog_timeout_ms),
        w.on_lost,
        if w.workers == "remote" {
            "remote workers (overlaps judged from when the resource saw each hold begin and end)"
                .to_owned()
        } else {
            format!("{} workers", w.workers)
        },
        duration_ms(w.warmup_ms)
    )
}

/// The verdict cell: `safe`, `VIOLATED: 17 ovl · 7 lost · 13 stale`, `skipped`, ...
pub fn verdict_cell(case: Option<&CaseResult>) -> String {
    let word = verdict_with_data(case);
    match case {
        Some(c) if c.safety.verdict == Verdict::Violated && ran(c) => {
            format!("{word}: {}", Violations::of(c).short())
        }
        _ => word,
    }
}

/// The verdict matrix's legend on the data of a strategy without fencing tokens.
pub const NO_FENCING_LEGEND: &str = "for a strategy without fencing tokens, “no fencing: stale writes not detectable” stands where intact would (the resource cannot tell a stale write from a rightful one without tokens; a lost update still reads harmed)";

/// The verdict matrix's strategy cell: its id, labelled when it is the driver's yardstick (a lock in
/// the driver's own process, never ranked).
pub fn matrix_strategy(grid: &Grid<'_>, strategy: &StrategyInfo) -> String {
    if grid.is_yardstick(&strategy.id) {
        format!("{} ({})", strategy.id, crate::scorecard::YARDSTICK)
    } else {
        strategy.id.clone()
    }
}

/// What theory predicts for a case of `row`, and whether the measurement disagrees.
pub fn theory_check(row: &Row<'_>, case: &CaseResult) -> Option<(Expectation, bool)> {
    if !ran(case) {
        return None;
    }
    let expected = row
        .run
        .results
        .scenario
        .expected(&case.strategy, &case.lease)?;
    let (k, n) = violated_of(case);
    Some((expected, expected.disagrees(k, n)))
}

/// One cell of the verdict matrix (strategies as rows, scenarios as columns).
#[derive(Debug, Clone, PartialEq)]
pub struct MatrixCell {
    /// `safe`, `violated`, `na` (the scenario does not apply) or `other` (not run, failed).
    pub class: &'static str,
    /// The short text: `2/3`, `0/3`, `–`, `failed`.
    pub text: String,
    /// The interval (`21–94 %`), empty when there is none.
    pub detail: String,
    /// For a tooltip: the trials line, or why it did not run.
    pub note: String,
    /// The measurement disagrees with what the scenario says theory predicts.
    pub against_theory: bool,
    /// A violation theory predicted (the scenario expects this strategy may violate): still a
    /// violation, shown apart from surprises.
    pub predicted: bool,
}

/// The matrix cell of `strategy` in `row`.
pub fn matrix_cell(row: &Row<'_>, strategy: &str) -> MatrixCell {
    let Some(case) = row.case(strategy) else {
        return MatrixCell {
            class: "other",
            text: "·".to_owned(),
            detail: String::new(),
            note: "not run".to_owned(),
            against_theory: false,
            predicted: false,
        };
    };
    if !ran(case) {
        let skipped = case.status == CaseStatus::Skipped;
        return MatrixCell {
            class: if skipped { "na" } else { "other" },
            text: if skipped {
                "–"
            } else {
                verdict_word(Some(case))
            }
            .to_owned(),
            detail: String::new(),
            note: why_not(case).unwrap_or("no reason recorded").to_owned(),
            against_theory: false,
            predicted: false,
        };
    }
    let (k, n) = violated_of(case);
    let check = theory_check(row, case);
    let mut note = trials_line(case).unwrap_or_default();
    if let Some((expected, _)) = check {
        let _ = std::fmt::Write::write_fmt(
            &mut note,
            format_args!("; theory: {}", expectation_word(expected)),
        );
    }
    // Trials stopped at their first violation say when the case broke, not how often: no interval.
    let verdict = match &case.trials {
        Some(t) if t.stopped_early => format!("broke at trial {}", t.runs),
        Some(_) => format!("{k}/{n}"),
        None => verdict_word(Some(case)).to_owned(),
    };
    MatrixCell {
        class: if k > 0 { "violated" } else { "safe" },
        text: match data_words(case) {
            Some(data) => format!("{verdict} · {data}"),
            None => verdict,
        },
        detail: rate_interval(case).unwrap_or_default(),
        note,
        against_theory: check.is_some_and(|(_, d)| d),
        predicted: k > 0
            && check.is_some_and(|(e, _)| matches!(e, Expectation::Violated | Expectation::Either)),
    }
}

/// `safe`, `violated`, `either`.
pub fn expectation_word(e: Expectation) -> &'static str {
    match e {
        Expectation::Safe => "safe",
        Expectation::Violated => "violated",
        Expectation::Either => "either",
    }
}

/// Every case whose measurement disagrees with what its scenario says theory predicts, one
/// explanation each.
pub fn against_theory(grid: &Grid<'_>) -> Vec<String> {
    let mut lines = Vec::new();
    for (row, case) in grid.cases() {
        let Some((expected, true)) = theory_check(row, case) else {
            continue;
        };
        let (k, n) = violated_of(case);
        let measured = trials_line(case).unwrap_or_default();
        let why = match expected {
            Expectation::Violated => {
                let high = case
                    .trials
                    .as_ref()
                    .and_then(|t| t.interval())
                    .map_or(1.0, |(_, high)| high);
                format!(
                    "theory predicts violations, none showed in {n} trial{}: the fault did not catch a holder at the moment that breaks this strategy (timing the scenario does not control), or the strategy does better than its design suggests; the rate may still be up to {:.0} %, so more trials (--thorough) would tell",
                    if n == 1 { "" } else { "s" },
                    high * 100.0
                )
            }
            _ => format!(
                "theory predicts safe, yet {k} of {n} trial{} violated: the mechanism below did not protect it here (see the overlap examples and the holder timeline){}",
                if n == 1 { "" } else { "s" },
                if case.safety.reasons.iter().all(|r| {
                    matches!(
                        r,
                        crate::model::Violation::TokenRegressions
                            | crate::model::Violation::DuplicateTokens
                    )
                }) {
                    "; only the fencing tokens failed, no holders overlapped"
                } else {
                    ""
                }
            ),
        };
        lines.push(format!(
            "{} under {}: measured {measured}; {why}.{}",
            case.strategy,
            row.label,
            row.run
                .results
                .scenario
                .theory
                .as_deref()
                .map(|t| format!(" Mechanism: {t}"))
                .unwrap_or_default()
        ));
    }
    lines
}

/// One sentence per scenario on the mechanism it exercises (from its scenario file).
pub fn mechanisms(c: &Comparison) -> Vec<(String, String)> {
    c.runs
        .iter()
        .filter_map(|r| {
            let s = &r.results.scenario;
            Some((s.name.clone(), s.theory.clone()?))
        })
        .collect()
}

/// Cases that produced no figures, with why.
pub fn not_measured(grid: &Grid<'_>) -> Vec<String> {
    let mut lines = Vec::new();
    for row in &grid.rows {
        for s in &grid.strategies {
            match row.case(&s.id) {
                Some(c) if !ran(c) => {
                    let word = verdict_word(Some(c));
                    lines.push(match why_not(c) {
                        // The line names its reason itself (`no contention: one client per key …`).
                        Some(why) if why.starts_with(word) => {
                            format!("{} under {}: {why}", s.id, row.label)
                        }
                        why => format!(
                            "{} under {}: {word} ({})",
                            s.id,
                            row.label,
                            why.unwrap_or("no reason recorded")
                        ),
                    });
                }
                Some(c)
                    if c.trials
                        .as_ref()
                        .is_some_and(|t| t.unknown.max(t.fault_not_applied) > 0) =>
                {
                    let t = c.trials.as_ref();
                    let skipped = t.map_or(0, |t| t.unknown.max(t.fault_not_applied));
                    lines.push(format!(
                        "{} under {}: {skipped} trial{} without a verdict ({}), not counted",
                        s.id,
                        row.label,
                        if skipped == 1 { "" } else { "s" },
                        why_not(c).unwrap_or("fault not applied")
                    ));
                }
                Some(c) if c.error.is_some() => lines.push(format!(
                    "{} under {}: note: {}",
                    s.id,
                    row.label,
                    c.error.as_deref().unwrap_or_default()
                )),
                _ => {}
            }
        }
    }
    lines
}

/// Headline table columns.
pub const HEADLINE_COLUMNS: [&str; 12] = [
    "strategy",
    "lease",
    "CS/s",
    "acquire p50",
    "acquire p99",
    "hand-off p50",
    "margin min",
    "margin p50",
    "overlaps",
    "lost updates",
    "stale accepted",
    "verdict",
];

/// A headline table row.
pub fn headline_cells(case: &CaseResult) -> Vec<String> {
    let v = Violations::of(case);
    let ran = ran(case);
    let figure = |s: String| if ran { s } else { "-".to_owned() };
    vec![
        case.strategy.clone(),
        case.lease.clone(),
        figure(rate(case.throughput.completed_per_s)),
        ms(case.latency.acquire.p50_ms),
        ms(case.latency.acquire.p99_ms),
        ms(case.latency.handoff.p50_ms),
        ms(case.renewal.margin.min_ms),
        ms(case.renewal.margin.p50_ms),
        figure(if v.overlaps > 0 {
            format!("{} ({} ms)", v.overlaps, ms(Some(v.overlap_ms)))
        } else {
            "0".to_owned()
        }),
        figure(v.lost_updates.to_string()),
        figure(
            v.stale_accepted
                .map_or_else(|| "no fencing".to_owned(), |n| n.to_string()),
        ),
        verdict_with_data(Some(case)),
    ]
}

/// The runs' cases, grouped per run, in column order.
pub fn cases_by_run<'a>(grid: &Grid<'a>) -> Vec<(&'a Results, Vec<&'a CaseResult>)> {
    let mut out: Vec<(&Results, Vec<&CaseResult>)> = Vec::new();
    let rows: Vec<&Row<'a>> = grid.rows.iter().collect();
    for row in rows {
        let results = &row.run.results;
        let cases = grid.in_columns(row);
        match out.iter_mut().find(|(r, _)| std::ptr::eq(*r, results)) {
            Some((_, list)) => list.extend(cases),
            None => out.push((results, cases)),
        }
    }
    for (_, cases) in &mut out {
        // Strategy-major within a run: each strategy's lease modes together.
        let order: Vec<&str> = grid.strategies.iter().map(|s| s.id.as_str()).collect();
        cases.sort_by_key(|c| order.iter().position(|id| *id == c.strategy));
    }
    out
}

/// Changes table columns.
pub const DELTA_COLUMNS: [&str; 11] = [
    "scenario",
    "strategy",
    "CS/s (old → new)",
    "CS/s change",
    "noise",
    "acquire p50 change",
    "acquire p99 change",
    "overlaps",
    "lost updates",
    "stale accepted",
    "verdict",
];

/// Under the changes summary: what the table leaves out and how noise is judged.
pub fn delta_note(deltas: &Deltas) -> String {
    let unchanged = deltas.matched.len() - deltas.changed().count();
    format!(
        "Only cases that changed beyond noise are listed ({unchanged} within noise are not). A case changed when its verdict changed or its throughput moved by more than the noise: the larger relative spread (max − min over mean) of the two cases' trials, at least {NOISE_FLOOR_PCT:.0}%."
    )
}

/// A changes table row.
pub fn delta_cells(d: &CaseDelta) -> Vec<String> {
    let (old, new) = d.violations;
    let verdict = if d.verdict.0 == d.verdict.1 {
        d.verdict.1.to_owned()
    } else {
        format!("{} → {}", d.verdict.0, d.verdict.1)
    };
    vec![
        d.row.clone(),
        d.strategy.clone(),
        format!("{} → {}", rate(d.throughput.0), rate(d.throughput.1)),
        signed_pct(d.throughput_change_pct()),
        format!("±{:.0}%", d.noise_pct),
        signed_pct(change_pct(d.acquire_p50.0, d.acquire_p50.1)),
        signed_pct(change_pct(d.acquire_p99.0, d.acquire_p99.1)),
        format!(
            "{} → {} ({})",
            old.overlaps,
            new.overlaps,
            signed_count(old.overlaps, new.overlaps)
        ),
        format!(
            "{} → {} ({})",
            old.lost_updates,
            new.lost_updates,
            signed_count(old.lost_updates, new.lost_updates)
        ),
        match (old.stale_accepted, new.stale_accepted) {
            (Some(o), Some(n)) => format!("{o} → {n} ({})", signed_count(o, n)),
            (o, n) => format!(
                "{} → {}",
                o.map_or("-".to_owned(), |v| v.to_string()),
                n.map_or("-".to_owned(), |v| v.to_string())
            ),
        },
        verdict,
    ]
}
