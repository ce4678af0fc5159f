//! The reference adapters shipped in `adapters/`: their ids, what server they need, the native strategy
//! each is read beside, and how to start each one. A runtime that is not installed is a `Config` error
//! naming the install command, never a silent skip.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::error::LockError;
use crate::kind::ServerKind;
use crate::locker::Capabilities;
use crate::peer::{PeerCommand, PeerConfig};
use crate::redis::ScaledTimeouts;
use crate::settings::Renewal;

/// The command that installs every peer's runtime.
pub const INSTALL: &str = "bash docker/install-deps.sh --with-peers";

/// The environment variable that points at the `adapters/` folder (default: the source tree's).
pub const ADAPTERS_ENV: &str = "LOCKBENCH_ADAPTERS";

/// What runs an adapter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Runtime {
    /// The system `python3`, standard library only.
    SystemPython,
    /// The virtual environment `adapters/python/.venv` with the pinned packages.
    Venv,
    /// `node` with `adapters/node/node_modules`.
    Node,
    /// `java` with the classes compiled at install time (`adapters/jvm/build`).
    Jvm,
    /// A Go binary built at install time (`adapters/go/build`): the entry is the program itself.
    GoBinary,
}

/// One reference adapter.
#[derive(Debug, Clone, Copy)]
pub struct PeerSpec {
    /// The peer id.
    pub id: &'static str,
    /// The library it drives.
    pub library: &'static str,
    /// The version of it the adapter must report having loaded (as the library's own metadata
    /// spells it; the pins in requirements.txt, package-lock.json, pom.xml and go.sum).
    pub version: &'static str,
    /// One line for lockbench's strategy listing: what the peer is.
    pub description: &'static str,
    /// The server it needs (`None`: the in-memory reference adapter, which needs none).
    pub backend: Option<ServerKind>,
    /// The native strategy that models it (the report's pairing).
    pub counterpart: &'static str,
    /// What the adapter declares in `hello` (known without starting it; the tests check they agree).
    pub capabilities: Capabilities,
    runtime: Runtime,
    /// The adapter's file, relative to `adapters/`.
    entry: &'static str,
    /// The adapter settings a run with this watchdog setup passes in `hello`.
    settings: fn(Renewal) -> Vec<(String, String)>,
    /// Whether the adapter takes the primary's replicas (`replicas`: Redisson's master/slave mode, which
    /// `WAIT`s for them after each lock write, as the Redisson models do with replicas).
    takes_replicas: bool,
    /// Whether one adapter process serves many clients (each its own library client; `multi_client`
    /// in adapters/PROTOCOL.md), so a case's clients share one process as the models' share lockbench's.
    /// False: one process per client.
    pub serves_many_clients: bool,
    /// Whether the adapter can block the threads its library renews on (`starve` in
    /// adapters/PROTOCOL.md, declared in its `hello`), so that a CPU starvation of the client reaches the
    /// library and not only the worker's runtime. False: the starvation does not apply to the peer.
    pub starve_library: bool,
}

/// How long a JIT-compiled adapter (the JVM's) runs its lock calls before its figures mean something:
/// with 300 ms of warm-up the Redisson and Curator rows completed 3–10 critical sections per second,
/// with 4 s 59–232 (adapters/README.md, "Warm-up").
pub const JIT_WARM_UP: Duration = Duration::from_secs(4);

/// No settings.
fn no_settings(_: Renewal) -> Vec<(String, String)> {
    Vec::new()
}

/// ZooKeeper peers: the session is their lease, so the watchdog TTL is the session timeout asked for.
fn session_timeout(renewal: Renewal) -> Vec<(String, String)> {
    vec![("session_timeout_ms".into(), millis(renewal.ttl))]
}

/// The Redisson peers: `lockWatchdogTimeout` is the watchdog TTL, and `timeout` and `retryInterval` (with
/// 3.52/4.x's `retryDelay` bounds) are Redisson's defaults scaled by TTL ÷ 30 s as the Redisson models'
/// are ([`ScaledTimeouts`]); at 30 s they are not set at all, so Redisson runs its own defaults.
fn redisson_settings(renewal: Renewal) -> Vec<(String, String)> {
    let scaled = ScaledTimeouts::for_ttl(renewal.ttl);
    let mut settings = vec![("lock_watchdog_timeout_ms".into(), millis(renewal.ttl))];
    if !scaled.are_defaults() {
        settings.push(("timeout_ms".into(), millis(scaled.response_timeout)));
        settings.push(("retry_interval_ms".into(), millis(scaled.retry_interval)));
    }
    settings
}

