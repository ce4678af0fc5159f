//! A real PostgreSQL: a fresh server per start, a streaming replica (also through a proxy) that takes
//! over when promoted,
//! and nothing left behind (no process, no data directory) when the handle is dropped.
#![allow(clippy::unwrap_used)]

mod common;

use std::time::{Duration, Instant};

use lockbench_servers::{PostgresPair, Proxy, data_parent};

/// The process ids of the server's own sessions and background processes, as it lists them.
fn backend_pids(server: &lockbench_servers::PostgresServer) -> Vec<u32> {
    server
        .query("SELECT pid FROM pg_stat_activity")
        .unwrap()
        .into_iter()
        .filter_map(|row| row.into_iter().next().flatten()?.parse().ok())
        .collect()
}

#[test]
fn a_pair_replicates_fails_over_and_leaves_nothing_behind() {
    let pair = PostgresPair::start().unwrap();
    let (primary, replica) = (pair.primary(), pair.replica());
    eprintln!(
        "startup postgres: {} ms, pair: {} ms",
        primary.startup().as_millis(),
        replica.startup().as_millis()
    );
    assert!(primary.addr().ip().is_loopback());
    assert!(primary.url().starts_with("postgres://lockbench@127.0.0.1:"));
    assert!(primary.version().starts_with("15"), "{}", primary.version());
    assert!(primary.data_dir().starts_with(data_parent()));
    assert_ne!(primary.addr(), replica.addr());
    // pg_stat_statements is loaded: the statements clients send can be counted.
    primary
        .query("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
        .unwrap();
    primary
        .query("CREATE TABLE t (v int); INSERT INTO t VALUES (7)")
        .unwrap();
    // The replica streams the write; it is read-only until promoted.
    let deadline = Instant::now() + Duration::from_secs(10);
    while replica.query("SELECT v FROM t").is_err() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(
        replica.query("SELECT v FROM t").unwrap(),
        vec![vec![Some("7".to_owned())]]
    );
    // Streamed through a proxy instead (the link a replication lag is put on), it still catches up:
    // the proxy carries the replica's stream.
    let link = Proxy::start(primary.addr()).unwrap();
    pair.replicate_through(link.addr()).unwrap();
    assert_eq!(
        link.connections(),
        1,
        "the replica streams through the proxy"
    );
    primary.query("INSERT INTO t VALUES (9)").unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while replica.query("SELECT count(*) FROM t").unwrap() != vec![vec![Some("2".to_owned())]] {
        assert!(
            Instant::now() < deadline,
            "the write never came through the proxy"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let refused = replica.query("INSERT INTO t VALUES (8)").unwrap_err();
    assert!(refused.to_string().contains("read-only"), "{refused}");
    pair.promote_replica().unwrap();
    replica.query("INSERT INTO t VALUES (8)").unwrap();
    let bad = primary.query("SELECT * FROM no_such_table").unwrap_err();
    assert!(bad.to_string().contains("no_such_table"), "{bad}");

    let mut pids = backend_pids(primary);
    pids.extend(backend_pids(replica));
    pids.extend([primary.pid(), replica.pid()]);
    let dirs = [
        primary.data_dir().to_path_buf(),
        replica.data_dir().to_path_buf(),
    ];
    drop(pair);
    for pid in pids {
        common::assert_gone(pid);
    }
    for dir in dirs {
        assert!(!dir.exists(), "{} left behind", dir.display());
    }
}
