//! The `redis-guard-thread` client ([`RedisGuardThread`]): its polling acquire, its grants and a
//! lease's release path. What it does is the folder's doc.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Instant;

use async_trait::async_trait;

use super::config::GuardThreadConfig;
use super::renewal_thread::{RenewalThreads, ThreadInbox};
use crate::error::LockError;
use crate::event::Events;
use crate::lease::{AcquireOptions, FencingToken, Lease, LeaseHandle, LeaseMode};
use crate::locker::{Capabilities, Locker};
use crate::redis::acquire::{self, Request};
use crate::redis::scripts::Attempt;
use crate::redis::string_lock::{self, StringLock};
use crate::redis::transport::connection::RedisConnection;
use crate::renewal::{HoldTicket, Holds, RenewalPlan};

/// The strategy id.
pub const ID: &str = "redis-guard-thread";

/// What the client's leases and renewal threads share.
#[derive(Debug)]
struct Core {
    connection: RedisConnection,
    config: GuardThreadConfig,
    events: Events,
    holds: Holds,
    threads: RenewalThreads,
}

/// One client of a Redis server running the `redis-guard-thread` strategy. See the module docs.
#[derive(Debug)]
pub struct RedisGuardThread {
    core: Arc<Core>,
}

impl RedisGuardThread {
    /// What the strategy can do, without connecting (for listings).
    pub const CAPABILITIES: Capabilities = acquire::capabilities(false, false);

    /// Connects to `url` (`redis://127.0.0.1:6379`) and loads the scripts. An invalid `config` is a
    /// `Config` error; a server that does not answer within the connect timeout is a `Backend` error.
    pub async fn connect(
        url: &str,
        config: GuardThreadConfig,
        events: Events,
    ) -> Result<Self, LockError> {
        config.validate()?;
        let connection = RedisConnection::connect(url, config.connection).await?;
        string_lock::load_scripts(&mut connection.commands()).await?;
        let tag: String = config.client_id.chars().take(6).collect();
        let threads = RenewalThreads {
            connection: connection.clone(),
            plan: RenewalPlan::from(config.renewal),
            events: events.clone(),
            closed: Arc::default(),
            live: Arc::default(),
            name: format!("lb-guard-{tag}"),
        };
        Ok(RedisGuardThread {
            core: Arc::new(Core {
                connection,
                events,
                holds: Holds::noticing_early(),
                threads,
                config,
            }),
        })
    }

    /// The settings this client runs with.
    pub fn config(&self) -> &GuardThreadConfig {
        &self.core.config
    }

    /// The shared command connection (acquire and release; renewals use their threads' own).
    pub fn connection(&self) -> &RedisConnection {
        &self.core.connection
    }

    /// How many renewal threads of this client are alive (one per held watchdog lease, until it exits).
    pub fn live_threads(&self) -> usize {
        self.core.threads.live.load(Ordering::Acquire)
    }

    /// The OS name of this client's renewal threads (as `/proc/<pid>/task/*/comm` shows it).
    pub fn thread_name(&self) -> &str {
        &self.core.threads.name
    }

    /// Locks this client currently holds.
    pub fn held_locks(&self) -> usize {
        self.core.holds.len()
    }

    /// Registers a granted hold and builds its lease, starting its renewal thread for a watchdog lease.
    /// No await: a cancelled acquire either never gets here or gets a whole lease.
    fn grant(
        &self,
        request: Request,
        lock: StringLock,
        token: FencingToken,
        sent_at: Instant,
    ) -> Result<Lease, LockError> {
        let thread = match request.mode {
            LeaseMode::Watchdog => match self.core.threads.spawn(&lock, sent_at) {
                Ok(sender) => Some(sender),
                Err(error) => {
                    // Granted but unrenewable: give it back now rather than hold it unrenewed.
                    let core = self.core.clone();
                    tokio::spawn(async move {
                        let _ = lock.release(&core.connection, &core.events).await;
                    });
                    return Err(error);
                }
            },
            LeaseMode::Fixed(_) => None,
        };
        let begin = thread.clone().map(|inbox| move |state| inbox.begin(state));
        let core = &self.core;
        // The holder value is unique per acquire, so every hold is its own registry entry.
        let value = lock.value.clone();
        Ok(request.grant(
            &core.holds,
            &core.events,
            &value,
            token,
            sent_at,
            begin,
            |ticket| {
                Box::new(GuardHold {
                    core: core.clone(),
                    ticket,
                    lock,
                    thread,
                })
            },
        ))
    }
}

#[async_trait]
impl Locker for RedisGuardThread {
    fn id(&self) -> &str {
        ID
    }

    fn capabilities(&self) -> Capabilities {
        Self::CAPABILITIES
    }

    fn requests_sent(&self) -> Option<u64> {
        Some(self.connection().requests_sent())
    }

    async fn acquire(&self, key: &str, opts: &AcquireOptions) -> Result<Lease, LockError> {
        if self.core.threads.closed.load(Ordering::Acquire) {
            return Err(acquire::closed());
        }
        let config = &self.core.config;
        let request = Request::new(&config.key_prefix, key, opts, config.renewal.ttl)?;
        let keys = request.keys.clone();
        let lock = StringLock::new(keys, &config.client_id, &request.owner, None);
        let mut misses = 0;
        loop {
            let sent_at = Instant::now();
            let mut connection = self.core.connection.commands();
            let attempt = lock.try_acquire(&mut connection, request.ttl_ms).await?;
            if let Attempt::Acquired(token) = attempt {
                return self.grant(request, lock, token, sent_at);
            }
            let now = Instant::now();
            let give_up = request.keep_waiting(now)?;
            let pause = config.poll.pause(misses).min(give_up - now);
            misses = misses.saturating_add(1);
            tokio::time::sleep(pause).await;
        }
    }

    async fn close(&self) {
        self.core.threads.closed.store(true, Ordering::Release);
    }
}

impl Drop for RedisGuardThread {
    /// Renewal threads stop renewing (each exits at its next wake-up); leases still held then expire.
    fn drop(&mut self) {
        self.core.threads.closed.store(true, Ordering::Release);
    }
}

/// A guard-thread lease's release path.
#[derive(Debug)]
struct GuardHold {
    core: Arc<Core>,
    ticket: HoldTicket,
    lock: StringLock,
    /// The renewal thread's inbox (watchdog leases).
    thread: Option<ThreadInbox>,
}

#[async_trait]
impl LeaseHandle for GuardHold {
    async fn release(self: Box<Self>) -> Result<(), LockError> {
        // The thread is told to stop here, before the server is asked, whatever the answer will be.
        self.core.holds.leave(&self.ticket);
        self.lock
            .release(&self.core.connection, &self.core.events)
            .await
    }

    fn abandon(self: Box<Self>) {
        // The thread releases on its own connection; `leave`'s stop message queues behind this one.
        let handed_over = self.thread.as_ref().is_some_and(ThreadInbox::abandon);
        self.core.holds.leave(&self.ticket);
        if handed_over {
            return;
        }
        // No thread (fixed lease, or it already exited): release on the runtime if there is one.
        acquire::release_in_background(async move {
            self.lock
                .release(&self.core.connection, &self.core.events)
                .await
        });
    }
}
