//! The Redisson peers (Redisson's `RLock` 3.43.0, 3.52.0 and 4.7.0, `adapters/jvm/RedissonAdapter.java`)
//! on a real redis-server: a conformance subset per row (mutual exclusion, a fixed lease's expiry,
//! release, re-entry per owner), one adapter process (one JVM) per client, one redis-server for the file.
//! Redisson declares no lost signal, so no case removes a lock behind its holder's back.
#![allow(clippy::unwrap_used)]

use std::sync::LazyLock;
use std::time::Duration;

use lockbench_servers::RedisServer;

#[path = "support/peers.rs"]
mod peers;

use peers::{Peer, spec};

/// The file's redis-server (each case uses keys of its own).
static SERVER: LazyLock<RedisServer> = LazyLock::new(|| RedisServer::start().unwrap());

fn redisson(id: &str) -> Peer<&'static RedisServer> {
    let server = tokio::task::block_in_place(|| LazyLock::force(&SERVER));
    Peer {
        spec: spec(id),
        servers: vec![server.url()],
        // The scaled timeouts (100 ms and 20 ms at this TTL) are passed now and then on a loaded test
        // machine, where a JVM may stall for a second; acquires are not retried. The cases test the
        // lock, so they run with Redisson's default timeouts and a 2 s watchdog.
        settings: vec![
            ("timeout_ms".into(), "3000".into()),
            ("retry_interval_ms".into(), "1500".into()),
        ],
        watchdog: Duration::from_secs(2),
        short_lease: Duration::from_millis(600),
        // A JVM waiter woken by the unlock message can be slow on a loaded machine.
        slack: Duration::from_millis(800),
        fixed_for_watchdog: None,
        remove: Box::new(|_| unreachable!("Redisson declares no lost_signal")),
        _server: server,
    }
}

mod jvm_redisson_3_43 {
    use super::*;

    lockers::conformance_tests!(@cases redisson("jvm-redisson-3.43");
        mutual_exclusion, release_then_reacquire, fixed_lease_expires, reentrant_acquire_and_release);
}

mod jvm_redisson {
    use super::*;

    lockers::conformance_tests!(@cases redisson("jvm-redisson");
        mutual_exclusion, release_then_reacquire, fixed_lease_expires, reentrant_acquire_and_release);
}

mod jvm_redisson_4 {
    use super::*;

    lockers::conformance_tests!(@cases redisson("jvm-redisson-4");
        mutual_exclusion, release_then_reacquire, fixed_lease_expires, reentrant_acquire_and_release);
}

/// jvm-curator declares a lost signal, and keeps the protocol's order: while the ZooKeeper server is
/// frozen past the session timeout, the holder's lease is lost (Curator's connection state LOST), and a
/// client whose acquire is still waiting gets no event about that unfinished lease (PROTOCOL.md: events
/// only after the reply that granted the lease). The waiting client is driven line by line, so any event
/// it sends is seen.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn curator_loses_held_leases_and_sends_nothing_for_pending_ones() {
    use std::io::{BufRead, BufReader, Write};
    use std::process::{Command, Stdio};

    use lockbench_servers::ZkServer;
    use lockers::peer::catalog;
    use lockers::{AcquireOptions, Events, Locker};

    let session = Duration::from_secs(1);
    let server = ZkServer::start().unwrap();
    let curator = Peer {
        spec: spec("jvm-curator"),
        servers: vec![server.connect_string()],
        settings: Vec::new(),
        watchdog: session,
        short_lease: session,
        slack: Duration::from_millis(800),
        fixed_for_watchdog: None,
        remove: Box::new(|_| unreachable!()),
        _server: (),
    };
    let holder = curator.start(Events::none()).await;
    let lease = holder
        .acquire("pending", &AcquireOptions::try_once())
        .await
        .unwrap();

    let command = curator.spec.command(&catalog::adapters_dir()).unwrap();
    let mut waiter = Command::new(&command.program)
        .args(&command.args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = waiter.stdin.take().unwrap();
    let (lines, received) = std::sync::mpsc::channel::<String>();
    let stdout = BufReader::new(waiter.stdout.take().unwrap());
    std::thread::spawn(move || {
        for line in stdout.lines().map_while(Result::ok) {
            if lines.send(line).is_err() {
                break;
            }
        }
    });
    let hello = serde_json::json!({"id": 1, "op": "hello", "protocol": 1, "config": {
        "servers": [server.connect_string()], "session_timeout_ms": session.as_millis().to_string()}});
    let acquire = serde_json::json!({"id": 2, "op": "acquire", "key": "pending", "wait_ms": 8000,
        "owner": "w", "lease": {"mode": "watchdog", "ttl_ms": session.as_millis()}});
    writeln!(stdin, "{hello}").unwrap();
    let first = received.recv_timeout(Duration::from_secs(30)).unwrap();
    assert!(first.contains(r#""ok":true"#), "hello: {first}");
    writeln!(stdin, "{acquire}").unwrap();
    std::thread::sleep(Duration::from_millis(500));

    server.pause().unwrap();
    tokio::time::sleep(session * 3).await;
    let holder_lost = tokio::time::timeout(Duration::from_millis(1), lease.lost())
        .await
        .is_ok();
    server.resume().unwrap();
    // Whatever the waiter sends until its acquire is answered (or its wait runs out).
    let mut before_reply = Vec::new();
    while let Ok(line) = received.recv_timeout(Duration::from_secs(10)) {
        if line.contains(r#""id":2"#) {
            break;
        }
        before_reply.push(line);
    }
    let _ = waiter.kill();
    let _ = waiter.wait();
    assert!(
        holder_lost,
        "the holder's lease was not lost after the server froze for 3 session timeouts"
    );
    assert!(
        before_reply.is_empty(),
        "events about a lease still being acquired: {before_reply:?}"
    );
}
