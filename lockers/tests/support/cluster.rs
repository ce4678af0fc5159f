//! What the Redis Cluster tests share: the Redis and the Valkey cluster every test of a flavor uses
//! (each started by the first test that needs it) with a lock that keeps failovers apart from the other
//! tests, a row's clients of them, the conformance target on them, and the failover check (locks taken
//! on one master are still held, renewed and exclusive once a replica took over its slots).

use std::sync::{Arc, LazyLock};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use lockbench_servers::{Flavor, RedisCluster, RedisOptions};
use lockers::conformance::Target;
use lockers::redis::{
    GuardThreadConfig, KeyspaceConfig, KeyspaceVariant, RedisGuardThread, RedisKeyspace,
    RedisWatchdog, Redisson, RedissonConfig, RenewalMode, Topology, WatchdogConfig,
};
use lockers::{AcquireOptions, EventLog, Events, Lease, LockError, LockEvent, Locker, Renewal};

/// The watchdog timeout of the conformance clients.
pub(crate) const TIMEOUT: Duration = Duration::from_millis(600);
/// The key prefix of every client.
pub(crate) const PREFIX: &str = "lbcluster:";

/// The Redis cluster every test shares (started by the first test that needs it).
pub(crate) static CLUSTER: LazyLock<RedisCluster> =
    LazyLock::new(|| RedisCluster::start().unwrap());
/// The Valkey cluster the `on_valkey` tests share.
pub(crate) static VALKEY_CLUSTER: LazyLock<RedisCluster> =
    LazyLock::new(|| RedisCluster::start_with(RedisOptions::of(Flavor::Valkey)).unwrap());

/// The shared cluster of `flavor`.
pub(crate) fn cluster(flavor: Flavor) -> &'static RedisCluster {
    match flavor {
        Flavor::Redis => &CLUSTER,
        Flavor::Valkey => &VALKEY_CLUSTER,
    }
}

/// Failover tests change which node serves a slot; they run one at a time on each cluster, and the
/// conformance cases meanwhile wait (a case's lock must not see a failover it did not ask for).
pub(crate) static FAILOVERS: LazyLock<tokio::sync::RwLock<()>> =
    LazyLock::new(|| tokio::sync::RwLock::new(()));
pub(crate) static VALKEY_FAILOVERS: LazyLock<tokio::sync::RwLock<()>> =
    LazyLock::new(|| tokio::sync::RwLock::new(()));

/// The failover lock of the shared cluster of `flavor`.
pub(crate) fn failovers(flavor: Flavor) -> &'static tokio::sync::RwLock<()> {
    match flavor {
        Flavor::Redis => &FAILOVERS,
        Flavor::Valkey => &VALKEY_FAILOVERS,
    }
}

pub(crate) fn lock_key(name: &str) -> String {
    format!("{PREFIX}{{{name}}}")
}

pub(crate) fn unique(name: &str) -> String {
    format!("{name}:{:08x}", rand::random::<u32>())
}

/// A strategy's clients of the shared cluster.
#[derive(Clone, Copy)]
pub(crate) enum Row {
    Watchdog(RenewalMode),
    GuardThread,
    Redisson(lockers::redis::Generation),
    Keyspace(KeyspaceVariant),
}

/// A client of `row` on the shared cluster of `flavor`.
pub(crate) async fn connect_on(
    flavor: Flavor,
    row: Row,
    timeout: Duration,
    events: Events,
) -> Arc<dyn Locker> {
    let url = cluster(flavor).url();
    let renewal = Renewal::new(timeout);
    match row {
        Row::Watchdog(renewal_mode) => {
            let config = WatchdogConfig {
                renewal,
                renewal_mode,
                key_prefix: PREFIX.into(),
                ..WatchdogConfig::default()
            };
            Arc::new(RedisWatchdog::connect(&url, config, events).await.unwrap())
        }
        Row::GuardThread => {
            let config = GuardThreadConfig {
                renewal,
                key_prefix: PREFIX.into(),
                ..GuardThreadConfig::default()
            };
            Arc::new(
                RedisGuardThread::connect(&url, config, events)
                    .await
                    .unwrap(),
            )
        }
        Row::Redisson(generation) => {
            let config = RedissonConfig {
                renewal,
                key_prefix: PREFIX.into(),
                topology: Topology::Replicated,
                ..RedissonConfig::new(generation)
            };
            Arc::new(Redisson::connect(&url, config, events).await.unwrap())
        }
        Row::Keyspace(variant) => {
            let config = KeyspaceConfig {
                renewal,
                key_prefix: PREFIX.into(),
                ..KeyspaceConfig::default()
            };
            Arc::new(
                RedisKeyspace::connect(&url, variant, config, events)
                    .await
                    .unwrap(),
            )
        }
    }
}

