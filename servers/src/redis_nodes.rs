//! Redis servers that can die and come back: [`RedisNode`], one `redis-server` on a fixed port that
//! can be killed and restarted on the same port (keeping or discarding its data), with or without
//! durable persistence ([`Durability`]), optionally under libfaketime ([`FakeClock`]); and
//! [`RedisNodes`], N independent nodes (Redlock's masters, 5 by default), each killable on its own.
//!
//! The data dir belongs to the node, not to one process: a restart with [`OnRestart::KeepData`]
//! starts the new process on the files the old one left (its AOF, when it wrote one), while
//! [`OnRestart::DiscardData`] empties it first. Each process logs to its own temp dir, so the log
//! of every run survives until the node is dropped.

use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use tempfile::TempDir;

use crate::process::{ServerProcess, make_temp_dir, retry_on_port_race};
use crate::redis::{RedisOptions, secure, server_command, wait_serving_as};
use crate::{Result, ServerError, free_ports, probe};

const COMMAND_TIMEOUT: Duration = Duration::from_secs(10);

/// Where Debian/Ubuntu (package `faketime`) keep the libfaketime preload library.
pub const LIBFAKETIME: &str = "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1";

/// glibc's malloc wrapper library (glibc ≥ 2.34). Preloaded before libfaketime it makes the `calloc`
/// libfaketime's `dlsym` needs during its own start glibc's, not jemalloc's: Debian's redis-server
/// links jemalloc, whose start calls `clock_gettime`, and libfaketime alone then deadlocks in that
/// recursion (libfaketime issues #130, #327; redis hangs before listening). Redis itself keeps using
/// jemalloc (`INFO memory` still says `mem_allocator:jemalloc-5.3.0`).
pub const LIBC_MALLOC_DEBUG: &str = "/lib/x86_64-linux-gnu/libc_malloc_debug.so.0";

/// What a node keeps on disk.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Durability {
    /// No RDB snapshots and no AOF (lockbench's default): a restart starts empty.
    #[default]
    None,
    /// `appendonly yes` + `appendfsync always`: every write is fsynced to the AOF before the reply,
    /// so a restart that keeps the data dir finds every acknowledged write.
    AofAlways,
}

/// A faked wall clock for one node, through libfaketime (`LD_PRELOAD`, with [`LIBC_MALLOC_DEBUG`]
/// first). Redis's key expiry follows the faked wall clock: measured with `"+0 x2"`, a `PX 1000` key
/// was gone after ~530 ms real time, alike with `dont_fake_monotonic` on or off (expiry reads
/// `gettimeofday`; the monotonic clock only paces the event loop's timers).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FakeClock {
    /// The `FAKETIME` value, e.g. `"+0 x2"` (start at the real time, run twice as fast: keys
    /// expire after half their TTL) or `"+10m"` (a jump ten minutes ahead).
    pub spec: String,
    /// `FAKETIME_DONT_FAKE_MONOTONIC=1`: fake only the wall clock (`gettimeofday`,
    /// `CLOCK_REALTIME`) and leave `CLOCK_MONOTONIC` real. libfaketime fakes both by default.
    pub dont_fake_monotonic: bool,
}

impl FakeClock {
    /// A wall clock running `rate` times as fast as the real one from now on, monotonic clock real.
    pub fn faster(rate: u32) -> Self {
        FakeClock {
            spec: format!("+0 x{rate}"),
            dont_fake_monotonic: true,
        }
    }
}

/// Settings for [`RedisNode::start`] and [`RedisNodes::start`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RedisNodeOptions {
    /// The plain server settings (`hz`, extra settings, program).
    pub redis: RedisOptions,
    /// What survives a restart.
    pub durability: Durability,
    /// The directory the data dir is created in; default [`crate::data_parent`] (`/dev/shm` when usable,
    /// where an fsync costs next to nothing). Give a directory on a real disk to measure fsync.
    pub data_parent: Option<PathBuf>,
    /// Run under libfaketime with this clock.
    pub fake_clock: Option<FakeClock>,
    /// Run as a Redis Cluster node (`cluster-enabled yes`) with a cluster bus port of its own
    /// (`cluster-port`, see [`RedisNode::bus_port`]), picked free together with the node's other
    /// ports, so a start that finds any of them taken retries with fresh ones.
    pub cluster_bus: bool,
}

/// What a restart does with the data the previous process left.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnRestart {
    /// Start on the same files (the AOF is replayed when [`Durability::AofAlways`]).
    KeepData,
    /// Delete them first: the node comes back empty, as a machine replaced or a tmpfs lost.
    DiscardData,
}

