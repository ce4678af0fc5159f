//! Batched watchdog renewal, shared by the strategies that renew a client's leases together: one
//! scheduler task per client renews every held lock that is due, in one server call per chunk of locks
//! (as Redisson ≥ 3.44's renewal scheduler does), instead of one timer and one call per lock. Its cost
//! grows with the locks due, not the locks held. The strategy gives each lock a target `T` (what its
//! call needs of it) and builds the call for a chunk of them; the schedule is this module's.
//!
//! While any lock is scheduled the scheduler wakes every tick, [`TICKS_PER_PERIOD`] to a renewal period. Each next renewal is planned
//! [`RENEW_EVERY_TICKS`] (a period less one tick) after the tick the previous one was *due* at (not after
//! its answer), so a lock is renewed a little more often than every period, and the thinnest margin stays
//! at least ⅔ of the TTL (default ratio ⅓) while a chunk goes out no more than one tick late.
//!
//! So a lock keeps its *phase*: its due tick modulo [`RENEW_EVERY_TICKS`]. Locks sit in a
//! [`PhaseTable`], one list per phase, and a tick walks only its phase's list; a renewal answered in
//! time leaves its lock where it is. A new lock's first renewal is due at one of the ticks of the period
//! that ends one period after its acquire was sent, chosen by phase: a phase whose last chunk has room,
//! else the phase with the fewest locks (ties to the latest tick). Few locks then share one call per
//! period, as on a single grid tick; many spread evenly over the period's ticks, so no tick sends a burst
//! of every chunk that queues on the connection and lands late. N held locks cost at most
//! ⌈N / chunk⌉ + [`RENEW_EVERY_TICKS`] − 1 calls per round.
//!
//! Scheduling a lock and taking it out are a push and a removal under a short lock: no task is
//! spawned and, while any lock is scheduled, no thread woken (a new lock's first renewal is never due
//! before the tick the scheduler already sleeps until). The scheduler stops ticking only after a tick
//! with nothing scheduled and no lock scheduled since the tick before; only a lock scheduled while it
//! sleeps so wakes it. So a client that takes and frees one lock over and over wakes it once, and at
//! most once per tick whatever the gaps between its locks.
//!
//! Chunk calls are built lazily, at most [`CHUNKS_IN_FLIGHT`] at a time, from the target each lock
//! was scheduled with (kept in its entry, never re-encoded). [`SCHEDULE`] gives these numbers to a
//! caller that sends the same calls on the same schedule without this code (lockbench's raw yardstick).
//!
//! Per lock, the scheduler records each answer as `renew_until_lost` does for one: an extension with
//! [`extended`] (`Renewed` with the TTL found before, the deadline moved to `sent + ttl`), anything
//! else with `record_renewal` (`Lost` on a `Gone` answer, `RenewFailed` and a retry a third of a
//! period later on an error, `Lost` once the local deadline passes); it announces each planned renewal
//! (`RenewScheduled`). A released lock leaves the schedule at once ([`StopRenewal`]); an answer for it
//! that was already in flight is ignored.
//!
//! Renewing thousands of locks a tick is bound by memory, not by work: a lock whose data is spread
//! over several heap allocations costs a cache miss (and on a VM a page walk) for each. So an
//! extension touches only what sits side by side with the other locks': its entry in its phase's list
//! (its target inline) and its lease's deadline and end flag, which the client's leases keep in this
//! scheduler's [`LeaseTable`]. Its lease state is read only for anything else (a failure, a loss, a
//! planned renewal announced), and a sink that never reads keys takes its `Renewed` without the key
//! being touched ([`crate::EventSink::record_renewed`]).

use std::fmt::Display;
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::{Duration, Instant};

use futures::StreamExt;
use futures::stream::FuturesUnordered;
use tokio::sync::Notify;
use tokio::task::AbortHandle;

use crate::error::LockError;
use crate::event::Events;
use crate::lease::{LeaseState, LossReason};
use crate::lease_cells::{CellRef, LeaseCell, LeaseTable};
use crate::phase_table::{EntryId, PhaseTable};
use crate::renewal::{
    AfterRenewal, RenewOutcome, RenewTiming, RenewalPlan, StopRenewal, announce_renewal_at,
    extended, record_renewal,
};

