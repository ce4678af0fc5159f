//! `etcd-lease` on real etcd: the conformance suite against one member, a smoke subset against a 3-member
//! cluster, losing the leader under contention, revoking a lease behind the holder's back, and bad input.
#![allow(clippy::unwrap_used)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use etcd_client::GetOptions;
use lockbench_servers::{EtcdCluster, EtcdServer, poll};
use lockers::conformance::Target;
use lockers::etcd::{EtcdConfig, EtcdLease};
use lockers::{
    AcquireOptions, EventLog, Events, Lease, LockError, LockEvent, Locker, LossReason, Renewal,
};

#[path = "support/consensus.rs"]
mod consensus;
#[path = "support/contention.rs"]
mod contention;

/// Watchdog lease TTL of the clients (etcd's minimum here is 1 s; 2 s leaves room for a keep-alive to
/// be late on a busy 2-core machine).
const TTL: Duration = Duration::from_secs(2);

fn config() -> EtcdConfig {
    EtcdConfig {
        renewal: Renewal::new(TTL),
        ..EtcdConfig::default()
    }
}

/// A Target over some etcd members; `_servers` keeps them running.
struct Etcd<S> {
    _servers: S,
    endpoints: Vec<String>,
    admin: etcd_client::Client,
}

async fn start_single() -> Etcd<EtcdServer> {
    let server = consensus::start_blocking(EtcdServer::start).await;
    let endpoints = vec![server.endpoint()];
    Etcd::new(server, endpoints).await
}

async fn start_cluster() -> Etcd<EtcdCluster> {
    let cluster = consensus::start_blocking(|| EtcdCluster::start(3)).await;
    let endpoints = cluster.endpoints();
    Etcd::new(cluster, endpoints).await
}

impl<S> Etcd<S> {
    async fn new(servers: S, endpoints: Vec<String>) -> Self {
        let admin = etcd_client::Client::connect(&endpoints, None)
            .await
            .unwrap();
        Etcd {
            _servers: servers,
            endpoints,
            admin,
        }
    }

    async fn locker(&self, events: Events) -> EtcdLease {
        EtcdLease::connect(&self.endpoints, config(), events)
            .await
            .unwrap()
    }

    /// Revokes the lease of every key queued on `key` (the holder's session lease).
    async fn revoke_leases_of(&self, locker: &EtcdLease, key: &str) -> usize {
        let prefix = locker.queue_prefix(key);
        let mut admin = self.admin.clone();
        let queued = admin
            .get(prefix, Some(GetOptions::new().with_prefix()))
            .await
            .unwrap();
        for kv in queued.kvs() {
            admin.lease_revoke(kv.lease()).await.unwrap();
        }
        queued.kvs().len()
    }
}

#[async_trait]
impl<S: Send + Sync> Target for Etcd<S> {
    async fn client(&self, events: Events) -> Arc<dyn Locker> {
        Arc::new(self.locker(events).await)
    }

    fn watchdog_timeout(&self) -> Duration {
        TTL
    }

    fn short_lease(&self) -> Duration {
        Duration::from_secs(1)
    }

    async fn remove_behind_back(&self, lease: &Lease) {
        let probe = self.locker(Events::none()).await;
        assert_eq!(self.revoke_leases_of(&probe, lease.key()).await, 1);
    }

    fn slack(&self) -> Duration {
        Duration::from_millis(400)
    }
}

lockers::conformance_tests!(start_single().await);

#[tokio::test]
async fn config_rejects_bad_values() {
    let bad = [
        EtcdConfig {
            renewal: Renewal::new(Duration::from_millis(500)),
            ..config()
        },
        EtcdConfig {
            renewal: Renewal::new(Duration::from_millis(1500)),
            ..config()
        },
        EtcdConfig {
            renewal: Renewal::new(Duration::ZERO),
            ..config()
        },
        EtcdConfig {
            renewal: Renewal {
                ratio: 0.0,
                ..Renewal::new(TTL)
            },
            ..config()
        },
        EtcdConfig {
            renewal: Renewal {
                ratio: 1.0,
                ..Renewal::new(TTL)
            },
            ..config()
        },
        EtcdConfig {
            renewal: Renewal {
                ratio: f64::NAN,
                ..Renewal::new(TTL)
            },
            ..config()
        },
        EtcdConfig {
            prefix: String::new(),
            ..config()
        },
        EtcdConfig {
            prefix: "locks/".into(),
            ..config()
        },
        EtcdConfig {
            connect_timeout: Duration::ZERO,
            ..config()
        },
        EtcdConfig {
            request_timeout: Duration::ZERO,
            ..config()
        },
    ];
    for config in bad {
        // Checked before any connection is tried, so no server is needed.
        let endpoints = ["http://127.0.0.1:9".to_owned()];
        let err = EtcdLease::connect(&endpoints, config.clone(), Events::none())
            .await
            .unwrap_err();
        assert_eq!(err.kind(), "config", "{config:?}: {err}");
        assert!(!err.to_string().contains('\n'), "{err}");
    }
    let no_endpoints = EtcdLease::connect(&[], config(), Events::none()).await;
    assert_eq!(no_endpoints.unwrap_err().kind(), "config");
}

