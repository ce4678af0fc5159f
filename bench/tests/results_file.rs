//! The results file: real output validates against the schema derived from the model, the validator
//! can fail, the file round-trips through the model, and Ctrl-C still writes what was measured,
//! marked incomplete.

#![allow(clippy::unwrap_used)]

mod support;

use std::time::{Duration, Instant};

use lockbench_reports::model::{CaseStatus, TrialStop};
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
        "-v",
        "--scenario",
        "baseline",
        "--strategies",
        "memory",
        "--leases",
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

/// A peer case carries its protocol round trip and how its clients were mapped to adapter processes:
/// in tasks mode the clients of an adapter that serves many (the Python and Go ones here) share one
/// process; in processes mode every client has its own.
#[test]
fn a_peer_case_carries_its_protocol_round_trip_and_process_mapping() {
    for workers in ["tasks", "processes"] {
        let results = baseline_second(workers, "py-redis-lock,go-redsync,redis-guard-thread");
        let clients = results.scenario.workload.clients;
        for case in &results.cases {
            let rtt = case.protocol_round_trip_ms;
            let mapping = case.adapter_processes.map(|m| (m.clients, m.processes));
            let shared = workers == "tasks";
            match case.strategy.as_str() {
                "py-redis-lock" | "go-redsync" => {
                    assert!(rtt.is_some_and(|ms| ms > 0.0), "{workers}: {rtt:?}");
                    let processes = if shared { 1 } else { clients };
                    assert_eq!(
                        mapping,
                        Some((clients, processes)),
                        "{workers}: {}",
                        case.strategy
                    );
                }
                _ => {
                    assert_eq!(rtt, None, "{workers}: {}", case.strategy);
                    assert_eq!(mapping, None, "{workers}: {}", case.strategy);
                }
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

/// Runs `lockbench run` on the in-memory strategy with `args` (1 s, no warm-up) and reports it;
/// returns the results and the Markdown report.
fn memory_run_and_report(args: &[&str]) -> (lockbench_reports::Results, String) {
    let dir = tempfile::tempdir().unwrap();
    let mut full = vec![
        "run",
        "--scenario",
        "baseline",
        "--strategies",
        "memory",
        "--duration",
        "1s",
        "--warmup",
        "0s",
        "--no-progress",
        "--out",
        dir.path().to_str().unwrap(),
    ];
    full.extend_from_slice(args);
    let out = support::run_ok(&full);
    let table = String::from_utf8_lossy(&out.stdout).into_owned();
    let results = support::read_results(dir.path());
    support::run_ok(&["report", dir.path().to_str().unwrap()]);
    let md = std::fs::read_to_string(dir.path().join("report.md")).unwrap();
    (results, format!("{table}\n{md}"))
}

#[test]
fn a_case_with_nothing_to_judge_is_never_safe_in_any_table() {
    use lockbench_reports::model::{NoVerdict, Verdict};
    // 20 s tasks in a 1 s case: locks are held, no critical section completes (it used to read
    // "safe, data intact" with completed_writes 0). One client on one key: nobody could overlap.
    for (args, reason, line) in [
        (
            vec!["--task", "20s"],
            NoVerdict::NoCompletedSection,
            "memory under baseline: no critical section completed: locks were held but no write landed",
        ),
        (
            vec!["--clients", "1", "--keys", "1"],
            NoVerdict::NoContention,
            "memory under baseline: no contention: one client per key",
        ),
    ] {
        let (results, text) = memory_run_and_report(&args);
        let c = &results.cases[0];
        assert_eq!(c.status, CaseStatus::Complete, "{:?}", c.error);
        assert!(c.operations.acquired > 0, "{:?}", c.operations);
        assert_eq!(
            c.safety.verdict,
            Verdict::Unknown,
            "{args:?}: {:?}",
            c.safety
        );
        assert_eq!(c.safety.no_verdict, Some(reason));
        assert_eq!(c.safety.data, None, "no data verdict either");
        let word = reason.words();
        // Terminal table, verdict matrix and case table name the reason; never "safe".
        assert!(text.contains(&format!("  {word}\n")), "terminal: {text}");
        assert!(
            text.contains(&format!("| memory | {word} |")),
            "matrix: {text}"
        );
        assert!(text.contains(line), "not measured: {text}");
        assert!(!text.contains("| safe"), "{text}");
        // The legend explains every reason; the scorecard counts the cell apart from safe ones.
        assert!(
            text.contains("\u{201c}no contention\u{201d}: one client per key"),
            "legend: {text}"
        );
        assert!(
            text.contains(&format!(
                "0 of 0 strategy × scenario cells violated in at least one trial: 0 predicted by \
                 theory, 0 unexpected. 1 more cell has no verdict, counted neither safe nor \
                 violated: {word} 1."
            )),
            "scorecard: {text}"
        );
    }
}

/// The worker processes `lockbench` (`parent`) started, in start order.
fn worker_pids(parent: u32) -> Vec<u32> {
    let mut pids: Vec<u32> = std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            let ppid = stat
                .rsplit(')')
                .next()
                .and_then(|rest| rest.split_whitespace().nth(1))
                .and_then(|p| p.parse::<u32>().ok());
            let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            ppid == Some(parent) && cmdline.split(|b| *b == 0).nth(1) == Some(b"worker")
        })
        .collect();
    pids.sort_unstable();
    pids
}

#[test]
fn a_worker_killed_from_outside_fails_its_case_with_no_verdict() {
    use lockbench_reports::model::{NoVerdict, Verdict};
    // Two worker processes; one is SIGKILLed by someone else half a second into the case. It used to
    // leave a scored case ("safe") whose dead worker's last holds were missing from the oracle.
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
            "redis-watchdog",
            "--workers",
            "processes",
            "--clients",
            "2",
            "--keys",
            "1",
            "--duration",
            "2s",
            "--warmup",
            "0s",
            "--no-progress",
            "--out",
            dir.path().to_str().unwrap(),
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    if !lockbench_servers::poll::until(Duration::from_secs(30), || measuring.exists()) {
        let _ = child.kill();
        panic!("the case did not start measuring within 30 s");
    }
    std::thread::sleep(Duration::from_millis(500));
    let workers = worker_pids(child.id());
    assert_eq!(workers.len(), 2, "{workers:?}");
    // SAFETY: kill(2) on a process of this test's own child tree.
    unsafe { libc::kill(workers[1] as i32, libc::SIGKILL) };
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let results = support::read_results(dir.path());
    let c = &results.cases[0];
    assert_eq!(c.status, CaseStatus::Failed, "{stdout}");
    assert_eq!(c.safety.verdict, Verdict::Unknown, "{:?}", c.safety);
    assert_eq!(c.safety.no_verdict, Some(NoVerdict::WorkerDied));
    let error = c.error.as_deref().unwrap_or_default();
    assert!(
        error.starts_with(
            "worker 1 died: killed by signal 9 (SIGKILL); what it reported up to its death is kept"
        ),
        "{error}"
    );
    assert!(error.contains("recovered from the resource"), "{error}");
    // The survivor's work still shows; the verdict column says why there is none.
    assert!(c.operations.completed > 0, "{:?}", c.operations);
    assert!(stdout.contains("  worker died\n"), "{stdout}");
}

/// Whether `pid` still runs (a zombie waiting to be reaped does not).
fn running(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|stat| {
            let state = stat
                .rsplit(')')
                .next()?
                .split_whitespace()
                .next()?
                .to_owned();
            Some(state != "Z" && state != "X")
        })
        .unwrap_or(false)
}

/// Starts a 30 s run of redis-watchdog with two worker processes writing into `out` (and `extra`
/// flags); returns it once it measures, with its worker pids.
fn run_with_worker_processes(
    out: &std::path::Path,
    extra: &[&str],
) -> (std::process::Child, Vec<u32>) {
    let marks = tempfile::tempdir().unwrap();
    let measuring = marks.path().join("measuring");
    let mut child = support::lockbench()
        .env("LOCKBENCH_MEASURING_FILE", &measuring)
        .args([
            "run",
            "--scenario",
            "baseline",
            "--strategies",
            "redis-watchdog",
            "--workers",
            "processes",
            "--clients",
            "2",
            "--keys",
            "1",
            "--duration",
            "30s",
            "--warmup",
            "0s",
            "--no-progress",
            "--out",
            out.to_str().unwrap(),
        ])
        .args(extra)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    if !lockbench_servers::poll::until(Duration::from_secs(30), || measuring.exists()) {
        let _ = child.kill();
        panic!("the case did not start measuring within 30 s");
    }
    // A second of measuring: what the stopped case must keep.
    std::thread::sleep(Duration::from_secs(1));
    let workers = worker_pids(child.id());
    assert_eq!(workers.len(), 2, "{workers:?}");
    (child, workers)
}

#[test]
fn sigterm_writes_what_was_measured_as_ctrl_c_does() {
    // SIGTERM is what `timeout`, systemd, Kubernetes and CI send: it used to exit 143 with no results.
    let dir = tempfile::tempdir().unwrap();
    let (child, workers) = run_with_worker_processes(dir.path(), &[]);
    let began = Instant::now();
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        began.elapsed() < Duration::from_secs(20),
        "stopped promptly"
    );
    assert_eq!(out.status.code(), Some(130), "{stderr}");
    assert!(stderr.contains("terminated (SIGTERM)"), "{stderr}");
    let results = support::read_results(dir.path());
    assert!(!results.complete);
    let c = &results.cases[0];
    assert_eq!(c.status, CaseStatus::Interrupted, "{:?}", c.error);
    assert!(
        c.window.measured_ms > 500.0 && c.window.measured_ms < 20_000.0,
        "{:?}",
        c.window
    );
    assert!(c.operations.completed > 0);
    assert!(
        workers.iter().all(|pid| !running(*pid)),
        "workers outlived the run: {workers:?}"
    );
}

