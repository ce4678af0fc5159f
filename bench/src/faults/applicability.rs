//! Which fault applies to which strategy: a server fault applies where the strategy's server kind
//! offers the ability it needs (a [`ServerFault`](crate::kinds::ServerFault) of its entry: the
//! set-ups it starts per case, Redis's commands, ending a session), and the refusal, worded by the
//! ability, says why not; a few faults also need something of the strategy (a library their fault
//! reaches). What each fault needs its family's profile says ([`super::families`]): no table here.
//!
//! | fault | applies to | needs |
//! |---|---|---|
//! | `pause_worker`, `crash_worker`, `cgroup_quota` | every strategy with a lock server (not `memory`, whose server lives in the driver); for peers they act on the worker's whole process group, adapter included | `workers = "processes"` |
//! | `starve_worker` | the same; peers only if their adapter blocks its library's threads too (`starve`: the Redisson rows), since the library runs in the adapter's process, out of the worker runtime's reach | `workers = "processes"` |
//! | `cpu_hog` | the same as `pause_worker` | `workers = "processes"` |
//! | `proxy_delay`, `proxy_blackhole`, `proxy_reset` | every strategy with a real server | a TCP proxy per client and server address |
//! | `pause_server` | every strategy with a real server | a server lockbench started (its pid) |
//! | `client_pause` | Redis strategies | |
//! | `pubsub_kill` | Redis strategies that use pub/sub (waiters woken by the server, keyspace events) | |
//! | `failover` | Redis, PostgreSQL and MySQL strategies | a primary + replica started per case, clients behind proxies |
//! | `sentinel_failover` | Redis strategies but peers | a primary + replica + 3 Sentinels started per case |
//! | `cluster_master_kill`, `cluster_failover` | Redis strategies that run on a cluster (not peers) | 3 masters + 3 replicas started per case |
//! | `leader_kill` | etcd and ZooKeeper strategies | a 3-member cluster / ensemble started per case |
//! | `node_kill`, `node_restart`, `clock_jump` | strategies on independent Redis nodes (`redlock`) | 5 nodes started per case (one under libfaketime for `clock_jump`) |
//! | `server_restart` | single-Redis strategies | a restartable Redis started per case |
//! | `terminate_session` | PostgreSQL and MySQL strategies | the run's server, reachable as its administrator (lockbench's own) |
//! | `keepalive_partition` | PostgreSQL and MySQL strategies | a PostgreSQL or MariaDB in a network namespace started per case (root, iproute2, nftables), clients behind proxies |
//!
//! A scenario may also name the server kinds it is about (`servers = ["redis"]`): a fault that serves
//! several kinds (`failover`) then applies only to the kind whose theory the scenario states
//! ([`applies_to`]).

use lockers::Capabilities;

use super::families::FaultSpec;
use super::kind::{FaultKind, Needs};
use crate::kinds::{ServerKind, ServerKindExt};
use crate::strategies::Strategy;

/// What a scenario says of itself that decides where it applies (a workload).
pub(crate) trait Scenario {
    /// Its name.
    fn scenario_name(&self) -> &str;
    /// The server kinds it is about (none: every kind its faults apply to).
    fn about_servers(&self) -> &[ServerKind];
    /// Its faults.
    fn fault_specs(&self) -> &[FaultSpec];
}

/// Whether `workload` (a scenario) applies to `strategy` (which declares `caps`): the strategy runs
/// on a server kind the scenario is about ([`on_its_servers`]) and every fault applies to it
/// ([`applies_all`]).
pub(crate) fn applies_to(
    workload: &impl Scenario,
    strategy: &Strategy,
    caps: &Capabilities,
) -> Result<(), String> {
    on_its_servers(workload, strategy)?;
    applies_all(
        workload.fault_specs().iter().map(|f| f.kind),
        strategy,
        caps,
    )
}

/// Whether `strategy` runs on a server kind `workload` is about; the error says which kinds those
/// are: "redis-failover does not apply to postgres-lease: the scenario is about redis servers, and
/// postgres-lease runs on postgres".
pub(crate) fn on_its_servers(workload: &impl Scenario, strategy: &Strategy) -> Result<(), String> {
    let servers = workload.about_servers();
    if servers.is_empty() || servers.contains(&strategy.server) {
        return Ok(());
    }
    let names: Vec<&str> = servers.iter().map(|k| k.name()).collect();
    Err(format!(
        "{} does not apply to {}: the scenario is about {} servers, and {} runs on {}",
        workload.scenario_name(),
        strategy.id,
        names.join(" and "),
        strategy.id,
        strategy.server.name()
    ))
}

