//! Renewal machinery shared by the renewing strategies: the bookkeeping of one renewal attempt
//! ([`record_renewal`]: every renewer — timer loop, batch scheduler, thread, event-driven task — extends,
//! reports and gives up the same way) and the watchdog renew loop built on it. The registry of holds (one
//! renewal entry per key per owner, re-entrant holds counted on it, as Redisson keeps them) is in
//! `holds`; locks renewed together by one client-wide session are in `session`.

use std::fmt::Display;
use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::error::LockError;
use crate::event::{Events, LockEvent, Renewed};
use crate::lease::{LeaseEnd, LeaseState, LossReason};
use crate::lease_cells::LeaseCell;
use crate::settings::Renewal;

mod holds;
#[cfg(any(feature = "etcd", feature = "zookeeper"))]
mod session;

pub(crate) use holds::{HoldTicket, Holds, StopRenewal};
#[cfg(any(feature = "etcd", feature = "zookeeper"))]
pub(crate) use session::{
    RenewSession, SessionHold, SessionHolds, SessionPlan, SessionRenewal, renew_session_until_lost,
};

/// What one renewal call found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RenewOutcome {
    /// Extended; the TTL left before the extension, when known.
    Extended {
        /// The server's remaining TTL before this renewal (the safety margin).
        remaining_before: Option<Duration>,
    },
    /// The lock is no longer ours.
    Gone,
}

/// How a watchdog renews: the TTL each renewal grants and how often it runs.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RenewalPlan {
    /// The TTL a successful renewal sets.
    pub(crate) ttl: Duration,
    /// Time between a renewal's answer and the next renewal (Redisson: timeout / 3).
    pub(crate) period: Duration,
}

impl From<Renewal> for RenewalPlan {
    /// The plan for a watchdog lease of `renewal.ttl` renewed every `renewal.period()`.
    fn from(renewal: Renewal) -> Self {
        RenewalPlan {
            ttl: renewal.ttl,
            period: renewal.period(),
        }
    }
}

impl RenewalPlan {
    /// Retry interval after a failed renewal: often enough to land before the deadline.
    pub(crate) fn retry(&self) -> Duration {
        (self.period / 3).max(Duration::from_millis(5))
    }
}

/// Reports that `key`'s next renewal is planned for `due`.
pub(crate) fn announce_renewal(events: &Events, key: &Arc<str>, due: Instant) {
    announce_renewal_at(events, key, due, Instant::now());
}

/// Reports that `key`'s next renewal was planned for `due` at `at` (a caller planning many at once
/// reads the clock once).
pub(crate) fn announce_renewal_at(events: &Events, key: &Arc<str>, due: Instant, at: Instant) {
    events.emit_plan(|| LockEvent::RenewScheduled {
        key: key.clone(),
        at,
        due,
    });
}

/// When one renewal attempt was due, sent and answered, and (for event-driven renewal) how late its
/// trigger arrived.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RenewTiming {
    pub(crate) scheduled_at: Instant,
    pub(crate) sent_at: Instant,
    pub(crate) done_at: Instant,
    pub(crate) trigger_lag: Option<Duration>,
}

/// What a renewer does after one attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AfterRenewal {
    /// Extended: plan the next one.
    Extended,
    /// The lease is lost (marked) or has ended: stop.
    Lost,
    /// Failed before the deadline: try again at `at` (a retry interval later, never past the deadline).
    Retry {
        /// When to try again.
        at: Instant,
    },
}

