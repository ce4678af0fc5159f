//! `cargo bench -p lockbench --bench acquire`: uncontended try-once acquire + release per strategy
//! (criterion), against real local servers this bench starts, next to the raw operations the DESIGN §8
//! targets are ratios of: a trivial `EVALSHA`, `SET NX PX`, an etcd put, a ZooKeeper create +
//! getChildren.
//!
//! Every strategy's iterations are interleaved with its baselines — run on the strategy client's own
//! connection (or etcd client, or ZooKeeper session), twice per cycle — so both share the machine's
//! noise; the baselines' time is not counted in the strategy's criterion figure but recorded in
//! HdrHistograms next to it. After criterion's report the bench prints p50/p99 of everything and each
//! ratio beside its target:
//! - redis-watchdog p50 ≤ 1.3 × (2 × EVALSHA p50) (the batched variant acquires the same way);
//! - etcd-lease p50 ≤ 1.5 × (2 × put p50);
//! - zookeeper p50 ≤ 1.5 × (2 × (create p50 + getChildren p50)).
//!
//! A server that is not installed, or a strategy that does not connect, is skipped with its reason.
#![allow(clippy::unwrap_used)]

mod support;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::Criterion;
use lockbench::measure::{Bound, Check, Latency, micros, render_checks};
use lockbench_servers::{EtcdServer, RedisServer, ZkServer};
use lockers::etcd::{EtcdConfig, EtcdLease};
use lockers::memory::{MemoryConfig, MemoryLocker, MemoryServer};
use lockers::redis::Commands;
use lockers::redis::{
    GuardThreadConfig, KeyspaceConfig, KeyspaceVariant, RedisGuardThread, RedisKeyspace,
    RedisWatchdog, RenewalMode, WatchdogConfig,
};
use lockers::zookeeper::{ZkConfig, ZooKeeperLock};
use lockers::{AcquireOptions, Events, Locker};
use tokio::runtime::Runtime;
use tokio::sync::Mutex;
use zookeeper_client::{Acls, CreateMode};

const KEY: &str = "bench:acquire";
const ZK_PARENT: &str = "/lockbench-bench";

/// One raw operation a target is a ratio of, on a strategy client's own connection.
// Built once per benchmark and never moved on the measured path, so the variants' sizes don't matter.
#[allow(clippy::large_enum_variant)]
#[derive(Clone)]
enum Raw {
    /// `EVALSHA` of `return 1`.
    Evalsha(Commands, Arc<redis::Script>),
    /// `SET k v NX PX 30000` (the key is deleted afterwards, untimed).
    SetNxPx(Commands),
    /// A put of one small key.
    EtcdPut(etcd_client::KvClient),
    /// Create an ephemeral-sequential node, list the parent (the node is deleted afterwards, untimed).
    ZkCreateList(zookeeper_client::Client),
}

impl Raw {
    /// Runs it once, recording each timed part.
    async fn run(&mut self, parts: &mut BTreeMap<&'static str, Latency>) {
        let mut timed = |name, started: Instant| {
            parts.entry(name).or_default().record(started.elapsed());
        };
        match self {
            Raw::Evalsha(connection, script) => {
                let started = Instant::now();
                let one: i64 = script.invoke_async(connection).await.unwrap();
                timed("redis EVALSHA", started);
                assert_eq!(one, 1);
            }
            Raw::SetNxPx(connection) => {
                let key = "bench:raw-set";
                let started = Instant::now();
                let set: Option<String> = redis::cmd("SET")
                    .arg(key)
                    .arg("v")
                    .arg("NX")
                    .arg("PX")
                    .arg(30_000)
                    .query_async(connection)
                    .await
                    .unwrap();
                timed("redis SET NX PX", started);
                assert!(set.is_some());
                let _: i64 = redis::cmd("DEL")
                    .arg(key)
                    .query_async(connection)
                    .await
                    .unwrap();
            }
            Raw::EtcdPut(kv) => {
                let started = Instant::now();
                kv.put("bench-raw-put", "v", None).await.unwrap();
                timed("etcd put", started);
            }
            Raw::ZkCreateList(zk) => {
                let node = format!("{ZK_PARENT}/n-");
                let mode = CreateMode::EphemeralSequential.with_acls(Acls::anyone_all());
                let started = Instant::now();
                let (_, sequence) = zk.create(&node, &[], &mode).await.unwrap();
                timed("zk create", started);
                let started = Instant::now();
                zk.get_children(ZK_PARENT).await.unwrap();
                timed("zk getChildren", started);
                zk.delete(&format!("{node}{sequence}"), None).await.unwrap();
            }
        }
    }

