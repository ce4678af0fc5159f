//! A Redis Cluster of 3 masters and 3 replicas on 127.0.0.1 ([`RedisCluster`]): the setup of a team
//! that shards Redis. Each node is a [`RedisNode`] started as a cluster node, with a cluster bus port
//! of its own ([`RedisNodeOptions::cluster_bus`]); the launcher gives the masters a third of the 16384
//! hash slots each (`CLUSTER ADDSLOTSRANGE`), joins every node (`CLUSTER MEET`), makes node 3 + i
//! the replica of master i (`CLUSTER REPLICATE`) and returns once every node reports
//! `cluster_state:ok` and every master has its replica connected.
//!
//! With an ACL user ([`RedisCluster::start_with`]), every node switches the default user off, and the
//! replicas log in to their masters as that user.
//!
//! Failover, both kinds a cluster knows: a killed master ([`RedisCluster::kill_master_of`]) is
//! declared failed by the others after [`NODE_TIMEOUT`] and its replica takes over; a manual
//! `CLUSTER FAILOVER` on a replica ([`RedisCluster::manual_failover_of`]) swaps the roles without
//! losing a write. Redis's own default `cluster-node-timeout` is 15 s; lockbench uses 1 s so that a
//! failover fits a second-scale scenario. `cluster-require-full-coverage` keeps Redis's default (yes):
//! while a master is down and not yet replaced, every node answers `CLUSTERDOWN`.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use crate::redis::{RedisOptions, info_field};
use crate::redis_nodes::{OnRestart, RedisNode, RedisNodeOptions};
use crate::{Result, ServerError};

/// The number of masters (each with one replica).
pub const MASTERS: usize = 3;
/// `cluster-node-timeout`: how long a node may be unreachable before the others fail it over.
pub const NODE_TIMEOUT: Duration = Duration::from_secs(1);
/// The number of hash slots.
const SLOTS: u16 = 16384;
const FORM_TIMEOUT: Duration = Duration::from_secs(30);

/// 3 masters and 3 replicas forming one cluster; every node is killed on drop.
#[derive(Debug)]
pub struct RedisCluster {
    /// Masters as started (0..3), then their replicas (3..6); roles change with failovers.
    nodes: Vec<RedisNode>,
    /// The ACL user and password clients use (in [`Self::url`]), if any.
    auth: Option<(String, String)>,
    /// The CA clients trust, when the nodes speak TLS.
    ca: Option<std::path::PathBuf>,
    startup: Duration,
}

impl RedisCluster {
    /// Starts 6 nodes, forms the cluster and waits until it serves every slot with every replica
    /// attached.
    pub fn start() -> Result<Self> {
        Self::start_with(RedisOptions::default())
    }

    /// Like [`start`](Self::start), with `options` for every node. An ACL user in them is the one
    /// replicas and clients log in as (`masteruser`/`masterauth`). With TLS, clients, replication and
    /// the cluster bus all speak it (`tls-cluster`, `tls-replication`): every node announces its TLS
    /// port, and [`Self::url`] is a `rediss+cluster://` address with the CA; the plain ports stay for
    /// the launcher's own probes.
    pub fn start_with(options: RedisOptions) -> Result<Self> {
        let began = Instant::now();
        let tls = options.security.as_ref().and_then(|s| s.tls.clone());
        let auth = options
            .security
            .as_ref()
            .map(|s| (s.user.clone(), s.password.clone()));
        let nodes = (0..2 * MASTERS)
            .map(|_| {
                let mut options = RedisNodeOptions {
                    redis: options.clone(),
                    // The bus port is chosen free (not port + 10000), within the node's retry.
                    cluster_bus: true,
                    ..RedisNodeOptions::default()
                };
                if let Some((user, password)) = &auth {
                    options.redis.extra.extend([
                        ("masteruser".into(), user.clone()),
                        ("masterauth".into(), password.clone()),
                    ]);
                }
                if tls.is_some() {
                    options.redis.extra.extend([
                        ("tls-cluster".into(), "yes".into()),
                        ("tls-replication".into(), "yes".into()),
                    ]);
                }
                options.redis.extra.extend([
                    ("cluster-config-file".into(), "nodes.conf".into()),
                    (
                        "cluster-node-timeout".into(),
                        NODE_TIMEOUT.as_millis().to_string(),
                    ),
                    // A replica's full sync starts at once (Redis waits 5 s by default for more
                    // replicas to share one transfer).
                    ("repl-diskless-sync-delay".into(), "0".into()),
                ]);
                RedisNode::start(options)
            })
            .collect::<Result<Vec<_>>>()?;
        let cluster = RedisCluster {
            nodes,
            auth,
            ca: tls.map(|files| files.ca),
            startup: Duration::ZERO,
        };
        cluster.form()?;
        Ok(RedisCluster {
            startup: began.elapsed(),
            ..cluster
        })
    }

