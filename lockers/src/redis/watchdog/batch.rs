//! Batched watchdog renewal: one scheduler task per client renews every held lock that is due, in one
//! script call per chunk of keys (as Redisson ≥ 3.44's renewal scheduler does), instead of one timer and
//! one call per lock. Its cost grows with the locks due, not the locks held.
//!
//! Locks sit in a [`TimerWheel`] of ticks [`TICKS_PER_PERIOD`] to a renewal period, bucketed by the tick
//! their next renewal is due at; a tick expires only its own bucket. Each next renewal is planned
//! [`RENEW_EVERY_TICKS`] (a period less one tick) after the tick the previous one was *due* at (not after
//! its answer), so a lock is renewed a little more often than every period, and the thinnest margin stays
//! at least ⅔ of the TTL (default ratio ⅓) while a chunk goes out no more than one tick late.
//!
//! So a lock keeps its *phase*: its due tick modulo [`RENEW_EVERY_TICKS`]. A new lock's first renewal is
//! due at one of the ticks of the period that ends one period after its acquire was sent, chosen by phase:
//! a phase whose last chunk has room, else the phase with the fewest locks (ties to the latest tick). Few
//! locks then share one call per period, as on a single grid tick; many spread evenly over the period's
//! ticks, so no tick sends a burst of every chunk that queues on the connection and lands late. N held
//! locks cost at most ⌈N / chunk⌉ + [`RENEW_EVERY_TICKS`] − 1 calls per round.
//!
//! Chunk calls are built lazily, at most [`CHUNKS_IN_FLIGHT`] at a time, from the key and owner each
//! lock was scheduled with (copied into its entry once, never re-encoded). [`SCHEDULE`] gives these
//! numbers to a caller that sends the same calls on the same schedule without this code (lockbench's
//! raw yardstick).
//!
//! Per lock, the scheduler records each answer as `renew_until_lost` does for one (`record_renewal`:
//! `Renewed` with the TTL found before extending and the deadline moved to `sent + ttl` on success,
//! `Lost` on a 0 answer, `RenewFailed` and a retry a third of a period later on an error, `Lost` once the
//! local deadline passes) and announces each planned renewal (`RenewScheduled`). A released lock leaves
//! the wheel at once ([`StopRenewal`]); an answer for it that was already in flight is ignored.
//!
//! Renewing thousands of locks a tick is bound by memory, not by work: a lock whose data is spread
//! over several heap allocations costs a cache miss (and on a VM a page walk) for each. So a renewal
//! touches only what sits side by side with the other locks': its wheel entry (key and owner inline)
//! and its lease's deadline and end flag, which the client's leases keep in this scheduler's
//! [`LeaseTable`]. Its lease state is read only when the lease ends, and a sink that never reads keys
//! takes its `Renewed` without the key being touched ([`crate::EventSink::record_renewed`]).

use std::fmt::Display;
use std::future::Future;
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::{Duration, Instant};

use futures::StreamExt;
use futures::stream::FuturesUnordered;
use tokio::sync::Notify;
use tokio::task::AbortHandle;

use crate::error::LockError;
use crate::event::Events;
use crate::lease::{LeaseState, LossReason};
use crate::lease_cells::{CellRef, LeaseTable};
use crate::renewal::{
    AfterRenewal, RenewOutcome, RenewTiming, RenewalPlan, StopRenewal, announce_renewal_at,
    extended, record_renewal,
};
use crate::timer_wheel::{TimerId, TimerWheel};

/// One lock to renew: its server key and owner, as the chunk renewal function needs them. They sit in
/// the scheduler's own table when they fit ([`INLINE`] bytes together), so building a chunk's call reads
/// them side by side instead of from two allocations per lock.
#[derive(Debug, Clone)]
pub(crate) struct BatchTarget {
    /// Where the owner starts in `text`.
    key_len: usize,
    text: Text,
}

/// Bytes of key and owner kept inline in a [`BatchTarget`].
const INLINE: usize = 94;

#[derive(Debug, Clone)]
enum Text {
    Inline { len: u8, bytes: [u8; INLINE] },
    Heap(Box<[u8]>),
}

impl BatchTarget {
    /// The lock `key` on the server, held by `owner`.
    pub(crate) fn new(key: &str, owner: &str) -> Self {
        let len = key.len() + owner.len();
        let text = match u8::try_from(len) {
            Ok(short) if len <= INLINE => {
                let mut bytes = [0; INLINE];
                bytes[..key.len()].copy_from_slice(key.as_bytes());
                bytes[key.len()..len].copy_from_slice(owner.as_bytes());
                Text::Inline { len: short, bytes }
            }
            _ => Text::Heap([key.as_bytes(), owner.as_bytes()].concat().into()),
        };
        BatchTarget {
            key_len: key.len(),
            text,
        }
    }

