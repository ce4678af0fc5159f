//! A table of entries renewed in rounds: each entry has a due tick, and sits in the dense list of its
//! *phase* (the due tick modulo the number of phases), so the owner renews a tick's entries by reading
//! one contiguous run of memory, and an entry renewed again one round later stays where it is.
//!
//! Pure bookkeeping, no clock: the owner turns instants into ticks. Entries are addressed by
//! [`EntryId`] (index + generation, so a stale id never reaches a newer entry). Removing an entry, or
//! moving it to another phase, leaves a hole in its old list; holes are dropped when that phase is next
//! [`compact`](PhaseTable::compact)ed, so positions stay put while the owner walks a list.

/// Identifies one entry of a [`PhaseTable`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct EntryId {
    index: u32,
    generation: u32,
}

/// One place of a phase's list: an entry, or the hole one left.
struct Slot<T> {
    id: EntryId,
    due: u64,
    value: Option<T>,
}

/// Where an entry with a given index is: its phase and position.
#[derive(Clone, Copy)]
struct Place {
    generation: u32,
    at: Option<(usize, usize)>,
}

/// Entries of type `T` in phase lists. See the module docs.
pub(crate) struct PhaseTable<T> {
    phases: Vec<Vec<Slot<T>>>,
    /// Live entries per phase.
    load: Vec<usize>,
    /// Holes per phase.
    holes: Vec<usize>,
    places: Vec<Place>,
    free: Vec<u32>,
    len: usize,
}

impl<T> std::fmt::Debug for PhaseTable<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PhaseTable")
            .field("phases", &self.phases.len())
            .field("len", &self.len)
            .finish()
    }
}

impl<T> PhaseTable<T> {
    /// An empty table of `phases` phases (at least one).
    pub(crate) fn new(phases: usize) -> Self {
        let phases = phases.max(1);
        PhaseTable {
            phases: (0..phases).map(|_| Vec::new()).collect(),
            load: vec![0; phases],
            holes: vec![0; phases],
            places: Vec::new(),
            free: Vec::new(),
            len: 0,
        }
    }

    /// The phase of tick `due`.
    pub(crate) fn phase_of(&self, due: u64) -> usize {
        (due % self.phases.len() as u64) as usize
    }

    /// How many entries the table holds.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// How many entries are in `phase`.
    pub(crate) fn load(&self, phase: usize) -> usize {
        self.load.get(phase).copied().unwrap_or(0)
    }

    /// Adds `value`, due at tick `due`.
    pub(crate) fn insert(&mut self, value: T, due: u64) -> EntryId {
        let index = match self.free.pop() {
            Some(index) => index,
            None => {
                let index = u32::try_from(self.places.len()).expect("fewer than 2^32 entries");
                self.places.push(Place {
                    generation: 0,
                    at: None,
                });
                index
            }
        };
        let id = EntryId {
            index,
            generation: self.places[index as usize].generation,
        };
        self.len += 1;
        self.push(id, value, due);
        id
    }

    /// Appends entry `id` to the list of `due`'s phase.
    fn push(&mut self, id: EntryId, value: T, due: u64) {
        let phase = self.phase_of(due);
        let list = &mut self.phases[phase];
        self.places[id.index as usize].at = Some((phase, list.len()));
        list.push(Slot {
            id,
            due,
            value: Some(value),
        });
        self.load[phase] += 1;
    }

    /// Where entry `id` is, if it is still in the table.
    fn place(&self, id: EntryId) -> Option<(usize, usize)> {
        let place = self.places.get(id.index as usize)?;
        if place.generation != id.generation {
            return None;
        }
        place.at
    }

    /// Takes entry `id` out of its list, leaving a hole; returns it and its due tick.
    fn take(&mut self, id: EntryId) -> Option<(T, u64)> {
        let (phase, pos) = self.place(id)?;
        let slot = &mut self.phases[phase][pos];
        let value = slot.value.take()?;
        self.load[phase] -= 1;
        self.holes[phase] += 1;
        Some((value, slot.due))
    }

    /// Removes entry `id` (its id is never valid again).
    pub(crate) fn remove(&mut self, id: EntryId) -> Option<T> {
        let (value, _) = self.take(id)?;
        let place = &mut self.places[id.index as usize];
        place.generation = place.generation.wrapping_add(1);
        place.at = None;
        self.free.push(id.index);
        self.len -= 1;
        Some(value)
    }

