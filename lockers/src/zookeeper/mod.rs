//! `zookeeper`: the lock recipe of Curator's `InterProcessMutex` on the [`zookeeper-client`](zookeeper_client)
//! crate, with the ZooKeeper session as the lease.
//!
//! # Lock
//! A contender creates an ephemeral-sequential node `/<prefix>/<lock>/<tag>-lock-<seq>` (creating missing
//! parents as container nodes, retrying if a parent vanishes in between) and lists the parent's children,
//! both requests sent back to back: one round trip. The lowest sequence holds the lock. A waiter watches
//! only the node just below its own (no herd) and re-lists when it goes. The `<tag>` is random per
//! acquire, so a node whose create answer was lost can still be found and deleted.
//!
//! Fencing token: the node's czxid (the zxid of its creation; a later holder's node was created later).
//!
//! Wire compatibility: interoperates with Curator's `InterProcessMutex` (5.9.0) on one lock: lock `k`
//! is Curator's mutex on `/<prefix>/k` (the JVM adapter's `/lockbench/<key>` with prefix `lockbench`;
//! the default prefix `lockbench/zookeeper` puts the lock elsewhere). Curator's nodes are
//! `_c_<uuid>-lock-<seq>` (its protected mode), ours `<hex>-lock-<seq>`; both order the parent's
//! children by the digits after `lock-` (Curator's `StandardLockInternalsDriver.fixForSorting`), which
//! one counter per parent hands out, so the two see one queue, exclude each other, and a release wakes
//! the other's waiter (each watches the node just below its own). Tested with Curator's adapter, both
//! ways (`lockers/tests/adapter_zk_etcd.rs`, `zookeeper_and_curator_share_one_lock`). Re-entry is per
//! client on both sides: a Curator thread and a model owner never re-enter each other's hold.
//!
//! # Lease: the session
//! Ephemeral nodes live as long as the session: the session timeout plays the TTL of every lock the
//! client holds ([`LeaseMode::Watchdog`]; the negotiated timeout counts). [`LeaseMode::Fixed`] is not
//! supported (`Unsupported`): a session cannot end one lock on time (ZooKeeper's TTL nodes are reaped by
//! a periodic sweep, not on time). What stands in for renewal is described in `session`: a probe
//! request per client every negotiated timeout × the ratio of [`ZkConfig::renewal`] while it holds locks, each
//! answer extending every held lock's deadline and giving one `Renewed` event per lock.
//!
//! # Loss
//! Session expiry loses every lock of the client ([`LossReason::SessionExpired`]); a new session is
//! opened on the next acquire, and new acquires create new nodes (the old ones die with the old
//! session). A disconnect loses them when `lose_on_disconnect` is set, and always once it lasts past the
//! deadline. A lock node deleted behind the holder's back resolves that lock's `lost()` with
//! [`LossReason::TakenOver`]: each held node has an exists-watch (set right after the lock is taken, not
//! awaited by the acquire).
//!
//! # Re-entrancy
//! Curator-style, by owner within a client: an owner that holds a lock through this client acquires it
//! again without a server call (same node, same token, same lease state); each acquire needs its own
//! release and the last one deletes the node.
//!
//! # Waiting, timeouts and cancellation
//! A wait that times out (or a try-once that finds a predecessor) deletes our node before returning
//! `Timeout`. Until the lock is held, our node is guarded: dropped by a cancelled or failed acquire, it is
//! deleted in the background (the session, which keeps pinging, would otherwise keep it forever).

mod config;
mod error;
mod queue;
mod session;

use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use zookeeper_client::{Client, EventType};

pub use config::ZkConfig;

use self::config::path_segment;
use self::queue::{CLEAN_UP_FOR, Position, delete_in_background, delete_node, enqueue, wait_gone};
use self::session::{HeldNode, ZkSession};
use crate::error::LockError;
use crate::event::{Events, LockEvent};
use crate::lease::{
    AcquireOptions, FencingToken, Lease, LeaseHandle, LeaseMode, LeaseState, LossReason, OwnerId,
};
use crate::locker::{Capabilities, Locker};
use crate::renewal::{SessionHold, in_background};