/// The Spring Integration lock registries: the watchdog TTL is the registry's time to live
/// (`expireAfter`; JdbcLockRegistry's default is 10 s, RedisLockRegistry's 60 s).
fn registry_ttl(renewal: Renewal) -> Vec<(String, String)> {
    vec![("ttl_ms".into(), millis(renewal.ttl))]
}

/// The table `jvm-spring-jdbc`'s `DefaultLockRepository` needs: the `INT_LOCK` statement of Spring
/// Integration 7.1.2's `org/springframework/integration/jdbc/schema-postgresql.sql` (the DDL its JDBC
/// Lock Registry docs point PostgreSQL users to). lockbench runs it on PostgreSQL servers it starts; on a
/// user's server the adapter's `hello` fails with one line quoting it.
pub const SPRING_INT_LOCK_TABLE: &str = "CREATE TABLE IF NOT EXISTS INT_LOCK (\
     LOCK_KEY CHAR(36) NOT NULL, REGION VARCHAR(100) NOT NULL, CLIENT_ID CHAR(36), \
     CREATED_DATE TIMESTAMP NOT NULL, EXPIRED_AFTER TIMESTAMP NOT NULL, \
     constraint INT_LOCK_PK primary key (LOCK_KEY, REGION))";

/// SQL for the `INT_LOCK.LOCK_KEY` of lock `key` (quoted as a literal): `UUIDConverter` turns a key
/// that is not a UUID into Java's `UUID.nameUUIDFromBytes` of its UTF-8 bytes, an MD5 with the
/// version-3 and variant bits set.
pub fn spring_int_lock_key(key: &str) -> String {
    format!(
        "(SELECT encode(set_byte(set_byte(b, 6, (get_byte(b, 6) & 15) | 48), 8, \
         (get_byte(b, 8) & 63) | 128), 'hex')::uuid::text \
         FROM (SELECT decode(md5('{}'), 'hex') AS b) AS h)",
        key.replace('\'', "''")
    )
}

/// A query of the server processes of the `jvm-spring-jdbc` client whose live `INT_LOCK` row holds
/// lock `key`: the adapter names each client's connections `lockbench <client id>`
/// (`application_name`), the client id its repository writes into its rows (the random UUID the
/// library's own constructor would pick). Every connection of that client's pool is its session:
/// the registry runs each statement on whichever one the pool lends. Run as a superuser,
/// `SELECT pg_terminate_backend(pid) FROM (…) s` ends them; `key` is quoted as a literal.
pub fn spring_jdbc_holder_sessions(key: &str) -> String {
    format!(
        "SELECT a.pid FROM pg_stat_activity a JOIN INT_LOCK l \
         ON a.application_name = 'lockbench ' || l.CLIENT_ID \
         WHERE l.REGION = 'DEFAULT' AND l.LOCK_KEY = {} \
         AND l.EXPIRED_AFTER >= (now() AT TIME ZONE 'UTC')",
        spring_int_lock_key(key)
    )
}

fn millis(d: Duration) -> String {
    d.as_millis().to_string()
}

/// Nothing declared but hold identity (every reference adapter's library names each hold: a random
/// value, a node or a lease per acquire), millisecond TTLs: what each entry below starts from.
const BASE: Capabilities = Capabilities {
    reentrant: false,
    fencing: false,
    auto_renew: false,
    fixed_lease: false,
    wait_notify: false,
    lost_signal: false,
    hold_identity: true,
    min_ttl: Duration::from_millis(1),
    ttl_granularity: Duration::from_millis(1),
};

/// Whole-second TTLs (python-redis-lock, python-etcd3, etcd's Go Session).
const SECONDS: Capabilities = Capabilities {
    min_ttl: Duration::from_secs(1),
    ttl_granularity: Duration::from_secs(1),
    ..BASE
};

