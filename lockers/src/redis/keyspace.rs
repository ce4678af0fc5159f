//! `redis-keyspace`: renewal driven by Redis keyspace notifications, in the two variants people try.
//!
//! Redis publishes `__keyevent@<db>__:expired` when it deletes an expired key and `__keyevent@<db>__:del`
//! on `DEL`, if `notify-keyspace-events` has `E` (keyevent channels), `x` (expired) and `g` (generic
//! commands, `DEL` among them). At connect the strategy reads the setting (`CONFIG GET`) and adds the
//! flags it lacks (`CONFIG SET`, keeping the user's flags). When it may not (CONFIG renamed or disabled,
//! an ACL), connecting fails with a `Config` error naming `notify-keyspace-events`: it never runs
//! without events.
//!
//! The lock is the token-valued string lock of `redis-guard-thread` (`SET NX PX` + fencing `INCR` in
//! one script, check-and-pexpire, check-and-delete). Each client has one pub/sub connection subscribed
//! to the two keyevent channels; a dispatcher hands each event to the holders and waiters of that key
//! in this client. Every client receives every `expired` and `del` event of the database.
//!
//! - [`Variant::Naive`] (`redis-keyspace-naive`): the holder listens for its lock key's own `expired`
//!   event and re-acquires (`SET NX PX`, same value, same fencing token). By then the key is gone, so a
//!   contender can get in first; the holder learns it only when its re-acquire fails (`lost()` with
//!   [`LossReason::TakenOver`]). **Its belief is optimistic:** the holder trusts the expiry-triggered
//!   re-acquire to keep the key, so every `timeout / 3` it moves its local deadline to `now + timeout`
//!   without asking the server. `is_held()` therefore stays true from the moment the key expires until
//!   the re-acquire's answer arrives — and for good when no `expired` event comes (a `DEL` behind its
//!   back, an event lost while the subscriber was disconnected). This variant fails two conformance
//!   cases by design: `watchdog_lease_outlives_timeout` (a contender gets in at each expiry) and
//!   `lost_when_removed_behind_back` (a `DEL` publishes `del`, not `expired`, so nothing happens).
//! - [`Variant::Shadow`] (`redis-keyspace-shadow`): the acquire script also sets a shadow key
//!   `P{name}:shadow` with a TTL of `timeout × shadow_ratio` (default ⅔); the shadow's `expired` event
//!   triggers a check-and-pexpire of the real lock that also re-arms the shadow. A renewal answered 0
//!   fires `lost()` ([`LossReason::RenewRejected`]); errors are retried until the local deadline
//!   (`RenewFailed`, then `Expired`). No timer backs it up: if the event comes later than the lock's
//!   remaining third (it fires only when the server actually deletes the key — lazily on access, or in
//!   its active expiry cycle, up to ~1/hz late), the local deadline passes and the lease is lost.
//!
//! Every `Renewed` event carries `trigger_lag`: the arrival of the triggering `expired` event minus the
//! watched key's nominal deadline (the send time of the command that set it plus its TTL; the server
//! set it a little later, so this over-states the lag by at most one round trip). `scheduled_at` is
//! that nominal deadline.
//!
//! When the pub/sub connection breaks (`CLIENT KILL TYPE pubsub`, a network blip), events published
//! meanwhile are lost for good. The dispatcher wakes every waiter, reconnects with back-off (50 ms, ×2,
//! up to 1 s) and resubscribes; then every shadow holder renews at once (its shadow may have expired
//! unseen; `trigger_lag` = resubscription − nominal deadline, zero if not yet due), so a gap shorter
//! than the lock's remaining third keeps the lock. The naive holder does nothing on a reconnect: it
//! cannot tell that it missed its key's expiry.
//!
//! Waiters wake on their lock key's `del` and `expired` events (an event wakes every waiter of that key
//! in this client; one of them wins the retry), with a fallback re-check every `waiter_recheck`
//! (default 250 ms) so that a lost event cannot hang them. Not re-entrant (`SET NX`).
//! [`LeaseMode::Fixed`] leases have no shadow and no listener.

use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use futures::StreamExt;
use redis::aio::{ConnectionManager, PubSubSink, PubSubStream};
use tokio::sync::{Notify, mpsc, watch};
use tokio::task::AbortHandle;

