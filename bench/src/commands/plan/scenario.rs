//! One scenario's plan and the decisions behind it, made once for the estimate and the run alike:
//! which chosen strategies the scenario keeps and which it leaves out with why
//! ([`keep_fault_targets`]), and for every case (a kept strategy under a lease mode) whether it runs
//! or is skipped at once, with why ([`case_fate`]); the servers the run then starts
//! ([`ScenarioPlan::servers_to_start`]).

use std::collections::BTreeSet;
use std::time::Duration;

use lockbench_reports::model::{Expectation, expected_in};

use crate::backends::{GivenAddresses, ServerKind};
use crate::base::duration::format_duration;
use crate::base::error::BenchError;
use crate::driver::case::{CaseFate, NotRun};
use crate::faults::applicability;
use crate::faults::own_topology;
use crate::kinds::ServerKindExt;
use crate::strategies::{self, Strategy, StrategyChoice, StrategySettings};
use crate::workload::{LeaseSpec, WorkerMode, Workload};

/// A strategy left out of a run and why.
pub(crate) type NotApplicable = (&'static Strategy, String);

/// One case of a scenario: a strategy's registry entry under a lease mode.
#[derive(Debug, Clone)]
pub(crate) struct PlannedCase {
    /// The strategy's entry.
    pub strategy: &'static Strategy,
    /// The lease mode.
    pub lease: LeaseSpec,
    /// What the scenario's theory expects of it.
    pub expected: Option<Expectation>,
    /// Whether it runs (with the capabilities its strategy declares), or why it is skipped (or fails)
    /// at once, before anything is set up: in the words its results record.
    pub fate: CaseFate,
}

/// A scenario resolved for the chosen strategies: its workload, its cases in run order, and the
/// strategies it leaves out with why.
#[derive(Debug, Clone)]
pub(crate) struct ScenarioPlan {
    /// The workload as the run runs it (flags, the user's workload and the suite's length applied).
    pub workload: Workload,
    /// The strategies whose cases run, in the chosen order.
    pub strategies: Vec<&'static Strategy>,
    /// Every case of `strategies`, each strategy under each lease mode in turn.
    pub cases: Vec<PlannedCase>,
    /// The chosen strategies the scenario does not apply to, with why (their cases are listed as
    /// skipped).
    pub not_applicable: Vec<NotApplicable>,
}

impl ScenarioPlan {
    /// The plan of `workload` for `choice` and the adapters `--adapter` added (which run with the
    /// chosen rows); an error (one line) when no chosen strategy is left.
    pub(crate) fn build(workload: Workload, choice: &StrategyChoice) -> Result<Self, String> {
        let mut choice = choice.clone();
        for added in strategies::added() {
            choice = choice.with_unnamed(added);
        }
        let (kept, not_applicable) = keep_fault_targets(&workload, &choice)?;
        let settings = StrategySettings::new(workload.watchdog_timeout);
        let cases = kept
            .iter()
            .flat_map(|s| workload.leases.iter().map(move |l| (*s, *l)))
            .map(|(strategy, lease)| PlannedCase {
                strategy,
                lease,
                expected: expected_in(&workload.expect, strategy.id, &lease.to_string()),
                fate: case_fate(&workload, &settings, strategy, lease),
            })
            .collect();
        Ok(ScenarioPlan {
            workload,
            strategies: kept,
            cases,
            not_applicable,
        })
    }

    /// Whether the kept strategies can run in the workload's worker mode: a strategy whose server
    /// lives in the driver's process runs only with workers = tasks.
    pub(crate) fn check_worker_mode(&self) -> Result<(), String> {
        let workers = self.workload.workers;
        match self
            .strategies
            .iter()
            .find(|s| s.server.entry().in_driver_process)
        {
            Some(s) if workers != WorkerMode::Tasks => Err(format!(
                "strategy {} cannot run with workers = {workers}: its server lives in one process, so each worker would have its own (use workers = tasks)",
                s.id
            )),
            _ => Ok(()),
        }
    }

    /// The ids of the strategies whose cases run.
    pub(crate) fn ids(&self) -> Vec<&'static str> {
        self.strategies.iter().map(|s| s.id).collect()
    }

    /// The servers the run starts: those its strategies need (on the kinds the scenario is about),
    /// but those a fault's own topology replaces (which the user may then not give).
    pub(crate) fn servers_to_start(
        &self,
        given: &GivenAddresses,
    ) -> Result<BTreeSet<ServerKind>, BenchError> {
        let workload = &self.workload;
        let in_scope: Vec<&'static Strategy> = self
            .strategies
            .iter()
            .copied()
            .filter(|s| applicability::on_its_servers(workload, s).is_ok())
            .collect();
        let mut needed = strategies::servers_needed(&in_scope);
        let about =
            |kind: &ServerKind| workload.servers.is_empty() || workload.servers.contains(kind);
        for spec in &workload.faults {
            let Some(topology) = own_topology(spec) else {
                continue;
            };
            for kind in topology.replaces().iter().filter(|k| about(k)) {
                let flag = kind
                    .server()
                    .filter(|_| given.get(*kind).is_some())
                    .map(|server| format!("--{}", server.flag));
                if let Some(flag) = flag {
                    return Err(BenchError::usage(format!(
                        "{flag}: {} starts its own servers for every case (it kills one); leave {flag} out",
                        spec.kind
                    )));
                }
                needed.remove(kind);
            }
        }
        Ok(needed)
    }
}

