//! Redisson 3.44+'s lock renewal (`org.redisson.renewal.LockRenewalScheduler`, `RenewalTask`,
//! `LockTask`; read at redisson-3.44.0 and at 4.7, where the logic is unchanged): one scheduler per
//! client renews every held lock on each tick.
//!
//! - `add` registers a lock; if the scheduler was not running (`tryRun`), a timer chain starts: its
//!   first tick is timeout/3 later.
//! - A tick renews every registered lock, in chunks of `lockWatchdogBatchSize` (100), one script call
//!   per chunk, one chunk after the other; each chunk is built from the locks still registered when it
//!   is sent. After the tick finished, the chain schedules the next one timeout/3 later, as long as the
//!   scheduler is running.
//! - Answer 1: the lock's deadline moves to `sent + timeout` (`Renewed`, no remaining TTL known).
//!   Answer 0: the lock leaves the scheduler (`cancelExpirationRenewal`), the holder is not told; its
//!   `lost()` resolves at the local deadline.
//! - An error ends the tick (the chunks not yet sent wait too): Redisson logs "Can't update locks
//!   [every registered name] expiration" and schedules the next tick as usual, keeping every entry.
//!   Here: one `RenewFailed` per registered lock (the log line), and the next tick retries.
//! - When the last lock leaves, the scheduler stops running; a chain whose timer is already pending
//!   still fires once, and if a lock was added meanwhile, that restarted the scheduler with a chain of
//!   its own, so both chains keep ticking (Redisson's behaviour: `stop()` only clears the flag).
//!   [`Scheduler::chains`] counts the live chains.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::{Duration, Instant};

use tokio::task::AbortHandle;

use super::lock::{Core, RenewTarget};
use crate::event::LockEvent;
use crate::lease::{LeaseState, LossReason};
use crate::renewal::{RenewOutcome, RenewTiming, RenewalPlan, StopRenewal, record_renewal};

struct Entry {
    target: RenewTarget,
    state: Arc<LeaseState>,
}

struct Shared {
    core: Arc<Core>,
    /// Redisson's `name2entry`, in registration order.
    entries: Mutex<BTreeMap<u64, Entry>>,
    next_id: AtomicU64,
    /// Redisson's `running` flag.
    running: AtomicBool,
    /// Live timer chains.
    chains: Mutex<Vec<AbortHandle>>,
    plan: RenewalPlan,
    batch: usize,
}

impl Shared {
    fn entries(&self) -> MutexGuard<'_, BTreeMap<u64, Entry>> {
        self.entries.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn chain_handles(&self) -> MutexGuard<'_, Vec<AbortHandle>> {
        self.chains.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// `tryRun`: starts a chain if the scheduler was not running.
    fn try_run(self: &Arc<Self>) {
        if self
            .running
            .compare_exchange(false, true, Ordering::AcqRel, Ordering::Acquire)
            .is_err()
        {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            self.running.store(false, Ordering::Release);
            return;
        };
        let task = runtime.spawn(chain(Arc::downgrade(self)));
        let mut chains = self.chain_handles();
        chains.retain(|c| !c.is_finished());
        chains.push(task.abort_handle());
    }

    /// `cancelExpirationRenewal`: removes one lock; with none left the scheduler stops running.
    fn remove(self: &Arc<Self>, id: u64) {
        let mut entries = self.entries();
        if entries.remove(&id).is_none() || !entries.is_empty() {
            return;
        }
        // Under the lock: an `add` racing with this either lands before (and the map was not empty)
        // or after, and then restarts the scheduler itself.
        self.running.store(false, Ordering::Release);
    }

    /// Announces a tick due at `due` for every registered lock.
    fn announce(&self, due: Instant) {
        let events = &self.core.events;
        if !events.plans_wanted() {
            return;
        }
        let at = Instant::now();
        for entry in self.entries().values() {
            events.emit_plan(|| LockEvent::RenewScheduled {
                key: entry.state.key().clone(),
                at,
                due,
            });
        }
    }

    /// The next chunk: up to `batch` locks of `ids[from..]` still registered, and where it ended.
    fn chunk(&self, ids: &[u64], mut from: usize) -> (Vec<u64>, Vec<RenewTarget>, usize) {
        let entries = self.entries();
        let (mut chunk, mut targets) = (Vec::new(), Vec::new());
        while from < ids.len() && chunk.len() < self.batch {
            if let Some(entry) = entries.get(&ids[from]) {
                chunk.push(ids[from]);
                targets.push(entry.target.clone());
            }
            from += 1;
        }
        (chunk, targets, from)
    }

