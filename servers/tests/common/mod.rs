//! Helpers shared by the integration tests.
#![allow(dead_code, unreachable_pub, missing_docs)]

use std::io;

/// Asserts that no process with `pid` exists any more (not even a zombie).
pub fn assert_gone(pid: u32) {
    let pid = i32::try_from(pid).expect("pid fits i32");
    // SAFETY: signal 0 only checks whether the process exists.
    let rc = unsafe { libc::kill(pid, 0) };
    let errno = io::Error::last_os_error().raw_os_error();
    assert!(
        rc == -1 && errno == Some(libc::ESRCH),
        "process {pid} still exists (kill(pid, 0) = {rc}, errno {errno:?})"
    );
}

/// Asserts that the process with `pid` exists.
pub fn assert_alive(pid: u32) {
    let pid = i32::try_from(pid).expect("pid fits i32");
    // SAFETY: signal 0 only checks whether the process exists.
    let rc = unsafe { libc::kill(pid, 0) };
    assert_eq!(rc, 0, "process {pid} does not exist");
}

/// A multi-threaded tokio runtime for the async clients.
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio runtime")
}

/// The keepalive the namespaced servers' tests give the server: a silent client is given up 3 s
/// after its last packet.
pub const KEEPALIVES: lockbench_servers::Keepalives = lockbench_servers::Keepalives {
    idle: std::time::Duration::from_secs(1),
    interval: std::time::Duration::from_secs(1),
    count: 2,
};

/// The network namespaces `ip netns list` shows.
pub fn listed_namespaces() -> String {
    let list = std::process::Command::new("ip")
        .args(["netns", "list"])
        .output()
        .expect("ip netns list");
    String::from_utf8_lossy(&list.stdout).into_owned()
}

/// Waits (polling every 50 ms, at most [`KEEPALIVES`]' limit + 5 s) until `session_gone` says the
/// partitioned session has ended: `quiet` is when its holder sent its last packets, `began` when
/// `partition` began. Asserts that the server gave it up by keepalive alone (no sooner than the
/// limit after `quiet`, not much later than the limit after `began`), then lifts the partition,
/// which must have dropped the server's probes. Returns how long after `began` the session ended.
pub fn await_keepalive_end(
    partition: lockbench_servers::Partition,
    quiet: std::time::Instant,
    began: std::time::Instant,
    mut session_gone: impl FnMut() -> bool,
) -> std::time::Duration {
    use std::time::Duration;
    let limit = KEEPALIVES.limit();
    let mut ended = None;
    while began.elapsed() < limit + Duration::from_secs(5) {
        if session_gone() {
            ended = Some(began.elapsed());
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let ended = ended.unwrap_or_else(|| {
        panic!(
            "the partitioned session never ended; {} packets dropped",
            partition.dropped_packets().expect("dropped packets")
        )
    });
    eprintln!("session ended {ended:?} after the partition began (keepalive limit {limit:?})");
    let since_quiet = ended + (began - quiet);
    assert!(
        since_quiet >= limit - Duration::from_millis(300)
            && ended <= limit + Duration::from_millis(1500),
        "ended {ended:?} after the partition, {since_quiet:?} after the holder's last request; \
         limit {limit:?}"
    );
    let dropped = partition.lift().expect("lift the partition");
    assert!(dropped >= 2, "the server's probes were dropped: {dropped}");
    ended
}

/// Asserts that a namespaced server dropped took its process (`pid`), its data directory (`dir`)
/// and its namespace (`name`) with it.
pub fn assert_namespace_gone(name: &str, dir: &std::path::Path, pid: u32) {
    assert_gone(pid);
    assert!(!dir.exists(), "{} is left", dir.display());
    assert!(
        !listed_namespaces().contains(name),
        "{}",
        listed_namespaces()
    );
}
