//! The renewal threads of `redis-guard-thread`: one OS thread per held watchdog lock. A thread waits for
//! its hold's state, then sleeps toward each renewal (`recv_timeout` on its inbox, so a stop wakes it at
//! once) and renews with the string lock's check-and-pexpire on its own blocking connection, opened before
//! the first renewal and bounded by the response timeout and by the local deadline. Each attempt is
//! recorded by `record_renewal`; a failed one drops the connection. Told to abandon the lease, a thread
//! releases it on that connection, so no tokio runtime is needed.

use std::fmt::Display;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::{Duration, Instant};

use crate::error::LockError;
use crate::event::Events;
use crate::lease::{LeaseState, LossReason};
use crate::redis::scripts::ttl_millis;
use crate::redis::string_lock::StringLock;
use crate::redis::transport::connection::{BACKEND, RedisConnection};
use crate::renewal::{
    AfterRenewal, RenewOutcome, RenewTiming, RenewalPlan, StopRenewal, announce_renewal,
    record_renewal,
};

/// What every renewal thread of one client shares, and how to start one.
#[derive(Debug)]
pub(in crate::redis) struct RenewalThreads {
    /// Each thread opens its own connection from this one's client (behind Sentinel, the primary
    /// named last).
    pub(in crate::redis) connection: RedisConnection,
    pub(in crate::redis) plan: RenewalPlan,
    pub(in crate::redis) events: Events,
    /// Set when the client closes: threads exit at their next wake-up without renewing.
    pub(in crate::redis) closed: Arc<AtomicBool>,
    /// Threads alive now.
    pub(in crate::redis) live: Arc<AtomicUsize>,
    /// The OS name of every thread.
    pub(in crate::redis) name: String,
}

impl RenewalThreads {
    /// Starts the renewal thread of `lock`, granted to a request sent at `sent_at`; it waits for the
    /// hold's state ([`ThreadInbox::begin`]) before it sleeps toward its first renewal, one period after
    /// `sent_at`.
    pub(in crate::redis) fn spawn(
        &self,
        lock: &StringLock,
        sent_at: Instant,
    ) -> Result<ThreadInbox, LockError> {
        let thread = RenewalThread {
            link: BlockingLink {
                source: self.connection.clone(),
                key: lock.keys.lock.clone(),
                open: None,
            },
            lock: lock.clone(),
            plan: self.plan,
            first_due: sent_at + self.plan.period,
            events: self.events.clone(),
            closed: self.closed.clone(),
            _alive: ThreadAlive::new(&self.live),
        };
        let (sender, inbox) = mpsc::channel();
        std::thread::Builder::new()
            .name(self.name.clone())
            .spawn(move || thread.run(inbox))
            .map_err(|e| {
                LockError::backend(BACKEND, format!("could not start a renewal thread: {e}"))
            })?;
        Ok(ThreadInbox(sender))
    }
}

/// A renewal thread's inbox.
#[derive(Debug, Clone)]
pub(in crate::redis) struct ThreadInbox(mpsc::Sender<ToThread>);

impl ThreadInbox {
    /// Hands the thread its hold's state; the result stops it (for the `Holds` registry).
    pub(in crate::redis) fn begin(&self, state: Arc<LeaseState>) -> Box<dyn StopRenewal> {
        // A closed inbox means the thread died; the lease then expires at its deadline.
        let _ = self.0.send(ToThread::Begin(state));
        Box::new(ThreadStop(self.0.clone()))
    }

    /// Asks the thread to release the dropped lease on its own connection and exit; false when the
    /// thread has already exited.
    pub(in crate::redis) fn abandon(&self) -> bool {
        self.0.send(ToThread::Abandon).is_ok()
    }
}

/// Messages to a renewal thread.
#[derive(Debug)]
enum ToThread {
    /// The hold is registered: renew this state.
    Begin(Arc<LeaseState>),
    /// Released (the releaser talks to the server) or the client closed: exit now.
    Stop,
    /// The lease was dropped: release on the thread's own connection, then exit.
    Abandon,
}

/// Stops a renewal thread through its channel (for the `Holds` registry).
struct ThreadStop(mpsc::Sender<ToThread>);

impl StopRenewal for ThreadStop {
    fn stop(self: Box<Self>) {
        // A closed channel means the thread has already exited.
        let _ = self.0.send(ToThread::Stop);
    }
}

/// Counts a live renewal thread from before it is spawned until it exits (also by panic).
struct ThreadAlive(Arc<AtomicUsize>);

