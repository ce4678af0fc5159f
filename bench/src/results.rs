//! Turns what the cases measured into the results model (`lockbench_reports::model`): summaries from
//! histograms, the three safety measures and their verdict, costs, and the raw histograms.

use std::collections::BTreeMap;

use lockbench_reports::model::{
    Availability, CaseResult, CaseStatus, ClientCost, DataState, DriverCost, FaultWindow, Fencing,
    Latencies, LoadedLibrary, LostSignal, LostUpdates, NoVerdict, Operations, Orphans, Overlap,
    Renewal, Safety, Summary, Throughput, Verdict, Violation, Window,
};

use crate::driver::case::CaseRun;
use crate::driver::histogram::{Hist, encode, new_hist, summary};
use crate::driver::mode::ModeOutput;
use crate::driver::oracle::OracleFindings;
use crate::driver::resource::ResourceTotals;
use crate::driver::tally::WorkerTally;

fn per_s(n: u64, seconds: f64) -> f64 {
    if seconds > 0.0 {
        n as f64 / seconds
    } else {
        0.0
    }
}

fn mean(sum: u64, n: u64) -> f64 {
    if n > 0 { sum as f64 / n as f64 } else { 0.0 }
}

/// What makes a case violated (docs/design.md §5): overlapping believed-held intervals (`pairs`), lost
/// updates, and — when the strategy has fencing tokens (`fencing`: the resource's totals) — stale
/// writes accepted, tokens that went backwards and duplicate tokens. Each is enough on its own: tokens
/// that regress without any overlap still make fencing reject the legitimate holder's writes.
pub(crate) fn violations(
    pairs: u64,
    lost: u64,
    fencing: Option<&ResourceTotals>,
) -> Vec<Violation> {
    let mut found = Vec::new();
    if pairs > 0 {
        found.push(Violation::Overlap);
    }
    if lost > 0 {
        found.push(Violation::LostUpdates);
    }
    if let Some(r) = fencing {
        // `stale_accepted` counts duplicates too; name them once, as duplicates.
        if r.stale_accepted > r.duplicate_tokens {
            found.push(Violation::StaleWritesAccepted);
        }
        if r.token_regressions > 0 {
            found.push(Violation::TokenRegressions);
        }
        if r.duplicate_tokens > 0 {
            found.push(Violation::DuplicateTokens);
        }
    }
    found
}

/// The verdict of a case that ran. A violation seen is a fact: it makes the case violated whatever
/// else happened (a worker died, the fault did not take effect, nothing was measured), since the lock
/// broke all the same. Without one, the case is safe only when it did not fail and has no
/// [`no_verdict`] reason.
pub(crate) fn judged(
    reasons: &[Violation],
    failed: bool,
    no_verdict: Option<NoVerdict>,
) -> Verdict {
    if !reasons.is_empty() {
        Verdict::Violated
    } else if failed || no_verdict.is_some() {
        Verdict::Unknown
    } else {
        Verdict::Safe
    }
}

/// What a case that ran gives to judge, besides its violations.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Judged<'a> {
    /// The case failed while it ran (`worker N died: …`, a worker's error): its problem.
    pub failed: Option<&'a str>,
    /// Its fault windows.
    pub faults: &'a [FaultWindow],
    /// Length of its measured window, ns: 0 when it stopped before the window began.
    pub measured_ns: u64,
    /// Any acquire succeeded, or any write landed, in the measured window.
    pub held_anything: bool,
    /// Writes the resource accepted (completed critical sections).
    pub completed_writes: u64,
    /// Critical sections whose holder noticed its loss and gave up (`on_lost = abort`): they ran to
    /// their end too, and the grant that followed is what the overlap check judges.
    pub aborted_on_loss: u64,
    /// Some key was wanted by two clients at once: the oracle's `contended`, an acquire that timed
    /// out waiting for a key, or one the end of the case cut short while another client held its key.
    pub contended: bool,
}

