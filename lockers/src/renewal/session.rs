//! Locks renewed by one client-wide session (an etcd lease shared by a client's locks, a ZooKeeper
//! session): the registry of the locks under it and the loop that renews the session for all of them.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::error::LockError;
use crate::event::{Events, LockEvent, Renewed};
use crate::lease::{LeaseState, LossReason};
use crate::lease_cells::CarrierCell;

use super::holds::HoldKey;

pub(crate) struct SessionHold<P> {
    pub(crate) state: Arc<LeaseState>,
    pub(crate) payload: P,
    /// Changed only under the registry's lock.
    holds: std::sync::atomic::AtomicU32,
}

impl<P: std::fmt::Debug> std::fmt::Debug for SessionHold<P> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionHold")
            .field("state", &self.state)
            .field("payload", &self.payload)
            .finish()
    }
}

/// The locks a client holds under one session, by `(key, owner)`. Every lock's deadline is the
/// session's (its state reads the session's cell, so a renewal moves them all in one write) and every
/// lock is lost with the session; a lock can also end alone (its own end flag), and then its deadline
/// stays where it was.
pub(crate) struct SessionHolds<P> {
    /// The session's deadline and end flag, which its locks' states read, and how many of them last.
    carrier: Arc<CarrierCell>,
    session: Arc<LeaseState>,
    entries: Mutex<HashMap<HoldKey, Arc<SessionHold<P>>>>,
}

impl<P> std::fmt::Debug for SessionHolds<P> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionHolds")
            .field("session", &self.session)
            .field("held", &self.len())
            .finish()
    }
}

impl<P> SessionHolds<P> {
    /// A session named `name` (used in its own state only, never in events) alive until `deadline`.
    pub(crate) fn new(name: &str, deadline: Instant) -> Self {
        let carrier = CarrierCell::new(deadline);
        SessionHolds {
            session: LeaseState::carrier(name.into(), &carrier),
            carrier,
            entries: Mutex::default(),
        }
    }

    /// The session's own deadline and loss.
    pub(crate) fn session(&self) -> &Arc<LeaseState> {
        &self.session
    }

    /// A re-entrant acquire: a live hold of `key` by `owner` gains one more hold. No server call needed.
    #[cfg(feature = "zookeeper")]
    pub(crate) fn reenter(&self, key: &Arc<str>, owner: &Arc<str>) -> Option<Arc<SessionHold<P>>> {
        let entries = self.lock();
        let hold = entries.get(&(key.clone(), owner.clone()))?;
        if hold.state.has_ended() {
            return None;
        }
        hold.holds
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Some(hold.clone())
    }

    /// Registers a new hold whose deadline is the session's. Fails with the session's loss reason once the
    /// session is lost, so a lock can never outlive the session that carries it. `announce` (which
    /// reports `Acquired`) runs only when the hold is registered, before any renewal can see it.
    pub(crate) fn insert(
        &self,
        key: &Arc<str>,
        owner: &Arc<str>,
        events: &Events,
        payload: P,
        announce: impl FnOnce(),
    ) -> Result<Arc<SessionHold<P>>, LossReason> {
        let mut entries = self.lock();
        if let Some(reason) = self.session.loss() {
            return Err(reason);
        }
        announce();
        let hold = Arc::new(SessionHold {
            state: LeaseState::carried(key.clone(), &self.carrier, events.clone()),
            payload,
            holds: std::sync::atomic::AtomicU32::new(1),
        });
        entries.insert((key.clone(), owner.clone()), hold.clone());
        Ok(hold)
    }

    /// Removes one hold. On the last it unregisters the lock, marks its state released and returns true.
    pub(crate) fn leave(
        &self,
        key: &Arc<str>,
        owner: &Arc<str>,
        hold: &Arc<SessionHold<P>>,
    ) -> bool {
        let mut entries = self.lock();
        let left = hold
            .holds
            .load(std::sync::atomic::Ordering::Relaxed)
            .saturating_sub(1);
        hold.holds.store(left, std::sync::atomic::Ordering::Relaxed);
        if left > 0 {
            return false;
        }
        let slot = (key.clone(), owner.clone());
        if entries.get(&slot).is_some_and(|e| Arc::ptr_eq(e, hold)) {
            entries.remove(&slot);
        }
        drop(entries);
        hold.state.mark_released();
        true
    }

    /// How many locks are held under the session.
    pub(crate) fn len(&self) -> usize {
        self.lock().len()
    }

