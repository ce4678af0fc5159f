//! What `lockbench compare` runs ([`SUITE`], one line per scenario) and how long it plans to take
//! ([`plan`]): every case of every scenario for every strategy the scenario's faults apply to, times
//! the trials, plus the set-up each case and each scenario costs on top of its measured window. The
//! progress bar's ETA and the budget test read the same plan, so a scenario added to [`SUITE`] is
//! accounted for without anything else to change.
//!
//! What a scenario means for a reader (the mechanism, what theory predicts per strategy or lease kind,
//! what a violation means) lives in its scenario file (`theory`, `[expect]`, `if_violated`), not here.

use std::time::Duration;

use crate::commands::run::keep_fault_targets;
use crate::driver::case::lease_support;
use crate::faults::applicability;
use crate::faults::case_topology;
use crate::kinds::ServerKindExt;
use crate::scenarios;
use crate::strategies::{self, Strategy, StrategySettings};
use crate::workload::user::{MIN_WINDOW_TASKS, UserWorkload};
use crate::workload::{Fit, ScenarioFile, WorkerMode, Workload};
use lockbench_reports::model::{Expectation, expected_in};

/// How long a scenario's cases run in a suite: measured time and warm-up per case (`None`: the
/// preset's own, for scenarios whose faults are timed against it), and how many trials per trial asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Length {
    /// Measured time per case.
    pub duration: Option<&'static str>,
    /// Warm-up per case.
    pub warmup: Option<&'static str>,
    /// Trials per trial asked (`--trials`): more, shorter trials where a figure's interval rests on
    /// the spread of its trials (the baseline's CS/s); 1 elsewhere.
    pub trials_times: u32,
}

/// The most trials a run takes (`lockbench run --trials`, `--max-trials`).
pub(crate) const MOST_TRIALS: u32 = 100;

impl Length {
    /// The preset's own lengths.
    pub(crate) const PRESET: Length = Length {
        duration: None,
        warmup: None,
        trials_times: 1,
    };

    /// `duration` measured after `warmup`.
    pub(crate) const fn of(duration: &'static str, warmup: &'static str) -> Length {
        Length {
            duration: Some(duration),
            warmup: Some(warmup),
            trials_times: 1,
        }
    }

    /// The trials a case runs at this length when `asked` are asked for (a cap on trials likewise),
    /// at most [`MOST_TRIALS`].
    pub(crate) fn trials(self, asked: u32) -> u32 {
        asked.saturating_mul(self.trials_times).min(MOST_TRIALS)
    }
}

/// Which suite `compare` runs: each is a superset of the one before.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub(crate) enum Suite {
    /// A first look: the scenarios that tell strategies apart fastest (`--quick`).
    Quick,
    /// Every fault of the breaking-points matrix, within 20 minutes at 3 trials.
    #[default]
    Default,
    /// The default suite plus the library-fidelity scenarios (Redisson's renewal errors and orphaned
    /// holders, Redlock's node faults, server restarts, failovers through Sentinel and in a Redis
    /// Cluster): `--full`, and
    /// `--thorough` at 10 trials.
    Full,
}

impl Suite {
    /// Its name in the comparison file.
    pub(crate) fn name(self, thorough: bool) -> &'static str {
        match (self, thorough) {
            (Suite::Quick, _) => "quick",
            (Suite::Default, _) => "default",
            (Suite::Full, true) => "thorough",
            (Suite::Full, false) => "full",
        }
    }
}

/// One scenario of the suite.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SuiteEntry {
    /// The scenario preset (see `lockbench scenarios`), or [`MANY_LOCKS`].
    pub scenario: &'static str,
    /// Its length in the default and full suites.
    pub default: Length,
    /// Its length in the quick suite; `None`: left out of it.
    pub quick: Option<Length>,
    /// The smallest suite it is in.
    pub from: Suite,
}

impl SuiteEntry {
    /// A scenario at the preset's own length, in both suites.
    pub(crate) const fn preset(scenario: &'static str) -> SuiteEntry {
        SuiteEntry {
            scenario,
            default: Length::PRESET,
            quick: Some(Length::PRESET),
            from: Suite::Quick,
        }
    }

    /// A scenario run for `duration` after `warmup` in the default suite (and not in the quick one).
    pub(crate) const fn of(
        scenario: &'static str,
        duration: &'static str,
        warmup: &'static str,
    ) -> SuiteEntry {
        SuiteEntry {
            scenario,
            default: Length::of(duration, warmup),
            quick: None,
            from: Suite::Default,
        }
    }