    /// One tick (`RenewalTask.execute`), due at `due`.
    async fn tick(self: &Arc<Self>, due: Instant) {
        let ids: Vec<u64> = self.entries().keys().copied().collect();
        let mut from = 0;
        loop {
            let (chunk, targets, next) = self.chunk(&ids, from);
            from = next;
            if chunk.is_empty() {
                return;
            }
            let sent_at = Instant::now();
            let answers = self.core.renew_chunk(&targets).await;
            let done_at = Instant::now();
            let answers = match answers {
                Ok(answers) => answers,
                Err(error) => {
                    self.failed(&error.to_string(), done_at);
                    return;
                }
            };
            let timing = RenewTiming {
                scheduled_at: due,
                sent_at,
                done_at,
                trigger_lag: None,
            };
            for (id, renewed) in chunk.into_iter().zip(answers) {
                if renewed {
                    let state = self.entries().get(&id).map(|e| e.state.clone());
                    if let Some(state) = state {
                        let ok = Ok(RenewOutcome::Extended {
                            remaining_before: None,
                        });
                        let events = &self.core.events;
                        record_renewal(
                            &state,
                            events,
                            self.plan,
                            timing,
                            ok,
                            LossReason::RenewRejected,
                        );
                    }
                } else {
                    self.remove(id);
                }
            }
        }
    }

    /// A tick failed: the failure is reported for every registered lock, which all stay registered.
    fn failed(&self, error: &str, at: Instant) {
        let events = &self.core.events;
        if !events.enabled() {
            return;
        }
        for entry in self.entries().values() {
            events.emit(|| LockEvent::RenewFailed {
                key: entry.state.key().clone(),
                at,
                error: error.to_owned(),
            });
        }
    }
}

/// One timer chain: tick, then the next tick timeout/3 after this one finished, while running.
async fn chain(shared: Weak<Shared>) {
    loop {
        let Some(live) = shared.upgrade() else { return };
        let period: Duration = live.plan.period;
        let due = live.core.timer.after(period);
        live.announce(due);
        // Only a weak reference while asleep, so dropping the client ends the chain.
        drop(live);
        tokio::time::sleep_until(due.into()).await;
        let Some(live) = shared.upgrade() else { return };
        live.tick(due).await;
        if !live.running.load(Ordering::Acquire) {
            return;
        }
    }
}

/// Takes one lock out of the scheduler.
struct Unschedule {
    shared: Weak<Shared>,
    id: u64,
}

impl StopRenewal for Unschedule {
    fn stop(self: Box<Self>) {
        if let Some(shared) = self.shared.upgrade() {
            shared.remove(self.id);
        }
    }
}

/// One client's lock renewal scheduler.
pub(crate) struct Scheduler {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for Scheduler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Scheduler")
            .field("registered", &self.len())
            .field("chains", &self.chains())
            .finish()
    }
}

impl Scheduler {
    /// A scheduler for `core`'s locks (no chain runs until a lock is added).
    pub(crate) fn new(core: Arc<Core>) -> Self {
        let plan = RenewalPlan {
            ttl: core.config.renewal.ttl,
            period: core.config.renewal_period(),
        };
        let batch = core.config.batch_size;
        Scheduler {
            shared: Arc::new(Shared {
                core,
                entries: Mutex::default(),
                next_id: AtomicU64::new(0),
                running: AtomicBool::new(false),
                chains: Mutex::default(),
                plan,
                batch,
            }),
        }
    }

    /// `renewLock`: registers a held lock. Never awaits.
    pub(crate) fn add(&self, target: RenewTarget, state: Arc<LeaseState>) -> Box<dyn StopRenewal> {
        let id = self.shared.next_id.fetch_add(1, Ordering::Relaxed);
        self.shared.entries().insert(id, Entry { target, state });
        self.shared.try_run();
        Box::new(Unschedule {
            shared: Arc::downgrade(&self.shared),
            id,
        })
    }

    /// Locks registered for renewal.
    pub(crate) fn len(&self) -> usize {
        self.shared.entries().len()
    }

    /// Timer chains alive now (1 while locks are held, more after Redisson's restart race).
    pub(crate) fn chains(&self) -> usize {
        let mut chains = self.shared.chain_handles();
        chains.retain(|c| !c.is_finished());
        chains.len()
    }

    /// Stops every chain; registered locks are left to expire.
    pub(crate) fn stop(&self) {
        self.shared.running.store(false, Ordering::Release);
        for chain in self.shared.chain_handles().drain(..) {
            chain.abort();
        }
    }
}

impl Drop for Scheduler {
    fn drop(&mut self) {
        self.stop();
    }
}
