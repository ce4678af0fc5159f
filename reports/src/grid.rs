//! The shape every part of a report shares: rows (one per scenario and lease mode, in run order) by
//! columns (one per strategy), and the facts read off one case (did it run, what it violated).

use crate::comparison::{Comparison, StrategyInfo, SuiteRun};
use crate::model::{CaseResult, CaseStatus, DataState, NoVerdict, Verdict, Violation};

/// The report's grid.
#[derive(Debug)]
pub struct Grid<'a> {
    /// The strategies, in column order: the distributed ones and controls as the comparison lists
    /// them, then the driver's yardsticks ([`Grid::is_yardstick`]), which nothing ranks.
    pub strategies: Vec<StrategyInfo>,
    /// The rows, in run order.
    pub rows: Vec<Row<'a>>,
    /// The ids of the yardsticks among `strategies`.
    yardsticks: Vec<String>,
}

/// One scenario under one lease mode.
#[derive(Debug)]
pub struct Row<'a> {
    /// The scenario's run.
    pub run: &'a SuiteRun,
    /// `watchdog` or `fixed:<duration>`.
    pub lease: String,
    /// For people: the scenario name, with the lease mode when the scenario runs several or a
    /// fixed one (`lease-too-short · fixed:1s`).
    pub label: String,
    /// For file names: lowercase letters, digits and dashes.
    pub slug: String,
    cases: Vec<&'a CaseResult>,
}

impl<'a> Grid<'a> {
    /// The grid of `comparison`.
    pub fn new(comparison: &'a Comparison) -> Self {
        let mut strategies = comparison.strategies.clone();
        let mut rows = Vec::new();
        for run in &comparison.runs {
            let results = &run.results;
            let mut leases: Vec<String> = results.scenario.workload.leases.clone();
            for case in &results.cases {
                if !leases.contains(&case.lease) {
                    leases.push(case.lease.clone());
                }
                if !strategies.iter().any(|s| s.id == case.strategy) {
                    strategies.push(comparison.strategy(&case.strategy));
                }
            }
            let several = leases.len() > 1;
            for lease in leases {
                let cases: Vec<&CaseResult> =
                    results.cases.iter().filter(|c| c.lease == lease).collect();
                if cases.is_empty() {
                    continue;
                }
                let name = &results.scenario.name;
                let label = if several || lease != "watchdog" {
                    format!("{} · {lease}", run.name())
                } else {
                    run.name()
                };
                let slug = slug(&if several || lease != "watchdog" {
                    format!("{name}-{lease}")
                } else {
                    name.clone()
                });
                rows.push(Row {
                    run,
                    lease,
                    label,
                    slug,
                    cases,
                });
            }
        }
        let yardsticks: Vec<String> = strategies
            .iter()
            .filter(|s| is_yardstick(comparison, s))
            .map(|s| s.id.clone())
            .collect();
        // The yardsticks last: a lock in the driver's own process is what the driver can do, not a
        // contender, so no table or chart lists it first.
        strategies.sort_by_key(|s| yardsticks.contains(&s.id));
        Grid {
            strategies,
            rows,
            yardsticks,
        }
    }

    /// Whether `strategy` is the driver's yardstick: its lock lives in the driver's own process with
    /// no server (`in-process`, such as `memory`), so its figures are what the driver itself can do.
    /// It is shown apart and never ranked.
    pub fn is_yardstick(&self, strategy: &str) -> bool {
        self.yardsticks.iter().any(|id| id == strategy)
    }

    /// Every case that ran, with its row, in row then column order.
    pub fn cases(&self) -> impl Iterator<Item = (&Row<'a>, &'a CaseResult)> {
        self.rows
            .iter()
            .flat_map(move |row| self.in_columns(row).into_iter().map(move |c| (row, c)))
    }

    /// The row's cases in column order.
    pub fn in_columns(&self, row: &Row<'a>) -> Vec<&'a CaseResult> {
        self.strategies
            .iter()
            .filter_map(|s| row.case(&s.id))
            .collect()
    }
}

impl<'a> Row<'a> {
    /// The case of `strategy` in this row.
    pub fn case(&self, strategy: &str) -> Option<&'a CaseResult> {
        self.cases.iter().copied().find(|c| c.strategy == strategy)
    }

