//! The hold board: what the workers' hold events say — who holds which key right now, and every
//! acquire and end since the case started — so a fault can pick a client that holds a lock and then
//! wait for what follows (the holder noticing its loss, another client getting the key).

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use tokio::sync::{Notify, mpsc};

use crate::base::holds::{HoldChange, HoldEvent, HoldSink};
use crate::base::stop::StopSignal;

/// At most this many events are kept (a few seconds of a busy case need far fewer); later ones only
/// update who holds what.
const MAX_LOG: usize = 1 << 20;

/// How long after the case's end [`HoldBoard::hold_end`] still waits for a holder's report.
const REPORT_GRACE: Duration = Duration::from_secs(10);

/// How a hold ended, by its holder's own reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum HoldEnd {
    /// The holder reported its end at this time (ns).
    Ended(u64),
    /// The holder's reports ended (its process was killed or died) with the hold still open.
    Died,
    /// Its reports said neither by [`REPORT_GRACE`] after the case ended.
    Unknown,
}

#[derive(Debug, Default)]
struct State {
    /// client → (key, since) while it holds.
    holding: HashMap<u32, (u32, u64)>,
    log: Vec<HoldEvent>,
    /// Clients whose reports have ended: every event they sent is on the board.
    closed: HashSet<u32>,
}

/// Shared by the driver (which posts events) and the fault tasks (which wait on them).
#[derive(Debug, Default)]
pub(crate) struct HoldBoard {
    state: Mutex<State>,
    changed: Notify,
}

impl HoldBoard {
    /// An empty board.
    pub(crate) fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Posts one event.
    pub(crate) fn push(&self, event: HoldEvent) {
        let mut state = self.lock();
        match event.change {
            HoldChange::Acquired => {
                state.holding.insert(event.client, (event.key, event.at_ns));
            }
            HoldChange::Ended(_) => {
                if state
                    .holding
                    .get(&event.client)
                    .is_some_and(|(key, _)| *key == event.key)
                {
                    state.holding.remove(&event.client);
                }
            }
        }
        if state.log.len() < MAX_LOG {
            state.log.push(event);
        }
        drop(state);
        self.changed.notify_waiters();
    }

    /// A sink whose events reach this board (through a task that ends when every sender is dropped).
    pub(crate) fn sink(self: &Arc<Self>) -> HoldSink {
        let (tx, mut rx) = mpsc::unbounded_channel();
        let board = self.clone();
        tokio::spawn(async move {
            while let Some(event) = rx.recv().await {
                board.push(event);
            }
        });
        tx
    }

    /// What `client` holds right now: (key, since).
    pub(crate) fn holding(&self, client: u32) -> Option<(u32, u64)> {
        self.lock().holding.get(&client).copied()
    }

    /// Every hold open right now by the events posted so far: (client, key, since).
    pub(crate) fn holders(&self) -> Vec<(u32, u32, u64)> {
        let mut holders: Vec<(u32, u32, u64)> = self
            .lock()
            .holding
            .iter()
            .map(|(client, (key, since))| (*client, *key, *since))
            .collect();
        holders.sort_unstable();
        holders
    }

    /// `client`'s reports have ended (its worker process exited or was killed, and everything it
    /// wrote has been posted).
    pub(crate) fn closed(&self, client: u32) {
        self.lock().closed.insert(client);
        self.changed.notify_waiters();
    }

    /// How `client`'s hold of `key` acquired at `since` ended, by its own reports: waits for its end
    /// to be posted, or for the client's reports to end without one (it died holding), or, once
    /// `stop` is set, at most [`REPORT_GRACE`] more (then [`HoldEnd::Unknown`]: no evidence).
    pub(crate) async fn hold_end(
        &self,
        client: u32,
        key: u32,
        since: u64,
        stop: &StopSignal,
    ) -> HoldEnd {
        self.hold_end_within(client, key, since, stop, REPORT_GRACE)
            .await
    }

    async fn hold_end_within(
        &self,
        client: u32,
        key: u32,
        since: u64,
        stop: &StopSignal,
        grace: Duration,
    ) -> HoldEnd {
        let mut stopped_at: Option<Instant> = None;
        loop {
            let notified = self.changed.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if let Some(end) = self.ended_at(client, key, since) {
                return HoldEnd::Ended(end);
            }
            if self.lock().closed.contains(&client) {
                return HoldEnd::Died;
            }
            if stop.is_set() && stopped_at.get_or_insert_with(Instant::now).elapsed() >= grace {
                return HoldEnd::Unknown;
            }
            tokio::select! {
                _ = &mut notified => {}
                _ = tokio::time::sleep(Duration::from_millis(50)) => {}
            }
        }
    }