    fn text(&self) -> &[u8] {
        match &self.text {
            Text::Inline { len, bytes } => &bytes[..usize::from(*len)],
            Text::Heap(text) => text,
        }
    }

    /// The lock key on the server.
    pub(crate) fn key(&self) -> &[u8] {
        &self.text()[..self.key_len]
    }

    /// The owner field.
    pub(crate) fn owner(&self) -> &[u8] {
        &self.text()[self.key_len..]
    }
}

/// A scheduled lock. Renewing it reads only this entry and its lease's cell, both kept side by side with
/// other locks' (the wheel's slab, the lease table); its lease state is read only when the lease ends.
struct Item {
    target: BatchTarget,
    /// The lease's deadline and end flag.
    cell: CellRef,
    /// Its key is the lock's name that events report; renewal only takes its address.
    state: Arc<LeaseState>,
    /// The tick the next renewal is planned for (the wheel may hold it later, never earlier).
    due: u64,
}

/// Wheel ticks per renewal period: the resolution of retries (a third of a period is 4 ticks).
const TICKS_PER_PERIOD: u64 = 12;
/// Ticks from one due renewal to the next: one tick short of a period, so a chunk sent up to a tick
/// (1/12 of a period, TTL/36 at the default ratio) later than the previous one still lands with at least
/// ⅔ of the TTL left. Costs 1/11 more renew calls than a full period would. Also the number of phases.
const RENEW_EVERY_TICKS: u64 = TICKS_PER_PERIOD - 1;
/// Phases a lock's renewals can take within a round.
const PHASES: usize = RENEW_EVERY_TICKS as usize;
/// Renewals of each lock per renewal period: 12/11.
pub(crate) const RENEWALS_PER_PERIOD: f64 = TICKS_PER_PERIOD as f64 / RENEW_EVERY_TICKS as f64;
/// Wheel slots: four periods, so every first renewal and retry lands within one turn.
const SLOTS: usize = 4 * TICKS_PER_PERIOD as usize;
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
pub(in crate::redis) const SCHEDULE: BatchSchedule = BatchSchedule {
    ticks_per_period: TICKS_PER_PERIOD,
    renew_every_ticks: RENEW_EVERY_TICKS,
    chunks_in_flight: CHUNKS_IN_FLIGHT,
};

struct Inner {
    wheel: TimerWheel<Item>,
    /// Scheduled locks per phase (`due % RENEW_EVERY_TICKS`).
    load: [usize; PHASES],
    /// The tick the scheduler sleeps until (`u64::MAX`: nothing armed), or `None` while it works; a lock
    /// armed earlier than it wakes the scheduler.
    sleeping_until: Option<u64>,
}

impl Inner {
    fn phase(due: u64) -> usize {
        (due % RENEW_EVERY_TICKS) as usize
    }

    fn insert(&mut self, item: Item) -> TimerId {
        self.load[Self::phase(item.due)] += 1;
        self.wheel.insert(item)
    }

    fn remove(&mut self, id: TimerId) -> Option<Item> {
        let item = self.wheel.remove(id)?;
        self.load[Self::phase(item.due)] -= 1;
        Some(item)
    }

    /// Plans `id`'s next renewal for tick `next`.
    fn plan(&mut self, id: TimerId, next: u64) {
        if let Some(item) = self.wheel.get_mut(id) {
            self.load[Self::phase(item.due)] -= 1;
            self.load[Self::phase(next)] += 1;
            item.due = next;
        }
    }

    /// The tick of a new lock's first renewal, among the `RENEW_EVERY_TICKS` ticks up to `latest`: a phase
    /// whose last chunk of `chunk` locks has room, else the least loaded; ties to the latest tick.
    fn first_due(&self, latest: u64, chunk: usize) -> u64 {
        let earliest = latest.saturating_sub(RENEW_EVERY_TICKS - 1);
        (earliest..=latest)
            .max_by_key(|&tick| {
                let load = self.load[Self::phase(tick)];
                (!load.is_multiple_of(chunk), std::cmp::Reverse(load), tick)
            })
            .unwrap_or(latest)
    }
}

struct Schedule {
    inner: Mutex<Inner>,
    changed: Arc<Notify>,
    plan: RenewalPlan,
    /// Locks per call.
    chunk: usize,
    origin: Instant,
    tick: Duration,
    events: Events,
}

impl Schedule {
    fn lock(&self) -> MutexGuard<'_, Inner> {
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

    /// Arms `id` at `due` and announces it as planned `now`; wakes the scheduler if it sleeps past that
    /// tick.
    fn arm(&self, inner: &mut Inner, id: TimerId, due: u64, now: Instant) {
        let Some(armed) = inner.wheel.arm(id, due) else {
            return;
        };
        if self.events.plans_wanted()
            && let Some(item) = inner.wheel.get(id)
        {
            announce_renewal_at(&self.events, item.state.key(), self.time_of(armed), now);
        }
        if inner.sleeping_until.is_some_and(|t| armed < t) {
            inner.sleeping_until = None;
            self.changed.notify_one();
        }
    }

