//! `cargo bench -p lockbench --bench acquire`: uncontended try-once acquire + release per strategy
//! (criterion), against real local servers this bench starts, next to each strategy's own calls sent
//! raw on the same connection with no `lockers` code in between (docs/design.md §8 target: cycle p50 ÷ raw
//! p50 ≤ 1.10):
//! - redis-watchdog (both renewal modes): its acquire and release scripts by SHA, with its arguments;
//! - redis-guard-thread: its `SET NX PX` + `INCR` script and its check-and-delete script;
//! - etcd-lease: its enqueue txn (put if absent with a lease, read the queue head) and its
//!   delete-if-ours txn;
//! - zookeeper: create an ephemeral-sequential node, getChildren, delete;
//! - postgres-advisory: its `pg_try_advisory_lock` + token statement and its `pg_advisory_unlock`;
//! - postgres-lease: its lease-row `INSERT … ON CONFLICT` and its freeing `UPDATE` (both prepared, on
//!   one connection of the bench's own to the same server);
//! - valkey-ifeq (on a Valkey of its own): its `MULTI` / `SET NX PX` / `INCR` / `EXEC` round trip and its
//!   `DELIFEQ`, no script.
//! - mysql-get-lock: its `GET_LOCK` + token statement and its `RELEASE_LOCK`, on MariaDB;
//! - mysql-lease: its lease-row `INSERT … ON DUPLICATE KEY UPDATE` and its freeing `UPDATE` (both
//!   sent through `mysql_async` as the strategies send them, on one connection of the bench's own).
//!
//! Round 1's ratios against trivial calls (2 × `EVALSHA return 1`, 2 × `SET NX PX`, 2 × etcd put,
//! 2 × (create + getChildren)) are printed as context.
//!
//! Every strategy's iterations are interleaved with its baselines — run on the strategy client's own
//! connection (or etcd client, or ZooKeeper session), twice per cycle — so both share the machine's
//! noise; the baselines' time is not counted in the strategy's criterion figure but recorded in
//! HdrHistograms next to it. After criterion's report the bench prints p50/p99 of everything and each
//! ratio beside its target. With `LOCKBENCH_PIN=1` it then measures again with the servers pinned to
//! core 0 and this process to core 1 (`taskset`), and prints those figures too.
//!
//! A server that is not installed, or a strategy that does not connect, is skipped with its reason.
#![allow(clippy::unwrap_used)]

mod support;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::Criterion;
use lockbench::base::measure::{Bound, Check, Latency, micros, render_checks};
use lockbench_servers::{EtcdServer, MariaDbServer, PostgresServer, RedisServer, ZkServer};
use lockers::etcd::{EtcdConfig, EtcdLease};
use lockers::memory::{MemoryConfig, MemoryLocker, MemoryServer};
use lockers::mysql::MysqlConfig;
use lockers::mysql::get_lock::MysqlGetLock;
use lockers::mysql::lease::MysqlLease;
use lockers::postgres::PostgresConfig;
use lockers::postgres::advisory::PostgresAdvisory;
use lockers::postgres::lease::PostgresLease;
use lockers::redis::Commands;
use lockers::redis::{
    GuardThreadConfig, KeyspaceConfig, KeyspaceVariant, RedisGuardThread, RedisKeyspace,
    RedisWatchdog, RenewalMode, ValkeyIfeq, WatchdogConfig,
};
use lockers::zookeeper::{ZkConfig, ZooKeeperLock};
use lockers::{AcquireOptions, Events, Locker};
use support::sql_raw::{RAW_MY_GET_LOCK, RAW_MY_LEASE, RAW_PG_ADVISORY, RAW_PG_LEASE, Row, SqlRaw};
use support::watchdog_scripts::{Calls, RawCycle};
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
    /// A Redis strategy's own calls sent raw: its acquire and release scripts by SHA, with its
    /// arguments; recorded as the part named here.
    OwnScripts(Commands, Arc<RawCycle>, &'static str),
    /// etcd-lease's own calls sent raw: the enqueue txn (put if absent with the lease + read the queue
    /// head) and the delete-if-ours txn, under a lease granted once.
    EtcdTxns(etcd_client::KvClient, i64),
    /// zookeeper's own calls sent raw: create an ephemeral-sequential node, list the parent, delete it.
    ZkCycle(zookeeper_client::Client),
    /// A SQL strategy's own statements sent raw (prepared), on one connection: take, then free.
    SqlStatements(Arc<SqlRaw>),
    /// valkey-ifeq's own commands sent raw: the claim's transaction, then `DELIFEQ`.
    IfeqCommands(Commands),
}

