//! Repeated trials of one case (docs/design.md §5, verdicts and trials): pooling the trials' results
//! entries into one — counts summed, histograms merged and summarised again, the verdict violated
//! when any trial was, and `trials` saying how many were, with the 95 % Wilson interval of the
//! violation rate (`lockbench_reports::rate_interval::wilson`).

use std::collections::BTreeMap;

use lockbench_reports::histogram::{Hist, decode, encode, summary};
use lockbench_reports::model::{
    CaseResult, CaseStatus, DataState, Safety, ServerCost, Summary, Trial, Trials, Verdict,
};
use lockbench_reports::rate_interval::wilson;

/// Most overlap examples kept after pooling (as one case keeps).
const MAX_EXAMPLES: usize = 20;

/// Pools the trials of one case, given with their seeds in run order (`None` when there are none). Trials that
/// produced no verdict (skipped, failed before starting, their fault did not take effect) count in no
/// rate; when none has one, the first entry stands for the case. A trial that saw a violation is
/// violated whatever else it says (an older file may call it unknown): what any trial saw is never
/// dropped. Every distinct error of the trials stays in the case's note. The holder timeline comes
/// from the first trial with an overlap. `stopped_early`: the trials stopped at the first violated
/// one before all planned ran (sequential sampling), so they give no rate interval.
pub(crate) fn pool(mut trials: Vec<(u64, CaseResult)>, stopped_early: bool) -> Option<CaseResult> {
    for (_, c) in &mut trials {
        if !c.safety.reasons.is_empty() && c.safety.verdict != Verdict::Violated {
            c.safety.verdict = Verdict::Violated;
            c.safety.no_verdict = None;
        }
    }
    let each: Vec<Trial> = trials
        .iter()
        .filter(|(_, c)| c.safety.verdict != Verdict::Unknown)
        .map(|(seed, c)| Trial {
            seed: *seed,
            verdict: c.safety.verdict,
            reasons: c.safety.reasons.clone(),
            completed: c.operations.completed,
            measured_ms: Some(c.window.measured_ms),
        })
        .collect();
    let runs = each.len() as u32;
    // Trials that ran (they have figures) without a verdict: a fault not applied or cut short, a
    // dead worker, nothing to judge.
    let unknown = trials
        .iter()
        .filter(|(_, c)| c.safety.verdict == Verdict::Unknown && c.capabilities.is_some())
        .count() as u32;
    let violated = each
        .iter()
        .filter(|t| t.verdict == Verdict::Violated)
        .count() as u32;
    let (rate_low, rate_high) = wilson(violated, runs);
    let status = pooled_status(trials.iter().map(|(_, c)| c.status), runs > 0);
    let mut errors: Vec<String> = Vec::new();
    for error in trials.iter().filter_map(|(_, c)| c.error.clone()) {
        if !errors.contains(&error) {
            errors.push(error);
        }
    }
    let error = (!errors.is_empty()).then(|| errors.join("; "));
    let not_applied: Vec<String> = trials
        .iter()
        .filter_map(|(_, c)| c.fault_not_applied.clone())
        .collect();
    let first = trials.first().map(|(_, c)| c.clone())?;
    let mut ran: Vec<CaseResult> = trials
        .into_iter()
        .map(|(_, c)| c)
        .filter(|c| c.safety.verdict != Verdict::Unknown)
        .collect();
    let sample = ran
        .iter()
        .find(|c| c.safety.overlap.pairs > 0)
        .or(ran.first())
        .and_then(|c| c.holder_sample.clone());
    let mut pooled = if ran.is_empty() {
        first
    } else {
        let mut pooled = ran.remove(0);
        let mut histograms = decode_all(&pooled);
        for other in &ran {
            add_case(&mut pooled, other, &mut histograms);
        }
        finish(&mut pooled, &histograms);
        pooled.holder_sample = sample;
        pooled
    };
    pooled.status = status;
    pooled.error = error;
    // With a verdict from other trials, the ones whose fault failed are only counted.
    pooled.fault_not_applied = if runs == 0 {
        not_applied.first().cloned()
    } else {
        None
    };
    // No interval without a fixed number of trials, nor without a trial that counts.
    let has_rate = !stopped_early && runs > 0;
    pooled.trials = Some(Trials {
        runs,
        violated,
        rate_low: has_rate.then_some(rate_low),
        rate_high: has_rate.then_some(rate_high),
        stopped_early,
        fault_not_applied: not_applied.len() as u32,
        unknown,
        each,
        stopped_by: None,
    });
    Some(pooled)
}