/// The conformance target: a row on a shared cluster, holding off failover tests while it runs.
pub(crate) struct OnCluster {
    flavor: Flavor,
    row: Row,
    _no_failover: tokio::sync::RwLockReadGuard<'static, ()>,
}

impl OnCluster {
    pub(crate) async fn start(row: Row) -> Self {
        Self::start_on(Flavor::Redis, row).await
    }

    pub(crate) async fn start_on(flavor: Flavor, row: Row) -> Self {
        tokio::task::block_in_place(|| cluster(flavor));
        OnCluster {
            flavor,
            row,
            _no_failover: failovers(flavor).read().await,
        }
    }
}

#[async_trait]
impl Target for OnCluster {
    async fn client(&self, events: Events) -> Arc<dyn Locker> {
        connect_on(self.flavor, self.row, TIMEOUT, events).await
    }

    fn watchdog_timeout(&self) -> Duration {
        TIMEOUT
    }

    fn short_lease(&self) -> Duration {
        Duration::from_millis(300)
    }

    async fn remove_behind_back(&self, lease: &Lease) {
        let key = lock_key(lease.key());
        let master = cluster(self.flavor).master_of(&key).unwrap();
        assert_eq!(master.command(&["DEL", &key]).unwrap(), "1");
    }

    fn slack(&self) -> Duration {
        Duration::from_millis(200)
    }
}

/// The hash slot of `key`, as `cluster` computes it (asked of a running node: a test may have killed
/// any one of the shared cluster's nodes).
pub(crate) fn slot_of(cluster: &RedisCluster, key: &str) -> u16 {
    cluster
        .slot_of(key)
        .expect("a running node answers CLUSTER KEYSLOT")
}

