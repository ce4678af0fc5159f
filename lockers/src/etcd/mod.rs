//! `etcd-lease`: the lock recipe of etcd's Go `concurrency` package (`Session` + `Mutex`), on the
//! [`etcd-client`](etcd_client) crate.
//!
//! # Lock
//! A contender puts its queue key `<prefix>/<lock>/<name>` with its lease, in a txn that puts only if the
//! key does not exist yet (else reads it) and reads the head of the queue (the key with the smallest create
//! revision) — one round trip, as Go's `Mutex.tryAcquire`. An existing key is adopted only under our own
//! lease (Go's name is its lease, so it adopts only those): a key under another lease is a leftover of an
//! earlier hold whose clean-up gave up, whose lease could end under a new holder, so it is deleted and ours
//! put in its place (a new create revision, so a new fencing token). The head holds the lock. A waiter reads the key
//! with the greatest create revision below its own (`max_create_revision`), watches that key's delete
//! from the revision it read at (so a delete in between is not missed), and re-checks, as Go's
//! `waitDeletes`; the same read-only txn also checks that its own key still exists. Each waiter watches
//! only its predecessor: no herd. The server-side `Lock` RPC is not used.
//!
//! Key names differ from Go's `<prefix>/<lease hex>`: they are `<prefix>/<lock>/<client id hex>-<slot>`
//! (see `names`). With one lease per client, two owners of one client would share Go's name and both
//! believe they hold the lock; and a fresh name per acquire would leave a tombstone per acquire that
//! slows every later acquire on the lock (measured), so slots are reused once their key is gone.
//!
//! Fencing token: the key's create revision (strictly increasing per lock: a later holder's key was
//! created later).
//!
//! Wire compatibility: interoperates with etcd's Go `concurrency.Mutex` (v3.5, and so `etcdctl lock
//! <name>`, which runs it) on one lock: lock `k` is the Mutex named `<prefix>/k` (`k` with `%` and `/`
//! escaped, see [`EtcdLease::queue_prefix`]), since the Mutex queues under `<name>/` too. Only the key
//! names differ (`<lease hex>` there), and neither reads names: each takes the head of the queue by
//! create revision and waits for the deletes below its own, so the two exclude each other and a release
//! wakes the other's waiter. Tested with the Go Mutex's adapter, both ways (`lockers/tests/adapter_go.rs`,
//! `etcd_lease_and_go_mutex_share_one_lock`: hand-offs of about 6 ms); `etcdctl lock` itself is read
//! from its source (`etcdctl/ctlv3/command/lock_command.go`: `concurrency.NewMutex(session, name)`), not
//! run.
//!
//! # Leases: one per client for watchdog locks, one per lock for fixed leases
//! - [`LeaseMode::Watchdog`]: every watchdog lock of a client is carried by one lease, the client's
//!   *session* (Go's `Session` model), granted on first use with the TTL of [`EtcdConfig::renewal`] and
//!   kept alive over one keep-alive stream every TTL × its ratio. Why: an acquire
//!   then costs one txn and a release one txn — no lease grant, no revoke, no keep-alive stream per lock
//!   — and renewal costs one keep-alive per client per period however many locks it holds. The price:
//!   the locks of a client share a fate. If the session lease is revoked or expires, every watchdog lock
//!   of the client is lost at once (each `lost()` resolves); a new session is granted on the next
//!   acquire. Releasing one lock stays independent (it deletes only its key).
//! - [`LeaseMode::Fixed`]: each lock gets its own lease of exactly that TTL, never kept alive once the
//!   lock is held (it must expire on time, unlike the session). A waiting fixed-lease acquire keeps its
//!   lease alive while it waits (from inside the acquire future, so a dropped acquire stops it) and sends
//!   one last keep-alive when it gets the lock, so the lease runs its full TTL from then. Release deletes
//!   the key and revokes the lease.
//!
//! TTLs are whole seconds ≥ 1: a sub-second or fractional TTL (watchdog or fixed) is a `Config` error,
//! never silently rounded. If the server raises a fixed lease's TTL to its minimum, the acquire fails with
//! `Unsupported` (the lock would outlive what was asked).
//!
//! # Renewal events and loss
//! Each keep-alive answer extends the session and every lock under it to `sent_at + granted TTL`, with one
//! `Renewed` event per lock (round trip = `done_at - sent_at`, `granted_ttl` = the TTL in the answer).
//! `remaining_ttl_before` is `None`: a keep-alive answer carries only the new TTL, and asking
//! `LeaseTimeToLive` would double the renewal cost. A keep-alive answered with TTL ≤ 0 (or a reopened
//! stream told "lease not found") loses every lock of the session with [`LossReason::LeaseRevoked`]. A
//! failed, silent or ended stream gives `RenewFailed` events and is reopened (possibly on another member)
//! until the session's deadline; past it the locks are lost with [`LossReason::ChannelClosed`] (or
//! `Expired`, whichever is noticed first). A fixed lease is lost at its deadline. Deleting a lock's key
//! behind the holder's back (rather than revoking its lease) is not noticed until release (`NotHeld`),
//! as with Go's `Mutex`.
//!
//! # Re-entrancy
//! None, as etcd's `Mutex`: a second acquire by the same owner queues behind its own hold (a try-once
//! gives `Timeout`). Capabilities say `reentrant: false`.
//!
//! # Waiting, timeouts and cancellation
//! A wait that times out deletes our key (and revokes a fixed lease) before returning `Timeout`; a try-once
//! that finds a predecessor does the same. An acquire dropped while its enqueue txn is in flight hands the
//! request to a background task that finishes it and deletes the key it created (a delete sent at once
//! could overtake the put); after the answer, the key is guarded by a drop guard that deletes it in the
//! background. So a cancelled acquire never leaves a key
//! that a kept-alive session would keep forever. Transient errors while waiting are retried until the
//! wait ends (the last error is returned if nothing succeeded since).