    /// The same, also in the quick suite with these lengths.
    pub(crate) const fn quick(self, duration: &'static str, warmup: &'static str) -> SuiteEntry {
        SuiteEntry {
            quick: Some(Length::of(duration, warmup)),
            from: Suite::Quick,
            ..self
        }
    }

    /// The same with `times` trials per trial asked in the default and full suites (the quick suite's
    /// one trial stays one).
    pub(crate) const fn trials_times(self, times: u32) -> SuiteEntry {
        SuiteEntry {
            default: Length {
                trials_times: times,
                ..self.default
            },
            ..self
        }
    }

    /// The same, left out of the quick suite.
    pub(crate) const fn not_quick(self) -> SuiteEntry {
        SuiteEntry {
            quick: None,
            from: Suite::Default,
            ..self
        }
    }

    /// The same, in the full suite only.
    pub(crate) const fn full_only(self) -> SuiteEntry {
        SuiteEntry {
            quick: None,
            from: Suite::Full,
            ..self
        }
    }
}

/// The suite entry that is not a scenario of `lockbench run` but a short `lockbench scale` pass.
pub(crate) const MANY_LOCKS: &str = "many-locks";

/// The suite, in run order: one line per scenario. Fault scenarios run at their preset's length (the
/// faults are timed against it; shortening would cut a fault short). The others run just long enough
/// for their mechanism — a long task renewed several times, a fixed lease expiring under a task — since
/// the trials of a case are pooled: six 0.5 s baseline trials give the figures of one 3 s run.
///
/// The default suite is the breaking-points matrix: every fault kind lockbench injects, against every
/// strategy, 3 trials, within 20 minutes on 2 cores. The library-fidelity and infrastructure scenarios (issues
/// 14, 15 and 18: they check that a row behaves like its library, Redlock's node faults, a failover
/// through Sentinel) would take it to about 40 minutes, so they run with `--full` or `--thorough`, or by name with `--scenarios`.
pub(crate) const SUITE: &[SuiteEntry] = &[
    // The baseline's window is absolute (nothing in it is timed against the TTL); under the user's
    // workload it is at least a few of the user's tasks (`fit`). Lengths in TTL units are the presets'
    // at their TTL and in proportion under the user's.
    // Its CS/s is the first screen's speed figure, with a 95 % interval from the spread of its trials
    // (Student's t): twice the trials at half the window (6 x 0.5 s at 3 trials asked) measure as
    // long as three 1 s trials but narrow the interval (t(5) = 2.57 against t(2) = 4.30), for 11.5 s
    // more in the default plan: the warm-up is the quick suite's 200 ms (runtimes that compile as they
    // go keep their longer one, `min_warmup`).
    SuiteEntry::of("baseline", "500ms", "300ms")
        .trials_times(2)
        .quick("1s", "200ms"),
    // Long tasks are 3-5 s against a 2 s timeout: a 2 s window sees each renewed 3+ times, and three
    // pooled trials see as many long tasks as one 6 s run.
    SuiteEntry::of("long-tail", "1ttl", "0.15ttl").quick("0.75ttl", "0.1ttl"),
    SuiteEntry::of("lease-too-short", "1.6ttl", "0s").quick("1.6ttl", "0s"),
    SuiteEntry::preset("process-pause"),
    // The holder is killed at 0.5 s; its 1 s lease expires and the next holder is in by about 1.7 s:
    // 2.5 s shows the unavailability and the recovery (the preset's 3 s adds only steady state).
    SuiteEntry::of("client-crash", "2.5ttl", "0s").quick("2.5ttl", "0s"),
    SuiteEntry::preset("cpu-starvation").not_quick(),
    SuiteEntry::preset("cpu-quota").not_quick(),
    SuiteEntry::preset("cpu-hog").not_quick(),
    SuiteEntry::preset("network-delay").not_quick(),
    SuiteEntry::preset("network-partition").not_quick(),
    SuiteEntry::preset("server-freeze").not_quick(),
    SuiteEntry::preset("redis-client-pause").not_quick(),
    SuiteEntry::preset("pubsub-drop").not_quick(),
    SuiteEntry::preset("redis-failover"),
    SuiteEntry::preset("leader-loss"),
    SuiteEntry::preset(MANY_LOCKS).not_quick(),
    SuiteEntry::preset("renewal-error").full_only(),
    SuiteEntry::preset("busy-server").full_only(),
    SuiteEntry::preset("orphaned-holder").full_only(),
    SuiteEntry::preset("renewal-after-unlock").full_only(),
    SuiteEntry::preset("server-restart").full_only(),
    SuiteEntry::preset("server-restart-fsync").full_only(),
    SuiteEntry::preset("redis-sentinel-failover").full_only(),
    SuiteEntry::preset("redis-cluster-master-kill").full_only(),
    SuiteEntry::preset("redis-cluster-failover").full_only(),
    SuiteEntry::preset("redlock-kill-minority").full_only(),
    SuiteEntry::preset("redlock-restart-no-delay").full_only(),
    SuiteEntry::preset("redlock-restart-delayed").full_only(),
    SuiteEntry::preset("redlock-clock-jump").full_only(),
    // PostgreSQL's own faults, for its rows (named: they are not in `all` until the default suite
    // has room for them).
    SuiteEntry::preset("postgres-failover").full_only(),
    SuiteEntry::preset("postgres-session-kill").full_only(),
    SuiteEntry::preset("postgres-keepalive-partition").full_only(),
];

