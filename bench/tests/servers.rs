//! The run's servers on real processes: lockbench starts what strategies need (and reads each server's
//! cost counters), or checks and uses a server the user names.

#![allow(clippy::unwrap_used)]

mod support;

use std::collections::BTreeSet;
use std::time::Duration;

use lockbench::backends::{Backends, GivenAddresses, ServerKind, stats};
use lockbench_servers::{RedisOptions, RedisSentinels, RedisServer, probe};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn started_servers_report_versions_and_cost_counters() {
    let needed = BTreeSet::from([ServerKind::Redis, ServerKind::Etcd, ServerKind::ZooKeeper]);
    let backends = Backends::prepare(&needed, &GivenAddresses::default())
        .await
        .unwrap();
    let infos = backends.infos();
    assert_eq!(infos.len(), 3);
    for info in &infos {
        assert!(info.managed, "{info:?}");
        assert!(
            info.version.as_deref().is_some_and(|v| v.contains('.')),
            "{info:?}"
        );
        assert!(info.startup_ms.unwrap() > 0.0);
    }
    let endpoints = backends.endpoints();
    assert!(
        endpoints
            .redis
            .as_deref()
            .unwrap()
            .starts_with("redis://127.0.0.1:")
    );
    assert!(endpoints.etcd[0].starts_with("http://127.0.0.1:"));
    assert!(
        endpoints
            .zookeeper
            .as_deref()
            .unwrap()
            .starts_with("127.0.0.1:")
    );

    let redis = backends.get(ServerKind::Redis).unwrap();
    let source = redis.stats_source().unwrap();
    let before = source.snapshot_async().await.unwrap();
    for i in 0..7 {
        let value = i.to_string();
        probe::resp_command(
            redis.socket().unwrap(),
            &["SET", "k", &value],
            Duration::from_secs(2),
        )
        .unwrap();
    }
    let after = source.snapshot_async().await.unwrap();
    let cost = stats::delta(ServerKind::Redis, &before, &after, 1.0);
    assert_eq!(cost.by_command.get("set"), Some(&7), "{cost:?}");
    assert!(
        !cost.by_command.contains_key("info"),
        "the snapshots' own INFO calls are left out"
    );
    assert!(cost.cpu_seconds.is_some());

    for kind in [ServerKind::Etcd, ServerKind::ZooKeeper] {
        let source = backends.get(kind).unwrap().stats_source().unwrap();
        let snapshot = source.snapshot_async().await.unwrap();
        assert!(
            snapshot.cpu_seconds.unwrap() > 0.0,
            "{kind:?}: {snapshot:?}"
        );
        assert!(!snapshot.requests.is_empty(), "{kind:?}: {snapshot:?}");
    }
}

#[test]
fn a_given_server_is_used_and_recorded() {
    let redis = RedisServer::start().unwrap();
    let dir = tempfile::tempdir().unwrap();
    support::run_ok(&[
        "run",
        "--strategies",
        "memory",
        "--duration",
        "300ms",
        "--warmup",
        "0s",
        "--redis",
        &redis.url(),
        "--out",
        dir.path().to_str().unwrap(),
    ]);
    let results = support::read_results(dir.path());
    let servers = &results.environment.servers;
    assert_eq!(servers.len(), 1);
    assert_eq!(servers[0].kind, "redis");
    assert!(!servers[0].managed);
    assert_eq!(servers[0].version.as_deref(), Some(redis.version()));
    assert!(redis.is_running(), "a given server is left alone");
}

/// `--redis redis+sentinel://…` runs the Redis strategies on the primary the Sentinels name; the
/// server cost is read there, and the address is recorded as given.
#[test]
fn a_sentinel_address_runs_on_the_primary_it_names() {
    let group = RedisSentinels::start().unwrap();
    let dir = tempfile::tempdir().unwrap();
    support::run_ok(&[
        "run",
        "--strategies",
        "redis-watchdog,redisson",
        "--duration",
        "500ms",
        "--warmup",
        "0s",
        "--redis",
        &group.url(),
        "--out",
        dir.path().to_str().unwrap(),
    ]);
    let results = support::read_results(dir.path());
    let servers = &results.environment.servers;
    assert_eq!(servers[0].address, group.url());
    assert_eq!(
        servers[0].version.as_deref(),
        Some(group.pair().primary().version())
    );
    for case in &results.cases {
        assert!(case.operations.acquired > 0, "{}: {case:?}", case.strategy);
        let cost = case.server_cost.as_ref().unwrap();
        assert!(cost.requests > 0, "{}: {cost:?}", case.strategy);
    }
    // Nothing was sent to the replica but replication.
    let replica = group
        .pair()
        .replica()
        .command(&["INFO", "commandstats"])
        .unwrap();
    assert!(!replica.contains("cmdstat_evalsha"), "{replica}");
}

/// Behind Sentinels that ask for the password too (their own `requirepass`), with the password from
/// `LOCKBENCH_REDIS_PASSWORD`: the run works, and the password reaches neither the results nor the
/// output.
#[test]
fn a_password_protected_sentinel_setup_takes_the_password_from_the_environment() {
    const PASSWORD: &str = "sentinel-env-secret-58";
    let group = RedisSentinels::start_with(RedisOptions::with_acl_user("app", PASSWORD)).unwrap();
    let address = group.url().replace(&format!(":{PASSWORD}@"), "@");
    assert!(address.starts_with("redis+sentinel://app@"), "{address}");
    let dir = tempfile::tempdir().unwrap();
    let out = support::lockbench()
        .args([
            "run",
            "--strategies",
            "redis-watchdog",
            "--duration",
            "300ms",
        ])
        .args([
            "--warmup",
            "0s",
            "--no-progress",
            "--redis",
            &address,
            "--out",
        ])
        .arg(dir.path())
        .env("LOCKBENCH_REDIS_PASSWORD", PASSWORD)
        .output()
        .unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "{stderr}");
    let results = support::read_results(dir.path());
    assert!(results.cases[0].operations.acquired > 0);
    let written = std::fs::read_to_string(dir.path().join("results.json")).unwrap();
    for (what, text) in [
        ("results", &*written),
        ("stdout", &stdout),
        ("stderr", &stderr),
    ] {
        assert!(!text.contains(PASSWORD), "the password reached the {what}");
    }
}