/// A scheduled lock. Extending it reads only this entry and its lease's cell, both kept side by side with
/// other locks' (its phase's list, the lease table); its lease state is read for anything else.
struct Item<T> {
    target: T,
    /// The lease's deadline and end flag, when they sit in a lease table (else in `state`).
    cell: Option<CellRef>,
    /// Its key is the lock's name that events report; renewal only takes its address.
    state: Arc<LeaseState>,
}

impl<T> Item<T> {
    /// The lease's deadline and end flag.
    fn cell(&self) -> &LeaseCell {
        match &self.cell {
            Some(cell) => cell.get(),
            None => self.state.cell(),
        }
    }
}

/// Ticks per renewal period: the resolution of retries (a third of a period is 4 ticks).
const TICKS_PER_PERIOD: u64 = 12;
/// Ticks from one due renewal to the next: one tick short of a period, so a chunk sent up to a tick
/// (1/12 of a period, TTL/36 at the default ratio) later than the previous one still lands with at least
/// ⅔ of the TTL left. Costs 1/11 more renew calls than a full period would. Also the number of phases.
const RENEW_EVERY_TICKS: u64 = TICKS_PER_PERIOD - 1;
/// Phases a lock's renewals can take within a round.
const PHASES: usize = RENEW_EVERY_TICKS as usize;
/// Renewals of each lock per renewal period: 12/11.
pub(crate) const RENEWALS_PER_PERIOD: f64 = TICKS_PER_PERIOD as f64 / RENEW_EVERY_TICKS as f64;
/// How many chunk calls may be in flight at once.
const CHUNKS_IN_FLIGHT: usize = 16;

/// The timing of batched renewal as numbers, for a caller that sends the same calls on the same
/// schedule without this code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchSchedule {
    /// Scheduler ticks per renewal period.
    pub ticks_per_period: u64,
    /// Ticks from one renewal of a lock to the next, and the number of phases: a lock renews on the
    /// ticks of one phase (tick number modulo this, counted from the scheduler's start), and the locks
    /// spread evenly over the phases, so each tick renews that share of them.
    pub renew_every_ticks: u64,
    /// Chunk calls in flight at once at most.
    pub chunks_in_flight: usize,
}

/// This scheduler's [`BatchSchedule`].
pub(crate) const SCHEDULE: BatchSchedule = BatchSchedule {
    ticks_per_period: TICKS_PER_PERIOD,
    renew_every_ticks: RENEW_EVERY_TICKS,
    chunks_in_flight: CHUNKS_IN_FLIGHT,
};

struct Inner<T> {
    locks: PhaseTable<Item<T>>,
    /// The first tick not yet renewed: a renewal planned earlier is planned for it.
    next_tick: u64,
    /// The tick the scheduler sleeps until (`u64::MAX`: nothing scheduled), or `None` while it works; a
    /// lock planned earlier than it wakes the scheduler.
    sleeping_until: Option<u64>,
    /// Whether a lock was scheduled since the scheduler last planned its sleep: it then stays on its
    /// grid for another tick even if the lock has left again.
    scheduled_lately: bool,
}

/// The tick of a new lock's first renewal, among the `RENEW_EVERY_TICKS` ticks up to `latest`: a phase
/// whose last chunk of `chunk` locks has room, else the least loaded; ties to the latest tick. `load`
/// gives the locks in a tick's phase.
fn first_due(latest: u64, chunk: usize, load: impl Fn(u64) -> usize) -> u64 {
    let earliest = latest.saturating_sub(RENEW_EVERY_TICKS - 1);
    (earliest..=latest)
        .max_by_key(|&tick| {
            let load = load(tick);
            (!load.is_multiple_of(chunk), std::cmp::Reverse(load), tick)
        })
        .unwrap_or(latest)
}

struct Schedule<T> {
    inner: Mutex<Inner<T>>,
    changed: Arc<Notify>,
    /// How often a planned renewal woke the scheduler.
    wakes: AtomicU64,
    plan: RenewalPlan,
    /// Locks per call.
    chunk: usize,
    origin: Instant,
    tick: Duration,
    events: Events,
    /// The backend named by the error of a call cut off at its deadline.
    backend: &'static str,
}