/// Every reference adapter.
pub const PEERS: &[PeerSpec] = &[
    PeerSpec {
        id: "py-memory",
        library: "none (in-memory; the protocol's own cost)",
        version: "0",
        description: "peer: no library and no server, the adapter protocol's own cost; through its adapter process",
        backend: None,
        counterpart: "memory",
        capabilities: Capabilities {
            fencing: true,
            fixed_lease: true,
            ..BASE
        },
        runtime: Runtime::SystemPython,
        entry: "python/memory.py",
        settings: no_settings,
        takes_replicas: false,
        serves_many_clients: true,
        starve_library: false,
    },
    PeerSpec {
        id: "py-redis-py",
        library: "redis-py Lock",
        version: "5.2.1",
        description: "peer: redis-py's Lock (Python), fixed lease, no renewal; through its adapter process",
        backend: Some(ServerKind::Redis),
        counterpart: "redis-guard-thread",
        capabilities: Capabilities {
            fixed_lease: true,
            ..BASE
        },
        runtime: Runtime::Venv,
        entry: "python/redis_py.py",
        settings: no_settings,
        takes_replicas: false,
        serves_many_clients: true,
        starve_library: false,
    },
    PeerSpec {
        id: "py-redis-lock",
        library: "python-redis-lock",
        version: "4.0.0",
        description: "peer: python-redis-lock with auto_renewal (a renewal thread); through its adapter process",
        backend: Some(ServerKind::Redis),
        counterpart: "redis-guard-thread",
        capabilities: Capabilities {
            auto_renew: true,
            fixed_lease: true,
            wait_notify: true,
            ..SECONDS
        },
        runtime: Runtime::Venv,
        entry: "python/redis_lock_peer.py",
        settings: no_settings,
        takes_replicas: false,
        serves_many_clients: true,
        starve_library: false,
    },
    PeerSpec {
        id: "py-kazoo",
        library: "kazoo Lock",
        version: "2.10.0",
        description: "peer: kazoo's Lock (Python, ZooKeeper recipe); through its adapter process",
        backend: Some(ServerKind::ZooKeeper),
        counterpart: "zookeeper",
        // kazoo's state listener tells its user the connection is SUSPENDED (the lock may be gone) or
        // the session LOST; the adapter stops the holder at either, as kazoo's Lock docs advise.
        capabilities: Capabilities {
            auto_renew: true,
            wait_notify: true,
            lost_signal: true,
            ..BASE
        },
        runtime: Runtime::Venv,
        entry: "python/kazoo_peer.py",
        settings: session_timeout,
        takes_replicas: false,
        serves_many_clients: true,
        starve_library: false,
    },
    PeerSpec {
        id: "py-etcd3",
        library: "python-etcd3 Lock",
        version: "0.12.0",
        description: "peer: python-etcd3's Lock (a lease per lock); through its adapter process",
        backend: Some(ServerKind::Etcd),
        counterpart: "etcd-lease",
        capabilities: Capabilities {
            fixed_lease: true,
            wait_notify: true,
            ..SECONDS
        },
        runtime: Runtime::Venv,
        entry: "python/etcd3_peer.py",
        settings: no_settings,
        takes_replicas: false,
        serves_many_clients: true,
        starve_library: false,
    },
    PeerSpec {
        id: "node-redlock",
        library: "redlock (npm)",
        version: "v5.0.0-beta.2",
        description: "peer: the redlock npm package with using() auto-extension, on the Redlock nodes; through its adapter process",
        backend: Some(ServerKind::RedisNodes),
        counterpart: "redlock",
        capabilities: Capabilities {
            auto_renew: true,
            fixed_lease: true,
            lost_signal: true,
            min_ttl: Duration::from_millis(600),
            ..BASE
        },
        runtime: Runtime::Node,
        entry: "node/redlock.js",
        settings: no_settings,
        takes_replicas: false,
        serves_many_clients: true,
        starve_library: false,
    },
    PeerSpec {
        id: "jvm-curator",
        library: "Apache Curator InterProcessMutex",
        version: "5.9.0",
        description: "peer: Apache Curator's InterProcessMutex (JVM); through its adapter process",
        backend: Some(ServerKind::ZooKeeper),
        counterpart: "zookeeper",
        // Curator's ConnectionStateListener: SUSPENDED (the lock may be gone) or LOST stops the holder,
        // as Curator's lock recipe docs advise.
        capabilities: Capabilities {
            auto_renew: true,
            wait_notify: true,
            lost_signal: true,
            ..BASE
        },
        runtime: Runtime::Jvm,
        entry: "jvm/build/jvm-curator/run.args",
        settings: session_timeout,
        takes_replicas: false,
        serves_many_clients: true,
        starve_library: false,
    },
    redisson(
        "jvm-redisson-3.43",
        "3.43.0",
        "peer: Redisson 3.43.0's RLock (JVM), one renewal timer per lock; through its adapter process",
        "redisson-classic",
        "jvm/build/jvm-redisson-3.43/run.args",
    ),
    redisson(
        "jvm-redisson",
        "3.52.0",
        "peer: Redisson 3.52.0's RLock (JVM), the 3.44+ renewal scheduler; through its adapter process",
        "redisson",
        "jvm/build/jvm-redisson/run.args",
    ),
    redisson(
        "jvm-redisson-4",
        "4.7.0",
        "peer: Redisson 4.7.0's RLock (JVM); through its adapter process",
        "redisson",
        "jvm/build/jvm-redisson-4/run.args",
    ),
    PeerSpec {
        id: "jvm-spring-jdbc",
        library: "Spring Integration JdbcLockRegistry",
        version: "7.1.2",
        description: "peer: Spring Integration's JdbcLockRegistry (JVM) on PostgreSQL, renewLock() every TTL/3 by the holding thread as its docs ask; through its adapter process",
        backend: Some(ServerKind::Postgres),
        counterpart: "postgres-lease",
        // JdbcLockRegistry renews nothing itself; its docs tell the user to call renewLock() while the
        // work outlasts the time to live: the adapter's holding thread does, reports each renewal, and
        // stops the holder at the first that fails.
        capabilities: Capabilities {
            auto_renew: true,
            fixed_lease: true,
            lost_signal: true,
            ..BASE
        },
        runtime: Runtime::Jvm,
        entry: "jvm/build/jvm-spring-jdbc/run.args",
        settings: registry_ttl,
        takes_replicas: false,
        serves_many_clients: true,
        starve_library: false,
    },
    PeerSpec {
        id: "jvm-spring-redis",
        library: "Spring Integration RedisLockRegistry",
        version: "7.1.2",
        description: "peer: Spring Integration's RedisLockRegistry (JVM), spin lock, renewed every TTL/3 by its renewal TaskScheduler; through its adapter process",
        backend: Some(ServerKind::Redis),
        counterpart: "redis-guard-thread",
        // Renewed by the registry's own TaskScheduler, which tells the holder nothing.
        capabilities: Capabilities {
            auto_renew: true,
            fixed_lease: true,
            ..BASE
        },
        runtime: Runtime::Jvm,
        entry: "jvm/build/jvm-spring-redis/run.args",
        settings: registry_ttl,
        takes_replicas: false,
        serves_many_clients: true,
        starve_library: false,
    },
    PeerSpec {
        id: "go-etcd-mutex",
        library: "etcd concurrency.Mutex (Go)",
        version: "v3.5.35",
        description: "peer: etcd's Go concurrency.Mutex on a Session (the recipe etcd-lease models); through its adapter process",
        backend: Some(ServerKind::Etcd),
        counterpart: "etcd-lease",
        capabilities: Capabilities {
            fencing: true,
            auto_renew: true,
            wait_notify: true,
            lost_signal: true,
            ..SECONDS
        },
        runtime: Runtime::GoBinary,
        entry: "go/build/go-etcd-mutex",
        settings: no_settings,
        takes_replicas: false,
        serves_many_clients: true,
        starve_library: false,
    },
    PeerSpec {
        id: "go-redsync",
        library: "redsync (Go)",
        version: "v4.18.1",
        description: "peer: go-redsync (Redlock for Go) on the Redlock nodes, watchdog leases by the adapter's Extend loop at TTL/3; through its adapter process",
        backend: Some(ServerKind::RedisNodes),
        counterpart: "redlock",
        // redsync renews nothing itself: the watchdog and its loss signal are the adapter's loop of
        // `ExtendContext` at a third of the TTL, as a user holding a lock past its expiry writes it.
        capabilities: Capabilities {
            auto_renew: true,
            fixed_lease: true,
            lost_signal: true,
            ..BASE
        },
        runtime: Runtime::GoBinary,
        entry: "go/build/go-redsync",
        settings: no_settings,
        takes_replicas: false,
        serves_many_clients: true,
        starve_library: false,
    },
];