/// The part name of each strategy's own calls sent raw (the baseline of its docs/design.md §8 ratio).
const RAW_WATCHDOG: &str = "raw watchdog scripts";
const RAW_STRING: &str = "raw string scripts";
const RAW_ETCD: &str = "raw etcd txns";
const RAW_ZK: &str = "raw zk cycle";
const RAW_IFEQ: &str = "raw ifeq commands";

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
            Raw::OwnScripts(connection, cycle, name) => {
                let started = Instant::now();
                cycle.run(connection, "bench:raw-own{k}", "raw:1").await;
                timed(name, started);
            }
            Raw::EtcdTxns(kv, lease) => {
                use etcd_client::{
                    Compare, CompareOp, GetOptions, PutOptions, SortOrder, SortTarget, Txn, TxnOp,
                };
                let (queue, name) = ("bench/raw-etcd/", "bench/raw-etcd/1");
                let head = || {
                    let options = GetOptions::new()
                        .with_prefix()
                        .with_sort(SortTarget::Create, SortOrder::Ascend)
                        .with_limit(1)
                        .with_keys_only();
                    TxnOp::get(queue, Some(options))
                };
                let enqueue = Txn::new()
                    .when([Compare::create_revision(name, CompareOp::Equal, 0)])
                    .and_then([
                        TxnOp::put(name, "", Some(PutOptions::new().with_lease(*lease))),
                        head(),
                    ])
                    .or_else([
                        TxnOp::get(name, Some(GetOptions::new().with_keys_only())),
                        head(),
                    ]);
                let started = Instant::now();
                let answer = kv.txn(enqueue).await.unwrap();
                let revision = answer.header().map(|h| h.revision()).unwrap();
                let delete = Txn::new()
                    .when([Compare::create_revision(name, CompareOp::Equal, revision)])
                    .and_then([TxnOp::delete(name, None)]);
                let deleted = kv.txn(delete).await.unwrap();
                timed(RAW_ETCD, started);
                assert!(answer.succeeded() && deleted.succeeded());
            }
            Raw::ZkCycle(zk) => {
                let node = format!("{ZK_PARENT}/c-");
                let mode = CreateMode::EphemeralSequential.with_acls(Acls::anyone_all());
                let started = Instant::now();
                let (_, sequence) = zk.create(&node, &[], &mode).await.unwrap();
                zk.get_children(ZK_PARENT).await.unwrap();
                zk.delete(&format!("{node}{sequence}"), None).await.unwrap();
                timed(RAW_ZK, started);
            }
            Raw::SqlStatements(sql) => {
                let started = Instant::now();
                sql.cycle().await;
                timed(sql.name(), started);
            }
            Raw::IfeqCommands(connection) => {
                let started = Instant::now();
                support::ifeq_commands::run(connection, "bench:raw-ifeq{k}", "raw:1").await;
                timed(RAW_IFEQ, started);
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
            Raw::OwnScripts(_, _, name) => name,
            Raw::EtcdTxns(..) => RAW_ETCD,
            Raw::ZkCycle(_) => RAW_ZK,
            Raw::SqlStatements(sql) => sql.name(),
            Raw::IfeqCommands(_) => RAW_IFEQ,
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
    _servers: Servers,
}

/// The servers the bench started (Redis, the keyspace variant's Redis, Valkey, etcd, ZooKeeper,
/// PostgreSQL, MariaDB).
type Servers = (
    [Option<RedisServer>; 3],
    Option<EtcdServer>,
    Option<ZkServer>,
    Option<PostgresServer>,
    Option<MariaDbServer>,
);

impl Setup {
    /// The process ids of every server this bench started.
    fn server_pids(&self) -> Vec<u32> {
        let (redis_like, etcd, zk, postgres, mysql) = &self._servers;
        let mut pids: Vec<u32> = redis_like.iter().flatten().map(|s| s.pid()).collect();
        pids.extend(etcd.iter().map(|s| s.pid()));
        pids.extend(zk.iter().map(|s| s.pid()));
        pids.extend(postgres.iter().map(|s| s.pid()));
        pids.extend(mysql.iter().map(|s| s.pid()));
        pids
    }
}