/// One redis-server (or valkey-server, after [`RedisOptions::flavor`]) on 127.0.0.1 with a fixed port and a data dir of its own, killable and
/// restartable. Killed on drop.
#[derive(Debug)]
pub struct RedisNode {
    program: PathBuf,
    options: RedisNodeOptions,
    addr: SocketAddr,
    /// The TLS port, when the options ask for TLS (the same across restarts).
    tls_port: Option<u16>,
    /// The cluster bus port, when the options ask for one (the same across restarts).
    bus_port: Option<u16>,
    data: TempDir,
    process: Mutex<Option<ServerProcess>>,
    startup: Duration,
}

impl RedisNode {
    /// Starts a node on free ports and waits until it answers `PING`. Retries with fresh ports (up
    /// to 3 times) when one was taken meanwhile.
    pub fn start(options: RedisNodeOptions) -> Result<Self> {
        Self::start_on(options, free_ports)
    }

    /// [`start`](Self::start) taking each attempt's ports (client, TLS, cluster bus) from
    /// `pick_ports(3)`.
    fn start_on(
        options: RedisNodeOptions,
        mut pick_ports: impl FnMut(usize) -> std::io::Result<Vec<u16>>,
    ) -> Result<Self> {
        let redis = &options.redis;
        let program = redis
            .flavor
            .program()
            .locate(redis.redis_server.as_deref())?;
        let began = Instant::now();
        retry_on_port_race(|| {
            let ports = pick_ports(3)?;
            let data = make_data_dir(options.data_parent.as_deref())?;
            let tls = options
                .redis
                .security
                .as_ref()
                .is_some_and(|s| s.tls.is_some());
            let node = RedisNode {
                program: program.clone(),
                options: options.clone(),
                addr: SocketAddr::from((Ipv4Addr::LOCALHOST, ports[0])),
                tls_port: tls.then_some(ports[1]),
                bus_port: options.cluster_bus.then_some(ports[2]),
                data,
                process: Mutex::new(None),
                startup: Duration::ZERO,
            };
            node.run()?;
            Ok(RedisNode {
                startup: began.elapsed(),
                ..node
            })
        })
    }

    /// Starts a process on this node's port and data dir, and waits until it serves.
    fn run(&self) -> Result<()> {
        let logs = make_temp_dir("redis-node")?;
        let log = logs.path().join("redis.log");
        let mut options = self.options.redis.clone();
        if self.options.durability == Durability::AofAlways {
            options.extra.extend([
                ("appendonly".to_owned(), "yes".to_owned()),
                ("appendfsync".to_owned(), "always".to_owned()),
            ]);
        }
        if let Some(bus) = self.bus_port {
            options.extra.extend([
                ("cluster-enabled".to_owned(), "yes".to_owned()),
                ("cluster-port".to_owned(), bus.to_string()),
            ]);
        }
        let mut command =
            server_command(&self.program, self.port(), self.data.path(), &log, &options);
        if let Some(security) = &options.security {
            secure(&mut command, security, self.tls_port);
        }
        if let Some(clock) = &self.options.fake_clock {
            if !Path::new(LIBFAKETIME).exists() {
                return Err(ServerError::Missing {
                    program: "libfaketime".to_owned(),
                    install: "apt-get install -y faketime (or run docker/install-deps.sh)"
                        .to_owned(),
                });
            }
            let preload = if Path::new(LIBC_MALLOC_DEBUG).exists() {
                format!("{LIBC_MALLOC_DEBUG} {LIBFAKETIME}")
            } else {
                LIBFAKETIME.to_owned()
            };
            command
                .env("LD_PRELOAD", preload)
                .env("FAKETIME", &clock.spec);
            command.env(
                "FAKETIME_DONT_FAKE_MONOTONIC",
                if clock.dont_fake_monotonic { "1" } else { "0" },
            );
        }
        let name = format!("{} node", self.options.redis.flavor.program().name());
        let process = ServerProcess::spawn(&name, command, logs, "redis.log")?;
        wait_serving_as(&process, self.addr, self.login())?;
        *self.lock() = Some(process);
        Ok(())
    }

    /// Kills the running process with `SIGKILL` (idempotent). The data dir stays.
    pub fn kill(&self) -> std::io::Result<()> {
        self.kill_running().map(|_| ())
    }

