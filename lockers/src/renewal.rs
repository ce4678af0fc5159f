//! Renewal machinery shared by the renewing strategies: the registry of holds (one renewal entry per key
//! per owner, re-entrant holds counted on it, as Redisson keeps them) and the watchdog renew loop.

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::error::LockError;
use crate::event::{Events, LockEvent};
use crate::lease::{LeaseState, LossReason};

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

/// One client's held locks: `(key, owner) → entry`. An entry has a hold count, the shared lease state and
/// at most one renewal.
#[derive(Default)]
pub(crate) struct Holds {
    entries: Mutex<HashMap<(Arc<str>, Arc<str>), Entry>>,
    next_generation: std::sync::atomic::AtomicU64,
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
        let reusable = entries
            .get(&slot)
            .is_some_and(|e| e.state.loss().is_none());
        if !reusable {
            if let Some(old) = entries.remove(&slot) {
                if let Some(r) = old.renewal {
                    r.stop();
                }
            }
            let generation = self
                .next_generation
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            entries.insert(
                slot.clone(),
                Entry {
                    generation,
                    holds: 0,
                    state: LeaseState::new(key.clone(), deadline, events.clone()),
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
        entry.state.mark_lost(LossReason::Released);
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

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<(Arc<str>, Arc<str>), Entry>> {
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

impl RenewalPlan {
    /// The plan for a watchdog `timeout` renewed every `timeout × ratio`.
    pub(crate) fn new(timeout: Duration, ratio: f64) -> Self {
        RenewalPlan {
            ttl: timeout,
            period: timeout.mul_f64(ratio),
        }
    }

    /// Retry interval after a failed renewal: often enough to land before the deadline.
    fn retry(&self) -> Duration {
        (self.period / 3).max(Duration::from_millis(5))
    }
}

/// Renews `state` on `plan` with `renew` until the lease is lost. The caller stops it (aborts the task) on
/// release. The first renewal is due `plan.period` after `first_due_from`.
///
/// - `Extended`: the deadline moves to `sent_at + ttl`; a `Renewed` event is emitted; next due one period
///   after the answer.
/// - `Gone`: the lease is marked lost (`RenewRejected`) and the loop ends.
/// - An error: `RenewFailed`, then retries until the local deadline, then `Expired`. A call that hangs is
///   cut off at the deadline as well.
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
    let key = state.key().clone();
    let mut due = first_due_from + plan.period;
    while state.loss().is_none() {
        events.emit(|| LockEvent::RenewScheduled {
            key: key.clone(),
            at: Instant::now(),
            due,
        });
        tokio::time::sleep_until(due.into()).await;
        let sent_at = Instant::now();
        let deadline = state.deadline();
        let outcome = tokio::time::timeout_at(deadline.into(), renew()).await;
        let done_at = Instant::now();
        match outcome {
            Ok(Ok(RenewOutcome::Extended { remaining_before })) => {
                state.extend_to(sent_at + plan.ttl);
                events.emit(|| LockEvent::Renewed {
                    key: key.clone(),
                    scheduled_at: due,
                    sent_at,
                    done_at,
                    remaining_ttl_before: remaining_before,
                    granted_ttl: plan.ttl,
                    trigger_lag: None,
                });
                due = done_at + plan.period;
            }
            Ok(Ok(RenewOutcome::Gone)) => {
                state.mark_lost(LossReason::RenewRejected);
            }
            Ok(Err(error)) => {
                events.emit(|| LockEvent::RenewFailed {
                    key: key.clone(),
                    at: done_at,
                    error: error.to_string(),
                });
                if done_at >= state.deadline() {
                    state.mark_lost(LossReason::Expired);
                }
                due = (done_at + plan.retry()).min(state.deadline());
            }
            Err(_elapsed) => {
                events.emit(|| LockEvent::RenewFailed {
                    key: key.clone(),
                    at: done_at,
                    error: "renewal got no answer before the local deadline".into(),
                });
                if done_at >= state.deadline() {
                    state.mark_lost(LossReason::Expired);
                }
            }
        }
    }
}
