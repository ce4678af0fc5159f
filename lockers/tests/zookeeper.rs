//! `zookeeper` on real ZooKeeper: the conformance suite against one server, a smoke subset against a
//! 3-node ensemble, losing the leader under contention, session expiry through a blackholing proxy, and
//! bad input.
#![allow(clippy::unwrap_used)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use lockbench_servers::{Fault, Proxy, ZkEnsemble, ZkServer, poll};
use lockers::conformance::Target;
use lockers::zookeeper::{ZkConfig, ZooKeeperLock};
use lockers::{
    AcquireOptions, EventLog, Events, Lease, LockError, LockEvent, Locker, OwnerId, Renewal,
};

#[path = "support/consensus.rs"]
mod consensus;
#[path = "support/contention.rs"]
mod contention;

/// Session timeout asked for (the servers allow down to 200 ms).
const SESSION: Duration = Duration::from_secs(1);

fn config() -> ZkConfig {
    ZkConfig {
        renewal: Renewal::new(SESSION),
        ..ZkConfig::default()
    }
}

/// A Target over some ZooKeeper servers; `_servers` keeps them running.
struct Zk<S> {
    _servers: S,
    connect_string: String,
    admin: zookeeper_client::Client,
}

async fn start_ensemble() -> Zk<ZkEnsemble> {
    let ensemble = consensus::start_blocking(|| ZkEnsemble::start(3)).await;
    let connect_string = ensemble.connect_string();
    Zk::new(ensemble, connect_string).await
}

async fn start_single() -> Zk<ZkServer> {
    let server = consensus::start_blocking(ZkServer::start).await;
    let connect_string = server.connect_string();
    Zk::new(server, connect_string).await
}

impl<S> Zk<S> {
    async fn new(servers: S, connect_string: String) -> Self {
        let admin = zookeeper_client::Client::connect(&connect_string)
            .await
            .unwrap();
        Zk {
            _servers: servers,
            connect_string,
            admin,
        }
    }

    async fn locker(&self, events: Events) -> ZooKeeperLock {
        self.locker_with(config(), events).await
    }

    async fn locker_with(&self, config: ZkConfig, events: Events) -> ZooKeeperLock {
        ZooKeeperLock::connect(&self.connect_string, config, events)
            .await
            .unwrap()
    }

    /// The lock nodes queued on `key`, as full paths.
    async fn nodes(&self, locker: &ZooKeeperLock, key: &str) -> Vec<String> {
        let parent = locker.lock_path(key);
        match self.admin.list_children(&parent).await {
            Ok(children) => children
                .into_iter()
                .map(|c| format!("{parent}/{c}"))
                .collect(),
            Err(zookeeper_client::Error::NoNode) => Vec::new(),
            Err(e) => panic!("listing {parent}: {e}"),
        }
    }
}

#[async_trait]
impl<S: Send + Sync> Target for Zk<S> {
    async fn client(&self, events: Events) -> Arc<dyn Locker> {
        Arc::new(self.locker(events).await)
    }

    fn watchdog_timeout(&self) -> Duration {
        SESSION
    }

    fn short_lease(&self) -> Duration {
        Duration::from_secs(1)
    }

    async fn remove_behind_back(&self, lease: &Lease) {
        let probe = self.locker(Events::none()).await;
        let nodes = self.nodes(&probe, lease.key()).await;
        assert_eq!(nodes.len(), 1, "{nodes:?}");
        self.admin.delete(&nodes[0], None).await.unwrap();
    }

    fn slack(&self) -> Duration {
        Duration::from_millis(300)
    }
}

lockers::conformance_tests!(start_single().await);

#[tokio::test]
async fn config_and_input_errors_are_clear() {
    let bad = ZkConfig {
        prefix: "/lock".into(),
        ..config()
    };
    let err = ZooKeeperLock::connect("127.0.0.1:9", bad, Events::none())
        .await
        .unwrap_err();
    assert_eq!(err.kind(), "config", "{err}");
    let zero = ZkConfig {
        renewal: Renewal::new(Duration::ZERO),
        ..config()
    };
    let err = ZooKeeperLock::connect("127.0.0.1:9", zero, Events::none())
        .await
        .unwrap_err();
    assert_eq!(err.kind(), "config", "{err}");
}

