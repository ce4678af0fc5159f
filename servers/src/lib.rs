//! Starts and stops real `redis-server`, `etcd`, ZooKeeper, PostgreSQL and MariaDB processes for lockbench, plus a
//! fault-injecting TCP proxy.
//!
//! Every server runs as a child process on free loopback ports, with its data and log file in a
//! fresh temp dir (under `/dev/shm` when possible, see [`data_parent`]). A `start` function
//! returns only once the server really serves (Redis answers `PING`, etcd's `/health` says
//! `true`, ZooKeeper's `srvr` reports a `Mode:`, and the child itself holds the listening
//! socket), and dropping the handle kills the process with `SIGKILL` and reaps it, also while a
//! panic unwinds. Children run in their own process group, so a terminal's Ctrl-C does not hit
//! them directly; [`kill_all_servers`] kills every live child at once, for a Ctrl-C handler.
//! If this process dies without running destructors at all (`SIGKILL`, an unhandled Ctrl-C),
//! the kernel kills the children too (`PR_SET_PDEATHSIG`), and the next process that starts a
//! server removes the temp dirs left behind.
//!
//! | server | handle | ready when |
//! |---|---|---|
//! | one `redis-server` | [`RedisServer`] | `PING` → `PONG` |
//! | primary + replica | [`RedisPair`] | replica reports `master_link_status:up` |
//! | primary + replica + 3 Sentinels | [`RedisSentinels`] | every Sentinel knows the replica and the other two |
//! | 3 masters + 3 replicas in one cluster | [`RedisCluster`] | every node says `cluster_state:ok`, every replica online |
//! | a restartable node / N independent nodes (Redlock) | [`RedisNode`] / [`RedisNodes`] | `PING` → `PONG` (after every restart) |
//! | one etcd member | [`EtcdServer`] | `GET /health` → `{"health":"true"}` |
//! | etcd cluster | [`EtcdCluster`] | every member healthy |
//! | one ZooKeeper | [`ZkServer`] | `srvr` answers with `Mode:` |
//! | ZooKeeper ensemble | [`ZkEnsemble`] | every node is leader or follower |
//! | one PostgreSQL (fresh `initdb`) | [`PostgresServer`] | `SELECT 1` answers |
//! | primary + streaming replica | [`PostgresPair`] | the primary sees the replica streaming |
//! | one PostgreSQL in a network namespace of its own | [`NamespacedPostgres`] | `SELECT 1` answers over the veth link |
//! | one MariaDB (fresh `mariadb-install-db`) | [`MariaDbServer`] | its user logs in and `SELECT 1` answers |
//! | primary + asynchronous replica | [`MariaDbPair`] | the replica's threads run and it applied the primary's binlog |
//! | one MariaDB in a network namespace of its own | [`NamespacedMariaDb`] | its user logs in over the veth link |
//!
//! Servers secured like production ones: [`RedisOptions::security`] (an ACL user, optionally a TLS
//! port), [`EtcdOptions::tls`] and [`EtcdOptions::root_password`] (TLS client port, authentication),
//! with throw-away certificates from [`TestCertificates`] (made with the `openssl` tool).
//!
//! Every Redis launcher runs Valkey as well ([`Flavor::Valkey`] in [`RedisOptions::flavor`]).
//!
//! Programs are found on `PATH` unless overridden by `LOCKBENCH_REDIS_SERVER`,
//! `LOCKBENCH_VALKEY_SERVER`, `LOCKBENCH_ETCD`, `LOCKBENCH_JAVA`, `LOCKBENCH_MARIADBD`,
//! `LOCKBENCH_MARIADB_INSTALL_DB` and `LOCKBENCH_ZK_CLASSPATH` (or by the options structs, which win
//! over both); a missing one gives [`ServerError::Missing`] naming the install command.
//!
//! ```no_run
//! # fn main() -> Result<(), lockbench_servers::ServerError> {
//! let redis = lockbench_servers::RedisServer::start()?;
//! assert_eq!(redis.command(&["PING"])?, "PONG");
//! println!("redis at {} (ready in {:?})", redis.url(), redis.startup());
//! # Ok(())
//! # }
//! ```

