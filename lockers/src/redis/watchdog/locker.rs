//! The `redis-watchdog` client ([`RedisWatchdog`]): its scripts' calls, its acquire attempt and wait, its
//! grants and renewals (per lock or batched) and a lease's release path. What it does is the folder's doc.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crate::redis::transport::connection::Commands;
use async_trait::async_trait;
use tokio::sync::watch;

use super::batch::BatchTarget;
use super::config::{RenewalMode, WatchdogConfig};
use crate::batch_renewal::{BatchRenewer, BatchSchedule};
use crate::error::LockError;
use crate::event::Events;
use crate::lease::{AcquireOptions, FencingToken, Lease, LeaseHandle, LeaseState};
use crate::locker::{Capabilities, Locker};
use crate::redis::acquire::{self, ConfirmWithin, Request};
use crate::redis::deferred::DeferredStarts;
use crate::redis::keys::{LockKeys, lock_key, owner_field};
use crate::redis::scripts::{
    self, Attempt, WATCHDOG_ACQUIRE, WATCHDOG_RELEASE, WATCHDOG_RENEW, WATCHDOG_RENEW_BATCH,
    acquire_attempt, renew_outcome, ttl_millis,
};
use crate::redis::transport::cluster::by_slot;
use crate::redis::transport::connection::{BACKEND, RedisConnection};
use crate::redis::transport::pubsub::PubSub;
use crate::renewal::{HoldTicket, Holds, RenewOutcome, RenewalPlan, StopRenewal};

/// The strategy id (per-lock renewal timers, Redisson's classic behaviour).
pub const ID: &str = "redis-watchdog";
/// The id of the same strategy with batched renewal ([`RenewalMode::Batched`]).
pub const BATCHED_ID: &str = "redis-watchdog-batched";
/// How many times per renewal period batched renewal renews each lock (a little more than once: see
/// `batch`), so a caller can bound its server calls.
pub const BATCHED_RENEWALS_PER_PERIOD: f64 = crate::batch_renewal::RENEWALS_PER_PERIOD;
/// The timing of batched renewal (ticks, phases, calls in flight), for a sender that mirrors it.
pub const BATCHED_SCHEDULE: BatchSchedule = crate::batch_renewal::SCHEDULE;

/// The text of the batched renewal script (`KEYS` lock hashes; `ARGV` the TTL in ms, then one owner
/// field per key; answers 0 or the PTTL found, per key), for a sender that makes the same calls.
pub fn batch_renewal_script() -> &'static str {
    WATCHDOG_RENEW_BATCH.code()
}

/// The message a release publishes on the lock's channel (Redisson's `UNLOCK_MESSAGE`).
const UNLOCK_MESSAGE: &str = "0";

/// What the client's leases and renewals share.
#[derive(Debug)]
struct Core {
    connection: RedisConnection,
    config: WatchdogConfig,
    events: Events,
    holds: Holds,
    renew_calls: Arc<AtomicU64>,
}

impl Core {
    /// One acquire attempt; `others_wait` when other waiters of this client wait on the lock (a fresh
    /// hold is then marked so that its release publishes).
    async fn try_acquire(
        &self,
        keys: &LockKeys,
        owner: &str,
        ttl_ms: u64,
        others_wait: bool,
    ) -> Result<Attempt, LockError> {
        let mut call = WATCHDOG_ACQUIRE.prepare();
        call.key(&keys.lock)
            .key(&keys.fence)
            .arg(ttl_ms)
            .arg(owner)
            .arg(if others_wait { "1" } else { "0" });
        let answer = scripts::run(&mut self.connection.commands(), &call).await?;
        acquire_attempt(&WATCHDOG_ACQUIRE, answer)
    }

    /// Releases one hold (the one granted with `token`) on the server. `Ok(true)` when it freed the lock;
    /// `NotHeld` when the owner holds nothing there, or only a newer hold.
    async fn release(
        &self,
        keys: &LockKeys,
        owner: &str,
        ttl_ms: u64,
        token: FencingToken,
    ) -> Result<bool, LockError> {
        let mut call = WATCHDOG_RELEASE.prepare();
        call.key(&keys.lock)
            .key(&keys.fence)
            .arg(ttl_ms)
            .arg(owner)
            .arg(&keys.channel)
            .arg(UNLOCK_MESSAGE)
            .arg(token.0);
        let answer: i64 = scripts::run(&mut self.connection.commands(), &call).await?;
        acquire::hash_released(&WATCHDOG_RELEASE, answer, keys, &self.events)
    }
}