    /// Takes up to `chunk` live locks from the front of `due` for one call: skips those released
    /// meanwhile, drops those whose lease ended and marks those past their deadline lost. Returns their
    /// ids and the earliest deadline.
    ///
    /// The end flag is read even though a released lease has left the schedule already
    /// ([`Unschedule`]): a lease can be marked expired by its holder's `lost()` just as a renewal's
    /// answer extends it, and must not be renewed after that.
    fn take_chunk(
        &self,
        due: &mut &[TimerId],
        chunk: usize,
    ) -> (MutexGuard<'_, Inner>, Vec<TimerId>, Option<Instant>) {
        let mut inner = self.lock();
        let now = Instant::now();
        let mut ids = Vec::with_capacity(chunk.min(due.len()));
        let mut cut_off: Option<Instant> = None;
        while ids.len() < chunk
            && let Some((&id, rest)) = due.split_first()
        {
            *due = rest;
            let Some(item) = inner.wheel.get(id) else {
                continue; // released meanwhile
            };
            let cell = item.cell.get();
            if cell.has_ended() {
                inner.remove(id);
                continue;
            }
            let deadline = cell.deadline();
            if now >= deadline {
                if let Some(item) = inner.remove(id) {
                    item.state.mark_lost(LossReason::Expired);
                }
                continue;
            }
            cut_off = Some(cut_off.map_or(deadline, |c| c.min(deadline)));
            ids.push(id);
        }
        (inner, ids, cut_off)
    }

    /// Applies one chunk's answers (or its error) to the locks still scheduled and re-arms them. An
    /// extension touches only the lock's entry and cell; anything else goes through the lease state
    /// ([`record_renewal`]).
    fn apply(
        &self,
        ids: &[TimerId],
        answers: &Result<Vec<RenewOutcome>, LockError>,
        sent_at: Instant,
        done_at: Instant,
    ) {
        let mut inner = self.lock();
        for (i, &id) in ids.iter().enumerate() {
            let Some(item) = inner.wheel.get(id) else {
                continue; // released meanwhile
            };
            let result = match answers {
                Ok(answers) => answers.get(i).copied().ok_or(&TOO_FEW as &dyn Display),
                Err(error) => Err(error as &dyn Display),
            };
            let timing = RenewTiming {
                scheduled_at: self.time_of(item.due),
                sent_at,
                done_at,
                trigger_lag: None,
            };
            let (cell, name, ttl) = (item.cell.get(), item.state.key(), self.plan.ttl);
            let next = match result {
                Ok(RenewOutcome::Extended { remaining_before })
                    if extended(cell, name, &self.events, timing, remaining_before, ttl) =>
                {
                    item.due + RENEW_EVERY_TICKS
                }
                _ => {
                    let gone = LossReason::RenewRejected;
                    let plan = self.plan;
                    match record_renewal(&item.state, &self.events, plan, timing, result, gone) {
                        AfterRenewal::Extended => item.due + RENEW_EVERY_TICKS,
                        AfterRenewal::Retry { at } => self.tick_of(at),
                        AfterRenewal::Lost => {
                            inner.remove(id);
                            continue;
                        }
                    }
                }
            };
            inner.plan(id, next);
            self.arm(&mut inner, id, next, done_at);
        }
    }
}

/// The error a lock gets when its chunk's answer has no entry for it.
const TOO_FEW: &str = "batch renewal answered with too few results";

/// Takes a lock out of the schedule.
struct Unschedule {
    schedule: Weak<Schedule>,
    id: TimerId,
}

impl StopRenewal for Unschedule {
    fn stop(self: Box<Self>) {
        if let Some(schedule) = self.schedule.upgrade() {
            schedule.lock().remove(self.id);
        }
    }
}

/// One client's batch renewal scheduler.
pub(crate) struct BatchRenewer {
    schedule: Arc<Schedule>,
    task: AbortHandle,
    cells: Arc<LeaseTable>,
}

impl std::fmt::Debug for BatchRenewer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BatchRenewer")
            .field("scheduled", &self.len())
            .finish()
    }
}

