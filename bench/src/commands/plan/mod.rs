//! The one typed plan of `compare` and `run`, built once before anything runs: per scenario its
//! workload, its cases (a strategy's registry entry under a lease mode, whether it runs or is skipped
//! at once and why, what theory expects of it), the chosen strategies it does not apply to and why,
//! its trials and its estimate. `run` executes one scenario's plan and its results file lists the
//! left-out strategies from it; `compare` prints the suite plan's estimate and runs it entry by
//! entry. Which strategies and cases run is decided in [`scenario`], the planned time from those
//! decisions in [`estimate`].

pub(crate) mod estimate;
pub(crate) mod scenario;

pub(crate) use estimate::{Estimate, planned_total, report_time};
pub(crate) use scenario::{NotApplicable, ScenarioPlan};

use crate::commands::suite::{self, Length, MANY_LOCKS, SuiteEntry};
use crate::strategies::{Strategy, StrategyChoice};
use crate::workload::ScenarioFile;
use crate::workload::user::UserWorkload;

/// What a suite's plan is built from, besides its entries.
#[derive(Debug, Clone, Copy)]
pub(crate) struct SuiteAsk<'a> {
    /// The chosen strategies (the peers and added adapters included).
    pub choice: &'a StrategyChoice,
    /// Trials per case asked for (each entry's length multiplies them).
    pub trials: u32,
    /// Whether a case theory expects to be violated stops at its first violated trial.
    pub settle_early: bool,
    /// The user's workload, if any.
    pub user: Option<&'a UserWorkload>,
    /// Follow the Redis servers with `MONITOR` (with the peers).
    pub monitor_commands: bool,
    /// Write each case's history.
    pub history: bool,
}

/// What one entry of a suite runs.
#[derive(Debug, Clone)]
pub(crate) enum Work {
    /// A scenario of `lockbench run`: its plan, or why it does not resolve for these strategies (a
    /// usage error when its turn comes).
    Scenario(Result<Box<ScenarioPlan>, String>),
    /// The many-locks pass: the chosen strategies that can hold many locks.
    ManyLocks(Vec<&'static Strategy>),
}

/// One entry of a suite's plan.
#[derive(Debug, Clone)]
pub(crate) struct PlannedEntry {
    /// The suite's entry.
    pub entry: SuiteEntry,
    /// Its length in the suite run.
    pub length: Length,
    /// Planned trials per case.
    pub trials: u32,
    /// What it runs.
    pub work: Work,
    /// Its planned time.
    pub estimate: Estimate,
}

impl PlannedEntry {
    /// The scenario's name.
    pub(crate) fn scenario(&self) -> &'static str {
        self.entry.scenario
    }

    /// The scenario's plan, when it resolved.
    pub(crate) fn scenario_plan(&self) -> Option<&ScenarioPlan> {
        match &self.work {
            Work::Scenario(Ok(plan)) => Some(plan),
            _ => None,
        }
    }
}

/// The plan of `entries` (a suite's, in run order) for `ask`.
pub(crate) fn suite_plan(entries: &[(SuiteEntry, Length)], ask: SuiteAsk<'_>) -> Vec<PlannedEntry> {
    entries
        .iter()
        .map(|&(entry, length)| {
            let trials = length.trials(ask.trials);
            let (work, estimate) = if entry.scenario == MANY_LOCKS {
                let at_scale: Vec<&'static Strategy> = ask
                    .choice
                    .entries()
                    .iter()
                    .copied()
                    .filter(|s| s.not_at_scale().is_none())
                    .collect();
                let estimate = Estimate::of_many_locks(at_scale.len() as u32);
                (Work::ManyLocks(at_scale), estimate)
            } else {
                let plan = scenario_plan(&entry, length, ask).map(Box::new);
                let estimate = plan.as_ref().map_or(Estimate::default(), |p| {
                    Estimate::of_scenario(p, trials, ask.settle_early)
                });
                (Work::Scenario(plan), estimate)
            };
            PlannedEntry {
                entry,
                length,
                trials,
                work,
                estimate,
            }
        })
        .collect()
}

/// The plan of one scenario of the suite: its workload as the run resolves it, for the chosen
/// strategies.
fn scenario_plan(
    entry: &SuiteEntry,
    length: Length,
    ask: SuiteAsk<'_>,
) -> Result<ScenarioPlan, String> {
    let overrides = ScenarioFile {
        // With the peers, MONITOR follows the Redis servers: the commands and scripts each row ran,
        // for holding the models against their libraries.
        monitor_commands: ask.monitor_commands.then_some(true),
        ..suite::overrides(entry, length, ask.user)
    };
    let mut workload = suite::resolved(entry, overrides, ask.user)?;
    workload.history = ask.history;
    ScenarioPlan::build(workload, ask.choice)
}