mod access;
mod config;
mod error;
mod names;
mod queue;
mod session;

use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use etcd_client::{Client, KvClient};

pub use config::EtcdConfig;

use self::config::lease_seconds;
use self::error::{Retry, etcd_error};
use self::names::{Slot, Slots};
use self::queue::{Enqueued, OwnLease, Predecessor, Queue, delete_in_background, delete_own_key};
use self::session::EtcdSession;
use crate::error::LockError;
use crate::event::{Events, LockEvent};
use crate::lease::{
    AcquireOptions, FencingToken, Lease, LeaseHandle, LeaseMode, LeaseState, LossReason, OwnerId,
};
use crate::locker::{Capabilities, Locker};
use crate::renewal::{SessionHold, in_background};

/// The strategy id.
pub const ID: &str = "etcd-lease";

/// How long an abandoned lease's background release keeps trying.
const CLEAN_UP_FOR: Duration = Duration::from_secs(30);

/// Pause before retrying a failed step while waiting.
const RETRY_PAUSE: Duration = Duration::from_millis(100);

/// One client of an etcd cluster taking locks with the `concurrency.Mutex` recipe (see the [module
/// docs](self)).
pub struct EtcdLease {
    client: Client,
    queue: Queue,
    config: EtcdConfig,
    events: Events,
    session: tokio::sync::Mutex<Option<Arc<EtcdSession>>>,
    slots: Arc<Slots>,
}

impl std::fmt::Debug for EtcdLease {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EtcdLease")
            .field("config", &self.config)
            .field("events", &self.events)
            .finish_non_exhaustive()
    }
}

impl EtcdLease {
    /// What every client of this strategy can do (known without connecting).
    pub const CAPABILITIES: Capabilities = Capabilities {
        reentrant: false,
        fencing: true,
        auto_renew: true,
        fixed_lease: true,
        wait_notify: true,
        lost_signal: true,
        hold_identity: true,
        min_ttl: Duration::from_secs(1),
        ttl_granularity: Duration::from_secs(1),
    };

