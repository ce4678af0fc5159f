//! `memory`: the whole Locker contract in one process, with TTL expiry, watchdog renewal on a timer, fixed
//! leases, fencing tokens, re-entrancy and waiters woken on release. It is the reference the conformance
//! suite is first proven on and the driver's zero-cost baseline; it is never a stand-in for a server in a
//! comparison.
//!
//! A [`MemoryServer`] plays the server; each [`MemoryLocker`] is one client of it, with its own renewals.

use std::collections::HashMap;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use tokio::sync::Notify;

use crate::error::LockError;
use crate::event::{Events, LockEvent};
use crate::lease::{
    AcquireOptions, FencingToken, Lease, LeaseHandle, LeaseMode, LeaseState, OwnerId,
};
use crate::locker::{Capabilities, Locker};
use crate::renewal::{HoldTicket, Holds, RenewOutcome, RenewalPlan, StopRenewal, renew_until_lost};
use crate::settings::Renewal;

/// The strategy id.
pub const ID: &str = "memory";

#[derive(Debug)]
struct Holder {
    owner: Arc<str>,
    count: u32,
    expires_at: Instant,
    token: u64,
}

#[derive(Debug, Default)]
struct Slot {
    holder: Option<Holder>,
    last_token: u64,
    wake: Arc<Notify>,
}

impl Slot {
    /// The holder, unless its TTL has run out.
    fn live_holder(&mut self, now: Instant) -> Option<&mut Holder> {
        if self.holder.as_ref().is_some_and(|h| h.expires_at <= now) {
            self.holder = None;
        }
        self.holder.as_mut()
    }
}

type Wakeup = Pin<Box<tokio::sync::futures::OwnedNotified>>;

/// Why an acquire did not get the lock: when the holder's TTL runs out, and a wake-up armed before the
/// check so a release in between is not missed.
struct Busy {
    expires_at: Instant,
    wakeup: Wakeup,
}

/// The in-process "server": lock slots with holders, TTLs and per-key token counters. Share one between
/// several [`MemoryLocker`]s to model several clients.
#[derive(Debug, Default)]
pub struct MemoryServer {
    slots: Mutex<HashMap<Arc<str>, Slot>>,
}

impl MemoryServer {
    /// A new, empty server.
    pub fn new() -> Arc<Self> {
        Arc::default()
    }

    fn slots(&self) -> std::sync::MutexGuard<'_, HashMap<Arc<str>, Slot>> {
        self.slots.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Takes the lock (or re-enters it) and sets its TTL; returns the token.
    fn try_acquire(&self, key: &Arc<str>, owner: &Arc<str>, ttl: Duration) -> Result<u64, Busy> {
        let now = Instant::now();
        let mut slots = self.slots();
        let slot = slots.entry(key.clone()).or_default();
        match slot.live_holder(now) {
            Some(h) if h.owner == *owner => {
                h.count += 1;
                h.expires_at = now + ttl;
                Ok(h.token)
            }
            Some(h) => {
                let expires_at = h.expires_at;
                let mut wakeup = Box::pin(slot.wake.clone().notified_owned());
                wakeup.as_mut().enable();
                Err(Busy { expires_at, wakeup })
            }
            None => {
                slot.last_token += 1;
                slot.holder = Some(Holder {
                    owner: owner.clone(),
                    count: 1,
                    expires_at: now + ttl,
                    token: slot.last_token,
                });
                Ok(slot.last_token)
            }
        }
    }

    /// Resets the TTL if `owner` still holds `key`; returns the TTL that was left.
    fn renew(&self, key: &Arc<str>, owner: &Arc<str>, ttl: Duration) -> RenewOutcome {
        let now = Instant::now();
        let mut slots = self.slots();
        match slots.get_mut(key).and_then(|s| s.live_holder(now)) {
            Some(h) if h.owner == *owner => {
                let remaining = h.expires_at.saturating_duration_since(now);
                h.expires_at = now + ttl;
                RenewOutcome::Extended {
                    remaining_before: Some(remaining),
                }
            }
            _ => RenewOutcome::Gone,
        }
    }

    /// Drops one hold of `owner` granted with `token`; returns whether the lock became free. `NotHeld` if
    /// `owner` isn't the holder, or holds a newer hold (another token: the lease was lost and taken again).
    fn release(&self, key: &Arc<str>, owner: &Arc<str>, token: u64) -> Result<bool, LockError> {
        let now = Instant::now();
        let mut slots = self.slots();
        let slot = slots.get_mut(key);
        let Some(slot) = slot else {
            return Err(LockError::NotHeld {
                key: key.to_string(),
            });
        };
        match slot.live_holder(now) {
            Some(h) if h.owner == *owner && h.token == token => {
                h.count -= 1;
                if h.count > 0 {
                    return Ok(false);
                }
                slot.holder = None;
                slot.wake.notify_waiters();
                Ok(true)
            }
            _ => Err(LockError::NotHeld {
                key: key.to_string(),
            }),
        }
    }

    /// Deletes the lock behind its holder's back (as a `DEL` would on Redis); returns whether it was held.
    pub fn remove(&self, key: &str) -> bool {
        let now = Instant::now();
        let mut slots = self.slots();
        let Some(slot) = slots.get_mut(key) else {
            return false;
        };
        let held = slot.live_holder(now).is_some();
        slot.holder = None;
        slot.wake.notify_waiters();
        held
    }

    /// Whether `key` is held right now.
    pub fn is_locked(&self, key: &str) -> bool {
        let now = Instant::now();
        self.slots()
            .get_mut(key)
            .is_some_and(|s| s.live_holder(now).is_some())
    }
}

