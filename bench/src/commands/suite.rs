//! What `lockbench compare` runs ([`SUITE`], one line per scenario), each scenario's length and
//! workload in a suite, and the budgets a suite is held to. The plan of a suite run (every case of
//! every scenario for every strategy it applies to, and its planned time) is
//! [`crate::commands::plan`]'s, built from these entries, so a scenario added to [`SUITE`] is accounted
//! for without anything else to change.
//!
//! What a scenario means for a reader (the mechanism, what theory predicts per strategy or lease kind,
//! what a violation means) lives in its scenario file (`theory`, `[expect]`, `if_violated`), not here.

use std::time::Duration;

use crate::scenarios;
use crate::workload::user::{MIN_WINDOW_TASKS, UserWorkload};
use crate::workload::{Fit, ScenarioFile, Workload};

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
fn fit(entry: &SuiteEntry, user: Option<&UserWorkload>) -> Fit {
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
/// Longest a many-locks step may take to fill before the strategy stops there (recorded with why).
pub(crate) const MANY_LOCKS_STEP_BUDGET: &str = "10s";

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

/// The workload of `entry` at `length`, under the user's workload if any, as the run resolves and
/// fits it.
#[cfg(test)]
pub(crate) fn workload(
    entry: &SuiteEntry,
    length: Length,
    user: Option<&UserWorkload>,
) -> Result<Workload, String> {
    resolved(entry, overrides(entry, length, user), user)
}

/// The workload of `entry`'s scenario file with `overrides`, fitted to the user's workload if any.
pub(crate) fn resolved(
    entry: &SuiteEntry,
    overrides: ScenarioFile,
    user: Option<&UserWorkload>,
) -> Result<Workload, String> {
    let loaded = scenarios::load(entry.scenario)?;
    let mut file = loaded.file;
    file.overlay(overrides);
    let fitted = Workload::resolve(&loaded.name, &loaded.source, file)?.fitted(fit(entry, user));
    fitted.faults_fit()?;
    Ok(fitted)
}

/// The overrides a suite applies to a scenario file: its length and the user's workload but the
/// fields the scenario keeps (the strategies are the plan's, chosen once).
pub(crate) fn overrides(
    entry: &SuiteEntry,
    length: Length,
    user: Option<&UserWorkload>,
) -> ScenarioFile {
    let workload = match user {
        Some(user) => user.overrides_for(&own_workload(entry).0),
        None => ScenarioFile::default(),
    };
    ScenarioFile {
        duration: length.duration.map(str::to_owned),
        warmup: length.warmup.map(str::to_owned),
        ..workload
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::duration::{format_duration, parse_duration};
    use crate::faults::FaultSpec;
    use crate::faults::spec::Setting;
    use crate::workload::WorkerMode;

    fn seconds(text: &str) -> Duration {
        parse_duration(text).expect("a duration")
    }

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
            let w = workload(&pause, length, Some(&u)).expect("resolves");
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
        let w = workload(&short, length, Some(&user("30s", "10"))).expect("ok");
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

    /// Every timing of a fault: `at`, then those of its settings, by name.
    fn timings(f: &FaultSpec) -> Vec<(&'static str, Duration)> {
        let mut all = vec![("at", f.at)];
        all.extend(f.settings().into_iter().filter_map(|s| match s {
            Setting::Timing(name, d) => Some((name, d)),
            Setting::Count(..) | Setting::Word(..) => None,
        }));
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
            let own = workload(entry, *length, None).expect("resolves");
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
            let theirs = workload(entry, *length, Some(&user)).expect("resolves");
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
            let scaled: Vec<Vec<(&str, Duration)>> = own
                .faults
                .iter()
                .map(|f| {
                    timings(f)
                        .into_iter()
                        .map(|(n, d)| (n, d * factor))
                        .collect()
                })
                .collect();
            let got: Vec<Vec<(&str, Duration)>> = theirs.faults.iter().map(timings).collect();
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
}
