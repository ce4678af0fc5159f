//! What `compare` makes of the user's workload (`--workload`, the workload flags, `--time-scale`):
//! the note the report shows (the scale in words, the cases where what does not scale breaks the
//! ratio, the scenarios that keep part of their own workload), and the time scale to suggest when the
//! plan exceeds the suite's budget.

use std::time::Duration;

use lockbench_reports::comparison::{SuiteRun, UserWorkload as UserWorkloadNote};

use crate::commands::plan::{PlannedEntry, estimates, planned_total};
use crate::commands::suite::{self, Length, MANY_LOCKS, SuiteEntry};
use crate::workload::TimeScale;
use crate::workload::user::UserWorkload;

/// The `--time-scale` to suggest, a multiple of the user's that still runs every case of `asked` (a
/// TTL compressed below a strategy's smallest would skip cases), with its planned time: the smallest
/// whose plan fits `budget`, else the one that plans least (set-up costs do not scale).
pub(super) fn fitting_scale(
    user: &UserWorkload,
    budget: Duration,
    asked: &[PlannedEntry],
    plan: impl Fn(&UserWorkload) -> Vec<PlannedEntry>,
) -> Option<(TimeScale, Duration)> {
    let cases = |p: &[PlannedEntry]| p.iter().map(|s| s.estimate.cases).sum::<u32>();
    let candidates: Vec<(TimeScale, Duration)> =
        [2, 3, 5, 10, 20, 30, 50, 100, 200, 300, 500, 1000]
            .into_iter()
            .map(|k| user.time_scale.times(k))
            .filter(|n| *n <= TimeScale::FASTEST)
            .filter_map(|n| {
                let scaled = plan(&UserWorkload {
                    time_scale: n,
                    ..user.clone()
                });
                (cases(&scaled) == cases(asked)).then(|| (n, planned_total(estimates(&scaled))))
            })
            .collect();
    candidates
        .iter()
        .find(|(_, total)| *total <= budget)
        .or_else(|| candidates.iter().min_by_key(|(_, total)| *total))
        .copied()
}

/// A round trip above this share of a case's TTL breaks the ratio of a compressed workload.
const ROUND_TRIP_SHARE: f64 = 0.01;

/// What the report says about the user's workload: the scale in words, the cases where what does
/// not scale breaks the ratio, and the scenarios that kept part of their own workload.
pub(super) fn workload_note(
    user: &UserWorkload,
    suite: &[(SuiteEntry, Length)],
    runs: &[SuiteRun],
    no_many_locks: bool,
) -> UserWorkloadNote {
    let mut notes: Vec<String> = user.scale_line().into_iter().collect();
    if user.time_scale > TimeScale::REAL {
        // Per strategy: how many cases, and the worst share of its TTL one round trip took.
        let mut broken: Vec<(&str, u32, f64, f64, &str)> = Vec::new();
        for run in runs {
            // A scenario that keeps its own TTL ran at real time: nothing was compressed.
            let compressed = suite.iter().any(|(entry, _)| {
                entry.scenario == run.results.scenario.name
                    && user.time_scale_for(&suite::own_workload(entry).0) > TimeScale::REAL
            });
            if !compressed {
                continue;
            }
            let ttl_ms = run.results.scenario.workload.watchdog_timeout_ms;
            for case in &run.results.cases {
                let Some(round_trip) =
                    [case.latency.release.p50_ms, case.renewal.round_trip.p50_ms]
                        .into_iter()
                        .flatten()
                        .reduce(f64::max)
                else {
                    continue;
                };
                let share = round_trip / ttl_ms;
                if share <= ROUND_TRIP_SHARE {
                    continue;
                }
                let name = run.results.scenario.name.as_str();
                match broken.iter_mut().find(|b| b.0 == case.strategy) {
                    Some(b) if share > b.3 => *b = (b.0, b.1 + 1, round_trip, share, name),
                    Some(b) => b.1 += 1,
                    None => broken.push((&case.strategy, 1, round_trip, share, name)),
                }
            }
        }
        for (strategy, cases, round_trip, share, worst) in broken {
            notes.push(format!(
                "Ratio broken for {strategy} in {cases} case(s): a round trip (median release or \
                 renewal) of up to {round_trip:.1} ms is {:.1} % of the compressed TTL, above {} % \
                 (worst: {worst}); its figures there are not those of your workload at real time.",
                share * 100.0,
                ROUND_TRIP_SHARE * 100.0
            ));
        }
    }
    for (entry, _) in suite {
        if entry.scenario == MANY_LOCKS {
            if !no_many_locks {
                notes.push(format!("{}.", suite::MANY_LOCKS_OWN_WORKLOAD));
            }
            continue;
        }
        let (own, why) = suite::own_workload(entry);
        if own.is_empty() {
            continue;
        }
        let time = if user.time_scale_for(&own) != user.time_scale {
            ", at real time"
        } else {
            ""
        };
        notes.push(format!(
            "{} keeps its own {}{time}: {}",
            entry.scenario,
            own.join(", "),
            why.unwrap_or_default()
        ));
    }
    UserWorkloadNote {
        summary: user.summary(),
        time_scale: f64::from(user.time_scale),
        notes,
    }
}

