//! The requests lockers' Redis clients count ([`Locker::requests_sent`]) against an outside
//! observer: `MONITOR` on the same redis-server, which logs every command a client sent and marks the
//! commands a script ran with `[0 lua]`. Contended watchdog cycles with renewals, for the strategies
//! whose every command `MONITOR` shows (the keyspace strategies' `CONFIG SET` is an administrative
//! command, which it leaves out), on one server and on a Redis Cluster (`MONITOR` on each master: the
//! commands a cluster client sends to each, `CLUSTER SLOTS` and the `SCRIPT LOAD`s every master gets
//! included), and Redlock's count over its independent masters (`MONITOR` on each).
#![allow(clippy::unwrap_used)]

use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use lockbench_servers::{RedisCluster, RedisNodeOptions, RedisNodes, RedisServer};
use lockers::redis::{
    Generation, GuardThreadConfig, RedisGuardThread, RedisWatchdog, Redisson, RedissonConfig,
    Redlock, RedlockConfig, RenewalMode, WatchdogConfig,
};
use lockers::{AcquireOptions, Events, Locker, Renewal};

/// The watchdog timeout: renewals every 100 ms.
const TIMEOUT: Duration = Duration::from_millis(300);
/// Cycles per client.
const CYCLES: usize = 20;

/// Every row this test counts.
const ROWS: [&str; 4] = [
    "redis-watchdog",
    "redis-watchdog-batched",
    "redis-guard-thread",
    "redisson",
];

/// Counts the client commands `MONITOR` logs (those a script ran are left out) on a thread.
struct Monitor {
    seen: Arc<AtomicU64>,
    lines: Arc<AtomicU64>,
}

impl Monitor {
    fn start(server: &RedisServer) -> Monitor {
        Self::start_at(server.addr())
    }

    fn start_at(addr: std::net::SocketAddr) -> Monitor {
        let mut stream = TcpStream::connect(addr).unwrap();
        stream.write_all(b"MONITOR\r\n").unwrap();
        let mut reader = BufReader::new(stream);
        let mut ok = String::new();
        reader.read_line(&mut ok).unwrap();
        assert_eq!(ok.trim_end(), "+OK");
        let seen = Arc::new(AtomicU64::new(0));
        let lines = Arc::new(AtomicU64::new(0));
        let (s, l) = (seen.clone(), lines.clone());
        std::thread::spawn(move || {
            for line in reader.lines() {
                let Ok(line) = line else { return };
                l.fetch_add(1, Ordering::Relaxed);
                // `+1700000000.123456 [0 127.0.0.1:5000] "EVALSHA" ...` or `[0 lua] "hset" ...`
                if !line.contains(" lua] ") {
                    s.fetch_add(1, Ordering::Relaxed);
                }
            }
        });
        Monitor { seen, lines }
    }

    /// Client commands seen so far, once the log has been quiet for 200 ms.
    fn settled(&self) -> u64 {
        let mut last = self.lines.load(Ordering::Relaxed);
        loop {
            std::thread::sleep(Duration::from_millis(200));
            let now = self.lines.load(Ordering::Relaxed);
            if now == last {
                return self.seen.load(Ordering::Relaxed);
            }
            last = now;
        }
    }
}

/// Two clients of one strategy taking turns on one key: some holds outlive a renewal period.
async fn cycles(clients: [Arc<dyn Locker>; 2]) {
    let mut tasks = Vec::new();
    for (c, client) in clients.into_iter().enumerate() {
        tasks.push(tokio::spawn(async move {
            for i in 0..CYCLES {
                let lease = client
                    .acquire("count", &AcquireOptions::wait(Duration::from_secs(5)))
                    .await
                    .unwrap();
                let hold = if (i + c) % 5 == 0 { 160 } else { 5 };
                tokio::time::sleep(Duration::from_millis(hold)).await;
                lease.release().await.unwrap();
            }
            client.close().await;
        }));
    }
    for task in tasks {
        task.await.unwrap();
    }
}

/// What the clients counted, connecting and closing included.
fn requests_sent(clients: &[Arc<dyn Locker>]) -> u64 {
    clients
        .iter()
        .map(|c| {
            c.requests_sent()
                .expect("a Redis client counts its requests")
        })
        .sum()
}

async fn clients(row: &str, url: &str) -> [Arc<dyn Locker>; 2] {
    let mut out: Vec<Arc<dyn Locker>> = Vec::new();
    for _ in 0..2 {
        let renewal = Renewal::new(TIMEOUT);
        let client: Arc<dyn Locker> = match row {
            "redis-watchdog" | "redis-watchdog-batched" => {
                let renewal_mode = if row == "redis-watchdog" {
                    RenewalMode::PerLock
                } else {
                    RenewalMode::Batched { chunk: 100 }
                };
                let config = WatchdogConfig {
                    renewal,
                    renewal_mode,
                    ..WatchdogConfig::default()
                };
                Arc::new(
                    RedisWatchdog::connect(url, config, Events::none())
                        .await
                        .unwrap(),
                )
            }
            "redis-guard-thread" => {
                let config = GuardThreadConfig {
                    renewal,
                    ..GuardThreadConfig::default()
                };
                Arc::new(
                    RedisGuardThread::connect(url, config, Events::none())
                        .await
                        .unwrap(),
                )
            }
            _ => {
                let config = RedissonConfig {
                    renewal,
                    ..RedissonConfig::new(Generation::default())
                };
                Arc::new(
                    Redisson::connect(url, config, Events::none())
                        .await
                        .unwrap(),
                )
            }
        };
        out.push(client);
    }
    [out.remove(0), out.remove(0)]
}

