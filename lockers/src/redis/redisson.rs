//! `redisson-classic` and `redisson`: Redisson's `RLock`, faithfully, in its two generations of the lock
//! watchdog ([`Generation`]). Source read: redisson/redisson at tags `redisson-3.43.0` (classic) and
//! `redisson-3.44.0` / 4.7 (scheduler): `RedissonLock.java`, `RedissonBaseLock.java`,
//! `renewal/{LockRenewalScheduler,RenewalTask,LockTask}.java`, `command/CommandAsyncService.java`
//! (`syncedEval`), `config/Config.java` (defaults).
//!
//! What both generations share (`redisson_lock`):
//! - The lock is a hash at `P{name}`; the field is `<client id>:<owner>` (Redisson: `<uuid>:<thread
//!   id>`), the value the re-entry count. Acquire: when the hash is absent or the field exists,
//!   `HINCRBY` and `PEXPIRE` (the TTL is always re-set); otherwise the PTTL comes back.
//! - `LeaseMode::Watchdog` (`lock()` without a lease time): TTL = `lockWatchdogTimeout` (30 s),
//!   renewed every third of it. `LeaseMode::Fixed(d)` (`lock(leaseTime)`): TTL `d`, never renewed.
//! - Release: the unlock script always publishes on `P{name}:unlock` on the final release; re-entrant
//!   releases re-set the TTL; a release by a non-owner is [`LockError::NotHeld`] (Redisson's
//!   `IllegalMonitorStateException`); renewal is cancelled once the server answered.
//! - Waiting (`tryLock(wait)`): try, subscribe to the unlock channel, then retry whenever an unlock
//!   message arrives or the holder's PTTL elapses, until the wait is over.
//! - With [`Topology::Replicated`](super::Topology::Replicated), each lock write is followed by `WAIT` on
//!   its connection, as `replica_sync` describes.
//! - No fencing token: Redisson has none, so [`Capabilities::fencing`] is false and every lease's
//!   `token()` is 0.
//! - No lost-lease signal: Redisson never tells the holder that renewal stopped or that the server
//!   answered "not yours"; [`Capabilities::lost_signal`] is false and `lost()` resolves at the
//!   conservative local deadline (the server's TTL runs out at about the same time).
//!
//! Renewal: `redisson_classic` (one timer per lock, stops for good on an error) or `redisson_scheduler`
//! (one scheduler per client, chunks of 100, retries at the next tick). Either way an "error" is what
//! is left after Redisson's command retries (`retryAttempts` 3 re-sends of a renew call that timed out,
//! lost its connection or was answered `BUSY` or another error Redisson retries): an outage shorter
//! than that budget costs nothing.
//!
//! Departures, each forced by lockbench's contract or harmless to what is measured:
//! - A lease dropped without release stops its renewal at once and releases in the background (the
//!   contract's drop rule; a Java `RLock` has no drop). A lease neither released nor dropped is renewed
//!   forever, as in Redisson.
//! - The acquire script answers `{1, 0}` where Redisson's answers nil (same server work).
//! - In a cluster, the 3.44+ scheduler groups held locks by slot and renews one slot after the other, in
//!   chunks of 100 within a slot; here a tick's chunks of 100 span slots and each chunk is split by slot,
//!   its calls sent together (`cluster::by_slot`): the same script, but more calls when a chunk spans
//!   slots, and the slots renewed at once rather than in turn.

use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use tokio::sync::watch;

use super::acquire::{self, Request};
use super::deferred::DeferredStarts;
use super::keys::{LockKeys, lock_key, owner_field};
use super::pubsub::{PubSub, Subscription};
use super::redisson_classic;
use super::redisson_config::{Generation, RedissonConfig};
use super::redisson_lock::{Core, RedissonHold, RenewTarget};
use super::redisson_scheduler::Scheduler;
use super::scripts::Attempt;
use crate::error::LockError;
use crate::event::Events;
use crate::lease::{AcquireOptions, Lease, LeaseState};
use crate::locker::{Capabilities, Locker};
use crate::renewal::StopRenewal;

/// The id of Redisson 3.x before 3.44 ([`Generation::Classic`]).
pub const CLASSIC_ID: &str = "redisson-classic";
/// The id of Redisson 3.44 and later ([`Generation::Scheduler`]).
pub const ID: &str = "redisson";

/// How this client renews.
#[derive(Debug)]
enum Renewer {
    Classic(DeferredStarts),
    Scheduler(Scheduler),
}

/// One Redisson client (one `RedissonClient` with its `RLock`s) of a Redis server. See the module docs.
#[derive(Debug)]
pub struct Redisson {
    core: Arc<Core>,
    renewer: Renewer,
    waiters: PubSub,
    closed: watch::Sender<bool>,
}

impl Redisson {
    /// What both Redisson rows can do: re-entrant, watchdog and fixed leases, pub/sub wake-ups; no
    /// fencing token and no lost signal.
    pub const CAPABILITIES: Capabilities = Capabilities {
        fencing: false,
        lost_signal: false,
        hold_identity: false,
        ..acquire::capabilities(true, true)
    };

