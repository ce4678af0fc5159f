//! The planned time of a plan, from its cases: every case that runs, times its trials (one for a case
//! theory expects to be violated when its first violated trial settles it), plus the set-up each
//! case and each scenario costs on top of its measured window, and the reports. The progress bar's
//! ETA, the budget check and the budget test read the same estimate.

use std::time::Duration;

use lockbench_reports::model::Expectation;

use super::ScenarioPlan;
use crate::commands::suite::MANY_LOCKS_PASSES;
use crate::faults::case_topology;
use crate::kinds::ServerKindExt;
use crate::strategies::Strategy;
use crate::workload::{WorkerMode, Workload};

// Overheads, measured on this 2-core machine with a release build (as `scripts/compare.sh` runs it) at
// load average 0.5-2, from `lockbench compare` of the default suite (18 min 44 s, planned 21 min 51 s
// with the earlier debug-build constants): per trial, a scenario's `finished_at - started_at` minus its
// cases' measured and warm-up time, over its trials; the many-locks pass from its `scale.json`; the
// reports from the comparison file to the written report. Each constant rounds the largest value seen
// up. A debug build or a busy machine takes longer (up to 2.5 times at load average ~10).

/// Set-up and tear-down around one trial of a case in tasks mode: connecting the clients and closing
/// them (measured 0.23-0.24 s per trial then; the default suite of 2026-12-02, 18 min 19 s against a
/// plan of 19 min 39 s, gave 0.07-0.11 s per trial in the fault scenarios, whole-second timestamps,
/// and 0.26-0.32 s in baseline and long-tail, where JVM rows' longer warm-ups fall in it).
pub(crate) const CASE_OVERHEAD_TASKS: Duration = Duration::from_millis(150);
/// The same in processes mode: starting one `lockbench` worker process per client and collecting
/// them (measured 0.03-0.10 s per trial).
pub(crate) const CASE_OVERHEAD_PROCESSES: Duration = Duration::from_millis(120);
/// Starting a scenario's servers once (redis 0.1 s, etcd 0.6 s, ZooKeeper up to 1.4 s) and stopping
/// them, plus the scenario's results file: at most 1 s between one scenario's end and the next one's
/// start.
pub(crate) const SCENARIO_SERVERS: Duration = Duration::from_secs(1);
/// One many-locks pass of one strategy: filling 10k locks (at most `MANY_LOCKS_STEP_BUDGET`), the
/// settling period (1 s) and the 1 s hold, releasing, in a child process. Estimated from the last
/// single pass (`docs/results/default-suite-scale.json`, 71 s for 9 strategies): its 10k fills took
/// 0.1-3.7 s, 0.76 s on average, and start-up, releases and reads about 1 s per strategy, so about
/// 3.8 s a pass on average (zookeeper's slow fill the longest, at about 6.5 s). Measured once with a
/// release build at load average 5-6 (not idle): 3 passes of the 9 strategies and the raw sender in
/// 166 s, about 5.5 s a pass, the fills 2-3 times the idle run's; to be measured again on idle cores.
pub(crate) const MANY_LOCKS_PER_PASS: Duration = Duration::from_millis(4000);
/// The many-locks entry per strategy: [`MANY_LOCKS_PASSES`] passes (the former single pass of 1k and
/// 10k locks held 2 s each was planned at 10 s: measured 76 s for 9 strategies, 8.4 s each).
pub(crate) const MANY_LOCKS_PER_STRATEGY: Duration =
    Duration::from_millis(MANY_LOCKS_PER_PASS.as_millis() as u64 * MANY_LOCKS_PASSES as u64);
/// Writing the comparison and the reports, per case (charts include one holder timeline per case):
/// measured 1.6 s for 176 cases (a debug build: 26 s for 61 cases).
pub(crate) const REPORT_PER_CASE: Duration = Duration::from_millis(50);

/// The planned time of one scenario.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Estimate {
    /// Cases that run (strategy × lease mode), each run its trials.
    pub cases: u32,
    /// One trial of the longest case, set-up included.
    pub per_case: Duration,
    /// The whole scenario: its servers and every trial of every case.
    pub total: Duration,
}

impl Estimate {
    /// The estimate of `plan`'s cases at `trials` trials each; with `settle_early` (as `compare`
    /// runs, but for `--thorough`), a case theory expects to be violated is planned at one trial: its
    /// first violated trial settles it (`trial_stop::next`).
    pub(crate) fn of_scenario(plan: &ScenarioPlan, trials: u32, settle_early: bool) -> Estimate {
        let mut estimate = Estimate::default();
        for case in plan.cases.iter().filter(|c| c.fate.is_ok()) {
            let one = one_trial(&plan.workload, case.strategy);
            let runs = if settle_early && case.expected == Some(Expectation::Violated) {
                1
            } else {
                trials
            };
            estimate.cases += 1;
            estimate.total += one * runs;
            estimate.per_case = estimate.per_case.max(one);
        }
        if plan
            .strategies
            .iter()
            .any(|s| s.server.entry().server.is_some())
        {
            estimate.total += SCENARIO_SERVERS;
        }
        estimate
    }

    /// The many-locks pass of `strategies` strategies.
    pub(crate) fn of_many_locks(strategies: u32) -> Estimate {
        Estimate {
            cases: strategies,
            per_case: MANY_LOCKS_PER_STRATEGY,
            total: SCENARIO_SERVERS + MANY_LOCKS_PER_STRATEGY * strategies,
        }
    }
}

/// One trial of `strategy`'s case in `workload`: its window and warm-up, the set-up of its clients,
/// and the servers it starts for itself.
fn one_trial(workload: &Workload, strategy: &Strategy) -> Duration {
    let own_servers = case_topology(&workload.faults)
        .and_then(|t| t.takes(&strategy.server.faults().own))
        .unwrap_or_default();
    let overhead = match workload.workers {
        WorkerMode::Tasks => CASE_OVERHEAD_TASKS,
        WorkerMode::Processes | WorkerMode::Remote => CASE_OVERHEAD_PROCESSES,
    };
    // A runtime that compiles as it goes gets its longer warm-up, and its holder faults the longer
    // window they then need (`run_case`).
    let warmed = workload.with_warmup_at_least(strategy.facts.min_warmup);
    let run = warmed.as_ref().unwrap_or(workload);
    run.duration.unwrap_or_default() + run.warmup + overhead + own_servers
}

/// The planned time of the whole plan, reports included.
pub(crate) fn planned_total<'a>(
    estimates: impl IntoIterator<Item = &'a Estimate> + Clone,
) -> Duration {
    estimates
        .clone()
        .into_iter()
        .map(|e| e.total)
        .sum::<Duration>()
        + report_time(estimates)
}

/// The planned time of writing the reports.
pub(crate) fn report_time<'a>(estimates: impl IntoIterator<Item = &'a Estimate>) -> Duration {
    REPORT_PER_CASE * estimates.into_iter().map(|e| e.cases).sum::<u32>()
}
