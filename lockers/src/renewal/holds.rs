//! The registry of holds: one renewal entry per key per owner, re-entrant holds counted on it (as
//! Redisson keeps them), and the handle that stops an entry's renewal when its last hold leaves.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::event::Events;
use crate::lease::{LeaseState, notice_allowance};
use crate::lease_cells::LeaseTable;

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
pub(super) type HoldKey = (Arc<str>, Arc<str>);

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
