//! Renewal machinery shared by the renewing strategies: the registry of holds (one renewal entry per key
//! per owner, re-entrant holds counted on it, as Redisson keeps them), the bookkeeping of one renewal
//! attempt ([`record_renewal`]: every renewer — timer loop, batch scheduler, thread, event-driven task —
//! extends, reports and gives up the same way) and the watchdog renew loop built on it.

use std::collections::HashMap;
use std::fmt::Display;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::error::LockError;
use crate::event::{Events, LockEvent, Renewed};
use crate::lease::{LeaseEnd, LeaseState, LossReason, notice_allowance};
#[cfg(any(feature = "etcd", feature = "zookeeper"))]
use crate::lease_cells::CarrierCell;
use crate::lease_cells::{LeaseCell, LeaseTable};
use crate::settings::Renewal;

/// Stops a running renewal. Implemented by whatever runs it: a task, a thread, a batch scheduler slot.
pub(crate) trait StopRenewal: Send {
    /// Stops it now, without blocking.
    fn stop(self: Box<Self>);
}

impl StopRenewal for tokio::task::AbortHandle {
    fn stop(self: Box<Self>) {
        self.abort();
    }
}

struct Entry {
    generation: u64,
    holds: u32,
    state: Arc<LeaseState>,
    renewal: Option<Box<dyn StopRenewal>>,
}

/// A hold's registry key: `(lock key, owner)`.
type HoldKey = (Arc<str>, Arc<str>);

/// One client's held locks: `(key, owner) → entry`. An entry has a hold count, the shared lease state and
/// at most one renewal.
#[derive(Default)]
pub(crate) struct Holds {
    entries: Mutex<HashMap<HoldKey, Entry>>,
    next_generation: std::sync::atomic::AtomicU64,
    /// Where new lease states keep their cells, when their renewer reads many side by side.
    cells: Option<Arc<LeaseTable>>,
    /// Whether holders give a lease up [`notice_allowance`] before its server-side deadline (a
    /// strategy of lockbench's own), or at it (a model of a library that keeps no margin).
    early: bool,
}

impl std::fmt::Debug for Holds {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Holds").field("held", &self.len()).finish()
    }
}

/// Identifies one registered hold, so a late release of an old entry never touches a newer one.
#[derive(Debug, Clone)]
pub(crate) struct HoldTicket {
    pub(crate) key: Arc<str>,
    pub(crate) owner: Arc<str>,
    generation: u64,
}

impl Holds {
    /// An empty registry whose holders give a lease up [`notice_allowance`] before its server-side
    /// deadline.
    pub(crate) fn noticing_early() -> Self {
        Holds {
            entries: Mutex::default(),
            next_generation: Default::default(),
            cells: None,
            early: true,
        }
    }

    /// As [`Holds::noticing_early`], with the lease states' cells in `table`.
    pub(crate) fn in_table(table: Arc<LeaseTable>) -> Self {
        Holds {
            entries: Mutex::default(),
            next_generation: Default::default(),
            cells: Some(table),
            early: true,
        }
    }

