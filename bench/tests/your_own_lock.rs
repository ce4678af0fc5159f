//! A team's own adapter, as docs/your-own-lock.md walks through it: the example's manifest checks
//! out, a copy claiming fencing it does not have fails on the row that names fencing, a shipped
//! adapter checks out too, the example runs beside lockbench's row, a bad manifest is one line, and a
//! shipped adapter runs another version of its library (`id@version`), installed at first use.

#![allow(clippy::unwrap_used)]

mod support;

use support::{lockbench, run};

const EXAMPLE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../docs/examples/your-own-lock/py-hand-made-lock.toml"
);

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The table's row for `check`.
fn row<'a>(stdout: &'a str, check: &str) -> &'a str {
    stdout
        .lines()
        .find(|l| l.starts_with(check))
        .unwrap_or_else(|| panic!("no row {check:?} in {stdout}"))
}

#[test]
fn the_example_checks_out() {
    let out = run(&["check-adapter", EXAMPLE]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));
    assert!(
        row(&stdout, "watchdog lease outlives its TTL").ends_with("pass"),
        "{stdout}"
    );
    assert!(
        row(&stdout, "fencing tokens increase").ends_with('-'),
        "{stdout}"
    );
    assert!(!stdout.contains("FAIL"), "{stdout}");
}

#[test]
fn a_claim_of_fencing_the_example_lacks_fails_on_the_fencing_row() {
    let dir = tempfile::tempdir().unwrap();
    let example = std::path::Path::new(EXAMPLE);
    let manifest = std::fs::read_to_string(example)
        .unwrap()
        .replace("fencing = false", "fencing = true")
        .replace(
            "entry = \"",
            &format!("entry = \"{}/", example.parent().unwrap().display()),
        );
    let copy = dir.path().join("claims-fencing.toml");
    std::fs::write(&copy, manifest).unwrap();
    let out = run(&["check-adapter", copy.to_str().unwrap()]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}{}", text(&out.stderr));
    let fencing = row(&stdout, "fencing tokens increase");
    assert!(
        fencing.contains("yes") && fencing.ends_with("FAIL"),
        "{stdout}"
    );
    assert!(row(&stdout, "capabilities in hello").contains("fencing: hello says false"));
    assert!(
        row(&stdout, "mutual exclusion").ends_with("pass"),
        "{stdout}"
    );
}

#[test]
fn a_shipped_adapter_checks_out() {
    let manifest = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../adapters/python/py-redis-py.toml"
    );
    let out = run(&["check-adapter", manifest]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));
}

#[test]
fn the_example_runs_beside_lockbenchs_row_with_its_log_under_the_output() {
    let dir = tempfile::tempdir().unwrap();
    let out_dir = dir.path().join("out");
    let out = run(&[
        "run",
        "--adapter",
        EXAMPLE,
        "--strategies",
        "redis-guard-thread",
        "-d",
        "500ms",
        "--no-progress",
        "--out",
        out_dir.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let results = std::fs::read_to_string(out_dir.join("results.json")).unwrap();
    let results: serde_json::Value = serde_json::from_str(&results).unwrap();
    let ran: Vec<&str> = results["cases"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["status"] == "complete")
        .filter_map(|c| c["strategy"].as_str())
        .collect();
    assert!(
        ran.contains(&"py-hand-made-lock") && ran.contains(&"redis-guard-thread"),
        "{ran:?}"
    );
}

#[test]
fn a_bad_manifest_is_one_line_naming_the_file_and_the_field() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.toml");
    let manifest = std::fs::read_to_string(EXAMPLE)
        .unwrap()
        .replace("server = \"redis\"", "server = \"oracle\"");
    std::fs::write(&bad, manifest).unwrap();
    for command in [
        vec!["strategies", "--adapter", bad.to_str().unwrap()],
        vec!["check-adapter", bad.to_str().unwrap()],
    ] {
        let out = run(&command);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{command:?}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(
            stderr.contains("bad.toml: server: expected one of"),
            "{stderr}"
        );
    }
}

/// The older python-redis-lock the version test installs (PyPI serves it; the pin is 4.0.0).
const OLDER: &str = "3.7.0";

#[test]
fn an_older_library_version_installs_at_first_use_and_its_process_reports_it() {
    let dir = tempfile::tempdir().unwrap();
    let versions = dir.path().join("versions");
    let out_dir = dir.path().join("out");
    let id = format!("py-redis-lock@{OLDER}");
    let out = lockbench()
        .env("LOCKBENCH_VERSIONS_DIR", &versions)
        .args(["run", "-s", "baseline", "--strategies", &id, "-d", "500ms"])
        .args(["--no-progress", "--out", out_dir.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let resolved = std::fs::read_to_string(versions.join(&id).join("resolved.toml")).unwrap();
    let resolved: toml::Table = resolved.parse().unwrap();
    assert_eq!(
        resolved["coordinates"].as_str(),
        Some(format!("python-redis-lock=={OLDER}").as_str())
    );
    assert!(resolved["resolved_at"].as_str().is_some(), "{resolved}");
    let results = std::fs::read_to_string(out_dir.join("results.json")).unwrap();
    let results: serde_json::Value = serde_json::from_str(&results).unwrap();
    let case = &results["cases"][0];
    assert_eq!(case["strategy"], id.as_str());
    assert_eq!(case["status"], "complete", "{case}");
    assert_eq!(case["library"]["version"], OLDER, "{case}");
}

#[test]
fn a_version_the_registry_lacks_or_a_manifest_without_versions_is_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let versions = dir.path().join("versions");
    for (args, expected) in [
        (
            vec!["--strategies", "py-redis-lock@9.9.9"],
            "py-redis-lock@9.9.9: PyPI has no python-redis-lock==9.9.9",
        ),
        (
            vec![
                "--adapter",
                EXAMPLE,
                "--strategies",
                "py-hand-made-lock@1.0",
            ],
            "not supported yet for python3 adapters",
        ),
    ] {
        let out = lockbench()
            .env("LOCKBENCH_VERSIONS_DIR", &versions)
            .args(["run", "-s", "baseline", "-d", "500ms", "--no-progress"])
            .args(["--out", dir.path().join("out").to_str().unwrap()])
            .args(&args)
            .output()
            .unwrap();
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        let last = stderr.lines().last().unwrap_or_default();
        assert!(last.contains(expected), "{stderr}");
        assert!(!dir.path().join("out/results.json").exists());
    }
    let left: Vec<_> = std::fs::read_dir(&versions).map_or(Vec::new(), |d| d.collect());
    assert!(left.is_empty(), "a failed install leaves nothing: {left:?}");
}