    /// The scenario's name.
    pub fn scenario(&self) -> &'a str {
        &self.run.results.scenario.name
    }

    /// Whether the lease mode is fixed (expires unrenewed).
    pub fn is_fixed(&self) -> bool {
        self.lease.starts_with("fixed")
    }
}

/// Whether `strategy` of `comparison` keeps its lock in the driver's own process: the registry says
/// `in-process`; a single run's file names no servers, so there a strategy with a case that ran and
/// none that talked to a server or a library's process counts as one.
fn is_yardstick(comparison: &Comparison, strategy: &StrategyInfo) -> bool {
    if !strategy.server.is_empty() {
        return strategy.is_in_process();
    }
    let mut cases = comparison
        .runs
        .iter()
        .flat_map(|r| &r.results.cases)
        .filter(|c| c.strategy == strategy.id && ran(c))
        .peekable();
    cases.peek().is_some()
        && cases.all(|c| {
            c.server_cost.is_none() && c.library.is_none() && c.protocol_round_trip_ms.is_none()
        })
}

/// Lowercase ASCII letters and digits, everything else one dash.
pub fn slug(text: &str) -> String {
    let mut out = String::new();
    for c in text.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.ends_with('-') && !out.is_empty() {
            out.push('-');
        }
    }
    out.trim_end_matches('-').to_owned()
}

/// What the three safety measures found in one case.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Violations {
    /// Measure 1: overlapping pairs of believed-held intervals.
    pub overlaps: u64,
    /// Their total overlap time.
    pub overlap_ms: f64,
    /// Measure 2: lost updates.
    pub lost_updates: u64,
    /// Measure 3: stale writes the resource accepted (None: the strategy has no fencing tokens).
    pub stale_accepted: Option<u64>,
}

impl Violations {
    /// The findings of `case`.
    pub fn of(case: &CaseResult) -> Self {
        let s = &case.safety;
        Violations {
            overlaps: s.overlap.pairs,
            overlap_ms: s.overlap.total_ms,
            lost_updates: s.lost_updates.lost,
            stale_accepted: s.fencing.stale_accepted,
        }
    }

    /// Sum of the three counts.
    pub fn total(&self) -> u64 {
        self.overlaps + self.lost_updates + self.stale_accepted.unwrap_or(0)
    }

    /// `17 overlaps (4106 ms), 7 lost updates, 13 stale writes accepted`.
    pub fn describe(&self) -> String {
        let mut parts = vec![format!(
            "{} overlap{} ({:.0} ms)",
            self.overlaps,
            if self.overlaps == 1 { "" } else { "s" },
            self.overlap_ms
        )];
        parts.push(format!(
            "{} lost update{}",
            self.lost_updates,
            if self.lost_updates == 1 { "" } else { "s" }
        ));
        match self.stale_accepted {
            Some(n) => parts.push(format!("{n} stale write{} accepted", plural(n))),
            None => parts.push("no fencing".to_owned()),
        }
        parts.join(", ")
    }

    /// Short form for a matrix cell: `17 ovl · 7 lost · 13 stale`.
    pub fn short(&self) -> String {
        let mut parts = vec![
            format!("{} ovl", self.overlaps),
            format!("{} lost", self.lost_updates),
        ];
        if let Some(n) = self.stale_accepted {
            parts.push(format!("{n} stale"));
        }
        parts.join(" · ")
    }
}

fn plural(n: u64) -> &'static str {
    if n == 1 { "" } else { "s" }
}

/// `violated in 2 of 3 trials (95 % interval 21–94 %): overlapping holders, lost updates; data
/// harmed`; trials stopped at their first violation: `broke at trial 1 (stopped there, so no rate):
/// ...`; for a single run, `VIOLATED: ...` or `safe`; `None` when the case did not run.
pub fn trials_line(case: &CaseResult) -> Option<String> {
    if !ran(case) {
        return None;
    }
    let reasons: Vec<&str> = case.safety.reasons.iter().map(|r| r.words()).collect();
    let mut why = if reasons.is_empty() {
        String::new()
    } else {
        format!(": {}", reasons.join(", "))
    };
    if let Some(data) = data_words(case) {
        why = format!("{why}; {data}");
    }
    if let Some(stop) = case.trials.as_ref().and_then(|t| t.stopped_by) {
        why = format!("{why}; trials: {}", stop.describe());
    }
    Some(match &case.trials {
        Some(t) if t.stopped_early => {
            format!(
                "broke at trial {} (stopped there, so no rate){why}",
                t.ran()
            )
        }
        Some(t) => format!(
            "violated in {} of {} trial{}{}{why}",
            t.violated,
            t.runs,
            if t.runs == 1 { "" } else { "s" },
            t.interval()
                .map(|(low, high)| format!(" (95 % interval {})", interval(low, high)))
                .unwrap_or_default()
        ),
        None => format!("{}{why}", verdict_word(Some(case))),
    })
}