    /// Registers one more hold of `key` by `owner`, whose server-side TTL now runs to `deadline`.
    ///
    /// A live entry gains a hold and its deadline moves to `deadline`; otherwise a new entry is made. If
    /// `start_renewal` is given and the entry has no renewal yet, it is called with the state and its result
    /// kept. No await happens here, so a cancelled acquire cannot leave a half-registered hold.
    pub(crate) fn enter(
        &self,
        key: &Arc<str>,
        owner: &Arc<str>,
        deadline: Instant,
        events: &Events,
        start_renewal: Option<&dyn Fn(Arc<LeaseState>) -> Box<dyn StopRenewal>>,
    ) -> (Arc<LeaseState>, HoldTicket) {
        let mut entries = self.lock();
        let slot = (key.clone(), owner.clone());
        let reusable = entries.get(&slot).is_some_and(|e| !e.state.has_ended());
        if !reusable {
            if let Some(old) = entries.remove(&slot)
                && let Some(r) = old.renewal
            {
                r.stop();
            }
            let generation = self
                .next_generation
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let allowance = if self.early {
                notice_allowance(deadline.saturating_duration_since(Instant::now()))
            } else {
                Duration::ZERO
            };
            entries.insert(
                slot.clone(),
                Entry {
                    generation,
                    holds: 0,
                    state: match &self.cells {
                        Some(table) => LeaseState::in_table(
                            table,
                            key.clone(),
                            deadline,
                            events.clone(),
                            allowance,
                        ),
                        None => LeaseState::noticing_early(
                            key.clone(),
                            deadline,
                            events.clone(),
                            allowance,
                        ),
                    },
                    renewal: None,
                },
            );
        }
        let entry = entries.get_mut(&slot).expect("entry inserted above");
        entry.holds += 1;
        entry.state.extend_to(deadline);
        if let (None, Some(start)) = (&entry.renewal, start_renewal) {
            entry.renewal = Some(start(entry.state.clone()));
        }
        let ticket = HoldTicket {
            key: key.clone(),
            owner: owner.clone(),
            generation: entry.generation,
        };
        (entry.state.clone(), ticket)
    }

    /// Removes one hold. When it was the last, stops the renewal, marks the state released and returns true.
    pub(crate) fn leave(&self, ticket: &HoldTicket) -> bool {
        let mut entries = self.lock();
        let slot = (ticket.key.clone(), ticket.owner.clone());
        let Some(entry) = entries.get_mut(&slot) else {
            return false;
        };
        if entry.generation != ticket.generation {
            return false;
        }
        entry.holds = entry.holds.saturating_sub(1);
        if entry.holds > 0 {
            return false;
        }
        let entry = entries.remove(&slot).expect("entry present above");
        drop(entries);
        if let Some(r) = entry.renewal {
            r.stop();
        }
        entry.state.mark_released();
        true
    }

    /// How many (key, owner) entries are registered.
    pub(crate) fn len(&self) -> usize {
        self.lock().len()
    }

    /// The states of every live entry, for batch schedulers.
    #[allow(dead_code)]
    pub(crate) fn states(&self) -> Vec<(HoldTicket, Arc<LeaseState>)> {
        self.lock()
            .iter()
            .map(|((key, owner), e)| {
                (
                    HoldTicket {
                        key: key.clone(),
                        owner: owner.clone(),
                        generation: e.generation,
                    },
                    e.state.clone(),
                )
            })
            .collect()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<HoldKey, Entry>> {
        self.entries.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Drop for Holds {
    fn drop(&mut self) {
        let entries = std::mem::take(&mut *self.lock());
        for (_, entry) in entries {
            if let Some(r) = entry.renewal {
                r.stop();
            }
        }
    }
}

/// What one renewal call found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RenewOutcome {
    /// Extended; the TTL left before the extension, when known.
    Extended {
        /// The server's remaining TTL before this renewal (the safety margin).
        remaining_before: Option<Duration>,
    },
    /// The lock is no longer ours.
    Gone,
}

/// How a watchdog renews: the TTL each renewal grants and how often it runs.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RenewalPlan {
    /// The TTL a successful renewal sets.
    pub(crate) ttl: Duration,
    /// Time between a renewal's answer and the next renewal (Redisson: timeout / 3).
    pub(crate) period: Duration,
}

impl From<Renewal> for RenewalPlan {
    /// The plan for a watchdog lease of `renewal.ttl` renewed every `renewal.period()`.
    fn from(renewal: Renewal) -> Self {
        RenewalPlan {
            ttl: renewal.ttl,
            period: renewal.period(),
        }
    }
}

impl RenewalPlan {
    /// Retry interval after a failed renewal: often enough to land before the deadline.
    pub(crate) fn retry(&self) -> Duration {
        (self.period / 3).max(Duration::from_millis(5))
    }
}

/// Reports that `key`'s next renewal is planned for `due`.
pub(crate) fn announce_renewal(events: &Events, key: &Arc<str>, due: Instant) {
    announce_renewal_at(events, key, due, Instant::now());
}

/// Reports that `key`'s next renewal was planned for `due` at `at` (a caller planning many at once
/// reads the clock once).
pub(crate) fn announce_renewal_at(events: &Events, key: &Arc<str>, due: Instant, at: Instant) {
    events.emit_plan(|| LockEvent::RenewScheduled {
        key: key.clone(),
        at,
        due,
    });
}

/// When one renewal attempt was due, sent and answered, and (for event-driven renewal) how late its
/// trigger arrived.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RenewTiming {
    pub(crate) scheduled_at: Instant,
    pub(crate) sent_at: Instant,
    pub(crate) done_at: Instant,
    pub(crate) trigger_lag: Option<Duration>,
}

