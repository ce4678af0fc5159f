//! A hashed timer wheel: entries bucketed by the tick they are due at, so expiring one tick touches only
//! the entries in its slot, and removing an entry is O(1) wherever it is.
//!
//! Pure bookkeeping, no clock: the owner turns instants into tick numbers. Entries live in a slab
//! addressed by [`TimerId`] (index + generation, so a stale id never reaches a newer entry). An entry is
//! either armed (in the slot of its due tick, `tick % slots`) or idle (in the slab only, e.g. while its
//! renewal call is in flight). A tick more than one turn ahead shares a slot with nearer ones and is left
//! in place when that slot is expired early (the classic "rounds" of a hashed wheel).

/// Identifies one entry of a [`TimerWheel`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct TimerId {
    index: u32,
    generation: u32,
}

/// Where an entry is: not armed, or armed at `tick` as element `pos` of its slot.
#[derive(Debug, Clone, Copy)]
enum Place {
    Idle,
    Armed { tick: u64, pos: u32 },
}

struct Cell<T> {
    generation: u32,
    entry: Option<(T, Place)>,
}

/// Entries of type `T`, each armed at a tick or idle. See the module docs.
pub(crate) struct TimerWheel<T> {
    slots: Vec<Vec<u32>>,
    cells: Vec<Cell<T>>,
    free: Vec<u32>,
    /// The first tick not yet expired: arming earlier than this arms at this tick.
    next_tick: u64,
    len: usize,
}

impl<T> std::fmt::Debug for TimerWheel<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TimerWheel")
            .field("slots", &self.slots.len())
            .field("len", &self.len)
            .field("next_tick", &self.next_tick)
            .finish()
    }
}

impl<T> TimerWheel<T> {
    /// An empty wheel of `slots` slots (at least one) whose first tick is `first_tick`.
    pub(crate) fn new(slots: usize, first_tick: u64) -> Self {
        TimerWheel {
            slots: (0..slots.max(1)).map(|_| Vec::new()).collect(),
            cells: Vec::new(),
            free: Vec::new(),
            next_tick: first_tick,
            len: 0,
        }
    }

    /// How many entries (armed or idle) the wheel holds.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// The first tick not yet expired.
    #[cfg(test)]
    pub(crate) fn next_tick(&self) -> u64 {
        self.next_tick
    }

    /// Adds an idle entry.
    pub(crate) fn insert(&mut self, value: T) -> TimerId {
        self.len += 1;
        if let Some(index) = self.free.pop() {
            let cell = &mut self.cells[index as usize];
            cell.entry = Some((value, Place::Idle));
            return TimerId {
                index,
                generation: cell.generation,
            };
        }
        let index = u32::try_from(self.cells.len()).expect("fewer than 2^32 timers");
        self.cells.push(Cell {
            generation: 0,
            entry: Some((value, Place::Idle)),
        });
        TimerId {
            index,
            generation: 0,
        }
    }

    /// The entry `id`, if it is still in the wheel.
    pub(crate) fn get(&self, id: TimerId) -> Option<&T> {
        let cell = self.cells.get(id.index as usize)?;
        if cell.generation != id.generation {
            return None;
        }
        cell.entry.as_ref().map(|(value, _)| value)
    }

    /// The entry `id`, mutably, if it is still in the wheel.
    pub(crate) fn get_mut(&mut self, id: TimerId) -> Option<&mut T> {
        let cell = self.cells.get_mut(id.index as usize)?;
        if cell.generation != id.generation {
            return None;
        }
        cell.entry.as_mut().map(|(value, _)| value)
    }

    /// The tick `id` is armed at (`None` when idle or gone).
    #[cfg(test)]
    pub(crate) fn armed_at(&self, id: TimerId) -> Option<u64> {
        let cell = self.cells.get(id.index as usize)?;
        match cell.entry {
            Some((_, Place::Armed { tick, .. })) if cell.generation == id.generation => Some(tick),
            _ => None,
        }
    }

