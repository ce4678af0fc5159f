//! The fault-injecting proxy in front of a real redis-server: pass-through, delay, blackhole,
//! reset, refuse, and a clean stop on drop.
#![allow(clippy::unwrap_used)]

use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use lockbench_servers::probe::resp_command;
use lockbench_servers::{Direction, Fault, Proxy, RedisServer};

const PING: &[u8] = b"*1\r\n$4\r\nPING\r\n";

/// A raw client connection through the proxy that has completed one PING.
fn connected(proxy: &Proxy) -> TcpStream {
    let mut stream = TcpStream::connect(proxy.addr()).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    ping(&mut stream).unwrap();
    stream
}

/// One PING round trip on `stream`; returns how long it took.
fn ping(stream: &mut TcpStream) -> std::io::Result<Duration> {
    let began = Instant::now();
    stream.write_all(PING)?;
    let mut reply = [0u8; 7];
    stream.read_exact(&mut reply)?;
    assert_eq!(&reply, b"+PONG\r\n");
    Ok(began.elapsed())
}

fn wait_until(what: &str, mut condition: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(5);
    while !condition() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn proxy_passes_redis_traffic_through() {
    let redis = RedisServer::start().unwrap();
    let proxy = Proxy::start(redis.addr()).unwrap();
    assert!(proxy.addr().ip().is_loopback());
    assert_ne!(proxy.addr(), redis.addr());
    assert_eq!(proxy.upstream(), redis.addr());
    let through = |args: &[&str]| resp_command(proxy.addr(), args, Duration::from_secs(2));
    assert_eq!(through(&["PING"]).unwrap(), "PONG");
    assert_eq!(through(&["SET", "k", "via-proxy"]).unwrap(), "OK");
    assert_eq!(redis.command(&["GET", "k"]).unwrap(), "via-proxy");

    // A large value crosses in many chunks, in order.
    let big: String = (0..200_000)
        .map(|i| char::from(b'a' + (i % 26) as u8))
        .collect();
    assert_eq!(through(&["SET", "big", &big]).unwrap(), "OK");
    assert_eq!(through(&["GET", "big"]).unwrap(), big);

    let stream = connected(&proxy);
    wait_until("one live connection", || proxy.connections() == 1);
    drop(stream.shutdown(std::net::Shutdown::Both));
    wait_until("no live connection", || proxy.connections() == 0);
}

#[test]
fn delay_adds_to_every_round_trip_in_order() {
    let redis = RedisServer::start().unwrap();
    let proxy = Proxy::start(redis.addr()).unwrap();
    let mut stream = connected(&proxy);
    let baseline = ping(&mut stream).unwrap();
    assert!(baseline < Duration::from_millis(100), "{baseline:?}");

    proxy.set(
        Direction::Upstream,
        Fault::Delay(Duration::from_millis(200)),
    );
    assert_eq!(
        proxy.fault(Direction::Upstream),
        Fault::Delay(Duration::from_millis(200))
    );
    let delayed = ping(&mut stream).unwrap();
    eprintln!("round trip: {baseline:?} plain, {delayed:?} with 200 ms upstream delay");
    assert!(delayed >= Duration::from_millis(200), "{delayed:?}");
    assert!(delayed < Duration::from_millis(1000), "{delayed:?}");

    proxy.set(
        Direction::Downstream,
        Fault::Delay(Duration::from_millis(100)),
    );
    let both = ping(&mut stream).unwrap();
    assert!(both >= Duration::from_millis(300), "{both:?}");

    // Pipelined requests sent 50 ms apart stay in order and each keeps its own delay.
    proxy.set_both(Fault::Pass);
    proxy.set(
        Direction::Downstream,
        Fault::Delay(Duration::from_millis(200)),
    );
    let began = Instant::now();
    stream
        .write_all(b"*2\r\n$4\r\nECHO\r\n$1\r\n1\r\n")
        .unwrap();
    std::thread::sleep(Duration::from_millis(50));
    stream
        .write_all(b"*2\r\n$4\r\nECHO\r\n$1\r\n2\r\n")
        .unwrap();
    let mut replies = [0u8; 14];
    stream.read_exact(&mut replies).unwrap();
    assert_eq!(&replies, b"$1\r\n1\r\n$1\r\n2\r\n");
    let took = began.elapsed();
    assert!(took >= Duration::from_millis(250), "{took:?}");
    assert!(
        took < Duration::from_millis(600),
        "delays must not add up: {took:?}"
    );

    proxy.set_both(Fault::Pass);
    assert!(ping(&mut stream).unwrap() < Duration::from_millis(100));
}

#[test]
fn blackhole_makes_reads_time_out_and_keeps_the_connection_open() {
    let redis = RedisServer::start().unwrap();
    let proxy = Proxy::start(redis.addr()).unwrap();
    let mut stream = connected(&proxy);
    let before = proxy.blackholed_bytes();

    proxy.set(Direction::Upstream, Fault::Blackhole);
    stream
        .set_read_timeout(Some(Duration::from_millis(300)))
        .unwrap();
    let err = ping(&mut stream).unwrap_err();
    // The evidence that the partition took effect: the request's bytes.
    assert_eq!(proxy.blackholed_bytes() - before, PING.len() as u64);
    assert!(
        matches!(err.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut),
        "{err:?}"
    );
    assert_eq!(proxy.connections(), 1, "the connection stays open");

    // The dropped request never reaches Redis: after lifting the fault the next reply is the
    // next request's.
    proxy.set(Direction::Upstream, Fault::Pass);
    stream
        .set_read_timeout(Some(Duration::from_secs(2)))
        .unwrap();
    ping(&mut stream).unwrap();

    // Blackholing replies: Redis executes the command, the client hears nothing.
    proxy.set(Direction::Downstream, Fault::Blackhole);
    stream
        .set_read_timeout(Some(Duration::from_millis(300)))
        .unwrap();
    stream
        .write_all(b"*3\r\n$3\r\nSET\r\n$2\r\nbh\r\n$1\r\n1\r\n")
        .unwrap();
    let mut byte = [0u8; 1];
    assert!(stream.read(&mut byte).is_err());
    assert_eq!(redis.command(&["GET", "bh"]).unwrap(), "1");
}

#[test]
fn reset_all_resets_live_connections() {
    let redis = RedisServer::start().unwrap();
    let proxy = Proxy::start(redis.addr()).unwrap();
    let mut stream = connected(&proxy);
    let clients_before = redis.command(&["CLIENT", "LIST"]).unwrap().lines().count();

    assert_eq!(proxy.reset_all(), 1, "one live connection reset");
    let mut buf = [0u8; 16];
    let err = stream.read(&mut buf).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::ConnectionReset, "{err:?}");
    assert_eq!(proxy.connections(), 0);
    // Redis lost its side of the connection too.
    wait_until("redis to drop the proxied client", || {
        redis.command(&["CLIENT", "LIST"]).unwrap().lines().count() < clients_before
    });

    // New connections still work.
    assert_eq!(
        resp_command(proxy.addr(), &["PING"], Duration::from_secs(2)).unwrap(),
        "PONG"
    );
}