/// Interrupted trials mark the pooled case so; failed ones only when no trial has a verdict (a failed
/// trial counts in no rate, and its error stays as the case's note); skipped ones only when all were.
fn pooled_status(statuses: impl Iterator<Item = CaseStatus>, judged: bool) -> CaseStatus {
    let all: Vec<CaseStatus> = statuses.collect();
    if all.contains(&CaseStatus::Interrupted) {
        return CaseStatus::Interrupted;
    }
    if all.contains(&CaseStatus::Failed) && !judged {
        return CaseStatus::Failed;
    }
    if all.iter().all(|s| *s == CaseStatus::Skipped) {
        CaseStatus::Skipped
    } else {
        CaseStatus::Complete
    }
}

fn decode_all(case: &CaseResult) -> BTreeMap<String, Hist> {
    case.histograms
        .iter()
        .filter_map(|(name, text)| Some((name.clone(), decode(text).ok()?)))
        .collect()
}

fn add_map(into: &mut BTreeMap<String, u64>, from: &BTreeMap<String, u64>) {
    for (k, v) in from {
        *into.entry(k.clone()).or_default() += v;
    }
}

fn add_opt(into: &mut Option<u64>, from: Option<u64>) {
    if let Some(v) = from {
        *into = Some(into.unwrap_or(0) + v);
    }
}

/// Adds `other`'s counts into `into` and its histograms into `histograms`.
fn add_case(into: &mut CaseResult, other: &CaseResult, histograms: &mut BTreeMap<String, Hist>) {
    add_histograms(histograms, other);
    add_findings(into, other);
    add_client_facts(into, other);
    add_counts(into, other);
    add_safety(&mut into.safety, &other.safety);
    add_costs(into, other);
    into.faults.extend(other.faults.iter().cloned());
}

/// Merges `other`'s histograms into `histograms`, by name.
fn add_histograms(histograms: &mut BTreeMap<String, Hist>, other: &CaseResult) {
    for (name, hist) in decode_all(other) {
        match histograms.get_mut(&name) {
            Some(h) => {
                let _ = h.add(&hist);
            }
            None => {
                histograms.insert(name, hist);
            }
        }
    }
}

/// Adds `other`'s orphaned holds and renewals after unlock into `into`'s.
fn add_findings(into: &mut CaseResult, other: &CaseResult) {
    match (&mut into.orphans, &other.orphans) {
        (Some(a), Some(b)) => {
            a.holds += b.holds;
            a.capped += b.capped;
            a.unavailable_ms.extend_from_slice(&b.unavailable_ms);
        }
        (a @ None, b) => a.clone_from(b),
        (Some(_), None) => {}
    }
    match (&mut into.renew_after_unlock, &other.renew_after_unlock) {
        (Some(a), Some(b)) => {
            a.renew_calls += b.renew_calls;
            a.on_released_keys += b.on_released_keys;
            a.releases += b.releases;
        }
        (a @ None, b) => a.clone_from(b),
        (Some(_), None) => {}
    }
}

/// Fills in what `into`'s client did not report (capabilities, library, adapter processes) from
/// `other`'s, and keeps the smaller protocol round trip.
fn add_client_facts(into: &mut CaseResult, other: &CaseResult) {
    if into.capabilities.is_none() {
        into.capabilities.clone_from(&other.capabilities);
    }
    if into.library.is_none() {
        into.library.clone_from(&other.library);
    }
    into.adapter_processes = into.adapter_processes.or(other.adapter_processes);
    // The protocol's floor: the smallest round trip any trial's client measured.
    into.protocol_round_trip_ms = match (into.protocol_round_trip_ms, other.protocol_round_trip_ms)
    {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    };
}