/// What a renewer does after one attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AfterRenewal {
    /// Extended: plan the next one.
    Extended,
    /// The lease is lost (marked) or has ended: stop.
    Lost,
    /// Failed before the deadline: try again at `at` (a retry interval later, never past the deadline).
    Retry {
        /// When to try again.
        at: Instant,
    },
}

/// Records one renewal attempt of `state` on `plan` (nothing, and stop, if the lease has ended meanwhile):
///
/// - `Extended`: the deadline moves to `sent_at + ttl` and `Renewed` is emitted.
/// - `Gone`: the lease is marked lost with `gone` (`RenewRejected`; `TakenOver` for a re-acquire).
/// - An error: `RenewFailed`, then `Expired` once the local deadline has passed, else a retry
///   [`RenewalPlan::retry`] later (at the latest at the deadline).
pub(crate) fn record_renewal(
    state: &LeaseState,
    events: &Events,
    plan: RenewalPlan,
    timing: RenewTiming,
    result: Result<RenewOutcome, &dyn Display>,
    gone: LossReason,
) -> AfterRenewal {
    // A lease that ended while the call was in flight is never extended or reported renewed. After a
    // release nothing more is reported; after a loss only the in-flight attempt's own failure is (a
    // thread cut off at the deadline says so).
    if let Some(end) = state.end() {
        if let (LeaseEnd::Lost(_), Err(error)) = (end, result) {
            events.emit(|| LockEvent::RenewFailed {
                key: state.key().clone(),
                at: timing.done_at,
                error: error.to_string(),
            });
        }
        return AfterRenewal::Lost;
    }
    match result {
        Ok(RenewOutcome::Extended { remaining_before }) => {
            let cell = state.cell();
            extended(
                cell,
                state.key(),
                events,
                timing,
                remaining_before,
                plan.ttl,
            );
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
            let deadline = state.deadline();
            if timing.done_at >= deadline {
                state.mark_lost(LossReason::Expired);
                AfterRenewal::Lost
            } else {
                AfterRenewal::Retry {
                    at: (timing.done_at + plan.retry()).min(deadline),
                }
            }
        }
    }
}

/// A renewal of `key` timed by `timing` granted `granted` (counted from its send time, conservatively):
/// unless the lease has ended, moves the deadline in its `cell` there and reports the renewal with the
/// TTL found before, when known. Returns whether it did.
pub(crate) fn extended(
    cell: &LeaseCell,
    key: &Arc<str>,
    events: &Events,
    timing: RenewTiming,
    remaining_before: Option<Duration>,
    granted: Duration,
) -> bool {
    if cell.has_ended() {
        return false;
    }
    cell.extend_to(timing.sent_at + granted);
    events.renewed(key, || Renewed {
        scheduled_at: timing.scheduled_at,
        sent_at: timing.sent_at,
        done_at: timing.done_at,
        remaining_ttl_before: remaining_before,
        granted_ttl: granted,
        trigger_lag: timing.trigger_lag,
    });
    true
}

