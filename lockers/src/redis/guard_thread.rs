//! `redis-guard-thread`: the lock teams write without Redisson, measured against `redis-watchdog`.
//!
//! - The lock is a string at `P{name}` whose value names the holder: `<client id>:<owner>:<nonce>`, with
//!   a fresh random nonce per acquire. Acquire is one script: `SET key value NX PX ttl` and, only when it
//!   succeeded, an `INCR` of the fencing counter `P{name}:fence` (the watchdog's companion key and its
//!   `lib.lua` helper), so a grant and its token are one atomic step.
//! - [`LeaseMode::Watchdog`]: TTL = the watchdog timeout, renewed by **one dedicated OS thread per held
//!   lock** (`std::thread`, named `lb-guard-<first 6 chars of the client id>`). The thread opens its own
//!   blocking connection (`redis::Client::get_connection_with_timeout`) lazily, before its first renewal,
//!   sleeps `timeout × renew_ratio` (an `mpsc::Receiver::recv_timeout`, so a stop wakes it at once), and
//!   renews with a check-and-pexpire script that answers the PTTL it found, or 0 when the value is no
//!   longer ours (→ `lost()` with [`LossReason::RenewRejected`]). A renewal error emits `RenewFailed`,
//!   drops the connection, and is retried every third of a period until the local deadline, then the
//!   lease is lost ([`LossReason::Expired`]). Every blocking call is bounded by the response timeout and
//!   by the local deadline. [`LeaseMode::Fixed`]: that TTL, no thread.
//! - Release is a check-and-delete script ([`LockError::NotHeld`] when the value is not ours) sent on the
//!   client's multiplexed connection; the thread is told to stop first, whatever the answer.
//! - Drop without release sends the thread an *abandon* message: it runs the check-and-delete on its own
//!   blocking connection and exits, so no tokio runtime is needed. A fixed lease (no thread) is released
//!   in the background on the current tokio runtime, if any; otherwise it expires by its TTL.
//! - Waiters poll: each miss sleeps a back-off ([`PollBackoff`]: 10 ms, ×2, capped at 200 ms, ±25 %
//!   jitter by default), never past the caller's wait.
//! - Not re-entrant: a second acquire by the same owner finds the key taken (`SET NX`) and waits like
//!   anyone else.
//!
//! [`RedisGuardThread::live_threads`] says how many renewal threads are alive, so the driver can report
//! what a held lock costs. Closing or dropping the client makes every thread exit at its next wake-up
//! without renewing (its lease then expires).
//!
//! The string-lock pieces here (holder values, the three scripts and their answers, and the bookkeeping
//! of one renewal attempt) are shared with `redis-keyspace`, which stores its locks the same way.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, LazyLock};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use redis::aio::ConnectionManager;

use super::connection::{BACKEND, ConnectionSettings, RedisConnection};
use super::keys::{LockKeys, random_client_id, validate_client_id, validate_prefix};
use super::scripts::{self, LuaScript};
use crate::error::LockError;
use crate::event::{Events, LockEvent};
use crate::lease::{
    AcquireOptions, FencingToken, Lease, LeaseHandle, LeaseMode, LeaseState, LossReason, OwnerId,
};
use crate::locker::{Capabilities, Locker};
use crate::memory::validate_watchdog;
use crate::renewal::{HoldTicket, Holds, RenewOutcome, StopRenewal};

/// The strategy id.
pub const ID: &str = "redis-guard-thread";

// ---------------------------------------------------------------------------------------------------------
// Settings
// ---------------------------------------------------------------------------------------------------------

/// How a waiter polls a held lock: the pause after the n-th miss is `initial × factor^n`, capped at
/// `max`, then scaled by a random factor in `[1 − jitter, 1 + jitter]`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PollBackoff {
    /// Pause after the first miss, > 0 (default 10 ms).
    pub initial: Duration,
    /// Growth per miss, ≥ 1 (default 2).
    pub factor: f64,
    /// Largest pause before jitter, ≥ `initial` (default 200 ms).
    pub max: Duration,
    /// Relative jitter, in [0, 1) (default 0.25: ±25 %), so waiters started together spread out.
    pub jitter: f64,
}

