//! Servers never outlive the process that started them, even when it dies without running
//! destructors, and they do not die with the thread that started them.
#![allow(clippy::unwrap_used)]

mod common;

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use lockbench_servers::RedisServer;

const CHILD_MODE: &str = "LOCKBENCH_TEST_ORPHAN_PARENT";

/// Dead or a zombie waiting for whoever adopted it to reap it.
fn is_dead(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit(')')
            .next()
            .is_some_and(|rest| rest.trim_start().starts_with('Z')),
    }
}

/// In child mode: start a server, report its pid and data dir, and wait to be killed.
#[test]
fn orphan_parent_helper() {
    if std::env::var_os(CHILD_MODE).is_none() {
        return;
    }
    let server = RedisServer::start().unwrap();
    println!("server {} {}", server.pid(), server.data_dir().display());
    std::thread::sleep(Duration::from_secs(30));
}

/// Runs [`orphan_parent_helper`] in a new process; returns it with its server's pid and dir.
fn start_helper() -> (Child, u32, PathBuf) {
    let mut parent = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "orphan_parent_helper",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_MODE, "1")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(parent.stdout.take().unwrap()).lines();
    let report = lines
        .find_map(|line| {
            // libtest may print "test orphan_parent_helper ... " on the same line first.
            line.unwrap()
                .split_once("server ")
                .map(|(_, report)| report.trim().to_owned())
        })
        .expect("helper reports its server");
    let (pid, dir) = report.split_once(' ').unwrap();
    (parent, pid.parse().unwrap(), PathBuf::from(dir))
}

fn wait_dead(pid: u32) {
    let deadline = Instant::now() + Duration::from_secs(5);
    while !is_dead(pid) {
        assert!(
            Instant::now() < deadline,
            "server {pid} outlived its parent"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn servers_die_with_the_process_that_started_them() {
    let (mut parent, pid, dir) = start_helper();
    common::assert_alive(pid);
    assert!(dir.exists());

    parent.kill().unwrap(); // SIGKILL: no destructors run in the parent
    parent.wait().unwrap();
    wait_dead(pid);
    assert!(
        dir.exists(),
        "nobody removed the dead parent's temp dir yet"
    );

    // The next process that starts a server removes the abandoned dir.
    let (mut next, next_pid, next_dir) = start_helper();
    assert!(
        !dir.exists(),
        "abandoned temp dir {} still there",
        dir.display()
    );
    next.kill().unwrap();
    next.wait().unwrap();
    wait_dead(next_pid);
    // Leave nothing behind ourselves.
    std::fs::remove_dir_all(next_dir).unwrap();
}

#[test]
fn servers_outlive_the_thread_that_started_them() {
    let server = std::thread::spawn(|| RedisServer::start().unwrap())
        .join()
        .unwrap();
    std::thread::sleep(Duration::from_millis(200));
    assert!(server.is_running());
    assert_eq!(server.command(&["PING"]).unwrap(), "PONG");
}
