//! `lockers`: the [`Locker`] contract and every distributed lock strategy lockbench compares.
//!
//! A strategy is one client of one backend. [`Locker::acquire`] returns a [`Lease`], the proof of holding:
//! it carries a fencing token, knows its conservative local deadline, resolves [`Lease::lost`] when the
//! strategy learns the lease is gone, and is released explicitly or, when dropped, in the background.
//! Strategies report what they do as [`LockEvent`]s to an optional sink; the driver measures renewal health
//! from those events alone, so every strategy is measured the same way.
//!
//! | id | module | lease | fencing token |
//! |---|---|---|---|
//! | `memory` | [`memory`] | in-process TTL + timer renewal | per-key counter |
//! | `redis-watchdog` (`-batched`) | [`redis::watchdog`] | Redisson's RLock: hash lock, renewal every timeout/3 (per lock or batched) | `INCR` on a companion key |
//! | `redis-guard-thread` | [`redis::guard_thread`] | `SET NX PX` + one OS thread per held lock | `INCR` on a companion key |
//! | `redis-keyspace-naive` / `-shadow` | [`redis::keyspace`] | renewal driven by keyspace `expired` events | `INCR` on a companion key |
//! | `etcd-lease` | [`etcd`] | lease + keep-alive stream, revision-ordered queue | the key's create revision |
//! | `zookeeper` | [`zookeeper`] | ephemeral-sequential node, the session is the lease | the node's czxid |
//!
//! The behaviour every strategy must show is the `conformance` suite (feature `conformance`).
#![warn(missing_docs)]

pub mod error;
pub mod event;
pub mod lease;
pub mod locker;
pub mod memory;
mod renewal;
#[cfg(feature = "redis")]
mod timer_wheel;

#[cfg(feature = "etcd")]
pub mod etcd;
#[cfg(feature = "redis")]
pub mod redis;
#[cfg(feature = "zookeeper")]
pub mod zookeeper;

#[cfg(feature = "conformance")]
pub mod conformance;

pub use error::{BoxError, LockError};
pub use event::{EventLog, EventSink, Events, LockEvent};
pub use lease::{
    AcquireOptions, FencingToken, Lease, LeaseHandle, LeaseMode, LeaseState, LossReason, OwnerId,
};
pub use locker::{Capabilities, Locker};
