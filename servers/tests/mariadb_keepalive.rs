//! A MariaDB in a network namespace of its own notices a silent partition of one client only by TCP
//! keepalive: the partitioned session (holding a user lock, `GET_LOCK`) ends about
//! `idle + interval × probes` after its last packet, its lock goes to another session that kept
//! working meanwhile, and the namespace, the server and its data directory are gone once the handle
//! is dropped.
#![allow(clippy::unwrap_used)]

mod common;

use std::time::{Duration, Instant};

use lockbench_servers::mariadb::{Session, first_value};
use lockbench_servers::{MariaDbOptions, NamespacedMariaDb};

use common::{KEEPALIVES, assert_namespace_gone, await_keepalive_end, listed_namespaces};

#[test]
fn a_silent_partition_ends_the_session_after_the_keepalive_limit_only() {
    let mariadb = NamespacedMariaDb::start(MariaDbOptions {
        keepalives: Some(KEEPALIVES),
        ..MariaDbOptions::default()
    })
    .unwrap();
    let (server, namespace) = (mariadb.server(), mariadb.namespace());
    assert_eq!(server.addr().ip(), namespace.inner_addr());
    assert!(listed_namespaces().contains(namespace.name()));
    assert_eq!(
        first_value(&server.query("SELECT @@tcp_keepalive_probes").unwrap()).as_deref(),
        Some("2")
    );
    let timeout = Duration::from_secs(10);
    let mut holder = Session::connect(server.addr(), timeout).unwrap();
    let mut other = Session::connect(server.addr(), timeout).unwrap();
    // The server sees the holder as `10.231.x.y:PORT`, this side's end of its connection.
    let me = "SELECT ID, HOST FROM information_schema.PROCESSLIST WHERE ID = CONNECTION_ID()";
    let row = holder.query(me).unwrap().remove(0);
    let (holder_id, host) = (row[0].clone().unwrap(), row[1].clone().unwrap());
    let (ip, port) = host.rsplit_once(':').unwrap();
    assert_eq!(ip, namespace.host_addr().to_string());
    let port: u16 = port.parse().unwrap();
    let got = "SELECT GET_LOCK('k39', 0)";
    assert_eq!(
        first_value(&holder.query(got).unwrap()).as_deref(),
        Some("1")
    );
    // The holder's last packets: the server's keepalive counts its idle time from here.
    let quiet = Instant::now();
    assert_eq!(
        first_value(&other.query(got).unwrap()).as_deref(),
        Some("0")
    );

    // Until the holder's acknowledgement of that reply is out: keepalive runs only on an idle socket
    // (one with a reply unacknowledged is on retransmission, which MariaDB does not bound).
    std::thread::sleep(Duration::from_millis(200));
    let partition = namespace.partition(&[port]).unwrap();
    let began = Instant::now();
    let alive =
        format!("SELECT count(*) FROM information_schema.PROCESSLIST WHERE ID = {holder_id}");
    await_keepalive_end(partition, quiet, began, || {
        // The other session works on throughout (and watches).
        first_value(&other.query(&alive).unwrap()).as_deref() == Some("0")
    });
    assert_eq!(
        first_value(&other.query(got).unwrap()).as_deref(),
        Some("1"),
        "the lock went with the session"
    );
    let log = server.log_tail(20);
    assert!(
        log.contains(&format!("Aborted connection {holder_id} "))
            && log.contains("Got timeout reading communication packets"),
        "{log}"
    );

    let (name, dir, pid) = (
        namespace.name().to_owned(),
        server.data_dir().to_path_buf(),
        server.pid(),
    );
    drop(holder);
    drop(other);
    drop(mariadb);
    assert_namespace_gone(&name, &dir, pid);
}