#[test]
fn refuse_closes_new_connections_only() {
    let redis = RedisServer::start().unwrap();
    let proxy = Proxy::start(redis.addr()).unwrap();
    let mut live = connected(&proxy);

    proxy.refuse(true);
    assert!(resp_command(proxy.addr(), &["PING"], Duration::from_secs(2)).is_err());
    ping(&mut live).unwrap();

    proxy.refuse(false);
    assert_eq!(
        resp_command(proxy.addr(), &["PING"], Duration::from_secs(2)).unwrap(),
        "PONG"
    );
}

#[test]
fn drop_closes_the_listener_and_every_connection() {
    let redis = RedisServer::start().unwrap();
    let proxy = Proxy::start(redis.addr()).unwrap();
    let addr = proxy.addr();
    let mut live = connected(&proxy);
    proxy.set(Direction::Upstream, Fault::Blackhole);

    let began = Instant::now();
    drop(proxy);
    assert!(began.elapsed() < Duration::from_secs(2));
    let mut buf = [0u8; 1];
    assert_eq!(live.read(&mut buf).unwrap(), 0, "live connection sees EOF");
    let refused = TcpStream::connect_timeout(&addr, Duration::from_secs(1)).unwrap_err();
    assert_eq!(refused.kind(), ErrorKind::ConnectionRefused);
}