/// One chunk call's locks, by id. Each stays in its list, due at the tick it was sent for, until its
/// answer is applied: only that answer plans its next renewal.
type Chunk = Vec<EntryId>;

impl<T> Schedule<T> {
    fn lock(&self) -> MutexGuard<'_, Inner<T>> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The tick `t` falls in.
    fn tick_of(&self, t: Instant) -> u64 {
        let since = t.saturating_duration_since(self.origin).as_nanos();
        let ticks = since / self.tick.as_nanos().max(1);
        u64::try_from(ticks).unwrap_or(u64::MAX)
    }

    /// When tick `n` starts.
    fn time_of(&self, n: u64) -> Instant {
        let nanos = self.tick.as_nanos().saturating_mul(u128::from(n));
        self.origin + Duration::from_nanos(u64::try_from(nanos).unwrap_or(u64::MAX))
    }

    /// Plans `id`'s next renewal for tick `due` (or the first tick not yet renewed, if that is later)
    /// and announces it as planned `now`; wakes the scheduler if it sleeps past that tick (since a plan
    /// is never earlier than the next tick, only when it sleeps with nothing scheduled).
    fn plan(&self, inner: &mut Inner<T>, id: EntryId, due: u64, now: Instant) {
        let due = due.max(inner.next_tick);
        if !inner.locks.set_due(id, due) {
            return;
        }
        if self.events.plans_wanted()
            && let Some((item, _)) = inner.locks.get(id)
        {
            announce_renewal_at(&self.events, item.state.key(), self.time_of(due), now);
        }
        if inner.sleeping_until.is_some_and(|t| due < t) {
            inner.sleeping_until = None;
            self.wakes.fetch_add(1, Ordering::Relaxed);
            self.changed.notify_one();
        }
    }

    /// Picks up to `chunk` live locks due by `tick` from its phase's list, from position `*from` on,
    /// for one call: drops those whose lease ended and marks those past their deadline lost. Returns
    /// their ids and the earliest deadline.
    ///
    /// The end flag is read even though a released lease has left the schedule already
    /// ([`Unschedule`]): a lease can be marked expired by its holder's `lost()` just as a renewal's
    /// answer extends it, and must not be renewed after that.
    fn pick_chunk(
        &self,
        tick: u64,
        from: &mut usize,
        chunk: usize,
    ) -> (MutexGuard<'_, Inner<T>>, Chunk, Option<Instant>) {
        let mut inner = self.lock();
        let now = Instant::now();
        let phase = inner.locks.phase_of(tick);
        let end = inner.locks.places_in(phase);
        let mut picked = Vec::with_capacity(chunk);
        let mut cut_off: Option<Instant> = None;
        while picked.len() < chunk && *from < end {
            let pos = *from;
            *from += 1;
            let Some((id, item, due)) = inner.locks.at(phase, pos) else {
                continue; // released or moved meanwhile
            };
            if due > tick {
                continue; // due a round later
            }
            let cell = item.cell();
            if cell.has_ended() {
                inner.locks.remove(id);
                continue;
            }
            let deadline = cell.deadline();
            if now >= deadline {
                if let Some(item) = inner.locks.remove(id) {
                    item.state.mark_lost(LossReason::Expired);
                }
                continue;
            }
            cut_off = Some(cut_off.map_or(deadline, |c| c.min(deadline)));
            picked.push(id);
        }
        (inner, picked, cut_off)
    }

