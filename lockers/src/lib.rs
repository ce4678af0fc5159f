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
//! | `redisson-classic` / `redisson` | [`redis::redisson`] | Redisson's RLock as it is: per-lock timers (< 3.44) or one batching scheduler (≥ 3.44); `WAIT` with replicas | none (Redisson has no token) |
//! | `redis-guard-thread` | [`redis::guard_thread`] | `SET NX PX` + one OS thread per held lock | `INCR` on a companion key |
//! | `valkey-ifeq` | [`redis::ifeq`] | no scripts: `SET NX PX`, renewal by `SET … IFEQ` every timeout/3, release by `DELIFEQ` (Valkey ≥ 9.0) | `INCR` in the acquire's `MULTI`/`EXEC` |
//! | `redis-keyspace-naive` / `-shadow` | [`redis::keyspace`] | renewal driven by keyspace `expired` events | `INCR` on a companion key |
//! | `redlock` | [`redis::redlock`] | `SET NX PX` on a majority of N independent masters, validity = TTL − elapsed − drift, extended on a majority | none (`fencing: false`; token 0 is a placeholder) |
//! | `etcd-lease` | [`etcd`] | lease + keep-alive stream, revision-ordered queue | the key's create revision |
//! | `zookeeper` | [`zookeeper`] | ephemeral-sequential node, the session is the lease | the node's czxid |
//! | `postgres-advisory` | [`postgres::advisory`] | session-level advisory lock on a connection kept for the hold (checked every TTL/3) | per-key counter bumped in the same statement |
//! | `postgres-lease` | [`postgres::lease`] | lease row on the server's clock, renewed every TTL/3 | the row's token, bumped on every grant |
//! | `mysql-get-lock` | [`mysql::get_lock`] | `GET_LOCK` held by the session on a connection kept for the hold (checked every TTL/3) | per-key counter bumped in the same statement |
//! | `mysql-lease` | [`mysql::lease`] | lease row on the server's clock, renewed every TTL/3 | the row's token, bumped on every grant |
//! | `py-redis-lock`, `node-redlock`, `jvm-curator`, ... | [`peer`] | a peer library in an adapter process (`adapters/PROTOCOL.md`) | the library's, if it has one |
//!
//! The behaviour every strategy must show is the `conformance` suite (feature `conformance`).
//!
//! Callers see the contract only: [`Locker`], [`Lease`], [`AcquireOptions`], [`LeaseMode`], [`OwnerId`],
//! [`FencingToken`], [`LockError`], [`LockEvent`] (with its [`LossReason`] and, for sinks that take
//! renewals without keys, [`Renewed`]), [`Capabilities`], the event sink types ([`Events`],
//! [`EventSink`], [`EventLog`]) and each strategy's constructor and settings.
//! What strategies build leases from (the lease state with its deadline, the release handle, the renewal
//! registries) is crate-private: no caller can move a deadline or forge a lease.
#![warn(missing_docs)]
// Functions of at most 100 lines (clippy.toml) in this crate's code; its inline tests are exempt.
#![cfg_attr(not(test), warn(clippy::too_many_lines))]

// The caller API: the contract, its value types, errors and events (re-exported below).
pub mod address;
mod error;
mod event;
pub mod kind;
mod lease;
mod locker;
mod settings;
mod types;

// The implementor kit: lease cells, renewal registries and loops every strategy builds leases with.
#[cfg(any(feature = "redis", feature = "postgres", feature = "mysql"))]
mod batch_renewal;
mod lease_cells;
#[cfg(any(feature = "redis", feature = "postgres", feature = "mysql"))]
mod phase_table;
mod renewal;

// The strategies, each with its public constructor and settings.
#[cfg(feature = "etcd")]
pub mod etcd;
pub mod memory;
#[cfg(feature = "mysql")]
pub mod mysql;
#[cfg(feature = "peers")]
pub mod peer;
#[cfg(feature = "postgres")]
pub mod postgres;
#[cfg(feature = "redis")]
pub mod redis;
#[cfg(any(feature = "postgres", feature = "mysql"))]
pub mod sql_config;
#[cfg(any(feature = "postgres", feature = "mysql"))]
pub mod sql_lease;
#[cfg(any(feature = "postgres", feature = "mysql"))]
pub mod sql_session_lock;
#[cfg(feature = "zookeeper")]
pub mod zookeeper;

#[cfg(feature = "conformance")]
pub mod conformance;

pub use error::{BoxError, LockError};
pub use event::{EventLog, EventSink, Events, LockEvent, Renewed};
pub use kind::ServerKind;
pub use lease::Lease;
pub use locker::{Capabilities, LibraryThreadsHeld, Locker, PeerProcess};
pub use settings::Renewal;
pub use types::{AcquireOptions, FencingToken, LeaseMode, LossReason, OwnerId};
