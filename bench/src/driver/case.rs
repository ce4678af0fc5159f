//! One case — one strategy under one lease mode — from the checks before it starts to the figures after
//! it stops, whichever worker mode runs it: lease support, the faults' set-up, the server's counters
//! before and after (the timing and supervision the modes share live in [`super::mode`]).

use std::time::Duration;

use lockbench_reports::model::{CaseStatus, FaultWindow, RenewAfterUnlock, ServerCost, ServerInfo};

use super::mode::{CaseContext, CaseError, ModeOutput, capabilities_model};
use super::worker::CasePlan;
use super::{processes, tasks};
use crate::backends::monitor::{Followed, RenewMonitor};
use crate::backends::{ServerKind, stats};
use crate::faults::{CaseFaults, PrepareError};
use crate::strategies::{self, Strategy};
use crate::workload::{LeaseSpec, WorkerMode, Workload};

/// A case as run.
#[derive(Debug)]
pub(crate) struct CaseRun {
    /// Strategy id.
    pub strategy: &'static str,
    /// Lease mode.
    pub lease: LeaseSpec,
    /// How it ended.
    pub status: CaseStatus,
    /// Why it was skipped or failed.
    pub error: Option<String>,
    /// The figures, when it ran.
    pub output: Option<ModeOutput>,
    /// The server's work during the case.
    pub server_cost: Option<ServerCost>,
    /// The warm-up it had.
    pub warmup: Duration,
    /// The faults injected during the case.
    pub faults: Vec<FaultWindow>,
    /// Servers started for this case alone (a fault destroys them).
    pub own_servers: Option<ServerInfo>,
    /// Renew calls after unlock as the Redis server saw them (`monitor_renewals`).
    pub renew_after_unlock: Option<RenewAfterUnlock>,
}

/// Whether a strategy with `caps` can run `lease` with `workload`'s watchdog timeout.
pub(crate) fn lease_support(
    caps: &lockers::Capabilities,
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
    if ttl < caps.min_ttl {
        return Err(format!(
            "a {} TTL is below its minimum of {}",
            crate::base::duration::format_duration(ttl),
            crate::base::duration::format_duration(caps.min_ttl)
        ));
    }
    let granularity = caps.ttl_granularity.as_nanos();
    if granularity > 1 && ttl.as_nanos() % granularity != 0 {
        return Err(format!(
            "a {} TTL is not a multiple of its {} granularity",
            crate::base::duration::format_duration(ttl),
            crate::base::duration::format_duration(caps.ttl_granularity)
        ));
    }
    Ok(())
}

