//! The holder task of a `redis-keyspace` watchdog lease: what it does on the signals `keyevents` sends
//! it. The shadow variant renews (check-and-pexpire, re-arming the shadow) on each shadow expiry and on
//! each resubscription, and loses the lease when its local deadline passes first; the naive variant
//! re-acquires on its lock's own expiry and meanwhile moves its local deadline forward on belief alone.
//! Every attempt is recorded by `record_renewal` with the trigger's lag.

use std::fmt::Display;
use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::redis::transport::connection::Commands;
use tokio::sync::{mpsc, watch};

use crate::error::LockError;
use crate::event::Events;
use crate::lease::{LeaseState, LossReason};
use crate::redis::scripts::ttl_millis;
use crate::redis::string_lock::StringLock;
use crate::redis::transport::connection::BACKEND;
use crate::redis::transport::keyevents::Signal;
use crate::renewal::{
    AfterRenewal, RenewOutcome, RenewTiming, RenewalPlan, announce_renewal, record_renewal,
};

/// What a holder task needs (not the client itself, so a dropped client is not kept alive by its holds).
#[derive(Clone)]
pub(in crate::redis) struct Renewer {
    pub(in crate::redis) commands: Commands,
    pub(in crate::redis) events: Events,
    /// The watchdog timeout and, as the period, a third of it (the naive belief's refresh).
    pub(in crate::redis) plan: RenewalPlan,
    pub(in crate::redis) shadow_ttl: Duration,
}

/// One held watchdog lock, as its holder task sees it.
pub(in crate::redis) struct Held {
    pub(in crate::redis) state: Arc<LeaseState>,
    /// The lock, with the shadow key in the shadow variant.
    pub(in crate::redis) lock: StringLock,
    /// Sent time + TTL of the watched key (the shadow, or the lock for the naive variant).
    pub(in crate::redis) nominal: Instant,
}

/// Why a holder task's wait ended.
enum Woken {
    /// The trigger for a renewal (an expiry event or a resubscription) arrived at this time.
    Trigger(Instant),
    /// The lease is lost or the client closed: stop.
    Stop,
}

impl Renewer {
    /// The shadow variant: renew on each shadow expiry, until lost or stopped.
    pub(in crate::redis) async fn shadow_loop(
        self,
        mut held: Held,
        mut signals: mpsc::UnboundedReceiver<Signal>,
        mut closed: watch::Receiver<bool>,
    ) {
        if held.lock.shadow_key().is_none() {
            return;
        }
        loop {
            self.scheduled(&held);
            let trigger = match self.wait_shadow(&held, &mut signals, &mut closed).await {
                Woken::Trigger(at) => at,
                Woken::Stop => return,
            };
            let lag = trigger.saturating_duration_since(held.nominal);
            let ttl_ms = ttl_millis(self.plan.ttl);
            let renewing = || {
                let mut commands = self.commands.clone();
                let lock = held.lock.clone();
                async move { lock.renew(&mut commands, ttl_ms).await }
            };
            match self
                .renew_until_done(&held, lag, &mut closed, renewing, LossReason::RenewRejected)
                .await
            {
                Some(sent_at) => held.nominal = sent_at + self.shadow_ttl,
                None => return,
            }
        }
    }

    /// Waits for the shadow's expiry (or a resubscription); marks the lease lost if its deadline passes
    /// first.
    async fn wait_shadow(
        &self,
        held: &Held,
        signals: &mut mpsc::UnboundedReceiver<Signal>,
        closed: &mut watch::Receiver<bool>,
    ) -> Woken {
        loop {
            let deadline = held.state.deadline();
            tokio::select! {
                signal = signals.recv() => match signal {
                    Some(Signal::Expired { at } | Signal::Resubscribed { at }) => return Woken::Trigger(at),
                    Some(Signal::Disconnected) => {}
                    None => {
                        let why = "keyspace event subscription ended".to_owned();
                        held.state.mark_lost(LossReason::ChannelClosed(why));
                        return Woken::Stop;
                    }
                },
                _ = tokio::time::sleep_until(deadline.into()) => {
                    if Instant::now() >= held.state.deadline() {
                        held.state.mark_lost(LossReason::Expired);
                        return Woken::Stop;
                    }
                }
                _ = closed.wait_for(|closed| *closed) => return Woken::Stop,
            }
        }
    }

