//! `redis-keyspace`: renewal driven by Redis keyspace notifications, in the two variants people try.
//!
//! Redis publishes `__keyevent@<db>__:expired` when it deletes an expired key and `__keyevent@<db>__:del`
//! on `DEL`, if `notify-keyspace-events` has `E` (keyevent channels), `x` (expired) and `g` (generic
//! commands, `DEL` among them). At connect the strategy reads the setting (`CONFIG GET`) and adds the
//! flags it lacks (`CONFIG SET`, keeping the user's flags), and again after each resubscription of its
//! pub/sub connection (the server may be a newly promoted or a restarted one). When it may not (CONFIG renamed or disabled,
//! an ACL), connecting fails with a `Config` error naming `notify-keyspace-events`: it never runs
//! without events.
//!
//! The lock is the token-valued string lock it shares with `redis-guard-thread` (`string_lock`: `SET NX
//! PX` + fencing `INCR` in one script, check-and-pexpire, check-and-delete). Each client has one pub/sub
//! connection (the `pubsub` dispatcher the watchdog's waiters use too) subscribed to the two keyevent
//! channels; `keyevents` hands each event to the holders and waiters of that key in this client, and
//! `keyspace_holder` is what a holder does with it. Every client receives every `expired` and `del`
//! event of the database.
//!
//! - [`Variant::Naive`] (`redis-keyspace-naive`): the holder listens for its lock key's own `expired`
//!   event and re-acquires (`SET NX PX`, same value, same fencing token). By then the key is gone, so a
//!   contender can get in first; the holder learns it only when its re-acquire fails (`lost()` with
//!   [`LossReason::TakenOver`](crate::LossReason::TakenOver)). **Its belief is optimistic:** the
//!   holder trusts the expiry-triggered re-acquire to keep the key, so every `timeout / 3` it moves its
//!   local deadline to `now + timeout` without asking the server. `is_held()` therefore stays true from the moment the key expires until
//!   the re-acquire's answer arrives — and for good when no `expired` event comes (a `DEL` behind its
//!   back, an event lost while the subscriber was disconnected). This variant fails two conformance
//!   cases by design: `watchdog_lease_outlives_timeout` (a contender gets in at each expiry) and
//!   `lost_when_removed_behind_back` (a `DEL` publishes `del`, not `expired`, so nothing happens).
//!   It can also err the other way: a new holder whose own `SET NX` made Redis delete its
//!   predecessor's expired key receives that key's `expired` event after its acquire returns, takes it
//!   for its own expiry, and its re-acquire fails on its own key, so it reports `TakenOver` while it
//!   still holds the lock (its release still deletes the key). Found by a CI flake; kept, because a
//!   listener keyed by the lock name cannot tell the two events apart.
//! - [`Variant::Shadow`] (`redis-keyspace-shadow`): the acquire script also sets a shadow key
//!   `P{name}:shadow` with a TTL of `timeout × shadow_ratio` (default ⅔); the shadow's `expired` event
//!   triggers a check-and-pexpire of the real lock that also re-arms the shadow. A renewal answered 0
//!   fires `lost()` ([`LossReason::RenewRejected`](crate::LossReason::RenewRejected)); errors are
//!   retried until the local deadline (`RenewFailed`, then `Expired`). No timer backs it up: if the
//!   event comes later than the lock's remaining third (it fires only when the server actually deletes
//!   the key — lazily on access, or in its active expiry cycle, up to ~1/hz late), the local deadline
//!   passes and the lease is lost.
//!
//! Every `Renewed` event carries `trigger_lag`: the arrival of the triggering `expired` event minus the
//! watched key's nominal deadline (the send time of the command that set it plus its TTL; the server
//! set it a little later, so this over-states the lag by at most one round trip). `scheduled_at` is
//! that nominal deadline.
//!
//! When the pub/sub connection breaks (`CLIENT KILL TYPE pubsub`, a network blip), events published
//! meanwhile are lost for good. The dispatcher wakes every waiter, reconnects after 50 ms (failures back
//! off ×2 up to 1 s) and resubscribes; then every shadow holder renews at once (its shadow may have expired
//! unseen; `trigger_lag` = resubscription − nominal deadline, zero if not yet due), so a gap shorter
//! than the lock's remaining third keeps the lock. The naive holder does nothing on a reconnect: it
//! cannot tell that it missed its key's expiry.
//!
//! Waiters wake on their lock key's `del` and `expired` events (an event wakes every waiter of that key
//! in this client; one of them wins the retry), with a fallback re-check every `waiter_recheck`
//! (default 250 ms) so that a lost event cannot hang them. Not re-entrant (`SET NX`).
//! [`LeaseMode::Fixed`] leases have no shadow and no listener.

