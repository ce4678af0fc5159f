//! The safety oracle on real runs: `lease-too-short` must show violations for fixed leases — overlaps
//! and lost updates that agree — and none for watchdog leases; the no-exclusion control must be
//! caught in worker processes too. Every results file written here is checked against the schema.

#![allow(clippy::unwrap_used)]

mod support;

use clap::Parser;
use lockbench::{Cli, Command};
use lockbench_reports::model::{CaseResult, CaseStatus, Verdict};

fn run_args(args: &[&str]) -> lockbench::RunArgs {
    let mut full = vec!["lockbench", "run"];
    full.extend_from_slice(args);
    match Cli::try_parse_from(full).unwrap().command {
        Command::Run(args) => args,
        other => panic!("not a run: {other:?}"),
    }
}

fn case<'a>(cases: &'a [CaseResult], lease: &str) -> &'a CaseResult {
    cases
        .iter()
        .find(|c| c.lease == lease)
        .unwrap_or_else(|| panic!("no {lease} case"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lease_too_short_violates_with_fixed_leases_only() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().to_str().unwrap();
    let outcome = lockbench::run_in_process(run_args(&[
        "--scenario",
        "lease-too-short",
        "--strategies",
        "memory",
        "--duration",
        "3s",
        "--out",
        out,
    ]))
    .await
    .unwrap();
    assert!(outcome.results.complete);
    let written = support::read_results(dir.path());
    let cases = &outcome.results.cases;
    for (file, returned) in written.cases.iter().zip(cases) {
        assert_eq!(file.safety.overlap.pairs, returned.safety.overlap.pairs);
        assert_eq!(file.safety.lost_updates, returned.safety.lost_updates);
    }
    assert_eq!(cases.len(), 2);

    let fixed = case(cases, "fixed:1s");
    let s = &fixed.safety;
    assert_eq!(fixed.status, CaseStatus::Complete);
    assert_eq!(s.verdict, Verdict::Violated);
    assert!(s.overlap.pairs > 0, "{s:?}");
    assert!(s.lost_updates.lost > 0, "{s:?}");
    // Agreement: every lost update needs a holder that read before another's write landed, so it
    // comes with at least one overlapping pair.
    assert!(s.lost_updates.lost <= s.overlap.pairs, "{s:?}");
    assert_eq!(
        s.lost_updates.completed_writes - s.lost_updates.final_counter_sum,
        s.lost_updates.lost
    );
    assert!(s.fencing.enforced);
    assert!(
        s.fencing.stale_accepted.unwrap() > 0,
        "superseded holders wrote: {s:?}"
    );
    assert!(
        s.overlap.unnoticed_pairs > 0,
        "on_lost = ignore: nobody noticed"
    );
    assert!(!s.overlap.examples.is_empty());
    assert!(
        fixed
            .operations
            .release_errors
            .get("not_held")
            .copied()
            .unwrap_or(0)
            > 0,
        "expired leases release as not_held: {:?}",
        fixed.operations
    );

    let watchdog = case(cases, "watchdog");
    let s = &watchdog.safety;
    assert_eq!(watchdog.status, CaseStatus::Complete);
    assert_eq!(s.verdict, Verdict::Safe, "{s:?}");
    assert_eq!((s.overlap.pairs, s.lost_updates.lost), (0, 0));
    assert_eq!(s.fencing.stale_accepted, Some(0));
    assert_eq!(s.fencing.stale_rejected, Some(0));
    assert!(s.lost_updates.completed_writes > 0);
    // 1.2-1.6 s tasks under a 1 s watchdog renewed every 333 ms: renewals happen, with margin left.
    assert!(watchdog.renewal.renewals > 0, "{:?}", watchdog.renewal);
    assert!(
        watchdog.renewal.margin.min_ms.unwrap() > 300.0,
        "{:?}",
        watchdog.renewal.margin
    );
    assert!(watchdog.operations.release_errors.is_empty());
}

#[test]
fn worker_processes_share_the_resource_and_the_oracle_catches_no_exclusion() {
    // The control strategy gives every client its own lock server: nothing is excluded, so three
    // worker processes on one key must collide, through the resource the driver serves.
    let dir = tempfile::tempdir().unwrap();
    support::run_ok(&[
        "run",
        "--strategies",
        "memory-unshared",
        "--workers",
        "processes",
        "--clients",
        "3",
        "--keys",
        "1",
        "--task",
        "20ms",
        "--duration",
        "1500ms",
        "--warmup",
        "0s",
        "--out",
        dir.path().to_str().unwrap(),
    ]);
    let results = support::read_results(dir.path());
    let c = &results.cases[0];
    assert_eq!(c.status, CaseStatus::Complete, "{:?}", c.error);
    assert_eq!(c.client_cost.scope, "worker_processes");
    assert!(c.operations.completed > 20, "{:?}", c.operations);
    assert!(c.safety.overlap.pairs > 0);
    assert!(c.safety.lost_updates.lost > 0);
    assert_eq!(c.safety.verdict, Verdict::Violated);

    // One worker process alone cannot overlap anyone: no verdict (never "safe"), and everything it
    // did reached the driver.
    let dir = tempfile::tempdir().unwrap();
    support::run_ok(&[
        "run",
        "--strategies",
        "memory-unshared",
        "--workers",
        "processes",
        "--clients",
        "1",
        "--keys",
        "2",
        "--task",
        "1ms",
        "--duration",
        "1s",
        "--warmup",
        "0s",
        "--out",
        dir.path().to_str().unwrap(),
    ]);
    let results = support::read_results(dir.path());
    let c = &results.cases[0];
    assert_eq!(c.safety.verdict, Verdict::Unknown, "{:?}", c.safety);
    assert_eq!(
        c.safety.no_verdict,
        Some(lockbench_reports::model::NoVerdict::NoContention)
    );
    assert!(c.operations.completed > 50, "{:?}", c.operations);
    assert_eq!(
        c.safety.lost_updates.completed_writes,
        c.safety.lost_updates.final_counter_sum
    );
    assert!(c.latency.acquire.count >= c.operations.completed);
}