/// Why a case that ran would have no verdict, with one line saying so; `None` when nothing stands in
/// the way of one (for a case that failed otherwise, [`judged`] still gives it none). A case whose
/// experiment did not happen as described (a worker died, a fault was cut short or did not take
/// effect, no measured window elapsed) or that had nothing to judge (nothing held, no critical
/// section completed, no key wanted by two clients at once) is never safe. A violation it saw still
/// makes it violated ([`judged`]); the reason is then kept as a note.
pub(crate) fn no_verdict(case: Judged<'_>) -> Option<(NoVerdict, String)> {
    if let Some(problem) = case.failed
        && problem.contains(" died: ")
    {
        return Some((NoVerdict::WorkerDied, problem.to_owned()));
    }
    if let Some(w) = case.faults.iter().find(|w| w.cut_short.is_some()) {
        let why = w.cut_short.as_deref().unwrap_or_default();
        return Some((
            NoVerdict::FaultCutShort,
            format!("fault cut short: {}: {why}", w.kind),
        ));
    }
    if let Some(w) = case.faults.iter().find(|w| w.applied != Some(true)) {
        let why = w
            .evidence
            .as_deref()
            .or(w.note.as_deref())
            .unwrap_or("no evidence it took effect");
        return Some((
            NoVerdict::FaultNotApplied,
            format!("fault not applied: {}: {why}", w.kind),
        ));
    }
    if case.measured_ns == 0 {
        return Some((
            NoVerdict::NothingMeasured,
            "nothing measured: the case stopped before its measured window began, so only its \
             warm-up ran"
                .to_owned(),
        ));
    }
    if !case.held_anything {
        return Some((NoVerdict::HeldNoLock, String::new()));
    }
    if case.completed_writes == 0 && case.aborted_on_loss == 0 {
        return Some((
            NoVerdict::NoCompletedSection,
            "no critical section completed: locks were held but no write landed and no holder gave up on a noticed loss, so nothing ran to its end".to_owned(),
        ));
    }
    if !case.contended {
        return Some((
            NoVerdict::NoContention,
            "no contention: one client per key (no acquire started while another client held its key), so nobody could overlap anyone".to_owned(),
        ));
    }
    None
}

/// The results entry of one case.
pub(crate) fn case_result(run: &CaseRun) -> CaseResult {
    let Some(out) = &run.output else {
        return not_run(run);
    };
    let t = &out.tally;
    let f = &out.findings;
    let seconds = out.measured_ns as f64 / 1e9;
    let judgement = Judgement::of(run, out);
    CaseResult {
        strategy: run.strategy.to_owned(),
        lease: run.lease.to_string(),
        status: run.status,
        error: judgement.error.clone(),
        capabilities: Some(out.capabilities.clone()),
        window: Window {
            warmup_ms: run.warmup.as_secs_f64() * 1e3,
            measured_ms: out.measured_ns as f64 / 1e6,
            wall_ms: None,
        },
        operations: operations(t),
        throughput: throughput(t, seconds),
        latency: Latencies {
            acquire: summary(&t.acquire),
            handoff: summary(&f.handoff),
            hold: summary(&t.hold),
            release: summary(&t.release),
        },
        renewal: renewal(t, seconds),
        safety: safety(out, &judgement),
        client_cost: out.client_cost.clone(),
        server_cost: run.server_cost.clone(),
        driver: driver_cost(t),
        histograms: histograms(t, f),
        faults: run.faults.clone(),
        holder_sample: f.holder_sample.clone(),
        trials: None,
        orphans: orphans(&f.orphan_waits, out.measured_ns),
        renew_after_unlock: run.renew_after_unlock.clone(),
        protocol_round_trip_ms: out.protocol_round_trip.map(|d| d.as_secs_f64() * 1e3),
        library: out
            .library
            .clone()
            .map(|(name, version)| LoadedLibrary { name, version }),
        adapter_processes: out.adapter_processes,
        fault_not_applied: judgement.not_applied,
        availability: availability(run, out),
    }
}