    /// Arms `id` at `tick` (at the first unexpired tick if `tick` is earlier), disarming it first if it
    /// was armed. Returns the tick it was armed at, or `None` if `id` is gone.
    pub(crate) fn arm(&mut self, id: TimerId, tick: u64) -> Option<u64> {
        self.get(id)?;
        self.disarm(id);
        let tick = tick.max(self.next_tick);
        let slot = self.slot_of(tick);
        let pos = u32::try_from(self.slots[slot].len()).expect("fewer than 2^32 timers per slot");
        self.slots[slot].push(id.index);
        if let Some((_, place)) = &mut self.cells[id.index as usize].entry {
            *place = Place::Armed { tick, pos };
        }
        Some(tick)
    }

    /// Removes `id` and returns its value (`None` if it was already gone).
    pub(crate) fn remove(&mut self, id: TimerId) -> Option<T> {
        self.get(id)?;
        self.disarm(id);
        let cell = &mut self.cells[id.index as usize];
        let (value, _) = cell.entry.take()?;
        cell.generation = cell.generation.wrapping_add(1);
        self.free.push(id.index);
        self.len -= 1;
        Some(value)
    }

    /// Expires every tick up to and including `tick`: the entries armed at those ticks become idle and
    /// their ids are appended to `due`, in slot order (the order they were armed in). Touches only the
    /// slots of those ticks (every slot once at most).
    pub(crate) fn expire(&mut self, tick: u64, due: &mut Vec<TimerId>) {
        if tick < self.next_tick {
            return;
        }
        let turns = (tick - self.next_tick).saturating_add(1);
        let slots = self.slots.len() as u64;
        let first = self.next_tick;
        for t in first..first.saturating_add(turns.min(slots)) {
            let slot = self.slot_of(t);
            let mut indices = std::mem::take(&mut self.slots[slot]);
            let mut kept = 0;
            for i in 0..indices.len() {
                let index = indices[i];
                let cell = &mut self.cells[index as usize];
                let Some((_, place)) = &mut cell.entry else {
                    continue;
                };
                let Place::Armed { tick: at, .. } = *place else {
                    continue;
                };
                if at <= tick {
                    *place = Place::Idle;
                    due.push(TimerId {
                        index,
                        generation: cell.generation,
                    });
                } else {
                    // A later turn's entry: keep it, at its new position.
                    *place = Place::Armed {
                        tick: at,
                        pos: kept as u32,
                    };
                    indices[kept] = index;
                    kept += 1;
                }
            }
            indices.truncate(kept);
            // Keep the slot's allocation for the next turn.
            self.slots[slot] = indices;
        }
        self.next_tick = tick + 1;
    }

    /// The earliest tick any entry may be due at: the first non-empty slot from the next unexpired tick
    /// (an entry a turn or more ahead can make this early, never late). `None` when nothing is armed.
    pub(crate) fn next_due(&self) -> Option<u64> {
        let slots = self.slots.len() as u64;
        (self.next_tick..self.next_tick + slots).find(|t| !self.slots[self.slot_of(*t)].is_empty())
    }

    fn slot_of(&self, tick: u64) -> usize {
        (tick % self.slots.len() as u64) as usize
    }

