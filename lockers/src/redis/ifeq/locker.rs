//! The `valkey-ifeq` client ([`ValkeyIfeq`]): the server check at connect, the polling acquire, grants
//! with their per-lock renewal, and a lease's release path. What it does is the folder's doc.

use std::sync::Arc;
use std::time::Instant;

use async_trait::async_trait;
use tokio::sync::watch;

use super::commands::{ID, IfeqLock, check_server};
use crate::error::LockError;
use crate::event::Events;
use crate::lease::{AcquireOptions, FencingToken, Lease, LeaseHandle, LeaseState};
use crate::locker::{Capabilities, Locker};
use crate::redis::GuardThreadConfig;
use crate::redis::acquire::{self, Request};
use crate::redis::deferred::DeferredStarts;
use crate::redis::keys::lock_key;
use crate::redis::scripts::ttl_millis;
use crate::redis::string_lock::holder_value;
use crate::redis::transport::connection::RedisConnection;
use crate::renewal::{HoldTicket, Holds, RenewalPlan, StopRenewal};

/// What the client's leases and renewals share.
#[derive(Debug)]
struct Core {
    connection: RedisConnection,
    config: GuardThreadConfig,
    events: Events,
    holds: Holds,
}

/// One client of a Valkey server running the `valkey-ifeq` strategy. See the module docs.
#[derive(Debug)]
pub struct ValkeyIfeq {
    core: Arc<Core>,
    renewals: DeferredStarts,
    closed: watch::Sender<bool>,
}

impl ValkeyIfeq {
    /// What the strategy can do, without connecting (for listings): not re-entrant, waiters poll.
    pub const CAPABILITIES: Capabilities = acquire::capabilities(false, false);

    /// Connects to `url` (`redis://127.0.0.1:6379`, TLS and ACL users as every Redis strategy takes
    /// them) and asks the server for the commands the strategy needs. An invalid `config` is a `Config`
    /// error; a server without `SET … IFEQ` or `DELIFEQ` is an `Unsupported` error naming what it lacks;
    /// a server that does not answer within the connect timeout is a `Backend` error.
    pub async fn connect(
        url: &str,
        config: GuardThreadConfig,
        events: Events,
    ) -> Result<Self, LockError> {
        config.validate()?;
        let connection = RedisConnection::connect(url, config.connection).await?;
        check_server(&mut connection.commands()).await?;
        Ok(ValkeyIfeq {
            core: Arc::new(Core {
                connection,
                config,
                events,
                holds: Holds::noticing_early(),
            }),
            renewals: DeferredStarts::start(),
            closed: watch::Sender::new(false),
        })
    }

    /// The settings this client runs with.
    pub fn config(&self) -> &GuardThreadConfig {
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

    /// Locks this client currently holds.
    pub fn held_locks(&self) -> usize {
        self.core.holds.len()
    }

    /// Schedules `lock`'s renewal loop: `SET … IFEQ … PX ttl` every renewal period, started only if the
    /// lease is still held half a period after the acquire.
    fn start_renewal(
        &self,
        lock: &IfeqLock,
        sent_at: Instant,
        state: Arc<LeaseState>,
    ) -> Box<dyn StopRenewal> {
        let renewal = self.core.config.renewal;
        let ttl_ms = ttl_millis(renewal.ttl);
        let (commands, lock) = (self.core.connection.commands(), lock.clone());
        let renew = move || {
            let (commands, lock) = (commands.clone(), lock.clone());
            async move { lock.renew(commands, ttl_ms).await }
        };
        let events = self.core.events.clone();
        let plan = RenewalPlan::from(renewal);
        let closed = self.closed.subscribe();
        self.renewals
            .schedule_renewal(state, plan, sent_at, events, closed, renew)
    }

    /// Registers a granted hold and builds its lease. No await: a cancelled acquire either never gets
    /// here or gets a whole lease.
    fn grant(
        &self,
        request: Request,
        lock: IfeqLock,
        token: FencingToken,
        sent_at: Instant,
    ) -> Lease {
        let renew = |state| self.start_renewal(&lock, sent_at, state);
        let core = &self.core;
        // The holder value is unique per acquire, so every hold is its own registry entry.
        let value = lock.value.clone();
        request.grant(
            &core.holds,
            &core.events,
            &value,
            token,
            sent_at,
            Some(renew),
            |ticket| {
                Box::new(IfeqHold {
                    core: core.clone(),
                    ticket,
                    lock: lock.clone(),
                })
            },
        )
    }
}

#[async_trait]
impl Locker for ValkeyIfeq {
    fn id(&self) -> &str {
        ID
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
        let lock = IfeqLock {
            keys: request.keys.clone(),
            value: holder_value(&config.client_id, &request.owner),
        };
        let mut misses = 0;
        loop {
            let sent_at = Instant::now();
            let commands = self.core.connection.commands();
            if let Some(token) = lock.try_acquire(commands, request.ttl_ms).await? {
                return Ok(self.grant(request, lock, token, sent_at));
            }
            let now = Instant::now();
            let give_up = request.keep_waiting(now)?;
            let pause = config.poll.pause(misses).min(give_up - now);
            misses = misses.saturating_add(1);
            tokio::time::sleep(pause).await;
        }
    }

    async fn close(&self) {
        self.shut_down();
    }
}

impl ValkeyIfeq {
    /// Stops every renewal (leases still held then expire). Idempotent.
    fn shut_down(&self) {
        self.closed.send_replace(true);
        self.renewals.stop();
    }
}

impl Drop for ValkeyIfeq {
    fn drop(&mut self) {
        self.shut_down();
    }
}

/// A `valkey-ifeq` lease's release path.
#[derive(Debug)]
struct IfeqHold {
    core: Arc<Core>,
    ticket: HoldTicket,
    lock: IfeqLock,
}

#[async_trait]
impl LeaseHandle for IfeqHold {
    async fn release(self: Box<Self>) -> Result<(), LockError> {
        // Renewal stops here, before the server is asked, whatever the answer will be.
        self.core.holds.leave(&self.ticket);
        let commands = self.core.connection.commands();
        self.lock.release(commands, &self.core.events).await
    }

    fn abandon(self: Box<Self>) {
        self.core.holds.leave(&self.ticket);
        acquire::release_in_background(async move {
            let commands = self.core.connection.commands();
            self.lock.release(commands, &self.core.events).await
        });
    }
}
