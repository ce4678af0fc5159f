//! The server kinds a lock can live on, by id: one vocabulary for lockbench's kinds (what each is
//! and how it is run live in its own folder there) and the peers' catalog (the server an adapter
//! needs).

/// Where a strategy's lock state lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ServerKind {
    /// In the lockbench process, shared by every client of a case (the `memory` strategy): clients
    /// must run as tasks.
    InProcess,
    /// Nowhere shared: each client has its own (a control without mutual exclusion).
    PerClient,
    /// A Redis server.
    Redis,
    /// N independent Redis servers (Redlock's masters; 5 when lockbench starts them).
    RedisNodes,
    /// An etcd cluster.
    Etcd,
    /// A ZooKeeper ensemble.
    ZooKeeper,
    /// A PostgreSQL server.
    Postgres,
    /// A Valkey server (Redis's fork: the Redis rows run on it unchanged).
    Valkey,
    /// N independent Valkey servers (Redlock's masters on Valkey).
    ValkeyNodes,
    /// A MySQL server (MariaDB when lockbench starts it).
    Mysql,
}

impl ServerKind {
    /// Every kind.
    pub const ALL: [ServerKind; 10] = [
        ServerKind::InProcess,
        ServerKind::PerClient,
        ServerKind::Redis,
        ServerKind::RedisNodes,
        ServerKind::Etcd,
        ServerKind::ZooKeeper,
        ServerKind::Postgres,
        ServerKind::Valkey,
        ServerKind::ValkeyNodes,
        ServerKind::Mysql,
    ];

    /// The name used in listings and results.
    pub const fn name(self) -> &'static str {
        match self {
            ServerKind::InProcess => "in-process",
            ServerKind::PerClient => "per-client",
            ServerKind::Redis => "redis",
            ServerKind::RedisNodes => "redis-nodes",
            ServerKind::Etcd => "etcd",
            ServerKind::ZooKeeper => "zookeeper",
            ServerKind::Postgres => "postgres",
            ServerKind::Valkey => "valkey",
            ServerKind::ValkeyNodes => "valkey-nodes",
            ServerKind::Mysql => "mysql",
        }
    }

    /// The kind named `name` (as [`name`](Self::name) spells it).
    pub fn named(name: &str) -> Option<ServerKind> {
        Self::ALL.into_iter().find(|k| k.name() == name)
    }
}