use super::connection::{BACKEND, ConnectionSettings, RedisConnection};
use super::guard_thread::{
    AfterRenewal, Attempt, RenewTiming, Shadow, holder_value, load_scripts, record_renewal,
    release, renew, retry_interval, try_acquire, ttl_millis,
};
use super::keys::{LockKeys, random_client_id, validate_client_id, validate_prefix};
use super::pubsub::Wakeup;
use crate::error::LockError;
use crate::event::{Events, LockEvent};
use crate::lease::{
    AcquireOptions, FencingToken, Lease, LeaseHandle, LeaseMode, LeaseState, LossReason, OwnerId,
};
use crate::locker::{Capabilities, Locker};
use crate::memory::validate_watchdog;
use crate::renewal::{HoldTicket, Holds, RenewOutcome, StopRenewal};

/// The id of the naive variant.
pub const NAIVE_ID: &str = "redis-keyspace-naive";
/// The id of the shadow-key variant.
pub const SHADOW_ID: &str = "redis-keyspace-shadow";

/// The `notify-keyspace-events` flags the strategy needs: keyevent channels, expired events, generic
/// commands (`DEL`).
pub const NEEDED_NOTIFY_FLAGS: &str = "Exg";

// ---------------------------------------------------------------------------------------------------------
// Settings
// ---------------------------------------------------------------------------------------------------------

/// Which keyspace design a [`RedisKeyspace`] client runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Variant {
    /// Re-acquire when the lock key's own `expired` event arrives (flawed on purpose).
    Naive,
    /// Renew when a shorter-lived shadow key's `expired` event arrives.
    Shadow,
}

impl Variant {
    /// Both variants.
    pub const ALL: [Variant; 2] = [Variant::Naive, Variant::Shadow];

    /// The strategy id of this variant.
    pub const fn id(self) -> &'static str {
        match self {
            Variant::Naive => NAIVE_ID,
            Variant::Shadow => SHADOW_ID,
        }
    }

    /// What this variant can do, without connecting (for listings). Both declare a lost signal: the naive
    /// holder learns of a takeover when its re-acquire fails, the shadow holder when a renewal is
    /// answered "not yours" — each before its local deadline.
    pub const fn capabilities(self) -> Capabilities {
        Capabilities {
            reentrant: false,
            fencing: true,
            auto_renew: true,
            fixed_lease: true,
            wait_notify: true,
            lost_signal: true,
            min_ttl: Duration::from_millis(1),
            ttl_granularity: Duration::from_millis(1),
        }
    }
}

/// Settings of a [`RedisKeyspace`] client.
#[derive(Debug, Clone, PartialEq)]
pub struct KeyspaceConfig {
    /// TTL of a watchdog lease (default 30 s).
    pub watchdog_timeout: Duration,
    /// Shadow key TTL as a fraction of the timeout, in (0, 1) (default 2/3; shadow variant only).
    pub shadow_ratio: f64,
    /// A waiter re-checks the lock this often even without an event (default 250 ms), so a lost event
    /// delays it at most this long.
    pub waiter_recheck: Duration,
    /// Prepended to every key (default `lockbench:`); no braces.
    pub key_prefix: String,
    /// This client's id, the first part of every holder value; default: a random UUID-shaped string.
    pub client_id: String,
    /// Connect and response timeouts.
    pub connection: ConnectionSettings,
}

impl Default for KeyspaceConfig {
    fn default() -> Self {
        KeyspaceConfig {
            watchdog_timeout: Duration::from_secs(30),
            shadow_ratio: 2.0 / 3.0,
            waiter_recheck: Duration::from_millis(250),
            key_prefix: "lockbench:".into(),
            client_id: random_client_id(),
            connection: ConnectionSettings::default(),
        }
    }
}

impl KeyspaceConfig {
    /// Checks the settings; a `Config` error names the bad one.
    pub fn validate(&self) -> Result<(), LockError> {
        if !(self.shadow_ratio > 0.0 && self.shadow_ratio < 1.0) {
            return Err(LockError::Config(format!(
                "shadow_ratio must be in (0, 1), got {}",
                self.shadow_ratio
            )));
        }
        validate_watchdog(self.watchdog_timeout, self.shadow_ratio)?;
        if self.shadow_ttl() < Duration::from_millis(1) {
            return Err(LockError::Config(format!(
                "watchdog_timeout × shadow_ratio must be ≥ 1 ms, got {:?}",
                self.shadow_ttl()
            )));
        }
        if self.waiter_recheck.is_zero() {
            return Err(LockError::Config("waiter_recheck must be > 0".into()));
        }
        validate_prefix(&self.key_prefix)?;
        validate_client_id(&self.client_id)?;
        self.connection.validate()
    }

