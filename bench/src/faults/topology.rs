//! Servers a case starts for itself because its fault destroys them: a Redis or PostgreSQL primary
//! with an asynchronous replica (for `failover`; optionally with a delayed replication link, as
//! across zones), the same pair watched by 3 Sentinels (for `sentinel_failover`), a Redis Cluster of 3
//! masters and 3 replicas (for `cluster_master_kill`, `cluster_failover`), a 3-member etcd cluster /
//! ZooKeeper ensemble (for `leader_kill`), Redlock's 5 independent
//! nodes (for `node_kill`, `node_restart`, `clock_jump`: one of them under libfaketime), or one
//! restartable Redis with or without durable persistence (for `server_restart`). Dropped with the case.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use lockbench_reports::model::ServerInfo;
use lockbench_servers::postgres::{DATABASE, Session as PostgresSession, first_value};
use lockbench_servers::redis::info_field;
use lockbench_servers::{
    Direction, Durability, EtcdCluster, FakeClock, Fault, Keepalives, NamespacedPostgres,
    OnRestart, Partition, PostgresOptions, PostgresPair, PostgresServer, Proxy, RedisCluster,
    RedisNode, RedisNodeOptions, RedisNodes, RedisPair, RedisSentinels, RedisServer, ZkEnsemble,
};

use super::proxies::ClientProxies;
use crate::backends::stats::StatsSource;
use crate::backends::{EndpointAddrs, ServerKind};

const LINK_TIMEOUT: Duration = Duration::from_secs(10);
const LEADER_TIMEOUT: Duration = Duration::from_secs(10);
/// How long the Sentinels get to promote the replica (they need `down-after` plus an election).
const PROMOTION_TIMEOUT: Duration = Duration::from_secs(20);

/// The servers of one case.
#[derive(Debug)]
pub(crate) enum CaseServers {
    /// Primary + replica; `lag` is the proxy on the replication link when it is delayed.
    RedisPair {
        /// The pair (boxed: it is much larger than the other variants).
        pair: Box<RedisPair>,
        /// The replication link's proxy (primary → replica delayed), when a lag was asked.
        lag: Option<Proxy>,
    },
    /// PostgreSQL primary + streaming replica; `lag` is the proxy on the replication link when it is
    /// delayed.
    PostgresPair {
        /// The pair (boxed: it is much larger than the other variants).
        pair: Box<PostgresPair>,
        /// The replication link's proxy (primary → replica delayed), when a lag was asked.
        lag: Option<Proxy>,
    },
    /// A 3-member etcd cluster.
    Etcd(EtcdCluster),
    /// A 3-node ZooKeeper ensemble.
    ZooKeeper(ZkEnsemble),
    /// Redlock's independent nodes.
    RedisNodes(RedisNodes),
    /// One restartable Redis (boxed: it is much larger than the other variants).
    RedisNode(Box<RedisNode>),
    /// Primary + replica watched by 3 Sentinels; clients connect through the Sentinels (boxed).
    RedisSentinel(Box<RedisSentinels>),
    /// 3 masters and 3 replicas in one cluster; clients connect with every node as a seed (boxed).
    RedisCluster(Box<RedisCluster>),
    /// One PostgreSQL in a network namespace of its own, with [`KEEPALIVES`] (for
    /// `keepalive_partition`; boxed).
    PostgresNamespaced(Box<NamespacedPostgres>),
}

/// The TCP keepalive a namespaced PostgreSQL applies to its clients' connections: a silent client is
/// given up 3 s after its last packet.
pub(crate) const KEEPALIVES: Keepalives = Keepalives {
    idle: Duration::from_secs(1),
    interval: Duration::from_secs(1),
    count: 2,
};

/// What the server logs when keepalive (or the user timeout) gave up a client's connection.
const TIMED_OUT: &str = "could not receive data from client: Connection timed out";

/// How long one statement of a [`SessionWatch`] may take.
const WATCH_TIMEOUT: Duration = Duration::from_secs(2);

/// The namespaced PostgreSQL's sessions from some client ports, watched on one session kept open
/// ([`CaseServers::watch_sessions`]).
#[derive(Debug)]
pub(crate) struct SessionWatch {
    session: PostgresSession,
    /// Counts the watched sessions in `pg_stat_activity`.
    count: String,
    /// The server log's length when the watch began.
    log_mark: u64,
}

impl SessionWatch {
    /// How many of the watched sessions are live, and how many times the server's log has said a
    /// client's connection timed out since the watch began. Blocking. `server` is the case's.
    pub(crate) fn read(&mut self, server: &CaseServers) -> Result<(u64, usize), String> {
        let rows = self
            .session
            .query(&self.count)
            .map_err(|e| format!("pg_stat_activity: {e}"))?;
        let live = first_value(&rows)
            .and_then(|v| v.parse().ok())
            .unwrap_or_default();
        let log = server
            .namespaced_postgres()?
            .server()
            .log_since(self.log_mark);
        Ok((live, log.matches(TIMED_OUT).count()))
    }
}

/// What a failover found and did.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct FailoverReport {
    /// The killed primary.
    pub old_primary: SocketAddr,
    /// The promoted replica.
    pub new_primary: SocketAddr,
    /// Replication stream bytes the primary had written that the replica never got.
    pub unreplicated_bytes: Option<u64>,
    /// Keys the primary had just before it died: how many.
    pub primary_keys: usize,
    /// Of those, how many the promoted replica lacks.
    pub missing_keys: usize,
    /// Of those, how many it has with another value (an older owner, a smaller fencing counter).
    pub stale_keys: usize,
    /// Through Sentinel or in a cluster: from the kill (or `CLUSTER FAILOVER`) until the replica
    /// answered as the master (named so by a majority of the Sentinels; serving the slot with every
    /// node reporting `cluster_state:ok`).
    pub promoted_after: Option<Duration>,
}

