//! Helpers shared by the integration tests: running the built binary and checking results files.

#![allow(dead_code)]

use std::path::Path;
use std::process::{Command, Output};

/// The built `lockbench` binary.
pub(crate) fn lockbench() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_lockbench"));
    command.env("NO_COLOR", "1");
    command
}

/// Runs the binary with `args`.
pub(crate) fn run(args: &[&str]) -> Output {
    lockbench().args(args).output().expect("lockbench runs")
}

/// Runs the binary with `args` and asserts it exited 0, showing its stderr otherwise.
pub(crate) fn run_ok(args: &[&str]) -> Output {
    let out = run(args);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// A Redis row and its Valkey twin (`redis-watchdog` and `redis-watchdog~valkey`): a fault test's
/// cases of the row run on both servers.
pub(crate) fn with_valkey_twin(row: &str) -> [String; 2] {
    [
        row.to_owned(),
        format!("{row}{}", lockbench::strategies::ON_VALKEY),
    ]
}

/// Reads `dir/results.json`, checks it against the schema derived from the model and parses it.
pub(crate) fn read_results(dir: &Path) -> lockbench_reports::Results {
    let text = std::fs::read_to_string(dir.join("results.json")).expect("results.json written");
    let doc: serde_json::Value = serde_json::from_str(&text).expect("results are JSON");
    let errors = lockbench_reports::schema::validate(&lockbench_reports::schema::results(), &doc);
    assert!(
        errors.is_empty(),
        "results.json violates the schema:\n{}",
        errors.join("\n")
    );
    lockbench_reports::Results::from_json(&text).expect("results parse")
}

/// Runs `lockbench run --scenario <scenario> --no-progress --out <tmp> <args>`, asserts it exited 0
/// (naming the command, its stderr and its stdout, where a failed case is reported), and returns the
/// results (checked against the schema).
pub(crate) fn run_scenario(scenario: &str, args: &[&str]) -> lockbench_reports::Results {
    let dir = tempfile::tempdir().unwrap();
    let mut full = vec![
        "run",
        "--scenario",
        scenario,
        "--no-progress",
        "--out",
        dir.path().to_str().unwrap(),
    ];
    full.extend_from_slice(args);
    let out = run(&full);
    assert_eq!(
        out.status.code(),
        Some(0),
        "lockbench {}: {}\n{}",
        full.join(" "),
        String::from_utf8_lossy(&out.stderr),
        String::from_utf8_lossy(&out.stdout)
    );
    read_results(dir.path())
}