    fn form(&self) -> Result<()> {
        let share = SLOTS / MASTERS as u16 + 1;
        for (i, master) in self.nodes[..MASTERS].iter().enumerate() {
            let first = share * i as u16;
            let last = (first + share - 1).min(SLOTS - 1);
            master.command(&[
                "CLUSTER",
                "ADDSLOTSRANGE",
                &first.to_string(),
                &last.to_string(),
            ])?;
        }
        let first = &self.nodes[0];
        for node in &self.nodes[1..] {
            let port = node.port().to_string();
            let bus = node
                .bus_port()
                .ok_or_else(|| ServerError::Start {
                    server: "redis cluster".to_owned(),
                    reason: format!("node {} was started without a cluster bus", node.addr()),
                    log_tail: String::new(),
                })?
                .to_string();
            first.command(&["CLUSTER", "MEET", "127.0.0.1", &port, &bus])?;
        }
        self.wait("every node to know the 6 others", |cluster| {
            cluster.nodes.iter().all(|node| {
                node.command(&["CLUSTER", "NODES"])
                    .is_ok_and(|nodes| nodes.lines().filter(|l| !l.trim().is_empty()).count() == 6)
            })
        })?;
        for i in 0..MASTERS {
            let id = self.nodes[i].command(&["CLUSTER", "MYID"])?;
            self.nodes[MASTERS + i].command(&["CLUSTER", "REPLICATE", id.trim()])?;
        }
        self.wait("cluster_state:ok with every replica in sync", |cluster| {
            cluster.nodes.iter().all(|node| {
                node.command(&["CLUSTER", "INFO"])
                    .is_ok_and(|info| info_field(&info, "cluster_state") == Some("ok"))
            }) && cluster.nodes[..MASTERS].iter().all(|master| {
                master.command(&["INFO", "replication"]).is_ok_and(|info| {
                    info_field(&info, "connected_slaves") == Some("1")
                        && info
                            .lines()
                            .any(|l| l.starts_with("slave0:") && l.contains("state=online"))
                })
            })
        })
    }