/// What a case without fencing tokens says of its data where it would otherwise read intact: the
/// resource cannot tell a stale write from a rightful one without tokens, so none was counted. A lost
/// update, which the resource's counter sees without tokens, still reads harmed.
pub const NO_FENCING_DATA: &str = "no fencing: stale writes not detectable";

/// Whether stale writes of `case` could not be seen: its strategy declared no fencing tokens, or the
/// resource did not check them (then it counted no stale write at all).
pub fn stale_writes_undetectable(case: &CaseResult) -> bool {
    case.capabilities.as_ref().is_some_and(|c| !c.fencing) || !case.safety.fencing.enforced
}

/// What became of the data in a violated case: `data harmed`, `data intact (fenced)` (fencing
/// rejected the stale writes) or `data intact`; when tokens went backwards and nothing else harmed
/// the data, `rightful holder refused: token went backwards` (the write fencing refused was the
/// newer holder's, so nothing about it is intact); for a strategy without fencing tokens whose
/// updates all landed, [`NO_FENCING_DATA`] (a stale write would have gone unseen, so intact would be
/// a claim nothing measured); `None` for a case that is not violated.
pub fn data_words(case: &CaseResult) -> Option<String> {
    if case.safety.verdict != Verdict::Violated {
        return None;
    }
    let data = case.safety.data_state()?;
    if data == DataState::Intact && case.safety.reasons.contains(&Violation::TokenRegressions) {
        return Some(TOKEN_WENT_BACKWARDS.to_owned());
    }
    if data == DataState::Intact && stale_writes_undetectable(case) {
        return Some(NO_FENCING_DATA.to_owned());
    }
    Some(if case.safety.fenced() {
        format!("{} (fenced)", data.words())
    } else {
        data.words().to_owned()
    })
}

/// The verdict with what became of the data: `VIOLATED · data harmed`, `VIOLATED · data intact
/// (fenced)`; otherwise the [`verdict_word`].
pub fn verdict_with_data(case: Option<&CaseResult>) -> String {
    let word = verdict_word(case);
    match case.and_then(data_words) {
        Some(data) => format!("{word} · {data}"),
        None => word.to_owned(),
    }
}

/// The 95 % interval of the violation rate of `case`, when its trials give one (all ran).
pub fn rate_interval(case: &CaseResult) -> Option<String> {
    let (low, high) = case.trials.as_ref()?.interval()?;
    Some(interval(low, high))
}

/// `21–94 %`.
pub fn interval(low: f64, high: f64) -> String {
    format!("{:.0}–{:.0} %", low * 100.0, high * 100.0)
}

/// (violated trials, trials) of a case that ran: its trials, or 1 of 1 / 0 of 1 for a single run.
pub fn violated_of(case: &CaseResult) -> (u32, u32) {
    match &case.trials {
        Some(t) => (t.violated, t.runs),
        None => (u32::from(case.safety.verdict == Verdict::Violated), 1),
    }
}

/// What a violated case whose tokens went backwards did to the data, when nothing else harmed it.
pub const TOKEN_WENT_BACKWARDS: &str = "rightful holder refused: token went backwards";

/// Whether the case has a verdict to show. A violation is shown whatever else happened (the lock
/// broke all the same); safe needs a case that ran (possibly interrupted) without failing, since a
/// failed case's experiment did not happen as described, whatever an older file says.
pub fn ran(case: &CaseResult) -> bool {
    match case.safety.verdict {
        Verdict::Violated => true,
        Verdict::Safe => {
            matches!(case.status, CaseStatus::Complete | CaseStatus::Interrupted)
                && !safe_on_unrecorded_fault(case)
        }
        Verdict::Unknown => false,
    }
}