    /// Connects to `url` and loads the scripts. An invalid `config` is a `Config` error; a server that
    /// does not answer within the connect timeout is a `Backend` error.
    pub async fn connect(
        url: &str,
        config: RedissonConfig,
        events: Events,
    ) -> Result<Self, LockError> {
        let generation = config.generation;
        let core = Arc::new(Core::connect(url, config, events).await?);
        let renewer = match generation {
            Generation::Classic => Renewer::Classic(DeferredStarts::start()),
            Generation::Scheduler => Renewer::Scheduler(Scheduler::new(core.clone())),
        };
        let waiters = PubSub::start(core.connection.clone());
        Ok(Redisson {
            core,
            renewer,
            waiters,
            closed: watch::Sender::new(false),
        })
    }

    /// The settings this client runs with.
    pub fn config(&self) -> &RedissonConfig {
        &self.core.config
    }

    /// The server key of the lock called `name`.
    pub fn lock_key(&self, name: &str) -> String {
        lock_key(&self.core.config.key_prefix, name)
    }

    /// Renew script calls this client has made (per lock when classic, per chunk with the scheduler).
    pub fn renew_calls(&self) -> u64 {
        self.core.renew_calls()
    }

    /// Locks (key, owner) this client holds, re-entrant holds counted once.
    pub fn held_locks(&self) -> usize {
        self.core.holds.len()
    }

    /// Locks registered with the 3.44+ scheduler (0 for classic).
    pub fn scheduled_renewals(&self) -> usize {
        match &self.renewer {
            Renewer::Classic(_) => 0,
            Renewer::Scheduler(scheduler) => scheduler.len(),
        }
    }

    /// Live timer chains of the 3.44+ scheduler (0 for classic; see `redisson_scheduler`).
    pub fn renewal_chains(&self) -> usize {
        match &self.renewer {
            Renewer::Classic(_) => 0,
            Renewer::Scheduler(scheduler) => scheduler.chains(),
        }
    }

    /// Starts renewing a granted watchdog lease.
    fn start_renewal(
        &self,
        target: RenewTarget,
        answered_at: Instant,
        state: Arc<LeaseState>,
    ) -> Box<dyn StopRenewal> {
        match &self.renewer {
            Renewer::Classic(deferred) => {
                let closed = self.closed.subscribe();
                redisson_classic::start(deferred, &self.core, target, state, answered_at, closed)
            }
            Renewer::Scheduler(scheduler) => scheduler.add(target, state),
        }
    }

    /// Registers a granted hold and builds its lease. No await.
    fn grant(&self, request: Request, owner: Arc<str>, sent_at: Instant) -> Lease {
        let keys: Arc<LockKeys> = request.keys.clone();
        let answered_at = Instant::now();
        let target = RenewTarget {
            key: keys.lock.as_str().into(),
            owner: owner.clone(),
        };
        let renew = |state| self.start_renewal(target.clone(), answered_at, state);
        let ttl_ms = request.ttl_ms;
        let core = &self.core;
        let token = crate::lease::FencingToken(0);
        request.grant(
            &core.holds,
            &core.events,
            &owner,
            token,
            sent_at,
            Some(renew),
            |ticket| {
                Box::new(RedissonHold {
                    core: core.clone(),
                    ticket,
                    keys,
                    ttl_ms,
                })
            },
        )
    }

    fn shut_down(&self) {
        self.closed.send_replace(true);
        match &self.renewer {
            Renewer::Classic(deferred) => deferred.stop(),
            Renewer::Scheduler(scheduler) => scheduler.stop(),
        }
        self.waiters.stop();
    }
}

#[async_trait]
impl Locker for Redisson {
    fn id(&self) -> &str {
        match self.core.config.generation {
            Generation::Classic => CLASSIC_ID,
            Generation::Scheduler => ID,
        }
    }

    fn capabilities(&self) -> Capabilities {
        Self::CAPABILITIES
    }

    async fn acquire(&self, key: &str, opts: &AcquireOptions) -> Result<Lease, LockError> {
        if *self.closed.borrow() {
            return Err(acquire::closed());
        }
        let config = &self.core.config;
        let request = Request::new(&config.key_prefix, key, opts, config.renewal.ttl)?;
        let owner = owner_field(&config.client_id, &request.owner);
        let mut subscription: Option<Subscription> = None;
        loop {
            // Armed before the attempt, so an unlock published while it runs still wakes us.
            let wakeup = subscription.as_ref().map(Subscription::arm);
            let sent_at = Instant::now();
            let attempt = self.core.try_acquire(&request.keys, &owner, request.ttl_ms);
            let pttl = match attempt.await? {
                Attempt::Acquired(_) => return Ok(self.grant(request, owner, sent_at)),
                Attempt::Busy(pttl) => pttl,
            };
            let now = Instant::now();
            let give_up = request.keep_waiting(now)?;
            let Some(wakeup) = wakeup else {
                // First miss: subscribe (within the wait), then try again at once.
                let joined = subscription.insert(self.waiters.wait_on(&request.keys.channel));
                let _ = tokio::time::timeout_at(give_up.into(), joined.confirmed()).await;
                continue;
            };
            // A key without TTL (set by someone else) leaves only a message or the wait's end.
            let until = match u64::try_from(pttl) {
                Ok(ms) => (now + Duration::from_millis(ms)).min(give_up),
                Err(_) => give_up,
            };
            tokio::select! {
                _ = wakeup => {}
                _ = tokio::time::sleep_until(until.into()) => {}
            }
        }
    }

    async fn close(&self) {
        self.shut_down();
    }
}

impl Drop for Redisson {
    fn drop(&mut self) {
        self.shut_down();
    }
}
