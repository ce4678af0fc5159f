//! The `redis-keyspace-naive` / `-shadow` client ([`RedisKeyspace`]): its acquire, its wait on keyevents,
//! its grants and a lease's release path. What it does is the folder's doc.

use std::sync::Arc;
use std::time::Instant;

use async_trait::async_trait;
use tokio::sync::watch;

use super::config::{KeyspaceConfig, Variant};
use super::holder::{Held, Renewer};
use crate::error::LockError;
use crate::event::Events;
use crate::lease::{AcquireOptions, FencingToken, Lease, LeaseHandle, LeaseMode, LeaseState};
use crate::locker::{Capabilities, Locker};
use crate::redis::acquire::{self, Request};
use crate::redis::scripts::Attempt;
use crate::redis::string_lock::{StringLock, load_scripts};
use crate::redis::transport::connection::RedisConnection;
use crate::redis::transport::keyevents::{KeyEvents, KeyWatch};
use crate::renewal::{HoldTicket, Holds, RenewalPlan, StopRenewal};

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
                holds: Holds::noticing_early(),
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

    fn requests_sent(&self) -> Option<u64> {
        Some(self.connection().requests_sent())
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
