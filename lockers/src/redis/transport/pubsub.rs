//! One pub/sub connection per client (in a cluster, per master for keyspace events: see
//! [`PubSub::start_on`]), shared by everything of that client that listens (Redisson's
//! `LockPubSub`, generalised): a dispatcher task subscribes a channel when its first member arrives,
//! unsubscribes it when its last member leaves (leaving is a member's `Drop`, so also when a waiting
//! acquire future is dropped), and hands each message to the channel's members. A channel has two kinds
//! of member:
//!
//! - **waiters** ([`PubSub::wait_on`], the watchdog's unlock channels): a message wakes ONE waiter of the
//!   channel, as Redisson's latch release does (one unlock lets one holder in; waking every waiter would
//!   only make the others retry and fail). A wake-up that lands on a waiter that has gone is passed on to
//!   the next one (tokio's `Notify` does this).
//! - **listeners** ([`PubSub::listen`], keyspace's keyevent channels): every message is handed to the
//!   [`Listener`] with its payload and arrival time, and the listener is told once when the connection
//!   breaks and once when its channels are subscribed again.
//!
//! The connection is opened when the first channel is wanted; connecting and subscribing what is wanted
//! are bounded by the connect timeout together. If it breaks, every waiter is woken (a release may have
//! been missed), every listener is told, channels are marked unconfirmed, and after a pause of 50 ms the
//! dispatcher reconnects (failures back off ×2 up to 1 s) and resubscribes every wanted channel; then
//! every listener is told it is subscribed again. Members never depend on it alone: waiters also wake
//! when the lock's TTL runs out, holders when their local deadline passes.
//!
//! Subscribe and unsubscribe requests go to the dispatcher through one queue, in the order the channel
//! table changed, so a channel subscribed, left and subscribed again ends up subscribed.

use std::collections::HashMap;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::{Duration, Instant};

use futures::StreamExt;
use tokio::sync::futures::OwnedNotified;
use tokio::sync::{Notify, mpsc, watch};
use tokio::task::AbortHandle;

use super::client::RequestCount;
use super::connection::{ConnectionSettings, RedisConnection};
use crate::error::LockError;

/// A wake-up armed before a retry, so a message that arrives during the retry is not missed.
pub(crate) type Wakeup = Pin<Box<OwnedNotified>>;

/// A wake-up for `notify`'s next notification, armed now.
pub(crate) fn arm(notify: &Arc<Notify>) -> Wakeup {
    let mut wakeup = Box::pin(notify.clone().notified_owned());
    wakeup.as_mut().enable();
    wakeup
}

/// What a listening member is told. Called on the dispatcher task: return quickly, never block.
pub(crate) trait Listener: Send + Sync {
    /// A message on one of its channels, received at `at`.
    fn message(&self, channel: &str, payload: &[u8], at: Instant);
    /// The connection broke: messages published from now on are lost until [`Self::resubscribed`].
    fn disconnected(&self);
    /// Its channels are subscribed again on a new connection, confirmed at `at`.
    fn resubscribed(&self, at: Instant);
}

struct Channel {
    /// Waiter memberships.
    waiters: usize,
    /// Wakes one waiter per message.
    wake: Arc<Notify>,
    /// Listener memberships, by id.
    listeners: Vec<(u64, Arc<dyn Listener>)>,
    /// True once the server confirmed the subscription on the current connection.
    confirmed: Arc<watch::Sender<bool>>,
}

impl Channel {
    fn new(name: &Arc<str>, requests: &mpsc::UnboundedSender<Request>) -> Self {
        let confirmed = Arc::new(watch::Sender::new(false));
        // A closed queue means the dispatcher is gone; the member then waits on its own timers.
        let _ = requests.send(Request::Subscribe(name.clone(), confirmed.clone()));
        Channel {
            waiters: 0,
            wake: Arc::new(Notify::new()),
            listeners: Vec::new(),
            confirmed,
        }
    }

    fn unused(&self) -> bool {
        self.waiters == 0 && self.listeners.is_empty()
    }
}

enum Request {
    Subscribe(Arc<str>, Arc<watch::Sender<bool>>),
    Unsubscribe(Arc<str>),
}

#[derive(Default)]
struct State {
    channels: HashMap<Arc<str>, Channel>,
    /// Every listener membership, told once per break and once per resubscription.
    listeners: HashMap<u64, Arc<dyn Listener>>,
    next_listener: u64,
}

