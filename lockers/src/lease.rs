//! The proof of holding a lock ([`Lease`]) and, for strategies only, what it is built from: the state a
//! lease shares with its strategy's renewal (`LeaseState`: the deadline and how the lease ended) and the
//! strategy's release path (`LeaseHandle`). Callers cannot reach either, so no caller can move a deadline.
//! The deadline and end flag sit in a [`LeaseCell`], the lease's own or one of its strategy's
//! [`LeaseTable`]; a lock carried by its client's session reads its deadline from the session's
//! [`CarrierCell`].

use std::fmt;
use std::future::Future;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use tokio::sync::Notify;

use crate::error::LockError;
use crate::event::{Events, LockEvent};
use crate::lease_cells::{CarriedCell, CarrierCell, CellRef, LeaseCell, LeaseTable, TableCell};
pub(crate) use crate::types::{AcquireOptions, FencingToken, LeaseMode, LossReason, OwnerId};

/// How a lease ended: released by its holder, or lost for a reason.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum LeaseEnd {
    /// The last hold was released (or the lease dropped): the holder gave it up.
    Released,
    /// The strategy learned that the lease is gone.
    Lost(LossReason),
}

/// What a lease shares with the strategy that renews it: the conservative local deadline and how the
/// lease ended, if it has. Re-entrant holds of one lock share one state.
///
/// The deadline only moves forward, and only by a renewal that the server confirmed; it is computed from
/// the time the request was *sent*, so it never claims more than the server granted.
pub(crate) struct LeaseState {
    key: Arc<str>,
    /// The deadline, and whether `end` holds an end (set once, after it is written). Renewal reads
    /// them for every held lock each period, from the cell alone (a batch scheduler's table holds the
    /// cell, not this state), at the cost of no lock.
    cell: Cell,
    /// How the lease ended, set once. A plain cell and one [`Notify`], not a `watch` channel: a
    /// channel's shared state (nine `Notify`s) was a fifth of a held lock's memory.
    end: OnceLock<LeaseEnd>,
    /// Wakes [`LeaseState::wait_lost`] when `end` is set.
    ended: Notify,
    events: Events,
    /// How long before the server-side deadline the holder gives the lease up (see
    /// [`notice_allowance`]); zero for a strategy that copies a library with no such margin.
    allowance: Duration,
}

/// The margin a strategy of lockbench's own keeps between its holder's notice of a loss and the
/// server's earliest expiry of a lease of `ttl`: 1 % of it for the two clocks' rates, plus 2 ms for the
/// holder's timer firing late (the drift the Redlock algorithm allows). Without it the holder's timer
/// and the server's expiry race at the same instant, and a timer a few ms late lets the next holder in
/// first.
pub(crate) fn notice_allowance(ttl: Duration) -> Duration {
    ttl / 100 + Duration::from_millis(2)
}

/// Where a lease's deadline and end flag live: in a [`LeaseCell`] inside its state or in its strategy's
/// [`LeaseTable`]; for a session, in the cell its locks read their deadline from; for a lock carried
/// by a session, its end flag in a cell of its own and its deadline in the session's.
enum Cell {
    Own(LeaseCell),
    Table(TableCell),
    #[cfg_attr(not(any(feature = "etcd", feature = "zookeeper")), allow(dead_code))]
    Carrier(Arc<CarrierCell>),
    #[cfg_attr(not(any(feature = "etcd", feature = "zookeeper")), allow(dead_code))]
    Carried(CarriedCell),
}

impl fmt::Debug for LeaseState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LeaseState")
            .field("key", &self.key)
            .field("deadline", &self.deadline())
            .field("end", &self.end.get())
            .finish()
    }
}

impl LeaseState {
    /// A live lease on `key` whose local deadline is `deadline`, with a cell of its own. Losses are
    /// reported to `events`.
    pub(crate) fn new(key: Arc<str>, deadline: Instant, events: Events) -> Arc<Self> {
        Self::with_cell(
            key,
            deadline,
            events,
            Cell::Own(LeaseCell::default()),
            Duration::ZERO,
        )
    }

    /// As [`LeaseState::new`], given up `allowance` before `deadline` and every later one.
    pub(crate) fn noticing_early(
        key: Arc<str>,
        deadline: Instant,
        events: Events,
        allowance: Duration,
    ) -> Arc<Self> {
        Self::with_cell(
            key,
            deadline,
            events,
            Cell::Own(LeaseCell::default()),
            allowance,
        )
    }