/// Renews `state` on `plan` with `renew` until the lease is lost. The caller stops it (aborts the task) on
/// release. The first renewal is due `plan.period` after `first_due_from`; each attempt is recorded by
/// [`record_renewal`] (next due one period after a success's answer), and a call that hangs is cut off at
/// the local deadline.
pub(crate) async fn renew_until_lost<F, Fut>(
    state: Arc<LeaseState>,
    plan: RenewalPlan,
    first_due_from: Instant,
    events: Events,
    mut renew: F,
) where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<RenewOutcome, LockError>>,
{
    let mut due = first_due_from + plan.period;
    while !state.has_ended() {
        announce_renewal(&events, state.key(), due);
        tokio::time::sleep_until(due.into()).await;
        let sent_at = Instant::now();
        let deadline = state.deadline();
        let outcome = tokio::time::timeout_at(deadline.into(), renew()).await;
        let timing = RenewTiming {
            scheduled_at: due,
            sent_at,
            done_at: Instant::now(),
            trigger_lag: None,
        };
        let result = match &outcome {
            Ok(Ok(renewed)) => Ok(*renewed),
            Ok(Err(error)) => Err(error as &dyn Display),
            Err(_elapsed) => {
                Err(&"renewal got no answer before the local deadline" as &dyn Display)
            }
        };
        let gone = LossReason::RenewRejected;
        match record_renewal(&state, &events, plan, timing, result, gone) {
            AfterRenewal::Extended => due = timing.done_at + plan.period,
            AfterRenewal::Lost => return,
            AfterRenewal::Retry { at } => due = at,
        }
    }
}

// ---------------------------------------------------------------------------------------------------------
// Locks renewed by one client-wide session: an etcd lease shared by a client's locks, a ZooKeeper session.
// ---------------------------------------------------------------------------------------------------------

/// One lock held under a session: its own state (so one lock can be released or taken over alone), the
/// strategy's data about it, and its re-entrant hold count.
#[cfg(any(feature = "etcd", feature = "zookeeper"))]
pub(crate) struct SessionHold<P> {
    pub(crate) state: Arc<LeaseState>,
    pub(crate) payload: P,
    /// Changed only under the registry's lock.
    holds: std::sync::atomic::AtomicU32,
}

#[cfg(any(feature = "etcd", feature = "zookeeper"))]
impl<P: std::fmt::Debug> std::fmt::Debug for SessionHold<P> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionHold")
            .field("state", &self.state)
            .field("payload", &self.payload)
            .finish()
    }
}

/// The locks a client holds under one session, by `(key, owner)`. Every lock's deadline is the
/// session's (its state reads the session's cell, so a renewal moves them all in one write) and every
/// lock is lost with the session; a lock can also end alone (its own end flag), and then its deadline
/// stays where it was.
#[cfg(any(feature = "etcd", feature = "zookeeper"))]
pub(crate) struct SessionHolds<P> {
    /// The session's deadline and end flag, which its locks' states read, and how many of them last.
    carrier: Arc<CarrierCell>,
    session: Arc<LeaseState>,
    entries: Mutex<HashMap<HoldKey, Arc<SessionHold<P>>>>,
}

#[cfg(any(feature = "etcd", feature = "zookeeper"))]
impl<P> std::fmt::Debug for SessionHolds<P> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionHolds")
            .field("session", &self.session)
            .field("held", &self.len())
            .finish()
    }
}

#[cfg(any(feature = "etcd", feature = "zookeeper"))]
impl<P> SessionHolds<P> {
    /// A session named `name` (used in its own state only, never in events) alive until `deadline`.
    pub(crate) fn new(name: &str, deadline: Instant) -> Self {
        let carrier = CarrierCell::new(deadline);
        SessionHolds {
            session: LeaseState::carrier(name.into(), &carrier),
            carrier,
            entries: Mutex::default(),
        }
    }

    /// The session's own deadline and loss.
    pub(crate) fn session(&self) -> &Arc<LeaseState> {
        &self.session
    }

    /// A re-entrant acquire: a live hold of `key` by `owner` gains one more hold. No server call needed.
    #[cfg(feature = "zookeeper")]
    pub(crate) fn reenter(&self, key: &Arc<str>, owner: &Arc<str>) -> Option<Arc<SessionHold<P>>> {
        let entries = self.lock();
        let hold = entries.get(&(key.clone(), owner.clone()))?;
        if hold.state.has_ended() {
            return None;
        }
        hold.holds
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Some(hold.clone())
    }