#[test]
fn worker_processes_end_when_their_driver_is_killed_outright() {
    // A driver killed with SIGKILL while a fault starves a worker's runtime (every runtime thread
    // blocked for 20 s): the worker cannot read its stdin's end, and used to live on holding its
    // lock and connections until the starvation ended.
    let dir = tempfile::tempdir().unwrap();
    let (mut child, workers) = run_with_worker_processes(
        dir.path(),
        &[
            "--fault",
            "starve_worker at=0s target=client:0 duration=20s",
        ],
    );
    let _ = child.kill();
    let _ = child.wait();
    let gone = lockbench_servers::poll::until(Duration::from_secs(10), || {
        workers.iter().all(|pid| !running(*pid))
    });
    if !gone {
        for pid in &workers {
            // SAFETY: as above; clean up what the test found.
            unsafe { libc::kill(*pid as i32, libc::SIGKILL) };
        }
    }
    assert!(
        gone,
        "workers still running 10 s after their driver died: {workers:?}"
    );
}

#[test]
fn a_case_stopped_in_its_warm_up_is_never_judged() {
    use lockbench_reports::model::{NoVerdict, Verdict};
    // Its clients ran only the warm-up: no measured window, so no verdict (it used to read safe).
    let dir = tempfile::tempdir().unwrap();
    let child = support::lockbench()
        .args([
            "run",
            "--scenario",
            "baseline",
            "--strategies",
            "memory",
            "--duration",
            "5s",
            "--warmup",
            "10m",
            "--no-progress",
            "--out",
            dir.path().to_str().unwrap(),
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_secs(3));
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(130),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let results = support::read_results(dir.path());
    let c = &results.cases[0];
    assert_eq!(c.window.measured_ms, 0.0);
    assert_eq!(c.safety.verdict, Verdict::Unknown, "{:?}", c.safety);
    assert_eq!(c.safety.no_verdict, Some(NoVerdict::NothingMeasured));
    assert!(c.operations.acquired == 0 && c.throughput.completed_per_s == 0.0);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("nothing measured"), "{stdout}");
}

