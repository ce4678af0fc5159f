//! A PostgreSQL in a network namespace of its own notices a silent partition of one client only by TCP
//! keepalive: the partitioned session (holding an advisory lock) ends about `idle + interval × count`
//! after its last packet, its lock goes to another session that kept working meanwhile, and the
//! namespace, the server and its data directory are gone once the handle is dropped (a namespace
//! left by a dead process is removed by the next start).
#![allow(clippy::unwrap_used)]

mod common;

use std::process::Command;
use std::time::{Duration, Instant};

use lockbench_servers::postgres::{DATABASE, Session, first_value};
use lockbench_servers::{NamespacedPostgres, PostgresOptions};

use common::{KEEPALIVES, assert_namespace_gone, await_keepalive_end, listed_namespaces};

#[test]
fn a_silent_partition_ends_the_session_after_the_keepalive_limit_only() {
    // Left by a run killed before its destructors ran (no such process): removed by the next start.
    let stale = "lockbench-999999999-1-0";
    assert!(
        Command::new("ip")
            .args(["netns", "add", stale])
            .status()
            .unwrap()
            .success()
    );
    assert_eq!(KEEPALIVES.limit(), Duration::from_secs(3));
    let postgres = NamespacedPostgres::start(PostgresOptions {
        keepalives: Some(KEEPALIVES),
        ..PostgresOptions::default()
    })
    .unwrap();
    let (server, namespace) = (postgres.server(), postgres.namespace());
    assert_eq!(server.addr().ip(), namespace.inner_addr());
    assert!(
        !listed_namespaces().contains(stale),
        "{}",
        listed_namespaces()
    );
    assert!(listed_namespaces().contains(namespace.name()));
    assert_eq!(
        first_value(&server.query("SHOW tcp_keepalives_count").unwrap()).as_deref(),
        Some("2")
    );
    let timeout = Duration::from_secs(10);
    let mut holder = Session::connect(server.addr(), DATABASE, timeout).unwrap();
    let mut other = Session::connect(server.addr(), DATABASE, timeout).unwrap();
    let holder_pid = first_value(&holder.query("SELECT pg_backend_pid()").unwrap()).unwrap();
    holder.query("SELECT pg_advisory_lock(39)").unwrap();
    // The holder's last packets (its request, then the acknowledgement of the reply): the server's
    // keepalive counts its idle time from here, not from the partition.
    let quiet = Instant::now();
    let taken = "SELECT pg_try_advisory_lock(39)";
    assert_eq!(
        first_value(&other.query(taken).unwrap()).as_deref(),
        Some("f")
    );

    // Until the holder's acknowledgement of that reply is out: keepalive runs only on an idle socket
    // (one with a reply unacknowledged is on retransmission, which tcp_user_timeout bounds instead).
    std::thread::sleep(Duration::from_millis(200));
    let partition = namespace
        .partition(&[holder.local_port().unwrap()])
        .unwrap();
    let began = Instant::now();
    let alive = format!("SELECT count(*) FROM pg_stat_activity WHERE pid = {holder_pid}");
    await_keepalive_end(partition, quiet, began, || {
        // The other session works on throughout.
        assert_eq!(
            first_value(&other.query("SELECT 1").unwrap()).as_deref(),
            Some("1")
        );
        first_value(&server.query(&alive).unwrap()).as_deref() == Some("0")
    });
    assert_eq!(
        first_value(&other.query(taken).unwrap()).as_deref(),
        Some("t"),
        "the lock went with the session"
    );
    assert!(
        server
            .log_tail(50)
            .contains("could not receive data from client: Connection timed out"),
        "{}",
        server.log_tail(50)
    );

    let (name, dir, pid) = (
        namespace.name().to_owned(),
        server.data_dir().to_path_buf(),
        server.pid(),
    );
    drop(holder);
    drop(other);
    drop(postgres);
    assert_namespace_gone(&name, &dir, pid);
}
