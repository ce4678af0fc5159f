//! One case — one strategy under one lease mode — from the checks before it starts to the figures after
//! it stops, whichever worker mode runs it: lease support, the server's counters before and after, the
//! timing (go, warm-up, measured window), and the supervisor that ends the case on time, on the cycle
//! count or on Ctrl-C while updating the progress bar.

use std::path::PathBuf;
use std::time::Duration;

use lockbench_reports::model::{self, CaseStatus, ClientCost, FaultWindow, ServerCost, ServerInfo};

use super::oracle::OracleFindings;
use super::resource::{Resource, ResourceTotals};
use super::stop::StopSignal;
use super::tally::WorkerTally;
use super::worker::CasePlan;
use super::{processes, tasks};
use crate::backends::{Backends, EndpointAddrs, stats};
use crate::clock::{MonoClock, duration_ns};
use crate::faults::CaseFaults;
use crate::progress::{CaseProgress, Progress};
use crate::strategies::Strategy;
use crate::workload::{LeaseSpec, WorkerMode, Workload};

/// What every case of a run shares.
#[derive(Debug)]
pub struct CaseContext<'a> {
    /// The workload.
    pub workload: &'a Workload,
    /// The servers.
    pub backends: &'a Backends,
    /// Their addresses.
    pub endpoints: EndpointAddrs,
    /// Set on Ctrl-C.
    pub interrupt: StopSignal,
    /// The shared clock.
    pub clock: MonoClock,
    /// Unique per run; part of every key name.
    pub run_id: String,
    /// The `lockbench` executable worker processes run.
    pub worker_exe: PathBuf,
    /// Progress bars.
    pub progress: Progress,
}

/// Why a case did not produce figures.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CaseError {
    /// The strategy cannot do what the case asks.
    Skip(String),
    /// Set-up or the run failed.
    Fail(String),
}

/// What a worker mode hands back.
#[derive(Debug)]
pub struct ModeOutput {
    /// What the live client declared.
    pub capabilities: model::Capabilities,
    /// Every worker's figures, merged (renewal included).
    pub tally: WorkerTally,
    /// The overlap oracle's findings.
    pub findings: OracleFindings,
    /// The protected resource's totals.
    pub resource: ResourceTotals,
    /// Length of the measured window, ns.
    pub measured_ns: u64,
    /// Stopped by Ctrl-C.
    pub interrupted: bool,
    /// What the clients cost.
    pub client_cost: ClientCost,
    /// Something went wrong after the start (a worker died, did not stop); figures are partial.
    pub problem: Option<String>,
    /// The faults injected, as they happened.
    pub faults: Vec<FaultWindow>,
}

/// A case as run.
#[derive(Debug)]
pub struct CaseRun {
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
}

/// When a case starts, measures and stops (monotonic ns).
#[derive(Debug, Clone, Copy)]
pub struct Timing {
    /// Start.
    pub go: u64,
    /// Start of the measured window.
    pub measure_from: u64,
    /// End by time, if bounded by time.
    pub stop_at: Option<u64>,
}

impl Timing {
    /// Timing starting now.
    pub fn starting_now(clock: &MonoClock, workload: &Workload) -> Self {
        let go = clock.now();
        let measure_from = go + duration_ns(workload.warmup);
        Timing {
            go,
            measure_from,
            stop_at: workload.duration.map(|d| measure_from + duration_ns(d)),
        }
    }
}

/// The model's capabilities.
pub fn capabilities_model(c: &lockers::Capabilities) -> model::Capabilities {
    model::Capabilities {
        reentrant: c.reentrant,
        fencing: c.fencing,
        auto_renew: c.auto_renew,
        fixed_lease: c.fixed_lease,
        wait_notify: c.wait_notify,
        lost_signal: c.lost_signal,
        min_ttl_ms: c.min_ttl.as_secs_f64() * 1e3,
        ttl_granularity_ms: c.ttl_granularity.as_secs_f64() * 1e3,
    }
}

