//! Remote workers over TCP (`lockbench run --workers remote` + `lockbench worker --connect`): three
//! worker processes over loopback serve every case of lease-too-short and give the verdicts tasks mode
//! gives; the results say how overlaps were judged; the token never reaches an output; a wrong or
//! missing token is one line and exit 2. Three workers in a network namespace the test creates (a
//! second host, joined by a veth pair; root and iproute2 needed) reach the driver, the resource and
//! Redis only through that link.

#![allow(clippy::unwrap_used)]

mod support;

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use lockbench_reports::model::Verdict;
use lockbench_servers::{NetNamespace, RedisOptions, RedisServer};

const TOKEN: &str = "lockbench-test-worker-token-7f3a";
const CLIENTS: &str = "3";

fn verdicts(results: &lockbench_reports::Results) -> Vec<(String, String, Verdict)> {
    results
        .cases
        .iter()
        .map(|c| (c.strategy.clone(), c.lease.clone(), c.safety.verdict))
        .collect()
}

/// Starts `lockbench worker --connect address`, inside network namespace `netns` when given.
fn worker(address: &str, netns: Option<&str>) -> Child {
    let mut command = match netns {
        Some(netns) => {
            let mut command = Command::new("ip");
            command
                .args(["netns", "exec", netns])
                .arg(support::lockbench().get_program());
            command
        }
        None => support::lockbench(),
    };
    command
        .args(["worker", "--connect", address, "--wait", "3s"])
        .env("LOCKBENCH_WORKER_TOKEN", TOKEN)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Runs lease-too-short with `args` and 3 remote workers (in `netns` when given) listening on
/// `listen`; returns the results, the driver's stderr and the workers' output.
fn run_with_remote_workers(
    args: &[&str],
    listen: &str,
    netns: Option<&str>,
) -> (lockbench_reports::Results, String, String) {
    run_scenario_with_remote_workers("lease-too-short", 3, args, listen, netns)
}

/// Runs `scenario` with `args` and `workers` remote workers (in `netns` when given) listening on
/// `listen`; returns the results, the driver's stderr and the workers' output.
fn run_scenario_with_remote_workers(
    scenario: &str,
    workers: usize,
    args: &[&str],
    listen: &str,
    netns: Option<&str>,
) -> (lockbench_reports::Results, String, String) {
    let dir = tempfile::tempdir().unwrap();
    let mut driver = support::lockbench()
        .args(["run", "--scenario", scenario, "--no-progress"])
        .args(args)
        .args(["--workers", "remote", "--listen", listen, "--out"])
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
    let ip = listen.rsplit_once(':').unwrap().0;
    let address = line
        .split_whitespace()
        .find(|w| w.starts_with(&format!("{ip}:")))
        .unwrap_or_else(|| panic!("no address in {line:?}"))
        .to_owned();
    assert!(!line.contains(TOKEN), "{line}");
    let workers: Vec<Child> = (0..workers).map(|_| worker(&address, netns)).collect();

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
    let results = support::read_results(dir.path());
    let written = std::fs::read_to_string(dir.path().join("results.json")).unwrap();
    assert!(!written.contains(TOKEN), "the token reached the results");
    (results, format!("{line}{rest}"), outputs)
}

#[test]
fn three_tcp_workers_give_the_verdicts_of_tasks_mode() {
    let strategies = "redis-watchdog";
    // 4 s instead of the preset's 10 s: every fixed-lease hold (1.2-1.6 s tasks, 1 s lease) outlives
    // its lease with two clients waiting, so the verdicts are the same, at a third of the time.
    let common = [
        "--strategies",
        strategies,
        "--clients",
        CLIENTS,
        "--duration",
        "4s",
    ];
    let tasks = support::run_scenario("lease-too-short", &common);
    let (remote, driver, outputs) = run_with_remote_workers(&common, "127.0.0.1:0", None);
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
    for (what, text) in [("driver", &driver), ("workers", &outputs)] {
        assert!(!text.contains(TOKEN), "the token reached the {what}");
    }
}

/// An orphaned hold (a task that ends without releasing or dropping its lease) ends where the
/// worker's own report ends it, at the task's end, under either transport: remote workers tell the
/// resource, whose record the oracle judges them by, as worker processes report it. It once stayed
/// open on the resource's record until the case stopped, so the fixed 1 s lease, which frees the
/// orphan's lock under a second later, read violated remotely and safe with worker processes.
#[test]
fn an_orphaned_hold_is_judged_the_same_by_remote_workers_and_worker_processes() {
    let args = ["--strategies", "redis-watchdog"];
    let processes = support::run_scenario(
        "orphaned-holder",
        &["--strategies", "redis-watchdog", "--workers", "processes"],
    );
    let (remote, driver, _) =
        run_scenario_with_remote_workers("orphaned-holder", 2, &args, "127.0.0.1:0", None);
    assert_eq!(verdicts(&remote), verdicts(&processes), "{driver}");
    for case in &remote.cases {
        assert_eq!(case.safety.verdict, Verdict::Safe, "{case:?}");
        assert_eq!(case.safety.overlap.pairs, 0, "{:?}", case.safety);
        // The orphan's end is on the record, so its wait for the next holder is measured too.
        let orphans = case.orphans.as_ref().expect("an orphan");
        assert_eq!(orphans.holds, 1, "{}: {orphans:?}", case.lease);
    }
    let fixed = remote
        .cases
        .iter()
        .find(|c| c.lease.starts_with("fixed"))
        .unwrap();
    let orphans = fixed.orphans.as_ref().unwrap();
    assert_eq!(
        orphans.capped, 0,
        "the fixed lease frees the lock: {orphans:?}"
    );
    // The driver says what the resource's arrival stamps added to the workers' own times.
    assert!(
        driver.contains("remote hold stamps: the resource stamped each hold's begin and end"),
        "{driver}"
    );
    for line in driver.lines().filter(|l| l.contains("remote hold stamps")) {
        eprintln!("{line}");
    }
}

#[test]
fn workers_in_a_network_namespace_reach_everything_through_its_link() {
    let netns = match NetNamespace::create() {
        Ok(netns) => netns,
        // Where the machine allows it: CI (root, iproute2) must; elsewhere say why not.
        Err(why) if std::env::var_os("CI").is_none() => {
            eprintln!(
                "skipped: cannot create a network namespace ({why}); run as root with iproute2"
            );
            return;
        }
        Err(why) => panic!(
            "cannot create a network namespace ({why}): run as root, `apt-get install iproute2`"
        ),
    };
    let host_ip = netns.host_addr().to_string();
    // Redis listens on loopback and on the link, so the workers in the namespace can reach it.
    let redis = RedisServer::start_with(RedisOptions {
        extra: vec![
            ("bind".to_owned(), format!("127.0.0.1 {host_ip}")),
            ("protected-mode".to_owned(), "no".to_owned()),
        ],
        ..RedisOptions::default()
    })
    .unwrap();
    let url = format!("redis://{host_ip}:{}/", redis.addr().port());
    let listen = format!("{host_ip}:0");
    let args = [
        "--strategies",
        "redis-watchdog",
        "--clients",
        CLIENTS,
        "--redis",
        &url,
        "--duration",
        "4s",
    ];
    let (remote, _, _) = run_with_remote_workers(&args, &listen, Some(netns.name()));
    let tasks = support::run_scenario("lease-too-short", &args);
    assert_eq!(verdicts(&remote), verdicts(&tasks));
    for case in &remote.cases {
        assert!(case.operations.completed > 0, "{case:?}");
        assert_eq!(case.client_cost.scope, "remote_workers");
    }
    // Inside the namespace, this host's loopback is not there: the link was the only way.
    let port = redis.addr().port();
    let reach = |ip: &str| {
        Command::new("ip")
            .args(["netns", "exec", netns.name(), "bash", "-c"])
            .arg(format!("exec 3<>/dev/tcp/{ip}/{port}"))
            .stderr(Stdio::null())
            .status()
            .unwrap()
            .success()
    };
    assert!(!reach("127.0.0.1"));
    assert!(reach(&host_ip));
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
