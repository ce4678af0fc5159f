//! A contended workload with a fault injected part-way (used by the etcd and ZooKeeper leader-loss tests):
//! clients take turns on one key, each critical section counts who is inside (as
//! `conformance::mutual_exclusion` does) and leaves early if `lost()` fires; the report says whether two
//! holders were ever inside together and how long the lock was unavailable around the fault.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use lockers::{AcquireOptions, LockError, Locker};

/// What the workload saw.
#[derive(Debug)]
pub(crate) struct ContentionReport {
    /// Critical sections completed before / after the fault.
    pub(crate) sections_before: usize,
    pub(crate) sections_after: usize,
    /// Times a holder entered while another was inside.
    pub(crate) overlaps: usize,
    /// Sections cut short because `lost()` fired.
    pub(crate) lost_inside: usize,
    /// Acquire errors, as text, with when they happened (from the workload's start).
    pub(crate) errors: Vec<String>,
    /// Fault → first successful acquire after it.
    pub(crate) recovery: Option<Duration>,
    /// Last successful acquire before the fault → first after it.
    pub(crate) unavailable: Option<Duration>,
}

/// Runs `clients` on `key` for `before`, injects `fault` (blocking, off the runtime), keeps running for
/// `after`, then stops every client (each loop is bounded by the stop flag and its acquire wait).
pub(crate) async fn contend_through_fault(
    clients: Vec<Arc<dyn Locker>>,
    key: &str,
    before: Duration,
    fault: impl FnOnce() + Send + 'static,
    after: Duration,
) -> ContentionReport {
    let started = Instant::now();
    let stop = Arc::new(AtomicBool::new(false));
    let inside = Arc::new(AtomicUsize::new(0));
    let overlaps = Arc::new(AtomicUsize::new(0));
    let lost_inside = Arc::new(AtomicUsize::new(0));
    let acquired_at = Arc::new(Mutex::new(Vec::<Instant>::new()));
    let errors = Arc::new(Mutex::new(Vec::new()));
    let mut workers = Vec::new();
    for locker in clients {
        let (stop, inside, overlaps, lost_inside, acquired_at, errors, key) = (
            stop.clone(),
            inside.clone(),
            overlaps.clone(),
            lost_inside.clone(),
            acquired_at.clone(),
            errors.clone(),
            key.to_owned(),
        );
        workers.push(tokio::spawn(async move {
            while !stop.load(Ordering::SeqCst) {
                let opts = AcquireOptions::wait(Duration::from_secs(5));
                let lease = match locker.acquire(&key, &opts).await {
                    Ok(lease) => lease,
                    Err(LockError::Timeout { .. }) => continue,
                    Err(e) => {
                        errors
                            .lock()
                            .unwrap()
                            .push(format!("t={:.3?}: {e}", started.elapsed()));
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                };
                acquired_at.lock().unwrap().push(Instant::now());
                if inside.fetch_add(1, Ordering::SeqCst) != 0 {
                    overlaps.fetch_add(1, Ordering::SeqCst);
                }
                tokio::select! {
                    _ = tokio::time::sleep(Duration::from_millis(20)) => {}
                    _ = lease.lost() => { lost_inside.fetch_add(1, Ordering::SeqCst); }
                }
                inside.fetch_sub(1, Ordering::SeqCst);
                // A release after a loss is NotHeld; errors here are the fault's, not the workload's.
                let _ = lease.release().await;
            }
        }));
    }
    tokio::time::sleep(before).await;
    let faulted_at = Instant::now();
    tokio::task::spawn_blocking(fault).await.unwrap();
    tokio::time::sleep(after).await;
    stop.store(true, Ordering::SeqCst);
    for worker in workers {
        worker.await.unwrap();
    }
    let times = acquired_at.lock().unwrap().clone();
    let last_before = times.iter().filter(|t| **t < faulted_at).max().copied();
    let first_after = times.iter().filter(|t| **t >= faulted_at).min().copied();
    let errors = errors.lock().unwrap().clone();
    ContentionReport {
        sections_before: times.iter().filter(|t| **t < faulted_at).count(),
        sections_after: times.iter().filter(|t| **t >= faulted_at).count(),
        overlaps: overlaps.load(Ordering::SeqCst),
        lost_inside: lost_inside.load(Ordering::SeqCst),
        errors,
        recovery: first_after.map(|t| t - faulted_at),
        unavailable: first_after.zip(last_before).map(|(a, b)| a - b),
    }
}

impl std::fmt::Display for ContentionReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "sections {} before / {} after the fault, overlaps {}, lost inside a section {}, \
             recovery {:?} (fault → first acquire), unavailable {:?} (last acquire before → first \
             after), {} acquire errors {:?}",
            self.sections_before,
            self.sections_after,
            self.overlaps,
            self.lost_inside,
            self.recovery,
            self.unavailable,
            self.errors.len(),
            self.errors,
        )
    }
}