#[tokio::test]
async fn unreachable_server_fails_within_connect_timeout() {
    let port = consensus::unused_port();
    let timeout = Duration::from_secs(1);
    let config = EtcdConfig {
        connect_timeout: timeout,
        ..config()
    };
    let started = Instant::now();
    let result = EtcdLease::connect(
        &[format!("http://127.0.0.1:{port}")],
        config,
        Events::none(),
    )
    .await;
    let took = started.elapsed();
    let err = result.unwrap_err();
    eprintln!("unreachable etcd: {err} after {took:?}");
    assert_eq!(err.kind(), "backend", "{err}");
    assert!(took < timeout + Duration::from_millis(500), "took {took:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fixed_leases_must_be_whole_seconds() {
    let etcd = start_single().await;
    let locker = etcd.locker(Events::none()).await;
    for ttl in [Duration::from_millis(300), Duration::from_millis(1500)] {
        let err = locker
            .acquire("fixed-fraction", &AcquireOptions::try_once().fixed(ttl))
            .await
            .unwrap_err();
        assert_eq!(err.kind(), "config", "{ttl:?}: {err}");
    }
    let caps = locker.capabilities();
    assert_eq!(
        (caps.min_ttl, caps.ttl_granularity),
        (Duration::from_secs(1), Duration::from_secs(1))
    );
    let lease = locker
        .acquire(
            "fixed-fraction",
            &AcquireOptions::try_once().fixed(Duration::from_secs(1)),
        )
        .await
        .unwrap();
    lease.release().await.unwrap();
}

/// Revoking the session lease behind the holder's back: every lock of that client is lost within one
/// keep-alive period (plus a round trip and slack), with `LeaseRevoked`; the next acquire gets a new
/// session and a larger token.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn revoked_lease_is_noticed_within_one_keep_alive_period() {
    let etcd = start_single().await;
    let log = EventLog::new();
    let locker = etcd.locker(Events::to(log.clone())).await;
    let first = locker
        .acquire("revoke-a", &AcquireOptions::try_once())
        .await
        .unwrap();
    let second = locker
        .acquire("revoke-b", &AcquireOptions::try_once())
        .await
        .unwrap();
    // Let a keep-alive or two pass first, so the revoke lands mid-period.
    tokio::time::sleep(Duration::from_millis(900)).await;
    let revoked_at = Instant::now();
    assert_eq!(etcd.revoke_leases_of(&locker, "revoke-a").await, 1);
    let period = config().keep_alive_period();
    let bound = period + Duration::from_millis(400);
    let reason = tokio::time::timeout(bound, first.lost()).await.unwrap();
    let noticed = revoked_at.elapsed();
    eprintln!("revoked lease noticed after {noticed:?} (keep-alive period {period:?}): {reason}");
    assert_eq!(reason, LossReason::LeaseRevoked);
    // The session carried both locks; they are marked one after the other.
    let second_reason = tokio::time::timeout(Duration::from_millis(100), second.lost()).await;
    assert_eq!(second_reason.unwrap(), LossReason::LeaseRevoked);
    assert!(!first.is_held() && !second.is_held());
    // `lost()` wakes before the `Lost` event is recorded: give the events a moment.
    let losses = || {
        log.count(|e| {
            matches!(
                e,
                LockEvent::Lost {
                    reason: LossReason::LeaseRevoked,
                    ..
                }
            )
        })
    };
    poll::until_async(Duration::from_millis(100), || losses() == 2).await;
    assert_eq!(losses(), 2, "{:?}", log.snapshot());
    let again = locker
        .acquire("revoke-a", &AcquireOptions::try_once())
        .await
        .unwrap();
    assert!(again.token() > first.token());
    assert!(matches!(
        first.release().await,
        Err(LockError::NotHeld { .. })
    ));
    again.release().await.unwrap();
}