    /// The name of the whole operation, for criterion.
    fn name(&self) -> &'static str {
        match self {
            Raw::Evalsha(..) => "redis EVALSHA",
            Raw::SetNxPx(_) => "redis SET NX PX",
            Raw::EtcdPut(_) => "etcd put",
            Raw::ZkCreateList(_) => "zk create+getChildren",
        }
    }
}

/// What one strategy's bench records: its cycles and its interleaved baselines.
struct Measured {
    lock: Latency,
    raws: Vec<Raw>,
    parts: BTreeMap<&'static str, Latency>,
}

/// One strategy under test.
struct Subject {
    id: String,
    locker: Arc<dyn Locker>,
    measured: Arc<Mutex<Measured>>,
}

impl Subject {
    fn new(locker: Arc<dyn Locker>, raws: Vec<Raw>) -> Self {
        Subject {
            id: locker.id().to_owned(),
            locker,
            measured: Arc::new(Mutex::new(Measured {
                lock: Latency::new(),
                raws,
                parts: BTreeMap::new(),
            })),
        }
    }
}

/// Everything the bench talks to; `None` where a server or strategy is unavailable.
struct Setup {
    subjects: Vec<Subject>,
    raws: Vec<Raw>,
    _servers: (
        Option<RedisServer>,
        Option<RedisServer>,
        Option<EtcdServer>,
        Option<ZkServer>,
    ),
}

async fn setup() -> Setup {
    let mut subjects = Vec::new();
    let mut raws: Vec<Raw> = Vec::new();
    let script = Arc::new(redis::Script::new("return 1"));
    let memory = MemoryLocker::new(MemoryServer::new(), MemoryConfig::default(), Events::none());
    if let Some(memory) = support::or_skip("memory", memory) {
        subjects.push(Subject::new(Arc::new(memory), Vec::new()));
    }

    let redis = support::or_skip("redis strategies", RedisServer::start());
    if let Some(server) = &redis {
        for renewal in [RenewalMode::PerLock, RenewalMode::BATCHED_DEFAULT] {
            let config = WatchdogConfig {
                renewal_mode: renewal,
                ..WatchdogConfig::default()
            };
            let connected = RedisWatchdog::connect(&server.url(), config, Events::none()).await;
            if let Some(locker) = support::or_skip("redis-watchdog", connected) {
                let evalsha = Raw::Evalsha(locker.connection().commands(), script.clone());
                if raws.is_empty() {
                    raws.push(evalsha.clone());
                    raws.push(Raw::SetNxPx(locker.connection().commands()));
                }
                subjects.push(Subject::new(Arc::new(locker), vec![evalsha]));
            }
        }
        let connected =
            RedisGuardThread::connect(&server.url(), GuardThreadConfig::default(), Events::none())
                .await;
        if let Some(locker) = support::or_skip("redis-guard-thread", connected) {
            let connection = locker.connection().commands();
            let raws = vec![
                Raw::Evalsha(connection.clone(), script.clone()),
                Raw::SetNxPx(connection),
            ];
            subjects.push(Subject::new(Arc::new(locker), raws));
        }
    }
    // The keyspace variant switches notifications on: its own server, so the others do not pay for them.
    let keyspace_server = support::or_skip("redis-keyspace-shadow", RedisServer::start());
    if let Some(server) = &keyspace_server {
        let connected = RedisKeyspace::connect(
            &server.url(),
            KeyspaceVariant::Shadow,
            KeyspaceConfig::default(),
            Events::none(),
        )
        .await;
        if let Some(locker) = support::or_skip("redis-keyspace-shadow", connected) {
            let evalsha = Raw::Evalsha(locker.connection().commands(), script.clone());
            subjects.push(Subject::new(Arc::new(locker), vec![evalsha]));
        }
    }

    let etcd = support::or_skip(
        "etcd-lease",
        tokio::task::spawn_blocking(EtcdServer::start)
            .await
            .unwrap(),
    );
    if let Some(server) = &etcd {
        let connected =
            EtcdLease::connect(&[server.endpoint()], EtcdConfig::default(), Events::none()).await;
        if let Some(locker) = support::or_skip("etcd-lease", connected) {
            let put = Raw::EtcdPut(locker.client().kv_client());
            raws.push(put.clone());
            subjects.push(Subject::new(Arc::new(locker), vec![put]));
        }
    }

    let zk = support::or_skip(
        "zookeeper",
        tokio::task::spawn_blocking(ZkServer::start).await.unwrap(),
    );
    if let Some(server) = &zk {
        let connected = ZooKeeperLock::connect(
            &server.connect_string(),
            ZkConfig::default(),
            Events::none(),
        )
        .await;
        if let Some(locker) = support::or_skip("zookeeper", connected) {
            let client = locker.zk_client().await.unwrap();
            let persistent = CreateMode::Persistent.with_acls(Acls::anyone_all());
            client.mkdir(ZK_PARENT, &persistent).await.unwrap();
            let create_list = Raw::ZkCreateList(client);
            raws.push(create_list.clone());
            subjects.push(Subject::new(Arc::new(locker), vec![create_list]));
        }
    }
    Setup {
        subjects,
        raws,
        _servers: (redis, keyspace_server, etcd, zk),
    }
}

