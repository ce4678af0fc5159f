//! A checked many-locks request ([`ScaleSpec`]): the strategies, the steps of held locks, the window,
//! the caps and where each client runs; and what one series measures ([`Subject`]).

use std::path::PathBuf;
use std::time::Duration;

use lockbench_reports::scale::ScaleSettings;
use serde::{Deserialize, Serialize};

use crate::strategies::{Strategy, StrategySettings};

/// The stop reason of a series that SIGINT or SIGTERM cut short.
pub(crate) const INTERRUPTED: &str = "interrupted (SIGINT or SIGTERM)";

/// What one series measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Subject {
    /// The strategy's own client.
    Strategy,
    /// The raw sender of the strategy's batched calls (`raw.rs`).
    RawSender,
}

/// Where each strategy's client runs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Isolation {
    /// In this process.
    #[default]
    InProcess,
    /// In a worker process running this `lockbench` executable.
    ChildProcess(PathBuf),
}

/// A checked many-locks request. A worker process is handed it whole as JSON (its strategies by id,
/// found again in the worker's registry; its isolation is always in that process).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ScaleSpec {
    /// The strategies, in run order.
    #[serde(with = "strategy_ids")]
    pub strategies: Vec<&'static Strategy>,
    /// Held-lock counts, strictly ascending, each ≥ 1.
    pub steps: Vec<u64>,
    /// Measured window per step.
    pub hold: Duration,
    /// TTL of the watchdog leases.
    pub watchdog_timeout: Duration,
    /// Concurrent acquires while filling.
    pub concurrency: usize,
    /// Most time a step may take to fill.
    pub step_budget: Duration,
    /// Thread cap of the client.
    pub max_threads: u64,
    /// Resident-set cap of the client.
    pub max_rss_bytes: u64,
    /// Where each strategy's client runs.
    #[serde(skip)]
    pub isolation: Isolation,
    /// Whether the raw sender is measured beside `redis-watchdog-batched`.
    pub yardstick: bool,
    /// Acquire-and-release cycles every row runs before its first step (the same churn for every row
    /// of a run, so a pair is measured after the same workload).
    pub warm_up: Duration,
    /// Passes per strategy, ≥ 1: the first of every strategy, then the second of every strategy, ….
    pub passes: u32,
}

/// Strategies as their ids in JSON, found in the registry when read.
mod strategy_ids {
    use serde::de::Error as _;
    use serde::{Deserialize, Deserializer, Serializer};

    use crate::strategies::{self, Strategy};

    pub(super) fn serialize<S: Serializer>(
        list: &[&'static Strategy],
        to: S,
    ) -> Result<S::Ok, S::Error> {
        to.collect_seq(list.iter().map(|s| s.id))
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(
        from: D,
    ) -> Result<Vec<&'static Strategy>, D::Error> {
        let ids: Vec<String> = Vec::deserialize(from)?;
        ids.iter()
            .map(|id| {
                strategies::find(id).ok_or_else(|| D::Error::custom(format!("no strategy {id:?}")))
            })
            .collect()
    }
}

impl ScaleSpec {
    /// The renewal period of the watchdog leases.
    pub fn renew_period(&self) -> Duration {
        self.settings().period()
    }

    /// What every strategy is configured with.
    pub fn settings(&self) -> StrategySettings {
        StrategySettings::new(self.watchdog_timeout)
    }

    /// The settings as the results file records them.
    pub fn to_model(&self) -> ScaleSettings {
        ScaleSettings {
            steps: self.steps.clone(),
            hold_ms: ms(self.hold),
            watchdog_timeout_ms: ms(self.watchdog_timeout),
            renew_period_ms: ms(self.renew_period()),
            acquire_concurrency: self.concurrency as u64,
            step_budget_ms: ms(self.step_budget),
            max_threads: self.max_threads,
            max_rss_bytes: self.max_rss_bytes,
            warm_up_ms: Some(ms(self.warm_up)),
            passes: self.passes,
        }
    }

    /// The strategy, then its raw sender if it has one and this spec asks for it.
    pub fn subjects_of(&self, strategy: &'static Strategy) -> Vec<(&'static Strategy, Subject)> {
        let mut subjects = vec![(strategy, Subject::Strategy)];
        if self.yardstick && strategy.facts.yardstick {
            subjects.push((strategy, Subject::RawSender));
        }
        subjects
    }
}

pub(crate) fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}