/// `Renewed` events: one per held lock per keep-alive, with the keep-alive's round trip and the TTL the
/// server granted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn renewals_report_round_trip_and_granted_ttl() {
    let etcd = start_single().await;
    let log = EventLog::new();
    let locker = etcd.locker(Events::to(log.clone())).await;
    let a = locker
        .acquire("renew-a", &AcquireOptions::try_once())
        .await
        .unwrap();
    let b = locker
        .acquire("renew-b", &AcquireOptions::try_once())
        .await
        .unwrap();
    tokio::time::sleep(TTL * 2).await;
    // 4 s at one keep-alive per 667 ms: about 6 for each lock.
    for renewal in consensus::renewals_of(&log, &["renew-a", "renew-b"], 4) {
        assert_eq!(renewal.granted, TTL);
        // Under the keep-alive period: a loaded machine may stretch one, but never past the next.
        assert!(renewal.round_trip < TTL / 3, "{renewal:?}");
        assert_eq!(renewal.remaining_before, None);
    }
    a.release().await.unwrap();
    b.release().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cluster_smoke() {
    consensus::cluster_smoke(&start_cluster().await).await;
}

/// Killing the leader of a 3-member cluster while four clients contend on one key: never two holders at
/// once, and the lock is taken again soon.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn leader_loss_keeps_mutual_exclusion() {
    let etcd = start_cluster().await;
    let mut clients: Vec<Arc<dyn Locker>> = Vec::new();
    for _ in 0..4 {
        clients.push(Arc::new(etcd.locker(Events::none()).await));
    }
    let cluster = Arc::new(etcd);
    let victim = cluster.clone();
    consensus::leader_loss_keeps_mutual_exclusion("etcd", clients, move || {
        consensus::kill_leader(&victim._servers);
    })
    .await;
}

/// Queue-key names are reused (a fresh name per acquire would leave a tombstone per acquire in etcd's key
/// index and slow every later acquire on the lock): 40 acquires by one client create at most 2 names.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn queue_key_names_are_reused() {
    let etcd = start_single().await;
    let locker = etcd.locker(Events::none()).await;
    for _ in 0..40 {
        let lease = locker
            .acquire("names", &AcquireOptions::try_once())
            .await
            .unwrap();
        lease.release().await.unwrap();
    }
    // Every put under the queue prefix since the start of history.
    let options = etcd_client::WatchOptions::new()
        .with_prefix()
        .with_start_revision(1);
    let mut history = etcd
        .admin
        .watch_client()
        .watch(locker.queue_prefix("names"), Some(options))
        .await
        .unwrap();
    let mut names = std::collections::HashSet::new();
    let mut puts = 0;
    while puts < 40 {
        let answer = tokio::time::timeout(Duration::from_secs(5), history.message())
            .await
            .unwrap()
            .unwrap()
            .unwrap();
        for event in answer.events() {
            if event.event_type() == etcd_client::EventType::Put {
                puts += 1;
                names.insert(event.kv().unwrap().key().to_vec());
            }
        }
    }
    assert!(names.len() <= 2, "{} names for 40 acquires", names.len());
}

/// A key left under our name by an earlier hold (its background delete gave up) carries another lease.
/// The next acquire on that name must not adopt it: when the leftover's lease ends, a second client would
/// get the lock while the first still holds it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn leftover_key_under_another_lease_is_not_adopted() {
    let etcd = start_single().await;
    let (first, second) = (
        etcd.locker(Events::none()).await,
        etcd.locker(Events::none()).await,
    );
    let try_once = AcquireOptions::try_once();
    // Learn the name the first client's next acquire reuses.
    let lease = first.acquire("leftover", &try_once).await.unwrap();
    let prefix = first.queue_prefix("leftover");
    let mut admin = etcd.admin.clone();
    let listed = admin
        .get(prefix.clone(), Some(GetOptions::new().with_prefix()))
        .await
        .unwrap();
    let name = listed.kvs()[0].key().to_vec();
    lease.release().await.unwrap();
    // The leftover: same name, a 1 s lease nobody keeps alive.
    let stale = admin.lease_grant(1, None).await.unwrap().id();
    let put = etcd_client::PutOptions::new().with_lease(stale);
    admin.put(name.clone(), "", Some(put)).await.unwrap();

    let held = first.acquire("leftover", &try_once).await.unwrap();
    let found = admin.get(name, None).await.unwrap();
    let leases: Vec<i64> = found.kvs().iter().map(|kv| kv.lease()).collect();
    assert!(!leases.contains(&stale), "the holder's key is the leftover");
    // Past the leftover's lease (etcd expires leases up to ~0.5 s late), the lock is still held.
    tokio::time::sleep(Duration::from_millis(1800)).await;
    let intruder = second.acquire("leftover", &try_once).await;
    assert!(
        matches!(intruder, Err(LockError::Timeout { .. })),
        "a second holder while the first holds: {intruder:?}"
    );
    held.release().await.unwrap();
}