impl Default for PollBackoff {
    fn default() -> Self {
        PollBackoff {
            initial: Duration::from_millis(10),
            factor: 2.0,
            max: Duration::from_millis(200),
            jitter: 0.25,
        }
    }
}

impl PollBackoff {
    /// Checks the settings; a `Config` error names the bad one.
    pub fn validate(&self) -> Result<(), LockError> {
        if self.initial.is_zero() {
            return Err(LockError::Config("poll.initial must be > 0".into()));
        }
        if !(self.factor.is_finite() && self.factor >= 1.0) {
            return Err(LockError::Config(format!(
                "poll.factor must be a finite number ≥ 1, got {}",
                self.factor
            )));
        }
        if self.max < self.initial {
            return Err(LockError::Config(format!(
                "poll.max ({:?}) must be ≥ poll.initial ({:?})",
                self.max, self.initial
            )));
        }
        if !(0.0..1.0).contains(&self.jitter) {
            return Err(LockError::Config(format!(
                "poll.jitter must be in [0, 1), got {}",
                self.jitter
            )));
        }
        Ok(())
    }

    /// The pause after miss number `misses` (0 for the first), before jitter.
    pub fn nominal(&self, misses: u32) -> Duration {
        let grown = self.initial.as_secs_f64() * self.factor.powi(misses.min(64) as i32);
        Duration::from_secs_f64(grown.min(self.max.as_secs_f64()))
    }

    /// The pause after miss number `misses`, with jitter.
    pub fn pause(&self, misses: u32) -> Duration {
        let spread = self.jitter * (rand::random::<f64>() * 2.0 - 1.0);
        self.nominal(misses).mul_f64(1.0 + spread)
    }
}

/// Settings of a [`RedisGuardThread`] client.
#[derive(Debug, Clone, PartialEq)]
pub struct GuardThreadConfig {
    /// TTL of a watchdog lease (default 30 s, as Redisson's watchdog).
    pub watchdog_timeout: Duration,
    /// Renewal period as a fraction of the timeout, in (0, 1) (default 1/3).
    pub renew_ratio: f64,
    /// How waiters poll a held lock.
    pub poll: PollBackoff,
    /// Prepended to every key (default `lockbench:`); no braces.
    pub key_prefix: String,
    /// This client's id, the first part of every holder value; default: a random UUID-shaped string.
    pub client_id: String,
    /// Connect and response timeouts, for the shared connection and for every renewal thread's own.
    pub connection: ConnectionSettings,
}

impl Default for GuardThreadConfig {
    fn default() -> Self {
        GuardThreadConfig {
            watchdog_timeout: Duration::from_secs(30),
            renew_ratio: 1.0 / 3.0,
            poll: PollBackoff::default(),
            key_prefix: "lockbench:".into(),
            client_id: random_client_id(),
            connection: ConnectionSettings::default(),
        }
    }
}

impl GuardThreadConfig {
    /// Checks the settings; a `Config` error names the bad one.
    pub fn validate(&self) -> Result<(), LockError> {
        validate_watchdog(self.watchdog_timeout, self.renew_ratio)?;
        self.poll.validate()?;
        validate_prefix(&self.key_prefix)?;
        validate_client_id(&self.client_id)?;
        self.connection.validate()
    }
}

// ---------------------------------------------------------------------------------------------------------
// Renewal bookkeeping, shared with redis-keyspace
// ---------------------------------------------------------------------------------------------------------

/// When one renewal attempt was due, sent and answered, and (for event-driven renewal) how late its
/// trigger arrived.
#[derive(Debug, Clone, Copy)]
pub(super) struct RenewTiming {
    pub(super) scheduled_at: Instant,
    pub(super) sent_at: Instant,
    pub(super) done_at: Instant,
    pub(super) trigger_lag: Option<Duration>,
}

/// What a renewal loop does after one attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum AfterRenewal {
    /// Extended: plan the next one.
    Extended,
    /// The lease is lost (marked): stop.
    Lost,
    /// Failed before the deadline: retry.
    Retry,
}

