//! Runs ZooKeeper (3.8, on the JVM) children: a standalone server ([`ZkServer`]) or a
//! replicated ensemble ([`ZkEnsemble`]), on free 127.0.0.1 ports with data under
//! [`data_parent`].
//!
//! Each node gets its own `zoo.cfg` with `tickTime=100` (so session timeouts down to 200 ms are
//! allowed; the maximum is 60 s), the admin server off, every four-letter word whitelisted and
//! no per-client connection limit. Readiness is the `srvr` four-letter word reporting a
//! `Mode:` (`ruok` answers `imok` before the server serves). The JVM runs with a small heap,
//! the serial GC and only the C1 compiler, which keeps start-up near 0.4 s.
//!
//! [`data_parent`]: crate::data_parent

use std::fmt::Write as _;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use crate::group::{GroupMember, ServerGroup};
use crate::process::{
    ServerProcess, make_temp_dir, process_accessors, retry_on_port_race, wait_all_ready,
};
use crate::programs::{Program, zk_classpath};
use crate::{Result, free_ports, probe};

const START_TIMEOUT: Duration = Duration::from_secs(30);
const PROBE_TIMEOUT: Duration = Duration::from_millis(500);

/// The environment variable that sets the ZooKeeper JVM's largest heap (`-Xmx`), e.g. `2g` for a
/// `lockbench scale` run to a million ephemeral nodes; default [`DEFAULT_HEAP`].
pub const HEAP_ENV: &str = "LOCKBENCH_ZK_HEAP";
/// The default largest heap: enough for the suite, about 200k lock nodes before GC stalls the server.
pub const DEFAULT_HEAP: &str = "256m";

/// The JVM flags ZooKeeper runs with (before `-cp`), after `-Xmx` (see [`HEAP_ENV`]).
pub const JVM_FLAGS: [&str; 5] = [
    "-XX:+UseSerialGC",
    "-XX:TieredStopAtLevel=1",
    "-XX:-UsePerfData",
    "-Djava.net.preferIPv4Stack=true",
    "-Dzookeeper.jmx.log4j.disable=true",
];

/// Settings for [`ZkServer::start_with`] and [`ZkEnsemble::start_with`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ZkOptions {
    /// The `java` to run; overrides `LOCKBENCH_JAVA` and `PATH`.
    pub java: Option<PathBuf>,
    /// The classpath holding ZooKeeper and its dependencies; overrides
    /// `LOCKBENCH_ZK_CLASSPATH` and the Debian jars (see [`zk_classpath`]).
    pub classpath: Option<String>,
}

/// One running ZooKeeper node (standalone, or one of a [`ZkEnsemble`]), killed on drop.
#[derive(Debug)]
pub struct ZkServer {
    process: ServerProcess,
    id: usize,
    addr: SocketAddr,
    version: String,
    startup: Duration,
}

impl ZkServer {
    /// Starts a standalone server and waits until `srvr` reports `Mode: standalone`.
    pub fn start() -> Result<Self> {
        Self::start_with(ZkOptions::default())
    }

    /// Like [`start`](Self::start) with `options`.
    pub fn start_with(options: ZkOptions) -> Result<Self> {
        let mut nodes = start_nodes(1, &options)?;
        nodes.pop().ok_or_else(|| {
            crate::ServerError::Io(std::io::Error::other("ZooKeeper start produced no node"))
        })
    }

    /// The client connect string, `127.0.0.1:PORT`.
    pub fn connect_string(&self) -> String {
        self.addr.to_string()
    }

    /// The client address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The server id (`myid`): 1-based in an ensemble, 0 when standalone.
    pub fn id(&self) -> usize {
        self.id
    }

    /// The ZooKeeper version from `srvr`, e.g. `3.8.0`.
    pub fn version(&self) -> &str {
        &self.version
    }

    /// The `srvr` four-letter word's answer.
    pub fn srvr(&self) -> Result<String> {
        probe::four_letter_word(self.addr, "srvr", PROBE_TIMEOUT)
    }