struct Table {
    state: Mutex<State>,
    requests: mpsc::UnboundedSender<Request>,
    /// Connections made after a break (the first connection is not counted).
    reconnects: AtomicU64,
    /// Why the last connect or subscribe failed, for members that give up waiting for a confirmation.
    last_error: Mutex<Option<String>>,
}

impl std::fmt::Debug for Table {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PubSub")
            .field("channels", &self.lock().channels.len())
            .field("reconnects", &self.reconnects.load(Ordering::Relaxed))
            .finish()
    }
}

impl Table {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn deliver(&self, channel: &str, payload: &[u8], at: Instant) {
        let listeners: Vec<Arc<dyn Listener>> = {
            let state = self.lock();
            let Some(c) = state.channels.get(channel) else {
                return;
            };
            if c.waiters > 0 {
                c.wake.notify_one();
            }
            c.listeners.iter().map(|(_, l)| l.clone()).collect()
        };
        for listener in listeners {
            listener.message(channel, payload, at);
        }
    }

    /// Every wanted channel with its confirmation flag.
    fn wanted(&self) -> Vec<(Arc<str>, Arc<watch::Sender<bool>>)> {
        let state = self.lock();
        state
            .channels
            .iter()
            .map(|(name, c)| (name.clone(), c.confirmed.clone()))
            .collect()
    }

    fn listeners(&self) -> Vec<Arc<dyn Listener>> {
        self.lock().listeners.values().cloned().collect()
    }

    /// The connection broke: nothing is confirmed any more, every waiter retries, every listener knows.
    fn disconnected(&self) {
        for c in self.lock().channels.values() {
            c.confirmed.send_replace(false);
            c.wake.notify_waiters();
        }
        for listener in self.listeners() {
            listener.disconnected();
        }
    }

    fn resubscribed(&self, at: Instant) {
        self.reconnects.fetch_add(1, Ordering::Relaxed);
        for listener in self.listeners() {
            listener.resubscribed(at);
        }
    }

    fn failed(&self, error: String) {
        *self.last_error.lock().unwrap_or_else(|e| e.into_inner()) = Some(error);
    }

    /// Leaves `name` as one member (`leave` updates the channel); unsubscribes it once unused.
    fn leave(&self, state: &mut State, name: &Arc<str>, leave: impl FnOnce(&mut Channel)) {
        let Some(c) = state.channels.get_mut(name) else {
            return;
        };
        leave(c);
        if c.unused() {
            state.channels.remove(name);
            // A closed queue means the dispatcher is gone, and with it the connection and subscription.
            let _ = self.requests.send(Request::Unsubscribe(name.clone()));
        }
    }
}

/// One client's pub/sub connection and the dispatcher task that serves its members.
#[derive(Debug)]
pub(crate) struct PubSub {
    table: Arc<Table>,
    dispatcher: AbortHandle,
}

impl PubSub {
    /// Starts the dispatcher (it connects on the first subscription).
    pub(crate) fn start(connection: RedisConnection) -> Self {
        Self::start_on(connection, None)
    }

    /// Starts a dispatcher whose connection goes to the master serving `shard` (see
    /// [`RedisConnection::shard_of_slots`]) whenever it connects: in a cluster, for channels a node publishes
    /// only to its own subscribers (keyspace notifications). `None`: any server, as [`Self::start`].
    pub(crate) fn start_on(connection: RedisConnection, shard: Option<u16>) -> Self {
        let (requests, queue) = mpsc::unbounded_channel();
        let table = Arc::new(Table {
            state: Mutex::default(),
            requests,
            reconnects: AtomicU64::new(0),
            last_error: Mutex::default(),
        });
        let dispatcher = tokio::spawn(dispatch(Arc::downgrade(&table), connection, shard, queue));
        PubSub {
            table,
            dispatcher: dispatcher.abort_handle(),
        }
    }

    /// Joins `channel`'s waiters, subscribing it if it is new. Await [`Subscription::confirmed`] before
    /// the retry that the subscription must not miss.
    pub(crate) fn wait_on(&self, channel: &str) -> Subscription {
        let name: Arc<str> = channel.into();
        let mut state = self.table.lock();
        let c = state
            .channels
            .entry(name.clone())
            .or_insert_with(|| Channel::new(&name, &self.table.requests));
        c.waiters += 1;
        Subscription {
            table: self.table.clone(),
            wake: c.wake.clone(),
            confirmed: c.confirmed.subscribe(),
            channel: name,
        }
    }

