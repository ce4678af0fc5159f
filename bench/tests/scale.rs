//! `lockbench scale` through the built binary, against a redis-server it starts itself: each strategy in
//! its own child process, the scale file written and readable, the batched watchdog's renew calls at
//! the ⌈held ÷ chunk⌉ per period the design promises, the raw sender beside it making the same calls,
//! guard threads stopped by the thread cap with the reason recorded, bad input rejected with exit
//! code 2, SIGTERM mid-run ending it with the file written, marked incomplete, and exit code 130, and
//! `valkey-ifeq` on a Valkey it starts.
#![allow(clippy::unwrap_used)]

mod support;

use lockbench_reports::scale::ScaleResults;
use lockbench_reports::schema;

fn scale(
    args: &[&str],
) -> (
    std::process::Output,
    Option<ScaleResults>,
    tempfile::TempDir,
) {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().to_str().unwrap().to_owned();
    let mut argv = vec!["scale", "--out", &out];
    argv.extend_from_slice(args);
    let output = support::run(&argv);
    let results = std::fs::read_to_string(dir.path().join("scale.json"))
        .ok()
        .map(|text| {
            let doc = serde_json::from_str(&text).unwrap();
            let errors = schema::validate(&schema::scale(), &doc);
            assert!(
                errors.is_empty(),
                "scale.json violates the schema: {errors:?}"
            );
            ScaleResults::from_json(&text).unwrap()
        });
    (output, results, dir)
}

#[test]
fn batched_renewal_and_the_guard_thread_cap() {
    let (output, results, _dir) = scale(&[
        "--strategies",
        "redis-watchdog-batched,redis-guard-thread",
        "--steps",
        "150,400",
        "--hold",
        "2s",
        "--watchdog-timeout",
        "900ms",
        "--max-threads",
        "300",
    ]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let results = results.unwrap();
    assert!(results.complete);
    assert_eq!(results.strategies.len(), 3);

    let batched = &results.strategies[0];
    assert_eq!(batched.strategy, "redis-watchdog-batched");
    assert!(batched.stopped.is_none(), "{:?}", batched.stopped);
    assert_eq!(batched.points.len(), 2);
    for point in &batched.points {
        assert_eq!(point.held_at_end, point.held_locks);
        assert_eq!(point.lost, 0);
        // ⌈held ÷ 100⌉ calls every 300 ms, give or take the tick at a window edge.
        let bound = point.renew_calls_bound_per_s.unwrap();
        let calls = point.renew_calls_per_s.unwrap();
        assert!(
            calls <= bound * 1.2 && calls >= bound * 0.6,
            "{calls} renew calls/s against a bound of {bound}"
        );
        // Every lock is renewed about once per period.
        let per_lock = point.renewals_per_s / point.held_locks as f64;
        assert!(
            (2.0..4.5).contains(&per_lock),
            "{per_lock} renewals per lock per second"
        );
        assert!(point.server_cpu_ms_per_s.is_some());
        assert!(point.client_threads < 50, "{}", point.client_threads);
    }

    // The raw sender, measured beside the batched strategy: the same calls for the same locks.
    let raw = &results.strategies[1];
    assert_eq!(raw.strategy, "raw-batch-sender");
    assert!(raw.stopped.is_none(), "{:?}", raw.stopped);
    assert_eq!(raw.locks_per_renew_call, Some(100));
    for (point, beside) in raw.points.iter().zip(&batched.points) {
        assert_eq!(point.held_locks, beside.held_locks);
        assert_eq!(point.held_at_end, point.held_locks);
        assert_eq!((point.lost, point.renew_failures), (0, 0));
        let bound = point.renew_calls_bound_per_s.unwrap();
        let calls = point.renew_calls_per_s.unwrap();
        assert!(
            calls <= bound * 1.2 && calls >= bound * 0.6,
            "raw: {calls} renew calls/s against a bound of {bound}"
        );
        let per_lock = point.renewals_per_s / point.held_locks as f64;
        assert!((2.0..4.5).contains(&per_lock), "raw: {per_lock}");
        // The same TTL, renewed as often: a margin above ⅔ of 900 ms, reported with its p0.1.
        let (least, p0_1) = (
            point.thinnest_margin_ms.unwrap(),
            point.margin_p0_1_ms.unwrap(),
        );
        assert!(least <= p0_1 && p0_1 <= 900.0, "{least} {p0_1}");
    }
    assert_eq!(raw.points.len(), 2);
    assert!(stdout.contains("raw-batch-sender"), "{stdout}");

    let guard = &results.strategies[2];
    assert_eq!(guard.strategy, "redis-guard-thread");
    let stop = guard.stopped.as_ref().unwrap();
    assert!(stop.reason.contains("thread cap 300"), "{}", stop.reason);
    assert_eq!(stop.step, 400);
    // The first step was reached and measured, and the locks held at the cap were measured too.
    assert_eq!(guard.points.len(), 2);
    assert_eq!(guard.points[0].held_locks, 150);
    assert!(guard.points[0].client_threads >= 150);
    assert!((150..400).contains(&guard.points[1].held_locks));
    assert!(
        stdout.contains("redis-guard-thread: stopped at"),
        "{stdout}"
    );
    assert!(stdout.contains("targets (docs/design.md §8)"), "{stdout}");
}

#[test]
fn bad_input_is_one_line_and_exit_code_2() {
    for args in [
        &["--steps", "100,50"][..],
        &["--hold", "forever"],
        &["--strategies", "redis-nope"],
        &["--concurrency", "0"],
        &["--passes", "0"],
    ] {
        let (output, results, _dir) = scale(args);
        assert_eq!(output.status.code(), Some(2), "{args:?}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
        assert!(stderr.starts_with("lockbench: --"), "{stderr}");
        assert!(results.is_none());
    }
}

/// The process ids whose parent is `parent`, from /proc.
fn children_of(parent: u32) -> Vec<u32> {
    let mut children = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let stat = std::fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
        // The fields after the command's closing parenthesis: state, then the parent's pid.
        let ppid = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().nth(1))
            .and_then(|p| p.parse::<u32>().ok());
        if ppid == Some(parent) {
            children.push(pid);
        }
    }
    children
}