    fn wait(&self, what: &str, ready: impl Fn(&Self) -> bool) -> Result<()> {
        let deadline = Instant::now() + FORM_TIMEOUT;
        while !ready(self) {
            if Instant::now() >= deadline {
                return Err(ServerError::Start {
                    server: "redis cluster".to_owned(),
                    reason: format!("waited {FORM_TIMEOUT:?} for {what}"),
                    log_tail: self.nodes[0].log_tail(20),
                });
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        Ok(())
    }

    /// The client address: `redis+cluster://127.0.0.1:A,127.0.0.1:B,…` (every node as a seed), with
    /// `user:password@` before the hosts when the nodes have an ACL user; with TLS,
    /// `rediss+cluster://…` on the TLS ports and `?ca=` the CA.
    pub fn url(&self) -> String {
        let hosts: Vec<String> = self
            .nodes
            .iter()
            .map(|n| match (&self.ca, n.tls_port()) {
                (Some(_), Some(port)) => format!("127.0.0.1:{port}"),
                _ => n.addr().to_string(),
            })
            .collect();
        let login = self
            .auth
            .as_ref()
            .map(|(user, password)| format!("{user}:{password}@"))
            .unwrap_or_default();
        match &self.ca {
            Some(ca) => format!(
                "rediss+cluster://{login}{}?ca={}",
                hosts.join(","),
                ca.display()
            ),
            None => format!("redis+cluster://{login}{}", hosts.join(",")),
        }
    }

    /// Every node, masters as started first.
    pub fn nodes(&self) -> &[RedisNode] {
        &self.nodes
    }

    /// The running node that says it serves `key`'s slot as master now.
    pub fn master_of(&self, key: &str) -> Option<&RedisNode> {
        let slot = self.slot_of(key)?;
        self.nodes
            .iter()
            .find(|node| node.is_running() && owns(node, slot))
    }

    /// The hash slot of `key`, as the cluster computes it (`CLUSTER KEYSLOT` on any running node).
    pub fn slot_of(&self, key: &str) -> Option<u16> {
        self.ask(&["CLUSTER", "KEYSLOT", key])?.trim().parse().ok()
    }

    /// The replica of `master` now (a running node that replicates from it).
    pub fn replica_of(&self, master: &RedisNode) -> Option<&RedisNode> {
        // Over TLS, replicas connect to the TLS port.
        let ports: Vec<String> = [Some(master.port()), master.tls_port()]
            .into_iter()
            .flatten()
            .map(|p| p.to_string())
            .collect();
        self.nodes.iter().find(|node| {
            node.is_running()
                && node.command(&["INFO", "replication"]).is_ok_and(|info| {
                    info_field(&info, "role") == Some("slave")
                        && info_field(&info, "master_port")
                            .is_some_and(|p| ports.iter().any(|q| q == p))
                })
        })
    }

    /// The first answer of a running node to `args`.
    fn ask(&self, args: &[&str]) -> Option<String> {
        self.nodes
            .iter()
            .filter(|n| n.is_running())
            .find_map(|n| n.command(args).ok())
    }

    /// Kills the master serving `key` (`SIGKILL`); returns its address. Its replica takes over once
    /// the other masters agree it failed ([`NODE_TIMEOUT`] and an election, about 2 s).
    pub fn kill_master_of(&self, key: &str) -> Result<SocketAddr> {
        let master = self.master_of(key).ok_or_else(|| no_master(key))?;
        master.kill()?;
        Ok(master.addr())
    }

    /// `CLUSTER FAILOVER` on the replica of the master serving `key`: the replica waits until it has
    /// every write of its master (which stops accepting writes meanwhile), then takes over. Returns the
    /// new master's address.
    pub fn manual_failover_of(&self, key: &str) -> Result<SocketAddr> {
        let master = self.master_of(key).ok_or_else(|| no_master(key))?;
        let replica = self.replica_of(master).ok_or_else(|| ServerError::Start {
            server: "redis cluster".to_owned(),
            reason: format!("the master {} has no replica", master.addr()),
            log_tail: master.log_tail(20),
        })?;
        replica.command(&["CLUSTER", "FAILOVER"])?;
        Ok(replica.addr())
    }

    /// Waits until `key`'s slot is served by a master other than `old` and every running node reports
    /// `cluster_state:ok`; returns the new master and when that was seen. `None` within `timeout`.
    pub fn wait_for_new_master(
        &self,
        key: &str,
        old: SocketAddr,
        timeout: Duration,
    ) -> Option<(SocketAddr, Instant)> {
        let deadline = Instant::now() + timeout;
        while Instant::now() < deadline {
            let healthy = self.nodes.iter().filter(|n| n.is_running()).all(|node| {
                node.command(&["CLUSTER", "INFO"])
                    .is_ok_and(|info| info_field(&info, "cluster_state") == Some("ok"))
            });
            if healthy && let Some(master) = self.master_of(key).filter(|m| m.addr() != old) {
                return Some((master.addr(), Instant::now()));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        None
    }

    /// Restarts every killed node on its data (its `nodes.conf`), so it rejoins the cluster as a
    /// replica of the master that replaced it, and waits until each one's link to its master is up and
    /// every node knows it as a healthy replica (so a later `CLUSTER FAILOVER` gets the masters'
    /// votes).
    pub fn restart_killed(&self) -> Result<()> {
        let killed: Vec<&RedisNode> = self.nodes.iter().filter(|n| !n.is_running()).collect();
        for node in &killed {
            node.restart(OnRestart::KeepData)?;
        }
        let ids = killed
            .iter()
            .map(|node| {
                node.command(&["CLUSTER", "MYID"])
                    .map(|id| id.trim().to_owned())
            })
            .collect::<Result<Vec<_>>>()?;
        self.wait("restarted nodes to rejoin as replicas", |cluster| {
            let synced = killed.iter().all(|node| {
                node.command(&["INFO", "replication"])
                    .is_ok_and(|info| info_field(&info, "master_link_status") == Some("up"))
            });
            synced
                && cluster.nodes.iter().all(|node| {
                    node.command(&["CLUSTER", "NODES"]).is_ok_and(|nodes| {
                        ids.iter().all(|id| {
                            nodes.lines().any(|line| {
                                let flags = line.split_whitespace().nth(2).unwrap_or("");
                                line.starts_with(id.as_str())
                                    && flags.contains("slave")
                                    && !flags.contains("fail")
                            })
                        })
                    })
                })
        })
    }

    /// How long `start` took until the cluster served.
    pub fn startup(&self) -> Duration {
        self.startup
    }
}

/// Whether `node` says it serves `slot` as master (its own line of `CLUSTER NODES` lists the slot).
fn owns(node: &RedisNode, slot: u16) -> bool {
    let Ok(nodes) = node.command(&["CLUSTER", "NODES"]) else {
        return false;
    };
    let Some(line) = nodes.lines().find(|l| l.contains("myself")) else {
        return false;
    };
    line.contains("master")
        && line.split_whitespace().skip(8).any(|range| {
            let (first, last) = range.split_once('-').unwrap_or((range, range));
            matches!(
                (first.parse::<u16>(), last.parse::<u16>()),
                (Ok(a), Ok(b)) if a <= slot && slot <= b
            )
        })
}

fn no_master(key: &str) -> ServerError {
    ServerError::Start {
        server: "redis cluster".to_owned(),
        reason: format!("no running master serves the slot of {key:?}"),
        log_tail: String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_killed_master_is_replaced_by_its_replica() {
        let cluster = RedisCluster::start().expect("cluster");
        assert!(cluster.url().starts_with("redis+cluster://127.0.0.1:"));
        let key = "{lockbench:orders}";
        let old = cluster.master_of(key).expect("a master").addr();
        let replica = cluster
            .replica_of(cluster.master_of(key).expect("a master"))
            .expect("a replica")
            .addr();
        cluster.kill_master_of(key).expect("kill");
        let (new, _) = cluster
            .wait_for_new_master(key, old, Duration::from_secs(20))
            .expect("a new master");
        assert_eq!(new, replica);
        cluster.restart_killed().expect("restart");
        let promoted = cluster.manual_failover_of(key).expect("manual failover");
        assert_eq!(
            promoted, old,
            "the old master, now a replica, takes over again"
        );
        let (again, _) = cluster
            .wait_for_new_master(key, new, Duration::from_secs(20))
            .expect("the manual failover");
        assert_eq!(again, old);
    }
}