    /// Every lock held under the session.
    #[cfg(feature = "zookeeper")]
    pub(crate) fn held(&self) -> Vec<Arc<SessionHold<P>>> {
        self.lock().values().cloned().collect()
    }

    fn states(&self) -> Vec<Arc<LeaseState>> {
        self.lock().values().map(|h| h.state.clone()).collect()
    }

    /// A session renewal sent at `sent_at` was granted `granted`: the session and every lock under it
    /// that has not ended now live to `sent_at + granted` (one write: they read the session's deadline);
    /// one `Renewed` event per such lock, or, for a sink that reads no renewal keys, one call with their
    /// count. Its cost does not grow with the locks held unless the sink reads their keys.
    pub(crate) fn renewed(&self, renewal: SessionRenewed, events: &Events) {
        self.session.extend_to(renewal.sent_at + renewal.granted);
        let renewed = Renewed {
            scheduled_at: renewal.scheduled_at,
            sent_at: renewal.sent_at,
            done_at: renewal.done_at,
            remaining_ttl_before: None,
            granted_ttl: renewal.granted,
            trigger_lag: None,
        };
        if !events.renewal_keys_wanted() {
            return events.renewals(self.carrier.carried(), renewed);
        }
        for state in self.states() {
            if !state.has_ended() {
                events.renewed(state.key(), || renewed);
            }
        }
    }

    /// One `RenewScheduled` event per lock under the session.
    fn scheduled(&self, due: Instant, events: &Events) {
        if !events.plans_wanted() {
            return;
        }
        let at = Instant::now();
        for state in self.states() {
            events.emit_plan(|| LockEvent::RenewScheduled {
                key: state.key().clone(),
                at,
                due,
            });
        }
    }

    /// A session renewal failed: one `RenewFailed` event per lock under the session.
    fn renew_failed(&self, at: Instant, error: &str, events: &Events) {
        if !events.enabled() {
            return;
        }
        for state in self.states() {
            events.emit(|| LockEvent::RenewFailed {
                key: state.key().clone(),
                at,
                error: error.to_owned(),
            });
        }
    }