/// Whether process `pid` is gone (or only a zombie no one has reaped yet).
fn gone(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
    }
}

/// SIGTERM while a strategy holds its locks: the scale run stops its load, starts no other strategy,
/// writes scale.json marked incomplete with the stop recorded, and exits 130; no worker process of it
/// is left running, and none had a server address on its command line. Once with each strategy in its
/// own worker process (the default), once in-process.
#[test]
fn sigterm_mid_run_writes_what_was_measured_and_exits_130() {
    use std::io::BufRead as _;
    use std::process::Stdio;
    use std::time::{Duration, Instant};
    for in_process in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let mut argv = vec![
            "scale",
            "--out",
            dir.path().to_str().unwrap(),
            "--strategies",
            "memory,redis-watchdog-batched",
            "--steps",
            "50,100",
            "--hold",
            "60s",
            "--watchdog-timeout",
            "1s",
        ];
        if in_process {
            argv.push("--in-process");
        }
        let mut child = support::lockbench()
            .args(&argv)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let pid = child.id();
        // stderr names each strategy as it starts: wait for the first, then let it fill its step.
        let (lines, started) = std::sync::mpsc::channel();
        let stderr = child.stderr.take().unwrap();
        let reader = std::thread::spawn(move || {
            let mut all = String::new();
            for line in std::io::BufReader::new(stderr)
                .lines()
                .map_while(Result::ok)
            {
                if line.starts_with("lockbench scale: memory") {
                    let _ = lines.send(());
                }
                all.push_str(&line);
                all.push('\n');
            }
            all
        });
        let stdout = child.stdout.take().unwrap();
        let printed = std::thread::spawn(move || std::io::read_to_string(stdout).unwrap());
        started
            .recv_timeout(Duration::from_secs(120))
            .expect("the first strategy started");
        std::thread::sleep(Duration::from_secs(3));
        let workers = children_of(pid);
        if !in_process {
            assert!(!workers.is_empty(), "no worker process found");
        }
        // A worker is told its job and its servers over its input: no address on its command line.
        let mut own = 0;
        for worker in &workers {
            let line = std::fs::read(format!("/proc/{worker}/cmdline")).unwrap_or_default();
            let line = String::from_utf8_lossy(&line);
            let words: Vec<&str> = line.split('\0').filter(|w| !w.is_empty()).collect();
            // The servers lockbench started are its children too.
            if words.first().is_some_and(|w| w.ends_with("/lockbench")) {
                own += 1;
                assert_eq!(words[1..], ["worker"], "{words:?}");
            }
        }
        assert_eq!(own > 0, !in_process, "{workers:?}");
        // SAFETY: kill(2) has no memory-safety preconditions; `pid` is our child, not yet reaped.
        unsafe { libc::kill(pid as i32, libc::SIGTERM) };
        let began = Instant::now();
        let status = loop {
            if let Some(status) = child.try_wait().unwrap() {
                break status;
            }
            if began.elapsed() > Duration::from_secs(90) {
                let _ = child.kill();
                panic!("scale did not stop within 90 s of SIGTERM");
            }
            std::thread::sleep(Duration::from_millis(100));
        };
        let stderr = reader.join().unwrap();
        let stdout = printed.join().unwrap();
        assert_eq!(status.code(), Some(130), "{stderr}\n{stdout}");
        assert!(!stderr.contains("panicked"), "{stderr}");
        assert!(stdout.contains("results: "), "{stdout}");
        for worker in workers {
            let deadline = Instant::now() + Duration::from_secs(10);
            while !gone(worker) && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(100));
            }
            assert!(gone(worker), "worker process {worker} left running");
        }
        let text = std::fs::read_to_string(dir.path().join("scale.json")).unwrap();
        let doc = serde_json::from_str(&text).unwrap();
        let errors = schema::validate(&schema::scale(), &doc);
        assert!(errors.is_empty(), "{errors:?}");
        let results = ScaleResults::from_json(&text).unwrap();
        assert!(!results.complete, "in process: {in_process}");
        let names: Vec<&str> = results
            .strategies
            .iter()
            .map(|s| s.strategy.as_str())
            .collect();
        assert_eq!(names, ["memory"], "the second strategy must not start");
        let stop = results.strategies[0].stopped.as_ref().expect("a stop");
        assert!(stop.reason.contains("interrupted"), "{stop:?}");
        assert_eq!(
            stop.step, 50,
            "stopped in the first step's 60 s window: {stop:?}"
        );
    }
}