    /// The state of a session named `key` whose cell is `carrier`: the locks it carries
    /// ([`LeaseState::carried`]) read their deadline there, so extending it extends every one of them.
    /// Nothing of it is reported.
    #[cfg_attr(not(any(feature = "etcd", feature = "zookeeper")), allow(dead_code))]
    pub(crate) fn carrier(key: Arc<str>, carrier: &Arc<CarrierCell>) -> Arc<Self> {
        let deadline = carrier.cell().deadline();
        let cell = Cell::Carrier(carrier.clone());
        Self::with_cell(key, deadline, Events::none(), cell, Duration::ZERO)
    }

    /// A live lease on `key` carried by the session whose cell is `carrier`: its deadline is the
    /// session's for as long as it lasts; it can end (be released or lost) alone. Losses are reported to
    /// `events`.
    #[cfg_attr(not(any(feature = "etcd", feature = "zookeeper")), allow(dead_code))]
    pub(crate) fn carried(key: Arc<str>, carrier: &Arc<CarrierCell>, events: Events) -> Arc<Self> {
        let deadline = carrier.cell().deadline();
        let cell = Cell::Carried(CarriedCell::new(carrier));
        Self::with_cell(key, deadline, events, cell, Duration::ZERO)
    }

    /// As [`LeaseState::noticing_early`], with its cell in `table` (given back when the state is
    /// dropped).
    pub(crate) fn in_table(
        table: &Arc<LeaseTable>,
        key: Arc<str>,
        deadline: Instant,
        events: Events,
        allowance: Duration,
    ) -> Arc<Self> {
        Self::with_cell(key, deadline, events, Cell::Table(table.claim()), allowance)
    }

    fn with_cell(
        key: Arc<str>,
        deadline: Instant,
        events: Events,
        cell: Cell,
        allowance: Duration,
    ) -> Arc<Self> {
        let state = LeaseState {
            key,
            cell,
            end: OnceLock::new(),
            ended: Notify::new(),
            events,
            allowance,
        };
        state.extend_to(deadline);
        Arc::new(state)
    }

    /// The cell holding the deadline and end flag when it is in a [`LeaseTable`], for a renewer that
    /// reads many side by side (and holds this state as long as the reference).
    pub(crate) fn table_cell(&self) -> Option<&CellRef> {
        match &self.cell {
            Cell::Own(_) | Cell::Carrier(_) | Cell::Carried(_) => None,
            Cell::Table(cell) => Some(cell.shared()),
        }
    }

    /// Where this lease's events go (its client's).
    pub(crate) fn events(&self) -> &Events {
        &self.events
    }

    /// The lock key.
    pub(crate) fn key(&self) -> &Arc<str> {
        &self.key
    }

    /// The conservative local deadline: the lease is certainly not held after it (the server-side
    /// deadline less the strategy's allowance).
    pub(crate) fn deadline(&self) -> Instant {
        let server_side = match &self.cell {
            Cell::Carried(cell) => cell.deadline(),
            Cell::Own(_) | Cell::Table(_) | Cell::Carrier(_) => self.cell().deadline(),
        };
        server_side
            .checked_sub(self.allowance)
            .unwrap_or(server_side)
    }

    /// Moves the deadline forward to `deadline` (never backward). For a session, the deadline of every
    /// lock it carries moves with it.
    pub(crate) fn extend_to(&self, deadline: Instant) {
        self.cell().extend_to(deadline);
    }

    /// The end flag and the deadline. For a lock carried by a session the deadline in it is only a floor
    /// under the session's while the lock lasts: read it with [`LeaseState::deadline`].
    pub(crate) fn cell(&self) -> &LeaseCell {
        match &self.cell {
            Cell::Own(cell) => cell,
            Cell::Table(cell) => cell.get(),
            Cell::Carrier(carrier) => carrier.cell(),
            Cell::Carried(cell) => cell.own(),
        }
    }

    /// Marks the lease ended (a carried lock's deadline stops following its session).
    fn set_ended(&self) {
        match &self.cell {
            Cell::Carried(cell) => cell.set_ended(),
            Cell::Own(_) | Cell::Table(_) | Cell::Carrier(_) => self.cell().set_ended(),
        }
    }

    /// Records that the lease is gone for `reason`, unless it has already ended (released or lost): only
    /// the first end counts. Returns whether this call ended it. [`LockEvent::Lost`] is recorded before
    /// anyone waiting in [`LeaseState::wait_lost`] wakes, so a reader of the event log after `lost()`
    /// sees it.
    pub(crate) fn mark_lost(&self, reason: LossReason) -> bool {
        let detected_at = Instant::now();
        self.end_with(|| {
            self.events.emit(|| LockEvent::Lost {
                key: self.key.clone(),
                detected_at,
                reason: reason.clone(),
            });
            LeaseEnd::Lost(reason.clone())
        })
    }

