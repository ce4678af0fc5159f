//! What a reader meets on the report's first screen, through `lockbench report` on the committed
//! quick-suite fixture: data cells that claim nothing fencing could not see, the in-process yardstick
//! set apart, liveness beside safety, a connection lock that says why it has no many-locks figure,
//! and `--fail-on contradiction` between two runs.

#![allow(clippy::unwrap_used)]

mod support;

use std::path::Path;

use serde_json::{Value, json};

const FIXTURE: &str = include_str!("../../reports/tests/fixtures/compare-quick.json");

fn fixture() -> Value {
    serde_json::from_str(FIXTURE).unwrap()
}

/// Every case of `strategy` in the comparison `doc`.
fn cases<'d>(doc: &'d mut Value, strategy: &'d str) -> impl Iterator<Item = &'d mut Value> {
    doc["runs"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .flat_map(|run| run["results"]["cases"].as_array_mut().unwrap().iter_mut())
        .filter(move |case| case["strategy"] == strategy)
}

fn write(dir: &Path, name: &str, doc: &Value) -> String {
    let path = dir.join(name);
    std::fs::write(&path, doc.to_string()).unwrap();
    path.to_string_lossy().into_owned()
}

/// `lockbench report FILE --section NAME`'s output.
fn section(file: &str, name: &str, extra: &[&str]) -> String {
    let mut args = vec!["report", file, "--section", name];
    args.extend_from_slice(extra);
    String::from_utf8(support::run_ok(&args).stdout).unwrap()
}

/// The cells of the Markdown table row whose first cell is `first`.
fn row<'t>(table: &'t str, first: &str) -> Vec<&'t str> {
    table
        .lines()
        .find(|l| l.starts_with(&format!("| {first} |")))
        .unwrap_or_else(|| panic!("no row {first} in\n{table}"))
        .trim_matches('|')
        .split(" | ")
        .map(str::trim)
        .collect()
}

/// The cell of `first`'s row under `column` in the table that starts the text.
fn cell<'t>(table: &'t str, first: &str, column: &str) -> &'t str {
    let header: Vec<&str> = table
        .lines()
        .next()
        .unwrap()
        .trim_matches('|')
        .split(" | ")
        .map(str::trim)
        .collect();
    let at = header
        .iter()
        .position(|h| *h == column)
        .unwrap_or_else(|| panic!("no column {column} in {header:?}"));
    row(table, first)[at]
}

#[test]
fn a_strategy_without_fencing_never_reads_data_intact() {
    let dir = tempfile::tempdir().unwrap();
    let mut doc = fixture();
    // redis-keyspace-naive broke in lease-too-short without a lost update; without fencing tokens
    // its stale writes would have gone unseen.
    for case in cases(&mut doc, "redis-keyspace-naive") {
        if case["capabilities"].is_object() {
            case["capabilities"]["fencing"] = json!(false);
        }
        case["safety"]["fencing"] = json!({"enforced": false, "stale_rejected": null,
            "stale_accepted": null, "duplicate_tokens": null, "token_regressions": null});
        case["safety"]["data"] = json!("intact");
    }
    let file = write(dir.path(), "results.json", &doc);
    let card = section(&file, "scorecard", &[]);
    assert_eq!(
        cell(&card, "redis-keyspace-naive", "data"),
        "no fencing: stale writes not detectable",
        "{card}"
    );
    assert_eq!(cell(&card, "zookeeper", "data"), "intact", "{card}");
    let matrix = section(&file, "verdicts", &[]);
    let table = &matrix[matrix.find("| strategy").unwrap()..];
    let naive = row(table, "redis-keyspace-naive").join(" | ");
    assert!(
        naive.contains("no fencing: stale writes not detectable") && !naive.contains("intact"),
        "{naive}"
    );
    assert!(
        matrix.contains("for a strategy without fencing tokens, “no fencing: stale writes not detectable” stands where intact would"),
        "the legend says what the words mean: {matrix}"
    );
}

