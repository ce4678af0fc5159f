//! Redis Cluster: `redis+cluster://[user:pass@]host:port[,host:port…]`, the seeds the client first asks
//! for the cluster's layout; `rediss+cluster://…[?ca=ca.pem[&cert=c.pem&key=c.key]]` over TLS (every
//! node then, with the same files).
//!
//! The client reads which master serves which of the 16384 hash slots (`CLUSTER SLOTS`, from the first
//! seed or known node that answers, preferring an answer that covers every slot) and keeps one
//! multiplexed connection per master, opened lazily, each authenticated with the address's user and
//! password. A command goes to the master of its key's slot ([`slot`]: CRC16 of the key, or of its
//! `{hash tag}`; every lock's keys share one tag, so a lock lives on one master). Commands without a
//! key go to any master, except `SCRIPT`, `CONFIG`, `FLUSHALL` and `FLUSHDB`, which go to every
//! master (the first error, else the first answer, is returned). A pipeline goes where its first keyed command goes; a batch
//! script call must name keys of one slot, so batch renewals are split by slot first ([`by_slot`]).
//!
//! As cluster clients do (redis-rs's cluster client, Redisson, Lettuce), a `MOVED` answer is followed
//! at once: the slot is recorded as the named node's and the command is sent there (up to
//! [`MAX_REDIRECTS`] times); an `ASK` answer sends `ASKING` and the command to the named node without
//! changing the layout (a pipeline with one keyed command goes there whole, after `ASKING`). Neither ran
//! the command, so re-sending never doubles a write. Any other error a
//! failover causes (a broken, refused or timed-out connection, `CLUSTERDOWN`, `TRYAGAIN`, `READONLY`,
//! `MASTERDOWN`) fails the command (its caller reports it) and has the layout read again in the
//! background, at most once per [`REFRESH_AT_MOST_EVERY`].
//!
//! Every request the servers see is counted (in the client's [`RequestCount`]): each node a command is
//! sent to, each redirect, `ASKING` (by each node's connection, see `counted`), and every `CLUSTER
//! SLOTS` with its connection's handshake.
//! Databases other than 0 are refused (`Config`): Redis Cluster has one database. Over TLS, the nodes
//! name their TLS ports in `CLUSTER SLOTS` (asked over TLS, a node with `tls-cluster` answers those).

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, RwLock, RwLockReadGuard};
use std::time::{Duration, Instant};

use redis::aio::{ConnectionLike, ConnectionManagerConfig};
use redis::{Cmd, ErrorKind, Pipeline, RedisError, RedisResult, ServerErrorKind, Value};

use super::client::{
    BACKEND, ConnectionSettings, RequestCount, error_of, error_of_all, open_parts,
};
use super::counted::CountedManager;
use crate::address::TlsFiles;
use crate::error::LockError;

mod address;
mod slots;
mod target;

pub(crate) use address::{ClusterAddress, is_cluster};
use slots::{SLOTS, covered, parse_slots};
pub(crate) use slots::{by_slot, slot};
use target::{Target, keyed_commands, target_of, target_of_pipeline};

/// The layout is read again after a failed command at most this often.
pub(crate) const REFRESH_AT_MOST_EVERY: Duration = Duration::from_millis(100);
/// How many `MOVED`/`ASK` answers one command follows.
pub(crate) const MAX_REDIRECTS: usize = 3;

/// One master's connection.
#[derive(Clone)]
pub(crate) struct Node {
    /// `host:port`.
    pub addr: String,
    /// For further connections (pub/sub, a renewal thread's blocking one).
    pub client: redis::Client,
    /// The multiplexed command connection (counting what it sends).
    pub manager: CountedManager,
}

/// Which node serves which slot.
struct Layout {
    /// Every node a command may go to (masters, and nodes a `MOVED` named).
    nodes: Vec<Node>,
    /// Per slot, the index into `nodes` of its master (`None`: no master known).
    owners: Vec<Option<usize>>,
}