/// The cell text of a safe case from a file written before faults recorded whether they took
/// effect ([`crate::model::FaultWindow::applied`] missing): it is not read as applied.
pub const FAULT_NOT_RECORDED: &str = "fault not recorded";

/// A safe case with a fault whose effect was not recorded (an older file): no evidence the fault
/// took effect, so nothing says the lock held under it. (A violation such a case saw stands.)
pub fn safe_on_unrecorded_fault(case: &CaseResult) -> bool {
    case.safety.verdict == Verdict::Safe && case.faults.iter().any(|w| w.applied.is_none())
}

/// The cell text of the verdict: `safe`, `VIOLATED`, `skipped`, `failed`, the reason a case that ran
/// has no verdict ([`NoVerdict::words`]: `fault not applied`, `no contention`, `worker died`, ...),
/// `not run`.
pub fn verdict_word(case: Option<&CaseResult>) -> &'static str {
    let Some(c) = case else {
        return "not run";
    };
    if c.safety.verdict == Verdict::Violated {
        return "VIOLATED";
    }
    if let Some(why) = c.safety.no_verdict {
        return why.words();
    }
    if safe_on_unrecorded_fault(c) {
        return FAULT_NOT_RECORDED;
    }
    match (c.safety.verdict, c.status) {
        (_, CaseStatus::Failed) => "failed",
        (Verdict::Safe, _) => "safe",
        (Verdict::Violated, _) => "VIOLATED",
        (Verdict::Unknown, CaseStatus::Skipped) => "skipped",
        (Verdict::Unknown, _) if c.fault_not_applied.is_some() => "fault not applied",
        (Verdict::Unknown, CaseStatus::Complete | CaseStatus::Interrupted) => "held no lock",
    }
}

/// The legend's line on cells without a verdict: each [`NoVerdict`] reason and what it means.
pub fn no_verdict_legend() -> String {
    let each: Vec<String> = NoVerdict::ALL
        .iter()
        .map(|r| format!("\u{201c}{}\u{201d}: {}", r.words(), r.meaning()))
        .collect();
    format!(
        "no verdict (never counted as safe, and in no rate; a violation seen in such a case still reads VIOLATED, with this as its note): {}; “{FAULT_NOT_RECORDED}”: a file written before faults recorded whether they took effect, read as not applied",
        each.join("; ")
    )
}

