//! Redlock's independent nodes started for a case of its own (`node_kill`, `node_restart`,
//! `clock_jump`: one of them under libfaketime), on Redis or Valkey ([`Flavor`]).

use std::net::SocketAddr;
use std::time::Duration;

use lockbench_reports::model::ServerInfo;
use lockbench_servers::{
    FakeClock, Flavor, OnRestart, RedisNode, RedisNodeOptions, RedisNodes, RedisOptions,
};

use crate::kinds::case_servers::{CaseServers, CaseStarts, Start, case_info};
use crate::kinds::redis::case_servers::node_version;
use crate::kinds::{EndpointAddrs, ServerKind};

/// The nodes of `$flavor` a node fault starts for the case, as long as a Redis primary + replica.
macro_rules! starts {
    ($flavor:expr) => {
        CaseStarts {
            nodes: Some(Start {
                start: |fake_clock| Ok(Box::new(Nodes::start($flavor, fake_clock)?)),
                takes: Duration::from_millis(300),
            }),
            pair: None,
            sentinels: None,
            sharded: None,
            cluster: None,
            restartable: None,
            namespaced: None,
        }
    };
}

/// Redis nodes.
pub(super) const STARTS: CaseStarts = starts!(Flavor::Redis);

/// Valkey nodes.
pub(crate) const VALKEY_STARTS: CaseStarts = starts!(Flavor::Valkey);

/// Redlock's independent nodes.
#[derive(Debug)]
struct Nodes(RedisNodes);

impl Nodes {
    /// Starts Redlock's 5 independent nodes, without persistence; `fake_clock` = `(node, rate)`
    /// runs that node's wall clock `rate` times as fast. Blocking (~0.1 s).
    fn start(flavor: Flavor, fake_clock: Option<(usize, u32)>) -> Result<Self, String> {
        let fake = fake_clock.map(|(node, rate)| (node, FakeClock::faster(rate)));
        let options = RedisNodeOptions {
            redis: RedisOptions::of(flavor),
            ..RedisNodeOptions::default()
        };
        RedisNodes::start(RedisNodes::DEFAULT_COUNT, options, fake)
            .map(Nodes)
            .map_err(|e| {
                let (n, name) = (RedisNodes::DEFAULT_COUNT, flavor.name());
                format!("{n} independent {name} nodes: {e}")
            })
    }

    fn flavor(&self) -> Flavor {
        self.0.node(0).options().redis.flavor
    }

    /// `redis` or `valkey`.
    fn program(&self) -> &'static str {
        match self.flavor() {
            Flavor::Redis => "redis",
            Flavor::Valkey => "valkey",
        }
    }

    /// `redis nodes 3,4 (127.0.0.1:P3, 127.0.0.1:P4)`.
    fn describe(&self, nodes: &[usize]) -> String {
        let indices: Vec<String> = nodes.iter().map(usize::to_string).collect();
        let addrs: Vec<String> = nodes
            .iter()
            .map(|&i| self.0.node(i).addr().to_string())
            .collect();
        let program = self.program();
        format!(
            "{program} nodes {} ({})",
            indices.join(","),
            addrs.join(", ")
        )
    }
}

impl CaseServers for Nodes {
    fn kind(&self) -> ServerKind {
        match self.flavor() {
            Flavor::Redis => ServerKind::RedisNodes,
            Flavor::Valkey => ServerKind::ValkeyNodes,
        }
    }

    fn endpoints(&self) -> EndpointAddrs {
        let mut endpoints = EndpointAddrs {
            redis_nodes: self.0.urls(),
            ..EndpointAddrs::default()
        };
        if self.flavor() == Flavor::Valkey {
            endpoints.swap_valkey_with_redis();
        }
        endpoints
    }

    /// None: the node faults restart servers, and a restart resets the counters.
    fn stats_at(&self) -> Option<(SocketAddr, Option<u32>)> {
        None
    }

    fn info(&self) -> ServerInfo {
        let n = &self.0;
        case_info(
            self.kind(),
            node_version(n.node(0)),
            format!(
                "{} independent nodes started per case{}",
                n.len(),
                n.nodes()
                    .iter()
                    .position(|node| node.options().fake_clock.is_some())
                    .map(|i| format!(" (node {i} under libfaketime)"))
                    .unwrap_or_default()
            ),
            n.nodes().iter().map(RedisNode::startup).sum(),
        )
    }

    fn serving_pid(&self) -> Option<(u32, String)> {
        let node = self.0.node(0);
        node.pid()
            .map(|pid| (pid, format!("{} node 0 {}", self.program(), node.addr())))
    }

    /// An error naming any node that was not running (nothing was killed there, so the fault did
    /// not take effect).
    fn kill_nodes(&self, nodes: &[usize]) -> Result<String, String> {
        let mut not_running = Vec::new();
        for &i in nodes {
            let killed = self
                .0
                .node(i)
                .kill_running()
                .map_err(|e| format!("killing node {i}: {e}"))?;
            if !killed {
                not_running.push(i.to_string());
            }
        }
        if !not_running.is_empty() {
            return Err(format!(
                "node {} was not running, so there was nothing to kill",
                not_running.join(", ")
            ));
        }
        Ok(self.describe(nodes))
    }

    /// Kills them first when they run.
    fn restart_nodes(&self, nodes: &[usize]) -> Result<String, String> {
        for &i in nodes {
            self.0
                .node(i)
                .restart(OnRestart::KeepData)
                .map_err(|e| format!("restarting node {i}: {e}"))?;
        }
        Ok(self.describe(nodes))
    }

    /// The node's `TIME` against the real clock (negative: behind; off by at most the command's
    /// round trip).
    fn node_clock_ahead_ms(&self, node: usize) -> Result<f64, String> {
        if node >= self.0.len() {
            return Err(format!("no {} node {node}", self.program()));
        }
        let reply = self
            .0
            .node(node)
            .command(&["TIME"])
            .map_err(|e| format!("TIME on node {node}: {e}"))?;
        let real = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_err(|e| e.to_string())?;
        // The reply is the seconds and the microseconds, one per line.
        let mut parts = reply.lines().map(|l| l.trim().parse::<f64>());
        let (Some(Ok(secs)), Some(Ok(micros))) = (parts.next(), parts.next()) else {
            return Err(format!("TIME on node {node}: unexpected reply {reply:?}"));
        };
        Ok((secs - real.as_secs_f64()) * 1e3 + micros / 1e3)
    }
}