impl ThreadAlive {
    fn new(count: &Arc<AtomicUsize>) -> Self {
        count.fetch_add(1, Ordering::AcqRel);
        ThreadAlive(count.clone())
    }
}

impl Drop for ThreadAlive {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// A renewal thread's own blocking connection, opened on first use.
struct BlockingLink {
    source: RedisConnection,
    /// The lock's key: in a cluster, the connection goes to its slot's master.
    key: String,
    open: Option<redis::Connection>,
}

impl BlockingLink {
    /// The connection for one request (counted here), opened if needed, with every wait bounded by the
    /// response timeout and `budget`.
    fn get(&mut self, budget: Duration) -> Result<&mut redis::Connection, LockError> {
        let settings = self.source.settings();
        let bound = settings.response_timeout.min(budget);
        let connection = match self.open.take() {
            Some(connection) => connection,
            None => {
                let client = self.source.client_for(self.key.as_bytes());
                let opened =
                    client.get_connection_with_timeout(settings.connect_timeout.min(budget))?;
                self.source.requests().handshake(&client);
                opened
            }
        };
        connection.set_read_timeout(Some(bound))?;
        connection.set_write_timeout(Some(bound))?;
        // The caller sends one request on it.
        self.source.requests().sent(1);
        Ok(self.open.insert(connection))
    }

    /// Drops the connection after a failed renewal (it may be half-way through an answer): the next use
    /// opens a fresh one, behind Sentinel to whichever primary the Sentinels name by then, in a cluster
    /// to whichever master serves the key's slot by then.
    fn reset(&mut self) {
        self.open = None;
        self.source.connection_broke();
    }
}

/// Everything one renewal thread owns.
struct RenewalThread {
    link: BlockingLink,
    lock: StringLock,
    plan: RenewalPlan,
    first_due: Instant,
    events: Events,
    closed: Arc<AtomicBool>,
    _alive: ThreadAlive,
}

impl RenewalThread {
    fn run(mut self, inbox: mpsc::Receiver<ToThread>) {
        let state = match inbox.recv() {
            Ok(ToThread::Begin(state)) => state,
            Ok(ToThread::Abandon) => return self.release_on_exit(),
            Ok(ToThread::Stop) | Err(_) => return,
        };
        let mut due = self.first_due;
        loop {
            announce_renewal(&self.events, &self.lock.keys.name, due);
            match inbox.recv_timeout(due.saturating_duration_since(Instant::now())) {
                Ok(ToThread::Abandon) => return self.release_on_exit(),
                Ok(ToThread::Stop) | Err(RecvTimeoutError::Disconnected) => return,
                Ok(ToThread::Begin(_)) => continue,
                Err(RecvTimeoutError::Timeout) => {}
            }
            if self.closed.load(Ordering::Acquire) || state.has_ended() {
                return;
            }
            let sent_at = Instant::now();
            let result = self.renew_once(state.deadline());
            let timing = RenewTiming {
                scheduled_at: due,
                sent_at,
                done_at: Instant::now(),
                trigger_lag: None,
            };
            let result = result.as_ref().copied().map_err(|e| e as &dyn Display);
            let gone = LossReason::RenewRejected;
            match record_renewal(&state, &self.events, self.plan, timing, result, gone) {
                AfterRenewal::Extended => due = timing.done_at + self.plan.period,
                AfterRenewal::Lost => return,
                AfterRenewal::Retry { at } => {
                    // The connection may be half-way through an answer: start afresh.
                    self.link.reset();
                    due = at;
                }
            }
        }
    }

    /// One check-and-pexpire, bounded by the response timeout and by `deadline`.
    fn renew_once(&mut self, deadline: Instant) -> Result<RenewOutcome, LockError> {
        let budget = deadline.saturating_duration_since(Instant::now());
        if budget < Duration::from_millis(1) {
            return Err(LockError::backend(
                BACKEND,
                "no time left before the local deadline",
            ));
        }
        self.lock
            .renew_blocking(self.link.get(budget)?, ttl_millis(self.plan.ttl))
    }

    /// The lease was dropped: check-and-delete on this thread's connection. Failure leaves the lock to
    /// expire by its TTL, unrenewed.
    fn release_on_exit(mut self) {
        let settings = self.link.source.settings();
        let budget = settings.connect_timeout + settings.response_timeout;
        let Ok(connection) = self.link.get(budget) else {
            return;
        };
        // NotHeld or an error here only means the lease had already gone or will expire.
        let _ = self.lock.release_blocking(connection, &self.events);
    }
}