/// Why a case has no figures or no verdict: its error, else why its fault did not take effect.
pub fn why_not(case: &CaseResult) -> Option<&str> {
    case.error
        .as_deref()
        .or(case.fault_not_applied.as_deref())
        .or_else(|| {
            safe_on_unrecorded_fault(case)
                .then_some("its file does not record whether its fault took effect")
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_case_that_ran_but_held_nothing_is_not_called_not_run() {
        let fixture = include_str!("../tests/fixtures/run-redis-watchdog.json");
        let mut case = crate::model::Results::from_json(fixture)
            .expect("fixture")
            .cases
            .remove(0);
        case.safety.verdict = Verdict::Unknown;
        case.error = Some("held no lock: no acquire succeeded".into());
        assert!(!ran(&case));
        assert_eq!(verdict_word(Some(&case)), "held no lock");
        assert_eq!(why_not(&case), Some("held no lock: no acquire succeeded"));
        case.status = CaseStatus::Failed;
        assert_eq!(verdict_word(Some(&case)), "failed");
        assert_eq!(verdict_word(None), "not run");
    }

    fn fixture_case() -> CaseResult {
        let fixture = include_str!("../tests/fixtures/run-redis-watchdog.json");
        crate::model::Results::from_json(fixture)
            .expect("fixture")
            .cases
            .remove(0)
    }

    #[test]
    fn tokens_that_went_backwards_never_read_as_data_intact() {
        let mut case = fixture_case();
        let s = &mut case.safety;
        s.verdict = Verdict::Violated;
        s.reasons = vec![Violation::TokenRegressions];
        s.data = Some(DataState::Intact);
        s.fencing.enforced = true;
        s.fencing.stale_rejected = Some(1);
        s.fencing.token_regressions = Some(1);
        assert!(
            !case.safety.fenced(),
            "the refused write was the rightful one"
        );
        assert_eq!(
            verdict_with_data(Some(&case)),
            "VIOLATED · rightful holder refused: token went backwards"
        );
        // Harmed data says so first.
        case.safety.data = Some(DataState::Harmed);
        assert_eq!(verdict_with_data(Some(&case)), "VIOLATED · data harmed");
    }

    #[test]
    fn without_fencing_tokens_a_violated_case_never_reads_data_intact() {
        let mut case = fixture_case();
        let s = &mut case.safety;
        s.verdict = Verdict::Violated;
        s.reasons = vec![Violation::Overlap];
        s.data = Some(DataState::Intact);
        s.fencing.enforced = false;
        (s.fencing.stale_rejected, s.fencing.stale_accepted) = (None, None);
        if let Some(caps) = case.capabilities.as_mut() {
            caps.fencing = false;
        }
        assert!(stale_writes_undetectable(&case));
        assert_eq!(
            verdict_with_data(Some(&case)),
            "VIOLATED · no fencing: stale writes not detectable"
        );
        let line = trials_line(&case).expect("ran");
        assert!(
            line.ends_with("; no fencing: stale writes not detectable"),
            "{line}"
        );
        assert!(!line.contains("intact"), "{line}");
        // A lost update is seen without tokens.
        case.safety.lost_updates.lost = 1;
        case.safety.data = Some(DataState::Harmed);
        assert_eq!(verdict_with_data(Some(&case)), "VIOLATED · data harmed");
        // With fencing the resource counts stale writes: intact means intact.
        let mut fenced = fixture_case();
        fenced.safety.verdict = Verdict::Violated;
        fenced.safety.reasons = vec![Violation::Overlap];
        fenced.safety.data = Some(DataState::Intact);
        fenced.safety.fencing.enforced = true;
        assert!(!stale_writes_undetectable(&fenced));
        assert_eq!(verdict_with_data(Some(&fenced)), "VIOLATED · data intact");
    }

    #[test]
    fn broke_at_trial_k_counts_every_trial_run_and_no_counted_trial_gives_no_interval() {
        let mut case = fixture_case();
        case.safety.verdict = Verdict::Violated;
        case.safety.reasons = vec![Violation::Overlap];
        case.safety.data = Some(DataState::Harmed);
        case.trials = Some(crate::model::Trials {
            runs: 1,
            violated: 1,
            rate_low: None,
            rate_high: None,
            stopped_early: true,
            fault_not_applied: 1,
            unknown: 2,
            each: Vec::new(),
            stopped_by: None,
        });
        let line = trials_line(&case).expect("ran");
        assert!(line.starts_with("broke at trial 3 "), "{line}");
        // An older file with an interval although no trial counted: none shown.
        let t = case.trials.as_mut().expect("trials");
        (t.runs, t.violated, t.stopped_early) = (0, 0, false);
        (t.rate_low, t.rate_high) = (Some(0.0), Some(1.0));
        assert_eq!(t.interval(), None);
    }

    #[test]
    fn a_safe_case_whose_fault_was_not_recorded_as_applied_is_not_read_as_applied() {
        let mut case = fixture_case();
        case.safety.verdict = Verdict::Safe;
        case.faults = vec![crate::model::FaultWindow {
            kind: "pause_worker".into(),
            target: "client 1".into(),
            parameters: Default::default(),
            start_ms: 500.0,
            stop_ms: Some(2500.0),
            recovery_ms: None,
            loss_noticed_ms: None,
            note: None,
            applied: None,
            evidence: None,
            cut_short: None,
        }];
        assert!(!ran(&case), "no verdict to count or compare");
        assert_eq!(verdict_word(Some(&case)), FAULT_NOT_RECORDED);
        assert_eq!(
            why_not(&case),
            Some("its file does not record whether its fault took effect")
        );
        case.faults[0].applied = Some(true);
        assert!(ran(&case));
        assert_eq!(verdict_word(Some(&case)), "safe");
    }

    #[test]
    fn slugs_are_file_names() {
        assert_eq!(
            slug("lease-too-short · fixed:1s"),
            "lease-too-short-fixed-1s"
        );
        assert_eq!(slug("Baseline"), "baseline");
    }
}