/// The safety judgement of a case that ran: its verdict, the violations behind it, why it has none,
/// and the note and fault-not-applied line its entry carries.
#[derive(Debug)]
struct Judgement {
    /// The verdict ([`judged`]).
    verdict: Verdict,
    /// What made it violated ([`violations`]).
    reasons: Vec<Violation>,
    /// Why it has no verdict ([`no_verdict`]); `None` when violated, since the lock broke all the same.
    no_verdict: Option<NoVerdict>,
    /// Updates lost: completed writes the final counters do not show.
    lost: u64,
    /// The case's note (`error`).
    error: Option<String>,
    /// The line saying its fault did not take effect (`fault_not_applied`).
    not_applied: Option<String>,
}

impl Judgement {
    /// Judges the case `run` from what it measured (`out`).
    fn of(run: &CaseRun, out: &ModeOutput) -> Judgement {
        let r = &out.resource;
        let lost = r.completed_writes.saturating_sub(r.final_counter_sum);
        let reasons = violations(
            out.findings.pairs,
            lost,
            out.capabilities.fencing.then_some(r),
        );
        let failed = (run.status == CaseStatus::Failed).then(|| run.error.as_deref().unwrap_or(""));
        let why_none = no_verdict(Judged {
            failed,
            faults: &run.faults,
            measured_ns: out.measured_ns,
            held_anything: r.measured_writes > 0 || out.tally.acquired > 0,
            completed_writes: r.completed_writes,
            aborted_on_loss: out.tally.aborted_on_loss,
            contended: contended(out),
        });
        let verdict = judged(
            &reasons,
            failed.is_some(),
            why_none.as_ref().map(|(w, _)| *w),
        );
        let (mut not_applied, mut error) = notes(run, out.measured_ns, why_none.as_ref());
        let mut why_none = why_none.map(|(w, _)| w);
        if verdict == Verdict::Violated && why_none.is_some() {
            // The lock broke all the same: what would have withheld a verdict stays as the case's note.
            why_none = None;
            error = match (not_applied.take(), error) {
                (Some(line), Some(note)) => Some(format!("{line}; {note}")),
                (line, note) => line.or(note),
            };
        }
        Judgement {
            verdict,
            reasons,
            no_verdict: why_none,
            lost,
            error,
            not_applied,
        }
    }
}

/// Whether some key was wanted by two clients at once ([`Judged::contended`]): the oracle saw it, an
/// acquire timed out waiting, or one the end of the case cut short waited for a held key.
fn contended(out: &ModeOutput) -> bool {
    let (t, f) = (&out.tally, &out.findings);
    f.contended
        || t.acquire_errors.get("timeout").is_some_and(|n| *n > 0)
        || t.cut_acquires
            .iter()
            .any(|&(key, called, returned)| f.waited(key, called, returned))
}

/// The fault-not-applied line and the note of a case that ran, from why it has no verdict
/// (`why_none`) and the error it had.
fn notes(
    run: &CaseRun,
    measured_ns: u64,
    why_none: Option<&(NoVerdict, String)>,
) -> (Option<String>, Option<String>) {
    match why_none {
        Some((NoVerdict::FaultNotApplied, line)) => (Some(line.clone()), run.error.clone()),
        Some((NoVerdict::HeldNoLock, _)) => (
            None,
            run.error
                .clone()
                .or_else(|| Some(held_nothing(run, measured_ns))),
        ),
        Some((NoVerdict::WorkerDied, line)) => (None, Some(line.clone())),
        Some((_, line)) => (
            None,
            Some(match &run.error {
                Some(note) => format!("{line}; {note}"),
                None => line.clone(),
            }),
        ),
        None => (None, run.error.clone()),
    }
}