/// Settings of a [`MemoryLocker`].
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct MemoryConfig {
    /// The TTL of a watchdog lease and how often it is renewed (default 30 s, every third).
    pub renewal: Renewal,
}

impl MemoryConfig {
    /// Checks the settings; a `Config` error names the bad one.
    pub fn validate(&self) -> Result<(), LockError> {
        self.renewal.validate()
    }
}

/// One client of a [`MemoryServer`].
#[derive(Debug)]
pub struct MemoryLocker {
    server: Arc<MemoryServer>,
    client_id: String,
    config: MemoryConfig,
    events: Events,
    holds: Arc<Holds>,
}

impl MemoryLocker {
    /// A client of `server` with `config`, reporting to `events`.
    pub fn new(
        server: Arc<MemoryServer>,
        config: MemoryConfig,
        events: Events,
    ) -> Result<Self, LockError> {
        config.validate()?;
        Ok(MemoryLocker {
            server,
            client_id: format!("{:08x}", rand::random::<u32>()),
            config,
            events,
            holds: Arc::default(),
        })
    }

    /// The server this client talks to.
    pub fn server(&self) -> &Arc<MemoryServer> {
        &self.server
    }

    fn start_renewal(
        &self,
        key: Arc<str>,
        owner: Arc<str>,
        sent_at: Instant,
    ) -> impl Fn(Arc<LeaseState>) -> Box<dyn StopRenewal> + '_ {
        move |state| {
            let server = self.server.clone();
            let (key, owner) = (key.clone(), owner.clone());
            let ttl = self.config.renewal.ttl;
            let plan = RenewalPlan::from(self.config.renewal);
            let task = tokio::spawn(renew_until_lost(
                state,
                plan,
                sent_at,
                self.events.clone(),
                move || {
                    let outcome = server.renew(&key, &owner, ttl);
                    async move { Ok(outcome) }
                },
            ));
            Box::new(task.abort_handle())
        }
    }
}

#[async_trait]
impl Locker for MemoryLocker {
    fn id(&self) -> &str {
        ID
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            reentrant: true,
            fencing: true,
            auto_renew: true,
            fixed_lease: true,
            wait_notify: true,
            lost_signal: true,
            hold_identity: true,
            min_ttl: Duration::from_millis(1),
            ttl_granularity: Duration::from_nanos(1),
        }
    }

    async fn acquire(&self, key: &str, opts: &AcquireOptions) -> Result<Lease, LockError> {
        let ttl = match opts.lease {
            LeaseMode::Watchdog => self.config.renewal.ttl,
            LeaseMode::Fixed(d) if d.is_zero() => {
                return Err(LockError::Config("fixed lease must be > 0".into()));
            }
            LeaseMode::Fixed(d) => d,
        };
        let owner_id = opts.owner.clone().unwrap_or_else(OwnerId::unique);
        let owner: Arc<str> = format!("{}:{}", self.client_id, owner_id).into();
        let key: Arc<str> = key.into();
        let started = Instant::now();
        let give_up = opts.wait.map(|w| started + w);
        loop {
            let sent_at = Instant::now();
            match self.server.try_acquire(&key, &owner, ttl) {
                Ok(token) => {
                    let renew = self.start_renewal(key.clone(), owner.clone(), sent_at);
                    let start: Option<&dyn Fn(_) -> _> = match opts.lease {
                        LeaseMode::Watchdog => Some(&renew),
                        LeaseMode::Fixed(_) => None,
                    };
                    let token = FencingToken(token);
                    // Before the renewal starts, so `Acquired` comes before every renewal event.
                    self.events.emit(|| LockEvent::Acquired {
                        key: key.clone(),
                        token,
                        mode: opts.lease,
                        sent_at,
                        at: Instant::now(),
                    });
                    let (state, ticket) =
                        self.holds
                            .enter(&key, &owner, sent_at + ttl, &self.events, start);
                    let handle = MemoryHold {
                        server: self.server.clone(),
                        holds: self.holds.clone(),
                        ticket,
                        token,
                        events: self.events.clone(),
                    };
                    return Ok(Lease::new(
                        owner_id,
                        token,
                        opts.lease,
                        sent_at,
                        state,
                        Box::new(handle),
                    ));
                }
                Err(busy) => {
                    let Some(give_up) = give_up.filter(|g| Instant::now() < *g) else {
                        return Err(LockError::Timeout {
                            key: key.to_string(),
                            waited: started.elapsed(),
                        });
                    };
                    let retry_at = busy.expires_at.min(give_up);
                    tokio::select! {
                        _ = busy.wakeup => {}
                        _ = tokio::time::sleep_until(retry_at.into()) => {}
                    }
                }
            }
        }
    }
}

/// A memory lease's release path. Everything is synchronous, so abandon releases on the spot.
#[derive(Debug)]
struct MemoryHold {
    server: Arc<MemoryServer>,
    holds: Arc<Holds>,
    ticket: HoldTicket,
    token: FencingToken,
    events: Events,
}

impl MemoryHold {
    fn finish(&self) -> Result<(), LockError> {
        self.holds.leave(&self.ticket);
        let (key, owner) = (&self.ticket.key, &self.ticket.owner);
        let freed = self.server.release(key, owner, self.token.0)?;
        if freed {
            self.events.emit(|| LockEvent::Released {
                key: self.ticket.key.clone(),
                at: Instant::now(),
            });
        }
        Ok(())
    }
}

#[async_trait]
impl LeaseHandle for MemoryHold {
    async fn release(self: Box<Self>) -> Result<(), LockError> {
        self.finish()
    }

    fn abandon(self: Box<Self>) {
        // NotHeld here only means the lease had already gone; nobody is left to tell.
        let _ = self.finish();
    }
}