    /// The shadow key's TTL: `watchdog_timeout × shadow_ratio`.
    pub fn shadow_ttl(&self) -> Duration {
        self.watchdog_timeout.mul_f64(self.shadow_ratio)
    }
}

// ---------------------------------------------------------------------------------------------------------
// Server-side notifications
// ---------------------------------------------------------------------------------------------------------

/// The flags of [`NEEDED_NOTIFY_FLAGS`] that `current` lacks (`A` stands for every class, `x` and `g`
/// among them, but not for `E`).
fn missing_notify_flags(current: &str) -> String {
    NEEDED_NOTIFY_FLAGS
        .chars()
        .filter(|flag| !(current.contains(*flag) || (*flag != 'E' && current.contains('A'))))
        .collect()
}

fn notify_config_error(what: &str, error: impl std::fmt::Display) -> LockError {
    LockError::Config(format!(
        "redis-keyspace needs the server setting notify-keyspace-events to include \
         \"{NEEDED_NOTIFY_FLAGS}\"; {what} failed: {error} (set it in redis.conf or allow CONFIG)"
    ))
}

async fn read_notify_flags(connection: &mut ConnectionManager) -> Result<String, LockError> {
    let reply: HashMap<String, String> = redis::cmd("CONFIG")
        .arg("GET")
        .arg("notify-keyspace-events")
        .query_async(connection)
        .await
        .map_err(|e| notify_config_error("CONFIG GET notify-keyspace-events", e))?;
    reply
        .get("notify-keyspace-events")
        .cloned()
        .ok_or_else(|| notify_config_error("CONFIG GET notify-keyspace-events", "no such setting"))
}

/// Makes sure the server publishes the events the strategy needs, adding missing flags to the user's.
/// Returns the setting in force.
async fn ensure_notifications(connection: &mut ConnectionManager) -> Result<String, LockError> {
    let current = read_notify_flags(connection).await?;
    let missing = missing_notify_flags(&current);
    if missing.is_empty() {
        return Ok(current);
    }
    let wanted = format!("{current}{missing}");
    redis::cmd("CONFIG")
        .arg("SET")
        .arg("notify-keyspace-events")
        .arg(&wanted)
        .query_async::<()>(connection)
        .await
        .map_err(|e| {
            notify_config_error(&format!("CONFIG SET notify-keyspace-events {wanted}"), e)
        })?;
    let now = read_notify_flags(connection).await?;
    let still_missing = missing_notify_flags(&now);
    if still_missing.is_empty() {
        Ok(now)
    } else {
        Err(notify_config_error(
            "CONFIG SET notify-keyspace-events",
            format!("the server kept {now:?}, without {still_missing:?}"),
        ))
    }
}

// ---------------------------------------------------------------------------------------------------------
// Key events: one pub/sub connection per client, dispatched by key
// ---------------------------------------------------------------------------------------------------------

/// What the dispatcher tells a holder.
#[derive(Debug, Clone, Copy)]
enum Signal {
    /// The watched key's `expired` event arrived at `at`.
    Expired { at: Instant },
    /// The subscription broke: events are being lost.
    Disconnected,
    /// Subscribed again at `at`; events published in between are gone.
    Resubscribed { at: Instant },
}

#[derive(Default)]
struct Listeners {
    waiters: usize,
    wake: Arc<Notify>,
    holders: Vec<(u64, mpsc::UnboundedSender<Signal>)>,
}

/// This client's listeners, by server key.
#[derive(Default)]
struct Table {
    keys: Mutex<HashMap<Arc<str>, Listeners>>,
    next_holder: AtomicU64,
}

impl Table {
    fn lock(&self) -> MutexGuard<'_, HashMap<Arc<str>, Listeners>> {
        self.keys.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn expired(&self, key: &str, at: Instant) {
        if let Some(l) = self.lock().get(key) {
            l.wake.notify_waiters();
            for (_, holder) in &l.holders {
                // A closed receiver is a holder that is leaving.
                let _ = holder.send(Signal::Expired { at });
            }
        }
    }

    fn deleted(&self, key: &str) {
        if let Some(l) = self.lock().get(key) {
            l.wake.notify_waiters();
        }
    }

    /// Tells every holder `signal` and wakes every waiter (a release may have been missed).
    fn broadcast(&self, signal: Signal) {
        for l in self.lock().values() {
            l.wake.notify_waiters();
            for (_, holder) in &l.holders {
                let _ = holder.send(signal);
            }
        }
    }

