//! Server cost: counters read from a server before and after a case (Redis `INFO commandstats` and
//! `INFO cpu`, etcd `/metrics`, ZooKeeper `mntr`), plus the CPU time of servers lockbench started.
//! A strategy gets this for free once its registry entry names its server.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Mutex;
use std::time::Duration;

use lockbench_reports::model::ServerCost;
use lockbench_servers::probe;
use lockbench_servers::redis::commandstats;
use lockers::address::Credentials;

use super::{Backend, ServerKind};
use crate::base::proc_stat;

const TIMEOUT: Duration = Duration::from_secs(2);

/// `AUTH`s this process's own probes sent, by Redis server: taken off the server's `auth` count, so the
/// figures hold the clients' authentications only (as `INFO` itself is left out).
static PROBE_AUTHS: Mutex<BTreeMap<SocketAddr, u64>> = Mutex::new(BTreeMap::new());

/// Notes one `AUTH` a probe of this process sends to `socket`; returns how many it has sent so far.
pub fn note_probe_auth(socket: SocketAddr) -> u64 {
    let mut sent = PROBE_AUTHS.lock().unwrap_or_else(|e| e.into_inner());
    let count = sent.entry(socket).or_default();
    *count += 1;
    *count
}

/// Counters of a server at one moment.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StatsSnapshot {
    /// Requests served so far, by command or method.
    pub requests: BTreeMap<String, u64>,
    /// Requests the clients sent so far, as the server counted them (etcd: gRPC messages received,
    /// stream messages included; ZooKeeper: packets received); `None` for Redis, whose counters
    /// include the commands its scripts ran: a case fills it from lockers' count of the commands its
    /// clients sent instead (`driver::case`).
    pub client_requests: Option<u64>,
    /// Renewal calls received so far, where the counters tell them apart (etcd: `LeaseKeepAlive`
    /// stream messages).
    pub renew_calls: Option<u64>,
    /// CPU seconds used so far, when known.
    pub cpu_seconds: Option<f64>,
}

/// Calls per kind of statement (its first word) in `pg_stat_statements`, without the statistics
/// queries themselves.
const PG_STATEMENTS: &str = "SELECT split_part(ltrim(query), ' ', 1), sum(calls)::bigint \
 FROM pg_stat_statements WHERE query NOT LIKE '%pg_stat_statements%' GROUP BY 1";

/// Where a server's counters are read: cheap to clone, so the blocking reads can run on another
/// thread.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatsSource {
    kind: ServerKind,
    socket: SocketAddr,
    pid: Option<u32>,
    /// The ACL user Redis counters are read as.
    auth: Option<Credentials>,
    /// The server speaks TLS only: the plain probes cannot read it, so there are no counters.
    tls: bool,
    /// Redlock's other independent masters (`RedisNodes`), summed with the first.
    more_nodes: Vec<(SocketAddr, Option<u32>)>,
}

impl Backend {
    /// Where its counters are read.
    pub fn stats_source(&self) -> Option<StatsSource> {
        Some(StatsSource {
            kind: self.kind(),
            socket: self.socket()?,
            pid: self.pid(),
            auth: self.credentials(),
            tls: self.is_tls(),
            more_nodes: self.nodes().into_iter().skip(1).collect(),
        })
    }
}

impl StatsSource {
    /// The counters of the `kind` server at `socket`; with `pid`, its CPU time comes from `/proc`.
    pub fn new(kind: ServerKind, socket: SocketAddr, pid: Option<u32>) -> Self {
        StatsSource {
            kind,
            socket,
            pid,
            auth: None,
            tls: false,
            more_nodes: Vec::new(),
        }
    }

    /// Which server.
    pub fn kind(&self) -> ServerKind {
        self.kind
    }

    /// Its address.
    pub fn socket(&self) -> SocketAddr {
        self.socket
    }