    /// Hands every message on `channels` to `listener` until the returned membership is dropped,
    /// subscribing the channels that are new.
    pub(crate) fn listen(&self, channels: &[&str], listener: Arc<dyn Listener>) -> Listening {
        let mut state = self.table.lock();
        let id = state.next_listener;
        state.next_listener += 1;
        state.listeners.insert(id, listener.clone());
        let mut names = Vec::with_capacity(channels.len());
        let mut confirmed = Vec::with_capacity(channels.len());
        for channel in channels {
            let name: Arc<str> = (*channel).into();
            let c = state
                .channels
                .entry(name.clone())
                .or_insert_with(|| Channel::new(&name, &self.table.requests));
            c.listeners.push((id, listener.clone()));
            confirmed.push(c.confirmed.subscribe());
            names.push(name);
        }
        Listening {
            table: self.table.clone(),
            id,
            channels: names,
            confirmed,
        }
    }

    /// How many waiters wait on `channel` now.
    pub(crate) fn waiters(&self, channel: &str) -> usize {
        self.table
            .lock()
            .channels
            .get(channel)
            .map_or(0, |c| c.waiters)
    }

    /// How many channels have members.
    #[allow(dead_code)]
    pub(crate) fn channels(&self) -> usize {
        self.table.lock().channels.len()
    }

    /// How often the connection was re-established after a break.
    pub(crate) fn reconnects(&self) -> u64 {
        self.table.reconnects.load(Ordering::Relaxed)
    }

    /// Stops the dispatcher and closes the connection.
    pub(crate) fn stop(&self) {
        self.dispatcher.abort();
    }
}

impl Drop for PubSub {
    fn drop(&mut self) {
        self.dispatcher.abort();
    }
}

/// One waiter's membership of a channel. Dropping it leaves the channel (unsubscribing it if unused).
#[derive(Debug)]
pub(crate) struct Subscription {
    table: Arc<Table>,
    channel: Arc<str>,
    wake: Arc<Notify>,
    confirmed: watch::Receiver<bool>,
}

impl Subscription {
    /// Resolves once the server has confirmed the subscription (never, while the connection is down:
    /// race it against a timer).
    pub(crate) async fn confirmed(&mut self) {
        // The sender lives in the channel table as long as this subscription does.
        let _ = self.confirmed.wait_for(|ok| *ok).await;
    }

    /// A wake-up for the next message on the channel, armed now.
    pub(crate) fn arm(&self) -> Wakeup {
        arm(&self.wake)
    }
}

impl Drop for Subscription {
    fn drop(&mut self) {
        let mut state = self.table.lock();
        self.table
            .leave(&mut state, &self.channel, |c| c.waiters -= 1);
    }
}

/// One listener's membership of its channels. Dropping it leaves them (unsubscribing those unused).
#[derive(Debug)]
pub(crate) struct Listening {
    table: Arc<Table>,
    id: u64,
    channels: Vec<Arc<str>>,
    confirmed: Vec<watch::Receiver<bool>>,
}

impl Listening {
    /// Waits until every channel is confirmed by the server, at most `within`; a `Backend` error (with
    /// the last connect or subscribe failure) after that.
    pub(crate) async fn confirmed(&mut self, within: Duration) -> Result<(), LockError> {
        let all = async {
            for confirmed in &mut self.confirmed {
                // The sender lives in the channel table as long as this membership does.
                let _ = confirmed.wait_for(|ok| *ok).await;
            }
        };
        if tokio::time::timeout(within, all).await.is_ok() {
            return Ok(());
        }
        let last = self
            .table
            .last_error
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        Err(LockError::backend(
            super::connection::BACKEND,
            format!(
                "subscription to {:?} not confirmed within {within:?}{}",
                self.channels,
                last.map(|e| format!(": {e}")).unwrap_or_default()
            ),
        ))
    }
}

impl Drop for Listening {
    fn drop(&mut self) {
        let mut state = self.table.lock();
        state.listeners.remove(&self.id);
        for name in &self.channels {
            self.table.leave(&mut state, name, |c| {
                c.listeners.retain(|(id, _)| *id != self.id);
            });
        }
    }
}

/// Why one connection's service ended.
enum Ended {
    /// The connection broke; reconnect.
    Broken,
    /// The client is gone; stop.
    Closed,
}

const FIRST_BACKOFF: Duration = Duration::from_millis(50);
const MAX_BACKOFF: Duration = Duration::from_secs(1);