    /// Connects to the etcd members at `endpoints` (`http://host:port`, or
    /// `https://user:pass@host:port?ca=ca.pem`, see [`crate::address`]) and checks that one answers within
    /// [`EtcdConfig::connect_timeout`]; an unreachable cluster is a `Backend` error after at most that
    /// long. Bad settings or endpoints are a `Config` error.
    pub async fn connect(
        endpoints: &[String],
        config: EtcdConfig,
        events: Events,
    ) -> Result<Self, LockError> {
        config.validate()?;
        if endpoints.is_empty() {
            return Err(LockError::Config("no etcd endpoints given".into()));
        }
        let timeout = config.connect_timeout;
        let (bare, options) = access::connect_options(endpoints, timeout)?;
        let endpoints = &bare;
        let client = match Client::connect(endpoints, Some(options)).await {
            Ok(client) => client,
            Err(etcd_client::Error::InvalidUri(e)) => {
                return Err(LockError::Config(format!(
                    "etcd endpoints {endpoints:?}: {e}"
                )));
            }
            Err(e) => return Err(etcd_error("connect", e)),
        };
        let maintenance = client.maintenance_client();
        let retry = Retry {
            overall: timeout,
            attempt: config.retry().attempt.min(timeout),
        };
        retry
            .run("connect", || {
                let mut maintenance = maintenance.clone();
                async move { maintenance.status().await }
            })
            .await
            .map_err(|e| match e {
                LockError::Backend { source, .. } => LockError::backend(
                    "etcd",
                    format!("no member of {endpoints:?} answered within {timeout:?}: {source}"),
                ),
                other => other,
            })?;
        let queue = Queue {
            kv: client.kv_client(),
            watch: client.watch_client(),
            leases: client.lease_client(),
            retry: config.retry(),
        };
        Ok(EtcdLease {
            client,
            queue,
            config,
            events,
            session: tokio::sync::Mutex::default(),
            slots: Slots::new(),
        })
    }

    /// The etcd client this strategy uses (for baselines measured over the same connections).
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// The settings.
    pub fn config(&self) -> &EtcdConfig {
        &self.config
    }

    /// The key prefix lock `key` queues under: `<prefix>/<key>/`, with `%` and `/` in `key` escaped as
    /// `%25` and `%2F` so that no lock's queue contains another's.
    pub fn queue_prefix(&self, key: &str) -> String {
        let escaped = key.replace('%', "%25").replace('/', "%2F");
        format!("{}/{escaped}/", self.config.prefix)
    }

    /// The live session, granting a new one if there is none or the last one was lost.
    async fn session(&self) -> Result<Arc<EtcdSession>, LockError> {
        let mut slot = self.session.lock().await;
        if let Some(session) = slot.as_ref().filter(|s| s.is_live()) {
            return Ok(session.clone());
        }
        if let Some(old) = slot.take() {
            old.holds().lose(LossReason::Expired);
            let (mut leases, lease) = (self.queue.leases.clone(), old.lease());
            in_background(async move {
                let _ = leases.revoke(lease).await;
            });
        }
        let ttl = lease_seconds("renewal.ttl", self.config.renewal.ttl)?;
        let session = EtcdSession::grant(
            &self.queue.leases,
            ttl,
            self.config.keep_alive_period(),
            self.queue.retry,
            &self.events,
        )
        .await?;
        *slot = Some(session.clone());
        Ok(session)
    }