/// Why the many-locks pass keeps its own workload under the user's (the report says so).
pub(crate) const MANY_LOCKS_OWN_WORKLOAD: &str = "many-locks keeps its own workload (one client \
     holding 10,000 locks at a 3s watchdog TTL, in 3 passes, at real time): it measures what holding \
     many locks costs, not the user's cycle";

/// The most a suite may plan to take on 2 idle cores, if it is held to a budget (the full suite and
/// `--thorough` are a user's choice).
pub(crate) fn budget(suite: Suite) -> Option<Duration> {
    match suite {
        Suite::Quick => Some(Duration::from_secs(240)),
        Suite::Default => Some(Duration::from_secs(1200)),
        Suite::Full => None,
    }
}

/// The workload fields `entry`'s scenario keeps under the user's workload (`own_workload`), and why.
pub(crate) fn own_workload(entry: &SuiteEntry) -> (Vec<String>, Option<String>) {
    scenarios::load(entry.scenario)
        .map(|l| {
            (
                l.file.own_workload.unwrap_or_default(),
                l.file.own_workload_why,
            )
        })
        .unwrap_or_default()
}

/// How `entry` is fitted to the user's workload: its time scale (1 for a scenario that keeps its
/// own TTL) and, when it runs the user's tasks, a window of at least [`MIN_WINDOW_TASKS`] of them.
pub(crate) fn fit(entry: &SuiteEntry, user: Option<&UserWorkload>) -> Fit {
    let Some(user) = user else {
        return Fit::default();
    };
    let (own, _) = own_workload(entry);
    Fit {
        time_scale: user.time_scale_for(&own),
        min_window_tasks: if user.fields.task.is_some() && !own.iter().any(|f| f == "task") {
            MIN_WINDOW_TASKS
        } else {
            0
        },
        lengthen_for_faults: true,
    }
}

/// Held-lock steps of the many-locks pass: the 10,000 locks its cell speaks of, filled at once (a
/// 1,000 step before it would cost every pass another settle and hold, which three passes cannot
/// afford within the default suite's budget; `lockbench scale` draws the whole curve).
pub(crate) const MANY_LOCKS_STEPS: &str = "10000";
/// Measured hold of the many-locks pass: one renewal period at its 3 s timeout, after the period the
/// locks are given to settle, so every lock is renewed at least twice after it was taken (three passes
/// of the former 2 s hold do not fit the budget).
pub(crate) const MANY_LOCKS_HOLD: &str = "1s";
/// Passes of the many-locks entry per strategy, each a fresh client in a fresh process: the report
/// flags only a loss that repeats, and says how many passes a cell rests on.
pub(crate) const MANY_LOCKS_PASSES: u32 = 3;

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
/// One many-locks pass of one strategy: filling 10k locks (at most [`MANY_LOCKS_STEP_BUDGET`]), the
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
/// Longest a many-locks step may take to fill before the strategy stops there (recorded with why).
pub(crate) const MANY_LOCKS_STEP_BUDGET: &str = "10s";
/// Writing the comparison and the reports, per case (charts include one holder timeline per case):
/// measured 1.6 s for 176 cases (a debug build: 26 s for 61 cases).
pub(crate) const REPORT_PER_CASE: Duration = Duration::from_millis(50);

/// The planned time of one scenario.
#[derive(Debug, Clone)]
pub(crate) struct PlannedScenario {
    /// The scenario.
    pub scenario: &'static str,
    /// Cases that run (strategy × lease mode), each run `trials` times.
    pub cases: u32,
    /// One trial of the longest case, set-up included.
    pub per_case: Duration,
    /// The whole scenario: its servers and every trial of every case.
    pub total: Duration,
}

