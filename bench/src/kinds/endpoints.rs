//! The addresses strategies connect to, one field per server kind, as each kind's entry puts them
//! there ([`ServerEntry::set_endpoint`](super::ServerEntry)).

use lockers::LockError;
use serde::{Deserialize, Serialize};

/// The addresses strategies connect to, as strategies take them (serializable, so worker processes
/// get them too; `Debug` shows them redacted).
#[derive(Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct EndpointAddrs {
    /// Redis URL (`redis://127.0.0.1:PORT/`).
    pub redis: Option<String>,
    /// URLs of the independent Redis servers (Redlock's nodes), in order.
    #[serde(default)]
    pub redis_nodes: Vec<String>,
    /// etcd endpoints (`http://127.0.0.1:PORT`).
    pub etcd: Vec<String>,
    /// ZooKeeper connect string (`127.0.0.1:PORT`).
    pub zookeeper: Option<String>,
    /// PostgreSQL URL (`postgres://user@127.0.0.1:PORT/db`).
    #[serde(default)]
    pub postgres: Option<String>,
    /// MySQL URL (`mysql://user:password@127.0.0.1:PORT/db`).
    #[serde(default)]
    pub mysql: Option<String>,
    /// Whether the Redis primary has a replica (the failover topology): Redisson's rows then run in a
    /// replicated mode and `WAIT` after lock writes.
    #[serde(default)]
    pub redis_replicated: bool,
    /// URLs of the primary's replicas when lockbench started them beside it (the failover pair), for
    /// clients configured with them (the real Redisson's master/slave mode).
    #[serde(default)]
    pub redis_replicas: Vec<String>,
    /// The Valkey servers, as the Redis fields hold Redis's: [`valkey_as_redis`](Self::valkey_as_redis)
    /// hands them to a Redis row run on Valkey.
    #[serde(default)]
    pub valkey: Option<String>,
    /// URLs of the independent Valkey servers (Redlock's nodes on Valkey), in order.
    #[serde(default)]
    pub valkey_nodes: Vec<String>,
    /// Whether the Valkey primary has a replica.
    #[serde(default)]
    pub valkey_replicated: bool,
    /// URLs of the Valkey primary's replicas started beside it.
    #[serde(default)]
    pub valkey_replicas: Vec<String>,
}

impl EndpointAddrs {
    /// Swaps the Valkey fields with the Redis ones: the Valkey kind reuses the Redis kind's
    /// address handling by running it on the swapped fields.
    pub fn swap_valkey_with_redis(&mut self) {
        std::mem::swap(&mut self.redis, &mut self.valkey);
        std::mem::swap(&mut self.redis_nodes, &mut self.valkey_nodes);
        std::mem::swap(&mut self.redis_replicated, &mut self.valkey_replicated);
        std::mem::swap(&mut self.redis_replicas, &mut self.valkey_replicas);
    }

    /// These addresses with the Valkey servers in the Redis fields (and no Redis): what a Redis row
    /// run on Valkey connects to.
    pub fn valkey_as_redis(&self) -> EndpointAddrs {
        let mut swapped = self.clone();
        swapped.swap_valkey_with_redis();
        swapped.valkey = None;
        swapped.valkey_nodes.clear();
        swapped.valkey_replicas.clear();
        swapped.valkey_replicated = false;
        swapped
    }
}

impl std::fmt::Debug for EndpointAddrs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        use lockers::address::redact;
        f.debug_struct("EndpointAddrs")
            .field("redis", &self.redis.as_deref().map(redact))
            .field("redis_nodes", &redact(&self.redis_nodes.join(",")))
            .field("etcd", &redact(&self.etcd.join(",")))
            .field("zookeeper", &self.zookeeper.as_deref().map(redact))
            .field("postgres", &self.postgres.as_deref().map(redact))
            .field("mysql", &self.mysql.as_deref().map(redact))
            .field("redis_replicated", &self.redis_replicated)
            .field("redis_replicas", &redact(&self.redis_replicas.join(",")))
            .field("valkey", &self.valkey.as_deref().map(redact))
            .field("valkey_nodes", &redact(&self.valkey_nodes.join(",")))
            .field("valkey_replicated", &self.valkey_replicated)
            .field("valkey_replicas", &redact(&self.valkey_replicas.join(",")))
            .finish()
    }
}

/// The one address of a kind (`address`), or a `Config` error: "no `what` in this run".
pub fn required<'a>(address: Option<&'a str>, what: &str) -> Result<&'a str, LockError> {
    address.ok_or_else(|| LockError::Config(format!("no {what} in this run")))
}

/// The addresses of a kind (`addresses`), or a `Config` error when there are none: "no `what` in
/// this run".
pub fn required_list<'a>(addresses: &'a [String], what: &str) -> Result<&'a [String], LockError> {
    if addresses.is_empty() {
        return Err(LockError::Config(format!("no {what} in this run")));
    }
    Ok(addresses)
}