    /// Applies one chunk's answers (or its error) to the locks still scheduled and plans their next
    /// renewals. An extension touches only the lock's entry and cell; anything else goes through the
    /// lease state ([`record_renewal`]).
    fn apply(
        &self,
        picked: &Chunk,
        answers: &Result<Vec<RenewOutcome>, LockError>,
        sent_at: Instant,
        done_at: Instant,
    ) {
        let mut inner = self.lock();
        for (i, &id) in picked.iter().enumerate() {
            let Some((item, due)) = inner.locks.get(id) else {
                continue; // released meanwhile
            };
            let result = match answers {
                Ok(answers) => answers.get(i).copied().ok_or(&TOO_FEW as &dyn Display),
                Err(error) => Err(error as &dyn Display),
            };
            let timing = RenewTiming {
                scheduled_at: self.time_of(due),
                sent_at,
                done_at,
                trigger_lag: None,
            };
            // An extension of a live lease is the common case: it needs only the cell. A lease that
            // ended meanwhile, a loss or an error goes through its state.
            let done = match result {
                Ok(RenewOutcome::Extended { remaining_before }) => {
                    let (cell, name, ttl) = (item.cell(), item.state.key(), self.plan.ttl);
                    extended(cell, name, &self.events, timing, remaining_before, ttl)
                }
                _ => false,
            };
            let after = if done {
                AfterRenewal::Extended
            } else {
                let gone = LossReason::RenewRejected;
                record_renewal(&item.state, &self.events, self.plan, timing, result, gone)
            };
            let next = match after {
                AfterRenewal::Extended => next_round(due, inner.next_tick),
                AfterRenewal::Retry { at } => self.tick_of(at),
                AfterRenewal::Lost => {
                    inner.locks.remove(id);
                    continue;
                }
            };
            self.plan(&mut inner, id, next, done_at);
        }
    }
}

/// The tick a lock renewed for tick `due` is next due at: a round later, or as many whole rounds as it
/// takes to reach `next_tick` (the first tick not yet renewed) after a stall, so the lock keeps its phase.
fn next_round(due: u64, next_tick: u64) -> u64 {
    let next = due + RENEW_EVERY_TICKS;
    next + next_tick.saturating_sub(next).div_ceil(RENEW_EVERY_TICKS) * RENEW_EVERY_TICKS
}

/// The error a lock gets when its chunk's answer has no entry for it.
const TOO_FEW: &str = "batch renewal answered with too few results";

/// Takes a lock out of the schedule.
pub(crate) struct Unschedule<T> {
    schedule: Weak<Schedule<T>>,
    id: EntryId,
}

impl<T> std::fmt::Debug for Unschedule<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Unschedule").field("id", &self.id).finish()
    }
}

impl<T> Unschedule<T> {
    /// Takes the lock out now (nothing if the scheduler is gone).
    pub(crate) fn stop(self) {
        if let Some(schedule) = self.schedule.upgrade() {
            schedule.lock().locks.remove(self.id);
        }
    }
}

impl<T: Send + Sync> StopRenewal for Unschedule<T> {
    fn stop(self: Box<Self>) {
        Unschedule::stop(*self);
    }
}

/// One client's batch renewal scheduler.
pub(crate) struct BatchRenewer<T> {
    schedule: Arc<Schedule<T>>,
    task: AbortHandle,
    cells: Arc<LeaseTable>,
}

impl<T: Send + Sync + 'static> std::fmt::Debug for BatchRenewer<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BatchRenewer")
            .field("scheduled", &self.len())
            .finish()
    }
}