/// The entries of `suite`, each at its length there.
pub(crate) fn entries(suite: Suite) -> Vec<(SuiteEntry, Length)> {
    SUITE
        .iter()
        .filter(|e| e.from <= suite)
        .filter_map(|e| {
            let length = if suite == Suite::Quick {
                e.quick?
            } else {
                e.default
            };
            Some((*e, length))
        })
        .collect()
}

/// The names of the suites that run `scenario` (a [`SUITE`] entry's scenario), smallest first:
/// `quick`, `default`, `full`, then `thorough` (the full suite at 10 trials) wherever `full` is; empty
/// for a scenario that runs only by name.
pub(crate) fn suites_running(scenario: &str) -> Vec<&'static str> {
    let mut names: Vec<&'static str> = [Suite::Quick, Suite::Default, Suite::Full]
        .into_iter()
        .filter(|&suite| entries(suite).iter().any(|(e, _)| e.scenario == scenario))
        .map(|suite| suite.name(false))
        .collect();
    if names.contains(&Suite::Full.name(false)) {
        names.push(Suite::Full.name(true));
    }
    names
}

/// The workload of `entry` at `length` for `strategies` (a list as `--strategies` takes it), under
/// the user's workload if any, as the run resolves and fits it.
pub(crate) fn workload(
    entry: &SuiteEntry,
    length: Length,
    strategies: &str,
    user: Option<&UserWorkload>,
) -> Result<Workload, String> {
    let loaded = scenarios::load(entry.scenario)?;
    let mut file = loaded.file;
    file.overlay(overrides(entry, length, strategies, user));
    let fitted = Workload::resolve(&loaded.name, &loaded.source, file)?.fitted(fit(entry, user));
    fitted.faults_fit()?;
    Ok(fitted)
}

/// The overrides a suite applies to a scenario file: its length, the strategies and the user's
/// workload but the fields the scenario keeps.
pub(crate) fn overrides(
    entry: &SuiteEntry,
    length: Length,
    strategies: &str,
    user: Option<&UserWorkload>,
) -> ScenarioFile {
    let workload = match user {
        Some(user) => user.overrides_for(&own_workload(entry).0),
        None => ScenarioFile::default(),
    };
    ScenarioFile {
        strategies: Some(crate::workload::split_list(strategies)),
        duration: length.duration.map(str::to_owned),
        warmup: length.warmup.map(str::to_owned),
        ..workload
    }
}

/// The planned time of every scenario of the chosen suite, for `strategies` with `trials` trials.
/// With `settle_early` (as `compare` runs, but for `--thorough`), a case theory expects to be
/// violated is planned at one trial: its first violated trial settles it (`trial_stop::next`).
pub(crate) fn plan(
    suite: Suite,
    strategies: &str,
    trials: u32,
    settle_early: bool,
    user: Option<&UserWorkload>,
) -> Vec<PlannedScenario> {
    let chosen = strategies::resolve(&[strategies.to_owned()]).unwrap_or_default();
    entries(suite)
        .iter()
        .map(|(entry, length)| {
            if entry.scenario == MANY_LOCKS {
                let n = chosen.iter().filter(|s| s.not_at_scale().is_none()).count() as u32;
                return PlannedScenario {
                    scenario: entry.scenario,
                    cases: n,
                    per_case: MANY_LOCKS_PER_STRATEGY,
                    total: SCENARIO_SERVERS + MANY_LOCKS_PER_STRATEGY * n,
                };
            }
            let Ok(w) = workload(entry, *length, strategies, user) else {
                return PlannedScenario {
                    scenario: entry.scenario,
                    cases: 0,
                    per_case: Duration::ZERO,
                    total: Duration::ZERO,
                };
            };
            let kept: Vec<&Strategy> = keep_fault_targets(&w, chosen.clone())
                .map(|(kept, _)| kept)
                .unwrap_or_default();
            let settings = StrategySettings::new(w.watchdog_timeout);
            let mut cases = 0;
            let mut case_time = Duration::ZERO;
            let mut per_case = Duration::ZERO;
            for s in &kept {
                // A strategy named but not applying is kept, and its case skipped at once.
                let Ok(caps) = s.capabilities(&settings) else {
                    continue;
                };
                if applicability::applies_to(&w, s, &caps).is_err() {
                    continue;
                }
                // The servers a case starts for itself, once per case.
                let own_servers = case_topology(&w.faults)
                    .and_then(|t| t.takes(&s.server.faults().own))
                    .unwrap_or_default();
                let overhead = match w.workers {
                    WorkerMode::Tasks => CASE_OVERHEAD_TASKS,
                    WorkerMode::Processes | WorkerMode::Remote => CASE_OVERHEAD_PROCESSES,
                };
                // A runtime that compiles as it goes gets its longer warm-up, and its holder faults
                // the longer window they then need (`run_case`).
                let warmed = w.with_warmup_at_least(s.facts.min_warmup);
                let run = warmed.as_ref().unwrap_or(&w);
                let one = run.duration.unwrap_or_default() + run.warmup + overhead + own_servers;
                // A lease mode the strategy cannot take is skipped at once.
                for lease in &w.leases {
                    if lease_support(&caps, s.facts.min_watchdog_ttl, *lease, &w).is_ok() {
                        let expected = expected_in(&w.expect, s.id, &lease.to_string());
                        let runs = if settle_early && expected == Some(Expectation::Violated) {
                            1
                        } else {
                            length.trials(trials)
                        };
                        cases += 1;
                        case_time += one * runs;
                        per_case = per_case.max(one);
                    }
                }
            }
            let servers = kept.iter().any(|s| s.server.entry().server.is_some());
            PlannedScenario {
                scenario: entry.scenario,
                cases,
                per_case,
                total: case_time
                    + if servers {
                        SCENARIO_SERVERS
                    } else {
                        Duration::ZERO
                    },
            }
        })
        .collect()
}