    /// Registers a new hold whose deadline is the session's. Fails with the session's loss reason once the
    /// session is lost, so a lock can never outlive the session that carries it. `announce` (which
    /// reports `Acquired`) runs only when the hold is registered, before any renewal can see it.
    pub(crate) fn insert(
        &self,
        key: &Arc<str>,
        owner: &Arc<str>,
        events: &Events,
        payload: P,
        announce: impl FnOnce(),
    ) -> Result<Arc<SessionHold<P>>, LossReason> {
        let mut entries = self.lock();
        if let Some(reason) = self.session.loss() {
            return Err(reason);
        }
        announce();
        let hold = Arc::new(SessionHold {
            state: LeaseState::carried(key.clone(), &self.carrier, events.clone()),
            payload,
            holds: std::sync::atomic::AtomicU32::new(1),
        });
        entries.insert((key.clone(), owner.clone()), hold.clone());
        Ok(hold)
    }

    /// Removes one hold. On the last it unregisters the lock, marks its state released and returns true.
    pub(crate) fn leave(
        &self,
        key: &Arc<str>,
        owner: &Arc<str>,
        hold: &Arc<SessionHold<P>>,
    ) -> bool {
        let mut entries = self.lock();
        let left = hold
            .holds
            .load(std::sync::atomic::Ordering::Relaxed)
            .saturating_sub(1);
        hold.holds.store(left, std::sync::atomic::Ordering::Relaxed);
        if left > 0 {
            return false;
        }
        let slot = (key.clone(), owner.clone());
        if entries.get(&slot).is_some_and(|e| Arc::ptr_eq(e, hold)) {
            entries.remove(&slot);
        }
        drop(entries);
        hold.state.mark_released();
        true
    }

    /// How many locks are held under the session.
    pub(crate) fn len(&self) -> usize {
        self.lock().len()
    }

    /// Every lock held under the session.
    #[cfg(feature = "zookeeper")]
    pub(crate) fn held(&self) -> Vec<Arc<SessionHold<P>>> {
        self.lock().values().cloned().collect()
    }

    fn states(&self) -> Vec<Arc<LeaseState>> {
        self.lock().values().map(|h| h.state.clone()).collect()
    }

    /// A session renewal sent at `sent_at` was granted `granted`: the session and every lock under it
    /// that has not ended now live to `sent_at + granted` (one write: they read the session's deadline);
    /// one `Renewed` event per such lock, or, for a sink that reads no renewal keys, one call with their
    /// count. Its cost does not grow with the locks held unless the sink reads their keys.
    pub(crate) fn renewed(&self, renewal: SessionRenewed, events: &Events) {
        self.session.extend_to(renewal.sent_at + renewal.granted);
        let renewed = Renewed {
            scheduled_at: renewal.scheduled_at,
            sent_at: renewal.sent_at,
            done_at: renewal.done_at,
            remaining_ttl_before: None,
            granted_ttl: renewal.granted,
            trigger_lag: None,
        };
        if !events.renewal_keys_wanted() {
            return events.renewals(self.carrier.carried(), renewed);
        }
        for state in self.states() {
            if !state.has_ended() {
                events.renewed(state.key(), || renewed);
            }
        }
    }

    /// One `RenewScheduled` event per lock under the session.
    fn scheduled(&self, due: Instant, events: &Events) {
        if !events.plans_wanted() {
            return;
        }
        let at = Instant::now();
        for state in self.states() {
            events.emit_plan(|| LockEvent::RenewScheduled {
                key: state.key().clone(),
                at,
                due,
            });
        }
    }

    /// A session renewal failed: one `RenewFailed` event per lock under the session.
    fn renew_failed(&self, at: Instant, error: &str, events: &Events) {
        if !events.enabled() {
            return;
        }
        for state in self.states() {
            events.emit(|| LockEvent::RenewFailed {
                key: state.key().clone(),
                at,
                error: error.to_owned(),
            });
        }
    }

