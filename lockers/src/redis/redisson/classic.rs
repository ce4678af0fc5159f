//! Classic Redisson renewal (3.x before 3.44; `RedissonBaseLock.scheduleExpirationRenewal` /
//! `renewExpiration` / `cancelExpirationRenewal`, read at redisson-3.43.0): one timer per held lock.
//!
//! - The first renewal is due timeout/3 after the acquire's answer (Redisson schedules it from the
//!   acquire's completion), every next one timeout/3 after the previous renewal's answer.
//! - Answer 1: the TTL was set to the watchdog timeout; the local deadline moves to `sent + timeout`
//!   (`Renewed`, with no remaining TTL: Redisson's script does not read it).
//! - Answer 0: the entry is cancelled (`cancelExpirationRenewal`): renewal ends and the holder is not
//!   told. Its `lost()` resolves at the local deadline.
//! - An error left after Redisson's command retries (a reset, timeout or `BUSY` answer still there after
//!   `retryAttempts` re-sends, or no replica synced): Redisson logs "Can't update lock … expiration" and
//!   removes the entry, so renewal stops for good. Here: one `RenewFailed` event (the
//!   log line) and the loop ends; nobody retries and the holder is not told: `lost()` resolves only at
//!   the local deadline, when the server's TTL runs out too.
//!
//! Re-entrant holds of one owner share the entry, as Redisson's `ExpirationEntry` counts thread ids.
//! The loop is spawned lazily at its first due time (`deferred`), which is what a wheel-timer timeout
//! costs in Redisson: nothing until it fires.

use std::sync::Arc;
use std::time::Instant;

use tokio::sync::watch;

use super::lock::{Core, RenewTarget};
use crate::event::LockEvent;
use crate::lease::{LeaseState, LossReason};
use crate::redis::deferred::DeferredStarts;
use crate::renewal::{
    AfterRenewal, RenewOutcome, RenewTiming, RenewalPlan, StopRenewal, announce_renewal,
    record_renewal,
};

/// Starts the classic renewal timer of `target`, whose acquire was answered at `answered_at`.
pub(crate) fn start(
    deferred: &DeferredStarts,
    core: &Arc<Core>,
    target: RenewTarget,
    state: Arc<LeaseState>,
    answered_at: Instant,
    closed: watch::Receiver<bool>,
) -> Box<dyn StopRenewal> {
    let first_due = core
        .timer
        .fires_at(answered_at + core.config.renewal_period());
    announce_renewal(&core.events, state.key(), first_due);
    let core = core.clone();
    let begin = move || {
        let mut closed = closed;
        let renewing = renew_until_stopped(core, target, state, first_due);
        let task = tokio::spawn(async move {
            tokio::select! {
                _ = renewing => {}
                _ = closed.wait_for(|closed| *closed) => {}
            }
        });
        task.abort_handle()
    };
    deferred.schedule(first_due, Box::new(begin))
}

/// The timer chain of one lock: renews until an answer 0 or an error ends it (or release aborts it).
async fn renew_until_stopped(
    core: Arc<Core>,
    target: RenewTarget,
    state: Arc<LeaseState>,
    first_due: Instant,
) {
    let plan = RenewalPlan {
        ttl: core.config.renewal.ttl,
        period: core.config.renewal_period(),
    };
    let events = &core.events;
    let mut due = first_due;
    loop {
        tokio::time::sleep_until(due.into()).await;
        let sent_at = Instant::now();
        let answer = core.renew_one(&target).await;
        let done_at = Instant::now();
        match answer {
            Ok(true) => {
                let timing = RenewTiming {
                    scheduled_at: due,
                    sent_at,
                    done_at,
                    trigger_lag: None,
                };
                let renewed = Ok(RenewOutcome::Extended {
                    remaining_before: None,
                });
                let gone = LossReason::RenewRejected;
                if record_renewal(&state, events, plan, timing, renewed, gone)
                    != AfterRenewal::Extended
                {
                    return;
                }
                due = core.timer.fires_at(done_at + plan.period);
                announce_renewal(events, state.key(), due);
            }
            // cancelExpirationRenewal(null): the entry goes, the holder is not told.
            Ok(false) => return,
            Err(error) => {
                events.emit(|| LockEvent::RenewFailed {
                    key: state.key().clone(),
                    at: done_at,
                    error: error.to_string(),
                });
                return;
            }
        }
    }
}
