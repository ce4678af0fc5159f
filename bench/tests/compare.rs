//! `lockbench compare --quick` end to end on real servers (it starts them), then `lockbench report`
//! re-rendering from its results file with a baseline, and `report`'s answers to bad input.

#![allow(clippy::unwrap_used)]

mod support;

use std::path::Path;

use lockbench_reports::Comparison;
use lockbench_reports::model::{CaseStatus, Verdict};
use lockbench_reports::schema::{self, validate};
use serde_json::Value;

/// The strategies whose watchdog lease must hold in lease-too-short (redis-keyspace-naive is built to
/// show how renewal driven only by keyspace events fails, so it is not asserted either way).
const WATCHDOG_HOLDS: &[&str] = &[
    "memory",
    "redis-watchdog",
    "redis-watchdog~valkey",
    "valkey-ifeq",
    "redis-watchdog-batched",
    "redis-guard-thread",
    "etcd-lease",
    "zookeeper",
];

fn check_schemas(path: &Path) {
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let errors = validate(&schema::comparison(), &doc);
    assert!(errors.is_empty(), "comparison schema: {errors:?}");
    let results_schema = schema::results();
    for run in doc["runs"].as_array().unwrap() {
        let errors = validate(&results_schema, &run["results"]);
        assert!(errors.is_empty(), "results schema: {errors:?}");
    }
}

#[test]
fn compare_quick_runs_the_suite_and_writes_the_reports() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("cmp");
    // Two of the quick suite's scenarios (the whole quick suite takes up to 4 minutes), for nine
    // strategies on four kinds of server (every strategy runs through the compares of other tests;
    // redis-watchdog on Redis and on Valkey side by side, valkey-ifeq on the same Valkey),
    // with a CI gate every baseline case crosses: the reports are written, then the command exits 1.
    let mut strategies = WATCHDOG_HOLDS.to_vec();
    strategies.push("redis-keyspace-shadow");
    let strategies = strategies.join(",");
    let run = support::run(&[
        "compare",
        "--quick",
        "--strategies",
        &strategies,
        "--scenarios",
        "baseline,lease-too-short",
        "--out",
        out.to_str().unwrap(),
        "--fail-on",
        "baseline:max>0us",
    ]);
    let stdout = String::from_utf8_lossy(&run.stdout);
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(1), "{stdout}\n{stderr}");
    assert!(
        stderr.contains("--fail-on baseline:max>0us: ") && stderr.contains(" found this run\n"),
        "{stderr}"
    );
    for line in [
        format!("results: {}", out.join("results.json").display()),
        format!("report: {}", out.join("report.html").display()),
        out.join("report.md").display().to_string(),
    ] {
        assert!(stdout.contains(&line), "stdout lacks {line:?}:\n{stdout}");
    }
    for file in [
        "results.json",
        "report.html",
        "report.md",
        "charts/throughput-baseline.svg",
    ] {
        assert!(out.join(file).is_file(), "{file}");
    }
    for scenario in ["baseline", "lease-too-short"] {
        assert!(
            out.join("runs")
                .join(scenario)
                .join("results.json")
                .is_file()
        );
    }
    check_schemas(&out.join("results.json"));

    let c = Comparison::read(&std::fs::read_to_string(out.join("results.json")).unwrap()).unwrap();
    assert!(c.complete, "{:?}", c.notes);
    // Scenarios named from the quick suite are not the quick suite, and the report says so.
    assert_eq!(c.suite, "selected");
    let markdown = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(
        markdown.starts_with("# lockbench comparison — selected scenarios\n"),
        "{}",
        markdown.lines().next().unwrap_or_default()
    );
    let scenarios: Vec<&str> = c
        .runs
        .iter()
        .map(|r| r.results.scenario.name.as_str())
        .collect();
    assert_eq!(scenarios, ["baseline", "lease-too-short"]);
    let ids: Vec<&str> = c.strategies.iter().map(|s| s.id.as_str()).collect();
    for id in WATCHDOG_HOLDS {
        assert!(ids.contains(id), "{id} is compared");
    }
    // Each row names the server it ran on, and the results that server's name and version.
    let server_of = |id: &str| {
        c.strategies
            .iter()
            .find(|s| s.id == id)
            .unwrap()
            .server
            .clone()
    };
    assert_eq!(
        ["redis-watchdog", "redis-watchdog~valkey", "valkey-ifeq"].map(server_of),
        ["redis", "valkey", "valkey"]
    );
    let servers = &c.runs[0].results.environment.servers;
    let version = |kind: &str| {
        servers
            .iter()
            .find(|s| s.kind == kind)
            .unwrap()
            .version
            .clone()
    };
    assert!(
        version("redis").is_some_and(|v| v.starts_with("7.")),
        "{servers:?}"
    );
    assert!(
        version("valkey").is_some_and(|v| v.starts_with("9.")),
        "{servers:?}"
    );
    for run in &c.runs {
        assert!(
            run.results.scenario.theory.is_some() && !run.results.scenario.expect.is_empty(),
            "{}: the scenario states what theory predicts",
            run.results.scenario.name
        );
        for case in run
            .results
            .cases
            .iter()
            .filter(|c| c.status == CaseStatus::Complete)
        {
            let trials = case
                .trials
                .as_ref()
                .expect("each case says how many trials it rests on");
            assert_eq!(
                (trials.runs, trials.each.len()),
                (1, 1),
                "--quick runs one trial"
            );
            assert_eq!(
                trials.violated,
                u32::from(case.safety.verdict == Verdict::Violated)
            );
            assert_eq!(
                case.safety.reasons.is_empty(),
                case.safety.verdict == Verdict::Safe,
                "a violated case names why: {:?}",
                case.safety
            );
        }
    }
    let lease_too_short = &c.runs[1].results;
    for case in &lease_too_short.cases {
        match case.lease.as_str() {
            lease if lease.starts_with("fixed") => match case.status {
                CaseStatus::Skipped => assert!(
                    case.capabilities.is_none() || case.error.is_some(),
                    "{case:?}"
                ),
                _ => assert_eq!(
                    case.safety.verdict,
                    Verdict::Violated,
                    "{} with a fixed lease shorter than the task",
                    case.strategy
                ),
            },
            _ if WATCHDOG_HOLDS.contains(&case.strategy.as_str()) => assert_eq!(
                case.safety.verdict,
                Verdict::Safe,
                "{} with a watchdog lease: {:?}",
                case.strategy,
                case.safety
            ),
            _ => {}
        }
    }
    let fixed_violations = lease_too_short
        .cases
        .iter()
        .filter(|c| c.lease.starts_with("fixed") && c.safety.verdict == Verdict::Violated)
        .count();
    assert!(
        fixed_violations >= 5,
        "fixed leases ran and violated: {fixed_violations}"
    );

    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(
        md.contains("**Unsafe under lease-too-short · fixed:"),
        "{md}"
    );
    assert!(
        md.contains("**Fastest safe strategy under baseline.**"),
        "{md}"
    );

    // `report` renders the same file again, here with itself as the baseline.
    let again = dir.path().join("again");
    let results = out.join("results.json");
    let run = support::run(&[
        "report",
        results.to_str().unwrap(),
        "--baseline",
        results.to_str().unwrap(),
        "--out",
        again.to_str().unwrap(),
    ]);
    assert_eq!(
        run.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let md = std::fs::read_to_string(again.join("report.md")).unwrap();
    assert!(md.contains("## Changes against"), "{md}");
    assert!(
        md.contains("cases changed beyond noise; 0 new violations"),
        "same file, no change: {md}"
    );
    assert!(again.join("charts/throughput-baseline.png").is_file());
}