    /// The user and password probes authenticate with (Redis ACL users).
    pub fn auth(&self) -> Option<(&str, &str)> {
        self.auth
            .as_ref()
            .map(|c| (c.user.as_str(), c.password.as_str()))
    }

    /// Its address and those of the other nodes it sums (Redlock's masters).
    pub fn sockets(&self) -> Vec<SocketAddr> {
        std::iter::once(self.socket)
            .chain(self.more_nodes.iter().map(|&(socket, _)| socket))
            .collect()
    }

    /// Whether the server speaks TLS only (plain probes cannot read it).
    pub fn is_tls(&self) -> bool {
        self.tls
    }

    /// Reads the server's counters (blocking; a few milliseconds). `None` if it does not answer, or
    /// speaks TLS only (not read: the figures are reported as not available).
    pub fn snapshot(&self) -> Option<StatsSnapshot> {
        if self.tls {
            return None;
        }
        if self.more_nodes.is_empty() {
            return self.read(self.kind, self.socket, self.pid);
        }
        // N masters (Redlock's independent ones, a cluster's): their work is the sum of theirs.
        let mut sum = self.read(ServerKind::Redis, self.socket, self.pid)?;
        for &(socket, pid) in &self.more_nodes {
            let node = self.read(ServerKind::Redis, socket, pid)?;
            for (command, calls) in node.requests {
                *sum.requests.entry(command).or_default() += calls;
            }
            sum.cpu_seconds = sum.cpu_seconds.zip(node.cpu_seconds).map(|(a, b)| a + b);
        }
        Some(sum)
    }

    /// One server's counters.
    fn read(
        &self,
        kind: ServerKind,
        socket: SocketAddr,
        pid: Option<u32>,
    ) -> Option<StatsSnapshot> {
        let auth = self.auth();
        let mut snapshot = match kind {
            ServerKind::Redis => {
                let info = |section| {
                    let sent = auth.map(|_| note_probe_auth(socket)).unwrap_or(0);
                    let reply = probe::resp_command_as(socket, auth, &["INFO", section], TIMEOUT);
                    (reply, sent)
                };
                let (stats, probe_auths) = info("commandstats");
                let mut requests = redis_commandstats(&stats.ok()?);
                if let Some(auths) = requests.get_mut("auth") {
                    *auths = auths.saturating_sub(probe_auths);
                }
                let cpu = info("cpu").0.ok();
                StatsSnapshot {
                    requests,
                    client_requests: None,
                    renew_calls: None,
                    cpu_seconds: cpu.as_deref().map(redis_cpu),
                }
            }
            ServerKind::Etcd => {
                let metrics = probe::http_get(socket, "/metrics", TIMEOUT).ok()?.body;
                etcd_metrics(&metrics)
            }
            ServerKind::ZooKeeper => {
                let mntr = probe::four_letter_word(socket, "mntr", TIMEOUT).ok()?;
                let requests = zk_mntr(&mntr);
                StatsSnapshot {
                    client_requests: requests.get("packets_received").copied(),
                    renew_calls: None,
                    requests,
                    cpu_seconds: None,
                }
            }
            ServerKind::Postgres => {
                // Statements as pg_stat_statements counts them (each execution once), by kind of
                // statement; lockbench's own statistics queries left out. Readable on servers
                // lockbench started (it logs in as their trusted superuser).
                let rows =
                    lockbench_servers::postgres::query(socket, PG_STATEMENTS, TIMEOUT).ok()?;
                let mut requests = BTreeMap::new();
                for row in rows {
                    if let [Some(kind), Some(calls)] = row.as_slice() {
                        *requests.entry(kind.to_lowercase()).or_default() +=
                            calls.parse::<u64>().unwrap_or(0);
                    }
                }
                // Each session is a child process of the postmaster: the server's CPU is theirs too.
                return Some(StatsSnapshot {
                    client_requests: Some(requests.values().sum()),
                    renew_calls: None,
                    requests,
                    cpu_seconds: pid.and_then(proc_stat::tree_cpu_seconds),
                });
            }
            ServerKind::InProcess | ServerKind::PerClient | ServerKind::RedisNodes => return None,
        };
        if let Some(sample) = pid.and_then(|pid| proc_stat::sample(Some(pid))) {
            snapshot.cpu_seconds = Some(sample.cpu_seconds);
        }
        Some(snapshot)
    }

