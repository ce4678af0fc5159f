//! The adapter machinery itself, with the dependency-free `py-memory` adapter (system `python3`): a dead
//! adapter, a hung one and one that sends an undeclared `lost` are clear `Backend` errors (the hung one
//! within the request timeout), a missing runtime names the install command, a grant for an acquire
//! dropped before it looked is given back, and the protocol's own cost per acquire+release cycle is
//! measured and printed.
#![allow(clippy::unwrap_used)]

use std::time::{Duration, Instant};

use lockers::memory::{MemoryConfig, MemoryLocker, MemoryServer};
use lockers::peer::PeerLocker;
use lockers::peer::catalog::{self, INSTALL};
use lockers::{AcquireOptions, Events, LockError, Locker, PeerProcess};

#[path = "support/peers.rs"]
mod peers;

async fn memory_peer(settings: Vec<(String, String)>, timeout: Duration) -> PeerLocker {
    let mut config = peers::config(
        peers::spec("py-memory"),
        Vec::new(),
        Duration::from_secs(30),
    );
    config.settings = settings;
    config.request_timeout = timeout;
    let locker = PeerLocker::start(config, Events::none()).await.unwrap();
    assert_eq!(locker.capabilities(), peers::spec("py-memory").capabilities);
    locker
}

fn assert_backend(result: Result<lockers::Lease, LockError>, what: &str) -> String {
    match result {
        Err(e @ LockError::Backend { .. }) => {
            let text = e.to_string();
            assert!(
                text.contains("py-memory") && text.contains("adapter log"),
                "{text}"
            );
            text
        }
        other => panic!("{what}: expected a Backend error, got {other:?}"),
    }
}

#[tokio::test]
async fn dead_adapter_is_a_clear_error() {
    let peer = memory_peer(Vec::new(), Duration::from_secs(5)).await;
    let once = AcquireOptions::try_once().fixed(Duration::from_secs(5));
    let lease = peer.acquire("k", &once).await.unwrap();
    let pid = peer.pid().unwrap();
    // SAFETY: kill(2) on our own child's pid.
    assert_eq!(unsafe { libc::kill(pid as i32, libc::SIGKILL) }, 0);
    let reason = tokio::time::timeout(Duration::from_secs(2), lease.lost())
        .await
        .expect("lease not lost when its adapter died");
    eprintln!("lost: {reason}");
    let started = Instant::now();
    let text = assert_backend(peer.acquire("k2", &once).await, "acquire after kill");
    assert!(started.elapsed() < Duration::from_secs(1));
    eprintln!("{text}");
}

/// An adapter that sends `lost` while declaring `lost_signal: false` breaks the protocol: the driver acts
/// on losses only where the signal is declared, so such a loss would go unseen. The parent fails the
/// adapter instead, naming the breach.
#[tokio::test]
async fn an_undeclared_lost_signal_breaks_the_protocol() {
    let settings = vec![("undeclared_lost".into(), "1".into())];
    let peer = memory_peer(settings, Duration::from_secs(5)).await;
    let once = AcquireOptions::try_once().fixed(Duration::from_secs(5));
    let lease = peer.acquire("k", &once).await.unwrap();
    let reason = tokio::time::timeout(Duration::from_secs(2), lease.lost())
        .await
        .expect("the adapter's lost event did not end the lease");
    assert!(
        reason.to_string().contains("declared lost_signal: false"),
        "{reason}"
    );
    let text = assert_backend(peer.acquire("k2", &once).await, "acquire after the breach");
    assert!(text.contains("broke the protocol"), "{text}");
}

#[tokio::test]
async fn hung_adapter_is_a_clear_error_within_the_timeout() {
    let timeout = Duration::from_millis(500);
    let peer = memory_peer(vec![("hang".into(), "acquire".into())], timeout).await;
    let started = Instant::now();
    let once = AcquireOptions::try_once().fixed(Duration::from_secs(5));
    let text = assert_backend(peer.acquire("k", &once).await, "hung acquire");
    let took = started.elapsed();
    assert!(
        took >= timeout && took < timeout * 3,
        "gave up after {took:?}"
    );
    assert!(text.contains("did not answer"), "{text}");
}

