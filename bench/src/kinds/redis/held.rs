//! What `lockbench scale` reads of a Redis while its client only holds locks: the keys named after
//! the run's lock keys (`SCAN`), and its scripts' calls and time (`INFO commandstats`: a renewal is
//! a script call).

use std::net::SocketAddr;

use lockbench_servers::probe;

use crate::base::measure::RedisCommandStats;
use crate::kinds::held::{HELD_TIMEOUT, HeldProbe, own_process_cpu_seconds};

/// The held-lock probe of a Redis.
pub(super) const HELD: HeldProbe = HeldProbe {
    locks_held,
    process_cpu_seconds: own_process_cpu_seconds,
    script_stats: Some(|addr| RedisCommandStats::read(addr).ok()),
    renewal_messages: None,
    renewal_counter: None,
    prepare: Some(prepare),
    clean: Some(flush_all),
};

/// Deletes every key of the Redis at `addr` (a server lockbench started).
pub(crate) fn flush_all(addr: SocketAddr) {
    run_commands(addr, &[&["FLUSHALL"]]);
}

/// A clean slate, no keyspace notifications left on by an earlier strategy, and room for one
/// connection per guard thread (Redis needs maxclients + 32 descriptors and raises its own limit as
/// far as the hard limit allows).
fn prepare(addr: SocketAddr, max_threads: u64) {
    let maxclients = (max_threads + 1024).min(19_000).to_string();
    run_commands(
        addr,
        &[
            &["FLUSHALL"],
            &["CONFIG", "SET", "notify-keyspace-events", ""],
            &["CONFIG", "SET", "maxclients", &maxclients],
        ],
    );
}

/// Runs `commands` on the Redis at `addr`, saying on stderr which failed.
fn run_commands(addr: SocketAddr, commands: &[&[&str]]) {
    for command in commands {
        if let Err(e) = probe::resp_command(addr, command, HELD_TIMEOUT) {
            eprintln!("lockbench scale: redis {}: {e}", command.join(" "));
        }
    }
}

/// The keys named after the scale run's lock keys (`SCAN MATCH *scale*`, every row names its lock key
/// after the key it was given, `lockbench:{scale:42}`, `lock:scale:42`), less the fencing counters
/// (`…:fence`).
fn locks_held(addr: SocketAddr) -> Option<u64> {
    let all = redis_count(addr, "*scale*")?;
    Some(all.saturating_sub(redis_count(addr, "*scale*:fence")?))
}

/// The keys matching `pattern` in a Redis, by `SCAN` (a key present throughout is counted; one moved by
/// a rehash meanwhile may be counted twice); `None` when unreadable or past 10,000 calls.
fn redis_count(addr: SocketAddr, pattern: &str) -> Option<u64> {
    let mut cursor = "0".to_owned();
    let mut count = 0u64;
    for _ in 0..10_000 {
        let reply = probe::resp_command(
            addr,
            &["SCAN", &cursor, "MATCH", pattern, "COUNT", "10000"],
            HELD_TIMEOUT,
        )
        .ok()?;
        let mut lines = reply.lines();
        cursor = lines.next()?.trim().to_owned();
        count += lines.filter(|line| !line.is_empty()).count() as u64;
        if cursor == "0" {
            return Some(count);
        }
    }
    None
}