/// Each strategy's count of the requests it sent agrees with `MONITOR` within 10 % (the bar;
/// in practice they are equal), and is far below what `INFO commandstats` counts, which includes the
/// commands scripts ran.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_request_counts_agree_with_monitor() {
    for row in ROWS {
        let server = RedisServer::start().unwrap();
        let monitor = Monitor::start(&server);
        let clients = clients(row, &server.url()).await;
        cycles(clients.clone()).await;
        let counted = requests_sent(&clients);
        let seen = tokio::task::spawn_blocking(move || monitor.settled())
            .await
            .unwrap();
        let info = server.command(&["INFO", "commandstats"]).unwrap();
        let server_calls: u64 = lockbench_servers::redis::commandstats(&info)
            .iter()
            .filter(|(name, _)| name.as_str() != "info" && name.as_str() != "monitor")
            .map(|(_, stat)| stat.calls)
            .sum();
        eprintln!(
            "{row}: counted {counted}, MONITOR saw {seen}, commandstats calls {server_calls} \
             ({:.1} / {:.1} / {:.1} per critical section)",
            counted as f64 / (2 * CYCLES) as f64,
            seen as f64 / (2 * CYCLES) as f64,
            server_calls as f64 / (2 * CYCLES) as f64
        );
        assert!(seen > 0, "{row}: MONITOR saw nothing");
        let off = (counted as f64 - seen as f64).abs() / seen as f64;
        assert!(
            off <= 0.10,
            "{row}: counted {counted}, MONITOR saw {seen} ({:.1} % apart)",
            off * 100.0
        );
        if row != "redis-guard-thread" {
            assert!(
                server_calls as f64 > 1.5 * seen as f64,
                "{row}: commandstats ({server_calls}) should count the scripts' own calls too"
            );
        }
    }
    cluster_counts_agree_with_monitor().await;
}

/// On a cluster the count is the sum of what every master's `MONITOR` saw (a fresh cluster: every
/// request, layout queries included, goes to a master).
async fn cluster_counts_agree_with_monitor() {
    let cluster = tokio::task::spawn_blocking(|| RedisCluster::start().unwrap())
        .await
        .unwrap();
    for row in ROWS {
        let monitors: Vec<Monitor> = cluster.nodes()[..3]
            .iter()
            .map(|n| Monitor::start_at(n.addr()))
            .collect();
        let clients = clients(row, &cluster.url()).await;
        cycles(clients.clone()).await;
        let counted = requests_sent(&clients);
        let seen: u64 =
            tokio::task::spawn_blocking(move || monitors.iter().map(Monitor::settled).sum())
                .await
                .unwrap();
        eprintln!("{row} on a cluster: counted {counted}, the masters' MONITOR saw {seen}");
        assert!(seen > 0, "{row}: MONITOR saw nothing");
        let off = (counted as f64 - seen as f64).abs() / seen as f64;
        assert!(
            off <= 0.10,
            "{row} on a cluster: counted {counted}, MONITOR saw {seen} ({:.1} % apart)",
            off * 100.0
        );
    }
}

/// Redlock's count is the sum over its nodes: what every node's `MONITOR` saw.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redlock_counts_the_requests_of_every_node() {
    let nodes = tokio::task::spawn_blocking(|| {
        RedisNodes::start(3, RedisNodeOptions::default(), None).unwrap()
    })
    .await
    .unwrap();
    let monitors: Vec<Monitor> = nodes
        .nodes()
        .iter()
        .map(|n| Monitor::start_at(n.addr()))
        .collect();
    let mut clients: Vec<Arc<dyn Locker>> = Vec::new();
    for _ in 0..2 {
        let config = RedlockConfig {
            renewal: Renewal::new(TIMEOUT),
            // The default (a 60th of the TTL: 5 ms) is too short for a loaded machine.
            node_timeout: Some(Duration::from_millis(50)),
            retry_delay: Duration::from_millis(20),
            retry_jitter: Duration::from_millis(20),
            ..RedlockConfig::default()
        };
        let client = Redlock::connect(&nodes.urls(), config, Events::none()).await;
        clients.push(Arc::new(client.unwrap()));
    }
    let [first, second]: [Arc<dyn Locker>; 2] = clients.clone().try_into().unwrap();
    cycles([first, second]).await;
    let counted = requests_sent(&clients);
    let seen: u64 =
        tokio::task::spawn_blocking(move || monitors.iter().map(Monitor::settled).sum())
            .await
            .unwrap();
    eprintln!("redlock on 3 nodes: counted {counted}, the nodes' MONITOR saw {seen}");
    assert!(seen > 0, "MONITOR saw nothing");
    let off = (counted as f64 - seen as f64).abs() / seen as f64;
    assert!(
        off <= 0.10,
        "redlock: counted {counted}, MONITOR saw {seen} ({:.1} % apart)",
        off * 100.0
    );
}