#[tokio::test]
async fn unreachable_server_fails_within_connect_timeout() {
    let port = consensus::unused_port();
    let timeout = Duration::from_secs(1);
    let config = ZkConfig {
        connect_timeout: timeout,
        ..config()
    };
    let started = Instant::now();
    let result = ZooKeeperLock::connect(&format!("127.0.0.1:{port}"), config, Events::none()).await;
    let took = started.elapsed();
    let err = result.unwrap_err();
    eprintln!("unreachable ZooKeeper: {err} after {took:?}");
    assert_eq!(err.kind(), "backend", "{err}");
    assert!(!err.to_string().contains('\n'), "{err}");
    assert!(took < timeout + Duration::from_millis(500), "took {took:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fixed_leases_are_unsupported() {
    let zk = start_single().await;
    let locker = zk.locker(Events::none()).await;
    assert!(!locker.capabilities().fixed_lease);
    let opts = AcquireOptions::try_once().fixed(Duration::from_secs(1));
    let err = locker.acquire("fixed", &opts).await.unwrap_err();
    assert!(matches!(err, LockError::Unsupported { .. }), "{err}");
    assert!(
        zk.nodes(&locker, "fixed").await.is_empty(),
        "no node left behind"
    );
}

/// Re-entry needs no new node and keeps the token; only the last release deletes the node.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reentry_shares_one_node() {
    let zk = start_single().await;
    let locker = zk.locker(Events::none()).await;
    let opts = AcquireOptions::try_once().owner(OwnerId::new("worker"));
    let outer = locker.acquire("reentry", &opts).await.unwrap();
    let inner = locker.acquire("reentry", &opts).await.unwrap();
    assert_eq!(zk.nodes(&locker, "reentry").await.len(), 1);
    assert_eq!(outer.token(), inner.token());
    inner.release().await.unwrap();
    assert_eq!(zk.nodes(&locker, "reentry").await.len(), 1);
    outer.release().await.unwrap();
    assert!(zk.nodes(&locker, "reentry").await.is_empty());
}

/// `Renewed` events: one per held lock per probe, with the probe's round trip and the negotiated timeout.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn renewals_report_round_trip_and_session_timeout() {
    let zk = start_single().await;
    let log = EventLog::new();
    let locker = zk.locker(Events::to(log.clone())).await;
    let negotiated = locker.session_timeout().await.unwrap();
    assert_eq!(negotiated, SESSION);
    let a = locker
        .acquire("renew-a", &AcquireOptions::try_once())
        .await
        .unwrap();
    let b = locker
        .acquire("renew-b", &AcquireOptions::try_once())
        .await
        .unwrap();
    tokio::time::sleep(SESSION * 2).await;
    // 2 s at one probe per 333 ms: about 6 for each lock.
    for renewal in consensus::renewals_of(&log, &["renew-a", "renew-b"], 4) {
        assert_eq!(renewal.granted, negotiated);
        // Under the probe period: a loaded machine may stretch one, but never past the next.
        assert!(renewal.round_trip < SESSION / 3, "{renewal:?}");
    }
    assert!(
        a.deadline() > Instant::now() + SESSION / 3,
        "deadline kept ahead by the probes"
    );
    a.release().await.unwrap();
    b.release().await.unwrap();
}