/// One live connection, split: commands go to the sink, messages come from the stream.
type Link = (redis::aio::PubSubSink, redis::aio::PubSubStream);

/// Connects and subscribes every wanted channel, within the connect timeout; confirms them.
async fn connect(
    table: &Weak<Table>,
    client: &redis::Client,
    settings: ConnectionSettings,
    requests: &RequestCount,
) -> Result<Link, String> {
    let wanted = table.upgrade().map(|t| t.wanted()).unwrap_or_default();
    let subscribing = async {
        let (mut sink, stream) = client.get_async_pubsub().await?.split();
        requests.handshake(client);
        if !wanted.is_empty() {
            let names: Vec<&str> = wanted.iter().map(|(n, _)| &**n).collect();
            requests.sent(1);
            sink.subscribe(&names).await?;
        }
        Ok::<_, redis::RedisError>((sink, stream))
    };
    let link = match tokio::time::timeout(settings.connect_timeout, subscribing).await {
        Ok(Ok(link)) => link,
        Ok(Err(e)) => return Err(e.to_string()),
        Err(_elapsed) => {
            return Err(format!(
                "no connection and subscription within the connect timeout of {:?}",
                settings.connect_timeout
            ));
        }
    };
    for (_, confirmed) in &wanted {
        confirmed.send_replace(true);
    }
    Ok(link)
}

/// The dispatcher: (re)connects while channels are wanted, and serves each connection until it breaks.
async fn dispatch(
    table: Weak<Table>,
    connection: RedisConnection,
    shard: Option<u16>,
    mut queue: mpsc::UnboundedReceiver<Request>,
) {
    let mut backoff = FIRST_BACKOFF;
    let mut connected_before = false;
    loop {
        // Idle until some channel is wanted.
        let idle = table.upgrade().is_none_or(|t| t.lock().channels.is_empty());
        if idle {
            let Some(request) = queue.recv().await else {
                return;
            };
            // The table is the truth; the request only said "something changed".
            drop(request);
        }
        if table.strong_count() == 0 {
            return;
        }
        // Behind Sentinel, the server named primary now; in a cluster, the shard's master now.
        let client = connection.client_of_shard(shard);
        let requests = connection.requests();
        let link = match connect(&table, &client, connection.settings(), requests).await {
            Ok(link) => link,
            Err(error) => {
                if let Some(t) = table.upgrade() {
                    t.failed(error);
                }
                connection.connection_broke();
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(MAX_BACKOFF);
                continue;
            }
        };
        backoff = FIRST_BACKOFF;
        if connected_before && let Some(t) = table.upgrade() {
            t.resubscribed(Instant::now());
        }
        connected_before = true;
        match serve(&table, link, &mut queue, requests).await {
            Ended::Closed => return,
            Ended::Broken => {
                if let Some(t) = table.upgrade() {
                    t.disconnected();
                }
                connection.connection_broke();
                tokio::time::sleep(FIRST_BACKOFF).await;
            }
        }
    }
}

/// Serves one connection: delivers messages and carries out requests side by side until the connection
/// breaks or the client goes.
async fn serve(
    table: &Weak<Table>,
    (mut sink, mut stream): Link,
    queue: &mut mpsc::UnboundedReceiver<Request>,
    requests: &RequestCount,
) -> Ended {
    // Requests queued before the connection are covered by the table's state that `connect` subscribed;
    // replaying them here is harmless because (un)subscribing is idempotent and they replay in order.
    let deliver = async {
        while let Some(message) = stream.next().await {
            let at = Instant::now();
            let Some(t) = table.upgrade() else {
                return Ended::Closed;
            };
            t.deliver(message.get_channel_name(), message.get_payload_bytes(), at);
        }
        Ended::Broken
    };
    let carry_out = async {
        while let Some(request) = queue.recv().await {
            requests.sent(1);
            let done = match request {
                Request::Subscribe(name, confirmed) => {
                    let done = sink.subscribe(&*name).await;
                    if done.is_ok() {
                        confirmed.send_replace(true);
                    }
                    done
                }
                Request::Unsubscribe(name) => sink.unsubscribe(&*name).await,
            };
            if let Err(error) = done {
                if let Some(t) = table.upgrade() {
                    t.failed(error.to_string());
                }
                return Ended::Broken;
            }
        }
        Ended::Closed
    };
    tokio::select! {
        ended = deliver => ended,
        ended = carry_out => ended,
    }
}
