//! Scaffolding shared by the etcd and ZooKeeper tests: starting servers off the runtime, a port
//! nobody listens on, the `Renewed` events per lock, the smoke subset for a replicated cluster,
//! and the leader-loss check built on [`contention`](crate::contention).

use std::sync::Arc;
use std::time::Duration;

use lockbench_servers::{GroupMember, ServerGroup};
use lockers::conformance::{self, Target};
use lockers::{EventLog, LockEvent, Locker};

use crate::contention;

/// Runs a blocking server `start` off the async runtime and panics if it fails.
pub(crate) async fn start_blocking<S: Send + 'static>(
    start: impl FnOnce() -> lockbench_servers::Result<S> + Send + 'static,
) -> S {
    tokio::task::spawn_blocking(start).await.unwrap().unwrap()
}

/// A loopback port nobody listens on: bound, then released.
pub(crate) fn unused_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// One `Renewed` event, as the renewal tests check it.
#[derive(Debug)]
pub(crate) struct SeenRenewal {
    pub(crate) round_trip: Duration,
    pub(crate) granted: Duration,
    #[allow(dead_code, reason = "only etcd's renewals report it")]
    pub(crate) remaining_before: Option<Duration>,
}

/// The `Renewed` events in `log`, after checking that each of `keys` got at least `at_least`.
pub(crate) fn renewals_of(log: &EventLog, keys: &[&str], at_least: usize) -> Vec<SeenRenewal> {
    let renewals: Vec<(std::sync::Arc<str>, SeenRenewal)> = log
        .snapshot()
        .into_iter()
        .filter_map(|e| match e {
            LockEvent::Renewed {
                key,
                sent_at,
                done_at,
                granted_ttl,
                remaining_ttl_before,
                ..
            } => Some((
                key,
                SeenRenewal {
                    round_trip: done_at - sent_at,
                    granted: granted_ttl,
                    remaining_before: remaining_ttl_before,
                },
            )),
            _ => None,
        })
        .collect();
    for key in keys {
        let count = renewals.iter().filter(|r| &*r.0 == *key).count();
        assert!(count >= at_least, "{count} renewals of {key}: {renewals:?}");
    }
    renewals.into_iter().map(|(_, renewal)| renewal).collect()
}

/// The conformance cases run against a replicated cluster as well as a single server.
pub(crate) async fn cluster_smoke(t: &dyn Target) {
    conformance::mutual_exclusion(t).await;
    conformance::tokens_strictly_increase(t).await;
    conformance::release_then_reacquire(t).await;
}

/// Kills the member of `group` that is leader right now.
pub(crate) fn kill_leader<M: GroupMember>(group: &ServerGroup<M>) {
    let leader = group.leader().expect("a leader");
    group.kill(leader).unwrap();
}

/// Runs `kill_leader` 1.5 s into four or so `clients` contending on one key: never two holders at
/// once, more than 10 sections on each side of the kill, and the lock taken again within 5 s.
pub(crate) async fn leader_loss_keeps_mutual_exclusion(
    server: &str,
    clients: Vec<Arc<dyn Locker>>,
    kill_leader: impl FnOnce() + Send + 'static,
) {
    let report = contention::contend_through_fault(
        clients,
        "leader-loss",
        Duration::from_millis(1500),
        kill_leader,
        Duration::from_secs(6),
    )
    .await;
    eprintln!("{server} leader loss: {report}");
    assert_eq!(report.overlaps, 0, "{report:?}");
    assert!(
        report.sections_before > 10 && report.sections_after > 10,
        "{report:?}"
    );
    let recovery = report.recovery.expect("acquired again after the kill");
    assert!(recovery < Duration::from_secs(5), "{report:?}");
}