// Functions of at most 100 lines (clippy.toml) in this crate's code; its inline tests are exempt.
#![cfg_attr(not(test), warn(clippy::too_many_lines))]

pub mod certs;
pub mod etcd;
mod etcd_auth;
pub mod group;
pub mod mariadb;
pub mod netns;
pub mod poll;
pub mod ports;
pub mod postgres;
pub mod probe;
pub mod process;
pub mod programs;
pub mod proxy;
pub mod redis;
pub mod redis_cluster;
pub mod redis_nodes;
pub mod redis_sentinel;
pub mod zookeeper;

pub use certs::TestCertificates;
pub use etcd::{EtcdCluster, EtcdOptions, EtcdServer};
pub use group::{GroupMember, ServerGroup};
pub use mariadb::{MariaDbOptions, MariaDbPair, MariaDbServer, NamespacedMariaDb};
pub use netns::{Keepalives, Namespaced, NetNamespace, Partition};
pub use ports::free_ports;
pub use postgres::{NamespacedPostgres, PostgresOptions, PostgresPair, PostgresServer};
pub use process::{ServerProcess, data_parent, kill_all_servers};
pub use programs::Program;
pub use proxy::{Direction, Fault, Proxy};
pub use redis::{Flavor, RedisOptions, RedisPair, RedisSecurity, RedisServer};
pub use redis_cluster::RedisCluster;
pub use redis_nodes::{Durability, FakeClock, OnRestart, RedisNode, RedisNodeOptions, RedisNodes};
pub use redis_sentinel::RedisSentinels;
pub use zookeeper::{ZkEnsemble, ZkOptions, ZkServer};

/// Why a server could not be started or asked something.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServerError {
    /// A program (or ZooKeeper's jars) is not installed. The message is one line naming the
    /// install command.
    #[error("{program} not found; install it with: {install}")]
    Missing {
        /// What was looked for, e.g. `redis-server`.
        program: String,
        /// The command that installs it.
        install: String,
    },
    /// The server exited early or did not become ready in time.
    #[error("{server} did not start: {reason}{}", format_log_tail(log_tail))]
    Start {
        /// Which server, e.g. `redis-server` or `etcd member 2`.
        server: String,
        /// What went wrong.
        reason: String,
        /// The last lines of the server's log file (may be empty).
        log_tail: String,
    },
    /// The server answered, but with an error (e.g. a Redis `-ERR` reply) or with something
    /// that could not be understood.
    #[error("{server} replied with an error: {message}")]
    Reply {
        /// Which server.
        server: String,
        /// The error text as the server sent it.
        message: String,
    },
    /// Any other I/O failure (spawning, temp dirs, sockets).
    #[error("I/O error: {0}")]
    Io(#[from] std::io::Error),
}

fn format_log_tail(tail: &str) -> String {
    if tail.trim().is_empty() {
        String::new()
    } else {
        format!("; last log lines:\n{}", tail.trim_end())
    }
}

/// Shorthand for results in this crate.
pub type Result<T, E = ServerError> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    fn shareable<T: Send + Sync + std::fmt::Debug>() {}

    #[test]
    fn handles_can_be_shared_between_threads() {
        shareable::<RedisServer>();
        shareable::<RedisPair>();
        shareable::<EtcdServer>();
        shareable::<EtcdCluster>();
        shareable::<ZkServer>();
        shareable::<ZkEnsemble>();
        shareable::<PostgresServer>();
        shareable::<PostgresPair>();
        shareable::<NamespacedPostgres>();
        shareable::<MariaDbServer>();
        shareable::<MariaDbPair>();
        shareable::<NamespacedMariaDb>();
        shareable::<NetNamespace>();
        shareable::<Partition>();
        shareable::<Proxy>();
        shareable::<ServerProcess>();
        shareable::<ServerError>();
    }

    #[test]
    fn start_error_shows_the_log_tail() {
        let err = ServerError::Start {
            server: "etcd member n1".into(),
            reason: "exited early with exit status: 1".into(),
            log_tail: "line one\nline two\n".into(),
        };
        assert_eq!(
            err.to_string(),
            "etcd member n1 did not start: exited early with exit status: 1; last log lines:\nline one\nline two"
        );
    }
}