    /// Grants a lease of exactly `seconds` for one lock; returns it and when the grant was sent.
    async fn own_lease(&self, seconds: i64) -> Result<(OwnLease, Instant), LockError> {
        let sent_at = Instant::now();
        let granted = self
            .queue
            .retry
            .run("lease grant", || {
                let mut leases = self.queue.leases.clone();
                async move { leases.grant(seconds, None).await }
            })
            .await?;
        let lease = OwnLease::new(granted.id(), &self.queue.leases);
        if granted.ttl() != seconds {
            return Err(LockError::Unsupported {
                strategy: ID,
                what: format!(
                    "a fixed lease of {seconds} s: the server granted {} s (its minimum TTL)",
                    granted.ttl()
                ),
            });
        }
        Ok((lease, sent_at))
    }

    /// Waits for our key to reach the head of the queue, keeping a fixed lease alive meanwhile.
    async fn wait_turn(
        &self,
        queue: &str,
        entered: &Enqueued,
        tenure: &Tenure,
        give_up: Option<Instant>,
    ) -> Result<Turn, LockError> {
        if entered.head == entered.key.revision {
            return Ok(Turn::Holder);
        }
        let Some(give_up) = give_up else {
            return Ok(Turn::Busy);
        };
        let mut last_error = None;
        let mut next_refresh = tenure.refresh_due(entered.sent_at);
        loop {
            if Instant::now() >= give_up {
                return last_error.map_or(Ok(Turn::Busy), Err);
            }
            let step = async {
                match self.queue.predecessor(queue, &entered.key).await? {
                    Predecessor::None => Ok(Some(Turn::Holder)),
                    Predecessor::OursGone => Ok(Some(Turn::Requeue)),
                    Predecessor::Waiting { name, revision } => {
                        self.queue.wait_deleted(name, revision).await?;
                        Ok(None)
                    }
                }
            };
            let outcome = tokio::select! {
                outcome = step => outcome,
                _ = tokio::time::sleep_until(give_up.into()) => continue,
                _ = tenure.session_lost() => return Ok(Turn::Requeue),
                _ = sleep_until_opt(next_refresh) => {
                    if let Tenure::Own { lease, ttl, .. } = tenure {
                        let refreshed = self.queue.refresh(lease.id).await;
                        next_refresh = refreshed.ok().map(|at| at + *ttl / 3);
                    }
                    continue;
                }
            };
            match outcome {
                Ok(Some(turn)) => return Ok(turn),
                Ok(None) => last_error = None,
                Err(error) => {
                    last_error = Some(error);
                    let pause = (Instant::now() + RETRY_PAUSE).min(give_up);
                    tokio::time::sleep_until(pause.into()).await;
                }
            }
        }
    }

    /// Turns our key at the head of the queue into a [`Lease`]; `None` if the session was lost just now.
    /// No await here: a cancelled acquire cannot leave a registered hold without a lease.
    fn hold(
        &self,
        key: Arc<str>,
        owner: OwnerId,
        mode: LeaseMode,
        entered: Enqueued,
        tenure: Tenure,
    ) -> Option<Lease> {
        let owner_name: Arc<str> = owner.as_str().into();
        let token = FencingToken(entered.key.revision.unsigned_abs());
        let acquired = || {
            self.events.emit(|| LockEvent::Acquired {
                key: key.clone(),
                token,
                mode,
                sent_at: entered.sent_at,
                at: Instant::now(),
            })
        };
        let (state, base, held) = match tenure {
            Tenure::Session(session) => {
                // A lost session refuses the hold; dropping `entered` deletes its key in the background.
                let hold = session
                    .holds()
                    .insert(&key, &owner_name, &self.events, (), acquired)
                    .ok()?;
                (
                    hold.state.clone(),
                    entered.sent_at,
                    HeldBy::Session { session, hold },
                )
            }
            Tenure::Own { lease, ttl, base } => {
                acquired();
                let state = LeaseState::new(key.clone(), base + ttl, self.events.clone());
                (
                    state.clone(),
                    base,
                    HeldBy::Own {
                        _lease: lease,
                        state,
                    },
                )
            }
        };
        let (name, revision, slot) = entered.key.keep();
        let handle = EtcdHold {
            kv: self.queue.kv.clone(),
            name,
            revision,
            slot,
            key,
            owner: owner_name,
            held,
            events: self.events.clone(),
            retry: self.queue.retry,
        };
        Some(Lease::new(
            owner,
            token,
            mode,
            base,
            state,
            Box::new(handle),
        ))
    }
}