#[test]
fn an_output_directory_is_never_written_twice() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().to_str().unwrap();
    let args = [
        "run",
        "--strategies",
        "memory",
        "--duration",
        "200ms",
        "--warmup",
        "0s",
        "--no-progress",
        "--out",
        out,
    ];
    support::run_ok(&args);
    let first = std::fs::read(dir.path().join("results.json")).unwrap();
    let again = support::run(&args);
    let err = String::from_utf8_lossy(&again.stderr);
    assert_eq!(again.status.code(), Some(2), "{err}");
    assert!(err.contains("already holds results.json"), "{err}");
    assert_eq!(
        std::fs::read(dir.path().join("results.json")).unwrap(),
        first
    );
    // Another command still writing into a folder holds it (its pid in the marker: here ours).
    let busy = tempfile::tempdir().unwrap();
    std::fs::write(
        busy.path().join(".lockbench-running"),
        std::process::id().to_string(),
    )
    .unwrap();
    let mut taken = args;
    taken[9] = busy.path().to_str().unwrap();
    let refused = support::run(&taken);
    let err = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(2), "{err}");
    assert!(err.contains("another lockbench command (pid"), "{err}");
    assert!(!busy.path().join("results.json").exists());
}

/// A scenario file in `dir` whose one fixed 100 ms lease always expires under 120-160 ms tasks, with
/// `expect` as its `[expect]` table's default.
fn short_lease_scenario(dir: &std::path::Path, expect: &str) -> String {
    let path = dir.join("short-lease.toml");
    std::fs::write(
        &path,
        format!(
            "description = \"a fixed lease shorter than every task\"\n\
             clients = 2\nkeys = 1\ntask = \"uniform 120ms..160ms\"\nleases = [\"fixed:100ms\"]\n\
             acquire_wait = \"2s\"\non_lost = \"ignore\"\nduration = \"600ms\"\nwarmup = \"0s\"\n\
             [expect]\ndefault = {expect}\n"
        ),
    )
    .unwrap();
    path.to_str().unwrap().to_owned()
}

