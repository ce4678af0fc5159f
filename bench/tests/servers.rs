//! The run's servers on real processes: lockbench starts what strategies need (and reads each server's
//! cost counters), or checks and uses a server the user names.

#![allow(clippy::unwrap_used)]

mod support;

use std::collections::BTreeSet;
use std::time::Duration;

use lockbench::backends::{Backends, GivenAddresses, ServerKind, stats};
use lockbench::strategies::check_address;
use lockbench_servers::{RedisCluster, RedisOptions, RedisSentinels, RedisServer, probe};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn started_servers_report_versions_and_cost_counters() {
    let needed = BTreeSet::from([ServerKind::Redis, ServerKind::Etcd, ServerKind::ZooKeeper]);
    let backends = Backends::prepare(&needed, &GivenAddresses::default(), check_address)
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

    // A Redis given as a Valkey, and a Valkey-only row with only a Redis given: one line each, exit 2.
    let url = redis.url();
    for (args, needle) in [
        (
            ["--strategies", "redis-watchdog~valkey", "--valkey", &url],
            "not a Valkey server",
        ),
        (
            ["--strategies", "valkey-ifeq", "--redis", &url],
            "valkey-ifeq runs on Valkey only",
        ),
    ] {
        let out = dir.path().join("refused");
        let run = support::run(&[&["run"], &args[..], &["--out", out.to_str().unwrap()]].concat());
        let stderr = String::from_utf8_lossy(&run.stderr);
        assert_eq!(run.status.code(), Some(2), "{args:?}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(stderr.contains(needle), "{stderr}");
    }
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

/// `--redis redis+cluster://…` runs the Redis strategies on a cluster whose nodes take an ACL user,
/// with the password from `LOCKBENCH_REDIS_PASSWORD`: each case's server cost is its masters' summed
/// (`INFO commandstats`), the Redisson rows run in cluster mode (`WAIT` for each master's replica),
/// nothing but replication reaches the replicas, the keyspace rows run with a subscription per master
/// (which they configure to publish keyevents), and the password reaches neither the results nor the
/// output.
#[test]
fn a_cluster_address_runs_on_its_masters() {
    const PASSWORD: &str = "cluster-env-secret-91";
    let cluster = RedisCluster::start_with(RedisOptions::with_acl_user("app", PASSWORD)).unwrap();
    let address = cluster.url().replace(&format!(":{PASSWORD}@"), "@");
    assert!(address.starts_with("redis+cluster://app@"), "{address}");
    let masters = || &cluster.nodes()[..3];
    let evalsha = |node: &lockbench_servers::RedisNode| {
        let info = node.command(&["INFO", "commandstats"]).unwrap();
        lockbench_servers::redis::commandstats(&info)
            .get("evalsha")
            .map_or(0, |s| s.calls)
    };
    let results = run_with_password_from_env(
        &[
            "--strategies",
            "redis-watchdog,redis-guard-thread,redisson,redis-keyspace-shadow",
            "--keys",
            "8",
            "--duration",
            "500ms",
        ],
        &address,
        PASSWORD,
    );
    assert_eq!(
        results.environment.servers[0].address,
        address.replace("app@", "***@")
    );
    let mut scripts = 0;
    assert_eq!(results.cases.len(), 4);
    for case in &results.cases {
        assert!(case.operations.acquired > 0, "{}: {case:?}", case.strategy);
        assert_eq!(
            case.safety.verdict,
            lockbench_reports::model::Verdict::Safe,
            "{}",
            case.strategy
        );
        let cost = case.server_cost.as_ref().unwrap();
        scripts += cost.by_command.get("evalsha").copied().unwrap_or(0);
        if case.strategy == "redisson" {
            assert!(
                cost.by_command.get("wait").copied().unwrap_or(0) > 0,
                "{cost:?}"
            );
        }
    }
    // The cases' costs are every master's script calls (8 keys spread over the masters).
    let used = masters().iter().filter(|m| evalsha(m) > 0).count();
    assert!(used > 1, "the keys landed on one master only");
    assert_eq!(scripts, masters().iter().map(evalsha).sum::<u64>());
    for replica in &cluster.nodes()[3..] {
        assert_eq!(evalsha(replica), 0, "a replica ran scripts");
    }
    for master in masters() {
        let flags = master
            .command(&["CONFIG", "GET", "notify-keyspace-events"])
            .unwrap();
        assert!(flags.contains('E') && flags.contains('x'), "{flags}");
    }
}

/// `--redis rediss+cluster://…?ca=…` and `rediss+sentinel://…?ca=…`: servers that speak TLS everywhere,
/// with an ACL user whose password comes from the environment: the strategies run on them, the
/// version is read through their own client, and a wrong password is one usage line (exit code 2)
/// without the password.
#[test]
fn tls_cluster_and_sentinel_addresses_run_and_a_wrong_password_is_one_usage_line() {
    const PASSWORD: &str = "tls-env-secret-64";
    let certificates = lockbench_servers::TestCertificates::generate().unwrap();
    let options = || {
        let tls = lockbench_servers::certs::TlsFiles::of(&certificates);
        RedisOptions::with_acl_user_and_tls("app", PASSWORD, tls)
    };
    let cluster = RedisCluster::start_with(options()).unwrap();
    let group = RedisSentinels::start_with(options()).unwrap();
    let setups = [
        (
            cluster.url(),
            cluster.nodes()[0].command(&["INFO", "server"]),
        ),
        (
            group.url(),
            group.pair().primary().command(&["INFO", "server"]),
        ),
    ];
    for (url, info) in setups {
        let address = url.replace(&format!(":{PASSWORD}@"), "@");
        assert!(
            address.contains("+") && address.starts_with("rediss"),
            "{address}"
        );
        let results = run_with_password_from_env(
            &[
                "--strategies",
                "redis-watchdog,redisson",
                "--keys",
                "4",
                "--duration",
                "300ms",
            ],
            &address,
            PASSWORD,
        );
        assert_eq!(
            results.environment.servers[0].version.as_deref(),
            lockbench_servers::redis::info_field(&info.unwrap(), "redis_version")
        );
        for case in &results.cases {
            assert!(case.operations.acquired > 0, "{address}: {case:?}");
        }
        let out = support::lockbench()
            .args([
                "run",
                "--strategies",
                "redis-watchdog",
                "--duration",
                "300ms",
            ])
            .args(["--no-progress", "--redis", &address])
            .env("LOCKBENCH_REDIS_PASSWORD", "not-the-password-7")
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
        assert!(
            !stderr.contains("not-the-password-7") && !stderr.contains(PASSWORD),
            "{stderr}"
        );
    }
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
    let results = run_with_password_from_env(
        &["--strategies", "redis-watchdog", "--duration", "300ms"],
        &address,
        PASSWORD,
    );
    assert!(results.cases[0].operations.acquired > 0);
}

/// `lockbench run` with `args` on the Redis at `address`, the password coming from
/// `LOCKBENCH_REDIS_PASSWORD`: asserts that it succeeded and that the password reached neither the
/// results nor the output, and returns the results.
fn run_with_password_from_env(
    args: &[&str],
    address: &str,
    password: &str,
) -> lockbench_reports::Results {
    let dir = tempfile::tempdir().unwrap();
    let out = support::lockbench()
        .arg("run")
        .args(args)
        .args([
            "--warmup",
            "0s",
            "--no-progress",
            "--redis",
            address,
            "--out",
        ])
        .arg(dir.path())
        .env("LOCKBENCH_REDIS_PASSWORD", password)
        .output()
        .unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(
        out.status.success(),
        "{}: stdout {stdout}; stderr {stderr}",
        out.status
    );
    let written = std::fs::read_to_string(dir.path().join("results.json")).unwrap();
    for (what, text) in [
        ("results", &*written),
        ("stdout", &stdout),
        ("stderr", &stderr),
    ] {
        assert!(!text.contains(password), "the password reached the {what}");
    }
    support::read_results(dir.path())
}