/// `sleep_until(at)`, or never.
async fn sleep_until_opt(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at.into()).await,
        None => std::future::pending().await,
    }
}

/// The lease an acquire queues with.
enum Tenure {
    /// The client's session lease (watchdog locks).
    Session(Arc<EtcdSession>),
    /// A lease of its own (fixed locks), whose TTL counts from `base`.
    Own {
        lease: OwnLease,
        ttl: Duration,
        base: Instant,
    },
}

impl Tenure {
    fn lease_id(&self) -> i64 {
        match self {
            Tenure::Session(session) => session.lease(),
            Tenure::Own { lease, .. } => lease.id,
        }
    }

    /// When a waiting fixed-lease acquire must next refresh its lease.
    fn refresh_due(&self, from: Instant) -> Option<Instant> {
        match self {
            Tenure::Session(_) => None,
            Tenure::Own { ttl, base, .. } => Some((*base).min(from) + *ttl / 3),
        }
    }

    /// Resolves if the session carrying the queued key is lost; never for a lease of our own.
    async fn session_lost(&self) {
        match self {
            Tenure::Session(session) => {
                session.holds().session().wait_lost().await;
            }
            Tenure::Own { .. } => std::future::pending().await,
        }
    }
}

/// Where a waiting acquire stands.
enum Turn {
    /// Our key heads the queue.
    Holder,
    /// Someone else holds it and the wait is over.
    Busy,
    /// Our key vanished (its lease ended): queue again.
    Requeue,
}

#[async_trait]
impl Locker for EtcdLease {
    fn id(&self) -> &str {
        ID
    }

    fn capabilities(&self) -> Capabilities {
        Self::CAPABILITIES
    }

    async fn acquire(&self, key: &str, opts: &AcquireOptions) -> Result<Lease, LockError> {
        let fixed = match opts.lease {
            LeaseMode::Watchdog => None,
            LeaseMode::Fixed(ttl) => Some((lease_seconds("fixed lease", ttl)?, ttl)),
        };
        let started = Instant::now();
        let give_up = opts.wait.map(|w| started + w);
        let owner = opts.owner.clone().unwrap_or_else(OwnerId::unique);
        let key: Arc<str> = key.into();
        let queue = self.queue_prefix(&key);
        loop {
            let entry = async {
                let tenure = match fixed {
                    None => Tenure::Session(self.session().await?),
                    Some((seconds, ttl)) => {
                        let (lease, base) = self.own_lease(seconds).await?;
                        Tenure::Own { lease, ttl, base }
                    }
                };
                let slot = self.slots.take();
                let entered = self.queue.enqueue(&queue, slot, tenure.lease_id()).await?;
                Ok::<_, LockError>((tenure, entered))
            };
            let (mut tenure, entered) = match entry.await {
                Ok(entry) => entry,
                Err(LockError::Backend { .. })
                    if give_up.is_some_and(|g| Instant::now() + RETRY_PAUSE < g) =>
                {
                    tokio::time::sleep(RETRY_PAUSE).await;
                    continue;
                }
                Err(e) => return Err(e),
            };
            match self.wait_turn(&queue, &entered, &tenure, give_up).await? {
                Turn::Holder => {
                    if let Tenure::Own { lease, base, .. } = &mut tenure
                        && entered.head != entered.key.revision
                    {
                        // We waited: restart the fixed TTL from a last keep-alive.
                        *base = self.queue.refresh(lease.id).await?;
                    }
                    if let Some(lease) =
                        self.hold(key.clone(), owner.clone(), opts.lease, entered, tenure)
                    {
                        return Ok(lease);
                    }
                    // The session was lost just now: queue again with a new one.
                }
                Turn::Busy => {
                    // Errors here leave the key to its drop guard (background delete).
                    let _ = entered.key.remove().await;
                    return Err(LockError::Timeout {
                        key: key.to_string(),
                        waited: started.elapsed(),
                    });
                }
                Turn::Requeue => {
                    if give_up.is_none_or(|g| Instant::now() >= g) {
                        return Err(LockError::Timeout {
                            key: key.to_string(),
                            waited: started.elapsed(),
                        });
                    }
                }
            }
        }
    }