/// Records one renewal attempt of `state` on `plan` (nothing, and stop, if the lease has ended meanwhile):
///
/// - `Extended`: the deadline moves to `sent_at + ttl` and `Renewed` is emitted.
/// - `Gone`: the lease is marked lost with `gone` (`RenewRejected`; `TakenOver` for a re-acquire).
/// - An error: `RenewFailed`, then `Expired` once the local deadline has passed, else a retry
///   [`RenewalPlan::retry`] later (at the latest at the deadline).
pub(crate) fn record_renewal(
    state: &LeaseState,
    events: &Events,
    plan: RenewalPlan,
    timing: RenewTiming,
    result: Result<RenewOutcome, &dyn Display>,
    gone: LossReason,
) -> AfterRenewal {
    // A lease that ended while the call was in flight is never extended or reported renewed. After a
    // release nothing more is reported; after a loss only the in-flight attempt's own failure is (a
    // thread cut off at the deadline says so).
    if let Some(end) = state.end() {
        if let (LeaseEnd::Lost(_), Err(error)) = (end, result) {
            events.emit(|| LockEvent::RenewFailed {
                key: state.key().clone(),
                at: timing.done_at,
                error: error.to_string(),
            });
        }
        return AfterRenewal::Lost;
    }
    match result {
        Ok(RenewOutcome::Extended { remaining_before }) => {
            let cell = state.cell();
            extended(
                cell,
                state.key(),
                events,
                timing,
                remaining_before,
                plan.ttl,
            );
            AfterRenewal::Extended
        }
        Ok(RenewOutcome::Gone) => {
            state.mark_lost(gone);
            AfterRenewal::Lost
        }
        Err(error) => {
            events.emit(|| LockEvent::RenewFailed {
                key: state.key().clone(),
                at: timing.done_at,
                error: error.to_string(),
            });
            let deadline = state.deadline();
            if timing.done_at >= deadline {
                state.mark_lost(LossReason::Expired);
                AfterRenewal::Lost
            } else {
                AfterRenewal::Retry {
                    at: (timing.done_at + plan.retry()).min(deadline),
                }
            }
        }
    }
}

/// A renewal of `key` timed by `timing` granted `granted` (counted from its send time, conservatively):
/// unless the lease has ended, moves the deadline in its `cell` there and reports the renewal with the
/// TTL found before, when known. Returns whether it did.
pub(crate) fn extended(
    cell: &LeaseCell,
    key: &Arc<str>,
    events: &Events,
    timing: RenewTiming,
    remaining_before: Option<Duration>,
    granted: Duration,
) -> bool {
    if cell.has_ended() {
        return false;
    }
    cell.extend_to(timing.sent_at + granted);
    events.renewed(key, || Renewed {
        scheduled_at: timing.scheduled_at,
        sent_at: timing.sent_at,
        done_at: timing.done_at,
        remaining_ttl_before: remaining_before,
        granted_ttl: granted,
        trigger_lag: timing.trigger_lag,
    });
    true
}

/// Renews `state` on `plan` with `renew` until the lease is lost. The caller stops it (aborts the task) on
/// release. The first renewal is due `plan.period` after `first_due_from`; each attempt is recorded by
/// [`record_renewal`] (next due one period after a success's answer), and a call that hangs is cut off at
/// the local deadline.
pub(crate) async fn renew_until_lost<F, Fut>(
    state: Arc<LeaseState>,
    plan: RenewalPlan,
    first_due_from: Instant,
    events: Events,
    mut renew: F,
) where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<RenewOutcome, LockError>>,
{
    let mut due = first_due_from + plan.period;
    while !state.has_ended() {
        announce_renewal(&events, state.key(), due);
        tokio::time::sleep_until(due.into()).await;
        let sent_at = Instant::now();
        let deadline = state.deadline();
        let outcome = tokio::time::timeout_at(deadline.into(), renew()).await;
        let timing = RenewTiming {
            scheduled_at: due,
            sent_at,
            done_at: Instant::now(),
            trigger_lag: None,
        };
        let result = match &outcome {
            Ok(Ok(renewed)) => Ok(*renewed),
            Ok(Err(error)) => Err(error as &dyn Display),
            Err(_elapsed) => {
                Err(&"renewal got no answer before the local deadline" as &dyn Display)
            }
        };
        let gone = LossReason::RenewRejected;
        match record_renewal(&state, &events, plan, timing, result, gone) {
            AfterRenewal::Extended => due = timing.done_at + plan.period,
            AfterRenewal::Lost => return,
            AfterRenewal::Retry { at } => due = at,
        }
    }
}

/// Runs `work` on the current tokio runtime in the background, if there is one. Never blocks and never
/// panics outside a runtime: then the work is skipped, and what it would have cleaned up expires by its
/// TTL or session instead.
#[cfg(any(
    feature = "etcd",
    feature = "zookeeper",
    feature = "redis",
    feature = "postgres",
    feature = "mysql"
))]
pub(crate) fn in_background(work: impl Future<Output = ()> + Send + 'static) {
    if let Ok(runtime) = tokio::runtime::Handle::try_current() {
        runtime.spawn(work);
    }
}