impl<T: Send + Sync + 'static> BatchRenewer<T> {
    /// Starts the scheduler. `renew_chunk` builds the call renewing up to `chunk` locks (at once, so it
    /// may borrow them) and the call answers per lock, in their order. A call that gets no answer before
    /// a lock's deadline fails with a `backend` error.
    pub(crate) fn start<F, Fut>(
        plan: RenewalPlan,
        chunk: usize,
        events: Events,
        backend: &'static str,
        renew_chunk: F,
    ) -> Self
    where
        F: Fn(&[&T]) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Vec<RenewOutcome>, LockError>> + Send + 'static,
    {
        let tick = (plan.period / TICKS_PER_PERIOD as u32).max(Duration::from_micros(100));
        let schedule = Arc::new(Schedule {
            inner: Mutex::new(Inner {
                locks: PhaseTable::new(PHASES),
                next_tick: 0,
                sleeping_until: Some(u64::MAX),
                scheduled_lately: false,
            }),
            changed: Arc::new(Notify::new()),
            wakes: AtomicU64::new(0),
            plan,
            chunk: chunk.max(1),
            origin: Instant::now(),
            tick,
            events,
            backend,
        });
        let task = tokio::spawn(run(Arc::downgrade(&schedule), chunk.max(1), renew_chunk));
        BatchRenewer {
            schedule,
            task: task.abort_handle(),
            cells: LeaseTable::new(),
        }
    }

    /// The table where the leases this scheduler renews should keep their cells, so that it reads
    /// them side by side (any lease can be scheduled; one from elsewhere only costs more to read).
    pub(crate) fn lease_table(&self) -> &Arc<LeaseTable> {
        &self.cells
    }

    /// Schedules `state`'s lock, acquired by a request sent at `sent_at`. Never awaits.
    pub(crate) fn schedule(
        &self,
        target: T,
        state: Arc<LeaseState>,
        sent_at: Instant,
    ) -> Unschedule<T> {
        let s = &self.schedule;
        let now = Instant::now();
        let latest = s.tick_of(sent_at + s.plan.period);
        let mut inner = s.lock();
        if inner.locks.len() == 0 {
            // An idle scheduler has not counted the ticks it slept through.
            inner.next_tick = inner.next_tick.max(s.tick_of(now));
        }
        let locks = &inner.locks;
        let due = first_due(latest, s.chunk, |tick| locks.load(locks.phase_of(tick)));
        let due = due.max(inner.next_tick);
        let cell = state.table_cell().cloned();
        let item = Item {
            target,
            cell,
            state,
        };
        let id = inner.locks.insert(item, due);
        inner.scheduled_lately = true;
        s.plan(&mut inner, id, due, now);
        drop(inner);
        Unschedule {
            schedule: Arc::downgrade(s),
            id,
        }
    }

    /// How often scheduling a lock woke the scheduler.
    #[cfg(test)]
    fn wakes(&self) -> u64 {
        self.schedule.wakes.load(Ordering::Relaxed)
    }

    /// How many locks are scheduled.
    pub(crate) fn len(&self) -> usize {
        self.schedule.lock().locks.len()
    }

    /// Stops the scheduler; scheduled locks are left to expire.
    pub(crate) fn stop(&self) {
        self.task.abort();
    }
}