/// The strategy id.
pub const ID: &str = "zookeeper";

/// Pause before retrying a failed step while waiting.
const RETRY_PAUSE: Duration = Duration::from_millis(100);

/// One client (one session at a time) of a ZooKeeper ensemble taking locks with the
/// `InterProcessMutex` recipe (see the [module docs](self)).
pub struct ZooKeeperLock {
    connect_string: String,
    config: ZkConfig,
    events: Events,
    session: tokio::sync::Mutex<Option<Arc<ZkSession>>>,
}

impl std::fmt::Debug for ZooKeeperLock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The connect string may carry a digest password.
        f.debug_struct("ZooKeeperLock")
            .field(
                "connect_string",
                &crate::address::redact(&self.connect_string),
            )
            .field("config", &self.config)
            .field("events", &self.events)
            .finish_non_exhaustive()
    }
}

impl ZooKeeperLock {
    /// What every client of this strategy can do (known without connecting).
    pub const CAPABILITIES: Capabilities = Capabilities {
        reentrant: true,
        fencing: true,
        auto_renew: true,
        fixed_lease: false,
        wait_notify: true,
        lost_signal: true,
        hold_identity: true,
        // The launcher's servers allow sessions down to 200 ms (2 × tickTime); the server decides.
        min_ttl: Duration::from_millis(200),
        ttl_granularity: Duration::from_millis(1),
    };

    /// Opens a session to `connect_string` (`host:port[,host:port…]`, or `user:pass@host:port…` for
    /// ZooKeeper's digest authentication; the lock nodes are then created with the creator-only ACL, so
    /// every client of a run must use the same user). An unreachable ensemble is a
    /// `Backend` error after at most [`ZkConfig::connect_timeout`]; bad settings are a `Config` error.
    pub async fn connect(
        connect_string: &str,
        config: ZkConfig,
        events: Events,
    ) -> Result<Self, LockError> {
        config.validate()?;
        let session = ZkSession::connect(connect_string, &config, &events).await?;
        Ok(ZooKeeperLock {
            connect_string: connect_string.to_owned(),
            config,
            events,
            session: tokio::sync::Mutex::new(Some(session)),
        })
    }

    /// The settings.
    pub fn config(&self) -> &ZkConfig {
        &self.config
    }

    /// The parent node lock `key` queues under: `/<prefix>/<key>`, with `key` as one znode name (`%`,
    /// `/` and characters ZooKeeper refuses escaped as `%XX`).
    pub fn lock_path(&self, key: &str) -> String {
        format!("/{}/{}", self.config.prefix, path_segment(key))
    }

    /// The current session's client (for baselines measured over the same session), opening a new
    /// session if the last one ended.
    pub async fn zk_client(&self) -> Result<Client, LockError> {
        Ok(self.session().await?.client().clone())
    }

    /// The current session's negotiated timeout.
    pub async fn session_timeout(&self) -> Result<Duration, LockError> {
        Ok(self.session().await?.timeout())
    }

    /// The live session, opening a new one if the last one ended or was lost.
    async fn session(&self) -> Result<Arc<ZkSession>, LockError> {
        let mut slot = self.session.lock().await;
        if let Some(session) = slot.as_ref().filter(|s| s.is_live()) {
            return Ok(session.clone());
        }
        if let Some(old) = slot.take() {
            old.holds().lose(LossReason::SessionExpired);
        }
        let session = ZkSession::connect(&self.connect_string, &self.config, &self.events).await?;
        *slot = Some(session.clone());
        Ok(session)
    }

    /// A lease for one more hold of a lock this owner already holds through `session`.
    fn reenter(&self, session: &Arc<ZkSession>, key: &Arc<str>, owner: OwnerId) -> Option<Lease> {
        let owner_name: Arc<str> = owner.as_str().into();
        let hold = session.holds().reenter(key, &owner_name)?;
        let now = Instant::now();
        let token = hold.payload.token;
        self.events.emit(|| LockEvent::Acquired {
            key: key.clone(),
            token,
            mode: LeaseMode::Watchdog,
            sent_at: now,
            at: now,
        });
        let state = hold.state.clone();
        let handle = ZkHold {
            session: session.clone(),
            hold,
            key: key.clone(),
            owner: owner_name,
            events: self.events.clone(),
            request_timeout: self.config.request_timeout,
        };
        Some(Lease::new(
            owner,
            token,
            LeaseMode::Watchdog,
            now,
            state,
            Box::new(handle),
        ))
    }

