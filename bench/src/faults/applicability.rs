//! Which fault applies to which strategy: a server fault applies where the strategy's server kind
//! offers what it needs (its entry's [`ServerFaults`](crate::kinds::ServerFaults): the set-ups it
//! starts per case, Redis's commands, ending a session), and the refusal says why not (what each
//! fault needs from the run is pure data, in [`crate::workload::faults`]).
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

use crate::kinds::ServerKindExt;
use crate::strategies::Strategy;
use crate::workload::Workload;
use crate::workload::faults::FaultKind;

/// Whether `workload` (a scenario) applies to `strategy` (which declares `caps`): the strategy runs
/// on a server kind the scenario is about ([`on_its_servers`]) and every fault applies to it
/// ([`applies_all`]).
pub(crate) fn applies_to(
    workload: &Workload,
    strategy: &Strategy,
    caps: &Capabilities,
) -> Result<(), String> {
    on_its_servers(workload, strategy)?;
    applies_all(workload.faults.iter().map(|f| f.kind), strategy, caps)
}

/// Whether `strategy` runs on a server kind `workload` is about; the error says which kinds those
/// are: "redis-failover does not apply to postgres-lease: the scenario is about redis servers, and
/// postgres-lease runs on postgres".
pub(crate) fn on_its_servers(workload: &Workload, strategy: &Strategy) -> Result<(), String> {
    if workload.servers.is_empty() || workload.servers.contains(&strategy.server) {
        return Ok(());
    }
    let names: Vec<&str> = workload.servers.iter().map(|k| k.name()).collect();
    Err(format!(
        "{} does not apply to {}: the scenario is about {} servers, and {} runs on {}",
        workload.name,
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

/// Why `kind` does not apply to `strategy`.
fn why_not(kind: FaultKind, strategy: &Strategy, caps: &Capabilities) -> Result<(), String> {
    let server = strategy.server;
    // Starvation blocks the worker's async runtime threads; a peer's library renews on its own
    // threads in the adapter process, which that does not reach: the adapter must block them itself
    // (`starve`, declared in its catalog entry). A CPU hog does reach them: its threads run in the
    // worker, beside the adapter in the same process group and cgroup, and compete with the library's
    // threads for the CPU as they would with a native row's runtime.
    if kind == FaultKind::StarveWorker
        && let Some(peer) = strategy.peer_spec()
        && !peer.starve_library
    {
        return Err("its library renews on its own threads in the adapter's own process, which the worker's runtime starvation does not reach, and its adapter cannot block them (no `starve` in adapters/PROTOCOL.md; process-pause stops them all)".to_owned());
    }
    let takes = server.faults();
    let own = takes.own;
    let ok = match kind {
        FaultKind::PauseWorker
        | FaultKind::CrashWorker
        | FaultKind::StarveWorker
        | FaultKind::CpuHog
        | FaultKind::CgroupQuota => !server.entry().in_driver_process,
        FaultKind::ProxyDelay | FaultKind::ProxyBlackhole | FaultKind::ProxyReset => {
            server.is_external()
        }
        FaultKind::PauseServer => server.is_external(),
        FaultKind::ClientPause | FaultKind::BusyScript => takes.redis_commands,
        FaultKind::Failover => own.pair.is_some(),
        FaultKind::SentinelFailover => {
            own.sentinels.is_some() && !crate::strategies::is_peer(strategy.id)
        }
        FaultKind::ClusterMasterKill | FaultKind::ClusterFailover => {
            own.sharded.is_some() && crate::strategies::runs_on_redis_cluster(strategy.id)
        }
        FaultKind::PubsubKill => takes.redis_commands && caps.wait_notify,
        FaultKind::LeaderKill => own.cluster.is_some(),
        FaultKind::NodeKill | FaultKind::NodeRestart | FaultKind::ClockJump => own.nodes.is_some(),
        FaultKind::ServerRestart => own.restartable.is_some(),
        FaultKind::TerminateSession => takes.end_sessions.is_some(),
        FaultKind::KeepalivePartition => own.namespaced.is_some(),
    };
    if ok {
        return Ok(());
    }
    let why = match kind {
        FaultKind::SentinelFailover if own.sentinels.is_some() => {
            "its library is given one server's address, not the Sentinels'"
        }
        FaultKind::ClusterMasterKill | FaultKind::ClusterFailover if own.sharded.is_some() => {
            return Err(format!(
                "it does not run on a Redis Cluster ({})",
                crate::strategies::NOT_ON_REDIS_CLUSTER
            ));
        }
        FaultKind::PubsubKill if takes.redis_commands => {
            "it uses no pub/sub connection (its waiters poll)"
        }
        FaultKind::Failover => {
            "it does not run on a primary with a replica (Redis, PostgreSQL or MySQL)"
        }
        FaultKind::ClientPause
        | FaultKind::BusyScript
        | FaultKind::SentinelFailover
        | FaultKind::ClusterMasterKill
        | FaultKind::ClusterFailover
        | FaultKind::PubsubKill => "it does not run on a single Redis primary",
        FaultKind::LeaderKill => "it has no etcd or ZooKeeper cluster",
        FaultKind::NodeKill | FaultKind::NodeRestart | FaultKind::ClockJump => {
            "it does not run on independent Redis nodes (Redlock's masters)"
        }
        FaultKind::ServerRestart => "it does not run on one Redis server",
        FaultKind::TerminateSession => "it holds no PostgreSQL or MySQL session",
        FaultKind::KeepalivePartition => {
            "it does not run on PostgreSQL or MySQL (lockbench starts no other server in a network namespace)"
        }
        FaultKind::PauseWorker
        | FaultKind::CrashWorker
        | FaultKind::StarveWorker
        | FaultKind::CpuHog
        | FaultKind::CgroupQuota => {
            "its lock server lives in the driver process, so its clients cannot run as worker processes"
        }
        FaultKind::PauseServer
        | FaultKind::ProxyDelay
        | FaultKind::ProxyBlackhole
        | FaultKind::ProxyReset => "it has no server to fault",
    };
    Err(why.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
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
        assert!(check(FaultKind::PauseWorker, "redis-watchdog").is_ok());
        assert!(
            check(FaultKind::PauseWorker, "memory")
                .expect_err("memory")
                .contains("driver process")
        );
        assert!(check(FaultKind::PubsubKill, "redis-keyspace-shadow").is_ok());
        assert!(
            check(FaultKind::PubsubKill, "redis-guard-thread")
                .expect_err("polls")
                .contains("no pub/sub")
        );
        assert!(check(FaultKind::Failover, "etcd-lease").is_err());
        assert!(check(FaultKind::Failover, "postgres-lease").is_ok());
        assert!(check(FaultKind::SentinelFailover, "redisson").is_ok());
        assert!(check(FaultKind::SentinelFailover, "py-redis-lock").is_err());
        assert!(check(FaultKind::SentinelFailover, "redlock").is_err());
        assert!(check(FaultKind::ClusterMasterKill, "redisson").is_ok());
        assert!(check(FaultKind::ClusterFailover, "redis-guard-thread").is_ok());
        assert!(check(FaultKind::ClusterMasterKill, "redis-keyspace-shadow").is_ok());
        assert!(check(FaultKind::ClusterMasterKill, "py-redis-lock").is_err());
        assert!(check(FaultKind::LeaderKill, "zookeeper").is_ok());
        assert!(check(FaultKind::LeaderKill, "redis-watchdog").is_err());
        assert!(check(FaultKind::NodeRestart, "redlock").is_ok());
        assert!(check(FaultKind::ClockJump, "redlock").is_ok());
        assert!(check(FaultKind::ServerRestart, "redlock").is_err());
        assert!(check(FaultKind::ServerRestart, "redis-watchdog").is_ok());
        assert!(check(FaultKind::TerminateSession, "postgres-advisory").is_ok());
        assert!(check(FaultKind::TerminateSession, "redis-watchdog").is_err());
        assert!(check(FaultKind::KeepalivePartition, "postgres-lease").is_ok());
        assert!(check(FaultKind::KeepalivePartition, "redis-watchdog").is_err());
        assert!(check(FaultKind::Failover, "mysql-lease").is_ok());
        assert!(check(FaultKind::TerminateSession, "mysql-get-lock").is_ok());
        assert!(check(FaultKind::KeepalivePartition, "mysql-get-lock").is_ok());
        assert!(
            check(FaultKind::KeepalivePartition, "etcd-lease")
                .expect_err("no namespaced etcd")
                .contains("network namespace")
        );
        // A peer's library lives in its adapter process: signals, cgroups and the hog threads beside
        // it reach it through the worker's process group; the worker runtime's starvation does not.
        assert!(check(FaultKind::PauseWorker, "py-redis-lock").is_ok());
        assert!(check(FaultKind::CgroupQuota, "py-kazoo").is_ok());
        assert!(check(FaultKind::CpuHog, "jvm-redisson").is_ok());
        let why = check(FaultKind::StarveWorker, "py-redis-lock").expect_err("peer");
        assert!(why.contains("adapter's own process"), "{why}");
        // Unless the adapter blocks its library's threads itself (Redisson's event loops and timer).
        for id in ["jvm-redisson", "jvm-redisson-4", "jvm-redisson-3.43"] {
            assert!(check(FaultKind::StarveWorker, id).is_ok(), "{id}");
        }
        for id in ["redis-watchdog", "etcd-lease", "zookeeper", "memory"] {
            for kind in [
                FaultKind::NodeKill,
                FaultKind::NodeRestart,
                FaultKind::ClockJump,
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
        let why = applies_all([FaultKind::CpuHog, FaultKind::CgroupQuota], memory, &caps)
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
                FaultKind::StarveWorker,
                FaultKind::CgroupQuota,
                FaultKind::StarveWorker,
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
    /// A preset, resolved.
    fn preset(name: &str) -> Workload {
        let loaded = crate::scenarios::load(name).expect("preset");
        Workload::resolve(&loaded.name, &loaded.source, loaded.file).expect("resolves")
    }

    #[test]
    fn a_failover_scenario_applies_to_the_server_kind_it_is_about() {
        let settings = StrategySettings::new(std::time::Duration::from_secs(1));
        let applies = |scenario: &Workload, id: &str| {
            let s = find(id).expect("registered");
            applies_to(scenario, s, &s.capabilities(&settings).expect("caps"))
        };
        // One fault serves both kinds; each scenario takes only the kind its theory is about.
        let (redis, postgres) = (preset("redis-failover"), preset("postgres-failover"));
        assert!(check(FaultKind::Failover, "postgres-lease").is_ok());
        for id in ["redis-watchdog", "redisson", "jvm-spring-redis"] {
            assert_eq!(applies(&redis, id), Ok(()), "{id}");
            let why = applies(&postgres, id).expect_err(id);
            assert_eq!(
                why,
                format!(
                    "postgres-failover does not apply to {id}: the scenario is about postgres \
                     servers, and {id} runs on redis"
                )
            );
        }
        for id in ["postgres-advisory", "postgres-lease", "jvm-spring-jdbc"] {
            assert_eq!(applies(&postgres, id), Ok(()), "{id}");
            let why = applies(&redis, id).expect_err(id);
            assert!(why.contains("about redis and valkey servers"), "{why}");
        }
        // A kind the scenario is about still meets its faults' own rules.
        let why = applies(&redis, "redlock").expect_err("redlock");
        assert!(why.contains("runs on redis-nodes"), "{why}");
    }
}
