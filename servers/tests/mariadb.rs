//! A real MariaDB: a fresh server per start that its user logs in to with the password, an
//! asynchronous replica (also through a proxy) that takes writes once promoted, and nothing left
//! behind (no process, no data directory) when the handle is dropped.
#![allow(clippy::unwrap_used)]

mod common;

use std::time::{Duration, Instant};

use lockbench_servers::mariadb::{DATABASE, PASSWORD, USER};
use lockbench_servers::{MariaDbPair, Proxy, data_parent};

/// Rows of `v` in table `t` on `server`, once there are `want` (waits up to 10 s for replication).
fn wait_for_count(server: &lockbench_servers::MariaDbServer, want: &str) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let rows = server.query("SELECT count(*) FROM t");
        if matches!(&rows, Ok(rows) if rows == &vec![vec![Some(want.to_owned())]]) {
            return;
        }
        assert!(Instant::now() < deadline, "never {want} rows: {rows:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_pair_replicates_fails_over_and_leaves_nothing_behind() {
    let pair = MariaDbPair::start().unwrap();
    let (primary, replica) = (pair.primary(), pair.replica());
    eprintln!(
        "startup mariadb: {} ms, replica: {} ms",
        primary.startup().as_millis(),
        replica.startup().as_millis()
    );
    assert!(primary.addr().ip().is_loopback());
    assert_eq!(
        primary.url(),
        format!("mysql://{USER}:{PASSWORD}@{}/{DATABASE}", primary.addr())
    );
    assert!(
        primary.version().starts_with("10."),
        "{}",
        primary.version()
    );
    assert!(primary.data_dir().starts_with(data_parent()));
    assert_ne!(primary.addr(), replica.addr());
    // The user may do what the probes do: read the server's counters and its user locks.
    let status = primary
        .query("SHOW GLOBAL STATUS LIKE 'Questions'")
        .unwrap();
    assert_eq!(status[0][0].as_deref(), Some("Questions"));
    primary
        .query("SELECT count(*) FROM information_schema.METADATA_LOCK_INFO")
        .unwrap();
    primary
        .query("CREATE TABLE t (v int); INSERT INTO t VALUES (7)")
        .unwrap();
    wait_for_count(replica, "1");
    // Replicated through a proxy instead (the link a replication lag is put on), it still catches up.
    let link = Proxy::start(primary.addr()).unwrap();
    pair.replicate_through(link.addr()).unwrap();
    assert_eq!(link.connections(), 1, "the replica reads through the proxy");
    primary.query("INSERT INTO t VALUES (9)").unwrap();
    wait_for_count(replica, "2");
    let refused = replica.query("INSERT INTO t VALUES (8)").unwrap_err();
    assert!(refused.to_string().contains("read-only"), "{refused}");
    pair.promote_replica().unwrap();
    replica.query("INSERT INTO t VALUES (8)").unwrap();
    let bad = primary.query("SELECT * FROM no_such_table").unwrap_err();
    assert!(bad.to_string().contains("no_such_table"), "{bad}");

    let pids = [primary.pid(), replica.pid()];
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

/// A wrong password is refused (the server really checks it).
#[test]
fn a_wrong_password_is_refused() {
    let server = lockbench_servers::MariaDbServer::start().unwrap();
    let rows = server.query("SELECT CURRENT_USER()").unwrap();
    assert_eq!(rows[0][0].as_deref(), Some("lockbench@%"));
    let wrong = server.query(&format!(
        "SET PASSWORD FOR '{USER}'@'%' = PASSWORD('changed')"
    ));
    wrong.unwrap();
    let refused = server.query("SELECT 1").unwrap_err();
    assert!(refused.to_string().contains("Access denied"), "{refused}");
}
