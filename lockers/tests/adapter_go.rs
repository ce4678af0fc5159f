//! The Go peers (etcd's `concurrency.Mutex`, go-redsync) through their adapters on real servers: a
//! conformance subset (mutual exclusion, release, lease expiry, renewal and the loss signal where
//! declared), the clients of a target sharing one adapter process (each its own library client). Built
//! by `bash docker/install-deps.sh --with-peers`; a missing binary fails with that command.
#![allow(clippy::unwrap_used)]

use std::time::{Duration, Instant};

use lockbench_servers::{EtcdServer, RedisServer};
use lockers::conformance::Target;
use lockers::{AcquireOptions, Events, Locker};

#[path = "support/peers.rs"]
mod peers;

use peers::{Peer, spec};

/// The session TTL of the etcd clients (whole seconds; etcd's minimum here is 1 s, 2 s leaves room for
/// a keep-alive every TTL/3 on a loaded machine).
const SESSION: Duration = Duration::from_secs(2);

/// Revokes the lease of every key queued on lock `key` (`<key>/<lease hex>`): the session is gone, as
/// when an operator revokes it.
fn revoke_leases_of(endpoint: &str, key: &str) {
    let (endpoint, prefix) = (endpoint.to_owned(), format!("{key}/"));
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async {
            use etcd_client::{Client, GetOptions};
            let mut admin = Client::connect([endpoint], None).await.unwrap();
            let queued = admin
                .get(prefix, Some(GetOptions::new().with_prefix()))
                .await
                .unwrap();
            assert_eq!(queued.kvs().len(), 1, "one holder queued");
            for kv in queued.kvs() {
                admin.lease_revoke(kv.lease()).await.unwrap();
            }
        });
    })
    .join()
    .unwrap();
}

fn etcd_mutex() -> Peer<EtcdServer> {
    let server = EtcdServer::start().unwrap();
    let endpoint = server.endpoint();
    Peer {
        processes: lockers::peer::PeerProcesses::new(),
        spec: spec("go-etcd-mutex"),
        servers: vec![endpoint.clone()],
        settings: Vec::new(),
        watchdog: SESSION,
        short_lease: SESSION,
        slack: Duration::from_millis(600),
        fixed_for_watchdog: None,
        remove: Box::new(move |key| revoke_leases_of(&endpoint, key)),
        _server: server,
    }
}

/// etcd-lease and etcd's Go `concurrency.Mutex` (the recipe `etcdctl lock <name>` runs) on one lock
/// interoperate: the Mutex queues under `<name>/`, etcd-lease under `<prefix>/<key>/`; given the same
/// queue, each orders the other's key by its create revision (names differ: `<lease hex>` and
/// `<client id hex>-<slot>`), so they exclude each other and a release wakes the other's waiter, which
/// watches the key below its own. Both ways; the bound is a quarter of the wait a waiter that missed the
/// release would sleep out.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn etcd_lease_and_go_mutex_share_one_lock() {
    use std::sync::Arc;

    use lockers::etcd::{EtcdConfig, EtcdLease};

    let wait = Duration::from_secs(10);
    let library = etcd_mutex();
    let go: Arc<dyn Locker> = Arc::new(library.start_shared(Events::none()).await);
    let config = EtcdConfig {
        renewal: lockers::Renewal::new(SESSION),
        ..EtcdConfig::default()
    };
    let model = Arc::new(
        EtcdLease::connect(&library.servers, config, Events::none())
            .await
            .unwrap(),
    );
    for way in ["model-to-go", "go-to-model"] {
        let key = format!("interop-{way}");
        // The Mutex's name is the model's queue prefix without its trailing '/'.
        let queue = model.queue_prefix(&key);
        let name = queue.trim_end_matches('/').to_owned();
        let took = match way {
            "model-to-go" => peers::hand_off(model.as_ref(), &key, go.clone(), &name, wait).await,
            _ => {
                peers::hand_off(
                    go.as_ref(),
                    &name,
                    model.clone() as Arc<dyn Locker>,
                    &key,
                    wait,
                )
                .await
            }
        };
        eprintln!("{way}: hand-off {took:?} on {queue}");
        assert!(took < wait / 4, "{way}: hand-off {took:?}");
    }
}

/// Left out: `watchdog_lease_outlives_timeout` (it counts `Renewed` events; the Session's keep-alives
/// are not exposed, so `holds_past_timeouts` checks the hold itself) and the fixed-lease cases (a Session
/// always keeps its lease alive).
mod go_etcd_mutex {
    use super::*;

    lockers::conformance_tests!(@cases etcd_mutex();
        mutual_exclusion, release_then_reacquire, try_once_on_held_lock, wait_timeout_is_honoured,
        tokens_strictly_increase, lost_when_removed_behind_back);

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn holds_past_timeouts() {
        let t = etcd_mutex();
        let (a, b) = (
            t.client(Events::none()).await,
            t.client(Events::none()).await,
        );
        let once = AcquireOptions::try_once();
        let lease = a.acquire("hold", &once).await.unwrap();
        let until = Instant::now() + SESSION * 3;
        while Instant::now() < until {
            assert!(b.acquire("hold", &once).await.is_err(), "taken while held");
            assert!(lease.is_held());
            tokio::time::sleep(SESSION / 5).await;
        }
        lease.release().await.unwrap();
        b.acquire("hold", &once).await.unwrap();
    }

    /// The clients share one process, each its own library client (its own etcd client and Session).
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn clients_share_one_process_each_its_own_library_client() {
        etcd_mutex().clients_share_one_process().await;
    }

    /// A holder whose process stops (SIGSTOP) stops renewing: its session lease expires on the server
    /// and another client gets in after about a TTL; resumed, the holder is told (`lost`).
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn paused_holder_expires_and_is_told() {
        let t = etcd_mutex();
        let a = t.start(Events::none()).await;
        let b = t.client(Events::none()).await;
        let lease = a
            .acquire("pause", &AcquireOptions::try_once())
            .await
            .unwrap();
        let pid = a.pid().unwrap() as libc::pid_t;
        let paused = Instant::now();
        // SAFETY: signals to the adapter process this test started.
        assert_eq!(unsafe { libc::kill(pid, libc::SIGSTOP) }, 0);
        let next = b.acquire("pause", &AcquireOptions::wait(SESSION * 3)).await;
        let got_in = paused.elapsed();
        // SAFETY: as above.
        assert_eq!(unsafe { libc::kill(pid, libc::SIGCONT) }, 0);
        next.unwrap();
        assert!(got_in >= SESSION / 2, "taken after only {got_in:?}");
        tokio::time::timeout(SESSION * 2, lease.lost())
            .await
            .expect("the resumed holder was not told its session is done");
    }
}

/// go-redsync over three independent redis-servers (a majority is two).
fn redsync() -> Peer<Vec<RedisServer>> {
    let servers: Vec<_> = (0..3).map(|_| RedisServer::start().unwrap()).collect();
    Peer {
        processes: lockers::peer::PeerProcesses::new(),
        spec: spec("go-redsync"),
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

/// Mutual exclusion, release, try-once, a wait's deadline, expiry of a fixed lease, a stale release
/// (`not_held`), and the adapter's Extend loop: a watchdog lease outlives its TTL, and one deleted
/// behind its back is reported lost at the next Extend.
mod go_redsync {
    use super::*;

    lockers::conformance_tests!(@cases redsync();
        mutual_exclusion, release_then_reacquire, try_once_on_held_lock, wait_timeout_is_honoured,
        fixed_lease_expires, stale_release_is_not_held, watchdog_lease_outlives_timeout,
        lost_when_removed_behind_back);
}