/// The safety block of a case that ran: its judgement and the three measures behind it (overlap,
/// lost updates, fencing), with how its holders learned of a lost lock.
fn safety(out: &ModeOutput, judgement: &Judgement) -> Safety {
    let (f, r) = (&out.findings, &out.resource);
    let fencing = out.capabilities.fencing;
    let stale_accepted = fencing.then_some(r.stale_accepted);
    let (verdict, lost) = (judgement.verdict, judgement.lost);
    Safety {
        verdict,
        data: (verdict != Verdict::Unknown).then(|| DataState::of(lost, stale_accepted)),
        no_verdict: judgement.no_verdict,
        reasons: judgement.reasons.clone(),
        overlap: Overlap {
            pairs: f.pairs,
            total_ms: f.total_ns as f64 / 1e6,
            max_ms: f.max_ns as f64 / 1e6,
            keys: f.keys,
            unnoticed_pairs: f.unnoticed_pairs,
            examples: f.examples.clone(),
        },
        lost_updates: LostUpdates {
            completed_writes: r.completed_writes,
            final_counter_sum: r.final_counter_sum,
            lost,
        },
        fencing: Fencing {
            enforced: fencing,
            stale_rejected: fencing.then_some(r.stale_rejected),
            stale_accepted,
            duplicate_tokens: fencing.then_some(r.duplicate_tokens),
            token_regressions: fencing.then_some(r.token_regressions),
        },
        lost_signal: LostSignal {
            fired: f.lost_fired,
            too_late: f.lost_too_late,
            lateness: summary(&f.lateness),
        },
    }
}

/// The lock operations the workers counted.
fn operations(t: &WorkerTally) -> Operations {
    Operations {
        acquired: t.acquired,
        completed: t.completed,
        aborted_on_loss: t.aborted_on_loss,
        rejected_writes: t.rejected_writes,
        stopped: t.stopped,
        acquire_errors: t.acquire_errors.clone(),
        release_errors: t.release_errors.clone(),
    }
}

/// Completed critical sections per second over the measured window (`seconds`), overall and for each
/// whole second of it.
fn throughput(t: &WorkerTally, seconds: f64) -> Throughput {
    let mut timeline = t.timeline.clone();
    timeline.truncate(seconds.floor() as usize);
    Throughput {
        completed_per_s: per_s(t.completed, seconds),
        timeline_per_s: timeline,
    }
}

/// The lease renewals the clients made over the measured window (`seconds`), and how they went.
fn renewal(t: &WorkerTally, seconds: f64) -> Renewal {
    Renewal {
        renewals: t.renewal.renewals,
        renewals_per_s: per_s(t.renewal.renewals, seconds),
        failures: t.renewal.failures,
        round_trip: summary(&t.renewal.round_trip),
        lag: summary(&t.renewal.lag),
        margin: summary(&t.renewal.margin),
        losses: t.renewal.losses.clone(),
    }
}

/// The driver's own time per cycle, around the strategy's.
fn driver_cost(t: &WorkerTally) -> DriverCost {
    DriverCost {
        cycles: t.cycles,
        cycle_ns: mean(t.cycle_ns, t.cycles),
        strategy_ns: mean(t.strategy_ns, t.cycles),
        overhead_ns: mean(t.overhead_ns, t.cycles),
    }
}

/// The raw histograms that recorded anything, encoded, by name.
fn histograms(t: &WorkerTally, f: &OracleFindings) -> BTreeMap<String, String> {
    [
        ("acquire", &t.acquire),
        ("handoff", &f.handoff),
        ("hold", &t.hold),
        ("release", &t.release),
        ("renew_round_trip", &t.renewal.round_trip),
        ("renew_lag", &t.renewal.lag),
        ("renew_margin", &t.renewal.margin),
        ("loss_lateness", &f.lateness),
    ]
    .into_iter()
    .filter(|(_, h)| !h.is_empty())
    .map(|(name, h)| (name.to_owned(), encode(h)))
    .collect()
}

/// How available the lock stayed in a case with faults: grants over time, the longest stretch of the
/// measured window without one, and the longest in which a client waited for a key nobody held;
/// `None` for a case without faults.
fn availability(run: &CaseRun, out: &ModeOutput) -> Option<Availability> {
    (!run.faults.is_empty()).then(|| {
        out.findings.availability(
            &out.tally.cut_acquires,
            run.warmup.as_nanos() as u64,
            out.measured_ns,
        )
    })
}

