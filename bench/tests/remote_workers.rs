//! Remote workers over loopback TCP (`lockbench run --workers remote` + `lockbench worker --connect`):
//! three worker processes serve every case of lease-too-short and give the verdicts tasks mode gives;
//! the results say how overlaps were judged; the token never reaches an output; a wrong or missing
//! token is one line and exit 2.

#![allow(clippy::unwrap_used)]

mod support;

use std::io::{BufRead, BufReader};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use lockbench_reports::model::Verdict;

const TOKEN: &str = "lockbench-test-worker-token-7f3a";
const CLIENTS: &str = "3";

fn verdicts(results: &lockbench_reports::Results) -> Vec<(String, String, Verdict)> {
    results
        .cases
        .iter()
        .map(|c| (c.strategy.clone(), c.lease.clone(), c.safety.verdict))
        .collect()
}

/// Starts `lockbench worker --connect address`.
fn worker(address: &str) -> Child {
    support::lockbench()
        .args(["worker", "--connect", address, "--wait", "3s"])
        .env("LOCKBENCH_WORKER_TOKEN", TOKEN)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

#[test]
fn three_tcp_workers_give_the_verdicts_of_tasks_mode() {
    let strategies = "redis-watchdog";
    let common = ["--strategies", strategies, "--clients", CLIENTS];
    let tasks = support::run_scenario("lease-too-short", &common);

    let dir = tempfile::tempdir().unwrap();
    let mut driver = support::lockbench()
        .args(["run", "--scenario", "lease-too-short", "--no-progress"])
        .args(common)
        .args(["--workers", "remote", "--listen", "127.0.0.1:0", "--out"])
        .arg(dir.path())
        .env("LOCKBENCH_WORKER_TOKEN", TOKEN)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The driver says where it listens on its first stderr line.
    let mut stderr = BufReader::new(driver.stderr.take().unwrap());
    let mut line = String::new();
    stderr.read_line(&mut line).unwrap();
    let address = line
        .split_whitespace()
        .find(|w| w.starts_with("127.0.0.1:"))
        .unwrap_or_else(|| panic!("no address in {line:?}"))
        .to_owned();
    assert!(!line.contains(TOKEN), "{line}");
    let workers: Vec<Child> = (0..3).map(|_| worker(&address)).collect();

    let deadline = Instant::now() + Duration::from_secs(180);
    let status = loop {
        if let Some(status) = driver.try_wait().unwrap() {
            break status;
        }
        assert!(Instant::now() < deadline, "the driver did not finish");
        std::thread::sleep(Duration::from_millis(200));
    };
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut stderr, &mut rest).unwrap();
    assert!(status.success(), "{line}{rest}");
    let mut outputs = String::new();
    for w in workers {
        let out = w.wait_with_output().unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        outputs.push_str(&String::from_utf8_lossy(&out.stdout));
        outputs.push_str(&String::from_utf8_lossy(&out.stderr));
    }

    let remote = support::read_results(dir.path());
    assert_eq!(remote.scenario.workload.workers, "remote");
    assert_eq!(verdicts(&remote), verdicts(&tasks));
    let fixed = remote
        .cases
        .iter()
        .find(|c| c.lease.starts_with("fixed"))
        .unwrap();
    assert_eq!(fixed.safety.verdict, Verdict::Violated, "{fixed:?}");
    for case in &remote.cases {
        assert_eq!(case.client_cost.scope, "remote_workers");
        assert!(case.client_cost.cpu_seconds > 0.0, "{:?}", case.client_cost);
        assert!(case.operations.completed > 0);
    }
    let written = std::fs::read_to_string(dir.path().join("results.json")).unwrap();
    for (what, text) in [
        ("results", &written),
        ("driver", &rest),
        ("workers", &outputs),
    ] {
        assert!(!text.contains(TOKEN), "the token reached the {what}");
    }
}

#[test]
fn a_missing_or_wrong_token_is_one_line_and_exit_2() {
    let out = support::lockbench()
        .args([
            "run",
            "--strategies",
            "redis-watchdog",
            "--workers",
            "remote",
        ])
        .env_remove("LOCKBENCH_WORKER_TOKEN")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("LOCKBENCH_WORKER_TOKEN"), "{stderr}");

    // A worker with another token is refused by a driver.
    let mut driver = support::lockbench()
        .args([
            "run",
            "--no-progress",
            "--scenario",
            "baseline",
            "--strategies",
        ])
        .args([
            "redis-watchdog",
            "--workers",
            "remote",
            "--listen",
            "127.0.0.1:0",
        ])
        .env("LOCKBENCH_WORKER_TOKEN", TOKEN)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(driver.stderr.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let address = line
        .split_whitespace()
        .find(|w| w.starts_with("127.0.0.1:"))
        .unwrap()
        .to_owned();
    let out = support::lockbench()
        .args(["worker", "--connect", &address, "--wait", "2s"])
        .env("LOCKBENCH_WORKER_TOKEN", "another-token-of-enough-length")
        .output()
        .unwrap();
    let _ = driver.kill();
    let _ = driver.wait();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("refused"), "{stderr}");
    assert!(!stderr.contains("another-token"), "{stderr}");
}
