//! Talking to Redis, whatever the strategy: the client an address describes, the counted,
//! self-reconnecting command connection (direct, behind Sentinel, or to a cluster), pub/sub with its
//! keyevent routing, and Redisson's replica sync after writes. Nothing here knows a lock.
//!
//! | module | what it holds | used by |
//! |---|---|---|
//! | `client` | the `redis::Client` an address describes (ACL user, TLS); timeouts; `RedisError` → `LockError::Backend`; the request counter | every connection |
//! | `counted` | one server's self-reconnecting connection manager, counting the requests the server sees, each reconnect's handshake included | `connection`, `sentinel`, `cluster` |
//! | [`connection`] | the multiplexed, reconnecting command connection, direct, behind Sentinel or to a cluster | every Redis strategy |
//! | `cluster` | `redis+cluster://` (`rediss+cluster://` over TLS) addresses: hash slots, the slot → master layout, `MOVED`/`ASK`, batches split by slot | `connection`, batch renewals |
//! | `sentinel` | `redis+sentinel://` (`rediss+sentinel://` over TLS) addresses: the primary asked of the Sentinels, asked again after a failover-like error | `connection` |
//! | `pubsub` | one pub/sub connection per client: waiters woken one per message (unlock channels), listeners handed every message with its arrival time and told of breaks and resubscriptions | `redis-watchdog` and Redisson waiters; `keyevents` |
//! | `keyevents` | `notify-keyspace-events` set-up; keyevent `expired`/`del` messages routed by key to holders and waiters | `redis-keyspace` |
//! | `replica_sync` | Redisson's `WAIT` after lock writes when the [`Topology`](replica_sync::Topology) has replicas | `redisson-classic`, `redisson` |

pub(crate) mod client;
pub(crate) mod cluster;
pub mod connection;
pub(crate) mod counted;
pub(crate) mod keyevents;
pub(crate) mod pubsub;
pub(crate) mod replica_sync;
pub(crate) mod sentinel;
