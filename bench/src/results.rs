//! Turns what the cases measured into the results model (`lockbench_reports::model`): summaries from
//! histograms, the three safety measures and their verdict, costs, and the raw histograms.

use std::collections::BTreeMap;

use lockbench_reports::model::{
    CaseResult, CaseStatus, ClientCost, DriverCost, Fencing, Latencies, LostSignal, LostUpdates,
    Operations, Orphans, Overlap, Renewal, Safety, Throughput, Verdict, Window,
};

use crate::driver::case::CaseRun;
use crate::driver::histogram::{Hist, encode, new_hist, summary};

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

/// The results entry of one case.
pub(crate) fn case_result(run: &CaseRun) -> CaseResult {
    let Some(out) = &run.output else {
        return not_run(run);
    };
    let t = &out.tally;
    let f = &out.findings;
    let r = &out.resource;
    let seconds = out.measured_ns as f64 / 1e9;
    let lost = r.completed_writes.saturating_sub(r.final_counter_sum);
    let fencing = out.capabilities.fencing;
    let violated = f.pairs > 0 || lost > 0 || (fencing && r.stale_accepted > 0);
    let histograms: BTreeMap<String, String> = [
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
    .collect();
    let mut timeline = t.timeline.clone();
    timeline.truncate(seconds.floor() as usize);
    CaseResult {
        strategy: run.strategy.to_owned(),
        lease: run.lease.to_string(),
        status: run.status,
        error: run.error.clone(),
        capabilities: Some(out.capabilities.clone()),
        window: Window {
            warmup_ms: run.warmup.as_secs_f64() * 1e3,
            measured_ms: out.measured_ns as f64 / 1e6,
        },
        operations: Operations {
            acquired: t.acquired,
            completed: t.completed,
            aborted_on_loss: t.aborted_on_loss,
            rejected_writes: t.rejected_writes,
            stopped: t.stopped,
            acquire_errors: t.acquire_errors.clone(),
            release_errors: t.release_errors.clone(),
        },
        throughput: Throughput {
            completed_per_s: per_s(t.completed, seconds),
            timeline_per_s: timeline,
        },
        latency: Latencies {
            acquire: summary(&t.acquire),
            handoff: summary(&f.handoff),
            hold: summary(&t.hold),
            release: summary(&t.release),
        },
        renewal: Renewal {
            renewals: t.renewal.renewals,
            renewals_per_s: per_s(t.renewal.renewals, seconds),
            failures: t.renewal.failures,
            round_trip: summary(&t.renewal.round_trip),
            lag: summary(&t.renewal.lag),
            margin: summary(&t.renewal.margin),
            losses: t.renewal.losses.clone(),
        },
        safety: Safety {
            verdict: if violated {
                Verdict::Violated
            } else {
                Verdict::Safe
            },
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
                stale_accepted: fencing.then_some(r.stale_accepted),
                duplicate_tokens: fencing.then_some(r.duplicate_tokens),
                token_regressions: fencing.then_some(r.token_regressions),
            },
            lost_signal: LostSignal {
                fired: f.lost_fired,
                too_late: f.lost_too_late,
                lateness: summary(&f.lateness),
            },
        },
        client_cost: out.client_cost.clone(),
        server_cost: run.server_cost.clone(),
        driver: DriverCost {
            cycles: t.cycles,
            cycle_ns: mean(t.cycle_ns, t.cycles),
            strategy_ns: mean(t.strategy_ns, t.cycles),
            overhead_ns: mean(t.overhead_ns, t.cycles),
        },
        histograms,
        faults: run.faults.clone(),
        holder_sample: f.holder_sample.clone(),
        orphans: orphans(&f.orphan_waits, out.measured_ns),
        renew_after_unlock: run.renew_after_unlock.clone(),
    }
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
        },
        operations: Operations {
            acquired: 0,
            completed: 0,
            aborted_on_loss: 0,
            rejected_writes: 0,
            stopped: 0,
            acquire_errors: BTreeMap::new(),
            release_errors: BTreeMap::new(),
        },
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
        renewal: Renewal {
            renewals: 0,
            renewals_per_s: 0.0,
            failures: 0,
            round_trip: none.clone(),
            lag: none.clone(),
            margin: none.clone(),
            losses: BTreeMap::new(),
        },
        safety: Safety {
            verdict: Verdict::Unknown,
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
        },
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
        orphans: None,
        renew_after_unlock: run.renew_after_unlock.clone(),
    }
}
