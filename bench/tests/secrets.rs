//! No secret leaks: `lockbench run` and `lockbench compare` against a Redis with an ACL user over TLS,
//! an etcd over TLS with authentication (both started here, with a certificate authority generated for
//! the test) and a ZooKeeper with digest authentication, each given a distinctive password (on the command line and through the
//! environment); every file they write, stdout and stderr must not contain it. A wrong password is
//! one error line without the password, exit code 2.

#![allow(clippy::unwrap_used)]

mod support;

use std::path::Path;

use lockbench_servers::certs::TlsFiles;
use lockbench_servers::{
    EtcdOptions, EtcdServer, RedisOptions, RedisSecurity, RedisServer, TestCertificates, ZkServer,
};

const PASSWORD: &str = "Leak-canary-5h9Qx2";
const ZK_PASSWORD: &str = "Zk-canary-71Kp";
const ETCD_PASSWORD: &str = "Etcd-canary-40Lm";

fn secured_redis(certificates: &TestCertificates) -> RedisServer {
    RedisServer::start_with(RedisOptions {
        security: Some(RedisSecurity {
            user: "app".into(),
            password: PASSWORD.into(),
            tls: Some(TlsFiles::of(certificates)),
        }),
        ..RedisOptions::default()
    })
    .unwrap()
}

/// Every file under `dir`, read as bytes.
fn files(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(files(&path));
        } else {
            out.push((path.display().to_string(), std::fs::read(&path).unwrap()));
        }
    }
    out
}

fn contains(haystack: &[u8], needle: &str) -> bool {
    haystack
        .windows(needle.len())
        .any(|w| w == needle.as_bytes())
}

/// Asserts no secret is in the output or any file under `dir`, and that `dir` holds what `expected`
/// names (so the check did look at the results and reports).
fn assert_no_secret(out: &std::process::Output, dir: &Path, expected: &[&str]) {
    let written = files(dir);
    for name in expected {
        assert!(
            written.iter().any(|(path, _)| path.ends_with(name)),
            "{name} not written: {:?}",
            written.iter().map(|(p, _)| p).collect::<Vec<_>>()
        );
    }
    let streams = [
        ("stdout".to_owned(), out.stdout.clone()),
        ("stderr".to_owned(), out.stderr.clone()),
    ];
    for (name, bytes) in written.iter().chain(&streams) {
        for secret in [PASSWORD, ZK_PASSWORD, ETCD_PASSWORD] {
            assert!(!contains(bytes, secret), "{name} contains the password");
        }
    }
}

#[test]
fn run_and_compare_leave_no_secret_anywhere() {
    let certificates = TestCertificates::generate().unwrap();
    let redis = secured_redis(&certificates);
    let zk = ZkServer::start().unwrap();
    // The Redis URL carries only the user; the password comes from the environment.
    let url_without_password = redis.url().replace(&format!(":{PASSWORD}@"), "@");
    assert!(!url_without_password.contains(PASSWORD));
    let zk_address = format!("app:{ZK_PASSWORD}@{}", zk.connect_string());
    let etcd = EtcdServer::start_with(EtcdOptions {
        tls: Some(TlsFiles::of(&certificates)),
        root_password: Some(ETCD_PASSWORD.into()),
        ..EtcdOptions::default()
    })
    .unwrap();
    // The user in the address, the password from the environment.
    let etcd_address = format!(
        "{}?ca={}",
        etcd.endpoint().replace("https://", "https://root@"),
        certificates.ca().display()
    );

    let dir = tempfile::tempdir().unwrap();
    let run_dir = dir.path().join("run");
    let out = support::lockbench()
        .env("LOCKBENCH_REDIS_PASSWORD", PASSWORD)
        .env("LOCKBENCH_ETCD_PASSWORD", ETCD_PASSWORD)
        .args([
            "run",
            "--scenario",
            "baseline",
            "--strategies",
            "redis-watchdog,redis-guard-thread,etcd-lease,zookeeper",
            "--duration",
            "1s",
            "--warmup",
            "0s",
            "--clients",
            "4",
            "--keys",
            "2",
            "--no-progress",
            "--redis",
            &url_without_password,
            "--zk",
            &zk_address,
            "--etcd",
            &etcd_address,
            "--out",
            run_dir.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let results = support::read_results(&run_dir);
    assert_eq!(results.cases.len(), 4);
    assert!(
        results.cases.iter().all(|c| c.error.is_none()),
        "{:?}",
        results.cases.iter().map(|c| &c.error).collect::<Vec<_>>()
    );
    assert_no_secret(&out, &run_dir, &["results.json"]);
    let recorded = std::fs::read_to_string(run_dir.join("results.json")).unwrap();
    assert!(
        recorded.contains("rediss://***@127.0.0.1:"),
        "the address is recorded redacted"
    );

    // compare, with the password in the URL this time (percent-encoding not needed for it).
    let compare_dir = dir.path().join("compare");
    let out = support::run(&[
        "compare",
        "--quick",
        "--scenarios",
        "baseline",
        "--strategies",
        "redis-watchdog",
        "--no-progress",
        "--redis",
        &redis.url(),
        "--out",
        compare_dir.to_str().unwrap(),
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert_no_secret(
        &out,
        &compare_dir,
        &["results.json", "report.html", "report.md"],
    );
}

#[test]
fn a_wrong_password_is_one_usage_line_without_the_password() {
    let certificates = TestCertificates::generate().unwrap();
    let redis = secured_redis(&certificates);
    let wrong = redis.url().replace(PASSWORD, "Wrong-canary-33Xy");
    let dir = tempfile::tempdir().unwrap();
    let out = support::run(&[
        "run",
        "--strategies",
        "redis-watchdog",
        "--duration",
        "1s",
        "--no-progress",
        "--redis",
        &wrong,
        "--out",
        dir.path().to_str().unwrap(),
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        !stderr.contains("Wrong-canary-33Xy") && !stderr.contains(PASSWORD),
        "{stderr}"
    );
    assert!(stderr.contains("***@"), "{stderr}");

    let etcd = EtcdServer::start_with(EtcdOptions {
        tls: Some(TlsFiles::of(&certificates)),
        root_password: Some(ETCD_PASSWORD.into()),
        ..EtcdOptions::default()
    })
    .unwrap();
    let wrong = format!(
        "{}?ca={}",
        etcd.endpoint()
            .replace("https://", "https://root:Wrong-canary-33Xy@"),
        certificates.ca().display()
    );
    let out = support::run(&[
        "run",
        "--strategies",
        "etcd-lease",
        "--duration",
        "1s",
        "--no-progress",
        "--etcd",
        &wrong,
        "--out",
        dir.path().to_str().unwrap(),
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(!stderr.contains("Wrong-canary-33Xy"), "{stderr}");
    assert!(stderr.contains("--etcd https://***@"), "{stderr}");
}
