//! Batched watchdog renewal: one scheduler task per client renews every held lock that is due, in one
//! script call per chunk of keys (Redisson ≥ 3.44's renewal scheduler), instead of one timer and one call
//! per lock.
//!
//! Renewals run on a grid of ticks one renewal period apart (from the scheduler's start). A lock is
//! renewed at the first tick at least half a period after its last answer (or its acquire), so each lock
//! is renewed every period and all locks share the same ticks: N held locks cost ⌈N / chunk⌉ calls per
//! period. A lock is renewed between ½ and 1½ periods after the previous renewal was sent, so with the
//! default ratio of ⅓ at least half its TTL is still left when the renewal lands.
//!
//! Per lock, the scheduler records each answer as `renew_until_lost` does for one (`record_renewal`:
//! `Renewed` with the TTL found before extending and the deadline moved to `sent + ttl` on success,
//! `Lost` on a 0 answer, `RenewFailed` and a retry a third of a period later on an error, `Lost` once the
//! local deadline passes) and announces each planned renewal (`RenewScheduled`). A released lock leaves
//! the schedule at once ([`StopRenewal`]); an answer for it that was already in flight is ignored.

use std::collections::HashMap;
use std::fmt::Display;
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::{Duration, Instant};

use futures::StreamExt;
use tokio::sync::Notify;
use tokio::task::AbortHandle;

use crate::error::LockError;
use crate::event::Events;
use crate::lease::{LeaseState, LossReason};
use crate::renewal::{
    AfterRenewal, RenewOutcome, RenewTiming, RenewalPlan, StopRenewal, announce_renewal,
    record_renewal,
};

/// One lock to renew: its server key and owner, as the chunk renewal function needs them.
#[derive(Debug, Clone)]
pub(crate) struct BatchTarget {
    /// The lock key on the server.
    pub(crate) key: Arc<str>,
    /// The owner field.
    pub(crate) owner: Arc<str>,
}

struct Item {
    target: BatchTarget,
    state: Arc<LeaseState>,
    /// When the next renewal is planned (a tick, or a retry time after an error).
    attempt_at: Instant,
}

/// A scheduled lock whose renewal is due now.
struct Due {
    id: u64,
    target: BatchTarget,
    attempt_at: Instant,
    deadline: Instant,
}

/// How many chunk calls may be in flight at once.
const CHUNKS_IN_FLIGHT: usize = 16;

struct Schedule {
    items: Mutex<HashMap<u64, Item>>,
    next_id: AtomicU64,
    changed: Arc<Notify>,
    plan: RenewalPlan,
    origin: Instant,
    events: Events,
}

impl Schedule {
    fn lock(&self) -> MutexGuard<'_, HashMap<u64, Item>> {
        self.items.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The first tick at least half a period after `t`.
    fn tick_after(&self, t: Instant) -> Instant {
        let earliest = t + self.plan.period / 2;
        let period = self.plan.period.as_nanos().max(1);
        let since = earliest.saturating_duration_since(self.origin).as_nanos();
        let ticks = since.div_ceil(period);
        let nanos = u64::try_from(ticks * period).unwrap_or(u64::MAX);
        self.origin + Duration::from_nanos(nanos)
    }

    fn plan_next(&self, key: &Arc<str>, at: Instant) {
        announce_renewal(&self.events, key, at);
    }

    /// Takes the items due by `now`, dropping those already lost or past their deadline.
    fn take_due(&self, now: Instant) -> Vec<Due> {
        let mut expired = Vec::new();
        let mut due = Vec::new();
        self.lock().retain(|id, item| {
            if item.state.has_ended() {
                return false;
            }
            if now >= item.state.deadline() {
                expired.push(item.state.clone());
                return false;
            }
            if item.attempt_at <= now {
                due.push(Due {
                    id: *id,
                    target: item.target.clone(),
                    attempt_at: item.attempt_at,
                    deadline: item.state.deadline(),
                });
            }
            true
        });
        for state in expired {
            state.mark_lost(LossReason::Expired);
        }
        due
    }

    fn next_attempt(&self) -> Option<Instant> {
        self.lock().values().map(|i| i.attempt_at).min()
    }

    /// Applies one chunk's answers (or its error) to the items still scheduled.
    fn apply(
        &self,
        ids: &[(u64, Instant)],
        answers: &Result<Vec<RenewOutcome>, LockError>,
        sent_at: Instant,
        done_at: Instant,
    ) {
        let mut items = self.lock();
        for (i, (id, scheduled_at)) in ids.iter().enumerate() {
            let Some(item) = items.get_mut(id) else {
                continue; // released meanwhile
            };
            let result = match answers {
                Ok(answers) => answers.get(i).copied().ok_or(&TOO_FEW as &dyn Display),
                Err(error) => Err(error as &dyn Display),
            };
            let timing = RenewTiming {
                scheduled_at: *scheduled_at,
                sent_at,
                done_at,
                trigger_lag: None,
            };
            let gone = LossReason::RenewRejected;
            item.attempt_at =
                match record_renewal(&item.state, &self.events, self.plan, timing, result, gone) {
                    AfterRenewal::Extended => self.tick_after(done_at),
                    AfterRenewal::Retry { at } => at,
                    AfterRenewal::Lost => {
                        items.remove(id);
                        continue;
                    }
                };
            self.plan_next(item.state.key(), item.attempt_at);
        }
    }
}