/// A Redisson row: `RLock` of the version its profile in `adapters/jvm/pom.xml` pins, one adapter source
/// (`RedissonAdapter.java`) built against each version's classpath into `entry`'s folder. It declares what Redisson does:
/// re-entrant per owner, watchdog and fixed leases, waiters woken by the unlock message; no fencing, no
/// lost signal, a release that names only the owner.
const fn redisson(
    id: &'static str,
    version: &'static str,
    description: &'static str,
    counterpart: &'static str,
    entry: &'static str,
) -> PeerSpec {
    PeerSpec {
        id,
        library: "Redisson RLock",
        version,
        description,
        backend: Some(ServerKind::Redis),
        counterpart,
        capabilities: Capabilities {
            reentrant: true,
            auto_renew: true,
            fixed_lease: true,
            wait_notify: true,
            hold_identity: false,
            ..BASE
        },
        runtime: Runtime::Jvm,
        entry,
        settings: redisson_settings,
        takes_replicas: true,
        serves_many_clients: true,
        // Its event loops and watchdog timer (RedissonAdapter.java).
        starve_library: true,
    }
}

/// The spec of the reference adapter `id`.
pub fn find(id: &str) -> Option<&'static PeerSpec> {
    PEERS.iter().find(|p| p.id == id)
}

