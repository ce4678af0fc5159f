//! Keyevent notifications for `redis-keyspace`: making the server publish them, and handing each one to
//! this client's holders and waiters of that key.
//!
//! Redis publishes `__keyevent@<db>__:expired` when it deletes an expired key and `__keyevent@<db>__:del`
//! on `DEL`, if `notify-keyspace-events` has `E` (keyevent channels), `x` (expired) and `g` (generic
//! commands). [`ensure_notifications`] adds the flags the server lacks, keeping the user's.
//!
//! [`KeyEvents`] listens to both channels on the client's [`PubSub`] connection and routes each event by
//! its payload (the key): an `expired` or `del` event wakes every waiter of that key; an `expired` event
//! also reaches every holder watching that key as a [`Signal::Expired`] with its arrival time. A break of
//! the connection reaches every holder as [`Signal::Disconnected`], the resubscription after it as
//! [`Signal::Resubscribed`] (both also wake every waiter: a release may have been missed). After a
//! resubscription the notification flags are ensured again, in the background: the server may be
//! another one (a Sentinel failover) or a restarted one, and `CONFIG SET` is neither replicated nor
//! saved. If that fails (CONFIG refused there), the client goes on without events, as a server
//! configured without them would leave it.
//!
//! A Redis Cluster node publishes only the events of its own keys (they are not broadcast as `PUBLISH`
//! is), so in a cluster every master is configured and has its own subscription, one per shard: it
//! reconnects to whichever master serves the shard's slots then, and its breaks and resubscriptions
//! reach only the holders and waiters of those slots' keys.

use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

use super::connection::Commands;
use tokio::sync::{Notify, mpsc};

use super::cluster::slot;
use super::connection::RedisConnection;
use super::pubsub::{Listener, Listening, PubSub, Wakeup, arm};
use crate::error::LockError;

/// The `notify-keyspace-events` flags the strategy needs: keyevent channels, expired events, generic
/// commands (`DEL`).
pub const NEEDED_NOTIFY_FLAGS: &str = "Exg";

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

