//! `kill_all_servers` reaches every live child. It kills every server of the test process, so
//! it lives in its own test binary with a single test.
#![allow(clippy::unwrap_used)]

mod common;

use std::time::{Duration, Instant};

use lockbench_servers::{EtcdServer, RedisServer, kill_all_servers};

#[test]
fn kill_all_servers_kills_every_live_child() {
    let redis = RedisServer::start().unwrap();
    let etcd = EtcdServer::start().unwrap();
    let already_dead = RedisServer::start().unwrap();
    already_dead.kill().unwrap();

    assert_eq!(
        kill_all_servers(),
        2,
        "the reaped child is no longer registered"
    );
    let deadline = Instant::now() + Duration::from_secs(5);
    while redis.is_running() || etcd.is_running() {
        assert!(Instant::now() < deadline, "servers still running");
        std::thread::sleep(Duration::from_millis(5));
    }
    assert!(redis.command(&["PING"]).is_err());
    assert!(!etcd.is_healthy());
    assert_eq!(kill_all_servers(), 0, "reaped children are unregistered");

    let pids = [redis.pid(), etcd.pid()];
    drop((redis, etcd));
    pids.into_iter().for_each(common::assert_gone);
}