/// Waits until the replica of `key`'s master has as many keys in its slot as the master (the lock and
/// its fencing counter): replication is asynchronous, and a replica that just synced gets the stream
/// only after its first acknowledgement (up to a second later), so a master killed sooner loses the
/// lock with it.
pub(crate) fn wait_replicated(cluster: &RedisCluster, key: &str) {
    let slot = slot_of(cluster, key).to_string();
    let count = |node: &lockbench_servers::RedisNode| {
        node.command(&["CLUSTER", "COUNTKEYSINSLOT", &slot])
            .unwrap()
    };
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let master = cluster.master_of(key).unwrap();
        let replica = cluster.replica_of(master).unwrap();
        if count(master) == count(replica) {
            return;
        }
        assert!(Instant::now() < deadline, "the replica never got {key}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A lock taken by each row of `rows` (a row and a name) before `fail` fails their master over (every
/// lock on one master) is still held and renewed afterwards, and a second client finds it busy.
pub(crate) async fn survives(
    flavor: Flavor,
    rows: &[(Row, &str)],
    fail: impl FnOnce(&RedisCluster, &str) -> std::net::SocketAddr,
) {
    let _alone = failovers(flavor).write().await;
    let cluster = tokio::task::block_in_place(|| cluster(flavor));
    let _restart = RestartKilled(cluster);
    let mut held: Vec<Held> = Vec::new();
    for (row, name) in rows {
        let master = held
            .first()
            .map(|h| cluster.master_of(&h.key).unwrap().addr());
        held.push(Held::take(flavor, *row, cluster, name, master).await);
    }
    let key = held[0].key.clone();
    let old = cluster.master_of(&key).unwrap().addr();
    for h in &mut held {
        tokio::task::block_in_place(|| wait_replicated(cluster, &h.key));
        h.renewed_before = h.renewals();
    }
    let failed_at = Instant::now();
    tokio::task::block_in_place(|| fail(cluster, &key));
    let promoted = tokio::task::block_in_place(|| {
        cluster.wait_for_new_master(&key, old, Duration::from_secs(20))
    });
    assert!(promoted.is_some(), "no replica took over the slot");
    for h in held {
        h.still_held().await;
    }
    assert!(failed_at.elapsed() < Duration::from_secs(30));
}

/// One row's lock held through a failover: its two clients, the first reporting to `log`.
pub(crate) struct Held {
    row: Row,
    log: Arc<EventLog>,
    second: Arc<dyn Locker>,
    name: String,
    key: String,
    lease: Lease,
    renewed_before: usize,
    // Holds the lease's renewals.
    _first: Arc<dyn Locker>,
}

/// The renewal timeout of the failover tests.
pub(crate) const FAILOVER_TIMEOUT: Duration = Duration::from_secs(6);

impl Held {
    /// `row`'s first client takes a lock named after `name`, on the master at `master` if given.
    async fn take(
        flavor: Flavor,
        row: Row,
        cluster: &RedisCluster,
        name: &str,
        master: Option<std::net::SocketAddr>,
    ) -> Held {
        let log = EventLog::new();
        let first = connect_on(flavor, row, FAILOVER_TIMEOUT, Events::to(log.clone())).await;
        let second = connect_on(flavor, row, FAILOVER_TIMEOUT, Events::none()).await;
        let on_master = |n: &String| {
            master.is_none_or(|m| {
                cluster
                    .master_of(&lock_key(n))
                    .is_some_and(|x| x.addr() == m)
            })
        };
        let name = std::iter::repeat_with(|| unique(name))
            .find(on_master)
            .unwrap();
        let lease = first
            .acquire(&name, &AcquireOptions::try_once())
            .await
            .unwrap();
        let key = lock_key(&name);
        Held {
            row,
            log,
            second,
            name,
            key,
            lease,
            renewed_before: 0,
            _first: first,
        }
    }

    fn renewals(&self) -> usize {
        self.log.count(|e| matches!(e, LockEvent::Renewed { .. }))
    }

    /// Renewed after the failover, still held, busy for the second client, then released.
    async fn still_held(self) {
        let Held {
            row,
            log,
            second,
            name,
            lease,
            renewed_before,
            ..
        } = self;
        // A keyspace holder renews once when its subscription is back (events may have been missed);
        // only the next renewal shows that the promoted master publishes the shadow key's expiry.
        let renewals = if matches!(row, Row::Keyspace(_)) {
            2
        } else {
            1
        };
        let deadline = Instant::now() + FAILOVER_TIMEOUT * renewals;
        while log.count(|e| matches!(e, LockEvent::Renewed { .. }))
            < renewed_before + renewals as usize
        {
            assert!(
                Instant::now() < deadline,
                "{name}: no renewal after the failover: {:?}",
                log.snapshot()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        assert!(
            lease.is_held(),
            "{name}: the lease was lost in the failover"
        );
        let mut taken = second.acquire(&name, &AcquireOptions::try_once()).await;
        let retry_until = Instant::now() + Duration::from_secs(3);
        while matches!(taken, Err(LockError::Backend { .. })) && Instant::now() < retry_until {
            tokio::time::sleep(Duration::from_millis(100)).await;
            taken = second.acquire(&name, &AcquireOptions::try_once()).await;
        }
        assert!(
            matches!(taken, Err(LockError::Timeout { .. })),
            "{name}: the new master must still have the lock: {taken:?}"
        );
        lease.release().await.unwrap();
        second
            .acquire(&name, &AcquireOptions::try_once())
            .await
            .unwrap()
            .release()
            .await
            .unwrap();
    }
}

/// Brings a killed master of the cluster back as a replica when dropped (also when the test fails), so
/// later tests find every slot served with a replica.
pub(crate) struct RestartKilled(pub(crate) &'static RedisCluster);

impl Drop for RestartKilled {
    fn drop(&mut self) {
        tokio::task::block_in_place(|| self.0.restart_killed()).unwrap();
    }
}