    /// The `mntr` four-letter word's answer (tab-separated `zk_*` metrics).
    pub fn mntr(&self) -> Result<String> {
        probe::four_letter_word(self.addr, "mntr", PROBE_TIMEOUT)
    }

    /// The node's current mode (`standalone`, `leader`, `follower`), or `None` if it does not
    /// answer `srvr` with a mode within 500 ms.
    pub fn mode(&self) -> Option<String> {
        mode(self.addr)
    }

    process_accessors!();
}

fn mode(addr: SocketAddr) -> Option<String> {
    let srvr = probe::four_letter_word(addr, "srvr", PROBE_TIMEOUT).ok()?;
    srvr.lines()
        .find_map(|line| line.strip_prefix("Mode:"))
        .map(|mode| mode.trim().to_owned())
}

/// `3.8.0` from `Zookeeper version: 3.8.0-abc, built on …`.
fn parse_version(srvr: &str) -> Option<String> {
    let line = srvr
        .lines()
        .find_map(|line| line.strip_prefix("Zookeeper version:"))?;
    let version = line.split(',').next()?.trim();
    Some(version.split('-').next().unwrap_or(version).to_owned())
}

struct NodePorts {
    client: u16,
    peer: u16,
    election: u16,
}

fn zoo_cfg(data_dir: &std::path::Path, client: u16, ensemble: &[NodePorts]) -> String {
    let mut cfg = format!(
        "tickTime=100\n\
         minSessionTimeout=200\n\
         maxSessionTimeout=60000\n\
         initLimit=20\n\
         syncLimit=10\n\
         dataDir={}\n\
         clientPort={client}\n\
         clientPortAddress=127.0.0.1\n\
         admin.enableServer=false\n\
         4lw.commands.whitelist=*\n\
         maxClientCnxns=0\n",
        data_dir.display()
    );
    if ensemble.len() > 1 {
        for (i, node) in ensemble.iter().enumerate() {
            let _ = writeln!(
                cfg,
                "server.{}=127.0.0.1:{}:{}",
                i + 1,
                node.peer,
                node.election
            );
        }
    }
    cfg
}

/// Starts `n` nodes (standalone when `n == 1`) and waits until all serve.
fn start_nodes(n: usize, options: &ZkOptions) -> Result<Vec<ZkServer>> {
    let java = Program::Java.locate(options.java.as_deref())?;
    let classpath = zk_classpath(options.classpath.as_deref())?;
    let began = Instant::now();
    retry_on_port_race(|| {
        let ports = free_ports(3 * n)?;
        let nodes: Vec<NodePorts> = ports
            .chunks(3)
            .map(|p| NodePorts {
                client: p[0],
                peer: p[1],
                election: p[2],
            })
            .collect();
        let addr = |i: usize| SocketAddr::from((Ipv4Addr::LOCALHOST, nodes[i].client));
        let mut processes = Vec::with_capacity(n);
        for (i, node) in nodes.iter().enumerate() {
            let dir = make_temp_dir("zk")?;
            let data = dir.path().join("data");
            std::fs::create_dir_all(&data)?;
            if n > 1 {
                std::fs::write(data.join("myid"), format!("{}\n", i + 1))?;
            }
            let cfg_path = dir.path().join("zoo.cfg");
            std::fs::write(&cfg_path, zoo_cfg(&data, node.client, &nodes))?;
            let mut command = Command::new(&java);
            let heap = std::env::var(HEAP_ENV)
                .ok()
                .filter(|h| !h.is_empty() && h.chars().all(|c| c.is_ascii_alphanumeric()))
                .unwrap_or_else(|| DEFAULT_HEAP.to_owned());
            command
                .arg(format!("-Xmx{heap}"))
                .args(JVM_FLAGS)
                .arg(format!("-Dzookeeper.log.dir={}", dir.path().display()))
                .args(["-cp", &classpath])
                .arg("org.apache.zookeeper.server.quorum.QuorumPeerMain")
                .arg(&cfg_path);
            let name = if n == 1 {
                "zookeeper".to_owned()
            } else {
                format!("zookeeper node {}", i + 1)
            };
            processes.push(ServerProcess::spawn(name, command, dir, "zookeeper.log")?);
        }
        let refs: Vec<&ServerProcess> = processes.iter().collect();
        wait_all_ready(&refs, START_TIMEOUT, Duration::from_millis(10), |i| {
            let serving = match mode(addr(i)).as_deref() {
                Some("leader" | "follower") => true,
                Some("standalone") => n == 1,
                _ => false,
            };
            serving && refs[i].listens_on(nodes[i].client)
        })?;
        let version = probe::four_letter_word(addr(0), "srvr", PROBE_TIMEOUT)
            .ok()
            .and_then(|srvr| parse_version(&srvr))
            .unwrap_or_default();
        let startup = began.elapsed();
        Ok(processes
            .into_iter()
            .enumerate()
            .map(|(i, process)| ZkServer {
                process,
                id: if n == 1 { 0 } else { i + 1 },
                addr: addr(i),
                version: version.clone(),
                startup,
            })
            .collect())
    })
}

