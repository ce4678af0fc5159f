//! One monotonic clock for every worker, in-process or not: `CLOCK_MONOTONIC` as nanoseconds. (The
//! wall-clock timestamp results record is `lockbench_reports::format::now_rfc3339`, re-exported here.)
//!
//! Rust's `Instant` is `CLOCK_MONOTONIC` on Linux but opaque; worker processes and lock events need
//! plain numbers that compare across processes of one machine. [`MonoClock`] maps an `Instant` to
//! those nanoseconds with one offset read at start-up.

use std::time::{Duration, Instant};

pub(crate) use lockbench_reports::format::now_rfc3339;

/// Reads `CLOCK_MONOTONIC` in nanoseconds (the same clock in every process of the machine).
pub(crate) fn mono_now_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; CLOCK_MONOTONIC is always available on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    let secs = u64::try_from(ts.tv_sec).unwrap_or(0);
    let nanos = u64::try_from(ts.tv_nsec).unwrap_or(0);
    secs.saturating_mul(1_000_000_000).saturating_add(nanos)
}

/// Converts `Instant`s to machine-wide monotonic nanoseconds.
#[derive(Debug, Clone, Copy)]
pub(crate) struct MonoClock {
    base: Instant,
    base_ns: u64,
}

impl Default for MonoClock {
    fn default() -> Self {
        Self::new()
    }
}

impl MonoClock {
    /// A clock anchored now.
    pub(crate) fn new() -> Self {
        let base = Instant::now();
        let base_ns = mono_now_ns();
        MonoClock { base, base_ns }
    }

    /// Now, in nanoseconds.
    #[inline]
    pub(crate) fn now(&self) -> u64 {
        self.ns(Instant::now())
    }

    /// `at`, in nanoseconds.
    #[inline]
    pub(crate) fn ns(&self, at: Instant) -> u64 {
        if at >= self.base {
            self.base_ns
                .saturating_add(duration_ns(at.duration_since(self.base)))
        } else {
            self.base_ns
                .saturating_sub(duration_ns(self.base.duration_since(at)))
        }
    }

    /// The `Instant` of `ns` (for timers).
    pub(crate) fn instant(&self, ns: u64) -> Instant {
        if ns >= self.base_ns {
            self.base + Duration::from_nanos(ns - self.base_ns)
        } else {
            self.base
                .checked_sub(Duration::from_nanos(self.base_ns - ns))
                .unwrap_or(self.base)
        }
    }
}

/// A duration in whole nanoseconds, saturating.
#[inline]
pub(crate) fn duration_ns(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn instant_round_trips_through_nanoseconds() {
        let clock = MonoClock::new();
        let later = Instant::now() + Duration::from_millis(5);
        let ns = clock.ns(later);
        let back = clock.instant(ns);
        let diff = back.max(later) - back.min(later);
        assert!(diff < Duration::from_micros(1), "{diff:?}");
        let raw = mono_now_ns();
        assert!(clock.now().abs_diff(raw) < 1_000_000);
    }
}
