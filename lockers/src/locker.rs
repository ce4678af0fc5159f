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

/// What [`PeerProcess::starve_library`] held: `held` of the `threads` the library renews on, in its adapter
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

/// What a peer adapter (a real library run in a process of its own, adapters/PROTOCOL.md) adds to the
/// contract, reached through [`Locker::peer`]: what the bench needs to measure and fault it, nothing a
/// caller that only locks uses.
#[async_trait]
pub trait PeerProcess: Send + Sync {
    /// The round trip of the transport the library itself does not have, measured when the client
    /// connected: the JSON-lines exchange with the adapter process. Each acquire and each release pays
    /// about one, so peer figures carry about twice this per cycle.
    fn protocol_round_trip(&self) -> Duration;

    /// The library this client runs and the version its process loaded (`("Redisson RLock",
    /// "3.52.0")`).
    fn loaded_library(&self) -> (String, String);

    /// The process the library runs in (its pid), when known: clients sharing one adapter process
    /// report the same, so a case can state how its clients were mapped to processes.
    fn adapter_process(&self) -> Option<u32>;

    /// Blocks, for `hold`, every thread the library renews on (the adapter's `starve`,
    /// adapters/PROTOCOL.md), the CPU starvation of a library whose threads the caller's own runtime
    /// does not reach; returns once they are held, with how many were, or
    /// [`LockError::Unsupported`] when the adapter does not declare `starve`.
    async fn starve_library(&self, hold: Duration) -> Result<LibraryThreadsHeld, LockError>;
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

    /// What only a peer adapter has (its process, its protocol, the library it loaded), for the
    /// driver that measures it; `None` (the default) for lockbench's own strategies. Callers that only
    /// lock never need it.
    fn peer(&self) -> Option<&dyn PeerProcess> {
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
