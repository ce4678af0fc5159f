//! `LockEvent`s: what a strategy reports about acquisitions, renewals and losses, and the optional sink
//! they go to. The driver builds every renewal metric from these events, so all strategies are measured
//! the same way. Renewals reach a sink through [`EventSink::record_renewed`], which a sink that never
//! reads their keys takes as [`Renewed`]; by default it records them as [`LockEvent::Renewed`]. A sink
//! that says it never reads renewals' keys takes the renewals of every lock one session renewal extended
//! in one call ([`EventSink::record_renewals`]).

use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::types::{FencingToken, LeaseMode, LossReason};

/// One thing a strategy did or noticed. Timestamps are monotonic [`Instant`]s.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum LockEvent {
    /// A lease was granted.
    Acquired {
        /// The lock key.
        key: Arc<str>,
        /// The lease's fencing token.
        token: FencingToken,
        /// The lease mode asked for.
        mode: LeaseMode,
        /// When the acquire request that succeeded was sent.
        sent_at: Instant,
        /// When the grant came back.
        at: Instant,
    },
    /// A renewal was planned for `due`.
    RenewScheduled {
        /// The lock key.
        key: Arc<str>,
        /// When it was planned.
        at: Instant,
        /// When the renewal is due to be sent.
        due: Instant,
    },
    /// A renewal reached the server and extended the lease.
    Renewed {
        /// The lock key.
        key: Arc<str>,
        /// When the renewal was due.
        scheduled_at: Instant,
        /// When it was sent (lag = `sent_at - scheduled_at`).
        sent_at: Instant,
        /// When the answer came back (round trip = `done_at - sent_at`).
        done_at: Instant,
        /// The TTL the server still had before this renewal: the safety margin. `None` when the
        /// strategy cannot know it.
        remaining_ttl_before: Option<Duration>,
        /// The TTL the lease now has, as granted by the server.
        granted_ttl: Duration,
        /// For event-driven renewal: how late the triggering event arrived after its nominal time.
        trigger_lag: Option<Duration>,
    },
    /// A renewal attempt failed (network, server); the strategy keeps trying until the local deadline.
    RenewFailed {
        /// The lock key.
        key: Arc<str>,
        /// When the failure was seen.
        at: Instant,
        /// The error, as text.
        error: String,
    },
    /// The strategy learned that the lease is gone.
    Lost {
        /// The lock key.
        key: Arc<str>,
        /// When the loss was detected.
        detected_at: Instant,
        /// Why.
        reason: LossReason,
    },
    /// The holder released the lock (the last re-entrant hold, for re-entrant strategies).
    Released {
        /// The lock key.
        key: Arc<str>,
        /// When the release completed.
        at: Instant,
    },
}

/// A renewal that extended a lease: [`LockEvent::Renewed`] without its key, as
/// [`EventSink::record_renewed`] takes it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Renewed {
    /// When it was due.
    pub scheduled_at: Instant,
    /// When it was sent.
    pub sent_at: Instant,
    /// When the answer came back.
    pub done_at: Instant,
    /// The TTL the server still had before it, when known.
    pub remaining_ttl_before: Option<Duration>,
    /// The TTL the lease now has.
    pub granted_ttl: Duration,
    /// For event-driven renewal: how late the triggering event arrived.
    pub trigger_lag: Option<Duration>,
}

impl Renewed {
    /// The [`LockEvent::Renewed`] of `key`.
    pub fn into_event(self, key: Arc<str>) -> LockEvent {
        let Renewed {
            scheduled_at,
            sent_at,
            done_at,
            remaining_ttl_before,
            granted_ttl,
            trigger_lag,
        } = self;
        LockEvent::Renewed {
            key,
            scheduled_at,
            sent_at,
            done_at,
            remaining_ttl_before,
            granted_ttl,
            trigger_lag,
        }
    }
}

impl LockEvent {
    /// The renewal this event reports, if it is a [`LockEvent::Renewed`].
    pub fn renewal(&self) -> Option<Renewed> {
        match *self {
            LockEvent::Renewed {
                scheduled_at,
                sent_at,
                done_at,
                remaining_ttl_before,
                granted_ttl,
                trigger_lag,
                ..
            } => Some(Renewed {
                scheduled_at,
                sent_at,
                done_at,
                remaining_ttl_before,
                granted_ttl,
                trigger_lag,
            }),
            _ => None,
        }
    }

    /// The lock key the event is about.
    pub fn key(&self) -> &str {
        match self {
            LockEvent::Acquired { key, .. }
            | LockEvent::RenewScheduled { key, .. }
            | LockEvent::Renewed { key, .. }
            | LockEvent::RenewFailed { key, .. }
            | LockEvent::Lost { key, .. }
            | LockEvent::Released { key, .. } => key,
        }
    }
}

/// Where events go. Implementations must be cheap and must not block: they are called on renewal paths.
pub trait EventSink: Send + Sync + fmt::Debug {
    /// Takes one event.
    fn record(&self, event: LockEvent);

    /// Whether this sink wants [`LockEvent::RenewScheduled`], one per planned renewal of every held
    /// lock. A sink that ignores them says so, and strategies then never build them (asked once, when
    /// [`Events::to`] wraps the sink).
    fn wants_renewal_plans(&self) -> bool {
        true
    }