    /// Takes an armed `id` out of its slot (swap-remove, fixing the moved entry's position).
    fn disarm(&mut self, id: TimerId) {
        let Some((_, place)) = &mut self.cells[id.index as usize].entry else {
            return;
        };
        let Place::Armed { tick, pos } = *place else {
            return;
        };
        *place = Place::Idle;
        let slot = self.slot_of(tick);
        let list = &mut self.slots[slot];
        list.swap_remove(pos as usize);
        if let Some(&moved) = list.get(pos as usize)
            && let Some((_, Place::Armed { pos: p, .. })) = &mut self.cells[moved as usize].entry
        {
            *p = pos;
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn expired(wheel: &mut TimerWheel<&'static str>, tick: u64) -> Vec<&'static str> {
        let mut due = Vec::new();
        wheel.expire(tick, &mut due);
        due.iter().map(|id| *wheel.get(*id).unwrap()).collect()
    }

    #[test]
    fn entries_expire_at_their_tick_only() {
        let mut wheel = TimerWheel::new(8, 0);
        let a = wheel.insert("a");
        let b = wheel.insert("b");
        let c = wheel.insert("c");
        wheel.arm(a, 3);
        wheel.arm(b, 5);
        wheel.arm(c, 3);
        assert_eq!(wheel.next_due(), Some(3));
        assert_eq!(expired(&mut wheel, 2), Vec::<&str>::new());
        assert_eq!(expired(&mut wheel, 3), vec!["a", "c"]);
        assert_eq!(wheel.next_due(), Some(5));
        assert_eq!(expired(&mut wheel, 4), Vec::<&str>::new());
        assert_eq!(expired(&mut wheel, 5), vec!["b"]);
        assert_eq!(wheel.next_due(), None);
        // Expired entries stay (idle) until removed.
        assert_eq!(wheel.len(), 3);
        assert_eq!(wheel.armed_at(a), None);
    }

    #[test]
    fn expiring_a_tick_scans_only_its_slot() {
        let mut wheel = TimerWheel::new(4, 0);
        let ids: Vec<_> = (0..1000).map(|_| wheel.insert("x")).collect();
        for id in &ids {
            wheel.arm(*id, 2);
        }
        let one = wheel.insert("one");
        wheel.arm(one, 1);
        assert_eq!(expired(&mut wheel, 1), vec!["one"]);
        // The 1000 entries at tick 2 were not moved or touched.
        assert!(ids.iter().all(|id| wheel.armed_at(*id) == Some(2)));
        assert_eq!(expired(&mut wheel, 2).len(), 1000);
    }

    #[test]
    fn far_ticks_wait_for_their_turn() {
        let mut wheel = TimerWheel::new(4, 0);
        let near = wheel.insert("near");
        let far = wheel.insert("far");
        wheel.arm(near, 1);
        wheel.arm(far, 9); // same slot as 1, two turns later
        assert_eq!(expired(&mut wheel, 1), vec!["near"]);
        assert_eq!(wheel.armed_at(far), Some(9));
        assert_eq!(expired(&mut wheel, 8), Vec::<&str>::new());
        assert_eq!(expired(&mut wheel, 9), vec!["far"]);
    }

    #[test]
    fn a_late_expire_catches_up_on_every_slot_once() {
        let mut wheel = TimerWheel::new(4, 0);
        let ids: Vec<_> = (0..6).map(|_| wheel.insert("x")).collect();
        for (t, id) in ids.iter().enumerate() {
            wheel.arm(*id, t as u64);
        }
        assert_eq!(expired(&mut wheel, 100).len(), 6);
        assert_eq!(wheel.next_tick(), 101);
    }

    #[test]
    fn rearm_from_the_due_tick_and_past_ticks_clamp() {
        let mut wheel = TimerWheel::new(16, 0);
        let a = wheel.insert("a");
        wheel.arm(a, 4);
        let mut due = Vec::new();
        wheel.expire(6, &mut due); // processed late, at tick 6
        assert_eq!(due, vec![a]);
        // Re-armed one period (4 ticks) after the tick it was due at, not after the late expiry.
        assert_eq!(wheel.arm(a, 4 + 4), Some(8));
        // A tick already expired arms at the first unexpired one.
        assert_eq!(wheel.arm(a, 2), Some(7));
    }

    #[test]
    fn remove_takes_an_entry_out_wherever_it_is() {
        let mut wheel = TimerWheel::new(8, 0);
        let a = wheel.insert("a");
        let b = wheel.insert("b");
        let c = wheel.insert("c");
        for id in [a, b, c] {
            wheel.arm(id, 2);
        }
        assert_eq!(wheel.remove(a), Some("a")); // armed: c moves into a's position
        assert_eq!(wheel.remove(a), None);
        assert_eq!(wheel.get(a), None);
        assert_eq!(wheel.len(), 2);
        assert_eq!(expired(&mut wheel, 2), vec!["c", "b"]);
        assert_eq!(wheel.remove(b), Some("b")); // idle
        // The freed cell is reused under a new generation: the old id does not reach it.
        let d = wheel.insert("d");
        assert_eq!(wheel.get(a), None);
        assert_eq!(wheel.get(d), Some(&"d"));
        assert_eq!(wheel.arm(a, 5), None);
        wheel.arm(c, 4);
        wheel.arm(d, 4);
        wheel.remove(c);
        assert_eq!(expired(&mut wheel, 4), vec!["d"]);
    }
}