impl Layout {
    fn node_of(&self, slot: u16) -> Option<&Node> {
        self.owners[usize::from(slot)].map(|i| &self.nodes[i])
    }

    /// The nodes that serve at least one slot, in order of their first slot.
    fn masters(&self) -> Vec<Node> {
        let mut seen = HashSet::new();
        self.owners
            .iter()
            .flatten()
            .filter(|&&i| seen.insert(i))
            .map(|&i| self.nodes[i].clone())
            .collect()
    }

    fn index_of(&self, addr: &str) -> Option<usize> {
        self.nodes.iter().position(|n| n.addr == addr)
    }
}

/// The command connections to a cluster's masters (see the module doc).
pub(crate) struct ClusterRoute {
    address: ClusterAddress,
    shown: String,
    settings: ConnectionSettings,
    config: ConnectionManagerConfig,
    /// The count every node's connection and every layout read adds to.
    requests: RequestCount,
    layout: RwLock<Layout>,
    refreshing: AtomicBool,
    last_refresh: Mutex<Option<Instant>>,
    /// Where refreshes run, also when a renewal thread (no runtime of its own) calls for one.
    runtime: tokio::runtime::Handle,
}

impl ClusterRoute {
    /// Reads the layout from the seeds and opens a lazy connection to each master.
    pub(crate) async fn open(
        address: ClusterAddress,
        shown: String,
        settings: ConnectionSettings,
        config: ConnectionManagerConfig,
        requests: RequestCount,
    ) -> Result<Arc<Self>, LockError> {
        let route = Arc::new(ClusterRoute {
            address,
            shown,
            settings,
            config,
            requests,
            layout: RwLock::new(Layout {
                nodes: Vec::new(),
                owners: vec![None; usize::from(SLOTS)],
            }),
            refreshing: AtomicBool::new(false),
            last_refresh: Mutex::new(Some(Instant::now())),
            runtime: tokio::runtime::Handle::current(),
        });
        route.reload().await?;
        Ok(route)
    }