    /// Turns our node at the head of the queue into a [`Lease`]; `None` if the session was lost just now.
    /// No await here: a cancelled acquire cannot leave a registered hold without a lease.
    fn hold(
        &self,
        session: &Arc<ZkSession>,
        key: Arc<str>,
        owner: OwnerId,
        node: queue::LockNode,
        sent_at: Instant,
    ) -> Option<Lease> {
        let owner_name: Arc<str> = owner.as_str().into();
        let token = FencingToken(node.czxid.unsigned_abs());
        let payload = HeldNode {
            path: node.path().to_owned(),
            token,
            watch: std::sync::Mutex::new(None),
        };
        let acquired = || {
            self.events.emit(|| LockEvent::Acquired {
                key: key.clone(),
                token,
                mode: LeaseMode::Watchdog,
                sent_at,
                at: Instant::now(),
            })
        };
        let hold = session
            .holds()
            .insert(&key, &owner_name, &self.events, payload, acquired)
            .ok()?;
        node.keep();
        let watcher = tokio::spawn(watch_own_node(
            session.client().clone(),
            hold.payload.path.clone(),
            hold.state.clone(),
        ));
        *hold.payload.watch.lock().unwrap_or_else(|e| e.into_inner()) =
            Some(watcher.abort_handle());
        let state = hold.state.clone();
        let handle = ZkHold {
            session: session.clone(),
            hold,
            key,
            owner: owner_name,
            events: self.events.clone(),
            request_timeout: self.config.request_timeout,
        };
        Some(Lease::new(
            owner,
            token,
            LeaseMode::Watchdog,
            sent_at,
            state,
            Box::new(handle),
        ))
    }
}

/// Watches our own lock node while we hold it: a delete behind our back loses the lock (`TakenOver`).
/// Session events are left to the session's state watcher.
async fn watch_own_node(client: Client, path: String, state: Arc<LeaseState>) {
    while !state.has_ended() {
        match client.check_and_watch_stat(&path).await {
            Ok((None, _)) => {
                state.mark_lost(LossReason::TakenOver);
                return;
            }
            Ok((Some(_), watcher)) => match watcher.changed().await.event_type {
                EventType::NodeDeleted => {
                    state.mark_lost(LossReason::TakenOver);
                    return;
                }
                EventType::Session => return,
                // Data changed: watch again.
                _ => {}
            },
            Err(zookeeper_client::Error::ConnectionLoss) => {
                tokio::time::sleep(RETRY_PAUSE).await;
            }
            Err(_) => return,
        }
    }
}

#[async_trait]
impl Locker for ZooKeeperLock {
    fn id(&self) -> &str {
        ID
    }

    fn capabilities(&self) -> Capabilities {
        Self::CAPABILITIES
    }

