//! The `redlock` client ([`Redlock`]) over its N nodes: acquire on a majority, extension, release.
//! What it does is the folder's doc.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::redis::transport::cluster;
use crate::redis::transport::connection::Commands;
use async_trait::async_trait;
use futures::future::join_all;

use super::config::{RedlockConfig, quorum, validity};
use crate::error::LockError;
use crate::event::{Events, LockEvent};
use crate::lease::{AcquireOptions, FencingToken, Lease, LeaseHandle, LeaseMode, LeaseState};
use crate::locker::{Capabilities, Locker};
use crate::redis::acquire::{self, Request};
use crate::redis::string_lock::{self, StringLock};
use crate::redis::transport::connection::{BACKEND, RedisConnection};
use crate::renewal::{HoldTicket, Holds, RenewOutcome, RenewalPlan, StopRenewal, renew_until_lost};

/// The strategy id.
pub const ID: &str = "redlock";

/// The independent masters and the per-node calls, shared by a client and its renewal tasks.
#[derive(Debug)]
struct Nodes {
    connections: Vec<RedisConnection>,
}

/// One node's answer (or its error, or its silence past the node timeout).
type Vote<T> = Result<T, LockError>;

impl Nodes {
    fn quorum(&self) -> usize {
        quorum(self.connections.len())
    }

    /// Runs `call` on every node at once, each bounded by `timeout`; answers in node order.
    async fn each<T, F, Fut>(&self, timeout: Duration, call: F) -> Vec<Vote<T>>
    where
        F: Fn(Commands) -> Fut,
        Fut: Future<Output = Vote<T>>,
    {
        let calls = self.connections.iter().enumerate().map(|(i, node)| {
            let call = call(node.commands());
            async move {
                tokio::time::timeout(timeout, call)
                    .await
                    .unwrap_or_else(|_| {
                        Err(LockError::backend(
                            BACKEND,
                            format!("redlock node {i} gave no answer within {timeout:?}"),
                        ))
                    })
            }
        });
        join_all(calls).await
    }

    /// `SET key value NX PX ttl` on every node: whether each granted it.
    async fn set_nx(&self, lock: &StringLock, ttl_ms: u64, timeout: Duration) -> Vec<Vote<bool>> {
        self.each(timeout, |mut node| async move {
            let answer: Option<String> = redis::cmd("SET")
                .arg(&lock.keys.lock)
                .arg(&*lock.value)
                .arg("NX")
                .arg("PX")
                .arg(ttl_ms)
                .query_async(&mut node)
                .await?;
            Ok(answer.is_some())
        })
        .await
    }

    /// Check-and-delete on every node: whether each deleted our value.
    async fn unlock(&self, lock: &StringLock, timeout: Duration) -> Vec<Vote<bool>> {
        self.each(timeout, |mut node| async move {
            lock.delete_if_ours(&mut node).await
        })
        .await
    }

    /// Check-and-pexpire on every node, judged by the quorum (see the module docs).
    async fn extend(
        &self,
        lock: &StringLock,
        ttl_ms: u64,
        timeout: Duration,
    ) -> Result<RenewOutcome, LockError> {
        let votes = self
            .each(timeout, |mut node| async move {
                lock.renew(&mut node, ttl_ms).await
            })
            .await;
        let mut margins = Vec::new();
        let (mut extended, mut rejected) = (0, 0);
        let mut errors = Vec::new();
        for vote in votes {
            match vote {
                Ok(RenewOutcome::Extended { remaining_before }) => {
                    extended += 1;
                    margins.extend(remaining_before);
                }
                Ok(RenewOutcome::Gone) => rejected += 1,
                Err(e) => errors.push(e.to_string()),
            }
        }
        let (n, q) = (self.connections.len(), self.quorum());
        if extended >= q {
            margins.sort_unstable_by(|a, b| b.cmp(a));
            let remaining_before = (margins.len() >= q).then(|| margins[q - 1]);
            return Ok(RenewOutcome::Extended { remaining_before });
        }
        if rejected > n - q {
            return Ok(RenewOutcome::Gone);
        }
        Err(LockError::backend(
            BACKEND,
            format!(
                "extension reached {extended} of {n} nodes (quorum {q}), {rejected} not ours; errors: {}",
                errors.join("; ")
            ),
        ))
    }
}

/// What the client's leases share.
#[derive(Debug)]
struct Core {
    nodes: Arc<Nodes>,
    config: RedlockConfig,
    events: Events,
    holds: Holds,
    closed: AtomicBool,
}