async fn renew_one(
    mut connection: Commands,
    key: &str,
    owner: &str,
    ttl_ms: u64,
) -> Result<RenewOutcome, LockError> {
    let mut call = WATCHDOG_RENEW.prepare();
    call.key(key).arg(ttl_ms).arg(owner);
    let answer: i64 = scripts::run(&mut connection, &call).await?;
    Ok(renew_outcome(answer))
}

/// The calls renewing `targets`, built now (one command buffer per call, no allocation per lock) and
/// sent together when awaited: one batch script call, or in a cluster one per slot (a script's keys
/// must share a slot), sent at once so the calls to one master pipeline on its connection. Counts each
/// call in `calls`. A failed call fails the chunk (every lock in it is retried a third of a period later).
fn renew_chunk(
    connection: Commands,
    targets: &[&BatchTarget],
    ttl_ms: u64,
    calls: &AtomicU64,
) -> impl Future<Output = Result<Vec<RenewOutcome>, LockError>> + use<> {
    let locks = targets.len();
    if !connection.is_cluster() {
        calls.fetch_add(1, Ordering::Relaxed);
        let cmd = renew_call(targets.iter().copied(), ttl_ms);
        return futures::future::Either::Left(async move {
            let answers = renew_answers(connection, &cmd, locks).await?;
            Ok(answers.into_iter().map(renew_outcome).collect())
        });
    }
    let keys: Vec<&[u8]> = targets.iter().map(|t| t.key()).collect();
    let sends: Vec<(redis::Cmd, Vec<usize>)> = by_slot(&keys, true)
        .into_iter()
        .map(|group| (renew_call(group.iter().map(|&i| targets[i]), ttl_ms), group))
        .collect();
    calls.fetch_add(sends.len() as u64, Ordering::Relaxed);
    futures::future::Either::Right(async move {
        let answers = futures::future::join_all(
            sends
                .iter()
                .map(|(cmd, group)| renew_answers(connection.clone(), cmd, group.len())),
        )
        .await;
        let mut outcomes = vec![None; locks];
        for ((_, group), answers) in sends.iter().zip(answers) {
            for (&i, answer) in group.iter().zip(answers?) {
                outcomes[i] = Some(renew_outcome(answer));
            }
        }
        Ok(outcomes.into_iter().flatten().collect())
    })
}

/// The batch script call renewing `targets` (all in one slot).
fn renew_call<'a>(
    targets: impl Iterator<Item = &'a BatchTarget> + Clone,
    ttl_ms: u64,
) -> redis::Cmd {
    let mut cmd = WATCHDOG_RENEW_BATCH.evalsha(targets.clone().count());
    for target in targets.clone() {
        cmd.arg(target.key());
    }
    cmd.arg(ttl_ms);
    for target in targets {
        cmd.arg(target.owner());
    }
    cmd
}

/// Sends one batch renewal call for `locks` locks and reads its answers, one per lock.
async fn renew_answers(
    mut connection: Commands,
    cmd: &redis::Cmd,
    locks: usize,
) -> Result<Vec<i64>, LockError> {
    let answers: Vec<i64> = scripts::run_cmd(&mut connection, &WATCHDOG_RENEW_BATCH, cmd).await?;
    if answers.len() != locks {
        return Err(LockError::backend(
            BACKEND,
            format!(
                "batch renewal answered {} results for {locks} locks",
                answers.len()
            ),
        ));
    }
    Ok(answers)
}

/// How this client renews: per-lock loops (started lazily) or the batch scheduler.
#[derive(Debug)]
enum Renewer {
    PerLock(DeferredStarts),
    Batched(BatchRenewer<BatchTarget>),
}

/// One client of a Redis server running the `redis-watchdog` strategy. See the module docs.
#[derive(Debug)]
pub struct RedisWatchdog {
    core: Arc<Core>,
    renewer: Renewer,
    waiters: PubSub,
    closed: watch::Sender<bool>,
}