#[test]
fn the_in_process_yardstick_is_last_labelled_and_never_ranked() {
    let dir = tempfile::tempdir().unwrap();
    let mut doc = fixture();
    // The fixture's memory row is already the fastest (872 CS/s against redis-watchdog's 734).
    let file = write(dir.path(), "results.json", &doc);
    let card = section(&file, "scorecard", &[]);
    let rows: Vec<&str> = card
        .lines()
        .skip(2)
        .take_while(|l| l.starts_with('|'))
        .collect();
    assert!(rows[0].starts_with("| redis-watchdog |"), "{card}");
    assert!(
        rows.last()
            .unwrap()
            .starts_with("| memory (yardstick) | 872 |"),
        "{card}"
    );
    let fastest = card
        .lines()
        .find(|l| l.starts_with("**Fastest:**"))
        .unwrap();
    assert!(!fastest.contains("memory"), "{fastest}");
    assert!(
        card.contains("**Yardstick, not ranked:** under baseline, memory 872 CS/s: a lock in the driver's own process with no server, so what the driver itself can do"),
        "{card}"
    );
    let matrix = section(&file, "verdicts", &[]);
    let table = &matrix[matrix.find("| strategy").unwrap()..];
    let last = table.lines().take_while(|l| l.starts_with('|')).last();
    assert!(
        last.unwrap().starts_with("| memory (yardstick) |"),
        "{matrix}"
    );
    // Known from the results model (its server), not from its id.
    doc["strategies"][0]["server"] = json!("redis");
    doc["strategies"][0]["distributed"] = json!(true);
    let file = write(dir.path(), "as-server.json", &doc);
    let card = section(&file, "scorecard", &[]);
    assert!(!card.contains("(yardstick)"), "{card}");
    assert!(!card.contains("Yardstick, not ranked"), "{card}");
    // Ranked like any other: first of the strategies a single trial leaves unranked.
    assert!(
        card.contains("**Fastest:** not ranked under baseline: a single trial gives no 95 % interval to rank on (memory 872, redis-watchdog 734, "),
        "{card}"
    );
}

#[test]
fn liveness_stands_beside_safety_and_a_connection_lock_says_why_it_has_no_many_locks_figure() {
    let dir = tempfile::tempdir().unwrap();
    let mut doc = fixture();
    // zookeeper stands in for postgres-advisory: a lock that is its holder's connection.
    doc["strategies"][3]["connection_lock"] = json!(true);
    for case in cases(&mut doc, "redis-watchdog") {
        // A 1200 ms stretch without a grant, closed by a grant at 1.7 s.
        let mut grants = vec![0u32; 20];
        (grants[4], grants[17]) = (1, 1);
        case["availability"] = json!({"bin_ms": 100.0, "grants": grants,
            "max_wait_ms": vec![Value::Null; 20],
            "longest_gap": {"from_ms": 500.0, "to_ms": 1700.0}});
    }
    let file = write(dir.path(), "results.json", &doc);
    let scale = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../reports/tests/fixtures/scale-redis.json")
        .to_string_lossy()
        .into_owned();
    let card = section(&file, "scorecard", &["--scale", &scale]);
    assert_eq!(
        cell(&card, "redis-watchdog", "unavailable"),
        "1200 ms (baseline)",
        "{card}"
    );
    assert_eq!(cell(&card, "zookeeper", "unavailable"), "-", "{card}");
    assert_eq!(
        cell(&card, "zookeeper", "many locks"),
        "one connection per held lock: not measured at scale",
        "{card}"
    );
    // A file that does not say why: the cell still says the pass did not measure it.
    assert_eq!(
        cell(&card, "redis-keyspace-naive", "many locks"),
        "not in the many-locks pass"
    );
    let which = section(&file, "which", &[]);
    let safe = which
        .lines()
        .find(|l| l.contains("**Safe with watchdog leases.**"))
        .unwrap();
    assert!(!safe.contains("zookeeper"), "{safe}");
    assert!(
        which.contains(
            "zookeeper: not judged here: its lock is its holder's connection, not a lease"
        ),
        "{which}"
    );
}