    fn layout(&self) -> RwLockReadGuard<'_, Layout> {
        self.layout.read().unwrap_or_else(|e| e.into_inner())
    }

    /// The node `target` goes to now.
    fn node_for(&self, target: Target<'_>) -> RedisResult<Node> {
        let layout = self.layout();
        let node = match target {
            Target::Key(key) => layout.node_of(slot(key)),
            Target::Slot(slot) => layout.node_of(slot),
            Target::Any | Target::Every => layout
                .owners
                .iter()
                .flatten()
                .next()
                .map(|&i| &layout.nodes[i]),
        };
        node.cloned().ok_or_else(|| {
            let what = match target {
                Target::Key(key) => format!("slot {}", slot(key)),
                Target::Slot(slot) => format!("slot {slot}"),
                _ => "any slot".to_owned(),
            };
            RedisError::from((
                ErrorKind::Server(ServerErrorKind::ClusterDown),
                "no master known",
                format!("the cluster layout names no master for {what}"),
            ))
        })
    }

    /// A client for any master, for connections that need no particular one (pub/sub: a cluster
    /// delivers every `PUBLISH` on every node).
    pub(crate) fn client(&self) -> redis::Client {
        self.client_of_slot(None)
    }

    /// A client for the master of `slot` now (any master for `None`).
    pub(crate) fn client_of_slot(&self, slot: Option<u16>) -> redis::Client {
        match self.node_for(slot.map_or(Target::Any, Target::Slot)) {
            Ok(node) => node.client,
            // No master known for the slot: the first node known (`open` found at least one); a
            // connection there is redirected or fails, and its owner asks for a refresh.
            Err(_) => self.layout().nodes[0].client.clone(),
        }
    }

    /// The master of `slot` now.
    pub(crate) fn node_of_slot(&self, slot: u16) -> RedisResult<Node> {
        self.node_for(Target::Slot(slot))
    }

    /// The shards now, each named by the first slot its master serves (a failover hands a master's
    /// slots to its replica whole, so the name outlives it): per slot, its shard (`None`: no master
    /// known).
    pub(crate) fn shard_of_slots(&self) -> Vec<Option<u16>> {
        let layout = self.layout();
        let mut first = HashMap::new();
        layout
            .owners
            .iter()
            .zip(0..SLOTS)
            .map(|(owner, slot)| owner.map(|i| *first.entry(i).or_insert(slot)))
            .collect()
    }

    /// The masters now.
    pub(crate) fn masters(&self) -> Vec<Node> {
        self.layout().masters()
    }

    /// Sends `cmd` where it goes, following redirects.
    pub(crate) async fn send(self: &Arc<Self>, cmd: &Cmd) -> RedisResult<Value> {
        let target = target_of(cmd);
        if target == Target::Every {
            // Every master gets it, also when one fails (a dead master must not keep a script from
            // the others); the first error, else the first answer, is the command's.
            let mut first_answer = None;
            let mut first_error = None;
            for mut node in self.masters() {
                let answer = node.manager.req_packed_command(cmd).await;
                match error_of(&answer) {
                    Some(e) => {
                        self.after_error(&e);
                        first_error.get_or_insert(answer);
                    }
                    None => {
                        first_answer.get_or_insert(answer);
                    }
                }
            }
            return first_error
                .or(first_answer)
                .unwrap_or_else(|| self.node_for(Target::Any).map(|_| Value::Nil));
        }
        let mut node = self.node_for(target)?;
        let mut redirects = 0;
        loop {
            let answer = node.manager.req_packed_command(cmd).await;
            // A server's error answer comes as `Ok(Value::ServerError)`, a broken link as `Err`.
            let redirect = match error_of(&answer) {
                Some(e) if redirects < MAX_REDIRECTS => e.redirect_node().map(|(addr, slot)| {
                    (
                        addr.to_owned(),
                        slot,
                        e.kind() == ErrorKind::Server(ServerErrorKind::Ask),
                    )
                }),
                _ => None,
            };
            match redirect {
                Some((addr, slot, ask)) => {
                    redirects += 1;
                    if ask {
                        let mut asked = self.node_at(&addr)?;
                        let mut pipeline = redis::pipe();
                        pipeline.cmd("ASKING").ignore().add_command(cmd.clone());
                        let answer = asked.manager.req_packed_commands(&pipeline, 1, 1).await;
                        let answer = answer.map(|mut v| v.pop().unwrap_or(Value::Nil));
                        if let Some(e) = error_of(&answer) {
                            self.after_error(&e);
                        }
                        return answer;
                    }
                    node = self.moved(slot, &addr)?;
                }
                None => {
                    if let Some(e) = error_of(&answer) {
                        self.after_error(&e);
                    }
                    return answer;
                }
            }
        }
    }

    /// Sends `pipeline` where it goes, following `MOVED` redirects, and `ASK` when the pipeline has one
    /// keyed command (`ASKING` admits only the command after it): it is sent, after `ASKING`, to the
    /// named node without changing the layout, so a command that must follow the keyed one on its
    /// connection (`WAIT` after a lock write) still does.
    pub(crate) async fn send_pipeline(
        self: &Arc<Self>,
        pipeline: &Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisResult<Vec<Value>> {
        let target = target_of_pipeline(pipeline);
        let mut node = self.node_for(target)?;
        let wrapper = if pipeline.is_transaction() { 2 } else { 0 };
        let mut redirects = 0;
        loop {
            let answer = node
                .manager
                .req_packed_commands(pipeline, offset, count)
                .await;
            let error = error_of_all(&answer);
            let ask = |e: &RedisError| e.kind() == ErrorKind::Server(ServerErrorKind::Ask);
            if let Some(e) = &error
                && redirects < MAX_REDIRECTS
                && ask(e)
                && wrapper == 0
                && keyed_commands(pipeline) == 1
                && let Some((addr, _)) = e.redirect_node()
            {
                let mut asked = self.node_at(addr)?;
                let mut asking = redis::pipe();
                asking.cmd("ASKING").ignore();
                for cmd in pipeline.cmd_iter() {
                    asking.add_command(cmd.clone());
                }
                let answer = asked
                    .manager
                    .req_packed_commands(&asking, offset + 1, count)
                    .await;
                if let Some(e) = error_of_all(&answer) {
                    self.after_error(&e);
                }
                return answer;
            }
            let moved = match &error {
                Some(e)
                    if redirects < MAX_REDIRECTS
                        && e.kind() == ErrorKind::Server(ServerErrorKind::Moved) =>
                {
                    e.redirect_node()
                        .map(|(addr, slot)| (addr.to_owned(), slot))
                }
                _ => None,
            };
            match moved {
                Some((addr, slot)) => {
                    redirects += 1;
                    node = self.moved(slot, &addr)?;
                }
                None => {
                    if let Some(e) = error {
                        self.after_error(&e);
                    }
                    return answer;
                }
            }
        }
    }

    /// After a failed command: reads the layout again ([`Self::refresh`]) when `error` is one a
    /// failover causes.
    pub(crate) fn after_error(self: &Arc<Self>, error: &RedisError) {
        let failover_like = error.is_io_error()
            || error.is_connection_dropped()
            || error.is_connection_refusal()
            || error.is_timeout()
            || error.is_cluster_error()
            || matches!(
                error.kind(),
                ErrorKind::Server(ServerErrorKind::ReadOnly | ServerErrorKind::MasterDown)
            );
        if failover_like {
            self.refresh();
        }
    }

    /// Records `slot` as served by `addr` (after `MOVED`) and returns that node.
    fn moved(self: &Arc<Self>, slot: u16, addr: &str) -> RedisResult<Node> {
        let node = self.node_at(addr)?;
        let mut layout = self.layout.write().unwrap_or_else(|e| e.into_inner());
        if let Some(i) = layout.index_of(addr) {
            layout.owners[usize::from(slot)] = Some(i);
        }
        drop(layout);
        // One slot moved; others may have moved with it.
        self.refresh();
        Ok(node)
    }

    /// The node at `addr`, connected (lazily) and added to the layout if new.
    fn node_at(&self, addr: &str) -> RedisResult<Node> {
        if let Some(i) = self.layout().index_of(addr) {
            return Ok(self.layout().nodes[i].clone());
        }
        let node = self
            .connect(addr)
            .map_err(|e| RedisError::from((ErrorKind::Io, "cannot connect", e.to_string())))?;
        let mut layout = self.layout.write().unwrap_or_else(|e| e.into_inner());
        match layout.index_of(addr) {
            Some(i) => Ok(layout.nodes[i].clone()),
            None => {
                layout.nodes.push(node.clone());
                Ok(node)
            }
        }
    }

    /// Reads the layout again, in the background, unless it was read less than
    /// [`REFRESH_AT_MOST_EVERY`] ago or is being read now. Also for connections that broke outside
    /// the command connections (pub/sub, a renewal thread's own).
    pub(crate) fn refresh(self: &Arc<Self>) {
        {
            let mut last = self.last_refresh.lock().unwrap_or_else(|e| e.into_inner());
            if last.is_some_and(|at| at.elapsed() < REFRESH_AT_MOST_EVERY) {
                return;
            }
            if self.refreshing.swap(true, Ordering::AcqRel) {
                return;
            }
            *last = Some(Instant::now());
        }
        let route = self.clone();
        self.runtime.spawn(async move {
            let _ = route.reload().await;
            route.refreshing.store(false, Ordering::Release);
        });
    }

    /// Asks the known nodes, then the seeds, for `CLUSTER SLOTS` and installs the first answer that
    /// covers every slot (or, failing that, the one covering most).
    async fn reload(&self) -> Result<(), LockError> {
        let mut candidates: Vec<String> =
            self.layout().nodes.iter().map(|n| n.addr.clone()).collect();
        for seed in &self.address.seeds {
            if !candidates.contains(seed) {
                candidates.push(seed.clone());
            }
        }
        let mut best: Option<Vec<(u16, u16, String)>> = None;
        let mut why = Vec::new();
        for candidate in &candidates {
            match self.ask_slots(candidate).await {
                Ok(ranges) => {
                    let covered = covered(&ranges);
                    if covered == usize::from(SLOTS) {
                        best = Some(ranges);
                        break;
                    }
                    if best.as_ref().is_none_or(|b| covered > self::covered(b)) {
                        best = Some(ranges);
                    }
                }
                Err(e) => why.push(format!("{candidate}: {e}")),
            }
        }
        let Some(ranges) = best.filter(|r| !r.is_empty()) else {
            return Err(LockError::backend(
                BACKEND,
                format!(
                    "no node of {} told the cluster layout ({})",
                    self.shown,
                    why.join("; ")
                ),
            ));
        };
        let mut nodes: Vec<Node> = self.layout().nodes.clone();
        let mut owners = vec![None; usize::from(SLOTS)];
        for (first, last, addr) in &ranges {
            let i = match nodes.iter().position(|n| &n.addr == addr) {
                Some(i) => i,
                None => {
                    nodes.push(self.connect(addr)?);
                    nodes.len() - 1
                }
            };
            for slot in *first..=*last {
                owners[usize::from(slot)] = Some(i);
            }
        }
        *self.layout.write().unwrap_or_else(|e| e.into_inner()) = Layout { nodes, owners };
        Ok(())
    }

    /// `CLUSTER SLOTS` of the node at `addr`: `(first, last, master)` per range.
    async fn ask_slots(&self, addr: &str) -> Result<Vec<(u16, u16, String)>, LockError> {
        let client = self.client_at(addr)?;
        let timeout = self.settings.connect_timeout + self.settings.response_timeout;
        let asking = async {
            let mut connection = client.get_multiplexed_async_connection().await?;
            self.requests.handshake(&client);
            self.requests.sent(1);
            connection
                .req_packed_command(redis::cmd("CLUSTER").arg("SLOTS"))
                .await
        };
        let answer = tokio::time::timeout(timeout, asking)
            .await
            .map_err(|_| LockError::backend(BACKEND, format!("no answer within {timeout:?}")))??;
        let host = addr.rsplit_once(':').map_or(addr, |(host, _)| host);
        parse_slots(&answer, host)
            .ok_or_else(|| LockError::backend(BACKEND, "unexpected CLUSTER SLOTS answer"))
    }

    fn client_at(&self, addr: &str) -> Result<redis::Client, LockError> {
        let plain = TlsFiles::default();
        let (scheme, tls) = match &self.address.tls {
            Some(tls) => ("rediss", tls),
            None => ("redis", &plain),
        };
        open_parts(
            &format!("{scheme}://{addr}"),
            self.address.credentials.as_ref(),
            tls,
            &self.shown,
        )
    }

    /// A lazy connection to the node at `addr`.
    fn connect(&self, addr: &str) -> Result<Node, LockError> {
        let client = self.client_at(addr)?;
        let manager =
            CountedManager::new_lazy(client.clone(), self.config.clone(), self.requests.clone())?;
        Ok(Node {
            addr: addr.to_owned(),
            client,
            manager,
        })
    }

    /// The seeds and masters, for `Debug`.
    pub(crate) fn describe(&self) -> String {
        let masters: Vec<String> = self.masters().into_iter().map(|n| n.addr).collect();
        format!("cluster, masters {}", masters.join(","))
    }
}