    fn forget_if_unused(keys: &mut HashMap<Arc<str>, Listeners>, key: &str) {
        if keys
            .get(key)
            .is_some_and(|l| l.waiters == 0 && l.holders.is_empty())
        {
            keys.remove(key);
        }
    }
}

/// A waiter's interest in a key's `del` and `expired` events; dropping it leaves.
struct KeyWatch {
    table: Arc<Table>,
    key: Arc<str>,
    wake: Arc<Notify>,
}

impl KeyWatch {
    /// A wake-up for the key's next event, armed now (before the attempt it must not miss).
    fn arm(&self) -> Wakeup {
        let mut wakeup = Box::pin(self.wake.clone().notified_owned());
        wakeup.as_mut().enable();
        wakeup
    }
}

impl Drop for KeyWatch {
    fn drop(&mut self) {
        let mut keys = self.table.lock();
        if let Some(l) = keys.get_mut(&self.key) {
            l.waiters -= 1;
        }
        Table::forget_if_unused(&mut keys, &self.key);
    }
}

/// A holder's registration for a key's `expired` events; dropping it leaves.
struct HolderWatch {
    table: Arc<Table>,
    key: Arc<str>,
    id: u64,
}

impl Drop for HolderWatch {
    fn drop(&mut self) {
        let mut keys = self.table.lock();
        if let Some(l) = keys.get_mut(&self.key) {
            l.holders.retain(|(id, _)| *id != self.id);
        }
        Table::forget_if_unused(&mut keys, &self.key);
    }
}

/// The two keyevent channels of one database.
#[derive(Debug, Clone)]
struct Channels {
    expired: String,
    del: String,
}

impl Channels {
    fn of_db(db: i64) -> Self {
        Channels {
            expired: format!("__keyevent@{db}__:expired"),
            del: format!("__keyevent@{db}__:del"),
        }
    }
}

/// One live subscription: the sink is kept so the connection stays open.
type Link = (PubSubSink, PubSubStream);

async fn subscribe(
    client: &redis::Client,
    settings: ConnectionSettings,
    channels: &Channels,
) -> Result<Link, LockError> {
    let subscribing = async {
        let pubsub = client.get_async_pubsub().await?;
        let (mut sink, stream) = pubsub.split();
        sink.subscribe(&[&channels.expired, &channels.del]).await?;
        Ok::<_, LockError>((sink, stream))
    };
    match tokio::time::timeout(settings.connect_timeout, subscribing).await {
        Ok(link) => link,
        Err(_elapsed) => Err(LockError::backend(
            BACKEND,
            format!(
                "keyevent subscription not confirmed within {:?}",
                settings.connect_timeout
            ),
        )),
    }
}

const FIRST_BACKOFF: Duration = Duration::from_millis(50);
const MAX_BACKOFF: Duration = Duration::from_secs(1);

/// Delivers events by key until the client goes; on a break, tells everyone and resubscribes.
async fn dispatch(
    table: Weak<Table>,
    client: redis::Client,
    settings: ConnectionSettings,
    channels: Channels,
    mut link: Link,
    reconnects: Arc<AtomicU64>,
) {
    loop {
        let (sink, mut stream) = link;
        while let Some(message) = stream.next().await {
            let at = Instant::now();
            let Some(table) = table.upgrade() else { return };
            // Keys that are not UTF-8 are not ours.
            let Ok(key) = std::str::from_utf8(message.get_payload_bytes()) else {
                continue;
            };
            if message.get_channel_name() == channels.expired {
                table.expired(key, at);
            } else {
                table.deleted(key);
            }
        }
        drop(sink);
        let Some(live) = table.upgrade() else { return };
        live.broadcast(Signal::Disconnected);
        drop(live);
        let mut backoff = FIRST_BACKOFF;
        link = loop {
            if table.strong_count() == 0 {
                return;
            }
            match subscribe(&client, settings, &channels).await {
                Ok(link) => break link,
                Err(_) => {
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(MAX_BACKOFF);
                }
            }
        };
        reconnects.fetch_add(1, Ordering::Relaxed);
        let Some(live) = table.upgrade() else { return };
        live.broadcast(Signal::Resubscribed { at: Instant::now() });
    }
}

/// One client's keyevent subscription and its listeners.
struct KeyEvents {
    table: Arc<Table>,
    dispatcher: AbortHandle,
    reconnects: Arc<AtomicU64>,
}

