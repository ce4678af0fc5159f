//! `--history`: a case's history, written beside its results, judged by a checker lockbench does not
//! contain (bench/tests/checker/, Porcupine with a lock-and-register model) to the same verdict as
//! lockbench's own oracle, for a case that held and one that broke.

#![allow(clippy::unwrap_used)]

mod support;

use std::path::{Path, PathBuf};
use std::process::Command;

use lockbench_reports::model::Verdict;

/// The checker's folder.
fn checker_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/checker")
}

/// Runs a one-strategy case of the in-process lock with `args` and `--history`; returns its verdict
/// and its history file.
fn case_with_history(out: &Path, args: &[&str]) -> (Verdict, PathBuf) {
    let dir = out.to_str().unwrap();
    let mut full = vec![
        "run",
        "--strategies",
        "memory",
        "--clients",
        "3",
        "--keys",
        "1",
        "--duration",
        "1s",
        "--warmup",
        "0s",
        "--no-progress",
        "--history",
        "--out",
        dir,
    ];
    full.extend_from_slice(args);
    let ran = support::run(&full);
    assert!(
        matches!(ran.status.code(), Some(0)),
        "{}",
        String::from_utf8_lossy(&ran.stderr)
    );
    let results = support::read_results(out);
    let case = &results.cases[0];
    let history: Vec<PathBuf> = std::fs::read_dir(out.join("history"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(history.len(), 1, "{history:?}");
    (case.safety.verdict, history[0].clone())
}

/// The checker built into `dir` (Go from docker/install-deps.sh --with-peers; a missing toolchain
/// fails the test with the install command, never skips it).
fn build_checker(dir: &Path) -> PathBuf {
    let binary = dir.join("checker");
    let built = Command::new("go")
        .args(["build", "-o"])
        .arg(&binary)
        .arg(".")
        .env("GOTOOLCHAIN", "local")
        .env("GOFLAGS", "-mod=readonly")
        .current_dir(checker_dir())
        .output()
        .unwrap_or_else(|e| {
            panic!(
                "cannot run go ({e}): install Go 1.26 with bash docker/install-deps.sh --with-peers"
            )
        });
    assert!(
        built.status.success(),
        "building the checker failed: {}",
        String::from_utf8_lossy(&built.stderr)
    );
    binary
}

/// The checker's verdict on `history`: exit 0 and "safe", or exit 1 and "VIOLATED" (exit 2, bad input
/// or no answer in time, fails the test).
fn checked(checker: &Path, history: &Path) -> Verdict {
    let out = Command::new(checker).arg(history).output().unwrap();
    let said = String::from_utf8_lossy(&out.stdout).into_owned();
    match out.status.code() {
        Some(0) if said.contains(": safe") => Verdict::Safe,
        Some(1) if said.contains(": VIOLATED") => Verdict::Violated,
        other => panic!(
            "the checker gave no verdict ({other:?}): {said}{}",
            String::from_utf8_lossy(&out.stderr)
        ),
    }
}

#[test]
fn an_outside_checker_reaches_the_oracles_verdict_from_the_history() {
    let bin = tempfile::tempdir().unwrap();
    let checker = build_checker(bin.path());
    let held = tempfile::tempdir().unwrap();
    let (verdict, history) = case_with_history(held.path(), &["--task", "5ms"]);
    assert_eq!(verdict, Verdict::Safe);
    let text = std::fs::read_to_string(&history).unwrap();
    let header = text.lines().next().unwrap();
    assert!(
        header.contains("\"format\":\"lockbench-history/1\""),
        "{header}"
    );
    for op in ["acquire", "read", "write", "release"] {
        assert!(
            text.contains(&format!("\"op\":\"{op}\"")),
            "no {op} in {history:?}"
        );
    }
    assert_eq!(checked(&checker, &history), Verdict::Safe, "{history:?}");

    // A 5 ms lease under 20 ms tasks whose holders ignore its loss: overlapping holders.
    let broke = tempfile::tempdir().unwrap();
    let (verdict, history) = case_with_history(
        broke.path(),
        &[
            "--task",
            "20ms",
            "--lease",
            "fixed:5ms",
            "--on-lost",
            "ignore",
        ],
    );
    assert_eq!(verdict, Verdict::Violated);
    assert_eq!(
        checked(&checker, &history),
        Verdict::Violated,
        "{history:?}"
    );
}