impl RedisWatchdog {
    /// What every redis-watchdog client can do (known without connecting).
    pub const CAPABILITIES: Capabilities = acquire::capabilities(true, true);

    /// Connects to `url` (`redis://127.0.0.1:6379`) and loads the scripts. An invalid `config` is a
    /// `Config` error; a server that does not answer within the connect timeout is a `Backend` error.
    pub async fn connect(
        url: &str,
        config: WatchdogConfig,
        events: Events,
    ) -> Result<Self, LockError> {
        config.validate()?;
        let connection = RedisConnection::connect(url, config.connection).await?;
        scripts::load(
            &mut connection.commands(),
            &[
                &WATCHDOG_ACQUIRE,
                &WATCHDOG_RENEW,
                &WATCHDOG_RENEW_BATCH,
                &WATCHDOG_RELEASE,
            ],
        )
        .await?;
        let waiters = PubSub::start(connection.clone());
        let renew_calls = Arc::new(AtomicU64::new(0));
        let plan = RenewalPlan::from(config.renewal);
        let renewer = match config.renewal_mode {
            RenewalMode::PerLock => Renewer::PerLock(DeferredStarts::start()),
            RenewalMode::Batched { chunk } => {
                let commands = connection.commands();
                let calls = renew_calls.clone();
                let ttl_ms = ttl_millis(config.renewal.ttl);
                Renewer::Batched(BatchRenewer::start(
                    plan,
                    chunk,
                    events.clone(),
                    BACKEND,
                    move |targets| renew_chunk(commands.clone(), targets, ttl_ms, &calls),
                ))
            }
        };
        let holds = match &renewer {
            Renewer::PerLock(_) => Holds::noticing_early(),
            Renewer::Batched(batch) => Holds::in_table(batch.lease_table().clone()),
        };
        Ok(RedisWatchdog {
            core: Arc::new(Core {
                connection,
                config,
                events,
                holds,
                renew_calls,
            }),
            renewer,
            waiters,
            closed: watch::Sender::new(false),
        })
    }

    /// The settings this client runs with.
    pub fn config(&self) -> &WatchdogConfig {
        &self.core.config
    }

    /// The command connection (shared by every lease of this client).
    pub fn connection(&self) -> &RedisConnection {
        &self.core.connection
    }

    /// The server key of the lock called `name`.
    pub fn lock_key(&self, name: &str) -> String {
        lock_key(&self.core.config.key_prefix, name)
    }

    /// Renew script calls this client has made (one per lock per renewal, or one per chunk when batched).
    pub fn renew_calls(&self) -> u64 {
        self.core.renew_calls.load(Ordering::Relaxed)
    }

    /// Locks (key, owner) this client currently holds, re-entrant holds counted once.
    pub fn held_locks(&self) -> usize {
        self.core.holds.len()
    }

    /// Locks in the batch renewal schedule (0 in per-lock mode).
    pub fn scheduled_renewals(&self) -> usize {
        match &self.renewer {
            Renewer::PerLock(_) => 0,
            Renewer::Batched(batch) => batch.len(),
        }
    }

    /// Starts renewing `state`'s lock, the way the configured mode does.
    fn start_renewal(
        &self,
        keys: &LockKeys,
        owner: &Arc<str>,
        sent_at: Instant,
        state: Arc<LeaseState>,
    ) -> Box<dyn StopRenewal> {
        let config = &self.core.config;
        let ttl_ms = ttl_millis(config.renewal.ttl);
        let deferred = match &self.renewer {
            Renewer::Batched(batch) => {
                let target = BatchTarget::new(&keys.lock, owner);
                return Box::new(batch.schedule(target, state, sent_at));
            }
            Renewer::PerLock(deferred) => deferred,
        };
        let plan = RenewalPlan::from(config.renewal);
        let commands = self.core.connection.commands();
        let calls = self.core.renew_calls.clone();
        let key: Arc<str> = keys.lock.as_str().into();
        let owner = owner.clone();
        let renew = move || {
            let (commands, key, owner) = (commands.clone(), key.clone(), owner.clone());
            calls.fetch_add(1, Ordering::Relaxed);
            async move { renew_one(commands, &key, &owner, ttl_ms).await }
        };
        let events = self.core.events.clone();
        // The loop is spawned only if the lease is still held half a period after the acquire.
        deferred.schedule_renewal(state, plan, sent_at, events, self.closed.subscribe(), renew)
    }