/// Whether `strategy`'s case under `lease` runs in `workload`, in the words its results record, in
/// the order a case is checked: its strategy declares its capabilities (else the case fails), runs on
/// a server kind the scenario is about ([`applicability::on_its_servers`]), takes the lease mode at
/// the workload's TTL ([`lease_support`]) and takes every fault ([`applicability::applies_all`]).
/// The run takes this decision as it is; what only the run's servers can answer it checks then.
fn case_fate(
    workload: &Workload,
    settings: &StrategySettings,
    strategy: &'static Strategy,
    lease: LeaseSpec,
) -> CaseFate {
    let caps = strategy
        .capabilities(settings)
        .map_err(|e| NotRun::fail(format!("{}: {e}", strategy.id)))?;
    applicability::on_its_servers(workload, strategy).map_err(NotRun::skip)?;
    lease_support(&caps, strategy.facts.min_watchdog_ttl, lease, workload)
        .map_err(|why| NotRun::skip(format!("{} {why}", strategy.id)))?;
    applicability::applies_all(workload.faults.iter().map(|f| f.kind), strategy, &caps)
        .map_err(NotRun::skip)?;
    Ok(caps)
}

/// Whether a strategy with `caps` (and `min_watchdog_ttl`, [`crate::strategies::Facts`]'s) can run
/// `lease` with `workload`'s watchdog timeout.
fn lease_support(
    caps: &lockers::Capabilities,
    min_watchdog_ttl: Duration,
    lease: LeaseSpec,
    workload: &Workload,
) -> Result<(), String> {
    let (supported, ttl, what) = match lease {
        LeaseSpec::Watchdog => (
            caps.auto_renew,
            workload.watchdog_timeout,
            "watchdog leases",
        ),
        LeaseSpec::Fixed(d) => (caps.fixed_lease, d, "fixed leases"),
    };
    if !supported {
        return Err(format!("does not support {what}"));
    }
    if lease == LeaseSpec::Watchdog && ttl < min_watchdog_ttl {
        return Err(format!(
            "a {} watchdog TTL is below its library's minimum of {}",
            format_duration(ttl),
            format_duration(min_watchdog_ttl)
        ));
    }
    if ttl < caps.min_ttl {
        return Err(format!(
            "a {} TTL is below its minimum of {}",
            format_duration(ttl),
            format_duration(caps.min_ttl)
        ));
    }
    let granularity = caps.ttl_granularity.as_nanos();
    if granularity > 1 && ttl.as_nanos() % granularity != 0 {
        return Err(format!(
            "a {} TTL is not a multiple of its {} granularity",
            format_duration(ttl),
            format_duration(caps.ttl_granularity)
        ));
    }
    Ok(())
}

/// With faults or the scenario's own server kinds, `all` means every strategy the scenario applies to
/// ([`applicability::applies_to`]): the others are left out of the run, and returned with the reason
/// (their cases are listed as skipped); a strategy named explicitly stays, and its case is skipped
/// with the reason before anything is set up. Errors when none is left.
pub(crate) fn keep_fault_targets(
    workload: &Workload,
    choice: &StrategyChoice,
) -> Result<(Vec<&'static Strategy>, Vec<NotApplicable>), String> {
    let chosen = choice.entries().to_vec();
    if workload.faults.is_empty() && workload.servers.is_empty() {
        return Ok((chosen, Vec::new()));
    }
    let settings = StrategySettings::new(workload.watchdog_timeout);
    let applies = |s: &Strategy| -> Result<(), String> {
        let caps = s.capabilities(&settings).map_err(|e| e.to_string())?;
        applicability::applies_to(workload, s, &caps)
    };
    let mut kept = Vec::new();
    let mut left_out = Vec::new();
    for s in chosen {
        match applies(s) {
            Err(why) if !choice.is_named(s.id) => left_out.push((s, why)),
            _ => kept.push(s),
        }
    }
    if kept.is_empty() && !workload.servers.is_empty() {
        let names: Vec<&str> = workload.servers.iter().map(|k| k.name()).collect();
        return Err(format!(
            "strategies: none of the selected strategies runs on the servers the scenario is about ({})",
            names.join(", ")
        ));
    }
    if kept.is_empty() {
        let kinds: Vec<String> = workload.faults.iter().map(|f| f.kind.to_string()).collect();
        return Err(format!(
            "strategies: none of the selected strategies can take the faults ({})",
            kinds.join(", ")
        ));
    }
    Ok((kept, left_out))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenarios;

    #[test]
    fn with_every_strategy_a_failover_scenario_runs_only_its_own_kind() {
        // `all` leaves the PostgreSQL rows out of the default suite; they join it here, not by name
        // (a strategy named is kept, and its cases skipped with why).
        let all = ["postgres-advisory", "postgres-lease"]
            .into_iter()
            .fold(StrategyChoice::all(), |choice, id| {
                choice.with_unnamed(strategies::find(id).expect("registered"))
            });
        for (scenario, kind, about) in [
            ("redis-failover", ServerKind::Redis, "redis and valkey"),
            ("postgres-failover", ServerKind::Postgres, "postgres"),
        ] {
            let loaded = scenarios::load(scenario).expect("preset");
            let workload =
                Workload::resolve(&loaded.name, &loaded.source, loaded.file).expect("resolves");
            let (kept, left_out) = keep_fault_targets(&workload, &all).expect("kept");
            assert!(!kept.is_empty(), "{scenario}");
            assert!(kept.iter().all(|s| s.server == kind), "{scenario}");
            // The other kind with a replica: the fault would serve it, the scenario is not about it.
            let other = left_out
                .iter()
                .find(|(s, _)| s.server != kind && s.server.faults().own.pair.is_some())
                .map(|(s, why)| (s.id, why.clone()));
            let (id, why) = other.expect("another kind's row left out");
            assert!(
                why.starts_with(&format!(
                    "{scenario} does not apply to {id}: the scenario is about {about} servers"
                )),
                "{why}"
            );
        }
    }
}