    /// Records that the holder released the lease, unless it has already ended. Returns whether this call
    /// ended it.
    pub(crate) fn mark_released(&self) -> bool {
        self.end_with(|| LeaseEnd::Released)
    }

    /// Ends the lease with what `end` returns, unless it has already ended; `end` runs only if it has
    /// not, and before the end flag is set and any waiter wakes. Returns whether this call ended it.
    fn end_with(&self, end: impl FnOnce() -> LeaseEnd) -> bool {
        let mut first = false;
        self.end.get_or_init(|| {
            first = true;
            end()
        });
        if first {
            self.set_ended();
            self.ended.notify_waiters();
        }
        first
    }

    /// How the lease ended, if it has.
    pub(crate) fn end(&self) -> Option<LeaseEnd> {
        if !self.has_ended() {
            return None;
        }
        self.end.get().cloned()
    }

    /// The loss reason, if the lease is known to be lost.
    pub(crate) fn loss(&self) -> Option<LossReason> {
        match self.end() {
            Some(LeaseEnd::Lost(reason)) => Some(reason),
            _ => None,
        }
    }

    /// Whether the lease has ended (released or lost).
    pub(crate) fn has_ended(&self) -> bool {
        self.cell().has_ended()
    }

    /// Not ended and the deadline not passed.
    pub(crate) fn is_held(&self) -> bool {
        !self.has_ended() && Instant::now() < self.deadline()
    }

    /// Resolves when the lease is marked lost, or when the local deadline passes without an extension (then
    /// it marks the lease lost with [`LossReason::Expired`]). A lease that is released is not lost: then
    /// this never resolves.
    pub(crate) async fn wait_lost(&self) -> LossReason {
        loop {
            // Registered before `end` is read, so an end set in between still wakes it.
            let mut notified = std::pin::pin!(self.ended.notified());
            notified.as_mut().enable();
            match self.end.get() {
                Some(LeaseEnd::Lost(reason)) => return reason.clone(),
                Some(LeaseEnd::Released) => return std::future::pending().await,
                None => {}
            }
            let deadline = self.deadline();
            tokio::select! {
                _ = notified => {}
                _ = tokio::time::sleep_until(deadline.into()) => {
                    if Instant::now() >= self.deadline() {
                        self.mark_lost(LossReason::Expired);
                    }
                }
            }
        }
    }
}

/// The strategy-specific part of a lease: how to release it and how to abandon it.
#[async_trait]
pub(crate) trait LeaseHandle: Send + Sync + fmt::Debug {
    /// Releases the hold on the server. Must stop renewal whatever the outcome. Returns
    /// [`LockError::NotHeld`] when the server says the caller no longer held it.
    async fn release(self: Box<Self>) -> Result<(), LockError>;

    /// Called from `Drop` without a release: stop renewal now, release in the background if possible.
    /// Must not block and must not panic, also outside a tokio runtime.
    fn abandon(self: Box<Self>);
}

/// The proof of holding a lock. Release it with [`Lease::release`]; dropping it stops renewal at once and
/// releases in the background.
#[derive(Debug)]
pub struct Lease {
    key: Arc<str>,
    owner: OwnerId,
    token: FencingToken,
    mode: LeaseMode,
    acquired_at: Instant,
    state: Arc<LeaseState>,
    handle: Option<Box<dyn LeaseHandle>>,
}

impl Lease {
    /// Assembles a lease. `sent_at` is when the acquire request that succeeded was sent; `state` carries the
    /// deadline computed from it.
    pub(crate) fn new(
        owner: OwnerId,
        token: FencingToken,
        mode: LeaseMode,
        sent_at: Instant,
        state: Arc<LeaseState>,
        handle: Box<dyn LeaseHandle>,
    ) -> Self {
        Lease {
            key: state.key().clone(),
            owner,
            token,
            mode,
            acquired_at: sent_at,
            state,
            handle: Some(handle),
        }
    }

    /// The lock key.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// The holder's owner id.
    pub fn owner(&self) -> &OwnerId {
        &self.owner
    }

    /// The fencing token (strictly increasing per key across holders).
    pub fn token(&self) -> FencingToken {
        self.token
    }

    /// The lease mode.
    pub fn mode(&self) -> LeaseMode {
        self.mode
    }

    /// When the acquire request that succeeded was sent (the base of the first deadline).
    pub fn acquired_at(&self) -> Instant {
        self.acquired_at
    }

    /// The conservative local deadline.
    pub fn deadline(&self) -> Instant {
        self.state.deadline()
    }

    /// The holder's local belief: not known lost and the deadline not passed.
    pub fn is_held(&self) -> bool {
        self.state.is_held()
    }

