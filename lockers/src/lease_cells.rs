//! Where a lease keeps its deadline and end flag: a [`LeaseCell`], either the lease's own or one of a
//! [`LeaseTable`]'s, which keeps the cells of many leases side by side. A scheduler that renews
//! thousands of leases per tick reads and extends their cells in a few contiguous blocks instead of
//! one allocation per lease scattered over the heap.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

/// The instant every cell's deadline is counted from (the first use in this process).
fn epoch() -> Instant {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    *EPOCH.get_or_init(Instant::now)
}

/// One lease's conservative local deadline and whether the lease has ended. The deadline only moves
/// forward; the end flag is set once.
#[derive(Debug, Default)]
pub(crate) struct LeaseCell {
    /// Nanoseconds from [`epoch`].
    deadline_nanos: AtomicU64,
    ended: AtomicBool,
}

impl LeaseCell {
    /// The deadline.
    pub(crate) fn deadline(&self) -> Instant {
        epoch() + Duration::from_nanos(self.deadline_nanos.load(Ordering::Acquire))
    }

    /// Moves the deadline forward to `deadline` (never backward).
    pub(crate) fn extend_to(&self, deadline: Instant) {
        let nanos = deadline.saturating_duration_since(epoch()).as_nanos();
        let nanos = u64::try_from(nanos).unwrap_or(u64::MAX);
        self.deadline_nanos.fetch_max(nanos, Ordering::AcqRel);
    }

    /// Whether the lease has ended (released or lost).
    pub(crate) fn has_ended(&self) -> bool {
        self.ended.load(Ordering::Acquire)
    }

    /// Marks the lease ended.
    pub(crate) fn set_ended(&self) {
        self.ended.store(true, Ordering::Release);
    }

    /// Back to a fresh cell: no deadline, not ended.
    fn reset(&self) {
        self.deadline_nanos.store(0, Ordering::Release);
        self.ended.store(false, Ordering::Release);
    }
}

/// A reference to one cell of a [`LeaseTable`]: its block and its place in it. Cloning it never touches
/// the cell. The cell is claimed by a new lease once its [`TableCell`] is dropped, so a holder of a
/// `CellRef` must also hold what owns that `TableCell`.
#[derive(Debug, Clone)]
pub(crate) struct CellRef {
    block: Arc<[LeaseCell]>,
    at: usize,
}

impl CellRef {
    /// The cell.
    pub(crate) fn get(&self) -> &LeaseCell {
        &self.block[self.at]
    }
}

/// A cell claimed from a [`LeaseTable`] for one lease, given back when dropped.
#[derive(Debug)]
pub(crate) struct TableCell {
    cell: CellRef,
    table: Arc<LeaseTable>,
    index: usize,
}

impl TableCell {
    /// The cell.
    pub(crate) fn get(&self) -> &LeaseCell {
        self.cell.get()
    }

    /// A reference to the cell, valid while this `TableCell` lives.
    pub(crate) fn shared(&self) -> &CellRef {
        &self.cell
    }
}

impl Drop for TableCell {
    fn drop(&mut self) {
        self.table.give_back(self.index);
    }
}

/// Cells per block of a [`LeaseTable`]: 16 KiB of cells.
const BLOCK: usize = 1024;

/// The cells of many leases, in blocks of [`BLOCK`] that never move. A cell is claimed for a new lease
/// and given back when that lease is dropped; the most recently given back is claimed first.
#[derive(Debug, Default)]
pub(crate) struct LeaseTable {
    inner: Mutex<TableInner>,
}

#[derive(Debug, Default)]
struct TableInner {
    blocks: Vec<Arc<[LeaseCell]>>,
    /// Indexes of cells given back.
    free: Vec<usize>,
    /// Cells ever handed out (the next fresh index).
    used: usize,
}

impl LeaseTable {
    /// An empty table.
    pub(crate) fn new() -> Arc<Self> {
        Arc::default()
    }

    /// A fresh cell, given back when the returned [`TableCell`] is dropped.
    pub(crate) fn claim(self: &Arc<Self>) -> TableCell {
        let mut inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        let index = match inner.free.pop() {
            Some(index) => index,
            None => {
                let index = inner.used;
                inner.used += 1;
                if index / BLOCK == inner.blocks.len() {
                    inner
                        .blocks
                        .push((0..BLOCK).map(|_| LeaseCell::default()).collect());
                }
                index
            }
        };
        let cell = CellRef {
            block: inner.blocks[index / BLOCK].clone(),
            at: index % BLOCK,
        };
        cell.get().reset();
        TableCell {
            cell,
            table: self.clone(),
            index,
        }
    }

    /// Takes back the cell at `index`, which its lease no longer uses.
    fn give_back(&self, index: usize) {
        let mut inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        inner.free.push(index);
    }

    /// Cells in use.
    #[cfg(test)]
    pub(crate) fn in_use(&self) -> usize {
        let inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        inner.used - inner.free.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_deadline_only_moves_forward_and_an_end_stays() {
        let cell = LeaseCell::default();
        let now = Instant::now();
        cell.extend_to(now + Duration::from_secs(2));
        cell.extend_to(now + Duration::from_secs(1));
        assert_eq!(cell.deadline(), now + Duration::from_secs(2));
        assert!(!cell.has_ended());
        cell.set_ended();
        assert!(cell.has_ended());
    }

    #[test]
    fn a_cell_given_back_is_claimed_again_fresh_and_neighbours_share_a_block() {
        let table = LeaseTable::new();
        let first = table.claim();
        let second = table.claim();
        assert!(Arc::ptr_eq(&first.cell.block, &second.cell.block));
        assert_eq!((first.index, second.index), (0, 1));
        first
            .get()
            .extend_to(Instant::now() + Duration::from_secs(5));
        first.get().set_ended();
        drop(first);
        assert_eq!(table.in_use(), 1);
        let again = table.claim();
        assert_eq!(again.index, 0);
        assert!(!again.get().has_ended());
        assert!(again.get().deadline() <= Instant::now());
        // The next block starts once the first is used up.
        let rest: Vec<_> = (2..=BLOCK).map(|_| table.claim()).collect();
        let last = rest.last().expect("claimed");
        assert_eq!(last.index, BLOCK);
        assert!(!Arc::ptr_eq(&last.cell.block, &again.cell.block));
    }
}
