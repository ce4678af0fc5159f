//! The event sink of a scale run's client: its renewals, failed renewals and losses, and the margins
//! (remaining TTLs) its renewals found.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use hdrhistogram::Histogram;
use lockers::{EventSink, LockEvent, Renewed};

/// Counts the renewal events of one client, and the margins (remaining TTLs) its renewals found.
#[derive(Debug)]
pub(super) struct RenewalCounts {
    renewed: AtomicU64,
    failed: AtomicU64,
    lost: AtomicU64,
    /// The least `remaining_ttl_before` reported since the last [`take_margins`](Self::take_margins),
    /// in µs (`u64::MAX`: none).
    thinnest_us: AtomicU64,
    /// Every `remaining_ttl_before` since the last [`take_margins`](Self::take_margins), in µs.
    margins_us: Mutex<Histogram<u64>>,
}

impl Default for RenewalCounts {
    fn default() -> Self {
        RenewalCounts {
            renewed: AtomicU64::new(0),
            failed: AtomicU64::new(0),
            lost: AtomicU64::new(0),
            thinnest_us: AtomicU64::new(u64::MAX),
            margins_us: Mutex::new(margin_histogram()),
        }
    }
}

/// An empty histogram of margins in µs, 1 µs to an hour (longer ones are recorded as an hour), 3
/// significant digits.
fn margin_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 3_600_000_000, 3).expect("valid bounds and precision")
}

impl EventSink for RenewalCounts {
    fn wants_renewal_plans(&self) -> bool {
        false
    }

    fn record_renewed(&self, _key: &Arc<str>, renewed: Renewed) {
        self.renewed(renewed.remaining_ttl_before);
    }

    fn reads_renewal_keys(&self) -> bool {
        false
    }

    fn record_renewals(&self, count: u64, renewed: Renewed) {
        self.renewed_many(count, renewed.remaining_ttl_before);
    }

    fn record(&self, event: LockEvent) {
        if let Some(renewed) = event.renewal() {
            return self.renewed(renewed.remaining_ttl_before);
        }
        match event {
            LockEvent::RenewFailed { .. } => self.failed(),
            LockEvent::Lost { .. } => self.lost(),
            _ => {}
        }
    }
}

impl RenewalCounts {
    /// One lock renewed, which had `left` of its TTL when the renewal ran (when known).
    pub(super) fn renewed(&self, left: Option<Duration>) {
        self.renewed_many(1, left);
    }

    /// `count` locks renewed, each of which had `left` of its TTL when the renewal ran (when known).
    fn renewed_many(&self, count: u64, left: Option<Duration>) {
        if count == 0 {
            return;
        }
        if let Some(left) = left {
            let us = u64::try_from(left.as_micros()).unwrap_or(u64::MAX);
            self.thinnest_us.fetch_min(us, Ordering::Relaxed);
            self.margins_us
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .saturating_record_n(us, count);
        }
        self.renewed.fetch_add(count, Ordering::Relaxed);
    }

    /// One renewal failed.
    pub(super) fn failed(&self) {
        self.failed.fetch_add(1, Ordering::Relaxed);
    }

    /// One lock lost.
    pub(super) fn lost(&self) {
        self.lost.fetch_add(1, Ordering::Relaxed);
    }

    /// (renewed, failed, lost) so far.
    pub(super) fn now(&self) -> [u64; 3] {
        [&self.renewed, &self.failed, &self.lost].map(|c| c.load(Ordering::Relaxed))
    }

    /// The thinnest margin and the margins' 0.1th percentile since the last call, in ms, and starts
    /// anew.
    pub(super) fn take_margins(&self) -> (Option<f64>, Option<f64>) {
        let us = self.thinnest_us.swap(u64::MAX, Ordering::Relaxed);
        let histogram = std::mem::replace(
            &mut *self.margins_us.lock().unwrap_or_else(|e| e.into_inner()),
            margin_histogram(),
        );
        let p0_1 = (!histogram.is_empty()).then(|| histogram.value_at_quantile(0.001) as f64 / 1e3);
        ((us != u64::MAX).then(|| us as f64 / 1e3), p0_1)
    }
}
