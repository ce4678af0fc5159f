//! One pub/sub connection per client, shared by every waiter (Redisson's `LockPubSub`): a dispatcher task
//! subscribes a channel when its first waiter arrives, unsubscribes it when its last waiter leaves
//! (also when a waiting acquire future is dropped: leaving is the [`Subscription`]'s `Drop`), and fans
//! each message out to the channel's waiters.
//!
//! A message wakes one waiter of the channel, as Redisson's latch release does (one unlock lets one
//! holder in; waking every waiter would only make the others retry and fail). A wake-up that lands on a
//! waiter that has gone is passed on to the next one (tokio's `Notify` does this).
//!
//! The connection is opened when the first channel is wanted. If it breaks, every waiter is woken (a
//! release may have been missed), channels are marked unconfirmed, and the dispatcher reconnects with
//! back-off and resubscribes every wanted channel. Waiters never depend on it alone: they also wake when
//! the lock's TTL runs out.
//!
//! Subscribe and unsubscribe requests go to the dispatcher through one queue, in the order the channel
//! table changed, so a channel subscribed, left and subscribed again ends up subscribed.

use std::collections::HashMap;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use futures::StreamExt;
use tokio::sync::futures::OwnedNotified;
use tokio::sync::{Notify, mpsc, watch};
use tokio::task::AbortHandle;

use super::connection::ConnectionSettings;

/// A wake-up armed before a retry, so a message that arrives during the retry is not missed.
pub(crate) type Wakeup = Pin<Box<OwnedNotified>>;

struct Channel {
    waiters: usize,
    wake: Arc<Notify>,
    /// True once the server confirmed the subscription on the current connection.
    confirmed: Arc<watch::Sender<bool>>,
}

enum Request {
    Subscribe(Arc<str>, Arc<watch::Sender<bool>>),
    Unsubscribe(Arc<str>),
}

struct Table {
    channels: Mutex<HashMap<Arc<str>, Channel>>,
    requests: mpsc::UnboundedSender<Request>,
}

impl Table {
    fn lock(&self) -> MutexGuard<'_, HashMap<Arc<str>, Channel>> {
        self.channels.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn deliver(&self, channel: &str) {
        if let Some(c) = self.lock().get(channel) {
            c.wake.notify_one();
        }
    }

    /// Every wanted channel with its confirmation flag.
    fn wanted(&self) -> Vec<(Arc<str>, Arc<watch::Sender<bool>>)> {
        let channels = self.lock();
        channels
            .iter()
            .map(|(name, c)| (name.clone(), c.confirmed.clone()))
            .collect()
    }

    /// The connection broke: nothing is confirmed any more, and every waiter retries.
    fn disconnected(&self) {
        for c in self.lock().values() {
            c.confirmed.send_replace(false);
            c.wake.notify_waiters();
        }
    }

    fn leave(&self, name: &Arc<str>) {
        let mut channels = self.lock();
        let Some(c) = channels.get_mut(name) else {
            return;
        };
        c.waiters -= 1;
        if c.waiters == 0 {
            channels.remove(name);
            // A closed queue means the dispatcher is gone, and with it the connection and subscription.
            let _ = self.requests.send(Request::Unsubscribe(name.clone()));
        }
    }
}

/// One client's waiters on pub/sub channels, served by one connection and one dispatcher task.
pub(crate) struct Subscriptions {
    table: Arc<Table>,
    dispatcher: AbortHandle,
}

impl std::fmt::Debug for Subscriptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Subscriptions")
            .field("channels", &self.table.lock().len())
            .finish()
    }
}

impl Subscriptions {
    /// Starts the dispatcher (it connects on the first subscription).
    pub(crate) fn start(client: redis::Client, settings: ConnectionSettings) -> Self {
        let (requests, queue) = mpsc::unbounded_channel();
        let table = Arc::new(Table {
            channels: Mutex::default(),
            requests,
        });
        let dispatcher = tokio::spawn(dispatch(Arc::downgrade(&table), client, settings, queue));
        Subscriptions {
            table,
            dispatcher: dispatcher.abort_handle(),
        }
    }

