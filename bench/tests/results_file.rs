//! The results file: real output validates against the schema derived from the model, the validator
//! can fail, the file round-trips through the model, and Ctrl-C still writes what was measured,
//! marked incomplete.

#![allow(clippy::unwrap_used)]

mod support;

use std::time::{Duration, Instant};

use lockbench_reports::model::CaseStatus;
use lockbench_reports::schema::validate;
use serde_json::{Value, json};

fn schema() -> Value {
    lockbench_reports::schema::results()
}

#[test]
fn a_real_run_validates_and_prints_the_table() {
    let dir = tempfile::tempdir().unwrap();
    let out = support::run_ok(&[
        "run",
        "--scenario",
        "baseline",
        "--strategies",
        "memory",
        "--lease",
        "watchdog,fixed:2s",
        "--duration",
        "1s",
        "--warmup",
        "200ms",
        "--out",
        dir.path().to_str().unwrap(),
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.starts_with("strategy"), "{stdout}");
    assert!(stdout.contains("driver overhead"), "{stdout}");
    assert!(stdout.contains("results: "), "{stdout}");
    assert!(
        !stdout.contains('\r'),
        "no progress bar when stdout is not a terminal"
    );
    let results = support::read_results(dir.path());
    assert!(results.complete);
    assert_eq!(results.schema_version, lockbench_reports::SCHEMA_VERSION);
    assert_eq!(results.cases.len(), 2);
    for c in &results.cases {
        assert_eq!(c.status, CaseStatus::Complete);
        assert!(c.throughput.completed_per_s > 100.0, "{:?}", c.throughput);
        assert!(c.latency.acquire.count > 0 && c.latency.handoff.count > 0);
        assert!(c.histograms.contains_key("acquire"));
        assert!(c.driver.cycles > 0 && c.driver.overhead_ns > 0.0);
        assert!(c.client_cost.cpu_seconds > 0.0);
    }
    assert!(results.environment.cores >= 1);
    let text = std::fs::read_to_string(dir.path().join("results.json")).unwrap();
    assert_eq!(
        lockbench_reports::Results::from_json(&text).unwrap(),
        results
    );
}

#[test]
fn the_validator_rejects_what_the_schema_forbids() {
    let schema = schema();
    let summary = json!({"count": 0, "min_ms": null, "mean_ms": null, "p50_ms": null,
        "p90_ms": null, "p99_ms": null, "p999_ms": null, "max_ms": null});
    let ok = |doc: &Value| {
        validate(
            &json!({"$defs": schema["$defs"], "$ref": "#/$defs/Summary"}),
            doc,
        )
    };
    assert!(ok(&summary).is_empty());
    let mut missing = summary.clone();
    missing.as_object_mut().unwrap().remove("p99_ms");
    assert!(ok(&missing)[0].contains("missing required p99_ms"));
    let mut extra = summary.clone();
    extra["p42_ms"] = json!(1.0);
    assert!(ok(&extra)[0].contains("not allowed"));
    let mut wrong = summary.clone();
    wrong["count"] = json!(-1);
    assert!(!ok(&wrong).is_empty());
    wrong["count"] = json!("many");
    assert!(!ok(&wrong).is_empty());
    let doc = json!({"schema_version": 2});
    let errors = validate(&schema, &doc);
    assert!(
        errors.iter().any(|e| e.contains("expected 1")),
        "{errors:?}"
    );
    assert!(
        errors.iter().any(|e| e.contains("missing required cases")),
        "{errors:?}"
    );
}

#[test]
fn other_versions_are_refused() {
    let err = lockbench_reports::Results::from_json(r#"{"schema_version": 99}"#).unwrap_err();
    assert!(err.to_string().contains("schema_version 99"), "{err}");
    assert!(lockbench_reports::Results::from_json("[]").is_err());
}

#[test]
fn ctrl_c_writes_what_was_measured_marked_incomplete() {
    let dir = tempfile::tempdir().unwrap();
    let marks = tempfile::tempdir().unwrap();
    let measuring = marks.path().join("measuring");
    let mut child = support::lockbench()
        .env("LOCKBENCH_MEASURING_FILE", &measuring)
        .args([
            "run",
            "--scenario",
            "baseline",
            "--strategies",
            "memory,memory-unshared",
            "--duration",
            "30s",
            "--warmup",
            "0s",
            "--out",
            dir.path().to_str().unwrap(),
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    if !lockbench_servers::poll::until(Duration::from_secs(30), || measuring.exists()) {
        let _ = child.kill();
        panic!("the first case did not start measuring within 30 s");
    }
    // A second of measuring: what the interrupted case must keep.
    std::thread::sleep(Duration::from_secs(1));
    let began = Instant::now();
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let out = child.wait_with_output().unwrap();
    assert!(
        began.elapsed() < Duration::from_secs(10),
        "stopped promptly"
    );
    assert_eq!(
        out.status.code(),
        Some(130),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let results = support::read_results(dir.path());
    assert!(!results.complete);
    assert_eq!(results.cases.len(), 1, "the second case never started");
    let c = &results.cases[0];
    assert_eq!(c.status, CaseStatus::Interrupted);
    assert!(
        c.window.measured_ms > 500.0 && c.window.measured_ms < 10_000.0,
        "{:?}",
        c.window
    );
    assert!(c.operations.completed > 0);
}

/// Redis client requests come from lockers' count of what its clients sent, in both worker modes: a
/// few per critical section, far fewer than `INFO commandstats` calls (which include the commands the
/// scripts ran). `lockers/tests/redis_request_count.rs` checks the count against `MONITOR`.
#[test]
fn redis_client_requests_are_what_the_clients_sent() {
    for workers in ["tasks", "processes"] {
        let results = baseline_second(workers, "redis-watchdog");
        let case = &results.cases[0];
        let cost = case.server_cost.as_ref().expect("server cost");
        let sent = cost.client_requests.expect("client requests for Redis");
        let acquired = case.operations.acquired.max(1);
        let per_cs = sent as f64 / acquired as f64;
        assert!(
            (2.0..20.0).contains(&per_cs),
            "{workers}: {sent} requests for {acquired} acquires"
        );
        assert!(
            cost.requests as f64 > 1.5 * sent as f64,
            "{workers}: commandstats {} vs sent {sent}",
            cost.requests
        );
    }
}

#[test]
fn a_peer_case_carries_its_protocol_round_trip() {
    for workers in ["tasks", "processes"] {
        let results = baseline_second(workers, "py-redis-lock,redis-guard-thread");
        for case in &results.cases {
            let rtt = case.protocol_round_trip_ms;
            match case.strategy.as_str() {
                "py-redis-lock" => assert!(rtt.is_some_and(|ms| ms > 0.0), "{workers}: {rtt:?}"),
                _ => assert_eq!(rtt, None, "{workers}: {}", case.strategy),
            }
        }
    }
}

/// One second of baseline (after 200 ms of warm-up) for `strategies` with `workers`.
fn baseline_second(workers: &str, strategies: &str) -> lockbench_reports::Results {
    support::run_scenario(
        "baseline",
        &[
            "--strategies",
            strategies,
            "--workers",
            workers,
            "--duration",
            "1s",
            "--warmup",
            "200ms",
        ],
    )
}