/// A running replicated ZooKeeper ensemble, killed on drop. Node `i` has server id `i + 1`.
pub type ZkEnsemble = ServerGroup<ZkServer>;

impl GroupMember for ZkServer {
    fn process(&self) -> &ServerProcess {
        &self.process
    }

    fn is_leader_now(&self) -> bool {
        self.mode().as_deref() == Some("leader")
    }
}

impl ServerGroup<ZkServer> {
    /// Starts `n` nodes (use an odd number, normally 3) and waits until every node is leader or
    /// follower.
    pub fn start(n: usize) -> Result<Self> {
        Self::start_with(n, ZkOptions::default())
    }

    /// Like [`start`](Self::start) with `options`.
    pub fn start_with(n: usize, options: ZkOptions) -> Result<Self> {
        let began = Instant::now();
        let nodes = start_nodes(n.max(2), &options)?;
        Ok(Self::new(nodes, began.elapsed()))
    }

    /// The client connect string for every node, `127.0.0.1:a,127.0.0.1:b,…`.
    pub fn connect_string(&self) -> String {
        self.nodes()
            .iter()
            .map(ZkServer::connect_string)
            .collect::<Vec<_>>()
            .join(",")
    }

    /// Node `i`, ZooKeeper's word for [`member`](Self::member).
    ///
    /// # Panics
    /// If `i >= len()`.
    pub fn node(&self, i: usize) -> &ZkServer {
        self.member(i)
    }

    /// All nodes, ZooKeeper's word for [`members`](Self::members).
    pub fn nodes(&self) -> &[ZkServer] {
        self.members()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn version_from_srvr() {
        let srvr =
            "Zookeeper version: 3.8.0-${mvngit.commit.id}, built on 2024-12-29\nMode: leader\n";
        assert_eq!(parse_version(srvr).as_deref(), Some("3.8.0"));
    }

    #[test]
    fn ensemble_cfg_lists_every_server() {
        let nodes = [
            NodePorts {
                client: 1,
                peer: 2,
                election: 3,
            },
            NodePorts {
                client: 4,
                peer: 5,
                election: 6,
            },
        ];
        let cfg = zoo_cfg(std::path::Path::new("/d"), 4, &nodes);
        assert!(cfg.contains("clientPort=4\n"));
        assert!(cfg.contains("server.1=127.0.0.1:2:3\n"));
        assert!(cfg.contains("server.2=127.0.0.1:5:6\n"));
        assert!(cfg.contains("tickTime=100\n"));
        let standalone = zoo_cfg(std::path::Path::new("/d"), 1, &nodes[..1]);
        assert!(!standalone.contains("server."));
    }
}