impl std::fmt::Debug for KeyEvents {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KeyEvents")
            .field("keys", &self.table.lock().len())
            .field("reconnects", &self.reconnects.load(Ordering::Relaxed))
            .finish()
    }
}

impl KeyEvents {
    /// Subscribes (confirmed before it returns) and starts the dispatcher.
    async fn start(
        client: redis::Client,
        settings: ConnectionSettings,
        db: i64,
    ) -> Result<Self, LockError> {
        let channels = Channels::of_db(db);
        let link = subscribe(&client, settings, &channels).await?;
        let table = Arc::new(Table::default());
        let reconnects = Arc::new(AtomicU64::new(0));
        let dispatcher = tokio::spawn(dispatch(
            Arc::downgrade(&table),
            client,
            settings,
            channels,
            link,
            reconnects.clone(),
        ));
        Ok(KeyEvents {
            table,
            dispatcher: dispatcher.abort_handle(),
            reconnects,
        })
    }

    fn watch(&self, key: &str) -> KeyWatch {
        let key: Arc<str> = key.into();
        let mut keys = self.table.lock();
        let l = keys.entry(key.clone()).or_default();
        l.waiters += 1;
        let wake = l.wake.clone();
        drop(keys);
        KeyWatch {
            table: self.table.clone(),
            key,
            wake,
        }
    }

    fn hold(&self, key: &str) -> (HolderWatch, mpsc::UnboundedReceiver<Signal>) {
        let key: Arc<str> = key.into();
        let id = self.table.next_holder.fetch_add(1, Ordering::Relaxed);
        let (sender, signals) = mpsc::unbounded_channel();
        self.table
            .lock()
            .entry(key.clone())
            .or_default()
            .holders
            .push((id, sender));
        let watch = HolderWatch {
            table: self.table.clone(),
            key,
            id,
        };
        (watch, signals)
    }
}

impl Drop for KeyEvents {
    fn drop(&mut self) {
        self.dispatcher.abort();
    }
}

// ---------------------------------------------------------------------------------------------------------
// Holders
// ---------------------------------------------------------------------------------------------------------

/// What a holder task needs (not the client itself, so a dropped client is not kept alive by its holds).
#[derive(Clone)]
struct Renewer {
    commands: ConnectionManager,
    events: Events,
    ttl: Duration,
    shadow_ttl: Duration,
    period: Duration,
}

/// One held watchdog lock, as its holder task sees it.
struct Held {
    state: Arc<LeaseState>,
    lock: String,
    value: Arc<str>,
    /// The shadow key (shadow variant).
    shadow: Option<String>,
    /// Sent time + TTL of the watched key (the shadow, or the lock for the naive variant).
    nominal: Instant,
}

/// Why a holder task's wait ended.
enum Woken {
    /// The trigger for a renewal (an expiry event or a resubscription) arrived at this time.
    Trigger(Instant),
    /// The lease is lost or the client closed: stop.
    Stop,
}

impl Renewer {
    /// The shadow variant: renew on each shadow expiry, until lost or stopped.
    async fn shadow_loop(
        self,
        mut held: Held,
        mut signals: mpsc::UnboundedReceiver<Signal>,
        mut closed: watch::Receiver<bool>,
    ) {
        let Some(shadow_key) = held.shadow.clone() else {
            return;
        };
        let shadow = Shadow {
            key: &shadow_key,
            ttl_ms: ttl_millis(self.shadow_ttl),
        };
        loop {
            self.scheduled(&held);
            let trigger = match self.wait_shadow(&held, &mut signals, &mut closed).await {
                Woken::Trigger(at) => at,
                Woken::Stop => return,
            };
            let lag = trigger.saturating_duration_since(held.nominal);
            let ttl_ms = ttl_millis(self.ttl);
            let renewing = || {
                let mut commands = self.commands.clone();
                let (lock, value) = (held.lock.clone(), held.value.clone());
                async move { renew(&mut commands, &lock, &value, ttl_ms, Some(shadow)).await }
            };
            match self
                .renew_until_done(&held, lag, &mut closed, renewing, LossReason::RenewRejected)
                .await
            {
                Some(sent_at) => held.nominal = sent_at + self.shadow_ttl,
                None => return,
            }
        }
    }