/// The error a lock gets when its chunk's answer has no entry for it.
const TOO_FEW: &str = "batch renewal answered with too few results";

/// Takes a lock out of the schedule.
struct Unschedule {
    schedule: Weak<Schedule>,
    id: u64,
}

impl StopRenewal for Unschedule {
    fn stop(self: Box<Self>) {
        if let Some(schedule) = self.schedule.upgrade() {
            schedule.lock().remove(&self.id);
        }
    }
}

/// One client's batch renewal scheduler.
pub(crate) struct BatchRenewer {
    schedule: Arc<Schedule>,
    task: AbortHandle,
}

impl std::fmt::Debug for BatchRenewer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BatchRenewer")
            .field("scheduled", &self.schedule.lock().len())
            .finish()
    }
}

impl BatchRenewer {
    /// Starts the scheduler. `renew_chunk` renews up to `chunk` locks in one call and answers per lock.
    pub(crate) fn start<F, Fut>(
        plan: RenewalPlan,
        chunk: usize,
        events: Events,
        renew_chunk: F,
    ) -> Self
    where
        F: Fn(Vec<BatchTarget>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Vec<RenewOutcome>, LockError>> + Send + 'static,
    {
        let schedule = Arc::new(Schedule {
            items: Mutex::default(),
            next_id: AtomicU64::new(0),
            changed: Arc::new(Notify::new()),
            plan,
            origin: Instant::now(),
            events,
        });
        let task = tokio::spawn(run(Arc::downgrade(&schedule), chunk.max(1), renew_chunk));
        BatchRenewer {
            schedule,
            task: task.abort_handle(),
        }
    }

    /// Schedules `state`'s lock, acquired by a request sent at `sent_at`. Never awaits.
    pub(crate) fn schedule(
        &self,
        target: BatchTarget,
        state: Arc<LeaseState>,
        sent_at: Instant,
    ) -> Box<dyn StopRenewal> {
        let id = self.schedule.next_id.fetch_add(1, Ordering::Relaxed);
        let attempt_at = self.schedule.tick_after(sent_at);
        self.schedule.plan_next(state.key(), attempt_at);
        self.schedule.lock().insert(
            id,
            Item {
                target,
                state,
                attempt_at,
            },
        );
        self.schedule.changed.notify_one();
        Box::new(Unschedule {
            schedule: Arc::downgrade(&self.schedule),
            id,
        })
    }

    /// How many locks are scheduled.
    pub(crate) fn len(&self) -> usize {
        self.schedule.lock().len()
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
    F: Fn(Vec<BatchTarget>) -> Fut,
    Fut: Future<Output = Result<Vec<RenewOutcome>, LockError>>,
{
    loop {
        let Some(s) = schedule.upgrade() else { return };
        let changed = s.changed.clone().notified_owned();
        tokio::pin!(changed);
        changed.as_mut().enable();
        let next = s.next_attempt();
        // Hold only a weak reference while sleeping, so dropping the client ends the task.
        drop(s);
        match next {
            None => changed.await,
            Some(at) => {
                tokio::select! {
                    _ = &mut changed => continue,
                    _ = tokio::time::sleep_until(at.into()) => {}
                }
            }
        }
        let Some(s) = schedule.upgrade() else { return };
        let due = s.take_due(Instant::now());
        let mut calls = Vec::with_capacity(due.len().div_ceil(chunk));
        for part in due.chunks(chunk) {
            let targets: Vec<BatchTarget> = part.iter().map(|d| d.target.clone()).collect();
            let ids: Vec<(u64, Instant)> = part.iter().map(|d| (d.id, d.attempt_at)).collect();
            // A call that hangs is cut off when the first lock of the chunk reaches its deadline.
            let cut_off = part.iter().map(|d| d.deadline).min();
            let call = renew_chunk(targets);
            calls.push(async move {
                let sent_at = Instant::now();
                let cut_off = cut_off.unwrap_or(sent_at);
                let answers = match tokio::time::timeout_at(cut_off.into(), call).await {
                    Ok(answers) => answers,
                    Err(_elapsed) => Err(LockError::backend(
                        super::connection::BACKEND,
                        "batch renewal got no answer before the local deadline",
                    )),
                };
                (ids, answers, sent_at, Instant::now())
            });
        }
        let mut answers = futures::stream::iter(calls).buffer_unordered(CHUNKS_IN_FLIGHT);
        while let Some((ids, answers, sent_at, done_at)) = answers.next().await {
            s.apply(&ids, &answers, sent_at, done_at);
        }
    }
}
