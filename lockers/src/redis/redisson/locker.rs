//! The `redisson-classic` / `redisson` client ([`Redisson`]): its acquire attempt and wait, its grants
//! and the renewer its generation runs. What it does is the folder's doc.

use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use tokio::sync::watch;

use super::classic;
use super::config::{Generation, RedissonConfig};
use super::lock::{Core, RedissonHold, RenewTarget, redisson_keys};
use super::scheduler::Scheduler;
use crate::error::LockError;
use crate::event::Events;
use crate::lease::{AcquireOptions, Lease, LeaseState};
use crate::locker::{Capabilities, Locker};
use crate::redis::acquire::{self, ConfirmWithin, Request};
use crate::redis::deferred::DeferredStarts;
use crate::redis::keys::{LockKeys, lock_key, owner_field};
use crate::redis::transport::pubsub::PubSub;
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

    /// Live timer chains of the 3.44+ scheduler (0 for classic; see `scheduler`).
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
                classic::start(deferred, &self.core, target, state, answered_at, closed)
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

    fn requests_sent(&self) -> Option<u64> {
        Some(self.core.connection.requests_sent())
    }

    async fn acquire(&self, key: &str, opts: &AcquireOptions) -> Result<Lease, LockError> {
        if *self.closed.borrow() {
            return Err(acquire::closed());
        }
        let config = &self.core.config;
        let request = Request::named(
            &config.key_prefix,
            key,
            opts,
            config.renewal.ttl,
            redisson_keys,
        )?;
        let owner = owner_field(&config.client_id, &request.owner);
        // A key without TTL (set by someone else) leaves only a message or the wait's end.
        let holder_left = |pttl: i64| u64::try_from(pttl).ok().map(Duration::from_millis);
        let attempt =
            |_subscribed: bool| self.core.try_acquire(&request.keys, &owner, request.ttl_ms);
        let granted =
            request.until_granted(&self.waiters, ConfirmWithin::Wait, holder_left, attempt);
        let (_no_token, sent_at) = granted.await?;
        Ok(self.grant(request, owner, sent_at))
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
