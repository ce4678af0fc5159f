//! The Redis peers (redis-py `Lock`, python-redis-lock, node redlock) through their adapters on real
//! redis-servers: the conformance suite, the clients of a target sharing one adapter process (each its
//! own library client). A case a library departs from by design is not left out silently: it runs as a
//! `departs_*` test that asserts the departure and says why (adapters/README.md lists them).
#![allow(clippy::unwrap_used)]

use std::time::Duration;

use lockbench_servers::RedisServer;

#[path = "support/peers.rs"]
mod peers;

use lockers::conformance;
use peers::{Peer, expect_departure, spec};

fn on_redis(
    id: &str,
    lock_key: fn(&str) -> String,
    watchdog: Duration,
    fixed_for_watchdog: Option<Duration>,
) -> Peer<RedisServer> {
    let server = RedisServer::start().unwrap();
    let url = server.url();
    let addr = server.addr();
    Peer {
        processes: lockers::peer::PeerProcesses::new(),
        spec: spec(id),
        servers: vec![url],
        settings: Vec::new(),
        watchdog,
        short_lease: watchdog,
        slack: Duration::from_millis(250),
        fixed_for_watchdog,
        remove: Box::new(move |key| {
            let key = lock_key(key);
            lockbench_servers::probe::resp_command(addr, &["DEL", &key], Duration::from_secs(2))
                .unwrap();
        }),
        _server: server,
    }
}

fn redis_py() -> Peer<RedisServer> {
    on_redis(
        "py-redis-py",
        str::to_owned,
        Duration::from_millis(300),
        Some(Duration::from_secs(5)),
    )
}

mod redis_py {
    use super::*;

    lockers::conformance_tests!(@cases redis_py();
        mutual_exclusion, release_then_reacquire, try_once_on_held_lock, fixed_lease_expires,
        watchdog_lease_outlives_timeout, tokens_strictly_increase, stale_release_is_not_held,
        lost_when_removed_behind_back, cancelled_acquire_leaks_nothing, reentrant_acquire_and_release,
        dropped_lease_is_released);

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn departs_wait_timeout_is_honoured() {
        let case = async { conformance::wait_timeout_is_honoured(&redis_py()).await };
        let why = "redis-py gives up when its next poll (every 0.1 s) would pass blocking_timeout: \
                   up to 0.1 s before the wait ends";
        expect_departure(case, why).await;
    }
}

fn python_redis_lock() -> Peer<RedisServer> {
    on_redis(
        "py-redis-lock",
        |k| format!("lock:{k}"),
        Duration::from_secs(1),
        None,
    )
}

mod python_redis_lock {
    use super::*;

    /// The clients share one Python process, each its own redis-py connection pool and Lock objects.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn clients_share_one_process_each_its_own_library_client() {
        python_redis_lock().clients_share_one_process().await;
    }

    lockers::conformance_tests!(@cases python_redis_lock();
        mutual_exclusion, release_then_reacquire, try_once_on_held_lock, fixed_lease_expires,
        watchdog_lease_outlives_timeout, tokens_strictly_increase, stale_release_is_not_held,
        lost_when_removed_behind_back, cancelled_acquire_leaks_nothing, reentrant_acquire_and_release,
        dropped_lease_is_released);

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn departs_wait_timeout_is_honoured() {
        let case = async { conformance::wait_timeout_is_honoured(&python_redis_lock()).await };
        let why = "python-redis-lock takes whole-second timeouts: a 0.4 s wait becomes 1 s";
        expect_departure(case, why).await;
    }
}

/// node-redlock over three independent redis-servers (a majority is two).
fn redlock() -> Peer<Vec<RedisServer>> {
    let servers: Vec<_> = (0..3).map(|_| RedisServer::start().unwrap()).collect();
    Peer {
        processes: lockers::peer::PeerProcesses::new(),
        spec: spec("node-redlock"),
        servers: servers.iter().map(RedisServer::url).collect(),
        settings: Vec::new(),
        watchdog: Duration::from_secs(1),
        short_lease: Duration::from_millis(700),
        slack: Duration::from_millis(300),
        fixed_for_watchdog: None,
        remove: {
            let addrs: Vec<_> = servers.iter().map(RedisServer::addr).collect();
            Box::new(move |key| {
                for addr in &addrs {
                    lockbench_servers::probe::resp_command(
                        *addr,
                        &["DEL", key],
                        Duration::from_secs(2),
                    )
                    .unwrap();
                }
            })
        },
        _server: servers,
    }
}

/// Left out: `wait_timeout_is_honoured`. redlock's wait is its retry loop (retryCount = wait / 200 ms,
/// each retry 200 ± 100 ms of jitter), not a deadline: it gives up anywhere from about half to one and a
/// half times the wait, so the case passes or fails by chance.
mod node_redlock {
    use super::*;

    lockers::conformance_tests!(@cases redlock();
        mutual_exclusion, release_then_reacquire, try_once_on_held_lock, fixed_lease_expires,
        watchdog_lease_outlives_timeout, tokens_strictly_increase, stale_release_is_not_held,
        lost_when_removed_behind_back, cancelled_acquire_leaks_nothing, reentrant_acquire_and_release,
        dropped_lease_is_released);

    /// The clients share one Node process, each its own Redlock over its own ioredis connections.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn clients_share_one_process_each_its_own_library_client() {
        redlock().clients_share_one_process().await;
    }
}