/// Whether a strategy with `caps` can run `lease` with `workload`'s watchdog timeout.
pub fn lease_support(
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
            crate::workload::format_duration(ttl),
            crate::workload::format_duration(caps.min_ttl)
        ));
    }
    let granularity = caps.ttl_granularity.as_nanos();
    if granularity > 1 && ttl.as_nanos() % granularity != 0 {
        return Err(format!(
            "a {} TTL is not a multiple of its {} granularity",
            crate::workload::format_duration(ttl),
            crate::workload::format_duration(caps.ttl_granularity)
        ));
    }
    Ok(())
}

/// Runs one case.
pub async fn run_case(
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
    };
    let key_prefix = format!("lockbench/{}/{index}/", ctx.run_id);
    let plan = CasePlan::new(ctx.workload, strategy.id, lease, key_prefix);
    let declared = match (strategy.capabilities)(&plan.settings()) {
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
        Ok(f) => f,
        Err(CaseError::Skip(why)) => {
            run.status = CaseStatus::Skipped;
            run.error = Some(why);
            return run;
        }
        Err(CaseError::Fail(why)) => {
            run.error = Some(why);
            return run;
        }
    };
    run.own_servers = faults.server_info();
    let source = faults.stats_source().or_else(|| {
        ctx.backends
            .get(strategy.server)
            .and_then(|b| b.stats_source())
    });
    let before = match source {
        Some(s) => s.snapshot_async().await,
        None => None,
    };
    let started = ctx.clock.now();
    let label = format!("{} {lease}", strategy.id);
    let result = match ctx.workload.workers {
        WorkerMode::Tasks => tasks::run(ctx, strategy, &plan, &label, &faults).await,
        WorkerMode::Processes => processes::run(ctx, &plan, &label, &faults).await,
    };
    let seconds = (ctx.clock.now() - started) as f64 / 1e9;
    if let (Some(source), Some(before)) = (source, before)
        && let Some(after) = source.snapshot_async().await
    {
        run.server_cost = Some(stats::delta(source.kind(), &before, &after, seconds));
    }
    drop(faults);
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
            run.faults = std::mem::take(&mut output.faults);
            run.output = Some(output);
        }
        Err(CaseError::Skip(why)) => {
            run.status = CaseStatus::Skipped;
            run.error = Some(why);
        }
        Err(CaseError::Fail(why)) => run.error = Some(why),
    }
    run
}

/// Ends the case: at `stop_at`, when `stop` is set (the cycle count was reached) or on `interrupt`.
/// Updates the progress bar meanwhile. Sets `stop` and returns (interrupted, when it stopped).
pub async fn supervise(
    ctx: &CaseContext<'_>,
    timing: Timing,
    stop: &StopSignal,
    resource: &Resource,
    bar: &CaseProgress,
) -> (bool, u64) {
    let clock = ctx.clock;
    let deadline = async {
        match timing.stop_at {
            Some(at) => tokio::time::sleep_until(clock.instant(at).into()).await,
            None => std::future::pending().await,
        }
    };
    tokio::pin!(deadline);
    let mut tick = tokio::time::interval(Duration::from_millis(200));
    let interrupted = loop {
        tokio::select! {
            _ = &mut deadline => break false,
            _ = stop.wait() => break false,
            _ = ctx.interrupt.wait() => break true,
            _ = tick.tick() => {
                let now = clock.now();
                bar.update(
                    Duration::from_nanos(now.saturating_sub(timing.go)),
                    resource.measured_writes(),
                    now >= timing.measure_from,
                );
            }
        }
    };
    let stopped_at = clock.now();
    stop.set();
    bar.finish();
    (interrupted, stopped_at)
}

/// The measured window's length: from `measure_from` to when the case stopped (or its planned end).
pub fn measured_ns(timing: Timing, stopped_at: u64) -> u64 {
    let end = timing.stop_at.map_or(stopped_at, |at| at.min(stopped_at));
    end.saturating_sub(timing.measure_from)
}