impl BatchRenewer {
    /// Starts the scheduler. `renew_chunk` builds the call renewing up to `chunk` locks (at once, so it
    /// may borrow them) and the call answers per lock.
    pub(crate) fn start<F, Fut>(
        plan: RenewalPlan,
        chunk: usize,
        events: Events,
        renew_chunk: F,
    ) -> Self
    where
        F: Fn(&[&BatchTarget]) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Vec<RenewOutcome>, LockError>> + Send + 'static,
    {
        let tick = (plan.period / TICKS_PER_PERIOD as u32).max(Duration::from_micros(100));
        let schedule = Arc::new(Schedule {
            inner: Mutex::new(Inner {
                wheel: TimerWheel::new(SLOTS, 0),
                load: [0; PHASES],
                sleeping_until: Some(u64::MAX),
            }),
            changed: Arc::new(Notify::new()),
            plan,
            chunk: chunk.max(1),
            origin: Instant::now(),
            tick,
            events,
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
        target: BatchTarget,
        state: Arc<LeaseState>,
        sent_at: Instant,
    ) -> Box<dyn StopRenewal> {
        let s = &self.schedule;
        let latest = s.tick_of(sent_at + s.plan.period);
        let mut inner = s.lock();
        let due = inner.first_due(latest, s.chunk);
        let cell = state.cell_ref().clone();
        let id = inner.insert(Item {
            target,
            cell,
            state,
            due,
        });
        s.arm(&mut inner, id, due, Instant::now());
        drop(inner);
        Box::new(Unschedule {
            schedule: Arc::downgrade(s),
            id,
        })
    }

    /// How many locks are scheduled.
    pub(crate) fn len(&self) -> usize {
        self.schedule.lock().wheel.len()
    }

    /// Stops the scheduler; scheduled locks are left to expire.
    pub(crate) fn stop(&self) {
        self.task.abort();
    }
}

impl Drop for BatchRenewer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn run<F, Fut>(schedule: Weak<Schedule>, chunk: usize, renew_chunk: F)
where
    F: Fn(&[&BatchTarget]) -> Fut,
    Fut: Future<Output = Result<Vec<RenewOutcome>, LockError>>,
{
    let mut due = Vec::new();
    loop {
        let Some(s) = schedule.upgrade() else { return };
        let changed = s.changed.clone().notified_owned();
        tokio::pin!(changed);
        changed.as_mut().enable();
        let next = {
            let mut inner = s.lock();
            let next = inner.wheel.next_due();
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
        due.clear();
        {
            let mut inner = s.lock();
            inner.sleeping_until = None;
            let now = s.tick_of(Instant::now());
            inner.wheel.expire(now, &mut due);
        }
        let mut rest = &due[..];
        let mut calls = FuturesUnordered::new();
        loop {
            while calls.len() < CHUNKS_IN_FLIGHT && !rest.is_empty() {
                let (inner, ids, cut_off) = s.take_chunk(&mut rest, chunk);
                if ids.is_empty() {
                    continue;
                }
                let targets: Vec<&BatchTarget> = ids
                    .iter()
                    .filter_map(|id| inner.wheel.get(*id).map(|item| &item.target))
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
                            crate::redis::transport::connection::BACKEND,
                            "batch renewal got no answer before the local deadline",
                        )),
                    };
                    (ids, answers, sent_at, Instant::now())
                });
            }
            let Some((ids, answers, sent_at, done_at)) = calls.next().await else {
                break;
            };
            s.apply(&ids, &answers, sent_at, done_at);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inner(load: [usize; PHASES]) -> Inner {
        Inner {
            wheel: TimerWheel::new(SLOTS, 0),
            load,
            sleeping_until: None,
        }
    }

    #[test]
    fn a_first_lock_takes_the_latest_tick_and_the_next_ones_join_its_chunk() {
        let latest = 100;
        assert_eq!(inner([0; PHASES]).first_due(latest, 100), latest);
        let mut load = [0; PHASES];
        load[Inner::phase(95)] = 1;
        assert_eq!(inner(load).first_due(latest, 100), 95);
        // A chunk with room is joined even when it is the most loaded phase.
        load[Inner::phase(95)] = 199;
        assert_eq!(inner(load).first_due(latest, 100), 95);
    }

    #[test]
    fn full_chunks_send_new_locks_to_the_least_loaded_phase() {
        let latest = 100;
        let mut load = [300; PHASES];
        load[Inner::phase(97)] = 200;
        load[Inner::phase(92)] = 200;
        // Ties between the least loaded go to the latest tick.
        assert_eq!(inner(load).first_due(latest, 100), 97);
    }

    #[test]
    fn many_locks_spread_evenly_over_the_phases() {
        let mut state = inner([0; PHASES]);
        for n in 0..100_000u64 {
            // Acquires spread over time: each sees a later window.
            let due = state.first_due(1_000 + n / 500, 100);
            state.load[Inner::phase(due)] += 1;
        }
        let (least, most) = (state.load.iter().min(), state.load.iter().max());
        let (least, most) = (least.copied().unwrap_or(0), most.copied().unwrap_or(0));
        assert!(most - least <= 100, "{:?}", state.load);
        let calls: usize = state.load.iter().map(|l| l.div_ceil(100)).sum();
        assert!(calls < 1_000 + PHASES, "{calls} calls per round");
    }
}