    /// The session is gone: it and every lock under it are marked lost with `reason`.
    pub(crate) fn lose(&self, reason: LossReason) {
        // Marking the session first makes a concurrent `insert` either fail or be swept below.
        self.session.mark_lost(reason.clone());
        for state in self.states() {
            state.mark_lost(reason.clone());
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<HoldKey, Arc<SessionHold<P>>>> {
        self.entries.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The timing of one successful session renewal.
#[cfg(any(feature = "etcd", feature = "zookeeper"))]
#[derive(Debug, Clone, Copy)]
pub(crate) struct SessionRenewed {
    /// When it was due.
    pub(crate) scheduled_at: Instant,
    /// When it was sent.
    pub(crate) sent_at: Instant,
    /// When the answer came back.
    pub(crate) done_at: Instant,
    /// The TTL the server granted, counted from `sent_at` (conservatively).
    pub(crate) granted: Duration,
}

/// What one session renewal found.
#[cfg(any(feature = "etcd", feature = "zookeeper"))]
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum SessionRenewal {
    /// The session lives on for `granted` from when the renewal was sent.
    Extended {
        /// The TTL the server granted.
        granted: Duration,
    },
    /// The session is gone for good.
    Gone(LossReason),
}

/// How a session is renewed: one call renews the whole session.
#[cfg(any(feature = "etcd", feature = "zookeeper"))]
#[async_trait::async_trait]
pub(crate) trait RenewSession: Send {
    /// Renews the session once. An error is a failed attempt (retried until the deadline).
    async fn renew(&mut self) -> Result<SessionRenewal, LockError>;
}

/// How often a session is renewed and what a renewal that never lands counts as.
#[cfg(any(feature = "etcd", feature = "zookeeper"))]
#[derive(Debug, Clone, Copy)]
pub(crate) struct SessionPlan {
    /// Time between a renewal's answer and the next renewal.
    pub(crate) period: Duration,
    /// The loss reported when renewals keep failing until the session's deadline, given the last error.
    pub(crate) deadline_loss: fn(String) -> LossReason,
}

/// Renews a session on `plan` with `renewer` until it is lost, whether or not locks are held (so the
/// session's own deadline stays true for the next acquire); every lock under `holds` follows. The caller
/// stops it (aborts the task) when the session is closed. The first renewal is due at `first_due`.
///
/// - `Extended`: the session and its locks live to `sent_at + granted`; `Renewed` per lock.
/// - `Gone`: the session and its locks are lost with that reason.
/// - An error or no answer: `RenewFailed` per lock, retried until the session's deadline, then lost with
///   `plan.deadline_loss`.
#[cfg(any(feature = "etcd", feature = "zookeeper"))]
pub(crate) async fn renew_session_until_lost<P: Send + Sync>(
    holds: Arc<SessionHolds<P>>,
    plan: SessionPlan,
    first_due: Instant,
    events: Events,
    mut renewer: impl RenewSession,
) {
    let session = holds.session().clone();
    let retry = (plan.period / 3).max(Duration::from_millis(5));
    let mut due = first_due;
    while !session.has_ended() {
        holds.scheduled(due, &events);
        tokio::time::sleep_until(due.into()).await;
        let sent_at = Instant::now();
        let deadline = session.deadline();
        let outcome = tokio::time::timeout_at(deadline.into(), renewer.renew()).await;
        let done_at = Instant::now();
        let error = match outcome {
            Ok(Ok(SessionRenewal::Extended { granted })) => {
                let renewal = SessionRenewed {
                    scheduled_at: due,
                    sent_at,
                    done_at,
                    granted,
                };
                holds.renewed(renewal, &events);
                due = done_at + plan.period;
                continue;
            }
            Ok(Ok(SessionRenewal::Gone(reason))) => {
                holds.lose(reason);
                return;
            }
            Ok(Err(error)) => error.to_string(),
            Err(_elapsed) => "session renewal got no answer before the local deadline".to_owned(),
        };
        holds.renew_failed(done_at, &error, &events);
        if done_at >= session.deadline() {
            holds.lose((plan.deadline_loss)(error));
            return;
        }
        due = (done_at + retry).min(session.deadline());
    }
}

/// Runs `work` on the current tokio runtime in the background, if there is one. Never blocks and never
/// panics outside a runtime: then the work is skipped, and what it would have cleaned up expires by its
/// TTL or session instead.
#[cfg(any(
    feature = "etcd",
    feature = "zookeeper",
    feature = "redis",
    feature = "postgres",
    feature = "mysql"
))]
pub(crate) fn in_background(work: impl Future<Output = ()> + Send + 'static) {
    if let Ok(runtime) = tokio::runtime::Handle::try_current() {
        runtime.spawn(work);
    }
}

#[cfg(all(test, any(feature = "etcd", feature = "zookeeper")))]
mod tests {
    use super::*;
    use crate::event::EventLog;