/// The fixture's lease-too-short run alone (few charts to draw), redis-watchdog's watchdog case
/// given `trials`.
fn lease_too_short(trials: Value, violated: bool) -> Value {
    let mut doc = fixture();
    doc["runs"]
        .as_array_mut()
        .unwrap()
        .retain(|r| r["results"]["scenario"]["name"] == "lease-too-short");
    for case in cases(&mut doc, "redis-watchdog") {
        if case["lease"] != "watchdog" {
            continue;
        }
        if violated {
            case["safety"]["verdict"] = json!("violated");
            case["safety"]["reasons"] = json!(["overlap"]);
            case["safety"]["overlap"]["pairs"] = json!(1);
        }
        case["trials"] = trials.clone();
    }
    doc
}

#[test]
fn fail_on_contradiction_names_the_cells_two_runs_cannot_both_be_right_about() {
    let dir = tempfile::tempdir().unwrap();
    // 0 of 20 trials violated (95 % 0–16 %) against broke at trial 1 (1 of 1: 21–100 %).
    let held = lease_too_short(
        json!({"runs": 20, "violated": 0, "rate_low": 0.0, "rate_high": 0.1611,
            "stopped_early": false, "each": []}),
        false,
    );
    let broke = lease_too_short(
        json!({"runs": 1, "violated": 1, "rate_low": null, "rate_high": null,
            "stopped_early": true, "each": []}),
        true,
    );
    let old = write(dir.path(), "old.json", &held);
    let new = write(dir.path(), "new.json", &broke);
    let out = dir.path().join("out").to_string_lossy().into_owned();
    let report = |new: &str, fail_on: &str| {
        let run = support::run(&[
            "report",
            new,
            "--baseline",
            &old,
            "--fail-on",
            fail_on,
            "--out",
            &out,
        ]);
        (
            run.status.code(),
            String::from_utf8_lossy(&run.stdout).into_owned(),
            String::from_utf8_lossy(&run.stderr).into_owned(),
        )
    };
    let (code, stdout, stderr) = report(&new, "contradiction");
    assert_eq!(code, Some(1), "{stdout}{stderr}");
    assert!(
        stdout.contains(&format!(
            "contradiction: verdict lease-too-short · watchdog × redis-watchdog: {old} 0 of 20 trials violated (95 % 0–16 %); {new} broke at trial 1 (1 of 1 violated, 95 % 21–100 %)\n"
        )),
        "{stdout}"
    );
    assert!(
        stdout.contains("contradiction: breaks under (unexpected) × redis-watchdog: lease-too-short · watchdog: "),
        "{stdout}"
    );
    assert!(
        stdout.contains(&format!("contradictions against {old}: 2 (")),
        "{stdout}"
    );
    assert!(
        stderr.contains("--fail-on contradiction: 2 found"),
        "{stderr}"
    );
    // The same file twice contradicts nothing; nor does a violation against too few trials to say.
    let (code, stdout, stderr) = report(&old, "contradiction");
    assert_eq!(code, Some(0), "{stdout}{stderr}");
    assert!(
        stdout.contains(&format!("contradictions against {old}: 0 (")),
        "{stdout}"
    );
    let few = lease_too_short(
        json!({"runs": 3, "violated": 0, "rate_low": 0.0, "rate_high": 0.5615,
            "stopped_early": false, "each": []}),
        false,
    );
    let few = write(dir.path(), "few.json", &few);
    let run = support::run(&[
        "report",
        &new,
        "--baseline",
        &few,
        "--fail-on",
        "contradiction",
        "--out",
        &out,
    ]);
    assert_eq!(
        run.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&run.stdout)
    );
    // Documented where a user looks.
    let help = String::from_utf8(support::run_ok(&["report", "--help"]).stdout).unwrap();
    assert!(
        help.contains("`contradiction` (with --baseline: a first-screen cell whose two runs"),
        "{help}"
    );
    assert!(help.contains("--fail-on contradiction exits 1"), "{help}");
}