    /// Waits for the shadow's expiry (or a resubscription); marks the lease lost if its deadline passes
    /// first.
    async fn wait_shadow(
        &self,
        held: &Held,
        signals: &mut mpsc::UnboundedReceiver<Signal>,
        closed: &mut watch::Receiver<bool>,
    ) -> Woken {
        loop {
            let deadline = held.state.deadline();
            tokio::select! {
                signal = signals.recv() => match signal {
                    Some(Signal::Expired { at } | Signal::Resubscribed { at }) => return Woken::Trigger(at),
                    Some(Signal::Disconnected) => {}
                    None => {
                        let why = "keyspace event subscription ended".to_owned();
                        held.state.mark_lost(LossReason::ChannelClosed(why));
                        return Woken::Stop;
                    }
                },
                _ = tokio::time::sleep_until(deadline.into()) => {
                    if Instant::now() >= held.state.deadline() {
                        held.state.mark_lost(LossReason::Expired);
                        return Woken::Stop;
                    }
                }
                _ = closed.wait_for(|closed| *closed) => return Woken::Stop,
            }
        }
    }

    /// The naive variant: re-acquire on each expiry of the lock itself; between expiries, extend the
    /// local belief without asking the server.
    async fn naive_loop(
        self,
        mut held: Held,
        mut signals: mpsc::UnboundedReceiver<Signal>,
        mut closed: watch::Receiver<bool>,
    ) {
        let mut belief =
            tokio::time::interval_at((Instant::now() + self.period).into(), self.period);
        belief.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            self.scheduled(&held);
            let trigger = loop {
                tokio::select! {
                    signal = signals.recv() => match signal {
                        Some(Signal::Expired { at }) => break at,
                        // Naive: it cannot tell that an expiry was missed while disconnected.
                        Some(Signal::Disconnected | Signal::Resubscribed { .. }) => {}
                        None => {
                            let why = "keyspace event subscription ended".to_owned();
                            held.state.mark_lost(LossReason::ChannelClosed(why));
                            return;
                        }
                    },
                    _ = belief.tick() => held.state.extend_to(Instant::now() + self.ttl),
                    _ = closed.wait_for(|closed| *closed) => return,
                }
            };
            let lag = trigger.saturating_duration_since(held.nominal);
            let ttl_ms = ttl_millis(self.ttl);
            let reacquiring = || {
                let mut commands = self.commands.clone();
                let (lock, value) = (held.lock.clone(), held.value.clone());
                async move { reacquire(&mut commands, &lock, &value, ttl_ms).await }
            };
            match self
                .renew_until_done(&held, lag, &mut closed, reacquiring, LossReason::TakenOver)
                .await
            {
                Some(sent_at) => held.nominal = sent_at + self.ttl,
                None => return,
            }
        }
    }

    /// Runs `attempt` until it extends the lease (returns its send time) or the lease is lost or the
    /// client closes (returns `None`), recording each try.
    async fn renew_until_done<F, Fut>(
        &self,
        held: &Held,
        lag: Duration,
        closed: &mut watch::Receiver<bool>,
        mut attempt: F,
        gone: LossReason,
    ) -> Option<Instant>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<RenewOutcome, LockError>>,
    {
        loop {
            let sent_at = Instant::now();
            let deadline = held.state.deadline();
            let result = match tokio::time::timeout_at(deadline.into(), attempt()).await {
                Ok(result) => result,
                Err(_elapsed) => Err(LockError::backend(
                    BACKEND,
                    "renewal got no answer before the local deadline",
                )),
            };
            let timing = RenewTiming {
                scheduled_at: held.nominal,
                sent_at,
                done_at: Instant::now(),
                trigger_lag: Some(lag),
            };
            match record_renewal(
                &held.state,
                &self.events,
                self.ttl,
                timing,
                result,
                gone.clone(),
            ) {
                AfterRenewal::Extended => return Some(sent_at),
                AfterRenewal::Lost => return None,
                AfterRenewal::Retry => {
                    let retry_at =
                        (timing.done_at + retry_interval(self.period)).min(held.state.deadline());
                    tokio::select! {
                        _ = tokio::time::sleep_until(retry_at.into()) => {}
                        _ = closed.wait_for(|closed| *closed) => return None,
                    }
                }
            }
        }
    }

    fn scheduled(&self, held: &Held) {
        self.events.emit(|| LockEvent::RenewScheduled {
            key: held.state.key().clone(),
            at: Instant::now(),
            due: held.nominal,
        });
    }
}