/// Runs one case.
pub(crate) async fn run_case(
    ctx: &CaseContext<'_>,
    strategy: &'static Strategy,
    lease: LeaseSpec,
    index: usize,
) -> CaseRun {
    let mut run = CaseRun {
        strategy: strategy.id,
        lease,
        status: CaseStatus::Failed,
        error: None,
        output: None,
        server_cost: None,
        warmup: ctx.workload.warmup,
        faults: Vec::new(),
        own_servers: None,
        renew_after_unlock: None,
    };
    let key_prefix = format!("lockbench/{}/{index}/", ctx.run_id);
    let plan = CasePlan::new(ctx.workload, strategy.id, lease, key_prefix);
    let declared = match strategy.capabilities(&plan.settings()) {
        Ok(caps) => caps,
        Err(e) => {
            run.error = Some(format!("{}: {e}", strategy.id));
            return run;
        }
    };
    if let Err(why) = lease_support(&declared, lease, ctx.workload) {
        run.status = CaseStatus::Skipped;
        run.error = Some(format!("{} {why}", strategy.id));
        return run;
    }
    let on_cluster = ctx
        .endpoints
        .redis
        .as_deref()
        .is_some_and(crate::backends::address::is_cluster);
    if strategy.server == ServerKind::Redis
        && on_cluster
        && !crate::strategies::runs_on_redis_cluster(strategy.id)
    {
        run.status = CaseStatus::Skipped;
        run.error = Some(format!(
            "{} does not run on a Redis Cluster: {}",
            strategy.id,
            strategies::NOT_ON_REDIS_CLUSTER
        ));
        return run;
    }
    let faults = match CaseFaults::prepare(
        &ctx.workload.faults,
        strategy,
        &declared,
        ctx.workload.clients,
        ctx.backends,
        &ctx.endpoints,
    )
    .await
    {
        Ok(f) => f.with_key_prefix(&plan.key_prefix),
        Err(PrepareError::Skip(why)) => {
            run.status = CaseStatus::Skipped;
            run.error = Some(why);
            return run;
        }
        Err(PrepareError::Fail(why)) => {
            run.error = Some(why);
            return run;
        }
    };
    run.own_servers = faults.server_info();
    // A case on servers of its own reads only those (none when they restart); the scenario's shared
    // server saw nothing of it.
    let source = if run.own_servers.is_some() {
        faults.stats_source()
    } else {
        ctx.backends
            .get(strategy.server)
            .and_then(|b| b.stats_source())
    };
    let before = match &source {
        Some(s) => s.snapshot_async().await,
        None => None,
    };
    // MONITOR on the one Redis for either count; on Redlock's nodes only for the commands.
    let follow = |kind: ServerKind| match kind {
        ServerKind::Redis => ctx.workload.monitor_renewals || ctx.workload.monitor_commands,
        ServerKind::RedisNodes => ctx.workload.monitor_commands,
        _ => false,
    };
    let monitors = match &source {
        Some(s) if s.is_tls() && ctx.workload.monitor_renewals => {
            run.error = Some("counting renewals with MONITOR needs a plain (non-TLS) Redis".into());
            return run;
        }
        Some(s) if follow(s.kind()) && !s.is_tls() => {
            let started: Result<Vec<RenewMonitor>, String> = s
                .sockets()
                .into_iter()
                .map(|socket| RenewMonitor::start(socket, s.auth()))
                .collect();
            match started {
                Ok(m) => m,
                Err(e) => {
                    run.error = Some(e);
                    return run;
                }
            }
        }
        _ => Vec::new(),
    };
    let started = ctx.clock.now();
    let label = format!("{} {lease}", strategy.id);
    let result = match ctx.workload.workers {
        WorkerMode::Tasks => tasks::run(ctx, strategy, &plan, &label, &faults).await,
        WorkerMode::Processes | WorkerMode::Remote => {
            processes::run(ctx, &plan, &label, &faults).await
        }
    };
    let seconds = (ctx.clock.now() - started) as f64 / 1e9;
    if let (Some(source), Some(before)) = (&source, before)
        && let Some(after) = source.snapshot_async().await
    {
        let mut cost = stats::delta(source.kind(), &before, &after, seconds);
        // Redis counts the commands scripts run with the clients' own, so the requests the clients
        // sent are lockers' count (checked against MONITOR in a test); a peer's are not countable.
        if matches!(source.kind(), ServerKind::Redis | ServerKind::RedisNodes)
            && !strategies::is_peer(strategy.id)
            && let Ok(output) = &result
        {
            cost.client_requests = Some(output.tally.redis_commands);
        }
        run.server_cost = Some(cost);
    }
    drop(faults);
    if !monitors.is_empty() {
        // A renewal sent just before the clients closed still reaches the count.
        let settle = Duration::from_millis(100);
        let counts = tokio::task::spawn_blocking(move || {
            monitors
                .into_iter()
                .map(|m| m.finish(settle))
                .collect::<Vec<_>>()
        })
        .await
        .unwrap_or_default();
        let mut followed = Followed::default();
        let mut after_unlock = RenewAfterUnlock {
            renew_calls: 0,
            on_released_keys: 0,
            releases: 0,
        };
        for (unlock, node) in &counts {
            followed.add(node);
            after_unlock.renew_calls += unlock.renew_calls;
            after_unlock.on_released_keys += unlock.on_released_keys;
            after_unlock.releases += unlock.releases;
        }
        // Renewals after unlock are counted on one Redis or a cluster's masters (each key lives on
        // one), not on Redlock's nodes (a key freed on one says nothing of a majority).
        if ctx.workload.monitor_renewals
            && source.as_ref().map(|s| s.kind()) == Some(ServerKind::Redis)
        {
            run.renew_after_unlock = Some(after_unlock);
        }
        if let Some(cost) = &mut run.server_cost {
            if strategies::is_peer(strategy.id) {
                cost.client_requests = Some(followed.commands);
            }
            cost.renew_calls = Some(followed.renew_calls);
            cost.scripts = followed.scripts;
        }
    }
    match result {
        Ok(mut output) => {
            if output.capabilities != capabilities_model(&declared) {
                // Not fatal: the results record the live client's; the registry entry needs fixing.
                run.error = Some(format!(
                    "{}: the registry declares other capabilities than the live client reports",
                    strategy.id
                ));
            }
            run.status = if output.problem.is_some() {
                CaseStatus::Failed
            } else if output.interrupted {
                CaseStatus::Interrupted
            } else {
                CaseStatus::Complete
            };
            if output.problem.is_some() {
                run.error = output.problem.clone();
            }
            if let Some(why) = &output.tally.config_error {
                // Like a lease mode a strategy does not take: the case does not apply, with why.
                run.status = CaseStatus::Skipped;
                run.error = Some(format!("{} refuses these settings: {why}", strategy.id));
            }
            run.faults = std::mem::take(&mut output.faults);
            run.output = Some(output);
        }
        Err(CaseError::Fail(why)) => run.error = Some(why),
    }
    run
}