    /// Joins `channel`'s waiters, subscribing it if this is the first. Await
    /// [`Subscription::confirmed`] before the retry that the subscription must not miss.
    pub(crate) fn join(&self, channel: &str) -> Subscription {
        let name: Arc<str> = channel.into();
        let mut channels = self.table.lock();
        let c = channels.entry(name.clone()).or_insert_with(|| {
            let confirmed = Arc::new(watch::Sender::new(false));
            let _ = self
                .table
                .requests
                .send(Request::Subscribe(name.clone(), confirmed.clone()));
            Channel {
                waiters: 0,
                wake: Arc::new(Notify::new()),
                confirmed,
            }
        });
        c.waiters += 1;
        let subscription = Subscription {
            table: self.table.clone(),
            wake: c.wake.clone(),
            confirmed: c.confirmed.subscribe(),
            channel: name,
        };
        drop(channels);
        subscription
    }

    /// How many channels have waiters.
    #[allow(dead_code)]
    pub(crate) fn channels(&self) -> usize {
        self.table.lock().len()
    }

    /// Stops the dispatcher and closes the connection.
    pub(crate) fn stop(&self) {
        self.dispatcher.abort();
    }
}

impl Drop for Subscriptions {
    fn drop(&mut self) {
        self.dispatcher.abort();
    }
}

/// One waiter's membership of a channel. Dropping it leaves the channel (unsubscribing the last waiter).
pub(crate) struct Subscription {
    table: Arc<Table>,
    channel: Arc<str>,
    wake: Arc<Notify>,
    confirmed: watch::Receiver<bool>,
}

impl std::fmt::Debug for Subscription {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Subscription")
            .field("channel", &self.channel)
            .finish()
    }
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
        let mut wakeup = Box::pin(self.wake.clone().notified_owned());
        wakeup.as_mut().enable();
        wakeup
    }
}

impl Drop for Subscription {
    fn drop(&mut self) {
        self.table.leave(&self.channel);
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

/// The dispatcher: (re)connects while channels are wanted, and serves each connection until it breaks.
async fn dispatch(
    table: std::sync::Weak<Table>,
    client: redis::Client,
    settings: ConnectionSettings,
    mut queue: mpsc::UnboundedReceiver<Request>,
) {
    let mut backoff = FIRST_BACKOFF;
    loop {
        // Idle until some channel is wanted.
        let idle = table.upgrade().is_none_or(|t| t.lock().is_empty());
        if idle {
            let Some(request) = queue.recv().await else {
                return;
            };
            // The table is the truth; the request only said "something changed".
            drop(request);
        }
        let Some(live) = table.upgrade() else { return };
        drop(live);
        let connected = tokio::time::timeout(settings.connect_timeout, client.get_async_pubsub());
        let pubsub = match connected.await {
            Ok(Ok(pubsub)) => pubsub,
            _ => {
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(MAX_BACKOFF);
                continue;
            }
        };
        backoff = FIRST_BACKOFF;
        match serve(&table, pubsub, &mut queue).await {
            Ended::Closed => return,
            Ended::Broken => {
                if let Some(t) = table.upgrade() {
                    t.disconnected();
                }
                tokio::time::sleep(FIRST_BACKOFF).await;
            }
        }
    }
}

/// Serves one connection: resubscribes what the table wants, then delivers messages and carries out
/// requests side by side until the connection breaks or the client goes.
async fn serve(
    table: &std::sync::Weak<Table>,
    pubsub: redis::aio::PubSub,
    queue: &mut mpsc::UnboundedReceiver<Request>,
) -> Ended {
    let (mut sink, mut stream) = pubsub.split();
    let Some(wanted) = table.upgrade().map(|t| t.wanted()) else {
        return Ended::Closed;
    };
    // Requests queued before this point are covered by the table's state; replaying them below is
    // harmless because (un)subscribing is idempotent and they replay in order.
    if !wanted.is_empty() {
        let names: Vec<&str> = wanted.iter().map(|(n, _)| &**n).collect();
        if sink.subscribe(&names).await.is_err() {
            return Ended::Broken;
        }
        for (_, confirmed) in &wanted {
            confirmed.send_replace(true);
        }
    }
    let deliver = async {
        while let Some(message) = stream.next().await {
            let Some(t) = table.upgrade() else {
                return Ended::Closed;
            };
            t.deliver(message.get_channel_name());
        }
        Ended::Broken
    };
    let carry_out = async {
        while let Some(request) = queue.recv().await {
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
            if done.is_err() {
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