/// Records one renewal attempt the way `renew_until_lost` does: on success the deadline moves to
/// `sent_at + ttl` and `Renewed` is emitted; a "not yours" answer marks the lease lost with `gone`; an
/// error emits `RenewFailed` and, once the local deadline has passed, marks the lease `Expired`.
pub(super) fn record_renewal(
    state: &LeaseState,
    events: &Events,
    ttl: Duration,
    timing: RenewTiming,
    result: Result<RenewOutcome, LockError>,
    gone: LossReason,
) -> AfterRenewal {
    match result {
        Ok(RenewOutcome::Extended { remaining_before }) => {
            state.extend_to(timing.sent_at + ttl);
            events.emit(|| LockEvent::Renewed {
                key: state.key().clone(),
                scheduled_at: timing.scheduled_at,
                sent_at: timing.sent_at,
                done_at: timing.done_at,
                remaining_ttl_before: remaining_before,
                granted_ttl: ttl,
                trigger_lag: timing.trigger_lag,
            });
            AfterRenewal::Extended
        }
        Ok(RenewOutcome::Gone) => {
            state.mark_lost(gone);
            AfterRenewal::Lost
        }
        Err(error) => {
            events.emit(|| LockEvent::RenewFailed {
                key: state.key().clone(),
                at: timing.done_at,
                error: error.to_string(),
            });
            if timing.done_at >= state.deadline() {
                state.mark_lost(LossReason::Expired);
                AfterRenewal::Lost
            } else {
                AfterRenewal::Retry
            }
        }
    }
}

/// Retry interval after a failed renewal: a third of the period, at least 5 ms.
pub(super) fn retry_interval(period: Duration) -> Duration {
    (period / 3).max(Duration::from_millis(5))
}

// ---------------------------------------------------------------------------------------------------------
// The renewal thread
// ---------------------------------------------------------------------------------------------------------

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

/// Stops a renewal thread through its channel (for the [`Holds`] registry).
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

/// Everything one renewal thread owns.
struct RenewalThread {
    client: redis::Client,
    settings: ConnectionSettings,
    name: Arc<str>,
    lock: String,
    value: Arc<str>,
    ttl: Duration,
    period: Duration,
    first_due: Instant,
    events: Events,
    closed: Arc<AtomicBool>,
    connection: Option<redis::Connection>,
    _alive: ThreadAlive,
}