/// Sends one command to a server and answers its reply as text.
type Ask<'a> = &'a dyn Fn(&[&str]) -> lockbench_servers::Result<String>;

impl FailoverReport {
    /// Kills the primary (`kill`, asked through `primary`) and compares what it held just before with
    /// what the replica (asked through `replica`) holds right after (before any promotion, so nothing
    /// has written to it yet). Client writes are paused first (`CLIENT PAUSE … WRITE`), so that the
    /// snapshot is what the primary held when it died: without it, a release between the snapshot
    /// and the kill counted as a key the replica lacked.
    fn kill_primary(
        (old, primary): (SocketAddr, Ask<'_>),
        (new, replica): (SocketAddr, Ask<'_>),
        kill: &dyn Fn() -> std::io::Result<()>,
    ) -> Result<Self, String> {
        primary(&["CLIENT", "PAUSE", "60000", "WRITE"])
            .map_err(|e| format!("pausing the primary's writes: {e}"))?;
        let before = snapshot(primary);
        let written = primary(&["INFO", "replication"])
            .ok()
            .and_then(|i| info_u64(&i, "master_repl_offset"));
        kill().map_err(|e| format!("killing the primary: {e}"))?;
        let received = replica(&["INFO", "replication"])
            .ok()
            .and_then(|i| info_u64(&i, "slave_repl_offset"));
        let after = snapshot(replica);
        Ok(Self::compare(
            (old, &before),
            (new, &after),
            written.zip(received).map(|(w, r)| w.saturating_sub(r)),
        ))
    }

    /// What the primary (`old`) held just before it died against what the replica (`new`) holds.
    fn compare(
        (old, before): (SocketAddr, &BTreeMap<String, String>),
        (new, after): (SocketAddr, &BTreeMap<String, String>),
        unreplicated_bytes: Option<u64>,
    ) -> Self {
        FailoverReport {
            old_primary: old,
            new_primary: new,
            unreplicated_bytes,
            primary_keys: before.len(),
            missing_keys: before.keys().filter(|k| !after.contains_key(*k)).count(),
            stale_keys: before
                .iter()
                .filter(|(k, v)| after.get(*k).is_some_and(|a| a != *v))
                .count(),
            promoted_after: None,
        }
    }

    /// Kills a PostgreSQL pair's primary and compares the lock state it held just before (lease,
    /// fencing and INT_LOCK rows, and the advisory locks its sessions held, which are never
    /// replicated) with the replica's right after, and how far the replica's received WAL was behind
    /// the primary's.
    /// Nothing pauses the clients' writes first (PostgreSQL has no `CLIENT PAUSE`): a statement that
    /// commits between the snapshot and the kill, a few milliseconds, is counted as the snapshot saw
    /// it.
    fn kill_postgres_primary(pair: &PostgresPair) -> Result<Self, String> {
        let (primary, replica) = (pair.primary(), pair.replica());
        let before = postgres_snapshot(primary);
        let written = primary
            .query("SELECT pg_current_wal_lsn()::text")
            .ok()
            .and_then(|rows| first_value(&rows));
        primary
            .kill()
            .map_err(|e| format!("killing the primary: {e}"))?;
        let unreplicated = written.and_then(|lsn| {
            replica
                .query(&format!(
                    "SELECT greatest(pg_wal_lsn_diff('{lsn}', pg_last_wal_receive_lsn()), 0)::bigint"
                ))
                .ok()
                .and_then(|rows| first_value(&rows))
                .and_then(|bytes| bytes.parse().ok())
        });
        let after = postgres_snapshot(replica);
        Ok(Self::compare(
            (primary.addr(), &before),
            (replica.addr(), &after),
            unreplicated,
        ))
    }

    /// [`Self::kill_primary`] for a pair's primary and replica.
    fn kill_pair_primary(primary: &RedisServer, replica: &RedisServer) -> Result<Self, String> {
        Self::kill_primary(
            (primary.addr(), &|args| primary.command(args)),
            (replica.addr(), &|args| replica.command(args)),
            &|| primary.kill(),
        )
    }
}

/// Every key of a (small, test) database with a printable form of its value (strings and hashes;
/// other types by their type name).
fn snapshot(server: Ask<'_>) -> BTreeMap<String, String> {
    let keys = server(&["KEYS", "*"]).unwrap_or_default();
    keys.lines()
        .filter(|k| !k.is_empty())
        .map(|key| {
            let value = match server(&["TYPE", key]).as_deref() {
                Ok("string") => server(&["GET", key]).unwrap_or_default(),
                Ok("hash") => server(&["HGETALL", key]).unwrap_or_default(),
                Ok(other) => other.to_owned(),
                Err(_) => String::new(),
            };
            (key.to_owned(), value)
        })
        .collect()
}

/// The lock state a PostgreSQL server holds, by row or lock: `lease KEY` → its token and holder,
/// `fencing KEY` → its token, `int_lock KEY` → the Spring JDBC peer's row's client id and expiry,
/// `advisory ID` → granted (advisory locks live in the sessions of the server that granted them; a
/// replica shows none of its primary's).
fn postgres_snapshot(server: &PostgresServer) -> BTreeMap<String, String> {
    const STATE: &str = "SELECT 'lease ' || key, token || ' ' || holder FROM lockbench_leases \
         UNION ALL SELECT 'fencing ' || key, token::text FROM lockbench_fencing \
         UNION ALL SELECT 'int_lock ' || lock_key, client_id || ' ' || expired_after FROM int_lock \
         UNION ALL SELECT 'advisory ' || classid || ':' || objid, 'granted' FROM pg_locks \
         WHERE locktype = 'advisory' AND granted";
    server
        .query(STATE)
        .unwrap_or_default()
        .into_iter()
        .filter_map(|row| match row.as_slice() {
            [Some(key), Some(value)] => Some((key.clone(), value.clone())),
            _ => None,
        })
        .collect()
}

fn info_u64(info: &str, field: &str) -> Option<u64> {
    info_field(info, field).and_then(|v| v.parse().ok())
}

impl CaseServers {
    /// Starts a primary + replica; with a `replication_lag`, the replica replicates through a proxy
    /// that delays the primary's stream by it. Blocking (about 0.2 s).
    pub(crate) fn redis_pair(replication_lag: Duration) -> Result<Self, String> {
        let pair = RedisPair::start().map_err(|e| format!("redis primary + replica: {e}"))?;
        let lag = if replication_lag.is_zero() {
            None
        } else {
            let proxy = Proxy::start(pair.primary().addr())
                .map_err(|e| format!("replication link proxy: {e}"))?;
            let port = proxy.addr().port().to_string();
            pair.replica()
                .command(&["REPLICAOF", "127.0.0.1", &port])
                .map_err(|e| format!("REPLICAOF through the link proxy: {e}"))?;
            wait_for_link(&pair, proxy.addr().port())?;
            // Delay only once the link is up, so the handshake is not slowed down.
            proxy.set(Direction::Downstream, Fault::Delay(replication_lag));
            Some(proxy)
        };
        Ok(CaseServers::RedisPair {
            pair: Box::new(pair),
            lag,
        })
    }

    /// Starts a primary + replica and 3 Sentinels, and waits until the Sentinels know the replica and
    /// each other. Blocking (a few seconds).
    pub(crate) fn redis_sentinel() -> Result<Self, String> {
        RedisSentinels::start()
            .map(|group| CaseServers::RedisSentinel(Box::new(group)))
            .map_err(|e| format!("redis primary + replica + 3 sentinels: {e}"))
    }

    /// Starts a Redis Cluster of 3 masters and 3 replicas. Blocking (about 2 s).
    pub(crate) fn redis_cluster() -> Result<Self, String> {
        RedisCluster::start()
            .map(|cluster| CaseServers::RedisCluster(Box::new(cluster)))
            .map_err(|e| format!("redis cluster of 3 masters + 3 replicas: {e}"))
    }

    /// Starts Redlock's 5 independent nodes, without persistence; `fake_clock` = `(node, rate)` runs
    /// that node's wall clock `rate` times as fast. Blocking (~0.1 s).
    pub(crate) fn redis_nodes(fake_clock: Option<(usize, u32)>) -> Result<Self, String> {
        let fake = fake_clock.map(|(node, rate)| (node, FakeClock::faster(rate)));
        RedisNodes::start(RedisNodes::DEFAULT_COUNT, RedisNodeOptions::default(), fake)
            .map(CaseServers::RedisNodes)
            .map_err(|e| format!("{} independent redis nodes: {e}", RedisNodes::DEFAULT_COUNT))
    }

    /// Starts one restartable Redis with `durability`; a durable one keeps its AOF on the real disk
    /// (the system temp dir), so fsync costs what it costs there, not on `/dev/shm`. Blocking.
    pub(crate) fn redis_node(durability: Durability) -> Result<Self, String> {
        let options = RedisNodeOptions {
            durability,
            data_parent: (durability == Durability::AofAlways).then(std::env::temp_dir),
            ..RedisNodeOptions::default()
        };
        RedisNode::start(options)
            .map(|node| CaseServers::RedisNode(Box::new(node)))
            .map_err(|e| format!("restartable redis: {e}"))
    }

    /// Kills Redlock nodes `nodes`; an error naming any that was not running (nothing was killed
    /// there, so the fault did not take effect). Blocking.
    pub(crate) fn kill_nodes(&self, nodes: &[usize]) -> Result<String, String> {
        let CaseServers::RedisNodes(all) = self else {
            return Err("no independent redis nodes".into());
        };
        let mut not_running = Vec::new();
        for &i in nodes {
            let killed = all
                .node(i)
                .kill_running()
                .map_err(|e| format!("killing node {i}: {e}"))?;
            if !killed {
                not_running.push(i.to_string());
            }
        }
        if !not_running.is_empty() {
            return Err(format!(
                "node {} was not running, so there was nothing to kill",
                not_running.join(", ")
            ));
        }
        Ok(describe_nodes(all, nodes))
    }

    /// (Re)starts Redlock nodes `nodes` on their ports and data dirs (killing them first when they
    /// run). Blocking.
    pub(crate) fn restart_nodes(&self, nodes: &[usize]) -> Result<String, String> {
        let CaseServers::RedisNodes(all) = self else {
            return Err("no independent redis nodes".into());
        };
        for &i in nodes {
            all.node(i)
                .restart(OnRestart::KeepData)
                .map_err(|e| format!("restarting node {i}: {e}"))?;
        }
        Ok(describe_nodes(all, nodes))
    }

    /// How far Redlock node `node`'s wall clock (its `TIME`) is ahead of the real one, in ms (negative:
    /// behind; off by at most the command's round trip). Blocking.
    pub(crate) fn node_clock_ahead_ms(&self, node: usize) -> Result<f64, String> {
        let CaseServers::RedisNodes(all) = self else {
            return Err("no independent redis nodes".into());
        };
        if node >= all.len() {
            return Err(format!("no redis node {node}"));
        }
        let reply = all
            .node(node)
            .command(&["TIME"])
            .map_err(|e| format!("TIME on node {node}: {e}"))?;
        let real = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_err(|e| e.to_string())?;
        // The reply is the seconds and the microseconds, one per line.
        let mut parts = reply.lines().map(|l| l.trim().parse::<f64>());
        let (Some(Ok(secs)), Some(Ok(micros))) = (parts.next(), parts.next()) else {
            return Err(format!("TIME on node {node}: unexpected reply {reply:?}"));
        };
        Ok((secs - real.as_secs_f64()) * 1e3 + micros / 1e3)
    }

    /// Kills the restartable Redis and starts it again on its data dir. Blocking.
    pub(crate) fn restart_server(&self) -> Result<String, String> {
        let CaseServers::RedisNode(node) = self else {
            return Err("no restartable redis".into());
        };
        node.restart(OnRestart::KeepData)
            .map_err(|e| format!("restarting redis: {e}"))?;
        Ok(format!("redis {}", node.addr()))
    }

    /// Starts a primary + replica of `kind` (Redis or PostgreSQL); with a `replication_lag`, the
    /// replica replicates through a proxy that delays the primary's stream by it. Blocking.
    pub(crate) fn pair(kind: ServerKind, replication_lag: Duration) -> Result<Self, String> {
        match kind {
            ServerKind::Redis => Self::redis_pair(replication_lag),
            ServerKind::Postgres => Self::postgres_pair(replication_lag),
            ServerKind::InProcess
            | ServerKind::PerClient
            | ServerKind::RedisNodes
            | ServerKind::Etcd
            | ServerKind::ZooKeeper => {
                Err(format!("no primary + replica of {} servers", kind.name()))
            }
        }
    }

    /// Starts a PostgreSQL primary with a streaming replica and the tables its rows need, the Spring
    /// JDBC peer's included (created on the primary, replicated). With a `replication_lag`, the replica streams through a proxy that
    /// delays the primary's WAL by it. Blocking (about a second).
    fn postgres_pair(replication_lag: Duration) -> Result<Self, String> {
        let pair = PostgresPair::start().map_err(|e| format!("postgres primary + replica: {e}"))?;
        crate::backends::kinds::prepare_own_postgres(pair.primary())
            .map_err(|e| format!("postgres tables: {e}"))?;
        let lag = if replication_lag.is_zero() {
            None
        } else {
            let proxy = Proxy::start(pair.primary().addr())
                .map_err(|e| format!("replication link proxy: {e}"))?;
            pair.replicate_through(proxy.addr())
                .map_err(|e| format!("streaming through the link proxy: {e}"))?;
            // Delay only once the stream is up, so the handshake is not slowed down.
            proxy.set(Direction::Downstream, Fault::Delay(replication_lag));
            Some(proxy)
        };
        Ok(CaseServers::PostgresPair {
            pair: Box::new(pair),
            lag,
        })
    }

    /// Starts a PostgreSQL in a network namespace of its own with [`KEEPALIVES`], and the tables its
    /// rows need. Blocking (about a second).
    pub(crate) fn postgres_namespace() -> Result<Self, String> {
        let postgres = NamespacedPostgres::start(PostgresOptions {
            keepalives: Some(KEEPALIVES),
            ..PostgresOptions::default()
        })
        .map_err(|e| format!("postgres in a network namespace: {e}"))?;
        crate::backends::kinds::prepare_own_postgres(postgres.server())
            .map_err(|e| format!("postgres tables: {e}"))?;
        Ok(CaseServers::PostgresNamespaced(Box::new(postgres)))
    }

    /// The case's PostgreSQL in a network namespace of its own; an error for every other topology.
    fn namespaced_postgres(&self) -> Result<&NamespacedPostgres, String> {
        match self {
            CaseServers::PostgresNamespaced(postgres) => Ok(postgres),
            CaseServers::RedisPair { .. }
            | CaseServers::PostgresPair { .. }
            | CaseServers::Etcd(_)
            | CaseServers::ZooKeeper(_)
            | CaseServers::RedisNodes(_)
            | CaseServers::RedisNode(_)
            | CaseServers::RedisSentinel(_)
            | CaseServers::RedisCluster(_) => {
                Err("these servers are not in a network namespace".into())
            }
        }
    }

    /// Drops every packet of the connections from this side's `ports` inside the namespaced
    /// PostgreSQL's namespace, silently, both ways, until the partition is dropped. Blocking.
    pub(crate) fn partition(&self, ports: &[u16]) -> Result<Partition, String> {
        self.namespaced_postgres()?
            .namespace()
            .partition(ports)
            .map_err(|e| format!("partition: {e}"))
    }

    /// A watch on the namespaced PostgreSQL's sessions from this side's `ports`, on one session of
    /// its own kept open for the fault, counting the server's "timed out" log lines from now on.
    /// Blocking.
    pub(crate) fn watch_sessions(&self, ports: &[u16]) -> Result<SessionWatch, String> {
        let postgres = self.namespaced_postgres()?;
        let server = postgres.server();
        let list = ports
            .iter()
            .map(u16::to_string)
            .collect::<Vec<_>>()
            .join(",");
        let count = format!(
            "SELECT count(*) FROM pg_stat_activity WHERE client_addr = '{}' AND client_port IN ({list})",
            postgres.namespace().host_addr()
        );
        let session = PostgresSession::connect(server.addr(), DATABASE, WATCH_TIMEOUT)
            .map_err(|e| format!("a session to watch pg_stat_activity: {e}"))?;
        Ok(SessionWatch {
            session,
            count,
            log_mark: server.log_len(),
        })
    }

    /// Starts a 3-member cluster of `kind` (etcd or ZooKeeper). Blocking (seconds).
    pub(crate) fn cluster(kind: ServerKind) -> Result<Self, String> {
        match kind {
            ServerKind::Etcd => EtcdCluster::start(3)
                .map(CaseServers::Etcd)
                .map_err(|e| format!("3-member etcd cluster: {e}")),
            ServerKind::ZooKeeper => ZkEnsemble::start(3)
                .map(CaseServers::ZooKeeper)
                .map_err(|e| format!("3-node ZooKeeper ensemble: {e}")),
            ServerKind::InProcess
            | ServerKind::PerClient
            | ServerKind::Redis
            | ServerKind::RedisNodes
            | ServerKind::Postgres => Err(format!("no cluster of {} servers", kind.name())),
        }
    }

    /// The server kind.
    pub(crate) fn kind(&self) -> ServerKind {
        match self {
            CaseServers::RedisPair { .. } => ServerKind::Redis,
            CaseServers::PostgresPair { .. } => ServerKind::Postgres,
            CaseServers::Etcd(_) => ServerKind::Etcd,
            CaseServers::ZooKeeper(_) => ServerKind::ZooKeeper,
            CaseServers::RedisNodes(_) => ServerKind::RedisNodes,
            CaseServers::RedisNode(_)
            | CaseServers::RedisSentinel(_)
            | CaseServers::RedisCluster(_) => ServerKind::Redis,
            CaseServers::PostgresNamespaced(_) => ServerKind::Postgres,
        }
    }

    /// Where clients connect: the primary; every member.
    pub(crate) fn endpoints(&self) -> EndpointAddrs {
        let mut out = EndpointAddrs::default();
        match self {
            CaseServers::RedisPair { pair, .. } => {
                out.redis = Some(pair.primary().url());
                out.redis_replicated = true;
                out.redis_replicas = vec![pair.replica().url()];
            }
            CaseServers::PostgresPair { pair, .. } => out.postgres = Some(pair.primary().url()),
            CaseServers::PostgresNamespaced(p) => out.postgres = Some(p.server().url()),
            CaseServers::Etcd(c) => out.etcd = c.endpoints(),
            CaseServers::ZooKeeper(z) => out.zookeeper = Some(z.connect_string()),
            CaseServers::RedisNodes(n) => out.redis_nodes = n.urls(),
            CaseServers::RedisNode(n) => out.redis = Some(n.url()),
            CaseServers::RedisSentinel(group) => {
                out.redis = Some(group.url());
                out.redis_replicated = true;
            }
            CaseServers::RedisCluster(cluster) => {
                out.redis = Some(cluster.url());
                out.redis_replicated = true;
            }
        }
        out
    }

    /// Where the case's server cost is read: the primary (its counters die with it in a failover),
    /// or a member that was not the leader at the start (so a leader kill leaves it standing). None
    /// for restarted servers (a restart resets the counters), which is what Redlock's node faults do,
    /// and for a cluster (see below).
    pub(crate) fn stats_source(&self) -> Option<StatsSource> {
        match self {
            CaseServers::RedisNodes(_) | CaseServers::RedisNode(_) => None,
            // A failover changes roles: a demoted master's counters take in the new master's
            // replicated writes, and the fault's own probes (`CLUSTER NODES`, `CLUSTER INFO`) land on
            // the masters; no figure read there would be the clients' alone.
            CaseServers::RedisCluster(_) => None,
            CaseServers::RedisPair { pair, .. } => Some(primary_stats(pair)),
            CaseServers::RedisSentinel(group) => Some(primary_stats(group.pair())),
            CaseServers::PostgresPair { pair, .. } => Some(StatsSource::new(
                ServerKind::Postgres,
                pair.primary().addr(),
                Some(pair.primary().pid()),
            )),
            CaseServers::PostgresNamespaced(p) => Some(StatsSource::new(
                ServerKind::Postgres,
                p.server().addr(),
                Some(p.server().pid()),
            )),
            CaseServers::Etcd(c) => {
                let i = (c.leader().unwrap_or(0) + 1) % c.len();
                let m = c.member(i);
                Some(StatsSource::new(
                    ServerKind::Etcd,
                    m.client_addr(),
                    Some(m.pid()),
                ))
            }
            CaseServers::ZooKeeper(z) => {
                let i = (z.leader().unwrap_or(0) + 1) % z.len();
                let n = z.node(i);
                Some(StatsSource::new(
                    ServerKind::ZooKeeper,
                    n.addr(),
                    Some(n.pid()),
                ))
            }
        }
    }

    /// What the results say about these servers.
    pub(crate) fn info(&self) -> ServerInfo {
        let (version, address, startup) = match self {
            CaseServers::RedisPair { pair, lag } => (
                pair.primary().version().to_owned(),
                format!(
                    "primary + replica started per case{}",
                    if lag.is_some() {
                        " (replication through a delaying proxy)"
                    } else {
                        ""
                    }
                ),
                pair.startup(),
            ),
            CaseServers::PostgresPair { pair, lag } => (
                pair.primary().version().to_owned(),
                format!(
                    "primary + streaming replica started per case{}",
                    if lag.is_some() {
                        " (replication through a delaying proxy)"
                    } else {
                        ""
                    }
                ),
                pair.primary().startup() + pair.replica().startup(),
            ),
            CaseServers::PostgresNamespaced(p) => (
                p.server().version().to_owned(),
                format!(
                    "one server in network namespace {} started per case (tcp_keepalives {} s / {} s × {}, tcp_user_timeout {} ms)",
                    p.namespace().name(),
                    KEEPALIVES.idle.as_secs(),
                    KEEPALIVES.interval.as_secs(),
                    KEEPALIVES.count,
                    KEEPALIVES.limit().as_millis()
                ),
                p.server().startup(),
            ),
            CaseServers::Etcd(c) => (
                c.member(0).version().to_owned(),
                "3-member cluster started per case".to_owned(),
                c.startup(),
            ),
            CaseServers::ZooKeeper(z) => (
                z.node(0).version().to_owned(),
                "3-node ensemble started per case".to_owned(),
                z.startup(),
            ),
            CaseServers::RedisNodes(n) => (
                redis_version(n.node(0)),
                format!(
                    "{} independent nodes started per case{}",
                    n.len(),
                    n.nodes()
                        .iter()
                        .position(|node| node.options().fake_clock.is_some())
                        .map(|i| format!(" (node {i} under libfaketime)"))
                        .unwrap_or_default()
                ),
                n.nodes().iter().map(RedisNode::startup).sum(),
            ),
            CaseServers::RedisSentinel(group) => (
                group.pair().primary().version().to_owned(),
                "primary + replica + 3 Sentinels started per case".to_owned(),
                group.startup(),
            ),
            CaseServers::RedisCluster(cluster) => (
                redis_version(&cluster.nodes()[0]),
                "cluster of 3 masters + 3 replicas started per case".to_owned(),
                cluster.startup(),
            ),
            CaseServers::RedisNode(n) => (
                redis_version(n),
                format!(
                    "restartable server started per case ({})",
                    match n.options().durability {
                        Durability::None => "no persistence",
                        Durability::AofAlways => "appendonly yes, appendfsync always",
                    }
                ),
                n.startup(),
            ),
        };
        ServerInfo {
            kind: self.kind().name().to_owned(),
            version: (!version.is_empty()).then_some(version),
            address,
            managed: true,
            startup_ms: Some(startup.as_secs_f64() * 1e3),
        }
    }

    /// The process to pause for `pause_server`: the primary, or the current leader. Blocking.
    pub(crate) fn serving_pid(&self) -> Option<(u32, String)> {
        match self {
            CaseServers::RedisPair { pair, .. } => Some(primary_pid(pair)),
            CaseServers::RedisSentinel(group) => Some(primary_pid(group.pair())),
            CaseServers::PostgresPair { pair, .. } => Some((
                pair.primary().pid(),
                format!("postgres primary {}", pair.primary().addr()),
            )),
            CaseServers::PostgresNamespaced(p) => Some((
                p.server().pid(),
                format!("postgres {} (in a network namespace)", p.server().addr()),
            )),
            CaseServers::RedisCluster(cluster) => {
                let node = &cluster.nodes()[0];
                node.pid()
                    .map(|pid| (pid, format!("redis cluster master {}", node.addr())))
            }
            CaseServers::Etcd(c) => c.wait_for_leader(LEADER_TIMEOUT).map(|i| {
                (
                    c.member(i).pid(),
                    format!("etcd leader {}", c.member(i).client_addr()),
                )
            }),
            CaseServers::ZooKeeper(z) => z.wait_for_leader(LEADER_TIMEOUT).map(|i| {
                (
                    z.node(i).pid(),
                    format!("zookeeper leader {}", z.node(i).addr()),
                )
            }),
            CaseServers::RedisNodes(n) => n
                .node(0)
                .pid()
                .map(|pid| (pid, format!("redis node 0 {}", n.node(0).addr()))),
            CaseServers::RedisNode(n) => n.pid().map(|pid| (pid, format!("redis {}", n.addr()))),
        }
    }

    /// The Redis primary's address (for `CLIENT PAUSE`, `CLIENT KILL`).
    pub(crate) fn redis_primary(&self) -> Option<SocketAddr> {
        match self {
            CaseServers::RedisPair { pair, .. } => Some(pair.primary().addr()),
            CaseServers::RedisSentinel(group) => Some(group.pair().primary().addr()),
            CaseServers::RedisNode(n) => Some(n.addr()),
            CaseServers::PostgresPair { .. }
            | CaseServers::PostgresNamespaced(_)
            | CaseServers::Etcd(_)
            | CaseServers::ZooKeeper(_)
            | CaseServers::RedisNodes(_)
            | CaseServers::RedisCluster(_) => None,
        }
    }

    /// Kills the primary, promotes the replica and points every client proxy at it, as an automatic
    /// failover behind a virtual IP or a DNS name does: the proxies send new connections to the
    /// replica first (a Redis client reconnecting in the few milliseconds before the promotion gets
    /// `READONLY` errors and retries; a PostgreSQL one, read-only transaction errors), then the
    /// primary dies, the replica is promoted and the clients' old connections are reset. The delayed
    /// replication link is cut first: what it still carried is lost, as a crashed primary's unsent
    /// stream is. Blocking.
    pub(crate) fn failover(
        &self,
        proxies: Option<&ClientProxies>,
    ) -> Result<FailoverReport, String> {
        let (lag, replica) = match self {
            CaseServers::RedisPair { pair, lag } => (lag, pair.replica().addr()),
            CaseServers::PostgresPair { pair, lag } => (lag, pair.replica().addr()),
            CaseServers::Etcd(_)
            | CaseServers::ZooKeeper(_)
            | CaseServers::RedisNodes(_)
            | CaseServers::RedisNode(_)
            | CaseServers::RedisSentinel(_)
            | CaseServers::RedisCluster(_)
            | CaseServers::PostgresNamespaced(_) => {
                return Err("failover needs a primary + replica".into());
            }
        };
        if let Some(lag) = lag {
            lag.refuse(true);
            lag.reset_all();
        }
        if let Some(proxies) = proxies {
            for proxy in proxies.all() {
                proxy.set_upstream(replica);
            }
        }
        let report = self.kill_primary_promote_replica()?;
        if let Some(proxies) = proxies {
            for proxy in proxies.all() {
                proxy.reset_all();
            }
        }
        Ok(report)
    }

    /// Kills a pair's primary, then promotes its replica: what the primary held that the replica
    /// lacks.
    fn kill_primary_promote_replica(&self) -> Result<FailoverReport, String> {
        let promoted = |done: lockbench_servers::Result<()>| {
            done.map_err(|e| format!("promoting the replica: {e}"))
        };
        match self {
            CaseServers::RedisPair { pair, .. } => {
                let report = FailoverReport::kill_pair_primary(pair.primary(), pair.replica())?;
                promoted(pair.promote_replica())?;
                Ok(report)
            }
            CaseServers::PostgresPair { pair, .. } => {
                let report = FailoverReport::kill_postgres_primary(pair)?;
                promoted(pair.promote_replica())?;
                Ok(report)
            }
            CaseServers::Etcd(_)
            | CaseServers::ZooKeeper(_)
            | CaseServers::RedisNodes(_)
            | CaseServers::RedisNode(_)
            | CaseServers::RedisSentinel(_)
            | CaseServers::RedisCluster(_)
            | CaseServers::PostgresNamespaced(_) => {
                Err("failover needs a primary + replica".into())
            }
        }
    }

    /// Kills the primary and waits until the Sentinels have promoted the replica. Nothing tells the
    /// clients: they find the new primary through the Sentinels, as they would in production.
    /// Blocking (about the Sentinels' `down-after` plus an election).
    pub(crate) fn sentinel_failover(&self) -> Result<FailoverReport, String> {
        let CaseServers::RedisSentinel(group) = self else {
            return Err("sentinel_failover needs a primary + replica watched by Sentinels".into());
        };
        let (primary, replica) = (group.pair().primary(), group.pair().replica());
        let killed_at = Instant::now();
        let report = FailoverReport::kill_pair_primary(primary, replica)?;
        let (promoted, seen_at) = group
            .wait_for_new_primary(primary.addr(), PROMOTION_TIMEOUT)
            .ok_or_else(|| {
                format!("the Sentinels promoted no replica within {PROMOTION_TIMEOUT:?}")
            })?;
        Ok(FailoverReport {
            new_primary: promoted,
            promoted_after: Some(seen_at - killed_at),
            ..report
        })
    }

    /// Fails over the master serving `slot_key`'s slot, as `kill` says: by killing it (its replica
    /// takes over once the other masters agree it failed) or by `CLUSTER FAILOVER` on its replica (no
    /// write lost). Waits until the slot is served by the new master and every node reports
    /// `cluster_state:ok`. Nothing tells the clients: they follow `MOVED` answers and read the layout
    /// again after errors. Blocking (about 2 s after a kill).
    pub(crate) fn cluster_failover(
        &self,
        slot_key: &str,
        kill: bool,
    ) -> Result<FailoverReport, String> {
        let CaseServers::RedisCluster(cluster) = self else {
            return Err("cluster faults need a Redis Cluster".into());
        };
        let master = cluster
            .master_of(slot_key)
            .ok_or_else(|| format!("no master serves {slot_key:?}"))?;
        let replica = cluster
            .replica_of(master)
            .ok_or_else(|| format!("the master {} has no replica", master.addr()))?;
        let began = Instant::now();
        let report = if kill {
            let (raddr, timeout) = (replica.addr(), Duration::from_secs(2));
            let on_replica = move |args: &[&str]| {
                lockbench_servers::probe::resp_commands_as(
                    raddr,
                    None,
                    &[&["READONLY"], args],
                    timeout,
                )
            };
            FailoverReport::kill_primary(
                (master.addr(), &|args| master.command(args)),
                (replica.addr(), &on_replica),
                &|| master.kill(),
            )?
        } else {
            replica
                .command(&["CLUSTER", "FAILOVER"])
                .map_err(|e| format!("CLUSTER FAILOVER on {}: {e}", replica.addr()))?;
            FailoverReport {
                old_primary: master.addr(),
                new_primary: replica.addr(),
                unreplicated_bytes: None,
                primary_keys: 0,
                missing_keys: 0,
                stale_keys: 0,
                promoted_after: None,
            }
        };
        let (promoted, seen_at) = cluster
            .wait_for_new_master(slot_key, master.addr(), PROMOTION_TIMEOUT)
            .ok_or_else(|| format!("no replica took over within {PROMOTION_TIMEOUT:?}"))?;
        Ok(FailoverReport {
            new_primary: promoted,
            promoted_after: Some(seen_at - began),
            ..report
        })
    }

    /// Kills the current leader, then watches the survivors until one reports itself leader.
    /// Returns the killed leader's description and how long the election took (`None`: no new
    /// leader within 10 s). Blocking.
    pub(crate) fn kill_leader(&self) -> Result<(String, Option<Duration>), String> {
        let none = || format!("no leader within {LEADER_TIMEOUT:?}");
        let (what, killed_at) = match self {
            CaseServers::Etcd(c) => {
                let i = c.wait_for_leader(LEADER_TIMEOUT).ok_or_else(none)?;
                c.kill(i).map_err(|e| format!("killing the leader: {e}"))?;
                (
                    format!("etcd member {i} (leader) {}", c.member(i).client_addr()),
                    Instant::now(),
                )
            }
            CaseServers::ZooKeeper(z) => {
                let i = z.wait_for_leader(LEADER_TIMEOUT).ok_or_else(none)?;
                z.kill(i).map_err(|e| format!("killing the leader: {e}"))?;
                (
                    format!("zookeeper node {i} (leader) {}", z.node(i).addr()),
                    Instant::now(),
                )
            }
            CaseServers::RedisPair { .. }
            | CaseServers::PostgresPair { .. }
            | CaseServers::PostgresNamespaced(_)
            | CaseServers::RedisNodes(_)
            | CaseServers::RedisNode(_)
            | CaseServers::RedisSentinel(_)
            | CaseServers::RedisCluster(_) => {
                return Err("these servers have no leader election".into());
            }
        };
        let elected = match self {
            CaseServers::Etcd(c) => c.wait_for_leader(LEADER_TIMEOUT),
            CaseServers::ZooKeeper(z) => z.wait_for_leader(LEADER_TIMEOUT),
            CaseServers::RedisPair { .. }
            | CaseServers::PostgresPair { .. }
            | CaseServers::PostgresNamespaced(_)
            | CaseServers::RedisNodes(_)
            | CaseServers::RedisNode(_)
            | CaseServers::RedisSentinel(_)
            | CaseServers::RedisCluster(_) => None,
        };
        Ok((what, elected.map(|_| killed_at.elapsed())))
    }
}

/// Where a pair's server cost is read: its primary as started.
fn primary_stats(pair: &RedisPair) -> StatsSource {
    StatsSource::new(
        ServerKind::Redis,
        pair.primary().addr(),
        Some(pair.primary().pid()),
    )
}

/// The process `pause_server` stops in a pair: its primary as started.
fn primary_pid(pair: &RedisPair) -> (u32, String) {
    (
        pair.primary().pid(),
        format!("redis primary {}", pair.primary().addr()),
    )
}

/// `redis nodes 3,4 (127.0.0.1:P3, 127.0.0.1:P4)`.
fn describe_nodes(all: &RedisNodes, nodes: &[usize]) -> String {
    let indices: Vec<String> = nodes.iter().map(usize::to_string).collect();
    let addrs: Vec<String> = nodes
        .iter()
        .map(|&i| all.node(i).addr().to_string())
        .collect();
    format!("redis nodes {} ({})", indices.join(","), addrs.join(", "))
}

fn redis_version(node: &RedisNode) -> String {
    node.command(&["INFO", "server"])
        .ok()
        .and_then(|info| info_field(&info, "redis_version").map(str::to_owned))
        .unwrap_or_default()
}

/// Waits until the replica's link to `port` is up and it has caught up with the primary.
fn wait_for_link(pair: &RedisPair, port: u16) -> Result<(), String> {
    let deadline = Instant::now() + LINK_TIMEOUT;
    loop {
        let replica = pair
            .replica()
            .command(&["INFO", "replication"])
            .unwrap_or_default();
        let up = info_field(&replica, "master_link_status") == Some("up")
            && info_u64(&replica, "master_port") == Some(u64::from(port));
        if up {
            let primary = pair
                .primary()
                .command(&["INFO", "replication"])
                .unwrap_or_default();
            let written = info_u64(&primary, "master_repl_offset");
            if written.is_some() && written <= info_u64(&replica, "slave_repl_offset") {
                return Ok(());
            }
        }
        if Instant::now() >= deadline {
            return Err(format!(
                "the replica did not replicate through the link proxy within {LINK_TIMEOUT:?}"
            ));
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A PostgreSQL pair has every row's table, the Spring JDBC peer's included, and a failover's
    /// evidence counts a Spring lock row written inside the replication lag as missing on the replica.
    #[test]
    fn a_postgres_failover_sees_the_spring_rows_the_replica_lacks() {
        let servers =
            CaseServers::pair(ServerKind::Postgres, Duration::from_secs(2)).expect("pair");
        let CaseServers::PostgresPair { pair, .. } = &servers else {
            panic!("a PostgreSQL pair");
        };
        pair.primary()
            .query(
                "INSERT INTO INT_LOCK VALUES ('00000000-0000-3000-8000-000000000000', 'DEFAULT', \
                 '11111111-1111-4111-8111-111111111111', now(), now() + interval '1 minute')",
            )
            .expect("INT_LOCK on the primary");
        let report = servers.failover(None).expect("failover");
        assert_eq!(
            (report.primary_keys, report.missing_keys),
            (1, 1),
            "{report:?}"
        );
        assert!(
            report.unreplicated_bytes.is_some_and(|b| b > 0),
            "{report:?}"
        );
    }
}
