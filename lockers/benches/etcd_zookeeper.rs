//! Measurement harness for `etcd-lease` and `zookeeper`: uncontended acquire+release against the raw
//! operations it is made of, measured by the same client over the same connection in the same run,
//! interleaved, into HdrHistograms. Starts its own etcd and ZooKeeper (data under
//! `lockbench_servers::data_parent()`, normally the tmpfs `/dev/shm`).
//!
//! Targets (docs/design.md §8): etcd acquire+release p50 ≤ 1.5 × (2 × put p50); ZooKeeper acquire+release p50 ≤
//! 1.5 × (2 × (create + getChildren) p50). It also counts the requests the servers received per
//! acquire+release (etcd `/metrics`, ZooKeeper `mntr`), so a missed target can be explained.
//!
//! `cargo bench -p lockers --bench etcd_zookeeper` (`LOCKBENCH_BENCH_ITERATIONS` sets the iterations,
//! default 2000).
#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::future::Future;
use std::time::{Duration, Instant};

use etcd_client::{Compare, CompareOp, GetOptions, PutOptions, SortOrder, SortTarget, Txn, TxnOp};
use hdrhistogram::Histogram;
use lockbench_servers::{EtcdServer, ZkServer, data_parent, probe};
use lockers::etcd::{EtcdConfig, EtcdLease};
use lockers::zookeeper::{ZkConfig, ZooKeeperLock};
use lockers::{AcquireOptions, Events, Locker};
use zookeeper_client::{Acls, CreateMode};

const WARM_UP: usize = 200;
/// Iterations of the request-counting phases (not interleaved, so the counts are clean).
const COUNTED: u64 = 200;