impl RenewalThread {
    fn run(mut self, inbox: mpsc::Receiver<ToThread>) {
        let state = match inbox.recv() {
            Ok(ToThread::Begin(state)) => state,
            Ok(ToThread::Abandon) => return self.release_on_exit(),
            Ok(ToThread::Stop) | Err(_) => return,
        };
        let retry = retry_interval(self.period);
        let mut due = self.first_due;
        loop {
            self.events.emit(|| LockEvent::RenewScheduled {
                key: self.name.clone(),
                at: Instant::now(),
                due,
            });
            match inbox.recv_timeout(due.saturating_duration_since(Instant::now())) {
                Ok(ToThread::Abandon) => return self.release_on_exit(),
                Ok(ToThread::Stop) | Err(RecvTimeoutError::Disconnected) => return,
                Ok(ToThread::Begin(_)) => continue,
                Err(RecvTimeoutError::Timeout) => {}
            }
            if self.closed.load(Ordering::Acquire) || state.loss().is_some() {
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
            let gone = LossReason::RenewRejected;
            match record_renewal(&state, &self.events, self.ttl, timing, result, gone) {
                AfterRenewal::Extended => due = timing.done_at + self.period,
                AfterRenewal::Lost => return,
                AfterRenewal::Retry => {
                    // The connection may be half-way through an answer: start afresh.
                    self.connection = None;
                    due = (timing.done_at + retry).min(state.deadline());
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
        let call = renew_call(&self.lock, &self.value, ttl_millis(self.ttl), None);
        let connection = self.connection(budget)?;
        let answer: i64 = call.invoke(connection)?;
        Ok(renew_outcome(answer))
    }

    /// The thread's own blocking connection, opened on first use, with every wait bounded by `budget`.
    fn connection(&mut self, budget: Duration) -> Result<&mut redis::Connection, LockError> {
        let bound = self.settings.response_timeout.min(budget);
        let connection = match self.connection.take() {
            Some(connection) => connection,
            None => self
                .client
                .get_connection_with_timeout(self.settings.connect_timeout.min(budget))?,
        };
        connection.set_read_timeout(Some(bound))?;
        connection.set_write_timeout(Some(bound))?;
        Ok(self.connection.insert(connection))
    }

    /// The lease was dropped: check-and-delete on this thread's connection. Failure leaves the lock to
    /// expire by its TTL, unrenewed.
    fn release_on_exit(mut self) {
        let budget = self.settings.connect_timeout + self.settings.response_timeout;
        let call = release_call(&self.lock, &self.value, None);
        let Ok(connection) = self.connection(budget) else {
            return;
        };
        if call.invoke::<i64>(connection).is_ok_and(|freed| freed == 1) {
            self.events.emit(|| LockEvent::Released {
                key: self.name.clone(),
                at: Instant::now(),
            });
        }
    }
}

// ---------------------------------------------------------------------------------------------------------
// The strategy
// ---------------------------------------------------------------------------------------------------------

/// What the client's leases and renewal threads share.
#[derive(Debug)]
struct Core {
    connection: RedisConnection,
    config: GuardThreadConfig,
    events: Events,
    holds: Holds,
    live_threads: Arc<AtomicUsize>,
    closed: Arc<AtomicBool>,
    thread_name: String,
}

impl Core {
    /// Releases on the multiplexed connection; `NotHeld` when the value was not ours.
    async fn release(&self, keys: &LockKeys, value: &str) -> Result<(), LockError> {
        let mut connection = self.connection.commands();
        if release(&mut connection, &keys.lock, value, None).await? {
            self.events.emit(|| LockEvent::Released {
                key: keys.name.clone(),
                at: Instant::now(),
            });
            Ok(())
        } else {
            Err(LockError::NotHeld {
                key: keys.name.to_string(),
            })
        }
    }
}

/// One client of a Redis server running the `redis-guard-thread` strategy. See the module docs.
#[derive(Debug)]
pub struct RedisGuardThread {
    core: Arc<Core>,
}

impl RedisGuardThread {
    /// What the strategy can do, without connecting (for listings).
    pub const CAPABILITIES: Capabilities = Capabilities {
        reentrant: false,
        fencing: true,
        auto_renew: true,
        fixed_lease: true,
        wait_notify: false,
        lost_signal: true,
        min_ttl: Duration::from_millis(1),
        ttl_granularity: Duration::from_millis(1),
    };

    /// Connects to `url` (`redis://127.0.0.1:6379`) and loads the scripts. An invalid `config` is a
    /// `Config` error; a server that does not answer within the connect timeout is a `Backend` error.
    pub async fn connect(
        url: &str,
        config: GuardThreadConfig,
        events: Events,
    ) -> Result<Self, LockError> {
        config.validate()?;
        let connection = RedisConnection::connect(url, config.connection).await?;
        load_scripts(&mut connection.commands()).await?;
        let tag: String = config.client_id.chars().take(6).collect();
        Ok(RedisGuardThread {
            core: Arc::new(Core {
                connection,
                events,
                holds: Holds::default(),
                live_threads: Arc::default(),
                closed: Arc::default(),
                thread_name: format!("lb-guard-{tag}"),
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
        self.core.live_threads.load(Ordering::Acquire)
    }

    /// The OS name of this client's renewal threads (as `/proc/<pid>/task/*/comm` shows it).
    pub fn thread_name(&self) -> &str {
        &self.core.thread_name
    }

    /// Locks this client currently holds.
    pub fn held_locks(&self) -> usize {
        self.core.holds.len()
    }

    /// Starts the renewal thread of a fresh hold; it waits for the hold's state (sent by
    /// [`Holds::enter`]) before it sleeps toward its first renewal.
    fn spawn_renewal(
        &self,
        keys: &LockKeys,
        value: &Arc<str>,
        sent_at: Instant,
    ) -> Result<mpsc::Sender<ToThread>, LockError> {
        let core = &self.core;
        let period = core
            .config
            .watchdog_timeout
            .mul_f64(core.config.renew_ratio);
        let thread = RenewalThread {
            client: core.connection.client().clone(),
            settings: core.config.connection,
            name: keys.name.clone(),
            lock: keys.lock.clone(),
            value: value.clone(),
            ttl: core.config.watchdog_timeout,
            period,
            first_due: sent_at + period,
            events: core.events.clone(),
            closed: core.closed.clone(),
            connection: None,
            _alive: ThreadAlive::new(&core.live_threads),
        };
        let (sender, inbox) = mpsc::channel();
        std::thread::Builder::new()
            .name(core.thread_name.clone())
            .spawn(move || thread.run(inbox))
            .map_err(|e| {
                LockError::backend(BACKEND, format!("could not start a renewal thread: {e}"))
            })?;
        Ok(sender)
    }

    /// Registers a granted hold and builds its lease. No await: a cancelled acquire either never gets
    /// here or gets a whole lease.
    #[allow(clippy::too_many_arguments)]
    fn grant(
        &self,
        keys: LockKeys,
        owner_id: OwnerId,
        value: Arc<str>,
        token: FencingToken,
        mode: LeaseMode,
        ttl: Duration,
        sent_at: Instant,
    ) -> Result<Lease, LockError> {
        let thread = match mode {
            LeaseMode::Watchdog => match self.spawn_renewal(&keys, &value, sent_at) {
                Ok(sender) => Some(sender),
                Err(error) => {
                    // Granted but unrenewable: give it back now rather than hold it unrenewed.
                    let core = self.core.clone();
                    tokio::spawn(async move {
                        let _ = core.release(&keys, &value).await;
                    });
                    return Err(error);
                }
            },
            LeaseMode::Fixed(_) => None,
        };
        let begin = thread.clone().map(|sender| {
            move |state: Arc<LeaseState>| -> Box<dyn StopRenewal> {
                // A closed inbox means the thread died; the lease then expires at its deadline.
                let _ = sender.send(ToThread::Begin(state));
                Box::new(ThreadStop(sender.clone()))
            }
        });
        let start = begin
            .as_ref()
            .map(|f| f as &dyn Fn(Arc<LeaseState>) -> Box<dyn StopRenewal>);
        let events = &self.core.events;
        // The holder value is unique per acquire, so every hold is its own registry entry.
        let (state, ticket) =
            self.core
                .holds
                .enter(&keys.name, &value, sent_at + ttl, events, start);
        events.emit(|| LockEvent::Acquired {
            key: keys.name.clone(),
            token,
            mode,
            sent_at,
            at: Instant::now(),
        });
        let hold = GuardHold {
            core: self.core.clone(),
            ticket,
            keys,
            value,
            thread,
        };
        Ok(Lease::new(
            owner_id,
            token,
            mode,
            sent_at,
            state,
            Box::new(hold),
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

    async fn acquire(&self, key: &str, opts: &AcquireOptions) -> Result<Lease, LockError> {
        if self.core.closed.load(Ordering::Acquire) {
            return Err(LockError::backend(BACKEND, "client closed"));
        }
        let ttl = match opts.lease {
            LeaseMode::Watchdog => self.core.config.watchdog_timeout,
            LeaseMode::Fixed(d) if d.is_zero() => {
                return Err(LockError::Config("fixed lease must be > 0".into()));
            }
            LeaseMode::Fixed(d) => d,
        };
        let ttl_ms = ttl_millis(ttl);
        let keys = LockKeys::new(&self.core.config.key_prefix, key)?;
        let owner_id = opts.owner.clone().unwrap_or_else(OwnerId::unique);
        let value = holder_value(&self.core.config.client_id, &owner_id);
        let started = Instant::now();
        let give_up = opts.wait.map(|w| started + w);
        let mut misses = 0;
        loop {
            let sent_at = Instant::now();
            let mut connection = self.core.connection.commands();
            if let Attempt::Acquired(token) =
                try_acquire(&mut connection, &keys, &value, ttl_ms, None).await?
            {
                return self.grant(keys, owner_id, value, token, opts.lease, ttl, sent_at);
            }
            let now = Instant::now();
            let Some(give_up) = give_up.filter(|g| now < *g) else {
                return Err(LockError::Timeout {
                    key: key.to_string(),
                    waited: started.elapsed(),
                });
            };
            let pause = self.core.config.poll.pause(misses).min(give_up - now);
            misses = misses.saturating_add(1);
            tokio::time::sleep(pause).await;
        }
    }

    async fn close(&self) {
        self.core.closed.store(true, Ordering::Release);
    }
}

impl Drop for RedisGuardThread {
    /// Renewal threads stop renewing (each exits at its next wake-up); leases still held then expire.
    fn drop(&mut self) {
        self.core.closed.store(true, Ordering::Release);
    }
}

/// A guard-thread lease's release path.
#[derive(Debug)]
struct GuardHold {
    core: Arc<Core>,
    ticket: HoldTicket,
    keys: LockKeys,
    value: Arc<str>,
    /// The renewal thread's inbox (watchdog leases).
    thread: Option<mpsc::Sender<ToThread>>,
}

#[async_trait]
impl LeaseHandle for GuardHold {
    async fn release(self: Box<Self>) -> Result<(), LockError> {
        // The thread is told to stop here, before the server is asked, whatever the answer will be.
        self.core.holds.leave(&self.ticket);
        self.core.release(&self.keys, &self.value).await
    }

    fn abandon(self: Box<Self>) {
        // The thread releases on its own connection; `leave`'s stop message queues behind this one.
        let handed_over = self
            .thread
            .as_ref()
            .is_some_and(|thread| thread.send(ToThread::Abandon).is_ok());
        self.core.holds.leave(&self.ticket);
        if handed_over {
            return;
        }
        // No thread (fixed lease, or it already exited): release on the runtime if there is one;
        // otherwise the lock expires by its TTL.
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                // NotHeld or an error here only means the lease had already gone or will expire.
                let _ = self.core.release(&self.keys, &self.value).await;
            });
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn backoff_grows_caps_and_jitters_within_bounds() {
        let poll = PollBackoff::default();
        let nominal: Vec<u128> = (0..8).map(|n| poll.nominal(n).as_millis()).collect();
        assert_eq!(nominal, [10, 20, 40, 80, 160, 200, 200, 200]);
        for misses in 0..8 {
            let pause = poll.pause(misses);
            let nominal = poll.nominal(misses);
            assert!(pause >= nominal.mul_f64(0.75) && pause <= nominal.mul_f64(1.25));
        }
        assert_eq!(poll.nominal(u32::MAX), poll.max);
    }

    #[test]
    fn each_bad_value_names_its_field() {
        type Spoil = fn(&mut GuardThreadConfig);
        let cases: [(&str, Spoil); 9] = [
            ("watchdog_timeout", |c| c.watchdog_timeout = Duration::ZERO),
            ("renew_ratio", |c| c.renew_ratio = 1.0),
            ("poll.initial", |c| c.poll.initial = Duration::ZERO),
            ("poll.factor", |c| c.poll.factor = 0.5),
            ("poll.factor", |c| c.poll.factor = f64::INFINITY),
            ("poll.max", |c| c.poll.max = Duration::from_millis(1)),
            ("poll.jitter", |c| c.poll.jitter = 1.0),
            ("key_prefix", |c| c.key_prefix = "}".into()),
            ("client_id", |c| c.client_id = "a b".into()),
        ];
        for (field, spoil) in cases {
            let mut config = GuardThreadConfig::default();
            spoil(&mut config);
            let err = config.validate().unwrap_err();
            assert_eq!(err.kind(), "config");
            assert!(err.to_string().contains(field), "{err} should name {field}");
        }
        GuardThreadConfig::default().validate().unwrap();
    }

    #[test]
    fn holder_values_are_unique_per_acquire() {
        let owner = OwnerId::new("w");
        let (a, b) = (holder_value("c", &owner), holder_value("c", &owner));
        assert!(a.starts_with("c:w:") && b.starts_with("c:w:"));
        assert_ne!(a, b);
    }
}
