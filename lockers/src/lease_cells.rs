//! Where a lease keeps its deadline and end flag: a [`LeaseCell`], either the lease's own or one of a
//! [`LeaseTable`]'s, which keeps the cells of many leases side by side. A scheduler that renews
//! thousands of leases per tick reads and extends their cells in a few contiguous blocks instead of
//! one allocation per lease scattered over the heap. A lease carried by another (a lock that lives
//! exactly as long as its client's session) keeps only its end flag and reads its deadline from its
//! carrier's [`CarrierCell`], so one renewal of the carrier extends every lease it carries.

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

    /// Marks the lease ended; returns whether it had not ended before.
    fn end_once(&self) -> bool {
        !self.ended.swap(true, Ordering::AcqRel)
    }

    /// Back to a fresh cell: no deadline, not ended.
    fn reset(&self) {
        self.deadline_nanos.store(0, Ordering::Release);
        self.ended.store(false, Ordering::Release);
    }
}

/// The cell of a lease that carries others (a client's session, whose locks live exactly as long as it
/// does), and how many of the leases it carries have not ended.
#[derive(Debug, Default)]
pub(crate) struct CarrierCell {
    cell: LeaseCell,
    carried: AtomicU64,
}

impl CarrierCell {
    /// A carrier alive until `deadline`, carrying nothing yet.
    #[cfg_attr(not(any(feature = "etcd", feature = "zookeeper")), allow(dead_code))]
    pub(crate) fn new(deadline: Instant) -> Arc<Self> {
        let carrier = Arc::new(CarrierCell::default());
        carrier.cell.extend_to(deadline);
        carrier
    }

    /// The carrier's own deadline and end flag.
    pub(crate) fn cell(&self) -> &LeaseCell {
        &self.cell
    }

    /// How many of the leases it carries have not ended.
    #[cfg_attr(not(any(feature = "etcd", feature = "zookeeper")), allow(dead_code))]
    pub(crate) fn carried(&self) -> u64 {
        self.carried.load(Ordering::Acquire)
    }
}

/// The cell of a lease carried by a [`CarrierCell`]: its own end flag, and its carrier's deadline while
/// it lasts (or a later one set on the lease itself). The deadline stops following the carrier when the
/// lease ends.
#[derive(Debug)]
pub(crate) struct CarriedCell {
    /// The end flag; its deadline is a floor under the carrier's while the lease lasts, and the deadline
    /// once it has ended.
    own: LeaseCell,
    carrier: Arc<CarrierCell>,
}

impl CarriedCell {
    /// A live lease carried by `carrier`, counted among its carried leases until it ends.
    #[cfg_attr(not(any(feature = "etcd", feature = "zookeeper")), allow(dead_code))]
    pub(crate) fn new(carrier: &Arc<CarrierCell>) -> Self {
        carrier.carried.fetch_add(1, Ordering::AcqRel);
        CarriedCell {
            own: LeaseCell::default(),
            carrier: carrier.clone(),
        }
    }

    /// The end flag, and a floor under the deadline (read the deadline with
    /// [`CarriedCell::deadline`]).
    pub(crate) fn own(&self) -> &LeaseCell {
        &self.own
    }

    /// The carrier's deadline (or the lease's own, if later) while the lease lasts; where it stood
    /// when the lease ended afterwards.
    pub(crate) fn deadline(&self) -> Instant {
        if self.own.has_ended() {
            return self.own.deadline();
        }
        self.own.deadline().max(self.carrier.cell.deadline())
    }

    /// Marks the lease ended: its deadline stays where the carrier's is now, and the carrier no longer
    /// counts it.
    pub(crate) fn set_ended(&self) {
        self.own.extend_to(self.carrier.cell.deadline());
        if self.own.end_once() {
            self.carrier.carried.fetch_sub(1, Ordering::AcqRel);
        }
    }
}

impl Drop for CarriedCell {
    fn drop(&mut self) {
        if !self.own.has_ended() {
            self.carrier.carried.fetch_sub(1, Ordering::AcqRel);
        }
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
    fn a_carried_lease_follows_its_carrier_until_it_ends_and_is_counted_while_it_lasts() {
        let now = Instant::now();
        let carrier = CarrierCell::new(now + Duration::from_secs(1));
        let (one, two) = (CarriedCell::new(&carrier), CarriedCell::new(&carrier));
        assert_eq!(carrier.carried(), 2);
        carrier.cell().extend_to(now + Duration::from_secs(2));
        assert_eq!(one.deadline(), now + Duration::from_secs(2));
        one.set_ended();
        one.set_ended();
        assert_eq!(carrier.carried(), 1);
        carrier.cell().extend_to(now + Duration::from_secs(3));
        assert_eq!(one.deadline(), now + Duration::from_secs(2));
        assert_eq!(two.deadline(), now + Duration::from_secs(3));
        // A later deadline set on the lease itself stands while the carrier's is earlier.
        two.own().extend_to(now + Duration::from_secs(4));
        assert_eq!(two.deadline(), now + Duration::from_secs(4));
        drop(two);
        drop(one);
        assert_eq!(carrier.carried(), 0);
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