async fn read_notify_flags(connection: &mut Commands) -> Result<String, LockError> {
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
async fn ensure_notifications(connection: &mut Commands) -> Result<String, LockError> {
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

/// What a holder is told.
#[derive(Debug, Clone, Copy)]
pub(in crate::redis) enum Signal {
    /// The watched key's `expired` event arrived at `at`.
    Expired { at: Instant },
    /// The subscription broke: events are being lost.
    Disconnected,
    /// Subscribed again at `at`; events published in between are gone.
    Resubscribed { at: Instant },
}

#[derive(Default)]
struct Members {
    waiters: usize,
    wake: Arc<Notify>,
    holders: Vec<(u64, mpsc::UnboundedSender<Signal>)>,
}

/// This client's holders and waiters, by server key.
struct Table {
    keys: Mutex<HashMap<Arc<str>, Members>>,
    next_holder: AtomicU64,
    /// The `expired` channel of the client's database (the other one is `del`).
    expired_channel: String,
    /// In a cluster, per slot, the shard whose subscription carries its keys' events.
    shard_of_slots: Option<Vec<Option<u16>>>,
}

impl std::fmt::Debug for Table {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KeyEvents")
            .field("keys", &self.lock().len())
            .finish()
    }
}

impl Table {
    fn lock(&self) -> MutexGuard<'_, HashMap<Arc<str>, Members>> {
        self.keys.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Whether `key`'s events come through `shard`'s subscription.
    fn in_shard(&self, key: &str, shard: Option<u16>) -> bool {
        match (&self.shard_of_slots, shard) {
            (Some(of_slots), Some(shard)) => {
                of_slots[usize::from(slot(key.as_bytes()))] == Some(shard)
            }
            _ => true,
        }
    }

    /// Tells every holder of a key in `shard` `signal` and wakes every waiter of one (a release may
    /// have been missed).
    fn broadcast(&self, signal: Signal, shard: Option<u16>) {
        for (key, m) in self.lock().iter() {
            if !self.in_shard(key, shard) {
                continue;
            }
            m.wake.notify_waiters();
            for (_, holder) in &m.holders {
                // A closed receiver is a holder that is leaving.
                let _ = holder.send(signal);
            }
        }
    }

    fn forget_if_unused(keys: &mut HashMap<Arc<str>, Members>, key: &str) {
        if keys
            .get(key)
            .is_some_and(|m| m.waiters == 0 && m.holders.is_empty())
        {
            keys.remove(key);
        }
    }

    /// Hands an event to the waiters and holders of its key.
    fn deliver(&self, channel: &str, payload: &[u8], at: Instant) {
        // Keys that are not UTF-8 are not ours.
        let Ok(key) = std::str::from_utf8(payload) else {
            return;
        };
        let keys = self.lock();
        let Some(m) = keys.get(key) else {
            return;
        };
        m.wake.notify_waiters();
        if channel == self.expired_channel {
            for (_, holder) in &m.holders {
                let _ = holder.send(Signal::Expired { at });
            }
        }
    }
}

/// One shard's subscription (the one server's outside a cluster): its events go to the table, its
/// breaks and resubscriptions to the holders and waiters of its keys.
struct ShardListener {
    table: Arc<Table>,
    shard: Option<u16>,
    /// For ensuring the notification flags again after a resubscription.
    commands: Commands,
}

impl Listener for ShardListener {
    fn message(&self, channel: &str, payload: &[u8], at: Instant) {
        self.table.deliver(channel, payload, at);
    }

    fn disconnected(&self) {
        self.table.broadcast(Signal::Disconnected, self.shard);
    }

    fn resubscribed(&self, at: Instant) {
        self.table
            .broadcast(Signal::Resubscribed { at }, self.shard);
        let mut commands = self.commands.pinned_to_shard(self.shard);
        tokio::spawn(async move {
            // An error leaves the server as it is configured (see the module doc).
            let _ = ensure_notifications(&mut commands).await;
        });
    }
}

/// A waiter's interest in a key's `del` and `expired` events; dropping it leaves.
pub(in crate::redis) struct KeyWatch {
    table: Arc<Table>,
    key: Arc<str>,
    wake: Arc<Notify>,
}

impl KeyWatch {
    /// A wake-up for the key's next event, armed now (before the attempt it must not miss).
    pub(in crate::redis) fn arm(&self) -> Wakeup {
        arm(&self.wake)
    }
}

impl Drop for KeyWatch {
    fn drop(&mut self) {
        let mut keys = self.table.lock();
        if let Some(m) = keys.get_mut(&self.key) {
            m.waiters -= 1;
        }
        Table::forget_if_unused(&mut keys, &self.key);
    }
}

/// A holder's registration for a key's `expired` events; dropping it leaves.
pub(in crate::redis) struct HolderWatch {
    table: Arc<Table>,
    key: Arc<str>,
    id: u64,
}

impl Drop for HolderWatch {
    fn drop(&mut self) {
        let mut keys = self.table.lock();
        if let Some(m) = keys.get_mut(&self.key) {
            m.holders.retain(|(id, _)| *id != self.id);
        }
        Table::forget_if_unused(&mut keys, &self.key);
    }
}

/// One client's keyevent subscriptions (on their own pub/sub connections: one, or in a cluster one
/// per master) and its holders and waiters.
#[derive(Debug)]
pub(in crate::redis) struct KeyEvents {
    table: Arc<Table>,
    subscriptions: Vec<(PubSub, Listening)>,
    notify_flags: String,
}

impl KeyEvents {
    /// Makes every master publish the events the strategy needs (see [`ensure_notifications`]), and
    /// subscribes to database `db`'s `expired` and `del` events on each; returns once every server
    /// confirmed both (a `Backend` error if one did not within the connect timeout). A Redis Cluster
    /// node publishes only its own keys' events, so there is a subscription per master (per shard:
    /// after a failover it goes to the shard's new master).
    pub(in crate::redis) async fn start(
        connection: &RedisConnection,
        db: i64,
    ) -> Result<Self, LockError> {
        let settings = connection.settings();
        let shard_of_slots = connection.shard_of_slots();
        // One subscription per shard of that one reading (the server itself outside a cluster).
        let shards: Vec<Option<u16>> = match &shard_of_slots {
            Some(of_slots) => {
                let named: BTreeSet<u16> = of_slots.iter().flatten().copied().collect();
                named.into_iter().map(Some).collect()
            }
            None => vec![None],
        };
        let table = Arc::new(Table {
            keys: Mutex::default(),
            next_holder: AtomicU64::new(0),
            expired_channel: format!("__keyevent@{db}__:expired"),
            shard_of_slots,
        });
        let del_channel = format!("__keyevent@{db}__:del");
        let channels = [table.expired_channel.as_str(), &del_channel];
        let mut notify_flags = None;
        let mut subscriptions = Vec::new();
        for shard in shards {
            let commands = connection.commands();
            let flags = ensure_notifications(&mut commands.pinned_to_shard(shard)).await?;
            notify_flags.get_or_insert(flags);
            let pubsub = PubSub::start_on(connection.clone(), shard);
            let listener = Arc::new(ShardListener {
                table: table.clone(),
                shard,
                commands,
            });
            let mut listening = pubsub.listen(&channels, listener);
            listening.confirmed(settings.connect_timeout).await?;
            subscriptions.push((pubsub, listening));
        }
        Ok(KeyEvents {
            table,
            subscriptions,
            notify_flags: notify_flags.unwrap_or_default(),
        })
    }

    /// The first server's `notify-keyspace-events` as [`Self::start`] left it.
    pub(in crate::redis) fn notify_flags(&self) -> &str {
        &self.notify_flags
    }

    /// How often the subscriptions were re-established after a break.
    pub(in crate::redis) fn reconnects(&self) -> u64 {
        self.subscriptions.iter().map(|(p, _)| p.reconnects()).sum()
    }

    /// Stops the pub/sub dispatchers: no event reaches anyone any more.
    pub(in crate::redis) fn stop(&self) {
        for (pubsub, _) in &self.subscriptions {
            pubsub.stop();
        }
    }

    /// Joins `key`'s waiters.
    pub(in crate::redis) fn watch(&self, key: &str) -> KeyWatch {
        let key: Arc<str> = key.into();
        let mut keys = self.table.lock();
        let m = keys.entry(key.clone()).or_default();
        m.waiters += 1;
        let wake = m.wake.clone();
        drop(keys);
        KeyWatch {
            table: self.table.clone(),
            key,
            wake,
        }
    }

    /// Registers a holder of `key`: the signals it will be sent, until the registration is dropped.
    pub(in crate::redis) fn hold(
        &self,
        key: &str,
    ) -> (HolderWatch, mpsc::UnboundedReceiver<Signal>) {
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

#[cfg(test)]
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
}