    /// Registers a granted hold and builds its lease. No await: a cancelled acquire either never gets
    /// here or gets a whole lease.
    fn grant(
        &self,
        request: Request,
        owner: Arc<str>,
        token: FencingToken,
        sent_at: Instant,
    ) -> Lease {
        let keys = request.keys.clone();
        let renew = |state| self.start_renewal(&keys, &owner, sent_at, state);
        let ttl_ms = request.ttl_ms;
        let core = &self.core;
        request.grant(
            &core.holds,
            &core.events,
            &owner,
            token,
            sent_at,
            Some(renew),
            |ticket| {
                Box::new(WatchdogHold {
                    core: core.clone(),
                    ticket,
                    keys: keys.clone(),
                    ttl_ms,
                    token,
                })
            },
        )
    }
}

#[async_trait]
impl Locker for RedisWatchdog {
    fn id(&self) -> &str {
        match self.config().renewal_mode {
            RenewalMode::PerLock => ID,
            RenewalMode::Batched { .. } => BATCHED_ID,
        }
    }

    fn capabilities(&self) -> Capabilities {
        Self::CAPABILITIES
    }

    fn requests_sent(&self) -> Option<u64> {
        Some(self.core.connection.requests_sent())
    }

    async fn acquire(&self, key: &str, opts: &AcquireOptions) -> Result<Lease, LockError> {
        if *self.closed.borrow() {
            return Err(acquire::closed());
        }
        let config = &self.core.config;
        let request = Request::new(&config.key_prefix, key, opts, config.renewal.ttl)?;
        let owner = owner_field(&config.client_id, &request.owner);
        let channel = &request.keys.channel;
        let holder_left = |pttl: i64| {
            Some(match pttl {
                n if n > 0 => Duration::from_millis(n.unsigned_abs()),
                // No TTL on the key (set by someone else): only a message or our own deadline helps.
                -1 => config.renewal.ttl,
                _ => Duration::from_millis(1),
            })
        };
        let attempt = |subscribed: bool| {
            // Other waiters of this client on the lock: a fresh hold is marked so its release publishes.
            let others_wait = self.waiters.waiters(channel) > usize::from(subscribed);
            self.core
                .try_acquire(&request.keys, &owner, request.ttl_ms, others_wait)
        };
        let granted = request.until_granted(
            &self.waiters,
            ConfirmWithin::HolderLeft,
            holder_left,
            attempt,
        );
        let (token, sent_at) = granted.await?;
        Ok(self.grant(request, owner, token, sent_at))
    }

    async fn close(&self) {
        self.shut_down();
    }
}

impl RedisWatchdog {
    /// Stops renewals, the batch scheduler and the pub/sub dispatcher. Idempotent.
    fn shut_down(&self) {
        self.closed.send_replace(true);
        match &self.renewer {
            Renewer::PerLock(deferred) => deferred.stop(),
            Renewer::Batched(batch) => batch.stop(),
        }
        self.waiters.stop();
    }
}

impl Drop for RedisWatchdog {
    fn drop(&mut self) {
        self.shut_down();
    }
}

/// A watchdog lease's release path.
#[derive(Debug)]
struct WatchdogHold {
    core: Arc<Core>,
    ticket: HoldTicket,
    keys: Arc<LockKeys>,
    ttl_ms: u64,
    /// The hold's fencing token: the release frees this hold only, never a newer one of the same owner.
    token: FencingToken,
}

#[async_trait]
impl LeaseHandle for WatchdogHold {
    async fn release(self: Box<Self>) -> Result<(), LockError> {
        // Renewal stops here, before the server is asked, whatever the answer will be.
        self.core.holds.leave(&self.ticket);
        self.core
            .release(&self.keys, &self.ticket.owner, self.ttl_ms, self.token)
            .await
            .map(|_freed| ())
    }

    fn abandon(self: Box<Self>) {
        self.core.holds.leave(&self.ticket);
        acquire::release_in_background(async move {
            let hold = self;
            let owner = &hold.ticket.owner;
            hold.core
                .release(&hold.keys, owner, hold.ttl_ms, hold.token)
                .await
                .map(|_freed| ())
        });
    }
}