impl<T> Drop for BatchRenewer<T> {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn run<T, F, Fut>(schedule: Weak<Schedule<T>>, chunk: usize, renew_chunk: F)
where
    F: Fn(&[&T]) -> Fut,
    Fut: Future<Output = Result<Vec<RenewOutcome>, LockError>>,
{
    loop {
        let Some(s) = schedule.upgrade() else { return };
        let changed = s.changed.clone().notified_owned();
        tokio::pin!(changed);
        changed.as_mut().enable();
        let next = {
            let mut inner = s.lock();
            // Nothing scheduled: sleep until woken, unless a lock came (and went) since the last look,
            // so a client taking and freeing locks does not wake it every time.
            let lately = std::mem::take(&mut inner.scheduled_lately);
            let next = (inner.locks.len() > 0 || lately).then_some(inner.next_tick);
            inner.sleeping_until = Some(next.unwrap_or(u64::MAX));
            next
        };
        let wake = next.map(|tick| s.time_of(tick));
        // Hold only a weak reference while sleeping, so dropping the client ends the task.
        drop(s);
        match wake {
            None => changed.await,
            Some(at) => {
                tokio::select! {
                    _ = &mut changed => continue,
                    _ = tokio::time::sleep_until(at.into()) => {}
                }
            }
        }
        let Some(s) = schedule.upgrade() else { return };
        let (first, last) = {
            let mut inner = s.lock();
            inner.sleeping_until = None;
            (inner.next_tick, s.tick_of(Instant::now()))
        };
        // Ticks missed beyond a round only repeat phases: each lock due by then is in the last round's.
        let first = first.max(last.saturating_sub(RENEW_EVERY_TICKS - 1));
        renew_ticks(&s, first, last, chunk, &renew_chunk).await;
    }
}

/// Renews the locks due by ticks `first..=last` (at most a round, so each in its own phase): walks
/// their phases one after another, at most [`CHUNKS_IN_FLIGHT`] calls in flight for all of them, and
/// waits for every answer. A scheduler that fell behind thus catches up in about one round trip.
async fn renew_ticks<T, F, Fut>(
    s: &Schedule<T>,
    first: u64,
    last: u64,
    chunk: usize,
    renew_chunk: &F,
) where
    F: Fn(&[&T]) -> Fut,
    Fut: Future<Output = Result<Vec<RenewOutcome>, LockError>>,
{
    {
        let mut inner = s.lock();
        // Every renewal planned from now on is due after these ticks, so it never joins a walk.
        inner.next_tick = last + 1;
        for tick in first..=last {
            let phase = inner.locks.phase_of(tick);
            inner.locks.compact(phase);
        }
    }
    let mut ticks = first..=last;
    let mut walk = ticks.next();
    let mut from = 0;
    let mut calls = FuturesUnordered::new();
    loop {
        while calls.len() < CHUNKS_IN_FLIGHT
            && let Some(tick) = walk
        {
            let (inner, picked, cut_off) = s.pick_chunk(tick, &mut from, chunk);
            if from >= inner.locks.places_in(inner.locks.phase_of(tick)) {
                walk = ticks.next();
                from = 0;
            }
            if picked.is_empty() {
                continue;
            }
            let targets: Vec<&T> = picked
                .iter()
                .filter_map(|id| inner.locks.get(*id).map(|(item, _)| &item.target))
                .collect();
            let call = renew_chunk(&targets);
            drop(targets);
            drop(inner);
            calls.push(async move {
                let sent_at = Instant::now();
                // A call that hangs is cut off when the first lock of the chunk reaches its deadline.
                let cut_off = cut_off.unwrap_or(sent_at);
                let answers = match tokio::time::timeout_at(cut_off.into(), call).await {
                    Ok(answers) => answers,
                    Err(_elapsed) => Err(LockError::backend(
                        s.backend,
                        "batch renewal got no answer before the local deadline",
                    )),
                };
                (picked, answers, sent_at, Instant::now())
            });
        }
        let Some((picked, answers, sent_at, done_at)) = calls.next().await else {
            return;
        };
        s.apply(&picked, &answers, sent_at, done_at);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::{EventLog, LockEvent};
    use std::sync::OnceLock;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[tokio::test]
    async fn a_lease_that_ends_while_its_renewal_is_in_flight_is_neither_extended_nor_reported() {
        let ttl = Duration::from_millis(600);
        let plan = RenewalPlan {
            ttl,
            period: ttl / 5,
        };
        let log = EventLog::new();
        let events = Events::to(log.clone());
        let ending: Arc<OnceLock<Arc<LeaseState>>> = Arc::default();
        let calls = Arc::new(AtomicUsize::new(0));
        let (in_call, counted) = (ending.clone(), calls.clone());
        // The call ends one lease (as its holder's `lost()` would) before answering "extended" for all.
        let renewer = BatchRenewer::start(plan, 100, events.clone(), "test", move |targets| {
            counted.fetch_add(1, Ordering::SeqCst);
            if let Some(state) = in_call.get() {
                state.mark_lost(LossReason::Expired);
            }
            let answer = RenewOutcome::Extended {
                remaining_before: Some(ttl / 2),
            };
            std::future::ready(Ok(vec![answer; targets.len()]))
        });
        let start = Instant::now();
        let lease = |name: &str| {
            let state = LeaseState::in_table(
                renewer.lease_table(),
                name.into(),
                start + ttl,
                events.clone(),
                Duration::ZERO,
            );
            let stop = renewer.schedule(name.to_owned(), state.clone(), start);
            (state, stop)
        };
        let (ended, _stop_ended) = lease("ended");
        let (live, _stop_live) = lease("live");
        ending.set(ended.clone()).expect("set once");
        let renewed = |key: &str| {
            log.count(|e| matches!(e, LockEvent::Renewed { key: k, .. } if &**k == key))
        };
        let waited = Instant::now();
        while (renewer.len() > 1 || renewed("live") == 0) && waited.elapsed() < ttl * 3 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        assert!(calls.load(Ordering::SeqCst) >= 1);
        assert!(renewed("live") >= 1, "the live lease is renewed");
        assert!(live.deadline() > start + ttl, "the live lease is extended");
        assert_eq!(
            renewed("ended"),
            0,
            "no renewal reported after the lease ended"
        );
        assert_eq!(
            ended.deadline(),
            start + ttl,
            "the ended lease is not extended"
        );
        assert_eq!(renewer.len(), 1, "the ended lease left the schedule");
    }

    /// The bench's cycle: one key acquired and released over and over, an await between. Only the
    /// first wakes the scheduler, which then stays on its grid (a stall of the test of a tick or more
    /// may let it sleep and cost one more wake).
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_lock_scheduled_and_released_over_and_over_wakes_the_scheduler_at_most_once_a_tick() {
        let ttl = Duration::from_millis(720);
        let plan = RenewalPlan {
            ttl,
            period: ttl / 3,
        };
        let tick = plan.period / TICKS_PER_PERIOD as u32;
        let renewer = BatchRenewer::start(plan, 100, Events::none(), "test", |targets| {
            std::future::ready(Ok(vec![
                RenewOutcome::Extended {
                    remaining_before: None
                };
                targets.len()
            ]))
        });
        let started = Instant::now();
        let mut cycles = 0u64;
        while started.elapsed() < tick * 12 {
            let now = Instant::now();
            let state = LeaseState::in_table(
                renewer.lease_table(),
                "key".into(),
                now + ttl,
                Events::none(),
                Duration::ZERO,
            );
            let stop = renewer.schedule(String::from("key"), state.clone(), now);
            tokio::task::yield_now().await;
            stop.stop();
            state.mark_released();
            tokio::task::yield_now().await;
            cycles += 1;
        }
        let ticks = (started.elapsed().as_nanos() / tick.as_nanos()) as u64 + 1;
        assert!(cycles > 20 * ticks, "{cycles} cycles in {ticks} ticks");
        assert!(
            renewer.wakes() <= 3,
            "{} wakes in {ticks} ticks",
            renewer.wakes()
        );
    }

    fn phase(tick: u64) -> usize {
        (tick % RENEW_EVERY_TICKS) as usize
    }

    fn first(latest: u64, load: &[usize; PHASES]) -> u64 {
        first_due(latest, 100, |tick| load[phase(tick)])
    }

    #[test]
    fn a_first_lock_takes_the_latest_tick_and_the_next_ones_join_its_chunk() {
        let latest = 100;
        assert_eq!(first(latest, &[0; PHASES]), latest);
        let mut load = [0; PHASES];
        load[phase(95)] = 1;
        assert_eq!(first(latest, &load), 95);
        // A chunk with room is joined even when it is the most loaded phase.
        load[phase(95)] = 199;
        assert_eq!(first(latest, &load), 95);
    }

    #[test]
    fn a_lock_renewed_late_stays_in_its_phase_and_is_next_due_after_the_ticks_already_renewed() {
        assert_eq!(next_round(100, 50), 111);
        assert_eq!(next_round(100, 111), 111);
        // After a stall its next renewal is whole rounds later, never a tick after this one.
        assert_eq!(next_round(100, 112), 122);
        assert_eq!(next_round(100, 125), 133);
        assert_eq!(phase(next_round(100, 125)), phase(100));
    }

    #[test]
    fn full_chunks_send_new_locks_to_the_least_loaded_phase() {
        let latest = 100;
        let mut load = [300; PHASES];
        load[phase(97)] = 200;
        load[phase(92)] = 200;
        // Ties between the least loaded go to the latest tick.
        assert_eq!(first(latest, &load), 97);
    }

    #[test]
    fn many_locks_spread_evenly_over_the_phases() {
        let mut load = [0; PHASES];
        for n in 0..100_000u64 {
            // Acquires spread over time: each sees a later window.
            let due = first(1_000 + n / 500, &load);
            load[phase(due)] += 1;
        }
        let (least, most) = (load.iter().min(), load.iter().max());
        let (least, most) = (least.copied().unwrap_or(0), most.copied().unwrap_or(0));
        assert!(most - least <= 100, "{load:?}");
        let calls: usize = load.iter().map(|l| l.div_ceil(100)).sum();
        assert!(calls < 1_000 + PHASES, "{calls} calls per round");
    }
}