    /// [`snapshot`](Self::snapshot) on a blocking thread.
    pub async fn snapshot_async(&self) -> Option<StatsSnapshot> {
        let source = self.clone();
        tokio::task::spawn_blocking(move || source.snapshot())
            .await
            .ok()
            .flatten()
    }
}

/// The cost of a case: `after - before`, over `seconds`.
pub fn delta(
    kind: ServerKind,
    before: &StatsSnapshot,
    after: &StatsSnapshot,
    seconds: f64,
) -> ServerCost {
    let by_command: BTreeMap<String, u64> = after
        .requests
        .iter()
        .map(|(name, n)| {
            (
                name.clone(),
                n.saturating_sub(before.requests.get(name).copied().unwrap_or(0)),
            )
        })
        .filter(|(_, n)| *n > 0)
        .collect();
    let requests = by_command.values().sum();
    ServerCost {
        client_requests: before
            .client_requests
            .zip(after.client_requests)
            .map(|(b, a)| a.saturating_sub(b)),
        renew_calls: before
            .renew_calls
            .zip(after.renew_calls)
            .map(|(b, a)| a.saturating_sub(b)),
        scripts: BTreeMap::new(),
        kind: kind.name().to_owned(),
        cpu_seconds: before
            .cpu_seconds
            .zip(after.cpu_seconds)
            .map(|(b, a)| (a - b).max(0.0)),
        requests,
        requests_per_s: if seconds > 0.0 {
            requests as f64 / seconds
        } else {
            0.0
        },
        by_command,
    }
}

/// Calls by command from `INFO commandstats`; the `INFO` calls of the snapshots themselves are left
/// out.
fn redis_commandstats(info: &str) -> BTreeMap<String, u64> {
    commandstats(info)
        .into_iter()
        .filter(|(name, _)| name != "info")
        .map(|(name, stat)| (name, stat.calls))
        .collect()
}

fn redis_cpu(info: &str) -> f64 {
    ["used_cpu_sys", "used_cpu_user"]
        .iter()
        .filter_map(|f| {
            lockbench_servers::redis::info_field(info, f)?
                .parse::<f64>()
                .ok()
        })
        .sum()
}

/// `grpc_server_handled_total{...grpc_method="Range"...} N`, summed by method (calls completed: a
/// stream counts once, when it ends); `grpc_server_msg_received_total` summed over every method (each
/// message a client sent, every keep-alive on the lease stream included); `process_cpu_seconds_total`.
fn etcd_metrics(metrics: &str) -> StatsSnapshot {
    let mut snapshot = StatsSnapshot::default();
    for line in metrics.lines() {
        if let Some(value) = line.strip_prefix("process_cpu_seconds_total ") {
            snapshot.cpu_seconds = value.trim().parse().ok();
        } else if let Some(labels) = line.strip_prefix("grpc_server_msg_received_total{") {
            if let Some(Ok(value)) = labels
                .rsplit_once("} ")
                .map(|(_, v)| v.trim().parse::<f64>())
            {
                *snapshot.client_requests.get_or_insert(0) += value as u64;
                if labels.contains("grpc_method=\"LeaseKeepAlive\"") {
                    *snapshot.renew_calls.get_or_insert(0) += value as u64;
                }
            }
        } else if let Some(labels) = line.strip_prefix("grpc_server_handled_total{") {
            let Some((labels, value)) = labels.rsplit_once("} ") else {
                continue;
            };
            let method = labels
                .split(',')
                .find_map(|kv| kv.strip_prefix("grpc_method=\""))
                .map(|m| m.trim_end_matches('"'));
            if let (Some(method), Ok(value)) = (method, value.trim().parse::<f64>()) {
                *snapshot.requests.entry(method.to_owned()).or_default() += value as u64;
            }
        }
    }
    snapshot
}