/// Whether every fault of `kinds` (a scenario's) applies to `strategy` (which declares `caps`); the
/// error names each fault that does not, with why, one line: "cpu_hog and cgroup_quota do not apply to
/// memory: …".
pub(crate) fn applies_all(
    kinds: impl IntoIterator<Item = FaultKind>,
    strategy: &Strategy,
    caps: &Capabilities,
) -> Result<(), String> {
    // Faults that do not apply, grouped by reason, in the scenario's order.
    let mut refused: Vec<(String, Vec<FaultKind>)> = Vec::new();
    for kind in kinds {
        let Err(why) = why_not(kind, strategy, caps) else {
            continue;
        };
        match refused.iter_mut().find(|(w, _)| *w == why) {
            Some((_, group)) if group.contains(&kind) => {}
            Some((_, group)) => group.push(kind),
            None => refused.push((why, vec![kind])),
        }
    }
    if refused.is_empty() {
        return Ok(());
    }
    let lines: Vec<String> = refused
        .iter()
        .map(|(why, group)| {
            let names: Vec<String> = group.iter().map(ToString::to_string).collect();
            let verb = if group.len() == 1 { "does" } else { "do" };
            format!(
                "{} {verb} not apply to {}: {why}",
                names.join(" and "),
                strategy.id
            )
        })
        .collect();
    Err(lines.join("; "))
}