    /// Forgets `client`'s hold (it was killed: it will never report the end).
    pub(crate) fn forget(&self, client: u32) {
        self.lock().holding.remove(&client);
    }

    /// When `client`'s hold of `key` acquired at `since` ended, by the events posted so far (the
    /// first end of that key by that client at or after `since`); `None` while it still holds.
    pub(crate) fn ended_at(&self, client: u32, key: u32, since: u64) -> Option<u64> {
        self.lock()
            .log
            .iter()
            .find(|e| {
                e.client == client
                    && e.key == key
                    && e.at_ns >= since
                    && matches!(e.change, HoldChange::Ended(_))
            })
            .map(|e| e.at_ns)
    }

    /// Where the log ends now: events posted from here on are "new".
    pub(crate) fn cursor(&self) -> usize {
        self.lock().log.len()
    }

    /// Waits for the first event at or after `cursor` for which `pick` returns something (advancing
    /// `cursor` past it); `None` once `stop` is set.
    pub(crate) async fn next<T>(
        &self,
        cursor: &mut usize,
        stop: &StopSignal,
        mut pick: impl FnMut(&HoldEvent) -> Option<T>,
    ) -> Option<T> {
        loop {
            let notified = self.changed.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            {
                let state = self.lock();
                while let Some(event) = state.log.get(*cursor) {
                    *cursor += 1;
                    if let Some(found) = pick(event) {
                        return Some(found);
                    }
                }
            }
            if stop.is_set() {
                return None;
            }
            tokio::select! {
                _ = &mut notified => {}
                _ = stop.wait() => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::holds::EndedBy;

    fn event(client: u32, key: u32, at_ns: u64, change: HoldChange) -> HoldEvent {
        HoldEvent {
            client,
            key,
            at_ns,
            change,
        }
    }

    #[tokio::test]
    async fn tracks_holders_and_waits_for_events() {
        let board = HoldBoard::new();
        let stop = StopSignal::new();
        board.push(event(0, 1, 10, HoldChange::Acquired));
        assert_eq!(board.holding(0), Some((1, 10)));
        let mut cursor = board.cursor();
        let waiter = tokio::spawn({
            let (board, stop) = (board.clone(), stop.clone());
            async move {
                board
                    .next(&mut cursor, &stop, |e| {
                        (e.client != 0 && e.change == HoldChange::Acquired).then_some(e.at_ns)
                    })
                    .await
            }
        });
        board.push(event(0, 1, 20, HoldChange::Ended(EndedBy::Released)));
        assert_eq!(board.holding(0), None);
        board.push(event(2, 1, 25, HoldChange::Acquired));
        assert_eq!(waiter.await.expect("joined"), Some(25));

        let mut cursor = board.cursor();
        stop.set();
        assert_eq!(board.next(&mut cursor, &stop, |_| Some(())).await, None);
    }

    #[tokio::test]
    async fn a_holds_end_is_what_its_holder_reported_or_unknown() {
        let board = HoldBoard::new();
        let stop = StopSignal::new();
        board.push(event(0, 1, 10, HoldChange::Acquired));
        board.push(event(1, 1, 30, HoldChange::Acquired));
        board.push(event(2, 0, 40, HoldChange::Acquired));
        // Client 0's end arrives while the board waits for it.
        let waiter = tokio::spawn({
            let (board, stop) = (board.clone(), stop.clone());
            async move { board.hold_end(0, 1, 10, &stop).await }
        });
        tokio::time::sleep(Duration::from_millis(120)).await;
        board.push(event(0, 1, 20, HoldChange::Ended(EndedBy::Released)));
        assert_eq!(waiter.await.expect("joined"), HoldEnd::Ended(20));
        // Client 1's reports end without its end: it died holding.
        board.closed(1);
        assert_eq!(board.hold_end(1, 1, 30, &stop).await, HoldEnd::Died);
        // Client 2 says nothing more: once the case has ended, no evidence either way.
        stop.set();
        let grace = Duration::from_millis(100);
        assert_eq!(
            board.hold_end_within(2, 0, 40, &stop, grace).await,
            HoldEnd::Unknown
        );
        // Who held what by the events (a dead client's last hold stays until a fault forgets it).
        assert_eq!(board.holders(), vec![(1, 1, 30), (2, 0, 40)]);
    }
}