use std::sync::Arc;
use std::time::Instant;

use async_trait::async_trait;
use tokio::sync::watch;

use super::acquire::{self, Request};
use super::connection::RedisConnection;
use super::keyevents::{KeyEvents, KeyWatch};
use super::keyspace_holder::{Held, Renewer};
use super::scripts::Attempt;
use super::string_lock::{StringLock, load_scripts};
use crate::error::LockError;
use crate::event::Events;
use crate::lease::{AcquireOptions, FencingToken, Lease, LeaseHandle, LeaseMode, LeaseState};
use crate::locker::{Capabilities, Locker};
use crate::renewal::{HoldTicket, Holds, RenewalPlan, StopRenewal};

pub use super::keyevents::NEEDED_NOTIFY_FLAGS;
pub use super::keyspace_config::{KeyspaceConfig, NAIVE_ID, SHADOW_ID, Variant};

/// What the client's leases share.
#[derive(Debug)]
struct Core {
    connection: RedisConnection,
    config: KeyspaceConfig,
    variant: Variant,
    events: Events,
    holds: Holds,
}

/// One client of a Redis server running a `redis-keyspace` variant. See the module docs.
#[derive(Debug)]
pub struct RedisKeyspace {
    core: Arc<Core>,
    key_events: KeyEvents,
    notify_flags: String,
    closed: watch::Sender<bool>,
}

impl RedisKeyspace {
    /// Connects to `url` (`redis://127.0.0.1:6379[/db]`), makes sure the server publishes keyevent
    /// notifications (see the module docs), subscribes, and loads the scripts. An invalid `config` or a
    /// server that may not be configured is a `Config` error; a server that does not answer within the
    /// connect timeout is a `Backend` error. On a Redis Cluster every master is configured and
    /// subscribed to (each publishes only its own keys' events).
    pub async fn connect(
        url: &str,
        variant: Variant,
        config: KeyspaceConfig,
        events: Events,
    ) -> Result<Self, LockError> {
        config.validate()?;
        let connection = RedisConnection::connect(url, config.connection).await?;
        let db = connection
            .client()
            .get_connection_info()
            .redis_settings()
            .db();
        let key_events = KeyEvents::start(&connection, db).await?;
        let notify_flags = key_events.notify_flags().to_owned();
        load_scripts(&mut connection.commands()).await?;
        Ok(RedisKeyspace {
            core: Arc::new(Core {
                connection,
                config,
                variant,
                events,
                holds: Holds::default(),
            }),
            key_events,
            notify_flags,
            closed: watch::Sender::new(false),
        })
    }

    /// The variant this client runs.
    pub fn variant(&self) -> Variant {
        self.core.variant
    }

    /// The settings this client runs with.
    pub fn config(&self) -> &KeyspaceConfig {
        &self.core.config
    }

    /// The command connection.
    pub fn connection(&self) -> &RedisConnection {
        &self.core.connection
    }

    /// The server's `notify-keyspace-events` as this client left it at connect.
    pub fn notify_keyspace_events(&self) -> &str {
        &self.notify_flags
    }

    /// How often the keyevent subscription was re-established after a break.
    pub fn subscriber_reconnects(&self) -> u64 {
        self.key_events.reconnects()
    }

    /// Locks this client currently holds.
    pub fn held_locks(&self) -> usize {
        self.core.holds.len()
    }

    /// The server key of the lock called `name`.
    pub fn lock_key(&self, name: &str) -> String {
        format!("{}{{{name}}}", self.core.config.key_prefix)
    }

    fn renewer(&self) -> Renewer {
        let config = &self.core.config;
        Renewer {
            commands: self.core.connection.commands(),
            events: self.core.events.clone(),
            plan: RenewalPlan::from(config.renewal),
            shadow_ttl: config.shadow_ttl(),
        }
    }