    /// The session is gone: it and every lock under it are marked lost with `reason`.
    pub(crate) fn lose(&self, reason: LossReason) {
        // Marking the session first makes a concurrent `insert` either fail or be swept below.
        self.session.mark_lost(reason.clone());
        for state in self.states() {
            state.mark_lost(reason.clone());
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<HoldKey, Arc<SessionHold<P>>>> {
        self.entries.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The timing of one successful session renewal.
#[derive(Debug, Clone, Copy)]
pub(crate) struct SessionRenewed {
    /// When it was due.
    pub(crate) scheduled_at: Instant,
    /// When it was sent.
    pub(crate) sent_at: Instant,
    /// When the answer came back.
    pub(crate) done_at: Instant,
    /// The TTL the server granted, counted from `sent_at` (conservatively).
    pub(crate) granted: Duration,
}

/// What one session renewal found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum SessionRenewal {
    /// The session lives on for `granted` from when the renewal was sent.
    Extended {
        /// The TTL the server granted.
        granted: Duration,
    },
    /// The session is gone for good.
    Gone(LossReason),
}

/// How a session is renewed: one call renews the whole session.
#[async_trait::async_trait]
pub(crate) trait RenewSession: Send {
    /// Renews the session once. An error is a failed attempt (retried until the deadline).
    async fn renew(&mut self) -> Result<SessionRenewal, LockError>;
}

/// How often a session is renewed and what a renewal that never lands counts as.
#[derive(Debug, Clone, Copy)]
pub(crate) struct SessionPlan {
    /// Time between a renewal's answer and the next renewal.
    pub(crate) period: Duration,
    /// The loss reported when renewals keep failing until the session's deadline, given the last error.
    pub(crate) deadline_loss: fn(String) -> LossReason,
}

/// Renews a session on `plan` with `renewer` until it is lost, whether or not locks are held (so the
/// session's own deadline stays true for the next acquire); every lock under `holds` follows. The caller
/// stops it (aborts the task) when the session is closed. The first renewal is due at `first_due`.
///
/// - `Extended`: the session and its locks live to `sent_at + granted`; `Renewed` per lock.
/// - `Gone`: the session and its locks are lost with that reason.
/// - An error or no answer: `RenewFailed` per lock, retried until the session's deadline, then lost with
///   `plan.deadline_loss`.
pub(crate) async fn renew_session_until_lost<P: Send + Sync>(
    holds: Arc<SessionHolds<P>>,
    plan: SessionPlan,
    first_due: Instant,
    events: Events,
    mut renewer: impl RenewSession,
) {
    let session = holds.session().clone();
    let retry = (plan.period / 3).max(Duration::from_millis(5));
    let mut due = first_due;
    while !session.has_ended() {
        holds.scheduled(due, &events);
        tokio::time::sleep_until(due.into()).await;
        let sent_at = Instant::now();
        let deadline = session.deadline();
        let outcome = tokio::time::timeout_at(deadline.into(), renewer.renew()).await;
        let done_at = Instant::now();
        let error = match outcome {
            Ok(Ok(SessionRenewal::Extended { granted })) => {
                let renewal = SessionRenewed {
                    scheduled_at: due,
                    sent_at,
                    done_at,
                    granted,
                };
                holds.renewed(renewal, &events);
                due = done_at + plan.period;
                continue;
            }
            Ok(Ok(SessionRenewal::Gone(reason))) => {
                holds.lose(reason);
                return;
            }
            Ok(Err(error)) => error.to_string(),
            Err(_elapsed) => "session renewal got no answer before the local deadline".to_owned(),
        };
        holds.renew_failed(done_at, &error, &events);
        if done_at >= session.deadline() {
            holds.lose((plan.deadline_loss)(error));
            return;
        }
        due = (done_at + retry).min(session.deadline());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::EventLog;
    use crate::lease::LeaseEnd;

    /// A sink that reads no renewal keys and keeps the count of each call it got.
    #[derive(Debug, Default)]
    struct KeylessCounter {
        calls: Mutex<Vec<u64>>,
    }

    impl crate::event::EventSink for KeylessCounter {
        fn record(&self, _event: LockEvent) {}

        fn reads_renewal_keys(&self) -> bool {
            false
        }

        fn record_renewals(&self, count: u64, _renewed: Renewed) {
            self.calls.lock().expect("not poisoned").push(count);
        }
    }

    /// One renewal of the session moves the deadline of every lock under it; a lock released alone
    /// keeps the deadline it had and gets no `Renewed`, and a lock inserted later starts at the session's. A
    /// sink that reads no keys gets the renewals of every lasting lock in one call.
    #[test]
    fn a_session_renewal_moves_every_lock_under_it_but_one_released_alone() {
        let sent = Instant::now();
        let holds = SessionHolds::<()>::new("session", sent + Duration::from_secs(3));
        let log = EventLog::new();
        let events = Events::to(log.clone());
        let owner: Arc<str> = "owner".into();
        let keys: Vec<Arc<str>> = (0..100).map(|i| format!("k{i}").into()).collect();
        let held: Vec<_> = keys
            .iter()
            .map(|key| holds.insert(key, &owner, &events, (), || {}))
            .collect::<Result<_, _>>()
            .expect("the session is live");
        assert!(holds.leave(&keys[0], &owner, &held[0]));
        let renewal = SessionRenewed {
            scheduled_at: sent,
            sent_at: sent + Duration::from_secs(1),
            done_at: sent + Duration::from_secs(1),
            granted: Duration::from_secs(3),
        };
        holds.renewed(renewal, &events);
        let until = sent + Duration::from_secs(4);
        assert_eq!(holds.session().deadline(), until);
        assert!(held[1..].iter().all(|h| h.state.deadline() == until));
        assert_eq!(held[0].state.deadline(), sent + Duration::from_secs(3));
        assert_eq!(held[0].state.end(), Some(LeaseEnd::Released));
        let renewed = log.count(|e| e.renewal().is_some());
        assert_eq!(renewed, 99);
        assert!(log.snapshot().iter().all(|e| e.key() != "k0"));
        let late = holds.insert(&"late".into(), &owner, &events, (), || {});
        assert_eq!(late.expect("live").state.deadline(), until);
        // A sink that reads no keys takes the next renewal of the 100 lasting locks in one call.
        let counter = Arc::new(KeylessCounter::default());
        holds.renewed(renewal, &Events::to(counter.clone()));
        assert_eq!(*counter.calls.lock().expect("not poisoned"), vec![100]);
        // The session's loss still loses every lock that lasted, and only those.
        holds.lose(LossReason::SessionExpired);
        assert!(held[1..].iter().all(|h| h.state.loss().is_some()));
        assert_eq!(held[0].state.end(), Some(LeaseEnd::Released));
    }
}