/// Why a case that ran has no verdict although its fault (if any) took effect: no client held the lock
/// and nothing broke, so there is no evidence either way (a client still starting up, such as a cold JVM
/// adapter, or every acquire timing out).
fn held_nothing(run: &CaseRun, measured_ns: u64) -> String {
    format!(
        "held no lock: no acquire succeeded in its {:.1} s measured window after a {} warm-up, so no evidence either way",
        measured_ns as f64 / 1e9,
        crate::base::duration::format_duration(run.warmup)
    )
}

/// The orphaned holds' lock-unavailable times, capped at the end of the measured window.
fn orphans(waits: &[(u64, Option<u64>)], measured_ns: u64) -> Option<Orphans> {
    if waits.is_empty() {
        return None;
    }
    let unavailable_ms = waits
        .iter()
        .map(|(at, wait)| {
            let ns = wait.unwrap_or_else(|| measured_ns.saturating_sub(*at));
            ns as f64 / 1e6
        })
        .collect();
    Some(Orphans {
        holds: waits.len() as u64,
        unavailable_ms,
        capped: waits.iter().filter(|(_, w)| w.is_none()).count() as u64,
    })
}

/// The entry of a case that produced no figures.
fn not_run(run: &CaseRun) -> CaseResult {
    let empty: Hist = new_hist();
    let none = summary(&empty);
    CaseResult {
        strategy: run.strategy.to_owned(),
        lease: run.lease.to_string(),
        status: if run.status == CaseStatus::Complete {
            CaseStatus::Failed
        } else {
            run.status
        },
        error: run.error.clone(),
        capabilities: None,
        window: Window {
            warmup_ms: 0.0,
            measured_ms: 0.0,
            wall_ms: None,
        },
        operations: Operations::default(),
        throughput: Throughput {
            completed_per_s: 0.0,
            timeline_per_s: Vec::new(),
        },
        latency: Latencies {
            acquire: none.clone(),
            handoff: none.clone(),
            hold: none.clone(),
            release: none.clone(),
        },
        renewal: no_renewal(&none),
        safety: unjudged(none),
        client_cost: ClientCost {
            scope: "driver_process".to_owned(),
            threads_max: 0,
            rss_max_bytes: 0,
            cpu_seconds: 0.0,
            cpu_cores: 0.0,
        },
        server_cost: None,
        driver: DriverCost {
            cycles: 0,
            cycle_ns: 0.0,
            strategy_ns: 0.0,
            overhead_ns: 0.0,
        },
        histograms: BTreeMap::new(),
        faults: run.faults.clone(),
        holder_sample: None,
        trials: None,
        orphans: None,
        renew_after_unlock: run.renew_after_unlock.clone(),
        protocol_round_trip_ms: None,
        library: None,
        adapter_processes: None,
        fault_not_applied: None,
        availability: None,
    }
}

/// No renewals, each latency the empty summary `none`: those of a case that produced no figures.
fn no_renewal(none: &Summary) -> Renewal {
    Renewal {
        renewals: 0,
        renewals_per_s: 0.0,
        failures: 0,
        round_trip: none.clone(),
        lag: none.clone(),
        margin: none.clone(),
        losses: BTreeMap::new(),
    }
}