/// One client of N independent Redis masters running the `redlock` strategy. See the module docs.
#[derive(Debug)]
pub struct Redlock {
    core: Arc<Core>,
}

impl Redlock {
    /// What the strategy can do, without connecting (for listings): no fencing, no re-entry, no
    /// server wake-up; watchdog and fixed leases; a lost signal.
    pub const CAPABILITIES: Capabilities = Capabilities {
        reentrant: false,
        fencing: false,
        auto_renew: true,
        fixed_lease: true,
        wait_notify: false,
        lost_signal: true,
        hold_identity: true,
        min_ttl: Duration::from_millis(10),
        ttl_granularity: Duration::from_millis(1),
    };

    /// Connects to every node of `urls` (`redis://127.0.0.1:6379`, one per independent master) at once
    /// and loads the scripts. No URL or an invalid `config` is a `Config` error; a node that does not
    /// answer within the connect timeout is a `Backend` error.
    pub async fn connect(
        urls: &[String],
        config: RedlockConfig,
        events: Events,
    ) -> Result<Self, LockError> {
        config.validate()?;
        if urls.is_empty() {
            return Err(LockError::Config(
                "redlock needs at least one node url".into(),
            ));
        }
        if urls.iter().any(|url| cluster::is_cluster(url)) {
            return Err(LockError::Config(
                "redlock runs on independent masters (redis:// each), not on a Redis Cluster"
                    .into(),
            ));
        }
        let settings = config.connection;
        let connecting = urls.iter().map(|url| async move {
            let connection = RedisConnection::connect(url, settings).await?;
            string_lock::load_scripts(&mut connection.commands()).await?;
            Ok::<_, LockError>(connection)
        });
        let connections = join_all(connecting)
            .await
            .into_iter()
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Redlock {
            core: Arc::new(Core {
                nodes: Arc::new(Nodes { connections }),
                config,
                events,
                holds: Holds::default(),
                closed: AtomicBool::new(false),
            }),
        })
    }

    /// How many nodes this client uses.
    pub fn node_count(&self) -> usize {
        self.core.nodes.connections.len()
    }

    /// How many nodes make a majority.
    pub fn quorum(&self) -> usize {
        self.core.nodes.quorum()
    }

    /// The settings this client runs with.
    pub fn config(&self) -> &RedlockConfig {
        &self.core.config
    }

    /// Locks this client currently holds.
    pub fn held_locks(&self) -> usize {
        self.core.holds.len()
    }

    /// Registers a granted hold (deadline `sent_at + ttl − drift`), starts its extensions for a
    /// watchdog lease, reports `Acquired` and builds the lease. No await: a cancelled acquire either
    /// never gets here or gets a whole lease.
    fn grant(&self, request: Request, lock: StringLock, sent_at: Instant) -> Lease {
        let core = &self.core;
        let ttl = request.ttl;
        let valid_for = ttl.saturating_sub(core.config.drift(ttl));
        let renewal = |state: Arc<LeaseState>| -> Box<dyn StopRenewal> {
            let plan = RenewalPlan {
                ttl: valid_for,
                period: ttl.mul_f64(core.config.renewal.ratio),
            };
            let (nodes, lock, events) = (core.nodes.clone(), lock.clone(), core.events.clone());
            let (ttl_ms, timeout) = (request.ttl_ms, core.config.node_timeout_for(ttl));
            let task = tokio::spawn(renew_until_lost(state, plan, sent_at, events, move || {
                let (nodes, lock) = (nodes.clone(), lock.clone());
                async move { nodes.extend(&lock, ttl_ms, timeout).await }
            }));
            Box::new(task.abort_handle())
        };
        let start = match request.mode {
            LeaseMode::Watchdog => {
                Some(&renewal as &dyn Fn(Arc<LeaseState>) -> Box<dyn StopRenewal>)
            }
            LeaseMode::Fixed(_) => None,
        };
        let name = &request.keys.name;
        // Before the renewal starts, so `Acquired` comes before every renewal event.
        core.events.emit(|| LockEvent::Acquired {
            key: name.clone(),
            token: FencingToken(0),
            mode: request.mode,
            sent_at,
            at: Instant::now(),
        });
        let (state, ticket) =
            core.holds
                .enter(name, &lock.value, sent_at + valid_for, &core.events, start);
        let token = FencingToken(0);
        let hold = RedlockHold {
            core: core.clone(),
            ticket,
            lock,
            state: state.clone(),
            node_timeout: core.config.node_timeout_for(ttl),
        };
        Lease::new(
            request.owner,
            token,
            request.mode,
            sent_at,
            state,
            Box::new(hold),
        )
    }
}