    /// Takes one renewal of `key`: every strategy reports renewals here. The default records
    /// [`LockEvent::Renewed`]; a sink that never reads a renewal's key takes the renewal as it is, so
    /// renewing many locks never touches their keys.
    fn record_renewed(&self, key: &Arc<str>, renewed: Renewed) {
        self.record(renewed.into_event(key.clone()));
    }

    /// Whether this sink reads the keys of renewals. One that does not takes the renewals of the locks a
    /// client's session carries (an etcd lease, a ZooKeeper session) in one call to
    /// [`EventSink::record_renewals`] per session renewal, so renewing a session costs the same however
    /// many locks it carries. Asked once, when [`Events::to`] wraps the sink.
    fn reads_renewal_keys(&self) -> bool {
        true
    }

    /// Takes `count` renewals alike but for their keys: every lock one session renewal extended.
    /// Called instead of `count` calls to [`EventSink::record_renewed`] only for a sink that does not
    /// read renewal keys; by default it makes those calls, with an empty key.
    fn record_renewals(&self, count: u64, renewed: Renewed) {
        let key: Arc<str> = Arc::from("");
        for _ in 0..count {
            self.record_renewed(&key, renewed);
        }
    }
}

impl EventSink for tokio::sync::mpsc::UnboundedSender<LockEvent> {
    fn record(&self, event: LockEvent) {
        // A closed receiver means nobody is listening any more; dropping the event is correct.
        let _ = self.send(event);
    }
}

/// A sink that keeps every event in memory, for tests and short runs.
#[derive(Debug, Default)]
pub struct EventLog {
    events: Mutex<Vec<LockEvent>>,
}

impl EventLog {
    /// A new, empty log behind an `Arc`, ready to hand to a strategy via [`Events::to`].
    pub fn new() -> Arc<Self> {
        Arc::default()
    }

    /// A copy of every event so far.
    pub fn snapshot(&self) -> Vec<LockEvent> {
        self.events
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// How many recorded events satisfy `pred`.
    pub fn count(&self, pred: impl Fn(&LockEvent) -> bool) -> usize {
        let events = self.events.lock().unwrap_or_else(|e| e.into_inner());
        events.iter().filter(|e| pred(e)).count()
    }
}

impl EventSink for EventLog {
    fn record(&self, event: LockEvent) {
        self.events
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(event);
    }
}

/// An optional event sink, as strategies hold it. With no sink, emitting is a branch and nothing
/// else: the event is never built; nor is a renewal plan for a sink that does not want plans.
#[derive(Clone, Default)]
pub struct Events {
    sink: Option<Arc<dyn EventSink>>,
    /// The sink's [`EventSink::wants_renewal_plans`].
    plans: bool,
    /// The sink's [`EventSink::reads_renewal_keys`].
    #[cfg_attr(not(any(feature = "etcd", feature = "zookeeper")), allow(dead_code))]
    renewal_keys: bool,
}

impl Events {
    /// No sink: events cost nothing.
    pub fn none() -> Self {
        Events::default()
    }

    /// Events go to `sink`.
    pub fn to(sink: Arc<dyn EventSink>) -> Self {
        let plans = sink.wants_renewal_plans();
        let renewal_keys = sink.reads_renewal_keys();
        Events {
            sink: Some(sink),
            plans,
            renewal_keys,
        }
    }

    /// Whether a sink is set.
    #[inline]
    pub(crate) fn enabled(&self) -> bool {
        self.sink.is_some()
    }

    /// Builds the event with `make` and records it, only if a sink is set.
    #[inline]
    pub(crate) fn emit(&self, make: impl FnOnce() -> LockEvent) {
        if let Some(sink) = &self.sink {
            sink.record(make());
        }
    }

    /// Builds the renewal of `key` with `make` and records it ([`EventSink::record_renewed`]), only if
    /// a sink is set.
    #[inline]
    pub(crate) fn renewed(&self, key: &Arc<str>, make: impl FnOnce() -> Renewed) {
        if let Some(sink) = &self.sink {
            sink.record_renewed(key, make());
        }
    }

    /// Whether a sink is set and reads renewals' keys (else a session's renewals go to
    /// [`Events::renewals`] at once).
    #[cfg(any(feature = "etcd", feature = "zookeeper"))]
    #[inline]
    pub(crate) fn renewal_keys_wanted(&self) -> bool {
        self.renewal_keys
    }

    /// Records `count` renewals alike but for their keys ([`EventSink::record_renewals`]), if a sink is
    /// set.
    #[cfg(any(feature = "etcd", feature = "zookeeper"))]
    #[inline]
    pub(crate) fn renewals(&self, count: u64, renewed: Renewed) {
        if let Some(sink) = &self.sink {
            sink.record_renewals(count, renewed);
        }
    }

    /// Whether a sink is set and wants renewal plans.
    #[inline]
    pub(crate) fn plans_wanted(&self) -> bool {
        self.plans
    }

    /// Builds a [`LockEvent::RenewScheduled`] with `make` and records it, only if a sink is set and
    /// wants renewal plans.
    #[inline]
    pub(crate) fn emit_plan(&self, make: impl FnOnce() -> LockEvent) {
        if self.plans {
            self.emit(make);
        }
    }
}

impl fmt::Debug for Events {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(if self.enabled() {
            "Events(sink)"
        } else {
            "Events(none)"
        })
    }
}
