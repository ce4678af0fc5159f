//! Runs a case's faults on schedule: each fault waits for its `at`, picks its target (for `holder`:
//! the first client to acquire a lock from then on, checked to still hold it), applies the fault,
//! lifts it after `duration` (at once if the case ends first: a paused worker is always resumed),
//! then measures what followed (see [`super::env`]) and returns its [`FaultWindow`]. Faults run
//! concurrently, each in its own task; blocking calls (server commands, kills) run off the async
//! threads. How each kind is applied and lifted lives in its family's file (see
//! [`super::families`]); what the faults on the server share, in [`super::server_strike`].

use std::collections::BTreeMap;

use lockbench_reports::model::FaultWindow;
use tokio::task::JoinSet;

use super::env::{FaultEnv, Record, sleep_until};
use super::families::{FamilySpec, FaultSpec};
use super::{
    failovers, leader_kill, network, node_faults, redis_commands, server_pause, server_strike,
    sessions, worker_process,
};
use crate::base::clock::duration_ns;

/// Runs every fault of `specs`; returns their windows in start order once the case has ended.
pub(crate) async fn run_all(specs: Vec<FaultSpec>, env: FaultEnv) -> Vec<FaultWindow> {
    let mut tasks = JoinSet::new();
    for spec in specs {
        tasks.spawn(run_one(spec, env.clone()));
    }
    let mut windows = Vec::new();
    while let Some(done) = tasks.join_next().await {
        match done {
            Ok(w) => windows.push(w),
            Err(e) => windows.push(FaultWindow {
                kind: "unknown".into(),
                target: String::new(),
                parameters: BTreeMap::new(),
                start_ms: 0.0,
                stop_ms: None,
                recovery_ms: None,
                loss_noticed_ms: None,
                note: Some(format!("the fault task failed: {e}")),
                applied: Some(false),
                evidence: Some(format!("the fault task failed: {e}")),
                cut_short: None,
            }),
        }
    }
    windows.sort_by(|a, b| a.start_ms.total_cmp(&b.start_ms));
    windows
}

async fn run_one(spec: FaultSpec, env: FaultEnv) -> FaultWindow {
    let planned = env.go + duration_ns(spec.at);
    let kind = (spec.kind, spec.kind.profile().aftermath);
    let mut rec = Record::new(kind, spec.target, spec.parameters(), planned);
    if !sleep_until(&env, planned).await {
        rec.not_applied("the case ended first");
        return rec.window(env.go);
    }
    inject(&spec, &env, &mut rec).await;
    rec.window(env.go)
}

/// Applies the fault through its family (giving it its own settings), lifts it, and measures what
/// followed.
async fn inject(spec: &FaultSpec, env: &FaultEnv, rec: &mut Record) {
    match &spec.family {
        FamilySpec::Worker(own) => return worker_process::inject(&spec.with(own), env, rec).await,
        FamilySpec::Network(own) => return network::inject(&spec.with(own), env, rec).await,
        _ => {}
    }
    let shared = spec.with(());
    let Ok(struck) = server_strike::strike(&shared, env, rec).await else {
        return;
    };
    let victim = struck.victim.as_ref();
    let applied = match &spec.family {
        FamilySpec::PauseServer => server_pause::inject(&shared, env, rec).await,
        FamilySpec::RedisCommand(kind) => {
            redis_commands::inject(*kind, &shared, env, rec, (victim, struck.t0)).await
        }
        FamilySpec::Failover(own) => failovers::inject(&spec.with(own), env, rec, victim).await,
        FamilySpec::LeaderKill => leader_kill::inject(env, rec).await,
        FamilySpec::Node(own) => node_faults::inject(&spec.with(own), env, rec).await,
        FamilySpec::TerminateSession => sessions::inject(env, rec, victim).await,
        FamilySpec::Worker(_) | FamilySpec::Network(_) => return,
    };
    server_strike::measure(&shared, env, rec, struck, applied).await;
}
