//! One case — one strategy under one lease mode — from the plan's decision that it runs (or why not)
//! to the figures after it stops, whichever worker mode runs it: the faults' set-up, the server's
//! counters before and after (the timing and supervision the modes share live in [`super::mode`]).

use std::time::Duration;

use lockbench_reports::model::{CaseStatus, FaultWindow, RenewAfterUnlock, ServerCost, ServerInfo};

use super::mode::{CaseContext, CaseError, ModeOutput, capabilities_model};
use super::worker::CasePlan;
use super::{processes, tasks};
use crate::backends::monitor::{Followed, RenewMonitor};
use crate::backends::{ServerKind, stats};
use crate::faults::CaseFaults;
use crate::kinds::ServerKindExt;
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

/// Why a case stops before its figures: it does not apply (skipped) or it failed, with why (the
/// words its results record).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct NotRun {
    /// Skipped or failed.
    pub status: CaseStatus,
    /// Why, as the results say it.
    pub why: String,
}

impl NotRun {
    /// A case that does not apply, with why.
    pub(crate) fn skip(why: String) -> Self {
        Self {
            status: CaseStatus::Skipped,
            why,
        }
    }

    /// A case that cannot run, with why.
    pub(crate) fn fail(why: String) -> Self {
        Self {
            status: CaseStatus::Failed,
            why,
        }
    }
}

/// What the plan decided of a case before anything starts (`commands::plan`'s `case_fate`, the one
/// place that decides it): its strategy's declared capabilities when it runs, else why not.
pub(crate) type CaseFate = Result<lockers::Capabilities, NotRun>;

/// Runs one case as the plan decided it (`fate`): a case the plan skips is recorded with the plan's
/// words, without anything set up.
pub(crate) async fn run_case(
    ctx: &CaseContext<'_>,
    strategy: &'static Strategy,
    lease: LeaseSpec,
    fate: &CaseFate,
    index: usize,
) -> CaseRun {
    // A runtime that compiles as it goes (the JVM rows) gets a longer warm-up; its faults move with it.
    let warmed;
    let warmed_ctx;
    let ctx = match ctx.workload.with_warmup_at_least(strategy.facts.min_warmup) {
        Some(workload) => {
            warmed = workload;
            warmed_ctx = CaseContext {
                workload: &warmed,
                ..ctx.clone()
            };
            &warmed_ctx
        }
        None => ctx,
    };
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
    let ran = match fate {
        Ok(declared) => run_applicable(ctx, strategy, lease, declared, index, &mut run).await,
        Err(not_run) => Err(not_run.clone()),
    };
    if let Err(not_run) = ran {
        run.status = not_run.status;
        run.error = Some(not_run.why);
    }
    run
}

/// The steps of a case the plan runs (its strategy declaring `declared`): the check only the run's
/// servers can answer, set-up, the worker mode, the server's counts, the result.
async fn run_applicable(
    ctx: &CaseContext<'_>,
    strategy: &'static Strategy,
    lease: LeaseSpec,
    declared: &lockers::Capabilities,
    index: usize,
    run: &mut CaseRun,
) -> Result<(), NotRun> {
    let key_prefix = format!("lockbench/{}/{index}/", ctx.run_id);
    let plan = CasePlan::new(ctx.workload, strategy.id, lease, key_prefix);
    on_a_single_server(ctx, strategy)?;
    let faults = prepare_faults(ctx, strategy, &plan).await?;
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
    let monitors = start_monitors(ctx.workload, source.as_ref())?;
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
        if source
            .kind()
            .server()
            .is_some_and(|s| s.requests_from_tally)
            && !strategies::is_peer(strategy.id)
            && let Ok(output) = &result
        {
            cost.client_requests = Some(output.tally.redis_commands);
        }
        run.server_cost = Some(cost);
    }
    drop(faults);
    if !monitors.is_empty() {
        let kind = source.as_ref().map(|s| s.kind());
        add_monitor_counts(ctx.workload, strategy, kind, monitors, run).await;
    }
    record_result(run, strategy, declared, result);
    Ok(())
}

/// Whether `strategy` runs on the server the run's endpoints name: a Redis row that does not run on a
/// Redis Cluster (a peer's adapter takes one address) is skipped when `--redis` gave one. Decided
/// here, not in the plan: it rests on the address of the server the run resolved (given or
/// started), which the plan, built before any server and for `compare`'s estimate without them,
/// does not hold.
fn on_a_single_server(ctx: &CaseContext<'_>, strategy: &'static Strategy) -> Result<(), NotRun> {
    match strategy
        .server
        .server()
        .and_then(|s| (s.many_servers_behind)(&ctx.endpoints))
    {
        Some(many) if !strategies::runs_on_redis_cluster(strategy.id) => {
            Err(NotRun::skip(format!(
                "{} does not run on {many}: {}",
                strategy.id,
                strategies::NOT_ON_REDIS_CLUSTER
            )))
        }
        _ => Ok(()),
    }
}

/// The case's faults, set up (the plan already said they apply; a set-up that fails fails the case).
async fn prepare_faults(
    ctx: &CaseContext<'_>,
    strategy: &'static Strategy,
    plan: &CasePlan,
) -> Result<CaseFaults, NotRun> {
    CaseFaults::prepare(
        &ctx.workload.faults,
        strategy,
        ctx.workload.clients,
        ctx.backends,
        &ctx.endpoints,
    )
    .await
    .map(|f| f.with_key_prefix(&plan.key_prefix))
    .map_err(NotRun::fail)
}

/// MONITOR on the servers of a kind it follows ([`ServerEntry::monitor`](crate::kinds::ServerEntry)):
/// for either count where renewals after unlock are counted (one Redis), else only for the commands
/// (Redlock's nodes).
fn start_monitors(
    workload: &Workload,
    source: Option<&stats::StatsSource>,
) -> Result<Vec<RenewMonitor>, NotRun> {
    let follow = |kind: ServerKind| match kind.server().and_then(|s| s.monitor) {
        Some(m) if m.renewals_after_unlock => {
            workload.monitor_renewals || workload.monitor_commands
        }
        Some(_) => workload.monitor_commands,
        None => false,
    };
    match source {
        Some(s) if s.is_tls() && workload.monitor_renewals => Err(NotRun::fail(
            "counting renewals with MONITOR needs a plain (non-TLS) Redis".into(),
        )),
        Some(s) if follow(s.kind()) && !s.is_tls() => s
            .sockets()
            .into_iter()
            .map(|socket| RenewMonitor::start(socket, s.auth()))
            .collect::<Result<Vec<RenewMonitor>, String>>()
            .map_err(NotRun::fail),
        _ => Ok(Vec::new()),
    }
}

/// Ends the monitors and adds what they saw to `run`: renew calls, scripts, a peer's requests, and
/// renewals after unlock.
async fn add_monitor_counts(
    workload: &Workload,
    strategy: &'static Strategy,
    source_kind: Option<ServerKind>,
    monitors: Vec<RenewMonitor>,
    run: &mut CaseRun,
) {
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
    let counts_renewals = source_kind
        .and_then(|k| k.server()?.monitor)
        .is_some_and(|m| m.renewals_after_unlock);
    if workload.monitor_renewals && counts_renewals {
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

/// Puts the worker mode's result into `run`: its status, figures, faults and why it did not complete.
fn record_result(
    run: &mut CaseRun,
    strategy: &'static Strategy,
    declared: &lockers::Capabilities,
    result: Result<ModeOutput, CaseError>,
) {
    match result {
        Ok(mut output) => {
            if output.capabilities != capabilities_model(declared) {
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
}