/// Adds `other`'s windows, operations, throughput timeline and renewal counts into `into`'s.
fn add_counts(into: &mut CaseResult, other: &CaseResult) {
    into.window.measured_ms += other.window.measured_ms;
    into.window.wall_ms = match (into.window.wall_ms, other.window.wall_ms) {
        (Some(a), Some(b)) => Some(a + b),
        (a, b) => a.or(b),
    };
    let (o, x) = (&mut into.operations, &other.operations);
    o.acquired += x.acquired;
    o.completed += x.completed;
    o.aborted_on_loss += x.aborted_on_loss;
    o.rejected_writes += x.rejected_writes;
    o.stopped += x.stopped;
    add_map(&mut o.acquire_errors, &x.acquire_errors);
    add_map(&mut o.release_errors, &x.release_errors);
    into.throughput
        .timeline_per_s
        .extend_from_slice(&other.throughput.timeline_per_s);
    let (r, x) = (&mut into.renewal, &other.renewal);
    r.renewals += x.renewals;
    r.failures += x.failures;
    add_map(&mut r.losses, &x.losses);
}

/// Adds a trial's safety block `x` into `s`: reasons joined, violated if either was, data harmed if
/// either was, the measures summed (overlap examples up to [`MAX_EXAMPLES`]).
fn add_safety(s: &mut Safety, x: &Safety) {
    for reason in &x.reasons {
        if !s.reasons.contains(reason) {
            s.reasons.push(*reason);
        }
    }
    s.reasons.sort();
    if x.verdict == Verdict::Violated {
        s.verdict = Verdict::Violated;
    }
    if x.data == Some(DataState::Harmed) || s.data.is_none() {
        s.data = x.data;
    }
    s.overlap.pairs += x.overlap.pairs;
    s.overlap.total_ms += x.overlap.total_ms;
    s.overlap.max_ms = s.overlap.max_ms.max(x.overlap.max_ms);
    s.overlap.keys += x.overlap.keys;
    s.overlap.unnoticed_pairs += x.overlap.unnoticed_pairs;
    let room = MAX_EXAMPLES.saturating_sub(s.overlap.examples.len());
    s.overlap
        .examples
        .extend(x.overlap.examples.iter().take(room).cloned());
    s.lost_updates.completed_writes += x.lost_updates.completed_writes;
    s.lost_updates.final_counter_sum += x.lost_updates.final_counter_sum;
    s.lost_updates.lost += x.lost_updates.lost;
    s.fencing.enforced |= x.fencing.enforced;
    add_opt(&mut s.fencing.stale_rejected, x.fencing.stale_rejected);
    add_opt(&mut s.fencing.stale_accepted, x.fencing.stale_accepted);
    add_opt(&mut s.fencing.duplicate_tokens, x.fencing.duplicate_tokens);
    add_opt(
        &mut s.fencing.token_regressions,
        x.fencing.token_regressions,
    );
    s.lost_signal.fired += x.lost_signal.fired;
    s.lost_signal.too_late += x.lost_signal.too_late;
}

/// Adds `other`'s client, server and driver costs into `into`'s: peaks kept, totals summed, the
/// driver's per-cycle times weighed by cycles.
fn add_costs(into: &mut CaseResult, other: &CaseResult) {
    let c = &mut into.client_cost;
    c.threads_max = c.threads_max.max(other.client_cost.threads_max);
    c.rss_max_bytes = c.rss_max_bytes.max(other.client_cost.rss_max_bytes);
    c.cpu_seconds += other.client_cost.cpu_seconds;
    into.server_cost = match (into.server_cost.take(), &other.server_cost) {
        (Some(a), Some(b)) => Some(add_server(a, b)),
        (a, b) => a.or_else(|| b.clone()),
    };
    let d = &mut into.driver;
    let x = &other.driver;
    let cycles = d.cycles + x.cycles;
    if cycles > 0 {
        let weigh = |a: f64, b: f64| (a * d.cycles as f64 + b * x.cycles as f64) / cycles as f64;
        (d.cycle_ns, d.strategy_ns, d.overhead_ns) = (
            weigh(d.cycle_ns, x.cycle_ns),
            weigh(d.strategy_ns, x.strategy_ns),
            weigh(d.overhead_ns, x.overhead_ns),
        );
    }
    d.cycles = cycles;
}

