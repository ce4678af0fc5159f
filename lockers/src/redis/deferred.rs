//! Per-lock renewal loops started lazily: a lease registers its renewal loop here at acquire, and one
//! scheduler task per client spawns the loop only if the lease is still held half a renewal period
//! after its acquire was sent. The loop's own timing is unchanged (its first renewal is still due one
//! period after the acquire), so this is invisible to renewal, except that a lock held for less than
//! half a period — the common case of a short critical section — costs no task spawn and abort.
//!
//! Redisson does the same in spirit: a lock's renewal is a timeout on a shared wheel timer, not a
//! thread. Stopping a pending start removes it; stopping a started loop aborts its task.

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::Instant;

use tokio::sync::{Notify, watch};
use tokio::task::AbortHandle;

use crate::error::LockError;
use crate::event::Events;
use crate::lease::LeaseState;
use crate::renewal::{RenewOutcome, RenewalPlan, StopRenewal, renew_until_lost};

/// Spawns the renewal loop and returns its handle.
pub(crate) type Start = Box<dyn FnOnce() -> AbortHandle + Send>;

enum Run {
    Pending(Start),
    Started(AbortHandle),
    Stopped,
}

struct Slot {
    at: Instant,
    id: u64,
    run: Mutex<Run>,
}

impl Slot {
    fn lock(&self) -> MutexGuard<'_, Run> {
        self.run.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[derive(Default)]
struct Queue {
    slots: BTreeMap<(Instant, u64), Arc<Slot>>,
    /// When the scheduler plans to wake next (`None`: idle until notified).
    planned: Option<Instant>,
}

struct Inner {
    queue: Mutex<Queue>,
    next_id: AtomicU64,
    wake: Arc<Notify>,
}

impl Inner {
    fn lock(&self) -> MutexGuard<'_, Queue> {
        self.queue.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// One client's pending renewal starts and the task that carries them out.
pub(crate) struct DeferredStarts {
    inner: Arc<Inner>,
    task: AbortHandle,
}

impl std::fmt::Debug for DeferredStarts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeferredStarts")
            .field("pending", &self.inner.lock().slots.len())
            .finish()
    }
}

impl DeferredStarts {
    /// Starts the scheduler task.
    pub(crate) fn start() -> Self {
        let inner = Arc::new(Inner {
            queue: Mutex::default(),
            next_id: AtomicU64::new(0),
            wake: Arc::new(Notify::new()),
        });
        let task = tokio::spawn(run(Arc::downgrade(&inner)));
        DeferredStarts {
            inner,
            task: task.abort_handle(),
        }
    }

    /// Runs `start` at `at` unless stopped before. Never awaits, never spawns.
    pub(crate) fn schedule(&self, at: Instant, start: Start) -> Box<dyn StopRenewal> {
        let id = self.inner.next_id.fetch_add(1, Ordering::Relaxed);
        let slot = Arc::new(Slot {
            at,
            id,
            run: Mutex::new(Run::Pending(start)),
        });
        let wake_earlier = {
            let mut queue = self.inner.lock();
            queue.slots.insert((at, id), slot.clone());
            queue.planned.is_none_or(|planned| at < planned)
        };
        if wake_earlier {
            self.inner.wake.notify_one();
        }
        Box::new(DeferredStop {
            inner: Arc::downgrade(&self.inner),
            slot,
        })
    }

    /// Schedules `state`'s renewal loop ([`renew_until_lost`] on `plan`, each attempt one `renew` call) to
    /// start half a period after `sent_at` (its first renewal stays due one period after it); the loop
    /// ends when the lease does or when `closed` turns true (its client closed).
    pub(crate) fn schedule_renewal<F, Fut>(
        &self,
        state: Arc<LeaseState>,
        plan: RenewalPlan,
        sent_at: Instant,
        events: Events,
        mut closed: watch::Receiver<bool>,
        renew: F,
    ) -> Box<dyn StopRenewal>
    where
        F: FnMut() -> Fut + Send + 'static,
        Fut: Future<Output = Result<RenewOutcome, LockError>> + Send + 'static,
    {
        let start = move || {
            let renewing = renew_until_lost(state, plan, sent_at, events, renew);
            let task = tokio::spawn(async move {
                tokio::select! {
                    _ = renewing => {}
                    _ = closed.wait_for(|closed| *closed) => {}
                }
            });
            task.abort_handle()
        };
        self.schedule(sent_at + plan.period / 2, Box::new(start))
    }

    /// Stops the scheduler; pending starts never happen.
    pub(crate) fn stop(&self) {
        self.task.abort();
    }
}

impl Drop for DeferredStarts {
    fn drop(&mut self) {
        self.task.abort();
    }
}

struct DeferredStop {
    inner: Weak<Inner>,
    slot: Arc<Slot>,
}

impl StopRenewal for DeferredStop {
    fn stop(self: Box<Self>) {
        let was = std::mem::replace(&mut *self.slot.lock(), Run::Stopped);
        match was {
            Run::Pending(_) => {
                if let Some(inner) = self.inner.upgrade() {
                    inner.lock().slots.remove(&(self.slot.at, self.slot.id));
                }
            }
            Run::Started(task) => task.abort(),
            Run::Stopped => {}
        }
    }
}

async fn run(inner: Weak<Inner>) {
    loop {
        let Some(live) = inner.upgrade() else { return };
        let woken = live.wake.clone().notified_owned();
        tokio::pin!(woken);
        woken.as_mut().enable();
        let next = {
            let mut queue = live.lock();
            queue.planned = queue.slots.keys().next().map(|(at, _)| *at);
            queue.planned
        };
        // Only a weak reference while asleep, so dropping the client ends the task.
        drop(live);
        match next {
            None => woken.await,
            Some(at) => {
                tokio::select! {
                    _ = &mut woken => continue,
                    _ = tokio::time::sleep_until(at.into()) => {}
                }
            }
        }
        let Some(live) = inner.upgrade() else { return };
        let now = Instant::now();
        let due: Vec<Arc<Slot>> = {
            let mut queue = live.lock();
            let later = queue.slots.split_off(&(now, u64::MAX));
            std::mem::replace(&mut queue.slots, later)
                .into_values()
                .collect()
        };
        for slot in due {
            let mut run = slot.lock();
            // Take the start out; a slot stopped meanwhile stays stopped.
            let pending = std::mem::replace(&mut *run, Run::Stopped);
            if let Run::Pending(start) = pending {
                *run = Run::Started(start());
            }
        }
    }
}