/// The naive re-acquire: a plain `SET NX PX` with the holder's value (the key is already gone).
async fn reacquire(
    commands: &mut ConnectionManager,
    lock: &str,
    value: &str,
    ttl_ms: u64,
) -> Result<RenewOutcome, LockError> {
    let set: Option<String> = redis::cmd("SET")
        .arg(lock)
        .arg(value)
        .arg("NX")
        .arg("PX")
        .arg(ttl_ms)
        .query_async(commands)
        .await?;
    Ok(match set {
        Some(_ok) => RenewOutcome::Extended {
            remaining_before: Some(Duration::ZERO),
        },
        None => RenewOutcome::Gone,
    })
}

// ---------------------------------------------------------------------------------------------------------
// The strategy
// ---------------------------------------------------------------------------------------------------------

/// What the client's leases share.
#[derive(Debug)]
struct Core {
    connection: RedisConnection,
    config: KeyspaceConfig,
    variant: Variant,
    events: Events,
    holds: Holds,
}

impl Core {
    async fn release(&self, held: &HeldKeys, value: &str) -> Result<(), LockError> {
        let mut commands = self.connection.commands();
        let shadow = held.shadow.as_deref();
        if release(&mut commands, &held.keys.lock, value, shadow).await? {
            self.events.emit(|| LockEvent::Released {
                key: held.keys.name.clone(),
                at: Instant::now(),
            });
            Ok(())
        } else {
            Err(LockError::NotHeld {
                key: held.keys.name.to_string(),
            })
        }
    }
}

/// A lock's keys, with the shadow key when this hold has one.
#[derive(Debug)]
struct HeldKeys {
    keys: LockKeys,
    shadow: Option<String>,
}