    async fn close(&self) {
        // Stops the keep-alive; locks still held expire with the session lease.
        self.session.lock().await.take();
    }
}

/// What carries a held lock.
#[derive(Debug)]
enum HeldBy {
    /// The client's session lease.
    Session {
        session: Arc<EtcdSession>,
        hold: Arc<SessionHold<()>>,
    },
    /// Its own lease (revoked when this is dropped).
    Own {
        _lease: OwnLease,
        state: Arc<LeaseState>,
    },
}

/// An etcd lease's release path: delete our key if it is still ours, revoke a lease of our own.
struct EtcdHold {
    kv: KvClient,
    name: String,
    revision: i64,
    /// The name's slot, given back once the key is gone.
    slot: Option<Slot>,
    key: Arc<str>,
    owner: Arc<str>,
    held: HeldBy,
    events: Events,
    retry: Retry,
}

impl std::fmt::Debug for EtcdHold {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EtcdHold")
            .field("name", &self.name)
            .field("revision", &self.revision)
            .field("held", &self.held)
            .finish_non_exhaustive()
    }
}

impl EtcdHold {
    /// Stops local tracking: the lease state is marked released. Returns whether the lease was still
    /// live (not already lost), so that a lost lease never announces `Released` after its `Lost`.
    fn leave(&self) -> bool {
        match &self.held {
            HeldBy::Session { session, hold } => {
                let live = hold.state.end().is_none();
                session.holds().leave(&self.key, &self.owner, hold);
                live
            }
            HeldBy::Own { state, .. } => state.mark_released(),
        }
    }
}

#[async_trait]
impl LeaseHandle for EtcdHold {
    async fn release(self: Box<Self>) -> Result<(), LockError> {
        // etcd revokes an expired lease up to about half a second late, so the delete below may still
        // find the key of a lease already reported lost: that is no release to announce.
        let live = self.leave();
        let mut this = *self;
        let name = this.name.clone();
        let removed = match delete_own_key(&this.kv, name, this.revision, this.retry).await {
            Ok(removed) => removed,
            Err(error) => {
                // The key must not outlive the hold: keep trying in the background.
                if let Some(slot) = this.slot.take() {
                    let name = std::mem::take(&mut this.name);
                    delete_in_background(&this.kv, name, this.revision, this.retry, slot);
                }
                return Err(error);
            }
        };
        if !removed || !live {
            return Err(LockError::NotHeld {
                key: this.key.to_string(),
            });
        }
        this.events.emit(|| LockEvent::Released {
            key: this.key.clone(),
            at: Instant::now(),
        });
        Ok(())
    }

    fn abandon(self: Box<Self>) {
        let live = self.leave();
        let mut this = *self;
        in_background(async move {
            let name = std::mem::take(&mut this.name);
            let retry = Retry {
                overall: CLEAN_UP_FOR,
                ..this.retry
            };
            let removed = delete_own_key(&this.kv, name, this.revision, retry).await;
            if live && let Ok(true) = removed {
                this.events.emit(|| LockEvent::Released {
                    key: this.key.clone(),
                    at: Instant::now(),
                });
            }
            // Dropping `this` revokes a lease of our own, after the key is gone.
        });
    }
}