async fn setup() -> Setup {
    let mut subjects = Vec::new();
    let mut raws: Vec<Raw> = Vec::new();
    let script = Arc::new(redis::Script::new("return 1"));
    let watchdog = Arc::new(RawCycle::new(Calls::Watchdog));
    let strings = Arc::new(RawCycle::new(Calls::String));
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
                let own = Raw::OwnScripts(
                    locker.connection().commands(),
                    watchdog.clone(),
                    RAW_WATCHDOG,
                );
                if raws.is_empty() {
                    raws.push(evalsha.clone());
                    raws.push(Raw::SetNxPx(locker.connection().commands()));
                    raws.push(own.clone());
                }
                subjects.push(Subject::new(Arc::new(locker), vec![evalsha, own]));
            }
        }
        let connected =
            RedisGuardThread::connect(&server.url(), GuardThreadConfig::default(), Events::none())
                .await;
        if let Some(locker) = support::or_skip("redis-guard-thread", connected) {
            let connection = locker.connection().commands();
            let own = Raw::OwnScripts(connection.clone(), strings.clone(), RAW_STRING);
            raws.push(own.clone());
            let interleaved = vec![
                Raw::Evalsha(connection.clone(), script.clone()),
                Raw::SetNxPx(connection),
                own,
            ];
            subjects.push(Subject::new(Arc::new(locker), interleaved));
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
    let valkey = support::or_skip("valkey-ifeq", RedisServer::start_valkey());
    if let Some(server) = &valkey {
        let connected =
            ValkeyIfeq::connect(&server.url(), GuardThreadConfig::default(), Events::none()).await;
        if let Some(locker) = support::or_skip("valkey-ifeq", connected) {
            let own = Raw::IfeqCommands(locker.connection().commands());
            raws.push(own.clone());
            subjects.push(Subject::new(Arc::new(locker), vec![own]));
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
            // Never kept alive, so it must outlive the whole bench: criterion's passes and the pinned
            // pass take minutes on a loaded machine (a 60 s lease expired mid-run and the raw txn failed).
            let lease = locker
                .client()
                .lease_client()
                .grant(3600, None)
                .await
                .unwrap()
                .id();
            let own = Raw::EtcdTxns(locker.client().kv_client(), lease);
            raws.push(own.clone());
            subjects.push(Subject::new(Arc::new(locker), vec![put, own]));
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
            let create_list = Raw::ZkCreateList(client.clone());
            let own = Raw::ZkCycle(client);
            raws.push(create_list.clone());
            raws.push(own.clone());
            subjects.push(Subject::new(Arc::new(locker), vec![create_list, own]));
        }
    }
    let postgres = support::or_skip(
        "postgres strategies",
        tokio::task::spawn_blocking(|| {
            let server = PostgresServer::start()?;
            server.query(lockers::postgres::SCHEMA)?;
            Ok::<_, lockbench_servers::ServerError>(server)
        })
        .await
        .unwrap(),
    );
    if let Some(server) = &postgres {
        let url = server.url();
        let advisory = PostgresAdvisory::connect(&url, PostgresConfig::default(), Events::none());
        let raw = SqlRaw::postgres(&url, Row::SessionLock).await;
        if let (Some(locker), Some(raw)) = (
            support::or_skip("postgres-advisory", advisory.await),
            support::or_skip("postgres-advisory raw", raw),
        ) {
            let own = Raw::SqlStatements(Arc::new(raw));
            raws.push(own.clone());
            subjects.push(Subject::new(Arc::new(locker), vec![own]));
        }
        let lease = PostgresLease::connect(&url, PostgresConfig::default(), Events::none());
        let raw = SqlRaw::postgres(&url, Row::LeaseRow).await;
        if let (Some(locker), Some(raw)) = (
            support::or_skip("postgres-lease", lease.await),
            support::or_skip("postgres-lease raw", raw),
        ) {
            let own = Raw::SqlStatements(Arc::new(raw));
            raws.push(own.clone());
            subjects.push(Subject::new(Arc::new(locker), vec![own]));
        }
    }
    let mysql = support::or_skip(
        "mysql strategies",
        tokio::task::spawn_blocking(|| {
            let server = MariaDbServer::start()?;
            server.query(lockers::mysql::SCHEMA)?;
            Ok::<_, lockbench_servers::ServerError>(server)
        })
        .await
        .unwrap(),
    );
    if let Some(server) = &mysql {
        let url = server.url();
        let get_lock = MysqlGetLock::connect(&url, MysqlConfig::default(), Events::none());
        let raw = SqlRaw::mysql(&url, Row::SessionLock).await;
        if let (Some(locker), Some(raw)) = (
            support::or_skip("mysql-get-lock", get_lock.await),
            support::or_skip("mysql-get-lock raw", raw),
        ) {
            let own = Raw::SqlStatements(Arc::new(raw));
            raws.push(own.clone());
            subjects.push(Subject::new(Arc::new(locker), vec![own]));
        }
        let lease = MysqlLease::connect(&url, MysqlConfig::default(), Events::none());
        let raw = SqlRaw::mysql(&url, Row::LeaseRow).await;
        if let (Some(locker), Some(raw)) = (
            support::or_skip("mysql-lease", lease.await),
            support::or_skip("mysql-lease raw", raw),
        ) {
            let own = Raw::SqlStatements(Arc::new(raw));
            raws.push(own.clone());
            subjects.push(Subject::new(Arc::new(locker), vec![own]));
        }
    }
    Setup {
        subjects,
        raws,
        _servers: ([redis, keyspace_server, valkey], etcd, zk, postgres, mysql),
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

/// The p50/p99 table and the target checks, from the interleaved histograms; gives the checks.
async fn report(subjects: &[Subject]) -> Vec<Check> {
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
        // The docs/design.md §8 ratio: the strategy's cycle against its own calls sent raw, same run.
        let own = [
            RAW_WATCHDOG,
            RAW_STRING,
            RAW_ETCD,
            RAW_ZK,
            RAW_PG_ADVISORY,
            RAW_PG_LEASE,
            RAW_IFEQ,
            RAW_MY_GET_LOCK,
            RAW_MY_LEASE,
        ]
        .into_iter()
        .find_map(|name| p50(name).map(|p| (name, p)));
        if let Some((name, baseline)) = own {
            check(
                &format!("{name} p50"),
                Some(baseline),
                Some(Bound::AtMost(1.10)),
            );
        }
        let watchdog = subject.id.starts_with(lockers::redis::watchdog::ID);
        // Round 1's ratios against trivial calls, kept as context.
        let _ = watchdog;
        check(
            "2 × EVALSHA p50",
            p50("redis EVALSHA").map(|e| 2.0 * e),
            None,
        );
        check(
            "2 × SET NX PX p50",
            p50("redis SET NX PX").map(|s| 2.0 * s),
            None,
        );
        check("2 × put p50", p50("etcd put").map(|p| 2.0 * p), None);
        check(
            "2 × (create + getChildren) p50",
            p50("zk create")
                .zip(p50("zk getChildren"))
                .map(|(c, l)| 2.0 * (c + l)),
            None,
        );
    }
    println!();
    print!("{}", render_checks("targets (docs/design.md §8)", &checks));
    checks
}

/// Cycles per strategy (each with its baselines) in the pinned pass.
const PINNED_CYCLES: usize = 400;

/// The pinned pass: fresh histograms, then `PINNED_CYCLES` interleaved cycles per strategy; gives its
/// checks (none when pinning is not possible).
async fn pinned_pass(subjects: &[Subject], server_pids: &[u32]) -> Vec<Check> {
    let pinned = match support::Pinned::new(server_pids) {
        Ok(pinned) => pinned,
        Err(e) => {
            println!("\npinned pass skipped: {e}");
            return Vec::new();
        }
    };
    let cycles = if lockbench::base::measure::full_bench_run() {
        PINNED_CYCLES
    } else {
        1
    };
    for subject in subjects {
        let mut measured = subject.measured.lock().await;
        let Measured { lock, raws, parts } = &mut *measured;
        (*lock, *parts) = (Latency::new(), BTreeMap::new());
        for _ in 0..cycles {
            lock.record(cycle(&*subject.locker).await);
            for raw in raws.iter_mut() {
                raw.run(parts).await;
                raw.run(parts).await;
            }
        }
    }
    println!("\nPINNED: servers on core 0, this process on core 1 ({cycles} cycles per strategy)");
    let checks = report(subjects).await;
    drop(pinned);
    checks
}

fn main() {
    let criterion_settings = "criterion: 0.5 s warm-up, 2 s measurement, 10 samples per benchmark unless the command line says otherwise; the pinned pass 400 cycles per strategy";
    let mut recorder = support::Recorder::start("acquire", criterion_settings.into());
    let runtime = support::runtime();
    let setup = runtime.block_on(setup());
    let mut criterion = support::criterion();
    bench_strategies(&mut criterion, &runtime, &setup.subjects);
    bench_raw(&mut criterion, &runtime, &setup.raws);
    criterion.final_summary();
    runtime.block_on(async {
        println!("\nUNPINNED");
        recorder.pass("unpinned", &report(&setup.subjects).await);
        if support::pin_requested() {
            let checks = pinned_pass(&setup.subjects, &setup.server_pids()).await;
            if !checks.is_empty() {
                recorder.pass("pinned", &checks);
            }
        }
        for subject in &setup.subjects {
            subject.locker.close().await;
        }
    });
    recorder.finish();
}