/// Freezing the client's connection (both directions) past the session timeout: `lost()` resolves, the
/// server expires the session and deletes its node, and once the network is back the client opens a new
/// session, whose acquire gets a new node and a larger token.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn frozen_connection_expires_the_session() {
    let zk = start_single().await;
    let proxy = Proxy::start(zk._servers.addr()).unwrap();
    let log = EventLog::new();
    let locker =
        ZooKeeperLock::connect(&proxy.addr().to_string(), config(), Events::to(log.clone()))
            .await
            .unwrap();
    let lease = locker
        .acquire("frozen", &AcquireOptions::try_once())
        .await
        .unwrap();
    let old_nodes = zk.nodes(&locker, "frozen").await;
    assert_eq!(old_nodes.len(), 1);
    // The session is live: a probe has come back since the acquire.
    let renewed = || log.count(|e| matches!(e, LockEvent::Renewed { .. })) > 0;
    assert!(
        poll::until_async(SESSION * 2, renewed).await,
        "no probe answered"
    );
    let frozen_at = Instant::now();
    proxy.set_both(Fault::Blackhole);
    let bound = SESSION + Duration::from_millis(300);
    let reason = tokio::time::timeout(bound, lease.lost())
        .await
        .unwrap_or_else(|_| panic!("lost() did not resolve within {bound:?} of the freeze"));
    eprintln!(
        "frozen connection: lost after {:?}: {reason}",
        frozen_at.elapsed()
    );
    assert!(!lease.is_held());
    // Frozen well past the server's expiry of the session.
    tokio::time::sleep_until((frozen_at + SESSION * 5 / 2).into()).await;
    proxy.set_both(Fault::Pass);
    let gone = poll::until_awaited(Duration::from_secs(2), || async {
        zk.nodes(&locker, "frozen").await.is_empty()
    });
    assert!(gone.await, "the expired session's node is still there");
    let again = locker
        .acquire("frozen", &AcquireOptions::wait(Duration::from_secs(5)))
        .await
        .unwrap();
    assert!(again.token() > lease.token());
    let nodes = zk.nodes(&locker, "frozen").await;
    assert_eq!(nodes.len(), 1);
    assert_ne!(nodes, old_nodes);
    assert!(matches!(
        lease.release().await,
        Err(LockError::NotHeld { .. })
    ));
    again.release().await.unwrap();
    let reasons: Vec<_> = log
        .snapshot()
        .into_iter()
        .filter_map(|e| match e {
            LockEvent::Lost { reason, .. } => Some(reason),
            _ => None,
        })
        .collect();
    eprintln!("frozen connection: Lost events {reasons:?}");
    assert_eq!(reasons.len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ensemble_smoke() {
    consensus::cluster_smoke(&start_ensemble().await).await;
}

/// Killing the leader of a 3-node ensemble while four clients contend on one key: never two holders at
/// once, and the lock is taken again soon. Sessions of 4 s survive the election.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn leader_loss_keeps_mutual_exclusion() {
    let zk = start_ensemble().await;
    let config = ZkConfig {
        renewal: Renewal::new(Duration::from_secs(4)),
        ..config()
    };
    let mut clients: Vec<Arc<dyn Locker>> = Vec::new();
    for _ in 0..4 {
        clients.push(Arc::new(
            zk.locker_with(config.clone(), Events::none()).await,
        ));
    }
    let zk = Arc::new(zk);
    let victim = zk.clone();
    consensus::leader_loss_keeps_mutual_exclusion("zookeeper", clients, move || {
        consensus::kill_leader(&victim._servers);
    })
    .await;
}

/// A brief disconnect (connections reset, the client reconnects at once, the session survives): the lock
/// is kept by default, and lost at once with `lose_on_disconnect`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn brief_disconnect_keeps_the_lock_unless_configured_otherwise() {
    let zk = start_single().await;
    let proxy = Proxy::start(zk._servers.addr()).unwrap();
    let strict = ZkConfig {
        lose_on_disconnect: true,
        ..config()
    };
    let tolerant = ZooKeeperLock::connect(&proxy.addr().to_string(), config(), Events::none())
        .await
        .unwrap();
    let strict = ZooKeeperLock::connect(&proxy.addr().to_string(), strict, Events::none())
        .await
        .unwrap();
    let kept = tolerant
        .acquire("blip-a", &AcquireOptions::try_once())
        .await
        .unwrap();
    let dropped = strict
        .acquire("blip-b", &AcquireOptions::try_once())
        .await
        .unwrap();
    let reset_at = Instant::now();
    proxy.reset_all();
    let reason = tokio::time::timeout(Duration::from_millis(500), dropped.lost())
        .await
        .expect("lose_on_disconnect: lost() within 500 ms of the reset");
    eprintln!(
        "brief disconnect: strict client lost its lock after {:?}: {reason}",
        reset_at.elapsed()
    );
    tokio::time::sleep(SESSION * 2).await;
    assert!(
        kept.is_held(),
        "a reconnect within the session timeout keeps the lock"
    );
    assert_eq!(zk.nodes(&tolerant, "blip-a").await.len(), 1);
    kept.release().await.unwrap();
    // The strict client opens a new session for its next lock.
    let again = strict
        .acquire("blip-b", &AcquireOptions::wait(Duration::from_secs(5)))
        .await
        .unwrap();
    assert!(again.token() > dropped.token());
    // Its node was cleared although the stale lease was never released.
    assert!(matches!(
        dropped.release().await,
        Err(LockError::NotHeld { .. })
    ));
    again.release().await.unwrap();
}