    /// Kills the process with `SIGKILL` if it runs; whether it did (false: there was no process, or
    /// it had exited already, so nothing was killed). The data dir stays.
    pub fn kill_running(&self) -> std::io::Result<bool> {
        match self.lock().take() {
            Some(process) => {
                let running = process.is_running();
                process.kill()?;
                Ok(running)
            }
            None => Ok(false),
        }
    }

    /// Kills the process if it runs, then starts a new one on the same port, with the data kept or
    /// discarded, and waits until it serves. Fails if the port was taken meanwhile.
    pub fn restart(&self, data: OnRestart) -> Result<()> {
        self.kill()?;
        if data == OnRestart::DiscardData {
            for entry in std::fs::read_dir(self.data.path())? {
                let path = entry?.path();
                if path.is_dir() {
                    std::fs::remove_dir_all(&path)?;
                } else {
                    std::fs::remove_file(&path)?;
                }
            }
        }
        self.run()
    }

    /// Freezes the process with `SIGSTOP`.
    pub fn pause(&self) -> std::io::Result<()> {
        self.with_process(ServerProcess::pause)
    }

    /// Lets a paused process continue with `SIGCONT`.
    pub fn resume(&self) -> std::io::Result<()> {
        self.with_process(ServerProcess::resume)
    }

    fn with_process(
        &self,
        f: impl FnOnce(&ServerProcess) -> std::io::Result<()>,
    ) -> std::io::Result<()> {
        match self.lock().as_ref() {
            Some(process) => f(process),
            None => Err(std::io::Error::other("the node is not running")),
        }
    }

    /// Whether a process runs (a paused one counts).
    pub fn is_running(&self) -> bool {
        self.lock().as_ref().is_some_and(ServerProcess::is_running)
    }

    /// The running process's id.
    pub fn pid(&self) -> Option<u32> {
        self.lock().as_ref().map(ServerProcess::pid)
    }

    /// The address the node listens on (127.0.0.1, the same across restarts).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The port the node listens on.
    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// The TLS port, when the node serves TLS (its plain port stays, on 127.0.0.1, behind the same
    /// ACL user).
    pub fn tls_port(&self) -> Option<u16> {
        self.tls_port
    }

    /// The cluster bus port (`cluster-port`), when the node runs as a cluster node
    /// ([`RedisNodeOptions::cluster_bus`]); what other nodes are told in `CLUSTER MEET`.
    pub fn bus_port(&self) -> Option<u16> {
        self.bus_port
    }

    /// A connection URL, `redis://127.0.0.1:PORT/`.
    pub fn url(&self) -> String {
        format!("redis://{}/", self.addr)
    }

    /// The data dir (kept across restarts unless discarded).
    pub fn data_dir(&self) -> &Path {
        self.data.path()
    }

    /// The settings the node runs with.
    pub fn options(&self) -> &RedisNodeOptions {
        &self.options
    }

    /// How long the first start took.
    pub fn startup(&self) -> Duration {
        self.startup
    }

    /// The last `n` lines of the running process's log (empty when none runs).
    pub fn log_tail(&self, n: usize) -> String {
        self.lock()
            .as_ref()
            .map(|p| p.log_tail(n))
            .unwrap_or_default()
    }

    /// Sends one command on a fresh connection (logged in as the ACL user, when the node has one) and
    /// returns the reply as text.
    pub fn command(&self, args: &[&str]) -> Result<String> {
        probe::resp_command_as(self.addr, self.login(), args, COMMAND_TIMEOUT)
    }

    /// The ACL user and password, when the node has one.
    fn login(&self) -> Option<(&str, &str)> {
        let security = self.options.redis.security.as_ref()?;
        Some((security.user.as_str(), security.password.as_str()))
    }

    fn lock(&self) -> MutexGuard<'_, Option<ServerProcess>> {
        self.process.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// A fresh data dir under `parent` (or [`crate::data_parent`]).
fn make_data_dir(parent: Option<&Path>) -> std::io::Result<TempDir> {
    match parent {
        None => make_temp_dir("redis-data"),
        Some(parent) => {
            std::fs::create_dir_all(parent)?;
            tempfile::Builder::new()
                .prefix("lockbench-redis-data-")
                .tempdir_in(parent)
        }
    }
}

/// N independent redis-servers (no replication between them), as Redlock wants its masters.
#[derive(Debug)]
pub struct RedisNodes {
    nodes: Vec<RedisNode>,
}

impl RedisNodes {
    /// Redlock's usual number of masters.
    pub const DEFAULT_COUNT: usize = 5;