/// Why `kind` does not apply to `strategy`: what the fault needs of the strategy's kind (a worker
/// process out of the driver's, a real server, or an ability the kind offers, whose refusal the
/// kind's [`ServerFaults::offer`](crate::kinds::ServerFaults::offer) words), then what it needs of
/// the strategy itself (its family's [`Profile::of_the_strategy`](super::spec::Profile)).
fn why_not(kind: FaultKind, strategy: &Strategy, caps: &Capabilities) -> Result<(), String> {
    let server = strategy.server;
    let profile = kind.profile();
    match profile.needs {
        Needs::WorkerProcesses if server.entry().in_driver_process => Err(
            "its lock server lives in the driver process, so its clients cannot run as worker processes"
                .to_owned(),
        ),
        Needs::Server if !server.is_external() => Err("it has no server to fault".to_owned()),
        Needs::Offered(ability) => server.faults().offer(ability),
        Needs::WorkerProcesses | Needs::Server => Ok(()),
    }?;
    (profile.of_the_strategy)(strategy, caps)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::faults::kind::{Failover, NetworkFault, NodeFault, RedisCommand, WorkerFault};
    use crate::strategies::{STRATEGIES, StrategySettings, find};

    fn check(kind: FaultKind, id: &str) -> Result<(), String> {
        let s = find(id).expect("registered");
        let caps = s
            .capabilities(&StrategySettings::new(std::time::Duration::from_secs(1)))
            .expect("caps");
        applies_all([kind], s, &caps)
    }

    #[test]
    fn applicability_follows_the_table() {
        assert!(check(FaultKind::Worker(WorkerFault::Pause), "redis-watchdog").is_ok());
        assert!(
            check(FaultKind::Worker(WorkerFault::Pause), "memory")
                .expect_err("memory")
                .contains("driver process")
        );
        assert!(
            check(
                FaultKind::RedisCommand(RedisCommand::PubsubKill),
                "redis-keyspace-shadow"
            )
            .is_ok()
        );
        assert!(
            check(
                FaultKind::RedisCommand(RedisCommand::PubsubKill),
                "redis-guard-thread"
            )
            .expect_err("polls")
            .contains("no pub/sub")
        );
        assert!(check(FaultKind::Failover(Failover::Replica), "etcd-lease").is_err());
        assert!(check(FaultKind::Failover(Failover::Replica), "postgres-lease").is_ok());
        assert!(check(FaultKind::Failover(Failover::Sentinel), "redisson").is_ok());
        assert!(check(FaultKind::Failover(Failover::Sentinel), "py-redis-lock").is_err());
        assert!(check(FaultKind::Failover(Failover::Sentinel), "redlock").is_err());
        assert!(check(FaultKind::Failover(Failover::ClusterMasterKill), "redisson").is_ok());
        assert!(
            check(
                FaultKind::Failover(Failover::ClusterCommand),
                "redis-guard-thread"
            )
            .is_ok()
        );
        assert!(
            check(
                FaultKind::Failover(Failover::ClusterMasterKill),
                "redis-keyspace-shadow"
            )
            .is_ok()
        );
        assert!(
            check(
                FaultKind::Failover(Failover::ClusterMasterKill),
                "py-redis-lock"
            )
            .is_err()
        );
        assert!(check(FaultKind::LeaderKill, "zookeeper").is_ok());
        assert!(check(FaultKind::LeaderKill, "redis-watchdog").is_err());
        assert!(check(FaultKind::Node(NodeFault::Restart), "redlock").is_ok());
        assert!(check(FaultKind::Node(NodeFault::ClockJump), "redlock").is_ok());
        assert!(check(FaultKind::Node(NodeFault::ServerRestart), "redlock").is_err());
        assert!(check(FaultKind::Node(NodeFault::ServerRestart), "redis-watchdog").is_ok());
        assert!(check(FaultKind::TerminateSession, "postgres-advisory").is_ok());
        assert!(check(FaultKind::TerminateSession, "redis-watchdog").is_err());
        assert!(
            check(
                FaultKind::Network(NetworkFault::KeepalivePartition),
                "postgres-lease"
            )
            .is_ok()
        );
        assert!(
            check(
                FaultKind::Network(NetworkFault::KeepalivePartition),
                "redis-watchdog"
            )
            .is_err()
        );
        assert!(check(FaultKind::Failover(Failover::Replica), "mysql-lease").is_ok());
        assert!(check(FaultKind::TerminateSession, "mysql-get-lock").is_ok());
        assert!(
            check(
                FaultKind::Network(NetworkFault::KeepalivePartition),
                "mysql-get-lock"
            )
            .is_ok()
        );
        assert!(
            check(
                FaultKind::Network(NetworkFault::KeepalivePartition),
                "etcd-lease"
            )
            .expect_err("no namespaced etcd")
            .contains("network namespace")
        );
        // A peer's library lives in its adapter process: signals, cgroups and the hog threads beside
        // it reach it through the worker's process group; the worker runtime's starvation does not.
        assert!(check(FaultKind::Worker(WorkerFault::Pause), "py-redis-lock").is_ok());
        assert!(check(FaultKind::Worker(WorkerFault::CgroupQuota), "py-kazoo").is_ok());
        assert!(check(FaultKind::Worker(WorkerFault::CpuHog), "jvm-redisson").is_ok());
        let why = check(FaultKind::Worker(WorkerFault::Starve), "py-redis-lock").expect_err("peer");
        assert!(why.contains("adapter's own process"), "{why}");
        // Unless the adapter blocks its library's threads itself (Redisson's event loops and timer).
        for id in ["jvm-redisson", "jvm-redisson-4", "jvm-redisson-3.43"] {
            assert!(
                check(FaultKind::Worker(WorkerFault::Starve), id).is_ok(),
                "{id}"
            );
        }
        for id in ["redis-watchdog", "etcd-lease", "zookeeper", "memory"] {
            for kind in [
                FaultKind::Node(NodeFault::Kill),
                FaultKind::Node(NodeFault::Restart),
                FaultKind::Node(NodeFault::ClockJump),
            ] {
                let why = check(kind, id).expect_err(id);
                assert!(why.contains("independent Redis nodes"), "{why}");
            }
        }
        // A scenario's skip names each of its faults that does not apply, not only the first.
        let memory = find("memory").expect("registered");
        let caps = memory
            .capabilities(&StrategySettings::new(std::time::Duration::from_secs(1)))
            .expect("caps");
        let why = applies_all(
            [
                FaultKind::Worker(WorkerFault::CpuHog),
                FaultKind::Worker(WorkerFault::CgroupQuota),
            ],
            memory,
            &caps,
        )
        .expect_err("memory");
        assert!(
            why.starts_with("cpu_hog and cgroup_quota do not apply to memory: "),
            "{why}"
        );
        let kazoo = find("py-kazoo").expect("registered");
        let caps = kazoo
            .capabilities(&StrategySettings::new(std::time::Duration::from_secs(1)))
            .expect("caps");
        let why = applies_all(
            [
                FaultKind::Worker(WorkerFault::Starve),
                FaultKind::Worker(WorkerFault::CgroupQuota),
                FaultKind::Worker(WorkerFault::Starve),
            ],
            kazoo,
            &caps,
        )
        .expect_err("peer");
        assert!(
            why.starts_with("starve_worker does not apply to py-kazoo: "),
            "{why}"
        );
        // Every kind applies to at least one registered strategy.
        for kind in FaultKind::ALL {
            assert!(
                STRATEGIES.iter().any(|s| check(kind, s.id).is_ok()),
                "{kind}"
            );
        }
    }
}