#[async_trait]
impl Locker for Redlock {
    fn id(&self) -> &str {
        ID
    }

    fn capabilities(&self) -> Capabilities {
        Self::CAPABILITIES
    }

    fn requests_sent(&self) -> Option<u64> {
        Some(
            self.core
                .nodes
                .connections
                .iter()
                .map(RedisConnection::requests_sent)
                .sum(),
        )
    }

    async fn acquire(&self, key: &str, opts: &AcquireOptions) -> Result<Lease, LockError> {
        if self.core.closed.load(Ordering::Acquire) {
            return Err(acquire::closed());
        }
        let core = &self.core;
        let config = &core.config;
        let request = Request::new(&config.key_prefix, key, opts, config.renewal.ttl)?;
        let lock = StringLock::new(
            request.keys.clone(),
            &config.client_id,
            &request.owner,
            None,
        );
        let node_timeout = config.node_timeout_for(request.ttl);
        let drift = config.drift(request.ttl);
        let q = core.nodes.quorum();
        loop {
            let sent_at = Instant::now();
            let votes = core.nodes.set_nx(&lock, request.ttl_ms, node_timeout).await;
            let granted = votes.iter().filter(|v| matches!(v, Ok(true))).count();
            if granted >= q && validity(request.ttl, sent_at.elapsed(), drift).is_some() {
                return Ok(self.grant(request, lock, sent_at));
            }
            // Undo on every node, also those that failed to answer (their SET may have landed);
            // skipped only when every node said no, so nothing of ours can be anywhere.
            if !votes.iter().all(|v| matches!(v, Ok(false))) {
                core.nodes.unlock(&lock, node_timeout).await;
            }
            let now = Instant::now();
            let give_up = match request.keep_waiting(now) {
                Ok(give_up) => give_up,
                Err(timeout) => {
                    let answered = votes.iter().filter(|v| v.is_ok()).count();
                    if answered >= q {
                        return Err(timeout);
                    }
                    let errors: Vec<String> = votes
                        .into_iter()
                        .filter_map(|v| v.err().map(|e| e.to_string()))
                        .collect();
                    return Err(LockError::backend(
                        BACKEND,
                        format!(
                            "only {answered} of {} redlock nodes answered (quorum {q}): {}",
                            answered + errors.len(),
                            errors.join("; ")
                        ),
                    ));
                }
            };
            tokio::time::sleep(config.retry_pause().min(give_up - now)).await;
        }
    }

    async fn close(&self) {
        self.core.closed.store(true, Ordering::Release);
    }
}

/// A redlock lease's release path.
#[derive(Debug)]
struct RedlockHold {
    core: Arc<Core>,
    ticket: HoldTicket,
    lock: StringLock,
    state: Arc<LeaseState>,
    /// The per-node timeout of the lease's TTL.
    node_timeout: Duration,
}

#[async_trait]
impl LeaseHandle for RedlockHold {
    async fn release(self: Box<Self>) -> Result<(), LockError> {
        let still_valid = Instant::now() < self.state.deadline() && !self.state.has_ended();
        // Extensions stop here, before the nodes are asked, whatever they will answer.
        self.core.holds.leave(&self.ticket);
        let votes = self.core.nodes.unlock(&self.lock, self.node_timeout).await;
        let deleted = votes.iter().filter(|v| matches!(v, Ok(true))).count();
        let failed = votes.iter().filter(|v| v.is_err()).count();
        let q = self.core.nodes.quorum();
        let name = &self.lock.keys.name;
        if deleted >= q && still_valid {
            self.core.events.emit(|| LockEvent::Released {
                key: name.clone(),
                at: Instant::now(),
            });
            return Ok(());
        }
        if deleted + failed >= q && still_valid {
            let errors: Vec<String> = votes
                .into_iter()
                .filter_map(|v| v.err().map(|e| e.to_string()))
                .collect();
            return Err(LockError::backend(
                BACKEND,
                format!(
                    "release confirmed on {deleted} nodes, {failed} did not answer (quorum {q}): {}",
                    errors.join("; ")
                ),
            ));
        }
        Err(LockError::NotHeld {
            key: name.to_string(),
        })
    }

    fn abandon(self: Box<Self>) {
        self.core.holds.leave(&self.ticket);
        acquire::release_in_background(async move {
            self.core.nodes.unlock(&self.lock, self.node_timeout).await;
            Ok(())
        });
    }
}