/// The shadow key of a lock: `P{name}:shadow`, in the lock's hash slot.
fn shadow_key(keys: &LockKeys) -> String {
    format!("{}:shadow", keys.lock)
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
    /// connect timeout is a `Backend` error.
    pub async fn connect(
        url: &str,
        variant: Variant,
        config: KeyspaceConfig,
        events: Events,
    ) -> Result<Self, LockError> {
        config.validate()?;
        let connection = RedisConnection::connect(url, config.connection).await?;
        let mut commands = connection.commands();
        let notify_flags = ensure_notifications(&mut commands).await?;
        load_scripts(&mut commands).await?;
        let client = connection.client().clone();
        let db = client.get_connection_info().redis_settings().db();
        let key_events = KeyEvents::start(client, config.connection, db).await?;
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
        self.key_events.reconnects.load(Ordering::Relaxed)
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
            ttl: config.watchdog_timeout,
            shadow_ttl: config.shadow_ttl(),
            period: config.watchdog_timeout / 3,
        }
    }

    /// Registers the holder's listener and starts its task. No await.
    fn start_holder(
        &self,
        held: &HeldKeys,
        value: &Arc<str>,
        sent_at: Instant,
        state: Arc<LeaseState>,
    ) -> Box<dyn StopRenewal> {
        let renewer = self.renewer();
        let closed = self.closed.subscribe();
        let (watched, nominal) = match &held.shadow {
            Some(shadow) => (shadow.as_str(), sent_at + renewer.shadow_ttl),
            None => (held.keys.lock.as_str(), sent_at + renewer.ttl),
        };
        let (registration, signals) = self.key_events.hold(watched);
        let task_held = Held {
            state,
            lock: held.keys.lock.clone(),
            value: value.clone(),
            shadow: held.shadow.clone(),
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
    #[allow(clippy::too_many_arguments)]
    fn grant(
        &self,
        held: HeldKeys,
        owner_id: OwnerId,
        value: Arc<str>,
        token: FencingToken,
        mode: LeaseMode,
        ttl: Duration,
        sent_at: Instant,
    ) -> Lease {
        let begin = |state| self.start_holder(&held, &value, sent_at, state);
        let start: Option<&dyn Fn(Arc<LeaseState>) -> Box<dyn StopRenewal>> = match mode {
            LeaseMode::Watchdog => Some(&begin),
            LeaseMode::Fixed(_) => None,
        };
        let events = &self.core.events;
        let (state, ticket) =
            self.core
                .holds
                .enter(&held.keys.name, &value, sent_at + ttl, events, start);
        events.emit(|| LockEvent::Acquired {
            key: held.keys.name.clone(),
            token,
            mode,
            sent_at,
            at: Instant::now(),
        });
        let hold = KeyspaceHold {
            core: self.core.clone(),
            ticket,
            held,
            value,
        };
        Lease::new(owner_id, token, mode, sent_at, state, Box::new(hold))
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
            return Err(LockError::backend(BACKEND, "client closed"));
        }
        let config = &self.core.config;
        let ttl = match opts.lease {
            LeaseMode::Watchdog => config.watchdog_timeout,
            LeaseMode::Fixed(d) if d.is_zero() => {
                return Err(LockError::Config("fixed lease must be > 0".into()));
            }
            LeaseMode::Fixed(d) => d,
        };
        let ttl_ms = ttl_millis(ttl);
        let keys = LockKeys::new(&config.key_prefix, key)?;
        let shadow = match (self.core.variant, opts.lease) {
            (Variant::Shadow, LeaseMode::Watchdog) => Some(shadow_key(&keys)),
            _ => None,
        };
        let shadow_arg = shadow.as_deref().map(|key| Shadow {
            key,
            ttl_ms: ttl_millis(config.shadow_ttl()),
        });
        let owner_id = opts.owner.clone().unwrap_or_else(OwnerId::unique);
        let value = holder_value(&config.client_id, &owner_id);
        let started = Instant::now();
        let give_up = opts.wait.map(|w| started + w);
        // Joined before the first attempt, so a release right after it still wakes us.
        let watch = opts.wait.map(|_| self.key_events.watch(&keys.lock));
        loop {
            let wakeup = watch.as_ref().map(KeyWatch::arm);
            let sent_at = Instant::now();
            let mut commands = self.core.connection.commands();
            if let Attempt::Acquired(token) =
                try_acquire(&mut commands, &keys, &value, ttl_ms, shadow_arg).await?
            {
                let held = HeldKeys { keys, shadow };
                return Ok(self.grant(held, owner_id, value, token, opts.lease, ttl, sent_at));
            }
            let now = Instant::now();
            let (Some(give_up), Some(wakeup)) = (give_up.filter(|g| now < *g), wakeup) else {
                return Err(LockError::Timeout {
                    key: key.to_string(),
                    waited: started.elapsed(),
                });
            };
            let recheck_at = (now + config.waiter_recheck).min(give_up);
            tokio::select! {
                _ = wakeup => {}
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
        self.key_events.dispatcher.abort();
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
    held: HeldKeys,
    value: Arc<str>,
}

#[async_trait]
impl LeaseHandle for KeyspaceHold {
    async fn release(self: Box<Self>) -> Result<(), LockError> {
        // The holder task stops here, before the server is asked, whatever the answer will be.
        self.core.holds.leave(&self.ticket);
        self.core.release(&self.held, &self.value).await
    }

    fn abandon(self: Box<Self>) {
        self.core.holds.leave(&self.ticket);
        // Outside a runtime nothing can be sent: the lock expires by its TTL, unrenewed.
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                // NotHeld or an error here only means the lease had already gone or will expire.
                let _ = self.core.release(&self.held, &self.value).await;
            });
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn missing_flags_respect_what_the_user_set() {
        assert_eq!(missing_notify_flags(""), "Exg");
        assert_eq!(missing_notify_flags("Kl"), "Exg");
        assert_eq!(missing_notify_flags("xE"), "g");
        assert_eq!(missing_notify_flags("AKE"), "");
        assert_eq!(missing_notify_flags("AK"), "E");
        assert_eq!(missing_notify_flags("gxE"), "");
    }

    #[test]
    fn each_bad_value_names_its_field() {
        type Spoil = fn(&mut KeyspaceConfig);
        let cases: [(&str, Spoil); 7] = [
            ("watchdog_timeout", |c| c.watchdog_timeout = Duration::ZERO),
            ("shadow_ratio", |c| c.shadow_ratio = 0.0),
            ("shadow_ratio", |c| c.shadow_ratio = f64::NAN),
            ("≥ 1 ms", |c| {
                c.watchdog_timeout = Duration::from_micros(100)
            }),
            ("waiter_recheck", |c| c.waiter_recheck = Duration::ZERO),
            ("key_prefix", |c| c.key_prefix = "{".into()),
            ("client_id", |c| c.client_id = String::new()),
        ];
        for (field, spoil) in cases {
            let mut config = KeyspaceConfig::default();
            spoil(&mut config);
            let err = config.validate().unwrap_err();
            assert_eq!(err.kind(), "config");
            assert!(err.to_string().contains(field), "{err} should name {field}");
        }
        KeyspaceConfig::default().validate().unwrap();
    }

    #[test]
    fn variants_report_their_ids() {
        assert_eq!(Variant::Naive.id(), NAIVE_ID);
        assert_eq!(Variant::Shadow.id(), SHADOW_ID);
        assert!(Variant::ALL.iter().all(|v| v.capabilities().wait_notify));
    }
}