fn iterations() -> usize {
    std::env::var("LOCKBENCH_BENCH_ITERATIONS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2000)
}

/// Latencies in microseconds, by operation name, in the order first recorded.
#[derive(Default)]
struct Latencies {
    order: Vec<&'static str>,
    histograms: BTreeMap<&'static str, Histogram<u64>>,
}

impl Latencies {
    fn record(&mut self, name: &'static str, took: Duration) {
        let histogram = self.histograms.entry(name).or_insert_with(|| {
            self.order.push(name);
            Histogram::new_with_bounds(1, 60_000_000, 3).unwrap()
        });
        histogram.saturating_record(u64::try_from(took.as_micros()).unwrap_or(u64::MAX));
    }

    async fn time<T>(&mut self, name: &'static str, op: impl Future<Output = T>) -> T {
        let started = Instant::now();
        let out = op.await;
        self.record(name, started.elapsed());
        out
    }

    /// Starts over when iteration `i` is the first after the warm-up.
    fn reset_after_warm_up(&mut self, i: usize) {
        if i == WARM_UP {
            *self = Self::default();
        }
    }

    /// Times one acquire of `bench` on `locker`, its release, and the two together, recorded as
    /// `<strategy> acquire`, `<strategy> release` and `<strategy> acquire+release`.
    async fn acquire_release(
        &mut self,
        locker: &dyn Locker,
        once: &AcquireOptions,
        [acquire, release, both]: [&'static str; 3],
    ) {
        let started = Instant::now();
        let lease = self
            .time(acquire, locker.acquire("bench", once))
            .await
            .unwrap();
        self.time(release, lease.release()).await.unwrap();
        self.record(both, started.elapsed());
    }

    fn p(&self, name: &str, q: f64) -> f64 {
        self.histograms[name].value_at_quantile(q) as f64
    }

    fn print(&self) {
        println!(
            "  {:<34} {:>9} {:>9} {:>9} {:>8}",
            "operation", "p50 µs", "p99 µs", "max µs", "count"
        );
        for name in &self.order {
            let h = &self.histograms[name];
            println!(
                "  {:<34} {:>9} {:>9} {:>9} {:>8}",
                name,
                h.value_at_quantile(0.5),
                h.value_at_quantile(0.99),
                h.max(),
                h.len()
            );
        }
    }
}

fn verdict(name: &str, value: f64, baseline: f64, target: Option<f64>) {
    let ratio = value / baseline;
    let met = match target {
        Some(target) if ratio <= target => format!("target ≤ {target}: met"),
        Some(target) => format!("target ≤ {target}: MISSED"),
        None => "no target, for information".to_owned(),
    };
    println!("  {name:<58} {value:>8.0} / {baseline:>8.0} = {ratio:>5.2}  ({met})");
}

/// Sum of `grpc_server_msg_received_total` per gRPC method.
fn etcd_requests(server: &EtcdServer) -> BTreeMap<String, u64> {
    let metrics =
        probe::http_get(server.client_addr(), "/metrics", Duration::from_secs(2)).unwrap();
    let mut counts = BTreeMap::new();
    for line in metrics.body.lines() {
        let Some(rest) = line.strip_prefix("grpc_server_msg_received_total{") else {
            continue;
        };
        let method = rest
            .split("grpc_method=\"")
            .nth(1)
            .and_then(|r| r.split('"').next());
        let value = rest.rsplit(' ').next().and_then(|v| v.parse::<f64>().ok());
        if let (Some(method), Some(value)) = (method, value) {
            *counts.entry(method.to_owned()).or_default() += value as u64;
        }
    }
    counts
}

fn per_iteration(before: &BTreeMap<String, u64>, after: &BTreeMap<String, u64>, n: u64) -> String {
    let parts: Vec<String> = after
        .iter()
        .filter_map(|(method, count)| {
            let delta = count - before.get(method).copied().unwrap_or(0);
            (delta > 0).then(|| format!("{method} {:.2}", delta as f64 / n as f64))
        })
        .collect();
    parts.join(", ")
}

fn mntr_value(server: &ZkServer, key: &str) -> u64 {
    server
        .mntr()
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix(key).map(|v| v.trim().parse().unwrap_or(0)))
        .unwrap_or(0)
}

async fn bench_etcd(n: usize) {
    let server = tokio::task::spawn_blocking(EtcdServer::start)
        .await
        .unwrap()
        .unwrap();
    println!(
        "\netcd {} — data dir {} — {n} iterations, interleaved",
        server.version(),
        server.data_dir().display()
    );
    let locker = EtcdLease::connect(&[server.endpoint()], EtcdConfig::default(), Events::none())
        .await
        .unwrap();
    let mut kv = locker.client().kv_client();
    let once = AcquireOptions::try_once();
    let mut lat = Latencies::default();
    for i in 0..WARM_UP + n {
        lat.reset_after_warm_up(i);
        let names = [
            "etcd-lease acquire",
            "etcd-lease release",
            "etcd-lease acquire+release",
        ];
        lat.acquire_release(&locker, &once, names).await;
        lat.time("put", kv.put("bench-put", "v", None))
            .await
            .unwrap();
        lat.time("put", kv.put("bench-put", "v", None))
            .await
            .unwrap();
    }
    lat.print();
    let baseline = 2.0 * lat.p("put", 0.5);
    verdict(
        "acquire+release p50 / (2 × put p50)",
        lat.p("etcd-lease acquire+release", 0.5),
        baseline,
        Some(1.5),
    );
    verdict(
        "acquire+release p99 / (2 × put p99)",
        lat.p("etcd-lease acquire+release", 0.99),
        2.0 * lat.p("put", 0.99),
        None,
    );
    breakdown_etcd(&locker, n).await;
    let before = etcd_requests(&server);
    for _ in 0..COUNTED {
        locker
            .acquire("bench", &once)
            .await
            .unwrap()
            .release()
            .await
            .unwrap();
    }
    let after = etcd_requests(&server);
    println!(
        "  requests received per acquire+release: {}",
        per_iteration(&before, &after, COUNTED)
    );
    let before = etcd_requests(&server);
    for _ in 0..COUNTED {
        kv.put("bench-put", "v", None).await.unwrap();
    }
    let after = etcd_requests(&server);
    println!(
        "  requests received per put:             {}",
        per_iteration(&before, &after, COUNTED)
    );
    locker.close().await;
}

/// The requests one etcd-lease acquire and release are made of, each timed alone (same client, same run,
/// interleaved), to show where an acquire+release's time goes.
async fn breakdown_etcd(locker: &EtcdLease, n: usize) {
    let mut kv = locker.client().kv_client();
    let lease = locker
        .client()
        .lease_client()
        .grant(60, None)
        .await
        .unwrap()
        .id();
    let head = || {
        let options = GetOptions::new()
            .with_prefix()
            .with_sort(SortTarget::Create, SortOrder::Ascend)
            .with_limit(1)
            .with_keys_only();
        TxnOp::get("breakdown/q/", Some(options))
    };
    let mut lat = Latencies::default();
    for _ in 0..n / 2 {
        // One reused name, as the lock reuses its queue-key names (see lockers/src/etcd/names.rs).
        let key = "breakdown/q/k".to_owned();
        let absent = || Compare::create_revision(key.clone(), CompareOp::Equal, 0);
        let put = || TxnOp::put(key.clone(), "", Some(PutOptions::new().with_lease(lease)));
        lat.time("put", kv.put("bench-put", "v", None))
            .await
            .unwrap();
        lat.time(
            "put with lease",
            kv.put(key.clone(), "", Some(PutOptions::new().with_lease(lease))),
        )
        .await
        .unwrap();
        let rev = kv.get(key.clone(), None).await.unwrap().kvs()[0].create_revision();
        let delete = Txn::new()
            .when([Compare::create_revision(key.clone(), CompareOp::Equal, rev)])
            .and_then([TxnOp::delete(key.clone(), None)]);
        lat.time("txn: delete-if-ours (release)", kv.txn(delete))
            .await
            .unwrap();
        lat.time(
            "txn: put-if-absent",
            kv.txn(Txn::new().when([absent()]).and_then([put()])),
        )
        .await
        .unwrap();
        kv.delete(key.clone(), None).await.unwrap();
        lat.time(
            "txn: put-if-absent + head (acquire)",
            kv.txn(Txn::new().when([absent()]).and_then([put(), head()])),
        )
        .await
        .unwrap();
        kv.delete(key.clone(), None).await.unwrap();
        lat.time(
            "get head (sorted range)",
            kv.txn(Txn::new().and_then([head()])),
        )
        .await
        .unwrap();
    }
    println!(
        "  request breakdown ({} iterations, each request timed alone):",
        n / 2
    );
    lat.print();
}

async fn bench_zookeeper(n: usize) {
    let server = tokio::task::spawn_blocking(ZkServer::start)
        .await
        .unwrap()
        .unwrap();
    println!(
        "\nZooKeeper {} — data dir {} — {n} iterations, interleaved",
        server.version(),
        server.data_dir().display()
    );
    let locker = ZooKeeperLock::connect(
        &server.connect_string(),
        ZkConfig::default(),
        Events::none(),
    )
    .await
    .unwrap();
    let zk = locker.zk_client().await.unwrap();
    let parent = "/lockbench/baseline";
    zk.mkdir(
        parent,
        &CreateMode::Persistent.with_acls(Acls::anyone_all()),
    )
    .await
    .unwrap();
    let node = format!("{parent}/node-");
    let ephemeral = CreateMode::EphemeralSequential.with_acls(Acls::anyone_all());
    let once = AcquireOptions::try_once();
    let mut lat = Latencies::default();
    for i in 0..WARM_UP + n {
        lat.reset_after_warm_up(i);
        let names = [
            "zookeeper acquire",
            "zookeeper release",
            "zookeeper acquire+release",
        ];
        lat.acquire_release(&locker, &once, names).await;
        let (_, sequence) = lat
            .time(
                "create (ephemeral-sequential)",
                zk.create(&node, &[], &ephemeral),
            )
            .await
            .unwrap();
        lat.time("getChildren", zk.get_children(parent))
            .await
            .unwrap();
        lat.time("delete", zk.delete(&format!("{node}{sequence}"), None))
            .await
            .unwrap();
    }
    lat.print();
    let (create, list) = (
        lat.p("create (ephemeral-sequential)", 0.5),
        lat.p("getChildren", 0.5),
    );
    verdict(
        "acquire+release p50 / (2 × (create p50 + getChildren p50))",
        lat.p("zookeeper acquire+release", 0.5),
        2.0 * (create + list),
        Some(1.5),
    );
    verdict(
        "acquire+release p50 / (2 × create p50 + getChildren p50)",
        lat.p("zookeeper acquire+release", 0.5),
        2.0 * create + list,
        Some(1.5),
    );
    let (p99_create, p99_list) = (
        lat.p("create (ephemeral-sequential)", 0.99),
        lat.p("getChildren", 0.99),
    );
    verdict(
        "acquire+release p99 / (2 × (create p99 + getChildren p99))",
        lat.p("zookeeper acquire+release", 0.99),
        2.0 * (p99_create + p99_list),
        None,
    );
    let before = mntr_value(&server, "zk_packets_received");
    for _ in 0..COUNTED {
        locker
            .acquire("bench", &once)
            .await
            .unwrap()
            .release()
            .await
            .unwrap();
    }
    let after = mntr_value(&server, "zk_packets_received");
    println!(
        "  packets received per acquire+release: {:.2} (includes the session's probes and pings)",
        (after - before) as f64 / COUNTED as f64
    );
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let n = iterations();
    println!(
        "server data under {} (lockbench_servers::data_parent)",
        data_parent().display()
    );
    runtime.block_on(async {
        bench_etcd(n).await;
        bench_zookeeper(n).await;
    });
}