    /// Registers the holder's listener and starts its task. No await.
    fn start_holder(
        &self,
        lock: &StringLock,
        sent_at: Instant,
        state: Arc<LeaseState>,
    ) -> Box<dyn StopRenewal> {
        let renewer = self.renewer();
        let closed = self.closed.subscribe();
        let (watched, nominal) = match lock.shadow_key() {
            Some(shadow) => (shadow, sent_at + renewer.shadow_ttl),
            None => (lock.keys.lock.as_str(), sent_at + renewer.plan.ttl),
        };
        let (registration, signals) = self.key_events.hold(watched);
        let task_held = Held {
            state,
            lock: lock.clone(),
            nominal,
        };
        let variant = self.core.variant;
        let task = tokio::spawn(async move {
            let _registration = registration;
            match variant {
                Variant::Shadow => renewer.shadow_loop(task_held, signals, closed).await,
                Variant::Naive => renewer.naive_loop(task_held, signals, closed).await,
            }
        });
        Box::new(task.abort_handle())
    }

    /// Registers a granted hold and builds its lease. No await: a cancelled acquire either never gets
    /// here or gets a whole lease.
    fn grant(
        &self,
        request: Request,
        lock: StringLock,
        token: FencingToken,
        sent_at: Instant,
    ) -> Lease {
        let begin = |state| self.start_holder(&lock, sent_at, state);
        let core = &self.core;
        let value = lock.value.clone();
        request.grant(
            &core.holds,
            &core.events,
            &value,
            token,
            sent_at,
            Some(begin),
            |ticket| {
                Box::new(KeyspaceHold {
                    core: core.clone(),
                    ticket,
                    lock: lock.clone(),
                })
            },
        )
    }
}

#[async_trait]
impl Locker for RedisKeyspace {
    fn id(&self) -> &str {
        self.core.variant.id()
    }

    fn capabilities(&self) -> Capabilities {
        self.core.variant.capabilities()
    }

    async fn acquire(&self, key: &str, opts: &AcquireOptions) -> Result<Lease, LockError> {
        if *self.closed.borrow() {
            return Err(acquire::closed());
        }
        let config = &self.core.config;
        let request = Request::new(&config.key_prefix, key, opts, config.renewal.ttl)?;
        let shadow_ttl = match (self.core.variant, request.mode) {
            (Variant::Shadow, LeaseMode::Watchdog) => Some(config.shadow_ttl()),
            _ => None,
        };
        let keys = request.keys.clone();
        let lock = StringLock::new(keys, &config.client_id, &request.owner, shadow_ttl);
        // Joined before the first attempt, so a release right after it still wakes us.
        let watch = request
            .waits()
            .then(|| self.key_events.watch(&request.keys.lock));
        loop {
            let wakeup = watch.as_ref().map(KeyWatch::arm);
            let sent_at = Instant::now();
            let mut commands = self.core.connection.commands();
            let attempt = lock.try_acquire(&mut commands, request.ttl_ms).await?;
            if let Attempt::Acquired(token) = attempt {
                return Ok(self.grant(request, lock, token, sent_at));
            }
            let now = Instant::now();
            let give_up = request.keep_waiting(now)?;
            let recheck_at = (now + config.waiter_recheck).min(give_up);
            // A request that waits has a watch, so `wakeup` is armed here.
            let event = async {
                match wakeup {
                    Some(wakeup) => wakeup.await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                _ = event => {}
                _ = tokio::time::sleep_until(recheck_at.into()) => {}
            }
        }
    }

    async fn close(&self) {
        self.shut_down();
    }
}

impl RedisKeyspace {
    /// Stops every holder task and the dispatcher. Idempotent.
    fn shut_down(&self) {
        self.closed.send_replace(true);
        self.key_events.stop();
    }
}

impl Drop for RedisKeyspace {
    fn drop(&mut self) {
        self.shut_down();
    }
}

/// A keyspace lease's release path.
#[derive(Debug)]
struct KeyspaceHold {
    core: Arc<Core>,
    ticket: HoldTicket,
    lock: StringLock,
}

#[async_trait]
impl LeaseHandle for KeyspaceHold {
    async fn release(self: Box<Self>) -> Result<(), LockError> {
        // The holder task stops here, before the server is asked, whatever the answer will be.
        self.core.holds.leave(&self.ticket);
        self.lock
            .release(&self.core.connection, &self.core.events)
            .await
    }

    fn abandon(self: Box<Self>) {
        self.core.holds.leave(&self.ticket);
        acquire::release_in_background(async move {
            self.lock
                .release(&self.core.connection, &self.core.events)
                .await
        });
    }
}