    async fn acquire(&self, key: &str, opts: &AcquireOptions) -> Result<Lease, LockError> {
        if let LeaseMode::Fixed(_) = opts.lease {
            return Err(LockError::Unsupported {
                strategy: ID,
                what: "fixed leases (a lock lives as long as the client's session)".into(),
            });
        }
        let started = Instant::now();
        let give_up = opts.wait.map(|w| started + w);
        let owner = opts.owner.clone().unwrap_or_else(OwnerId::unique);
        let key: Arc<str> = key.into();
        let parent = self.lock_path(&key);
        let timeout = self.config.request_timeout;
        let timed_out = || LockError::Timeout {
            key: key.to_string(),
            waited: started.elapsed(),
        };
        loop {
            let entry = async {
                let session = self.session().await?;
                if let Some(lease) = self.reenter(&session, &key, owner.clone()) {
                    return Ok(Err(lease));
                }
                let entered = enqueue(session.client(), session.acls(), &parent, timeout).await?;
                session.confirmed(entered.sent_at);
                Ok::<_, LockError>(Ok((session, entered)))
            };
            let (session, entered) = match entry.await {
                Ok(Ok(entry)) => entry,
                Ok(Err(reentered)) => return Ok(reentered),
                Err(LockError::Backend { .. })
                    if give_up.is_some_and(|g| Instant::now() + RETRY_PAUSE < g) =>
                {
                    tokio::time::sleep(RETRY_PAUSE).await;
                    continue;
                }
                Err(e) => return Err(e),
            };
            let (node, mut position, mut sent_at) =
                (entered.node, entered.position, entered.sent_at);
            let mut last_error = None;
            loop {
                let predecessor = match &position {
                    Position::Head => break,
                    Position::Gone => break,
                    Position::Behind(predecessor) => predecessor.clone(),
                };
                let Some(give_up) = give_up.filter(|g| Instant::now() < *g) else {
                    if let Some(error) = last_error {
                        return Err(error);
                    }
                    // Errors here leave the node to its drop guard (background delete).
                    let _ = node.remove(timeout).await;
                    return Err(timed_out());
                };
                let step = async {
                    wait_gone(session.client(), &predecessor).await?;
                    node.recheck(timeout).await
                };
                tokio::select! {
                    outcome = step => match outcome {
                        Ok((now, at)) => {
                            session.confirmed(at);
                            (position, sent_at, last_error) = (now, at, None);
                        }
                        Err(error) => {
                            last_error = Some(error);
                            let pause = (Instant::now() + RETRY_PAUSE).min(give_up);
                            tokio::time::sleep_until(pause.into()).await;
                        }
                    },
                    _ = tokio::time::sleep_until(give_up.into()) => {}
                    _ = session.holds().session().wait_lost() => position = Position::Gone,
                }
            }
            if position == Position::Head
                && let Some(lease) = self.hold(&session, key.clone(), owner.clone(), node, sent_at)
            {
                return Ok(lease);
            }
            // Our node is gone (the session ended or it was deleted): queue again while time remains.
            if give_up.is_none_or(|g| Instant::now() >= g) {
                return Err(timed_out());
            }
        }
    }

    async fn close(&self) {
        // Held leases keep the session (and their nodes) until they are released or dropped.
        self.session.lock().await.take();
    }
}

/// A ZooKeeper lease's release path: one hold less; the last deletes the node.
#[derive(Debug)]
struct ZkHold {
    session: Arc<ZkSession>,
    hold: Arc<SessionHold<HeldNode>>,
    key: Arc<str>,
    owner: Arc<str>,
    events: Events,
    request_timeout: Duration,
}

impl ZkHold {
    /// One hold less; true if it was the last (then the node must go).
    fn leave(&self) -> bool {
        let last = self
            .session
            .holds()
            .leave(&self.key, &self.owner, &self.hold);
        if last {
            self.hold.payload.stop_watch();
        }
        last
    }

    fn released(&self) {
        self.events.emit(|| LockEvent::Released {
            key: self.key.clone(),
            at: Instant::now(),
        });
    }
}

#[async_trait]
impl LeaseHandle for ZkHold {
    async fn release(self: Box<Self>) -> Result<(), LockError> {
        let lost_before = self.hold.state.loss();
        if !self.leave() {
            return match lost_before {
                None => Ok(()),
                Some(_) => Err(LockError::NotHeld {
                    key: self.key.to_string(),
                }),
            };
        }
        let client = self.session.client();
        let path = &self.hold.payload.path;
        match delete_node(client, path, self.request_timeout).await {
            Ok(true) => {
                self.released();
                Ok(())
            }
            Ok(false) => Err(LockError::NotHeld {
                key: self.key.to_string(),
            }),
            Err(error) => {
                // The node must not outlive the hold: keep trying in the background.
                delete_in_background(client, path.clone());
                Err(error)
            }
        }
    }

    fn abandon(self: Box<Self>) {
        if !self.leave() {
            return;
        }
        in_background(async move {
            let client = self.session.client();
            if let Ok(true) = delete_node(client, &self.hold.payload.path, CLEAN_UP_FOR).await {
                self.released();
            }
        });
    }
}
