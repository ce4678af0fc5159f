//! The SQL rows end to end: `lockbench run` of the PostgreSQL rows and of the MySQL rows on the
//! server it starts (both rows safe, the statements the server counted covering every acquire and
//! release), and on a user's server given with `--postgres` or `--mysql` (its version read, bad
//! addresses, wrong passwords and missing tables one line without the password); a MariaDB session
//! ended mid-hold.

#![allow(clippy::unwrap_used)]

mod support;

use std::sync::OnceLock;

use lockbench_reports::model::Verdict;
use lockbench_servers::certs::TlsFiles;
use lockbench_servers::{
    MariaDbServer, PostgresOptions, PostgresServer, RedisServer, TestCertificates,
};

/// The user's server of this binary (serving TLS too, with throw-away certificates), without the
/// strategies' tables until a test creates them.
fn users_server() -> &'static (PostgresServer, TestCertificates) {
    static SERVER: OnceLock<(PostgresServer, TestCertificates)> = OnceLock::new();
    SERVER.get_or_init(|| {
        let certificates = TestCertificates::generate().unwrap();
        let options = PostgresOptions {
            tls: Some(TlsFiles::of(&certificates)),
            ..PostgresOptions::default()
        };
        (PostgresServer::start_with(options).unwrap(), certificates)
    })
}

/// The PostgreSQL rows.
const POSTGRES_ROWS: &str = "postgres-advisory,postgres-lease";
/// The MySQL rows.
const MYSQL_ROWS: &str = "mysql-get-lock,mysql-lease";

/// `lockbench run` of both PostgreSQL rows for a second, with `extra` arguments and environment.
fn run(extra: &[&str], env: &[(&str, &str)]) -> (std::process::Output, tempfile::TempDir) {
    run_rows(POSTGRES_ROWS, extra, env)
}

/// `lockbench run` of `rows` for a second, with `extra` arguments and environment.
fn run_rows(
    rows: &str,
    extra: &[&str],
    env: &[(&str, &str)],
) -> (std::process::Output, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let mut command = support::lockbench();
    command
        .args(["run", "--strategies", rows])
        .args(["-d", "1s", "--warmup", "200ms", "--no-progress", "--out"])
        .arg(dir.path())
        .args(extra);
    for (name, value) in env {
        command.env(name, value);
    }
    (command.output().unwrap(), dir)
}