/// The `adapters/` folder: `$LOCKBENCH_ADAPTERS`, else the one in this source tree.
pub fn adapters_dir() -> PathBuf {
    std::env::var_os(ADAPTERS_ENV).map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join("../adapters"),
        PathBuf::from,
    )
}

impl PeerSpec {
    /// The warm-up its runtime needs before a case measures it: [`JIT_WARM_UP`] for the JVM rows,
    /// nothing for the others.
    pub fn warm_up(&self) -> Duration {
        match self.runtime {
            Runtime::Jvm => JIT_WARM_UP,
            _ => Duration::ZERO,
        }
    }

    /// A client config for this adapter from [`adapters_dir`], talking to `servers`, with
    /// `renewal.ttl` as its watchdog TTL and the settings it implies (for ZooKeeper peers the session
    /// timeout asked for, since the session is their lease; for Redisson its watchdog and timeouts).
    /// `replicas` are the URLs of the primary's replicas, given to an adapter that takes them.
    pub fn config(
        &self,
        servers: Vec<String>,
        replicas: &[String],
        renewal: Renewal,
    ) -> Result<PeerConfig, LockError> {
        let mut config = PeerConfig::new(self.id, self.command(&adapters_dir())?, servers);
        config.renewal = renewal;
        config.settings = self.hello_settings(replicas, renewal);
        config.pinned_version = Some(self.version.to_owned());
        config.serves_many_clients = self.serves_many_clients;
        Ok(config)
    }

    /// The settings [`config`](Self::config) passes in `hello`.
    fn hello_settings(&self, replicas: &[String], renewal: Renewal) -> Vec<(String, String)> {
        let mut settings = (self.settings)(renewal);
        if self.takes_replicas && !replicas.is_empty() {
            settings.push(("replicas".into(), replicas.join(",")));
        }
        settings
    }

    /// How to start this adapter from `dir` (the `adapters/` folder). A missing runtime or adapter file
    /// is a `Config` error naming the install command.
    pub fn command(&self, dir: &Path) -> Result<PeerCommand, LockError> {
        let entry = dir.join(self.entry);
        let missing = |what: &Path| {
            LockError::Config(format!(
                "peer {} is not installed ({} missing); install the peers with: {INSTALL}",
                self.id,
                what.display()
            ))
        };
        if !entry.exists() {
            return Err(missing(&entry));
        }
        let (program, args) = match self.runtime {
            Runtime::SystemPython => (PathBuf::from("python3"), vec![path_arg(&entry)]),
            Runtime::Venv => {
                let python = dir.join("python/.venv/bin/python");
                if !python.exists() {
                    return Err(missing(&python));
                }
                (python, vec![path_arg(&entry)])
            }
            Runtime::Node => {
                let modules = dir.join("node/node_modules");
                if !modules.exists() {
                    return Err(missing(&modules));
                }
                (PathBuf::from("node"), vec![path_arg(&entry)])
            }
            Runtime::Jvm => (PathBuf::from("java"), vec![format!("@{}", entry.display())]),
            Runtime::GoBinary => (entry, Vec::new()),
        };
        Ok(PeerCommand {
            program,
            args,
            install_hint: INSTALL.into(),
        })
    }
}

fn path_arg(p: &Path) -> String {
    p.display().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_redisson_peers_and_only_they_take_the_replicas() {
        let replicas = ["redis://127.0.0.1:7001/".to_owned()];
        let renewal = Renewal::new(Duration::from_secs(1));
        for spec in PEERS {
            let given = spec
                .hello_settings(&replicas, renewal)
                .into_iter()
                .any(|(k, v)| k == "replicas" && v == replicas[0]);
            assert_eq!(given, spec.id.starts_with("jvm-redisson"), "{}", spec.id);
            let none = spec.hello_settings(&[], renewal);
            assert!(none.iter().all(|(k, _)| k != "replicas"), "{}", spec.id);
        }
    }

    #[test]
    fn redisson_peers_run_redissons_defaults_at_30_s_and_scale_them_elsewhere() {
        let at = |secs| redisson_settings(Renewal::new(Duration::from_secs(secs)));
        let pairs = |list: &[(&str, &str)]| -> Vec<(String, String)> {
            list.iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect()
        };
        assert_eq!(at(30), pairs(&[("lock_watchdog_timeout_ms", "30000")]));
        assert_eq!(
            at(3),
            pairs(&[
                ("lock_watchdog_timeout_ms", "3000"),
                ("timeout_ms", "300"),
                ("retry_interval_ms", "150"),
            ])
        );
    }
}