fn one_line_usage_error(args: &[&str], needle: &str) {
    let run = support::run(args);
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(2), "{args:?}: {stderr}");
    assert_eq!(stderr.trim().lines().count(), 1, "one line: {stderr}");
    assert!(stderr.starts_with("lockbench: "), "{stderr}");
    assert!(stderr.contains(needle), "{args:?}: {stderr}");
}

#[test]
fn report_refuses_bad_input_in_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let path = |name: &str, text: &str| {
        let p = dir.path().join(name);
        std::fs::write(&p, text).unwrap();
        p.to_str().unwrap().to_owned()
    };
    let missing = dir.path().join("missing.json");
    one_line_usage_error(&["report", missing.to_str().unwrap()], "cannot read");
    let not_json = path("notjson.json", "<html>");
    one_line_usage_error(&["report", &not_json], "not a lockbench results file");
    let truncated = path("truncated.json", "{\"schema_version\": 1, \"runs\": [");
    one_line_usage_error(&["report", &truncated], "not a lockbench results file");
    let wrong_version = path("v9.json", "{\"schema_version\": 9, \"runs\": []}");
    one_line_usage_error(
        &["report", &wrong_version],
        "schema_version 9 is not supported",
    );
    let wrong_shape = path("shape.json", "{\"schema_version\": 1, \"cases\": 3}");
    one_line_usage_error(&["report", &wrong_shape], "not a lockbench results file");
    let good = dir.path().join("good.json");
    std::fs::write(
        &good,
        include_str!("../../reports/tests/fixtures/compare-quick.json"),
    )
    .unwrap();
    let good = good.to_str().unwrap();
    one_line_usage_error(&["report", good, "--baseline", &not_json], "notjson.json");
    one_line_usage_error(
        &["report", good, "--scale", &wrong_version],
        "scale schema_version 9",
    );
    one_line_usage_error(&["report"], "required arguments");
    one_line_usage_error(&["compare", "--strategies", "nope"], "--strategies");
    one_line_usage_error(&["compare", "--scenarios", "nope"], "--scenarios");
    one_line_usage_error(&["compare", "--trials", "0"], "--trials");
    // More trials than the budgeted suites can fit: refused with what they would need.
    one_line_usage_error(&["compare", "--trials", "10"], "over its budget of 20m");
    one_line_usage_error(
        &["compare", "--quick", "--trials", "5"],
        "over its budget of 4m",
    );
    one_line_usage_error(&["compare", "--max-trials", "2"], "--max-trials");
}