#[test]
fn both_rows_hold_on_lockbench_s_own_server_and_the_server_counts_their_statements() {
    let (out, dir) = run(&[], &[]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let results = support::read_results(dir.path());
    let server = &results.environment.servers[0];
    assert_eq!(server.kind, "postgres");
    assert!(server.managed);
    assert!(
        server.version.as_deref().unwrap().starts_with("15"),
        "{server:?}"
    );
    for case in &results.cases {
        assert_eq!(case.safety.verdict, Verdict::Safe, "{}", case.strategy);
        let acquired = case.operations.acquired;
        assert!(acquired > 20, "{}: {acquired}", case.strategy);
        // pg_stat_statements saw at least one taking and one freeing statement per acquire.
        let cost = case.server_cost.as_ref().unwrap();
        let calls = |kind: &str| cost.by_command.get(kind).copied().unwrap_or(0);
        let (taking, freeing) = match case.strategy.as_str() {
            "postgres-advisory" => (calls("with"), calls("select")),
            _ => (calls("insert"), calls("update")),
        };
        assert!(
            taking >= acquired && freeing >= acquired,
            "{}: {acquired} acquired, {cost:?}",
            case.strategy
        );
        assert!(cost.cpu_seconds.unwrap() > 0.0, "{cost:?}");
    }
}

#[test]
fn a_users_server_is_checked_and_used_and_bad_ones_are_one_line_errors() {
    let (server, certificates) = users_server();
    // No tables yet: one line saying what to create, exit 2, nothing created.
    let url = server.url();
    let (out, _dir) = run(&["--postgres", &url], &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("--postgres") && stderr.contains("CREATE TABLE"),
        "{stderr}"
    );
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    let tables = server
        .query("SELECT count(*) FROM pg_tables WHERE tablename LIKE 'lockbench_%'")
        .unwrap();
    assert_eq!(tables, vec![vec![Some("0".to_owned())]]);
    // Unreachable, with a password: one line without it.
    let port = lockbench_servers::free_ports(1).unwrap()[0];
    let unreachable = format!("postgres://app:s3cret-pw@127.0.0.1:{port}/postgres");
    let (out, _dir) = run(&["--postgres", &unreachable], &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(!stderr.contains("s3cret-pw"), "{stderr}");
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    // With the tables, the run uses it; the password from the environment reaches nothing written.
    server.query(lockers::postgres::SCHEMA).unwrap();
    let (out, dir) = run(
        &["--postgres", &url],
        &[("LOCKBENCH_POSTGRES_PASSWORD", "env-s3cret")],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let written = std::fs::read_to_string(dir.path().join("results.json")).unwrap();
    for text in [&*written, &stderr, &String::from_utf8_lossy(&out.stdout)] {
        assert!(!text.contains("env-s3cret"));
    }
    let results = support::read_results(dir.path());
    let info = &results.environment.servers[0];
    assert!(!info.managed, "{info:?}");
    assert!(
        info.version.as_deref().unwrap().starts_with("15"),
        "{info:?}"
    );
    assert!(results.cases.iter().all(|c| c.operations.acquired > 0));
    // TLS where the URL asks for it: without the CA one line saying so; with it (sslmode=require
    // fails on a server without TLS) the run goes through.
    let (out, _dir) = run(&["--postgres", &format!("{url}?sslmode=require")], &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("ca="), "{stderr}");
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    let ca = certificates.ca();
    let tls_url = format!("{url}?sslmode=require&ca={}", ca.display());
    let (out, dir) = run(&["--postgres", &tls_url], &[]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let results = support::read_results(dir.path());
    assert!(results.cases.iter().all(|c| c.operations.acquired > 0));
}

/// Asserts that `out` failed with exit 2 and one line of stderr, and returns that line.
fn one_line_error(out: &std::process::Output) -> String {
    let stderr = String::from_utf8_lossy(&out.stderr).trim().to_owned();
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    stderr
}

#[test]
fn both_mysql_rows_hold_on_lockbench_s_own_mariadb_and_the_server_counts_their_statements() {
    let (out, dir) = run_rows(MYSQL_ROWS, &[], &[]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let results = support::read_results(dir.path());
    let server = &results.environment.servers[0];
    assert_eq!(server.kind, "mysql");
    assert!(server.managed);
    assert!(
        server.version.as_deref().unwrap().starts_with("10.11"),
        "{server:?}"
    );
    assert_eq!(results.cases.len(), 2);
    for case in &results.cases {
        assert_eq!(case.safety.verdict, Verdict::Safe, "{}", case.strategy);
        let acquired = case.operations.acquired;
        assert!(acquired > 20, "{}: {acquired}", case.strategy);
        // The server's Com_* counters saw at least one taking and one freeing statement per acquire:
        // the lock is an INSERT for both rows; RELEASE_LOCK a SELECT, the lease's release an UPDATE.
        let cost = case.server_cost.as_ref().unwrap();
        let calls = |kind: &str| cost.by_command.get(kind).copied().unwrap_or(0);
        let freeing = match case.strategy.as_str() {
            "mysql-get-lock" => calls("select"),
            _ => calls("update"),
        };
        assert!(
            calls("insert") >= acquired && freeing >= acquired,
            "{}: {acquired} acquired, {cost:?}",
            case.strategy
        );
        assert!(cost.cpu_seconds.unwrap() > 0.0, "{cost:?}");
    }
}

#[test]
fn a_users_mysql_is_checked_and_used_and_bad_ones_are_one_line_errors() {
    let server = MariaDbServer::start().unwrap();
    let url = server.url();
    // No tables yet: one line saying what to create, exit 2, nothing created.
    let stderr = one_line_error(&run_rows(MYSQL_ROWS, &["--mysql", &url], &[]).0);
    assert!(
        stderr.contains("--mysql") && stderr.contains("CREATE TABLE"),
        "{stderr}"
    );
    let tables = server
        .query("SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_NAME LIKE 'lockbench_%'")
        .unwrap();
    assert_eq!(tables, vec![vec![Some("0".to_owned())]]);
    server.query(lockers::mysql::SCHEMA).unwrap();
    // A wrong password, and a Redis where MySQL was expected: one line each, the password in none.
    let wrong = url.replace(":lockbench@", ":s3cret-pw@");
    let stderr = one_line_error(&run_rows(MYSQL_ROWS, &["--mysql", &wrong], &[]).0);
    assert!(stderr.contains("Access denied"), "{stderr}");
    assert!(!stderr.contains("s3cret-pw"), "{stderr}");
    let redis = RedisServer::start().unwrap();
    let not_mysql = format!("mysql://app:s3cret-pw@{}/db", redis.addr());
    let stderr = one_line_error(&run_rows(MYSQL_ROWS, &["--mysql", &not_mysql], &[]).0);
    assert!(stderr.contains("MySQL or MariaDB"), "{stderr}");
    assert!(!stderr.contains("s3cret-pw"), "{stderr}");
    // With the tables and the password from the environment, the run uses it; the password
    // reaches nothing written.
    let without_password = url.replace(":lockbench@", "@");
    let (out, dir) = run_rows(
        "mysql-lease",
        &["--mysql", &without_password],
        &[("LOCKBENCH_MYSQL_PASSWORD", "lockbench")],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let results = support::read_results(dir.path());
    let info = &results.environment.servers[0];
    assert!(!info.managed, "{info:?}");
    assert!(
        info.version.as_deref().unwrap().starts_with("10.11"),
        "{info:?}"
    );
    assert!(results.cases.iter().all(|c| c.operations.acquired > 0));
}

#[test]
fn a_mariadb_session_ended_mid_hold_is_the_holder_s_only() {
    // mysql-get-lock's outcome is a race (the scenario's theory); the session fault itself is not.
    let results = support::run_scenario("mysql-session-kill", &["--strategies", MYSQL_ROWS]);
    for case in &results.cases {
        let fault = &case.faults[0];
        assert_eq!(fault.applied, Some(true), "{}: {fault:?}", case.strategy);
        assert_eq!(
            fault
                .parameters
                .get("sessions_ended")
                .and_then(|v| v.as_u64()),
            Some(1),
            "{}: {fault:?}",
            case.strategy
        );
    }
    let lease = results
        .cases
        .iter()
        .find(|c| c.strategy == "mysql-lease")
        .unwrap();
    assert_eq!(lease.safety.verdict, Verdict::Safe);
}