/// The estimates of a suite's plan.
pub(crate) fn estimates(plan: &[PlannedEntry]) -> impl Iterator<Item = &Estimate> + Clone {
    plan.iter().map(|p| &p.estimate)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::estimate::{
        CASE_OVERHEAD_TASKS, MANY_LOCKS_PER_PASS, MANY_LOCKS_PER_STRATEGY, SCENARIO_SERVERS,
    };
    use super::*;
    use crate::base::duration::parse_duration;
    use crate::commands::suite::{MANY_LOCKS_PASSES, Suite, budget};

    fn seconds(text: &str) -> Duration {
        parse_duration(text).expect("a duration")
    }

    /// `--quick` (one trial) must finish within 4 minutes on a 2-core machine.
    const QUICK_BUDGET: Duration = Duration::from_secs(240);
    /// The default suite (three trials) must finish within 20 minutes.
    const DEFAULT_BUDGET: Duration = Duration::from_secs(1200);

    /// One scenario's estimate, as the tests read it.
    #[derive(Debug)]
    struct Row {
        scenario: &'static str,
        cases: u32,
        per_case: Duration,
        total: Duration,
    }

    /// The plan of `suite` for the strategies of `list`, as `compare` builds it.
    fn plan(
        suite: Suite,
        list: &str,
        trials: u32,
        settle_early: bool,
        user: Option<&UserWorkload>,
    ) -> Vec<Row> {
        let choice = StrategyChoice::parse(list).expect("a valid list");
        let ask = SuiteAsk {
            choice: &choice,
            trials,
            settle_early,
            user,
            monitor_commands: false,
            history: false,
        };
        suite_plan(&suite::entries(suite), ask)
            .into_iter()
            .map(|p| Row {
                scenario: p.scenario(),
                cases: p.estimate.cases,
                per_case: p.estimate.per_case,
                total: p.estimate.total,
            })
            .collect()
    }

    fn planned_total(rows: &[Row]) -> Duration {
        let estimates: Vec<Estimate> = rows
            .iter()
            .map(|r| Estimate {
                cases: r.cases,
                per_case: r.per_case,
                total: r.total,
            })
            .collect();
        super::planned_total(&estimates)
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
            for (entry, length) in suite::entries(Suite::Full) {
                if entry.scenario == MANY_LOCKS {
                    continue;
                }
                let w = suite::workload(&entry, length, user)
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

    /// The default suite's plan as the planner of `commands/suite.rs` gave it before the plan was
    /// typed (scenario, cases, one trial of the longest case, the scenario's total), and the totals
    /// of every suite and of three named strategies: building the plan once changed no estimate.
    const DEFAULT_BEFORE: &[(&str, u32, &str, &str)] = &[
        ("baseline", 11, "950ms", "63.7s"),
        ("long-tail", 11, "2.45s", "81.85s"),
        ("lease-too-short", 20, "1.75s", "74.5s"),
        ("process-pause", 10, "3.62s", "44.44s"),
        ("client-crash", 10, "2.62s", "79.6s"),
        ("cpu-starvation", 10, "3.62s", "51.68s"),
        ("cpu-quota", 10, "4.12s", "124.6s"),
        ("cpu-hog", 10, "3.12s", "94.6s"),
        ("network-delay", 10, "3.15s", "95.5s"),
        ("network-partition", 10, "3.65s", "103.2s"),
        ("server-freeze", 10, "3.15s", "95.5s"),
        ("redis-client-pause", 5, "3.15s", "48.25s"),
        ("pubsub-drop", 4, "4.15s", "50.8s"),
        ("redis-failover", 5, "3.45s", "25.15s"),
        ("leader-loss", 2, "7.65s", "39.4s"),
        ("many-locks", 9, "12s", "109s"),
    ];

    #[test]
    fn the_typed_plan_estimates_what_the_planner_did() {
        let rows: Vec<(&str, u32, String, String)> = plan(Suite::Default, "all", 3, true, None)
            .iter()
            .map(|r| {
                (
                    r.scenario,
                    r.cases,
                    format!("{:?}", r.per_case),
                    format!("{:?}", r.total),
                )
            })
            .collect();
        let before: Vec<(&str, u32, String, String)> = DEFAULT_BEFORE
            .iter()
            .map(|&(s, c, p, t)| (s, c, p.to_owned(), t.to_owned()))
            .collect();
        assert_eq!(rows, before);
        for (suite, list, trials, settle_early, total) in [
            (Suite::Default, "all", 3, true, "1189.12s"),
            (Suite::Quick, "all", 1, true, "173.1s"),
            (
                Suite::Full,
                "all,postgres-advisory,postgres-lease",
                3,
                true,
                "2489.52s",
            ),
            (Suite::Full, "all", 10, false, "8792.4s"),
            (
                Suite::Full,
                "redis-watchdog,valkey-ifeq,mysql-get-lock",
                3,
                true,
                "752.54s",
            ),
        ] {
            let planned = planned_total(&plan(suite, list, trials, settle_early, None));
            assert_eq!(format!("{planned:?}"), total, "{suite:?} {list} {trials}");
        }
    }
}
