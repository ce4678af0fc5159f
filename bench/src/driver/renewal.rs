//! Renewal metrics from `LockEvent`s only, so every strategy is measured the same way: one
//! [`RenewalRecorder`] is each client's event sink. It keeps counters and three histograms behind an
//! uncontended mutex (only the client's own renewal paths call it) and ignores the per-cycle events
//! (`Acquired`, `Released`) at the cost of one match; it declines `RenewScheduled`, so strategies never
//! build one.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use lockers::{EventSink, LockEvent, LossReason, Renewed};
use serde::{Deserialize, Serialize};

use super::histogram::{Hist, as_base64, merge, new_hist, record};
use crate::base::clock::{MonoClock, duration_ns};

/// A client's renewal figures (the measured window, except `losses`: the whole case).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct RenewalTally {
    /// `Renewed` events.
    pub renewals: u64,
    /// `RenewFailed` events.
    pub failures: u64,
    /// `Lost` events by reason.
    pub losses: BTreeMap<String, u64>,
    /// `done_at - sent_at`, ns.
    #[serde(with = "as_base64")]
    pub round_trip: Hist,
    /// `sent_at - scheduled_at`, ns.
    #[serde(with = "as_base64")]
    pub lag: Hist,
    /// `remaining_ttl_before`, ns.
    #[serde(with = "as_base64")]
    pub margin: Hist,
}

impl Default for RenewalTally {
    fn default() -> Self {
        RenewalTally {
            renewals: 0,
            failures: 0,
            losses: BTreeMap::new(),
            round_trip: new_hist(),
            lag: new_hist(),
            margin: new_hist(),
        }
    }
}

impl RenewalTally {
    /// Adds another client's tally.
    pub(crate) fn merge(&mut self, other: &RenewalTally) {
        self.renewals += other.renewals;
        self.failures += other.failures;
        for (reason, n) in &other.losses {
            *self.losses.entry(reason.clone()).or_default() += n;
        }
        merge(&mut self.round_trip, &other.round_trip);
        merge(&mut self.lag, &other.lag);
        merge(&mut self.margin, &other.margin);
    }
}

/// A stable name for a loss reason, for counting.
pub(crate) fn loss_reason_name(reason: &LossReason) -> &'static str {
    match reason {
        LossReason::RenewRejected => "renew_rejected",
        LossReason::Expired => "expired",
        LossReason::SessionExpired => "session_expired",
        LossReason::LeaseRevoked => "lease_revoked",
        LossReason::ChannelClosed(_) => "channel_closed",
        LossReason::TakenOver => "taken_over",
        _ => "other",
    }
}

/// One client's event sink.
#[derive(Debug)]
pub(crate) struct RenewalRecorder {
    clock: MonoClock,
    measure_from: Arc<AtomicU64>,
    tally: Mutex<Option<RenewalTally>>,
}

impl RenewalRecorder {
    /// A recorder counting renewals from the (shared, settable) `measure_from` on.
    pub(crate) fn new(clock: MonoClock, measure_from: Arc<AtomicU64>) -> Arc<Self> {
        Arc::new(RenewalRecorder {
            clock,
            measure_from,
            tally: Mutex::new(None),
        })
    }

    /// The tally so far.
    pub(crate) fn tally(&self) -> RenewalTally {
        self.lock().clone().unwrap_or_default()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Option<RenewalTally>> {
        self.tally.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn measured(&self, at: std::time::Instant) -> bool {
        self.clock.ns(at) >= self.measure_from.load(Ordering::Acquire)
    }
}

impl EventSink for RenewalRecorder {
    fn wants_renewal_plans(&self) -> bool {
        false
    }

    fn record_renewed(&self, _key: &Arc<str>, renewed: Renewed) {
        let Renewed {
            scheduled_at,
            sent_at,
            done_at,
            remaining_ttl_before,
            ..
        } = renewed;
        if !self.measured(done_at) {
            return;
        }
        let mut guard = self.lock();
        let tally = guard.get_or_insert_with(RenewalTally::default);
        tally.renewals += 1;
        record(
            &mut tally.round_trip,
            duration_ns(done_at.saturating_duration_since(sent_at)),
        );
        record(
            &mut tally.lag,
            duration_ns(sent_at.saturating_duration_since(scheduled_at)),
        );
        if let Some(margin) = remaining_ttl_before {
            record(&mut tally.margin, duration_ns(margin));
        }
    }

    fn record(&self, event: LockEvent) {
        if let (LockEvent::Renewed { key, .. }, Some(renewed)) = (&event, event.renewal()) {
            return self.record_renewed(key, renewed);
        }
        match event {
            LockEvent::RenewFailed { at, .. } if self.measured(at) => {
                self.lock()
                    .get_or_insert_with(RenewalTally::default)
                    .failures += 1;
            }
            LockEvent::Lost { reason, .. } => {
                let mut guard = self.lock();
                let tally = guard.get_or_insert_with(RenewalTally::default);
                *tally
                    .losses
                    .entry(loss_reason_name(&reason).to_owned())
                    .or_default() += 1;
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    #[test]
    fn counts_renewals_in_the_window_and_every_loss() {
        let clock = MonoClock::new();
        let from = Arc::new(AtomicU64::new(u64::MAX));
        let recorder = RenewalRecorder::new(clock, from.clone());
        let now = Instant::now();
        let renewed = |done: Instant| LockEvent::Renewed {
            key: "k".into(),
            scheduled_at: done - Duration::from_millis(3),
            sent_at: done - Duration::from_millis(2),
            done_at: done,
            remaining_ttl_before: Some(Duration::from_millis(600)),
            granted_ttl: Duration::from_secs(1),
            trigger_lag: None,
        };
        recorder.record(renewed(now));
        recorder.record(LockEvent::Lost {
            key: "k".into(),
            detected_at: now,
            reason: LossReason::Expired,
        });
        from.store(clock.ns(now), Ordering::Release);
        recorder.record(renewed(now + Duration::from_millis(1)));
        recorder.record(LockEvent::Released {
            key: "k".into(),
            at: now,
        });
        let tally = recorder.tally();
        assert_eq!(tally.renewals, 1, "the first was before the window");
        assert_eq!(tally.losses.get("expired"), Some(&1));
        let rtt = tally.round_trip.value_at_quantile(0.5);
        assert!((1_990_000..=2_010_000).contains(&rtt), "{rtt}");
        let margin = tally.margin.max();
        assert!((599_000_000..=601_000_000).contains(&margin), "{margin}");
    }
}