/// The planned time of the whole suite, reports included.
pub(crate) fn planned_total(plan: &[PlannedScenario]) -> Duration {
    plan.iter().map(|p| p.total).sum::<Duration>() + report_time(plan)
}

/// The planned time of writing the reports.
pub(crate) fn report_time(plan: &[PlannedScenario]) -> Duration {
    REPORT_PER_CASE * plan.iter().map(|p| p.cases).sum::<u32>()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::duration::{format_duration, parse_duration};
    use crate::faults::kind::WorkerFault;
    use crate::faults::{FaultKind, FaultSpec};

    fn seconds(text: &str) -> Duration {
        parse_duration(text).expect("a duration")
    }

    /// `--quick` (one trial) must finish within 4 minutes on a 2-core machine.
    const QUICK_BUDGET: Duration = Duration::from_secs(240);
    /// The default suite (three trials) must finish within 20 minutes.
    const DEFAULT_BUDGET: Duration = Duration::from_secs(1200);

    #[test]
    fn fault_scenarios_keep_their_meaning_under_the_users_ttl() {
        let user = |ttl: &str, scale: &str| {
            let fields = ScenarioFile {
                watchdog_timeout: Some(ttl.into()),
                task: Some("uniform 20ms..60ms".into()),
                clients: Some(5),
                ..ScenarioFile::default()
            };
            UserWorkload::new(None, fields, Some(scale))
                .expect("valid")
                .expect("given")
        };
        let entry = |name: &str| {
            entries(Suite::Default)
                .into_iter()
                .find(|(e, _)| e.scenario == name)
                .expect(name)
        };
        let (pause, length) = entry("process-pause");
        for u in [user("3s", "1"), user("30s", "10")] {
            let w = workload(&pause, length, "redis-watchdog", Some(&u)).expect("resolves");
            assert_eq!(
                w.to_model(&[]).faults,
                ["pause_worker at=1500ms target=holder duration=6s"]
            );
            assert_eq!(w.duration, Some(seconds("10500ms")));
            assert_eq!(
                (w.clients, w.keys, w.workers),
                (5, 1, WorkerMode::Processes)
            );
        }
        // lease-too-short keeps its own lease, tasks and TTL, at real time.
        let (short, length) = entry("lease-too-short");
        let w = workload(&short, length, "redis-watchdog", Some(&user("30s", "10"))).expect("ok");
        assert_eq!(w.watchdog_timeout, seconds("1s"));
        assert_eq!(w.task.to_string(), "uniform 1200ms..1600ms");
        assert_eq!(w.clients, 5);
        assert_eq!(w.duration, Some(seconds("1600ms")));
    }

    /// Every suite scenario's case length, warm-up and faults at its own workload, in the absolute
    /// figures its file gave before it took TTL units (`2ttl`, `1/3ttl`): the units change nothing at
    /// a file's own TTL.
    const OWN_TIMINGS: &[(&str, &str, &str, &[&str])] = &[
        ("baseline", "500ms", "300ms", &[]),
        ("long-tail", "2s", "300ms", &[]),
        ("lease-too-short", "1600ms", "0ns", &[]),
        (
            "process-pause",
            "3500ms",
            "0ns",
            &["pause_worker at=500ms target=holder duration=2s"],
        ),
        (
            "client-crash",
            "2500ms",
            "0ns",
            &["crash_worker at=500ms target=holder"],
        ),
        (
            "cpu-starvation",
            "3500ms",
            "0ns",
            &["starve_worker at=0ns target=holder duration=2s"],
        ),
        (
            "cpu-quota",
            "4s",
            "0ns",
            &[
                "cpu_hog at=0ns target=holder duration=3s threads=2",
                "cgroup_quota at=0ns target=holder duration=3s quota=100ms period=1s",
            ],
        ),
        (
            "cpu-hog",
            "3s",
            "0ns",
            &["cpu_hog at=0ns target=holder duration=2s threads=8"],
        ),
        (
            "network-delay",
            "3s",
            "0ns",
            &["proxy_delay at=500ms target=all duration=2s delay=250ms direction=both"],
        ),
        (
            "network-partition",
            "3500ms",
            "0ns",
            &["proxy_blackhole at=0ns target=holder duration=2s direction=both"],
        ),
        (
            "server-freeze",
            "3s",
            "0ns",
            &["pause_server at=500ms target=server duration=1500ms"],
        ),
        (
            "redis-client-pause",
            "3s",
            "0ns",
            &["client_pause at=500ms target=server duration=1500ms"],
        ),
        (
            "pubsub-drop",
            "4s",
            "0ns",
            &["pubsub_kill at=500ms target=server duration=3s every=100ms"],
        ),
        (
            "redis-failover",
            "3s",
            "0ns",
            &["failover at=1s target=holder replication_lag=300ms"],
        ),
        (
            "leader-loss",
            "3500ms",
            "0ns",
            &["leader_kill at=1s target=server"],
        ),
        (
            "renewal-error",
            "5s",
            "0ns",
            &[
                "proxy_blackhole at=0ns target=holder duration=1650ms after_acquire=700ms direction=both",
            ],
        ),
        (
            "busy-server",
            "5s",
            "0ns",
            &["busy_script at=0ns target=holder duration=1s after_acquire=800ms"],
        ),
        ("orphaned-holder", "4s", "0ns", &[]),
        ("renewal-after-unlock", "3s", "0ns", &[]),
        (
            "server-restart",
            "3500ms",
            "0ns",
            &[
                "server_restart at=1s target=server durability=none",
                "server_restart at=2200ms target=server durability=none",
            ],
        ),
        (
            "server-restart-fsync",
            "3500ms",
            "0ns",
            &[
                "server_restart at=1s target=server durability=aof-always",
                "server_restart at=2200ms target=server durability=aof-always",
            ],
        ),
        (
            "redis-sentinel-failover",
            "8s",
            "0ns",
            &["sentinel_failover at=1s target=holder"],
        ),
        (
            "redis-cluster-master-kill",
            "8s",
            "0ns",
            &["cluster_master_kill at=1s target=holder"],
        ),
        (
            "redis-cluster-failover",
            "6s",
            "0ns",
            &["cluster_failover at=1s target=holder"],
        ),
        (
            "redlock-kill-minority",
            "4s",
            "0ns",
            &["node_kill at=1s target=server nodes=0,1"],
        ),
        (
            "redlock-restart-no-delay",
            "7s",
            "0ns",
            &[
                "node_restart at=1s target=server nodes=3,4",
                "node_restart at=1200ms target=server nodes=2",
                "node_restart at=4s target=server nodes=3,4",
                "node_restart at=4200ms target=server nodes=2",
            ],
        ),
        (
            "redlock-restart-delayed",
            "7s",
            "0ns",
            &[
                "node_restart at=1s target=server nodes=3,4",
                "node_kill at=1200ms target=server duration=3500ms nodes=2",
            ],
        ),
        (
            "redlock-clock-jump",
            "7s",
            "0ns",
            &[
                "clock_jump at=0ns target=server nodes=2 rate=10",
                "node_restart at=1s target=server nodes=3,4",
                "node_restart at=4s target=server nodes=3,4",
            ],
        ),
        (
            "postgres-failover",
            "3s",
            "0ns",
            &["failover at=1s target=holder replication_lag=300ms"],
        ),
        (
            "postgres-session-kill",
            "3s",
            "0ns",
            &["terminate_session at=1s target=holder after_acquire=50ms"],
        ),
        (
            "postgres-keepalive-partition",
            "8s",
            "0ns",
            &["keepalive_partition at=0ns target=holder duration=5s after_acquire=500ms"],
        ),
    ];

    /// Every timing of a fault (a quota's only where it is one: elsewhere they are unused defaults).
    fn timings(f: &FaultSpec) -> Vec<Duration> {
        let mut all = vec![
            f.at,
            f.duration.unwrap_or_default(),
            f.every.unwrap_or_default(),
            f.after_acquire.unwrap_or_default(),
            f.delay,
            f.replication_lag,
        ];
        if f.kind == FaultKind::Worker(WorkerFault::CgroupQuota) {
            all.extend([f.quota, f.period]);
        }
        all
    }

    #[test]
    fn every_scenario_has_its_old_timings_at_its_own_ttl_and_scales_with_the_users() {
        let suite: Vec<(SuiteEntry, Length)> = entries(Suite::Full)
            .into_iter()
            .filter(|(e, _)| e.scenario != MANY_LOCKS)
            .collect();
        let names: Vec<&str> = suite.iter().map(|(e, _)| e.scenario).collect();
        let listed: Vec<&str> = OWN_TIMINGS.iter().map(|t| t.0).collect();
        assert_eq!(names, listed, "one row per suite scenario, in suite order");
        let ttl = seconds("30s");
        let fields = ScenarioFile {
            watchdog_timeout: Some("30s".into()),
            ..ScenarioFile::default()
        };
        let user = UserWorkload::new(None, fields, None)
            .expect("valid")
            .expect("given");
        for ((entry, length), (name, duration, warmup, faults)) in suite.iter().zip(OWN_TIMINGS) {
            let own = workload(entry, *length, "all", None).expect("resolves");
            let model = own.to_model(&[]);
            let faults: Vec<String> = faults.iter().map(|f| f.to_string()).collect();
            assert_eq!(
                (
                    own.duration.map(format_duration).as_deref(),
                    format_duration(own.warmup).as_str(),
                    model.faults,
                ),
                (Some(*duration), *warmup, faults),
                "{name} at its own TTL"
            );
            let theirs = workload(entry, *length, "all", Some(&user)).expect("resolves");
            let keeps_ttl = own_workload(entry)
                .0
                .iter()
                .any(|f| f == "watchdog_timeout");
            // A scenario that keeps its TTL keeps its timings; the others' scale with the user's TTL.
            let factor = if keeps_ttl {
                1
            } else {
                assert_eq!(
                    ttl.as_nanos() % own.watchdog_timeout.as_nanos(),
                    0,
                    "{name}"
                );
                (ttl.as_nanos() / own.watchdog_timeout.as_nanos()) as u32
            };
            assert_eq!(
                theirs.watchdog_timeout,
                own.watchdog_timeout * factor,
                "{name}"
            );
            let scaled: Vec<Vec<Duration>> = own
                .faults
                .iter()
                .map(|f| timings(f).into_iter().map(|d| d * factor).collect())
                .collect();
            let got: Vec<Vec<Duration>> = theirs.faults.iter().map(timings).collect();
            assert_eq!(got, scaled, "{name}: fault timings under a 30s TTL");
            assert_eq!(theirs.orphan_after, own.orphan_after.map(|d| d * factor));
            // The baseline's window is absolute: nothing in it is timed against the TTL.
            if entry.scenario != "baseline" {
                assert_eq!(
                    (theirs.duration, theirs.warmup),
                    (own.duration.map(|d| d * factor), own.warmup * factor),
                    "{name}: case length under a 30s TTL"
                );
            }
        }
    }

    #[test]
    fn budgets_are_the_ones_the_suites_promise() {
        assert_eq!(budget(Suite::Quick), Some(QUICK_BUDGET));
        assert_eq!(budget(Suite::Default), Some(DEFAULT_BUDGET));
        assert_eq!(budget(Suite::Full), None);
    }

    #[test]
    fn the_suites_fit_their_budgets() {
        let default = planned_total(&plan(Suite::Default, "all", 3, true, None));
        let quick = planned_total(&plan(Suite::Quick, "all", 1, true, None));
        let what = format!("default plans {default:?}, quick {quick:?}");
        eprintln!("{what}");
        for p in plan(Suite::Default, "all", 3, true, None) {
            eprintln!(
                "  {:<24} {:>3} cases  {:>6.1?}",
                p.scenario, p.cases, p.total
            );
        }
        assert!(
            default <= DEFAULT_BUDGET,
            "{what}: {:#?}",
            plan(Suite::Default, "all", 3, true, None)
        );
        assert!(
            quick <= QUICK_BUDGET,
            "{what}: {:#?}",
            plan(Suite::Quick, "all", 1, true, None)
        );
        assert!(quick < default);
        // The full suite and ten trials are a user's choice, not held to a budget, but planned too.
        let full = planned_total(&plan(Suite::Full, "all", 3, true, None));
        assert!(full > default, "full plans {full:?}");
        assert!(planned_total(&plan(Suite::Full, "all", 10, false, None)) > full);
    }

    #[test]
    fn every_suite_scenario_resolves_and_runs_some_strategy() {
        // Its own workloads, and each starting point at the scale its file suggests (a plan skips a
        // scenario that does not resolve: `compare --full --workload ...` must not).
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("workloads");
        let mut users = vec![None];
        for (name, scale) in [
            ("scheduled-job.toml", "10"),
            ("queue-consumer.toml", "1"),
            ("order-processing.toml", "1"),
        ] {
            let user =
                UserWorkload::new(Some(&dir.join(name)), ScenarioFile::default(), Some(scale))
                    .unwrap_or_else(|e| panic!("{name}: {e}"));
            users.push(Some((name, user.expect("given"))));
        }
        for user in &users {
            let (name, user) = match user {
                Some((name, user)) => (*name, Some(user)),
                None => ("own", None),
            };
            for (entry, length) in entries(Suite::Full) {
                if entry.scenario == MANY_LOCKS {
                    continue;
                }
                let w = workload(&entry, length, "all", user)
                    .unwrap_or_else(|e| panic!("{name}: {}: {e}", entry.scenario));
                assert!(
                    w.duration.is_some(),
                    "{name}: {} is bounded by time",
                    entry.scenario
                );
            }
            // Every registered row: the PostgreSQL ones are not in `all` yet.
            for p in plan(
                Suite::Full,
                "all,postgres-advisory,postgres-lease",
                1,
                true,
                user,
            ) {
                assert!(p.cases > 0, "{name}: {} runs no case", p.scenario);
            }
        }
    }

    #[test]
    fn the_default_suite_covers_every_fault_scenario() {
        let names: Vec<&str> = entries(Suite::Default)
            .iter()
            .map(|(e, _)| e.scenario)
            .collect();
        for needed in [
            "baseline",
            "long-tail",
            "lease-too-short",
            "process-pause",
            "client-crash",
            "cpu-starvation",
            "cpu-quota",
            "cpu-hog",
            "network-delay",
            "network-partition",
            "server-freeze",
            "redis-client-pause",
            "pubsub-drop",
            "redis-failover",
            "leader-loss",
            MANY_LOCKS,
        ] {
            assert!(names.contains(&needed), "{needed}");
        }
        for (entry, _) in entries(Suite::Quick) {
            assert!(names.contains(&entry.scenario));
        }
    }

    #[test]
    fn many_locks_is_planned_pass_by_pass_for_the_strategies_that_hold_many_locks() {
        const { assert!(MANY_LOCKS_PASSES >= 3) };
        let planned = plan(
            Suite::Default,
            "redis-watchdog,zookeeper,postgres-advisory,memory",
            3,
            true,
            None,
        );
        let many = planned
            .iter()
            .find(|p| p.scenario == MANY_LOCKS)
            .expect("many-locks is planned");
        assert_eq!(
            many.cases, 2,
            "postgres-advisory and memory hold no many locks"
        );
        assert_eq!(many.per_case, MANY_LOCKS_PER_PASS * MANY_LOCKS_PASSES);
        assert_eq!(many.per_case, MANY_LOCKS_PER_STRATEGY);
        assert_eq!(many.total, SCENARIO_SERVERS + MANY_LOCKS_PER_STRATEGY * 2);
    }

    #[test]
    fn a_scenario_added_to_the_suite_adds_its_time_to_the_plan() {
        let base = plan(Suite::Default, "redis-watchdog", 3, true, None);
        let total: Duration = base.iter().map(|p| p.total).sum();
        let one = base
            .iter()
            .find(|p| p.scenario == "baseline")
            .expect("baseline");
        assert_eq!(one.cases, 1);
        assert_eq!(
            one.per_case,
            seconds("500ms") + seconds("300ms") + CASE_OVERHEAD_TASKS
        );
        // Twice the trials asked: the baseline's CS/s interval rests on their spread.
        assert_eq!(one.total, one.per_case * 6 + SCENARIO_SERVERS);
        assert!(total > one.total);
    }
}