/// The safety block of a case that produced no figures: no verdict, every measure zero, the loss
/// signal's lateness the empty summary `none`.
fn unjudged(none: Summary) -> Safety {
    Safety {
        verdict: Verdict::Unknown,
        reasons: Vec::new(),
        overlap: Overlap {
            pairs: 0,
            total_ms: 0.0,
            max_ms: 0.0,
            keys: 0,
            unnoticed_pairs: 0,
            examples: Vec::new(),
        },
        lost_updates: LostUpdates {
            completed_writes: 0,
            final_counter_sum: 0,
            lost: 0,
        },
        fencing: Fencing {
            enforced: false,
            stale_rejected: None,
            stale_accepted: None,
            duplicate_tokens: None,
            token_regressions: None,
        },
        lost_signal: LostSignal {
            fired: 0,
            too_late: 0,
            lateness: none,
        },
        data: None,
        no_verdict: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::clock::MonoClock;
    use crate::base::holds::{EndedBy, Interval, IntervalBatch};
    use crate::base::stop::StopSignal;
    use crate::driver::oracle::Oracle;
    use crate::driver::resource::Resource;

    /// The verdict of a hand-made history: `holds` are (client, start, end) on key 0, one lease each,
    /// the lease's token in `tokens`; each holder reads the counter at its start and writes at its end.
    fn judge(holds: &[(u32, u64, u64)], tokens: &[u64]) -> (Vec<Violation>, ResourceTotals) {
        let resource = Resource::new(1, MonoClock::new(), None, StopSignal::new());
        for (lease, &token) in tokens.iter().enumerate().take(holds.len()) {
            let value = resource.read(0, Some(token));
            resource.write(0, value + 1, Some(token), lease as u64);
        }
        let (pairs, lost, totals) = outcome(holds, &resource);
        (violations(pairs, lost, Some(&totals)), totals)
    }

    /// What the oracle and `resource` make of `holds` (client, start, end) on key 0, one lease each:
    /// overlapping pairs, lost updates and the resource's totals.
    fn outcome(holds: &[(u32, u64, u64)], resource: &Resource) -> (u64, u64, ResourceTotals) {
        let mut oracle = Oracle::new(1, 2, 0, 0);
        for &(client, start, end) in holds {
            oracle.add(IntervalBatch {
                client,
                intervals: vec![Interval {
                    key: 0,
                    acquire_started: start,
                    start,
                    end,
                    ended_by: EndedBy::Released,
                }],
                low_bound: u64::MAX,
                history: Vec::new(),
            });
        }
        let totals = resource.totals();
        let lost = totals
            .completed_writes
            .saturating_sub(totals.final_counter_sum);
        (oracle.finish().pairs, lost, totals)
    }

    #[test]
    fn tokens_going_backwards_without_any_overlap_are_violated() {
        // Three holders one after the other, never overlapping; the third lease got a smaller token
        // than the second (as after a failover that lost the counter's last increment).
        let (reasons, totals) = judge(&[(0, 0, 10), (1, 20, 30), (0, 40, 50)], &[5, 6, 4]);
        assert_eq!(totals.stale_accepted, 0, "no stale write slipped through");
        assert_eq!(
            totals.stale_rejected, 1,
            "the legitimate third holder was refused"
        );
        assert_eq!(reasons, vec![Violation::TokenRegressions]);
        assert_eq!(judged(&reasons, false, None), Verdict::Violated);
    }

    #[test]
    fn a_repeated_token_without_overlap_is_violated_and_increasing_tokens_are_safe() {
        let (reasons, _) = judge(&[(0, 0, 10), (1, 20, 30)], &[7, 7]);
        assert_eq!(reasons, vec![Violation::DuplicateTokens]);
        let (reasons, _) = judge(&[(0, 0, 10), (1, 20, 30), (0, 40, 50)], &[1, 2, 3]);
        assert!(reasons.is_empty(), "{reasons:?}");
        assert_eq!(judged(&reasons, false, None), Verdict::Safe);
    }

    /// A paused holder (lease 0, token 1) read the counter, the next holder (lease 1, token 2) read
    /// and wrote while the first still believed it held the key, then the paused one wrote: the
    /// violations and what became of the data, with and without fencing tokens.
    fn paused_holder_writes_late(fencing: bool) -> (Vec<Violation>, DataState, ResourceTotals) {
        let resource = Resource::new(1, MonoClock::new(), None, StopSignal::new());
        let token = |t: u64| fencing.then_some(t);
        let paused = resource.read(0, token(1));
        let next = resource.read(0, token(2));
        resource.write(0, next + 1, token(2), 1);
        resource.write(0, paused + 1, token(1), 0);
        let (pairs, lost, totals) = outcome(&[(0, 0, 100), (1, 50, 150)], &resource);
        let fenced = fencing.then_some(&totals);
        let data = DataState::of(lost, fenced.map(|r| r.stale_accepted));
        (violations(pairs, lost, fenced), data, totals)
    }

    #[test]
    fn overlapping_holders_break_the_lock_but_fencing_keeps_the_data_intact() {
        let (reasons, data, totals) = paused_holder_writes_late(true);
        assert_eq!(
            reasons,
            vec![Violation::Overlap],
            "the lock's promise broke"
        );
        assert_eq!(judged(&reasons, false, None), Verdict::Violated);
        assert_eq!(totals.stale_rejected, 1, "fencing refused the stale write");
        assert_eq!(data, DataState::Intact);

        let (reasons, data, _) = paused_holder_writes_late(false);
        assert_eq!(
            reasons,
            vec![Violation::Overlap, Violation::LostUpdates],
            "without tokens the stale write overwrote the newer one"
        );
        assert_eq!(data, DataState::Harmed);
        assert_eq!(
            DataState::of(0, Some(1)),
            DataState::Harmed,
            "stale accepted"
        );
    }

    fn window(applied: Option<bool>) -> FaultWindow {
        FaultWindow {
            kind: "pause_worker".into(),
            target: "client 1".into(),
            parameters: BTreeMap::new(),
            start_ms: 500.0,
            stop_ms: Some(2500.0),
            recovery_ms: None,
            loss_noticed_ms: None,
            note: None,
            applied,
            evidence: Some("worker process 4242 was already gone".into()),
            cut_short: None,
        }
    }

    /// A case that ran with `faults`, held locks, completed writes and had contention.
    fn ran_with(faults: &[FaultWindow]) -> Judged<'_> {
        Judged {
            failed: None,
            faults,
            measured_ns: 1_000_000_000,
            held_anything: true,
            completed_writes: 10,
            aborted_on_loss: 0,
            contended: true,
        }
    }

    /// The verdict and the no-verdict reason of a case with `reasons` and `case`.
    fn judge_case(reasons: &[Violation], case: Judged<'_>) -> (Verdict, Option<NoVerdict>, String) {
        let why = no_verdict(case);
        let verdict = judged(
            reasons,
            case.failed.is_some(),
            why.as_ref().map(|(w, _)| *w),
        );
        let (reason, line) = why.unzip();
        (verdict, reason, line.unwrap_or_default())
    }

    #[test]
    fn a_case_whose_fault_did_not_apply_has_no_verdict() {
        let failed = [window(Some(true)), window(Some(false))];
        let (verdict, why, line) = judge_case(&[], ran_with(&failed));
        assert_eq!(verdict, Verdict::Unknown, "never safe");
        assert_eq!(why, Some(NoVerdict::FaultNotApplied));
        assert_eq!(
            line,
            "fault not applied: pause_worker: worker process 4242 was already gone"
        );
        // Overlapping holders without the fault: the lock broke all the same.
        let (verdict, _, _) = judge_case(&[Violation::Overlap], ran_with(&failed));
        assert_eq!(verdict, Verdict::Violated);
        // Not recorded is no evidence: never safe.
        let unrecorded = [window(Some(true)), window(None)];
        assert_eq!(
            judge_case(&[], ran_with(&unrecorded)).1,
            Some(NoVerdict::FaultNotApplied)
        );
        assert_eq!(
            judge_case(&[], ran_with(&[window(Some(true))])).0,
            Verdict::Safe
        );
    }

    #[test]
    fn a_fault_cut_short_by_the_end_of_the_case_gives_no_verdict() {
        let mut cut = window(Some(true));
        cut.cut_short = Some("the case ended 500ms into its 2s window".into());
        let faults = [cut];
        let (verdict, why, line) = judge_case(&[], ran_with(&faults));
        assert_eq!(
            (verdict, why),
            (Verdict::Unknown, Some(NoVerdict::FaultCutShort))
        );
        assert_eq!(
            line,
            "fault cut short: pause_worker: the case ended 500ms into its 2s window"
        );
        let (verdict, _, _) = judge_case(&[Violation::Overlap], ran_with(&faults));
        assert_eq!(verdict, Verdict::Violated, "an overlap seen is a fact");
    }

    #[test]
    fn a_case_that_measured_nothing_is_never_safe() {
        // Interrupted in its warm-up, or a window that never opened: only the warm-up ran.
        let empty = Judged {
            measured_ns: 0,
            ..ran_with(&[])
        };
        let (verdict, why, line) = judge_case(&[], empty);
        assert_eq!(
            (verdict, why),
            (Verdict::Unknown, Some(NoVerdict::NothingMeasured))
        );
        assert!(line.starts_with("nothing measured"), "{line}");
        // What the warm-up broke is still a broken lock.
        assert_eq!(
            judge_case(&[Violation::Overlap], empty).0,
            Verdict::Violated
        );
    }

    #[test]
    fn a_case_with_nothing_to_judge_is_never_safe() {
        let nothing_held = Judged {
            held_anything: false,
            completed_writes: 0,
            ..ran_with(&[])
        };
        assert_eq!(judge_case(&[], nothing_held).1, Some(NoVerdict::HeldNoLock));
        let none_completed = Judged {
            completed_writes: 0,
            ..ran_with(&[])
        };
        let (verdict, why, line) = judge_case(&[], none_completed);
        assert_eq!(
            (verdict, why),
            (Verdict::Unknown, Some(NoVerdict::NoCompletedSection))
        );
        assert!(line.starts_with("no critical section completed"), "{line}");
        // A holder that gave up on a noticed loss ended its section: the next grant is judged.
        let gave_up = Judged {
            aborted_on_loss: 1,
            ..none_completed
        };
        assert_eq!(judge_case(&[], gave_up).0, Verdict::Safe);
        let alone = Judged {
            contended: false,
            ..ran_with(&[])
        };
        let (verdict, why, line) = judge_case(&[], alone);
        assert_eq!(
            (verdict, why),
            (Verdict::Unknown, Some(NoVerdict::NoContention))
        );
        assert!(
            line.starts_with("no contention: one client per key"),
            "{line}"
        );
        // A violation seen stands: there was something to judge after all.
        assert_eq!(
            judge_case(&[Violation::LostUpdates], none_completed).0,
            Verdict::Violated
        );
        assert_eq!(judge_case(&[], ran_with(&[])).0, Verdict::Safe);
    }

    #[test]
    fn a_case_whose_worker_died_is_not_safe_but_a_violation_it_saw_stands() {
        let died = "worker 2 died: killed by signal 9 (SIGKILL); what it reported up to its death is kept (1 hold it had not reported recovered from the resource)";
        let case = Judged {
            failed: Some(died),
            ..ran_with(&[])
        };
        let (verdict, why, line) = judge_case(&[], case);
        assert_eq!(
            (verdict, why),
            (Verdict::Unknown, Some(NoVerdict::WorkerDied))
        );
        assert_eq!(line, died);
        assert_eq!(judge_case(&[Violation::Overlap], case).0, Verdict::Violated);
        // Another failure has no reason of its own, and no verdict either.
        let other = Judged {
            failed: Some("workers did not stop within 5s"),
            ..ran_with(&[])
        };
        assert_eq!(
            judge_case(&[], other),
            (Verdict::Unknown, None, String::new())
        );
    }

    #[test]
    fn overlap_and_lost_updates_are_named() {
        assert_eq!(violations(1, 0, None), vec![Violation::Overlap]);
        assert_eq!(
            violations(2, 3, None),
            vec![Violation::Overlap, Violation::LostUpdates]
        );
        let stale = ResourceTotals {
            stale_accepted: 1,
            ..ResourceTotals::default()
        };
        assert_eq!(
            violations(0, 0, Some(&stale)),
            vec![Violation::StaleWritesAccepted]
        );
    }
}