/// `zk_packets_received` and `zk_packets_sent` from `mntr`.
fn zk_mntr(mntr: &str) -> BTreeMap<String, u64> {
    mntr.lines()
        .filter_map(|line| {
            let (name, value) = line.split_once('\t')?;
            let name = name.strip_prefix("zk_")?;
            if !matches!(name, "packets_received" | "packets_sent") {
                return None;
            }
            Some((name.to_owned(), value.trim().parse().ok()?))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_each_servers_counters() {
        let redis = "# Commandstats\r\ncmdstat_evalsha:calls=10,usec=50,usec_per_call=5.00\r\ncmdstat_info:calls=3,usec=1\r\n";
        assert_eq!(
            redis_commandstats(redis),
            BTreeMap::from([("evalsha".to_owned(), 10)])
        );
        assert!((redis_cpu("used_cpu_sys:1.5\r\nused_cpu_user:0.25\r\n") - 1.75).abs() < 1e-9);
        let etcd = "process_cpu_seconds_total 2.5\ngrpc_server_handled_total{grpc_code=\"OK\",grpc_method=\"Range\",grpc_service=\"x\",grpc_type=\"unary\"} 7\ngrpc_server_handled_total{grpc_code=\"Unavailable\",grpc_method=\"Range\",grpc_service=\"x\",grpc_type=\"unary\"} 1\n";
        let s = etcd_metrics(etcd);
        assert_eq!(s.cpu_seconds, Some(2.5));
        assert_eq!(s.requests, BTreeMap::from([("Range".to_owned(), 8)]));
        let stream = "grpc_server_msg_received_total{grpc_method=\"LeaseKeepAlive\",grpc_service=\"etcdserverpb.Lease\",grpc_type=\"bidi_stream\"} 40\ngrpc_server_msg_received_total{grpc_method=\"Range\",grpc_service=\"x\",grpc_type=\"unary\"} 8\ngrpc_server_handled_total{grpc_code=\"OK\",grpc_method=\"Range\",grpc_service=\"x\",grpc_type=\"unary\"} 8\n";
        let s = etcd_metrics(stream);
        assert_eq!(
            s.client_requests,
            Some(48),
            "keep-alive stream messages count"
        );
        assert_eq!(s.renew_calls, Some(40), "the keep-alives are the renewals");
        assert_eq!(s.requests.values().sum::<u64>(), 8);
        let zk = "zk_version\t3.8.0\nzk_packets_received\t100\nzk_packets_sent\t99\n";
        assert_eq!(zk_mntr(zk).get("packets_received"), Some(&100));
    }

    #[test]
    fn deltas_drop_unchanged_commands() {
        let before = StatsSnapshot {
            requests: BTreeMap::from([("get".into(), 5), ("set".into(), 1)]),
            client_requests: Some(3),
            renew_calls: None,
            cpu_seconds: Some(1.0),
        };
        let after = StatsSnapshot {
            requests: BTreeMap::from([("get".into(), 15), ("set".into(), 1), ("del".into(), 2)]),
            client_requests: Some(7),
            renew_calls: None,
            cpu_seconds: Some(1.5),
        };
        let cost = delta(ServerKind::Redis, &before, &after, 2.0);
        assert_eq!(cost.requests, 12);
        assert_eq!(cost.requests_per_s, 6.0);
        assert_eq!(cost.by_command.len(), 2);
        assert_eq!(cost.cpu_seconds, Some(0.5));
        assert_eq!(cost.client_requests, Some(4));
    }
}