#[test]
fn trials_stop_by_a_rule_they_name_and_a_race_that_always_broke_gets_more() {
    let dir = tempfile::tempdir().unwrap();
    let trials_of = |expect: &str, max: &str, out: &str| {
        let scenario = short_lease_scenario(dir.path(), expect);
        let out = dir.path().join(out);
        support::run_ok(&[
            "run",
            "-s",
            &scenario,
            "--strategies",
            "memory",
            "--trials",
            "3",
            "--max-trials",
            max,
            "--out",
            out.to_str().unwrap(),
        ]);
        let results = support::read_results(&out);
        results.cases[0].trials.clone().expect("pooled trials")
    };
    // Theory calls it a race, yet it broke in all 3 planned trials: that has not shown it is a race,
    // so it runs on until the interval of its rate is narrow (4 of 4: 51-100 %).
    let race = trials_of("{ either = \"called a race for this test\" }", "8", "race");
    assert_eq!((race.violated, race.runs), (4, 4), "{race:?}");
    assert_eq!(race.stopped_by, Some(TrialStop::Narrow), "{race:?}");
    let (low, high) = race.interval().expect("every trial ran, so a rate");
    assert!(high - low <= 0.5, "{low}..{high}");
    // The cap holds: at most 3 trials when --max-trials is 3, and the cap is named as what stopped
    // a case that wanted more.
    let capped = trials_of("{ either = \"called a race\" }", "3", "capped");
    assert_eq!(capped.runs, 3, "{capped:?}");
    assert_eq!(capped.stopped_by, Some(TrialStop::Cap), "{capped:?}");
    // Theory says it holds and it broke every time: the trials agree, no extra ones.
    let agreed = trials_of("\"safe\"", "8", "agreed");
    assert_eq!((agreed.violated, agreed.runs), (3, 3), "{agreed:?}");
    assert_eq!(agreed.stopped_by, Some(TrialStop::Planned), "{agreed:?}");
    assert!(
        agreed.each.iter().all(|t| t.measured_ms == Some(600.0)),
        "each trial keeps its own window: {agreed:?}"
    );
}

#[test]
fn trial_counts_outside_what_a_run_can_do_are_refused() {
    for (args, needle) in [
        (&["--trials", "3", "--max-trials", "2"][..], "--max-trials"),
        (&["--max-trials", "4"][..], "--max-trials"),
        (&["--trials", "101"][..], "--trials"),
        (
            &["--trials", "3", "--max-trials", "101"][..],
            "--max-trials",
        ),
    ] {
        let mut all = vec!["run", "--strategies", "memory"];
        all.extend_from_slice(args);
        let out = support::run(&all);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert_eq!(stderr.trim().lines().count(), 1, "{args:?}: {stderr}");
        assert!(stderr.contains(needle), "{args:?}: {stderr}");
    }
}