    /// Starts `n` nodes with `options` each; `fake_clock`, if given, is `(index, clock)`: the one node
    /// that runs under `clock` (the others keep the real clock).
    pub fn start(
        n: usize,
        options: RedisNodeOptions,
        fake_clock: Option<(usize, FakeClock)>,
    ) -> Result<Self> {
        let nodes = (0..n)
            .map(|i| {
                let mut node_options = options.clone();
                if let Some((at, clock)) = &fake_clock
                    && *at == i
                {
                    node_options.fake_clock = Some(clock.clone());
                }
                RedisNode::start(node_options)
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(RedisNodes { nodes })
    }

    /// The nodes.
    pub fn nodes(&self) -> &[RedisNode] {
        &self.nodes
    }

    /// Node `i` (panics when out of range, like slice indexing).
    pub fn node(&self, i: usize) -> &RedisNode {
        &self.nodes[i]
    }

    /// Every node's URL, in order.
    pub fn urls(&self) -> Vec<String> {
        self.nodes.iter().map(RedisNode::url).collect()
    }

    /// How many nodes there are.
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_restart_without_persistence_forgets_and_with_aof_remembers() {
        let plain = RedisNode::start(RedisNodeOptions::default()).expect("plain node");
        let durable = RedisNode::start(RedisNodeOptions {
            durability: Durability::AofAlways,
            ..RedisNodeOptions::default()
        })
        .expect("durable node");
        for node in [&plain, &durable] {
            assert_eq!(node.command(&["INCR", "counter"]).expect("incr"), "1");
            node.restart(OnRestart::KeepData).expect("restart");
        }
        assert_eq!(durable.command(&["GET", "counter"]).expect("get"), "1");
        assert_eq!(plain.command(&["EXISTS", "counter"]).expect("exists"), "0");
        durable.restart(OnRestart::DiscardData).expect("restart");
        assert_eq!(
            durable.command(&["EXISTS", "counter"]).expect("exists"),
            "0"
        );
    }

    #[test]
    fn a_faster_fake_clock_expires_keys_early() {
        let node = RedisNode::start(RedisNodeOptions {
            fake_clock: Some(FakeClock::faster(4)),
            ..RedisNodeOptions::default()
        })
        .expect("node under libfaketime (apt-get install -y faketime)");
        assert_eq!(
            node.command(&["SET", "k", "v", "PX", "2000"]).expect("set"),
            "OK"
        );
        let set_at = Instant::now();
        while node.command(&["EXISTS", "k"]).expect("exists") == "1" {
            assert!(
                set_at.elapsed() < Duration::from_millis(1500),
                "the key outlived 3/4 of its TTL"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
        assert!(
            set_at.elapsed() >= Duration::from_millis(300),
            "expired after {:?}",
            set_at.elapsed()
        );
    }

    #[test]
    fn a_taken_cluster_bus_port_is_retried_with_another() {
        // The first attempt's bus port is held by a silent listener: that redis-server exits with
        // "Address already in use", and the second attempt gets fresh ports.
        let silent = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let taken = silent.local_addr().expect("addr").port();
        let mut attempts = 0;
        let node = RedisNode::start_on(
            RedisNodeOptions {
                cluster_bus: true,
                ..RedisNodeOptions::default()
            },
            |n| {
                attempts += 1;
                let mut ports = free_ports(n)?;
                if attempts == 1 {
                    ports[2] = taken;
                }
                Ok(ports)
            },
        )
        .expect("the second attempt starts");
        assert_eq!(attempts, 2);
        let bus = node.bus_port().expect("a bus port");
        assert_ne!(bus, taken);
        assert_eq!(
            node.command(&["CONFIG", "GET", "cluster-port"])
                .expect("config"),
            format!("cluster-port\n{bus}")
        );
        assert!(node.lock().as_ref().expect("running").listens_on(bus));
    }

    #[test]
    fn nodes_are_independent_and_killable_one_by_one() {
        let nodes = RedisNodes::start(3, RedisNodeOptions::default(), None).expect("nodes");
        assert_eq!(nodes.len(), 3);
        assert!(nodes.node(1).kill_running().expect("kill"), "it ran");
        assert!(!nodes.node(1).is_running());
        assert!(
            !nodes.node(1).kill_running().expect("kill"),
            "a node already dead is not killed again"
        );
        assert!(nodes.node(1).command(&["PING"]).is_err());
        assert_eq!(nodes.node(0).command(&["PING"]).expect("ping"), "PONG");
        nodes.node(1).restart(OnRestart::KeepData).expect("restart");
        assert_eq!(nodes.node(1).command(&["PING"]).expect("ping"), "PONG");
    }
}