/// `--passes 3`: every strategy holds its steps three times, each a fresh client; scale.json records
/// the passes (the first in the series' points, the others in its repeats, the count in the
/// settings), and the table ends with what each strategy's passes came to.
#[test]
fn passes_repeat_every_strategy_and_are_recorded() {
    let (output, results, _dir) = scale(&[
        "--strategies",
        "redis-watchdog,redis-guard-thread",
        "--steps",
        "100",
        "--hold",
        "300ms",
        "--watchdog-timeout",
        "900ms",
        "--passes",
        "3",
    ]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    let results = results.unwrap();
    assert!(results.complete);
    assert_eq!(results.settings.passes, 3);
    assert_eq!(results.strategies.len(), 2);
    for series in &results.strategies {
        assert_eq!(series.repeats.len(), 2, "{}", series.strategy);
        for points in
            std::iter::once(&series.points).chain(series.repeats.iter().map(|p| &p.points))
        {
            assert_eq!(points.len(), 1, "{}", series.strategy);
            assert_eq!(points[0].held_locks, 100);
        }
        assert!(
            stdout.contains(&format!("  {}: held 100 in 3 of 3 passes", series.strategy)),
            "{stdout}"
        );
    }
    // The first pass of every strategy before the second of any.
    let order: Vec<&str> = stderr
        .lines()
        .filter_map(|l| l.strip_prefix("lockbench scale: "))
        .collect();
    assert_eq!(
        order,
        [
            "redis-watchdog (pass 1 of 3) …",
            "redis-guard-thread (pass 1 of 3) …",
            "redis-watchdog (pass 2 of 3) …",
            "redis-guard-thread (pass 2 of 3) …",
            "redis-watchdog (pass 3 of 3) …",
            "redis-guard-thread (pass 3 of 3) …",
        ],
        "{stderr}"
    );
}

/// `valkey-ifeq` on the Valkey scale starts: its locks counted on the server, and its renewals (one
/// `SET … IFEQ` each, no script) counted as `SET` calls, once per lock per period; a Redis row's
/// Valkey twin beside it, counted as on Redis.
#[test]
fn valkey_ifeq_renewals_are_counted_as_its_set_calls() {
    let (output, results, _dir) = scale(&[
        "--strategies",
        "valkey-ifeq,redis-watchdog~valkey",
        "--steps",
        "100",
        "--hold",
        "1s",
        "--watchdog-timeout",
        "900ms",
    ]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    let results = results.unwrap();
    let servers = &results.environment.servers;
    assert!(servers.iter().any(|s| s.kind == "valkey"), "{servers:?}");
    assert_eq!(results.strategies.len(), 2);
    for series in &results.strategies {
        let point = &series.points[0];
        assert_eq!(point.server_held, Some(100), "{}", series.strategy);
        let (calls, bound) = (point.renew_calls_per_s, point.renew_calls_bound_per_s);
        let (calls, bound) = (calls.unwrap(), bound.unwrap());
        assert!(
            calls <= bound * 1.2 && calls >= bound * 0.6,
            "{}: {calls} renew calls/s against a bound of {bound}",
            series.strategy
        );
    }
}