    /// Entry `id` and its due tick, if it is still in the table.
    pub(crate) fn get(&self, id: EntryId) -> Option<(&T, u64)> {
        let (phase, pos) = self.place(id)?;
        let slot = &self.phases[phase][pos];
        Some((slot.value.as_ref()?, slot.due))
    }

    /// Makes entry `id` due at tick `due`: in place when the phase stays the same, else moved to the
    /// end of the new phase's list. Returns whether the entry was there.
    pub(crate) fn set_due(&mut self, id: EntryId, due: u64) -> bool {
        let Some((phase, pos)) = self.place(id) else {
            return false;
        };
        if phase == self.phase_of(due) {
            self.phases[phase][pos].due = due;
            return true;
        }
        match self.take(id) {
            Some((value, _)) => {
                self.push(id, value, due);
                true
            }
            None => false,
        }
    }

    /// How many places `phase`'s list has (entries and holes): positions `0..` this are valid for
    /// [`PhaseTable::at`] until the phase is compacted.
    pub(crate) fn places_in(&self, phase: usize) -> usize {
        self.phases.get(phase).map_or(0, Vec::len)
    }

    /// The entry at `pos` of `phase`'s list, with its id and due tick; `None` for a hole.
    pub(crate) fn at(&self, phase: usize, pos: usize) -> Option<(EntryId, &T, u64)> {
        let slot = self.phases.get(phase)?.get(pos)?;
        Some((slot.id, slot.value.as_ref()?, slot.due))
    }

    /// Drops the holes of `phase`'s list, keeping the order of its entries.
    pub(crate) fn compact(&mut self, phase: usize) {
        if self.holes.get(phase).is_none_or(|&h| h == 0) {
            return;
        }
        let list = &mut self.phases[phase];
        list.retain(|slot| slot.value.is_some());
        for (pos, slot) in list.iter().enumerate() {
            self.places[slot.id.index as usize].at = Some((phase, pos));
        }
        self.holes[phase] = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entries(table: &PhaseTable<&'static str>, phase: usize) -> Vec<(&'static str, u64)> {
        (0..table.places_in(phase))
            .filter_map(|pos| table.at(phase, pos).map(|(_, v, due)| (*v, due)))
            .collect()
    }

    #[test]
    fn entries_sit_in_the_list_of_their_due_ticks_phase_in_order() {
        let mut table = PhaseTable::new(4);
        table.insert("a", 5);
        table.insert("b", 9);
        table.insert("c", 6);
        assert_eq!(entries(&table, 1), [("a", 5), ("b", 9)]);
        assert_eq!(entries(&table, 2), [("c", 6)]);
        assert_eq!((table.len(), table.load(1), table.load(0)), (3, 2, 0));
    }

    #[test]
    fn a_next_round_stays_in_place_and_another_phase_moves_to_its_end() {
        let mut table = PhaseTable::new(4);
        let a = table.insert("a", 1);
        let b = table.insert("b", 1);
        assert!(table.set_due(a, 5));
        assert_eq!(entries(&table, 1), [("a", 5), ("b", 1)]);
        assert!(table.set_due(a, 7));
        assert_eq!(entries(&table, 1), [("b", 1)]);
        assert_eq!(entries(&table, 3), [("a", 7)]);
        // The hole stays until the phase is compacted; positions do not move before that.
        assert_eq!(table.places_in(1), 2);
        assert!(table.at(1, 0).is_none());
        table.compact(1);
        assert_eq!(table.places_in(1), 1);
        assert_eq!(table.get(b), Some((&"b", 1)));
        assert_eq!(table.get(a), Some((&"a", 7)));
    }

    #[test]
    fn a_removed_entry_is_gone_and_its_stale_id_never_reaches_the_next() {
        let mut table = PhaseTable::new(4);
        let a = table.insert("a", 2);
        assert_eq!(table.remove(a), Some("a"));
        assert_eq!(table.remove(a), None);
        assert!(!table.set_due(a, 3));
        let b = table.insert("b", 2);
        assert_eq!(table.get(a), None);
        assert_eq!(table.get(b), Some((&"b", 2)));
        assert_eq!((table.len(), table.load(2)), (1, 1));
        table.compact(2);
        assert_eq!(entries(&table, 2), [("b", 2)]);
    }
}
