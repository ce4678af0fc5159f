//! The `Locker` contract every strategy implements, and the `Capabilities` it declares.

use std::fmt::Debug;
use std::time::Duration;

use async_trait::async_trait;

use crate::error::LockError;
use crate::lease::{AcquireOptions, Lease};

/// What a strategy can do: tested claims. The conformance suite tests each declared "yes"
/// (`reentrant_acquire_and_release`, `tokens_strictly_increase`, `watchdog_lease_outlives_timeout`,
/// `fixed_lease_expires`, `lost_when_removed_behind_back`, `stale_release_keeps_newer_hold_of_same_owner`) and each declared "no" that has a behaviour
/// (`non_reentrant_same_owner_times_out`; `stale_release_keeps_newer_hold_of_same_owner` for
/// `hold_identity`; `undeclared_lease_mode_is_unsupported` for `fixed_lease` and
/// `auto_renew`); reports name what a strategy lacks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Capabilities {
    /// The same owner may acquire again while holding; each acquire needs its own release.
    pub reentrant: bool,
    /// Leases carry fencing tokens that strictly increase per key.
    pub fencing: bool,
    /// [`crate::LeaseMode::Watchdog`] is supported: leases are renewed until released.
    pub auto_renew: bool,
    /// [`crate::LeaseMode::Fixed`] is supported: leases that expire and are never renewed.
    pub fixed_lease: bool,
    /// Waiters are woken by the server (pub/sub, watch, notification) rather than by polling alone.
    pub wait_notify: bool,
    /// [`crate::Lease::lost`] resolves as soon as the strategy learns of a loss (not only at the deadline).
    pub lost_signal: bool,
    /// A release names the hold it ends, not only its owner: releasing a stale lease never frees a newer
    /// hold of the same owner on the same client (`stale_release_keeps_newer_hold_of_same_owner`).
    /// Redisson identifies a hold by client and thread id alone, so its rows declare "no", and the same
    /// case then checks that the newer hold is indeed freed.
    pub hold_identity: bool,
    /// The smallest TTL the strategy can honour.
    pub min_ttl: Duration,
    /// TTLs are rounded up to a multiple of this.
    pub ttl_granularity: Duration,
}

/// What [`Locker::starve_library`] held: `held` of the `threads` the library renews on, in its adapter
/// process `pid`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LibraryThreadsHeld {
    /// The adapter process.
    pub pid: u32,
    /// The threads held when the adapter answered.
    pub held: u32,
    /// The threads the library renews on.
    pub threads: u32,
}

/// A distributed lock strategy: one client of one backend. Object-safe, so drivers hold
/// `Arc<dyn Locker>` and know strategies only through this trait.
///
/// Cancellation safety: dropping the future returned by [`Locker::acquire`] at any await point leaves no
/// renewal running; a lock it may have taken is released or expires by its TTL.
#[async_trait]
pub trait Locker: Send + Sync + Debug {
    /// The strategy id: `memory`, `redis-watchdog`, `etcd-lease`, ...
    fn id(&self) -> &str;

    /// What the strategy can do.
    fn capabilities(&self) -> Capabilities;

    /// Acquires `key`, waiting up to `opts.wait` (or trying once). A lock held by someone else for the whole
    /// wait gives [`LockError::Timeout`].
    async fn acquire(&self, key: &str, opts: &AcquireOptions) -> Result<Lease, LockError>;

    /// Ends the client's background work and connections. Leases still held are left to expire. The
    /// default does nothing.
    async fn close(&self) {}

    /// The round trip of a transport the strategy's own library does not have, measured when it
    /// connected: a peer adapter's JSON-lines exchange with its child process. Each acquire and each
    /// release pays about one, so peer figures carry about twice this per cycle. `None` (the default)
    /// for lockbench's own strategies.
    fn protocol_round_trip(&self) -> Option<std::time::Duration> {
        None
    }

    /// The library this client runs and the version its process loaded (`("Redisson RLock",
    /// "3.52.0")`), for a peer adapter; `None` (the default) for lockbench's own strategies.
    fn loaded_library(&self) -> Option<(String, String)> {
        None
    }

    /// The process the library of a peer adapter runs in (its pid): clients sharing one adapter process
    /// report the same, so a case can state how its clients were mapped to processes. `None` (the
    /// default) for lockbench's own strategies.
    fn adapter_process(&self) -> Option<u32> {
        None
    }

    /// Blocks, for `hold`, every thread the library of a peer adapter renews on (the adapter's `starve`,
    /// adapters/PROTOCOL.md), the CPU starvation of a library whose threads the caller's own runtime
    /// does not reach; returns once they are held, with how many were. `None` (the default) for a
    /// strategy without threads of its own outside the caller's runtime (lockbench's own strategies);
    /// an [`LockError::Unsupported`] for a peer whose adapter does not declare `starve`.
    async fn starve_library(
        &self,
        _hold: Duration,
    ) -> Option<Result<LibraryThreadsHeld, LockError>> {
        None
    }

    /// The requests this client has sent to its servers so far, counted by the client itself:
    /// connecting (handshakes, script loads), reconnects' handshakes, subscriptions and closing
    /// included, a script call counting once and each command of a pipeline once; on several servers
    /// (Redlock's nodes, a cluster's masters) their sum. It only grows: the difference across a run is
    /// the requests that run cost, what the servers saw from this client. `None` (the default) when the
    /// strategy does not count its requests: the Redis strategies count, and the PostgreSQL ones (each
    /// statement executed, as `pg_stat_statements` counts it); etcd, ZooKeeper, the peers and `memory`
    /// do not.
    fn requests_sent(&self) -> Option<u64> {
        None
    }
}