    /// A sink that reads no renewal keys and keeps the count of each call it got.
    #[derive(Debug, Default)]
    struct KeylessCounter {
        calls: Mutex<Vec<u64>>,
    }

    impl crate::event::EventSink for KeylessCounter {
        fn record(&self, _event: LockEvent) {}

        fn reads_renewal_keys(&self) -> bool {
            false
        }

        fn record_renewals(&self, count: u64, _renewed: Renewed) {
            self.calls.lock().expect("not poisoned").push(count);
        }
    }

    /// One renewal of the session moves the deadline of every lock under it; a lock released alone
    /// keeps the deadline it had and gets no `Renewed`, and a lock inserted later starts at the session's. A
    /// sink that reads no keys gets the renewals of every lasting lock in one call.
    #[test]
    fn a_session_renewal_moves_every_lock_under_it_but_one_released_alone() {
        let sent = Instant::now();
        let holds = SessionHolds::<()>::new("session", sent + Duration::from_secs(3));
        let log = EventLog::new();
        let events = Events::to(log.clone());
        let owner: Arc<str> = "owner".into();
        let keys: Vec<Arc<str>> = (0..100).map(|i| format!("k{i}").into()).collect();
        let held: Vec<_> = keys
            .iter()
            .map(|key| holds.insert(key, &owner, &events, (), || {}))
            .collect::<Result<_, _>>()
            .expect("the session is live");
        assert!(holds.leave(&keys[0], &owner, &held[0]));
        let renewal = SessionRenewed {
            scheduled_at: sent,
            sent_at: sent + Duration::from_secs(1),
            done_at: sent + Duration::from_secs(1),
            granted: Duration::from_secs(3),
        };
        holds.renewed(renewal, &events);
        let until = sent + Duration::from_secs(4);
        assert_eq!(holds.session().deadline(), until);
        assert!(held[1..].iter().all(|h| h.state.deadline() == until));
        assert_eq!(held[0].state.deadline(), sent + Duration::from_secs(3));
        assert_eq!(held[0].state.end(), Some(LeaseEnd::Released));
        let renewed = log.count(|e| e.renewal().is_some());
        assert_eq!(renewed, 99);
        assert!(log.snapshot().iter().all(|e| e.key() != "k0"));
        let late = holds.insert(&"late".into(), &owner, &events, (), || {});
        assert_eq!(late.expect("live").state.deadline(), until);
        // A sink that reads no keys takes the next renewal of the 100 lasting locks in one call.
        let counter = Arc::new(KeylessCounter::default());
        holds.renewed(renewal, &Events::to(counter.clone()));
        assert_eq!(*counter.calls.lock().expect("not poisoned"), vec![100]);
        // The session's loss still loses every lock that lasted, and only those.
        holds.lose(LossReason::SessionExpired);
        assert!(held[1..].iter().all(|h| h.state.loss().is_some()));
        assert_eq!(held[0].state.end(), Some(LeaseEnd::Released));
    }
}
