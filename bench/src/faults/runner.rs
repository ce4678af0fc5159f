//! Runs a case's faults on schedule: each fault waits for its `at`, picks its target (for `holder`:
//! the first client to acquire a lock from then on, checked to still hold it), applies the fault,
//! lifts it after `duration` (at once if the case ends first: a paused worker is always resumed),
//! then measures what followed (see [`super::env`]) and returns its [`FaultWindow`]. Faults run
//! concurrently, each in its own task; blocking calls (server commands, kills) run off the async
//! threads. How each kind is applied and lifted lives in [`super::worker_faults`],
//! [`super::network_faults`] and [`super::server_faults`].

use std::collections::BTreeMap;

use lockbench_reports::model::FaultWindow;
use tokio::task::JoinSet;

use super::env::{FaultEnv, Record, sleep_until};
use super::{network_faults, server_faults, worker_faults};
use crate::base::clock::duration_ns;
use crate::workload::faults::{FaultScope, FaultSpec};

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
    let mut rec = Record::new(&spec, planned);
    if !sleep_until(&env, planned).await {
        rec.not_applied("the case ended first");
        return rec.window(env.go);
    }
    match spec.kind.scope() {
        FaultScope::WorkerProcess => worker_faults::apply(&spec, &env, &mut rec).await,
        FaultScope::Network => network_faults::apply(&spec, &env, &mut rec).await,
        FaultScope::Server => server_faults::apply(&spec, &env, &mut rec).await,
    }
    rec.window(env.go)
}