    /// Resolves (with the reason) once the strategy knows the lease is gone, or the local deadline passes.
    /// The future owns what it needs, so it can be raced against the guarded work. A lease that is
    /// released is not lost: a `lost()` future still pending then never resolves (drop it).
    pub fn lost(&self) -> impl Future<Output = LossReason> + Send + 'static {
        let state = self.state.clone();
        async move { state.wait_lost().await }
    }

    /// Releases the lock. Renewal stops whatever the outcome; [`LockError::NotHeld`] means it had already
    /// expired or been taken.
    pub async fn release(mut self) -> Result<(), LockError> {
        // A lease already lost, or past its conservative deadline, was not held up to this release, even
        // if the server has not let the key go yet (etcd revokes an expired lease up to ~0.5 s late): the
        // strategy still cleans up, but the answer is `NotHeld`.
        let held = self.state.is_held();
        let not_held = || LockError::NotHeld {
            key: self.key.to_string(),
        };
        match self.handle.take() {
            Some(handle) => match handle.release().await {
                Ok(()) if !held => Err(not_held()),
                other => other,
            },
            None => Err(not_held()),
        }
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        if let Some(handle) = self.handle.take() {
            handle.abandon();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn a_lease_state_keeps_its_deadline_in_its_table_cell_and_gives_it_back() {
        let table = LeaseTable::new();
        let deadline = Instant::now() + Duration::from_secs(5);
        let state =
            LeaseState::in_table(&table, "k".into(), deadline, Events::none(), Duration::ZERO);
        assert_eq!(table.in_use(), 1);
        let cell = state.table_cell().expect("a table cell").clone();
        assert_eq!(cell.get().deadline(), deadline);
        state.mark_released();
        assert!(cell.get().has_ended());
        drop(cell);
        drop(state);
        assert_eq!(table.in_use(), 0);
    }

    /// The race a lockbench strategy must not run: its holder's timer and the server's expiry of the
    /// same lease, both at `sent + ttl`. It gives the lease up 1 % + 2 ms before, through every
    /// extension; a model of a library with no margin gives it up at the server-side deadline.
    #[test]
    fn a_holder_of_lockbenchs_own_gives_a_lease_up_before_the_server_can_expire_it() {
        let sent = Instant::now();
        let ttl = Duration::from_secs(1);
        let early = LeaseState::noticing_early(
            "k".into(),
            sent + ttl,
            Events::none(),
            notice_allowance(ttl),
        );
        let model = LeaseState::new("k".into(), sent + ttl, Events::none());
        assert_eq!(early.deadline(), sent + Duration::from_millis(988));
        assert_eq!(model.deadline(), sent + ttl);
        early.extend_to(sent + 2 * ttl);
        assert_eq!(early.deadline(), sent + Duration::from_millis(1988));
        // An allowance longer than what is left: given up at once, while the model still holds.
        let wide = notice_allowance(Duration::from_secs(300));
        let gone = LeaseState::noticing_early("k".into(), sent + ttl, Events::none(), wide);
        assert!(!gone.is_held());
        assert!(model.is_held());
    }

    /// A waiter on `lost()` wakes when another task marks the lease lost, with one `Lost` event
    /// recorded before it wakes; only the first end counts; a released lease is never lost.
    #[tokio::test]
    async fn a_waiter_wakes_on_the_first_end_only_and_never_for_a_release() {
        let log = crate::event::EventLog::new();
        let far = Instant::now() + Duration::from_secs(60);
        let state = LeaseState::new("k".into(), far, Events::to(log.clone()));
        let waiter = tokio::spawn({
            let state = state.clone();
            async move { state.wait_lost().await }
        });
        tokio::task::yield_now().await;
        let marker = {
            let state = state.clone();
            std::thread::spawn(move || state.mark_lost(LossReason::SessionExpired))
        };
        assert!(marker.join().expect("the marking thread"));
        let reason = tokio::time::timeout(Duration::from_secs(5), waiter).await;
        let reason = reason.expect("the waiter woke").expect("the waiter task");
        assert_eq!(reason, LossReason::SessionExpired);
        assert!(!state.mark_lost(LossReason::Expired));
        assert!(!state.mark_released());
        assert_eq!(state.loss(), Some(LossReason::SessionExpired));
        assert_eq!(log.count(|e| matches!(e, LockEvent::Lost { .. })), 1);

        let released = LeaseState::new("r".into(), far, Events::to(log.clone()));
        assert!(released.mark_released());
        assert!(!released.mark_lost(LossReason::Expired));
        let never = tokio::time::timeout(Duration::from_millis(50), released.wait_lost()).await;
        assert!(never.is_err(), "a released lease resolved lost()");
        assert_eq!(released.end(), Some(LeaseEnd::Released));
        assert_eq!(log.count(|e| matches!(e, LockEvent::Lost { .. })), 1);
    }
}