fn add_server(mut a: ServerCost, b: &ServerCost) -> ServerCost {
    let seconds = |c: &ServerCost| {
        if c.requests_per_s > 0.0 {
            c.requests as f64 / c.requests_per_s
        } else {
            0.0
        }
    };
    let total_s = seconds(&a) + seconds(b);
    a.requests += b.requests;
    a.client_requests = match (a.client_requests, b.client_requests) {
        (Some(x), Some(y)) => Some(x + y),
        (x, y) => x.or(y),
    };
    a.renew_calls = match (a.renew_calls, b.renew_calls) {
        (Some(x), Some(y)) => Some(x + y),
        (x, y) => x.or(y),
    };
    add_map(&mut a.scripts, &b.scripts);
    a.requests_per_s = if total_s > 0.0 {
        a.requests as f64 / total_s
    } else {
        0.0
    };
    a.cpu_seconds = match (a.cpu_seconds, b.cpu_seconds) {
        (Some(x), Some(y)) => Some(x + y),
        (x, y) => x.or(y),
    };
    add_map(&mut a.by_command, &b.by_command);
    a
}

/// Recomputes what derives from the pooled counts and histograms.
fn finish(case: &mut CaseResult, histograms: &BTreeMap<String, Hist>) {
    let seconds = case.window.measured_ms / 1e3;
    let per_s = |n: u64| {
        if seconds > 0.0 {
            n as f64 / seconds
        } else {
            0.0
        }
    };
    let of = |name: &str| -> Summary {
        histograms.get(name).map(summary).unwrap_or(Summary {
            count: 0,
            min_ms: None,
            mean_ms: None,
            p50_ms: None,
            p90_ms: None,
            p99_ms: None,
            p999_ms: None,
            max_ms: None,
        })
    };
    case.throughput.completed_per_s = per_s(case.operations.completed);
    case.renewal.renewals_per_s = per_s(case.renewal.renewals);
    case.latency.acquire = of("acquire");
    case.latency.handoff = of("handoff");
    case.latency.hold = of("hold");
    case.latency.release = of("release");
    case.renewal.round_trip = of("renew_round_trip");
    case.renewal.lag = of("renew_lag");
    case.renewal.margin = of("renew_margin");
    case.safety.lost_signal.lateness = of("loss_lateness");
    case.client_cost.cpu_cores = if seconds > 0.0 {
        case.client_cost.cpu_seconds / seconds
    } else {
        0.0
    };
    case.histograms = histograms
        .iter()
        .map(|(name, h)| (name.clone(), encode(h)))
        .collect();
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A results entry of a case that ran, from a real run's file, with `verdict`.
    fn trial(verdict: Verdict, fault_not_applied: bool) -> CaseResult {
        let fixture = include_str!("../../reports/tests/fixtures/run-redis-watchdog.json");
        let results: lockbench_reports::model::Results =
            serde_json::from_str(fixture).expect("the fixture parses");
        let mut case = results.cases[0].clone();
        case.trials = None;
        case.safety.verdict = verdict;
        case.fault_not_applied =
            fault_not_applied.then(|| "fault not applied: pause_worker: gone".to_owned());
        case
    }

    #[test]
    fn trials_stopped_at_their_first_violation_give_no_rate() {
        let stopped = pool(
            vec![
                (1, trial(Verdict::Safe, false)),
                (2, trial(Verdict::Violated, false)),
            ],
            true,
        )
        .expect("pooled");
        let t = stopped.trials.expect("trials");
        assert!(t.stopped_early);
        assert_eq!((t.violated, t.runs), (1, 2));
        assert_eq!((t.rate_low, t.rate_high, t.interval()), (None, None, None));
        let full = pool(
            vec![
                (1, trial(Verdict::Violated, false)),
                (2, trial(Verdict::Safe, false)),
            ],
            false,
        )
        .expect("pooled");
        let t = full.trials.expect("trials");
        assert!(!t.stopped_early);
        assert!(
            t.interval()
                .is_some_and(|(low, high)| low > 0.0 && high < 1.0)
        );
    }

    #[test]
    fn trials_whose_fault_did_not_apply_count_in_no_rate() {
        let some = pool(
            vec![
                (1, trial(Verdict::Unknown, true)),
                (2, trial(Verdict::Safe, false)),
            ],
            false,
        )
        .expect("pooled");
        let t = some.trials.as_ref().expect("trials");
        assert_eq!((t.violated, t.runs, t.fault_not_applied), (0, 1, 1));
        assert_eq!(some.safety.verdict, Verdict::Safe);
        assert_eq!(some.fault_not_applied, None);
        let none = pool(
            vec![
                (1, trial(Verdict::Unknown, true)),
                (2, trial(Verdict::Unknown, true)),
            ],
            false,
        )
        .expect("pooled");
        assert_eq!(none.safety.verdict, Verdict::Unknown, "never safe");
        assert!(none.fault_not_applied.is_some());
    }

    #[test]
    fn no_trial_counted_gives_no_interval_and_every_trial_run_is_counted() {
        let none = pool(
            vec![
                (1, trial(Verdict::Unknown, true)),
                (2, trial(Verdict::Unknown, true)),
            ],
            false,
        )
        .expect("pooled");
        let t = none.trials.expect("trials");
        assert_eq!((t.runs, t.unknown), (0, 2));
        assert_eq!((t.rate_low, t.rate_high), (None, None), "no rate to bound");
        let stopped = pool(
            vec![
                (1, trial(Verdict::Unknown, true)),
                (2, trial(Verdict::Violated, false)),
            ],
            true,
        )
        .expect("pooled");
        let t = stopped.trials.expect("trials");
        assert_eq!((t.runs, t.unknown, t.ran()), (1, 1, 2), "broke at trial 2");
    }

    #[test]
    fn a_trial_whose_worker_died_counts_in_no_rate_and_does_not_fail_the_others() {
        let mut died = trial(Verdict::Unknown, false);
        died.status = CaseStatus::Failed;
        died.error = Some("worker 1 died: killed by signal 9 (SIGKILL)".into());
        let pooled =
            pool(vec![(1, died), (2, trial(Verdict::Safe, false))], false).expect("pooled");
        assert_eq!(pooled.status, CaseStatus::Complete);
        assert_eq!(pooled.safety.verdict, Verdict::Safe);
        assert_eq!(
            pooled.error.as_deref(),
            Some("worker 1 died: killed by signal 9 (SIGKILL)"),
            "kept as the case's note"
        );
        let t = pooled.trials.expect("trials");
        assert_eq!((t.runs, t.unknown), (1, 1));
    }

    #[test]
    fn what_a_trial_without_a_verdict_saw_is_never_dropped() {
        // An older file's unknown trial that saw overlapping holders beside two safe ones.
        let mut saw = trial(Verdict::Unknown, true);
        saw.safety.reasons = vec![lockbench_reports::model::Violation::Overlap];
        saw.error = Some("worker 3 died: exited with code 101".into());
        let mut other = trial(Verdict::Safe, false);
        other.error = Some("a note of trial 2".into());
        let pooled = pool(
            vec![(1, trial(Verdict::Safe, false)), (2, other), (3, saw)],
            false,
        )
        .expect("pooled");
        assert_eq!(
            pooled.safety.verdict,
            Verdict::Violated,
            "an overlap is a fact"
        );
        let t = pooled.trials.as_ref().expect("trials");
        assert_eq!((t.violated, t.runs), (1, 3));
        assert_eq!(
            pooled.error.as_deref(),
            Some("a note of trial 2; worker 3 died: exited with code 101"),
            "every trial's error kept"
        );
    }
}