#[cfg(test)]
mod tests {
    use lockbench_reports::comparison::Comparison;

    use super::*;
    use crate::commands::plan::{SuiteAsk, suite_plan};
    use crate::commands::suite::Suite;
    use crate::strategies::StrategyChoice;
    use crate::workload::ScenarioFile;

    const FIXTURE: &str = include_str!("../../../../reports/tests/fixtures/compare-quick.json");

    fn user(time_scale: &str) -> UserWorkload {
        let fields = ScenarioFile {
            watchdog_timeout: Some("30s".into()),
            task: Some("uniform 2s..20s".into()),
            ..ScenarioFile::default()
        };
        UserWorkload::new(None, fields, Some(time_scale))
            .expect("valid")
            .expect("given")
    }

    #[test]
    fn the_note_names_exceptions_and_broken_ratios() {
        let mut c = Comparison::read(FIXTURE).expect("fixture");
        // A 150 ms round trip against the baseline's 10 s TTL: 1.5 %, broken; long-tail and
        // lease-too-short keep their own TTL and run at real time, so nothing is compressed there.
        for run in &mut c.runs {
            for case in &mut run.results.cases {
                if case.strategy == "redis-watchdog" {
                    case.latency.release.p50_ms = Some(150.0);
                }
            }
        }
        let suite = suite::entries(Suite::Default);
        let note = workload_note(&user("10"), &suite, &c.runs, false);
        let text = note.notes.join("\n");
        assert_eq!(note.time_scale, 10.0);
        assert!(note.summary.contains("TTL 30s"), "{}", note.summary);
        assert!(
            text.starts_with("Your workload at 1/10 time: a 30s TTL run as 3s"),
            "{text}"
        );
        assert!(
            text.contains("Ratio broken for redis-watchdog in 1 case(s)")
                && text.contains("is 1.5 % of the compressed TTL")
                && text.contains("(worst: baseline)"),
            "{text}"
        );
        assert!(!text.contains("Ratio broken for memory"), "{text}");
        assert!(
            text.contains("long-tail keeps its own task, watchdog_timeout, at real time: its tail"),
            "{text}"
        );
        assert!(
            text.contains("lease-too-short keeps its own task, leases"),
            "{text}"
        );
        assert!(text.contains("many-locks keeps its own workload"), "{text}");
        // At real time nothing is compressed, so no ratio is broken.
        let real = workload_note(&user("1"), &suite, &c.runs, true);
        assert!(
            !real.notes.iter().any(|n| n.contains("Ratio")),
            "{:?}",
            real.notes
        );
        assert!(!real.notes.iter().any(|n| n.contains("many-locks")));
    }

    #[test]
    fn the_suggested_scale_fits_the_budget_and_keeps_every_case() {
        let choice = StrategyChoice::all();
        let plan = |u: &UserWorkload| {
            let ask = SuiteAsk {
                choice: &choice,
                trials: 3,
                settle_early: true,
                user: Some(u),
                monitor_commands: false,
                history: false,
            };
            suite_plan(&suite::entries(Suite::Default), ask)
        };
        let asked = plan(&user("1"));
        let total = planned_total(estimates(&asked));
        assert!(total > Duration::from_secs(1200), "{total:?}");
        let (n, fitted) =
            fitting_scale(&user("1"), Duration::from_secs(3600), &asked, plan).expect("a scale");
        assert!(
            fitted <= Duration::from_secs(3600) && n > TimeScale::REAL,
            "{n}: {fitted:?}"
        );
        let cases = |p: &[PlannedEntry]| p.iter().map(|s| s.estimate.cases).sum::<u32>();
        assert_eq!(cases(&plan(&user(&n.to_string()))), cases(&asked));
    }
}