async fn cycle(locker: &dyn Locker) -> Duration {
    let started = Instant::now();
    let lease = locker
        .acquire(KEY, &AcquireOptions::try_once())
        .await
        .unwrap();
    lease.release().await.unwrap();
    started.elapsed()
}

fn bench_strategies(c: &mut Criterion, runtime: &Runtime, subjects: &[Subject]) {
    let mut group = c.benchmark_group("acquire+release");
    for subject in subjects {
        group.bench_function(subject.id.as_str(), |b| {
            b.to_async(runtime).iter_custom(|iters| {
                let (locker, measured) = (subject.locker.clone(), subject.measured.clone());
                async move {
                    let mut measured = measured.lock().await;
                    let Measured { lock, raws, parts } = &mut *measured;
                    let mut total = Duration::ZERO;
                    for _ in 0..iters {
                        let took = cycle(&*locker).await;
                        total += took;
                        lock.record(took);
                        for raw in raws.iter_mut() {
                            raw.run(parts).await;
                            raw.run(parts).await;
                        }
                    }
                    total
                }
            });
        });
    }
    group.finish();
}

fn bench_raw(c: &mut Criterion, runtime: &Runtime, raws: &[Raw]) {
    let mut group = c.benchmark_group("raw");
    for raw in raws {
        let raw = Arc::new(Mutex::new(raw.clone()));
        let name = raw.try_lock().map(|r| r.name()).unwrap_or("raw");
        group.bench_function(name, |b| {
            b.to_async(runtime).iter_custom(|iters| {
                let raw = raw.clone();
                async move {
                    let mut raw = raw.lock().await;
                    let mut parts = BTreeMap::new();
                    let started = Instant::now();
                    for _ in 0..iters {
                        raw.run(&mut parts).await;
                    }
                    started.elapsed()
                }
            });
        });
    }
    group.finish();
}

/// The p50/p99 table and the target checks, from the interleaved histograms.
async fn report(subjects: &[Subject]) {
    println!(
        "\nuncontended acquire+release, interleaved with its baselines (same client, same run)"
    );
    println!("{}", support::load_line());
    println!(
        "  {:<24} {:<18} {:>8} {:>10} {:>10}",
        "strategy", "operation", "n", "p50 µs", "p99 µs"
    );
    let mut checks = Vec::new();
    for subject in subjects {
        let measured = subject.measured.lock().await;
        let row = |op: &str, l: &Latency| {
            println!(
                "  {:<24} {:<18} {:>8} {:>10.1} {:>10.1}",
                subject.id,
                op,
                l.count(),
                micros(l.p50()),
                micros(l.p99())
            );
        };
        row("acquire+release", &measured.lock);
        for (name, latency) in &measured.parts {
            row(name, latency);
        }
        let p50 = |name: &str| measured.parts.get(name).map(|l| micros(l.p50()));
        let lock = micros(measured.lock.p50());
        let mut check = |what: &str, baseline: Option<f64>, target: Option<Bound>| {
            if let Some(baseline) = baseline {
                checks.push(Check {
                    what: format!("{} p50 ÷ {what}", subject.id),
                    value: lock,
                    baseline,
                    unit: "µs",
                    target,
                });
            }
        };
        let watchdog = subject.id.starts_with(lockers::redis::watchdog::ID);
        check(
            "2 × EVALSHA p50",
            p50("redis EVALSHA").map(|e| 2.0 * e),
            watchdog.then_some(Bound::AtMost(1.3)),
        );
        check(
            "2 × SET NX PX p50",
            p50("redis SET NX PX").map(|s| 2.0 * s),
            None,
        );
        check(
            "2 × put p50",
            p50("etcd put").map(|p| 2.0 * p),
            Some(Bound::AtMost(1.5)),
        );
        check(
            "2 × (create + getChildren) p50",
            p50("zk create")
                .zip(p50("zk getChildren"))
                .map(|(c, l)| 2.0 * (c + l)),
            Some(Bound::AtMost(1.5)),
        );
    }
    println!();
    print!("{}", render_checks("targets (DESIGN §8)", &checks));
}

fn main() {
    let runtime = support::runtime();
    let setup = runtime.block_on(setup());
    let mut criterion = support::criterion();
    bench_strategies(&mut criterion, &runtime, &setup.subjects);
    bench_raw(&mut criterion, &runtime, &setup.raws);
    criterion.final_summary();
    runtime.block_on(async {
        report(&setup.subjects).await;
        for subject in &setup.subjects {
            subject.locker.close().await;
        }
    });
}