    /// The naive variant: re-acquire on each expiry of the lock itself; between expiries, extend the
    /// local belief without asking the server.
    pub(in crate::redis) async fn naive_loop(
        self,
        mut held: Held,
        mut signals: mpsc::UnboundedReceiver<Signal>,
        mut closed: watch::Receiver<bool>,
    ) {
        let mut belief =
            tokio::time::interval_at((Instant::now() + self.plan.period).into(), self.plan.period);
        belief.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            self.scheduled(&held);
            let trigger = loop {
                tokio::select! {
                    signal = signals.recv() => match signal {
                        Some(Signal::Expired { at }) => break at,
                        // Naive: it cannot tell that an expiry was missed while disconnected.
                        Some(Signal::Disconnected | Signal::Resubscribed { .. }) => {}
                        None => {
                            let why = "keyspace event subscription ended".to_owned();
                            held.state.mark_lost(LossReason::ChannelClosed(why));
                            return;
                        }
                    },
                    _ = belief.tick() => held.state.extend_to(Instant::now() + self.plan.ttl),
                    _ = closed.wait_for(|closed| *closed) => return,
                }
            };
            let lag = trigger.saturating_duration_since(held.nominal);
            let ttl_ms = ttl_millis(self.plan.ttl);
            let reacquiring = || {
                let mut commands = self.commands.clone();
                let lock = held.lock.clone();
                async move { reacquire(&mut commands, &lock, ttl_ms).await }
            };
            match self
                .renew_until_done(&held, lag, &mut closed, reacquiring, LossReason::TakenOver)
                .await
            {
                Some(sent_at) => held.nominal = sent_at + self.plan.ttl,
                None => return,
            }
        }
    }

    /// Runs `attempt` until it extends the lease (returns its send time) or the lease is lost or the
    /// client closes (returns `None`), recording each try.
    async fn renew_until_done<F, Fut>(
        &self,
        held: &Held,
        lag: Duration,
        closed: &mut watch::Receiver<bool>,
        mut attempt: F,
        gone: LossReason,
    ) -> Option<Instant>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<RenewOutcome, LockError>>,
    {
        loop {
            let sent_at = Instant::now();
            let deadline = held.state.deadline();
            let result = match tokio::time::timeout_at(deadline.into(), attempt()).await {
                Ok(result) => result,
                Err(_elapsed) => Err(LockError::backend(
                    BACKEND,
                    "renewal got no answer before the local deadline",
                )),
            };
            let timing = RenewTiming {
                scheduled_at: held.nominal,
                sent_at,
                done_at: Instant::now(),
                trigger_lag: Some(lag),
            };
            let result = result.as_ref().copied().map_err(|e| e as &dyn Display);
            let (state, events) = (&held.state, &self.events);
            match record_renewal(state, events, self.plan, timing, result, gone.clone()) {
                AfterRenewal::Extended => return Some(sent_at),
                AfterRenewal::Lost => return None,
                AfterRenewal::Retry { at } => {
                    tokio::select! {
                        _ = tokio::time::sleep_until(at.into()) => {}
                        _ = closed.wait_for(|closed| *closed) => return None,
                    }
                }
            }
        }
    }

    fn scheduled(&self, held: &Held) {
        announce_renewal(&self.events, held.state.key(), held.nominal);
    }
}

/// The naive re-acquire: a plain `SET NX PX` with the holder's value (the key is already gone).
async fn reacquire(
    commands: &mut Commands,
    lock: &StringLock,
    ttl_ms: u64,
) -> Result<RenewOutcome, LockError> {
    let set: Option<String> = redis::cmd("SET")
        .arg(&lock.keys.lock)
        .arg(&*lock.value)
        .arg("NX")
        .arg("PX")
        .arg(ttl_ms)
        .query_async(commands)
        .await?;
    Ok(match set {
        Some(_ok) => RenewOutcome::Extended {
            remaining_before: Some(Duration::ZERO),
        },
        None => RenewOutcome::Gone,
    })
}
