//! The results format has one source, the model types: the schemas generated from them must equal the
//! committed files in `reports/schema/` (a golden-file test), and real files lockbench wrote
//! (`tests/fixtures/`) must validate against them — as read, and as this version writes them back.
//!
//! After a deliberate change to the model (a field, a doc comment, a schemars attribute), regenerate
//! the committed schemas and review the diff:
//!
//! ```text
//! UPDATE_GOLDEN=1 cargo test -p lockbench-reports --test schema
//! ```

#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};

use lockbench_reports::Comparison;
use lockbench_reports::model::Results;
use lockbench_reports::scale::ScaleResults;
use lockbench_reports::schema::{self, validate};
use serde_json::{Value, json};

/// `lockbench compare --quick`: three scenarios, a run file each.
const COMPARISON: &str = include_str!("fixtures/compare-quick.json");
/// `lockbench run` of redis-watchdog under a watchdog and a fixed lease, with worker processes and a
/// `pause_worker` fault.
const RUN: &str = include_str!("fixtures/run-redis-watchdog.json");
/// `lockbench scale` of redis-watchdog-batched and redis-guard-thread (stopped by its thread cap).
const SCALE: &str = include_str!("fixtures/scale-redis.json");

fn committed(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("schema")
        .join(name)
}

fn json(text: &str) -> Value {
    serde_json::from_str(text).unwrap()
}

fn assert_valid(schema: &Value, doc: &Value, what: &str) {
    let errors = validate(schema, doc);
    assert!(
        errors.is_empty(),
        "{what} violates its schema:\n{}",
        errors.join("\n")
    );
}

#[test]
fn generated_schemas_equal_the_committed_files() {
    let update = std::env::var_os("UPDATE_GOLDEN").is_some_and(|v| !v.is_empty() && v != "0");
    for (name, generate) in schema::FILES {
        let path = committed(name);
        let generated = schema::to_text(&generate());
        if update {
            std::fs::write(&path, &generated).unwrap();
            continue;
        }
        let on_disk = std::fs::read_to_string(&path).unwrap_or_default();
        if on_disk != generated {
            let line = on_disk
                .lines()
                .zip(generated.lines())
                .position(|(a, b)| a != b)
                .unwrap_or_else(|| on_disk.lines().count().min(generated.lines().count()));
            panic!(
                "{} is not the schema the model generates (first difference at line {}: committed \
                 {:?}, generated {:?}); regenerate with \
                 `UPDATE_GOLDEN=1 cargo test -p lockbench-reports --test schema` and review the diff",
                path.display(),
                line + 1,
                on_disk.lines().nth(line).unwrap_or("<end>"),
                generated.lines().nth(line).unwrap_or("<end>"),
            );
        }
    }
    if update {
        return;
    }
    // The constants the crate exports are those files (compiled in before an update, so not then).
    assert!(
        lockbench_reports::SCHEMA == schema::to_text(&schema::results()),
        "lockbench_reports::SCHEMA is not reports/schema/results.schema.json"
    );
    assert!(
        lockbench_reports::COMPARISON_SCHEMA == schema::to_text(&schema::comparison()),
        "lockbench_reports::COMPARISON_SCHEMA is not reports/schema/comparison.schema.json"
    );
}

#[test]
fn written_files_validate_as_read_and_as_written_back() {
    let results = schema::results();
    let comparison = schema::comparison();
    assert_valid(&comparison, &json(COMPARISON), "compare-quick.json");
    for run in json(COMPARISON)["runs"].as_array().unwrap() {
        assert_valid(&results, &run["results"], "a run of compare-quick.json");
    }
    assert_valid(&results, &json(RUN), "run-redis-watchdog.json");
    assert_valid(&schema::scale(), &json(SCALE), "scale-redis.json");

    // What this version writes validates too, older files' missing fields filled in.
    let read = Comparison::read(COMPARISON).unwrap();
    assert_valid(
        &comparison,
        &json(&read.to_json()),
        "a comparison written back",
    );
    let run = Results::from_json(RUN).unwrap();
    assert_valid(&results, &json(&run.to_json()), "a run written back");
    let single = Comparison::of_run(run);
    assert_valid(
        &comparison,
        &json(&single.to_json()),
        "a run as a comparison",
    );
    let scale = ScaleResults::from_json(SCALE).unwrap();
    assert_valid(
        &schema::scale(),
        &json(&scale.to_json()),
        "a scale file written back",
    );
}

#[test]
fn the_schema_rejects_what_this_version_would_not_write() {
    let schema = schema::results();
    let base = json(RUN);
    let errors_after = |change: &dyn Fn(&mut Value)| {
        let mut doc = base.clone();
        change(&mut doc);
        validate(&schema, &doc)
    };
    let has = |errors: Vec<String>, text: &str| {
        assert!(
            errors.iter().any(|e| e.contains(text)),
            "{text:?} not in {errors:?}"
        );
    };
    has(
        errors_after(&|d| d["schema_version"] = json!(2)),
        "$.schema_version: expected 1, got 2",
    );
    // An `Option` is written as null, so it is required; a field older files lack is not.
    has(
        errors_after(&|d| {
            d["cases"][0]["latency"]["acquire"]
                .as_object_mut()
                .unwrap()
                .remove("p99_ms");
        }),
        "$.cases[0].latency.acquire: missing required p99_ms",
    );
    assert!(
        errors_after(&|d| {
            d["cases"][0].as_object_mut().unwrap().remove("faults");
            d["cases"][0]["safety"]["fencing"]
                .as_object_mut()
                .unwrap()
                .remove("token_regressions");
        })
        .is_empty(),
        "fields added after the first files of this version stay optional"
    );
    has(
        errors_after(&|d| d["cases"][0]["window"]["extra_ms"] = json!(1.0)),
        "$.cases[0].window.extra_ms: not allowed by the schema",
    );
    has(
        errors_after(&|d| d["cases"][0]["status"] = json!("done")),
        "$.cases[0].status: \"done\" matches 0 of oneOf",
    );
    has(
        errors_after(&|d| d["scenario"]["workload"]["workers"] = json!("threads")),
        "$.scenario.workload.workers: \"threads\" is not one of",
    );
    has(
        errors_after(&|d| d["scenario"]["workload"]["clients"] = json!(0)),
        "$.scenario.workload.clients: 0 is below the minimum 1",
    );
    has(
        errors_after(&|d| d["scenario"]["workload"]["leases"] = json!([])),
        "$.scenario.workload.leases: fewer than 1 items",
    );
    has(
        errors_after(&|d| d["cases"][0]["histograms"]["acquire"] = json!(12)),
        "$.cases[0].histograms.acquire: expected [\"string\"], got 12",
    );
    has(
        errors_after(&|d| d["cases"][0]["server_cost"] = json!("none")),
        "$.cases[0].server_cost: \"none\" matches none of anyOf",
    );
    // A keyword the validator does not know is an error, not a silent pass.
    has(
        validate(&json!({"type": "string", "pattern": "^a"}), &json!("b")),
        "unsupported schema keyword pattern",
    );
}
