//! Real redis-server children: start, serve, replicate, pause, and die with their handle.
#![allow(clippy::unwrap_used)]

mod common;

use std::time::{Duration, Instant};

use lockbench_servers::{RedisOptions, RedisPair, RedisServer, ServerError, data_parent};

fn connect(server: &RedisServer) -> redis::Connection {
    redis::Client::open(server.url())
        .unwrap()
        .get_connection()
        .unwrap()
}

#[test]
fn redis_serves_writes_and_dies_on_drop() {
    let server = RedisServer::start().unwrap();
    eprintln!("startup redis: {} ms", server.startup().as_millis());
    assert!(server.startup() < Duration::from_secs(5));
    assert!(server.url().starts_with("redis://127.0.0.1:"));
    assert!(server.addr().ip().is_loopback());
    assert!(
        server.version().starts_with(|c: char| c.is_ascii_digit()),
        "{}",
        server.version()
    );
    assert!(server.data_dir().starts_with(data_parent()));
    eprintln!("redis data dir: {}", server.data_dir().display());

    let mut con = connect(&server);
    redis::cmd("SET")
        .arg("lockbench:k")
        .arg("v1")
        .exec(&mut con)
        .unwrap();
    let value: String = redis::cmd("GET")
        .arg("lockbench:k")
        .query(&mut con)
        .unwrap();
    assert_eq!(value, "v1");
    assert_eq!(server.command(&["GET", "lockbench:k"]).unwrap(), "v1");
    assert_eq!(server.command(&["GET", "lockbench:missing"]).unwrap(), "");
    assert!(matches!(
        server.command(&["NO-SUCH-COMMAND"]),
        Err(ServerError::Reply { .. })
    ));
    assert!(server.log_tail(50).contains("Ready to accept connections"));
    assert!(server.process().listens_on(server.port()));
    let other = RedisServer::start().unwrap();
    assert!(!server.process().listens_on(other.port()));
    drop(other);

    let pid = server.pid();
    let dir = server.data_dir().to_path_buf();
    common::assert_alive(pid);
    drop(server);
    common::assert_gone(pid);
    assert!(!dir.exists(), "temp dir removed");
    assert!(redis::cmd("PING").query::<String>(&mut con).is_err());
}

#[test]
fn redis_options_reach_the_server() {
    let server = RedisServer::start_with(RedisOptions {
        hz: Some(50),
        notify_keyspace_events: Some("Kgx".to_owned()),
        extra: vec![("maxmemory-policy".to_owned(), "noeviction".to_owned())],
        ..RedisOptions::default()
    })
    .unwrap();
    assert_eq!(server.command(&["CONFIG", "GET", "hz"]).unwrap(), "hz\n50");
    let events = server
        .command(&["CONFIG", "GET", "notify-keyspace-events"])
        .unwrap();
    let flags = events.lines().nth(1).unwrap();
    assert!(
        flags.contains('g') && flags.contains('x') && flags.contains('K'),
        "{events}"
    );
    assert_eq!(
        server.command(&["CONFIG", "SET", "hz", "100"]).unwrap(),
        "OK"
    );
    assert_eq!(server.command(&["CONFIG", "GET", "hz"]).unwrap(), "hz\n100");
}

#[test]
fn redis_bad_config_is_a_start_error_with_the_log() {
    let err = RedisServer::start_with(RedisOptions {
        extra: vec![("no-such-directive".to_owned(), "1".to_owned())],
        ..RedisOptions::default()
    })
    .unwrap_err();
    match &err {
        ServerError::Start {
            reason, log_tail, ..
        } => {
            assert!(reason.contains("exited"), "{reason}");
            assert!(log_tail.contains("no-such-directive"), "{log_tail}");
        }
        other => panic!("expected a start error, got {other}"),
    }
}

#[test]
fn missing_redis_server_names_the_install_command() {
    let err = RedisServer::start_with(RedisOptions {
        redis_server: Some("/nonexistent/redis-server".into()),
        ..RedisOptions::default()
    })
    .unwrap_err();
    assert!(matches!(err, ServerError::Missing { .. }), "{err:?}");
    let text = err.to_string();
    assert!(text.contains("apt-get install -y redis-server"), "{text}");
    assert_eq!(text.lines().count(), 1, "{text}");
    eprintln!("missing: {text}");
}

#[test]
fn redis_pair_replicates_and_promotes() {
    let pair = RedisPair::start().unwrap();
    eprintln!("startup redis pair: {} ms", pair.startup().as_millis());
    let (primary, replica) = (pair.primary(), pair.replica());
    assert_eq!(
        primary.command(&["SET", "lockbench:r", "42"]).unwrap(),
        "OK"
    );
    assert_eq!(primary.command(&["WAIT", "1", "2000"]).unwrap(), "1");
    assert_eq!(replica.command(&["GET", "lockbench:r"]).unwrap(), "42");
    // The replica is read-only until promoted.
    assert!(matches!(
        replica.command(&["SET", "lockbench:r", "43"]),
        Err(ServerError::Reply { .. })
    ));
    pair.promote_replica().unwrap();
    let info = replica.command(&["INFO", "replication"]).unwrap();
    assert!(info.contains("role:master"), "{info}");
    assert_eq!(
        replica.command(&["SET", "lockbench:r", "43"]).unwrap(),
        "OK"
    );

    let pids = [primary.pid(), replica.pid()];
    drop(pair);
    pids.into_iter().for_each(common::assert_gone);
}

#[test]
fn paused_redis_answers_only_after_resume() {
    let server = RedisServer::start().unwrap();
    server.pause().unwrap();
    let began = Instant::now();
    let reply = server.command_with_timeout(&["PING"], Duration::from_millis(300));
    assert!(reply.is_err(), "paused server answered {reply:?}");
    assert!(began.elapsed() >= Duration::from_millis(300));
    assert!(server.is_running(), "paused is still running");
    server.resume().unwrap();
    assert_eq!(server.command(&["PING"]).unwrap(), "PONG");
}

#[test]
fn paused_redis_dies_on_drop() {
    let server = RedisServer::start().unwrap();
    let pid = server.pid();
    server.pause().unwrap();
    drop(server);
    common::assert_gone(pid);
}

#[test]
fn killed_redis_is_reaped_and_stays_dead() {
    let server = RedisServer::start().unwrap();
    let pid = server.pid();
    server.kill().unwrap();
    assert!(!server.is_running());
    common::assert_gone(pid);
    assert!(server.command(&["PING"]).is_err());
    assert!(server.pause().is_err(), "no signals to a reaped pid");
    server.kill().unwrap();
}

#[test]
fn redis_dies_when_a_panic_unwinds() {
    let (tx, rx) = std::sync::mpsc::channel();
    let outcome = std::thread::spawn(move || {
        let server = RedisServer::start().unwrap();
        tx.send(server.pid()).unwrap();
        panic!("test panic while a server runs");
    })
    .join();
    assert!(outcome.is_err());
    common::assert_gone(rx.recv().unwrap());
}