/// An acquire dropped after its grant reached the parent but before it read the grant (a `select!` whose
/// other branch won, or a timeout that fired just as the reply came in) leaves no lock behind: the grant
/// is given back. `py-memory` never expires a lock, so one left behind stays held.
#[tokio::test]
async fn a_grant_nobody_read_is_given_back() {
    let peer = memory_peer(Vec::new(), Duration::from_secs(5)).await;
    let once = AcquireOptions::try_once().fixed(Duration::from_secs(60));
    let mut acquire = Box::pin(peer.acquire("k", &once));
    // One poll sends the request; then nobody polls while the grant arrives.
    std::future::poll_fn(|cx| {
        assert!(acquire.as_mut().poll(cx).is_pending());
        std::task::Poll::Ready(())
    })
    .await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    drop(acquire);
    let deadline = Instant::now() + Duration::from_secs(2);
    loop {
        match peer.acquire("k", &once).await {
            Ok(lease) => break lease.release().await.unwrap(),
            Err(e) if Instant::now() < deadline => {
                eprintln!("not yet given back: {e}");
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            Err(e) => panic!("the dropped acquire's grant was never given back: {e}"),
        }
    }
}

/// A process that loaded another version than the pin fails to start, in one line naming both versions
/// and the install command; the pinned one starts and reports what it loaded.
#[tokio::test]
async fn a_version_other_than_the_pin_fails_with_the_install_command() {
    let spec = peers::spec("py-memory");
    let mut config = peers::config(spec, Vec::new(), Duration::from_secs(30));
    assert_eq!(
        config.pinned_version.as_deref(),
        Some(spec.version.as_str())
    );
    config.pinned_version = Some("9.9.9".into());
    let err = PeerLocker::start(config, Events::none())
        .await
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("9.9.9") && err.contains(INSTALL) && !err.contains('\n'),
        "{err}"
    );
    let locker = memory_peer(Vec::new(), Duration::from_secs(5)).await;
    let (_, version) = locker.loaded_library();
    assert_eq!(version, spec.version);
}

#[tokio::test]
async fn missing_runtime_names_the_install_command() {
    let empty = std::env::temp_dir().join("lockbench-no-adapters");
    for spec in catalog::peers() {
        let err = spec.command_in(&empty).unwrap_err();
        assert!(err.to_string().contains(INSTALL), "{err}");
    }
    let mut config = peers::config(
        peers::spec("py-memory"),
        Vec::new(),
        Duration::from_secs(30),
    );
    config.command.program = "/nonexistent/python3".into();
    let err = PeerLocker::start(config, Events::none()).await.unwrap_err();
    assert!(err.to_string().contains(INSTALL), "{err}");
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

async fn cycles(locker: &dyn Locker, n: usize) -> Vec<Duration> {
    let opts = AcquireOptions::try_once().fixed(Duration::from_secs(10));
    let mut times = Vec::with_capacity(n);
    for i in 0..n {
        let key = format!("k{}", i % 16);
        let started = Instant::now();
        let lease = locker.acquire(&key, &opts).await.unwrap();
        lease.release().await.unwrap();
        times.push(started.elapsed());
    }
    times
}

/// Not a timed assertion: prints the protocol's cost per acquire+release cycle (two round trips through
/// the adapter process) beside the same cycle on the in-process `memory` strategy.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn protocol_overhead_per_cycle() {
    const N: usize = 2000;
    let peer = memory_peer(Vec::new(), Duration::from_secs(5)).await;
    let native =
        MemoryLocker::new(MemoryServer::new(), MemoryConfig::default(), Events::none()).unwrap();
    cycles(&peer, 200).await;
    let through = median(cycles(&peer, N).await);
    let direct = median(cycles(&native, N).await);
    eprintln!(
        "protocol overhead: py-memory acquire+release median {through:?} vs memory {direct:?} \
         (overhead {:?} per cycle, {N} cycles; clock-sync ping RTT {:?})",
        through.saturating_sub(direct),
        peer.info().ping_rtt
    );
    // What the results carry for peers (`protocol_round_trip_ms`); lockbench's own strategies have none.
    assert_eq!(peer.protocol_round_trip(), peer.info().ping_rtt);
    assert!(peer.info().ping_rtt > Duration::ZERO);
    assert!(native.peer().is_none());
}
