//! Faults on independent nodes and on a restartable server a case starts for itself, spec and
//! injection: kills and restarts of Redlock's nodes (`node_kill`, `node_restart`), one node's wall
//! clock running fast (`clock_jump`, set up when its node starts) and the restart of a single Redis
//! with or without persistence (`server_restart`). A kind offers the first three as
//! [`ServerFault::NodeFaults`], the restart as [`ServerFault::Restart`].

use std::sync::Arc;
use std::time::Duration;

use lockbench_servers::Durability;

use super::env::{FaultEnv, NotApplied, Record, ServerAccess, blocking, hold_for, not_applied};
use super::kind::{Aftermath, Needs, NodeFault};
use super::spec::{FaultFile, Profile, Setting, Spec, parsed};
use super::topology::Topology;
use crate::kinds::{CaseServers, ServerFault};

/// How many nodes a Redlock case starts for itself.
pub(crate) const REDLOCK_NODES: usize = lockbench_servers::RedisNodes::DEFAULT_COUNT;

/// What the family says of `kind`.
pub(super) fn profile(kind: NodeFault) -> Profile {
    let nodes = Profile {
        required: &["nodes"],
        needs: Needs::Offered(ServerFault::NodeFaults),
        ..Profile::PLAIN
    };
    match kind {
        NodeFault::Kill => Profile {
            allowed: &["duration", "nodes"],
            ..nodes
        },
        NodeFault::Restart => Profile {
            allowed: &["nodes"],
            ..nodes
        },
        NodeFault::ClockJump => Profile {
            allowed: &["nodes", "rate"],
            aftermath: Aftermath::WholeCase,
            ..nodes
        },
        NodeFault::ServerRestart => Profile {
            allowed: &["durability"],
            required: &[],
            needs: Needs::Offered(ServerFault::Restart),
            ..nodes
        },
    }
}

/// A node fault's kind with the settings of its own: the nodes struck, the rate of a fast clock,
/// what a restarted server keeps.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum NodeSpec {
    /// `node_kill` of these Redlock nodes.
    Kill {
        /// The node indices.
        nodes: Vec<usize>,
    },
    /// `node_restart` of these Redlock nodes.
    Restart {
        /// The node indices.
        nodes: Vec<usize>,
    },
    /// `clock_jump`: one node's wall clock running `rate` times as fast.
    ClockJump {
        /// The node's index.
        node: usize,
        /// How many times as fast its clock runs.
        rate: u32,
    },
    /// `server_restart`, keeping what `durability` keeps.
    ServerRestart {
        /// What survives the restart.
        durability: Durability,
    },
}

impl NodeSpec {
    /// Reads and checks the settings of a node fault of `kind` as written, defaults filled in (a
    /// clock 10 times as fast, a restart that keeps nothing).
    pub(crate) fn read(kind: NodeFault, file: &FaultFile) -> Result<Self, String> {
        let nodes = || parsed("nodes", &file.nodes, parse_nodes).map(Option::unwrap_or_default);
        Ok(match kind {
            NodeFault::Kill => NodeSpec::Kill { nodes: nodes()? },
            NodeFault::Restart => NodeSpec::Restart { nodes: nodes()? },
            NodeFault::ClockJump => {
                let [node] = nodes()?[..] else {
                    return Err("nodes: clock_jump takes one node".into());
                };
                let rate = file.rate.unwrap_or(10);
                if !(2..=1000).contains(&rate) {
                    return Err(format!("rate: must be 2..=1000, got {rate}"));
                }
                NodeSpec::ClockJump { node, rate }
            }
            NodeFault::ServerRestart => NodeSpec::ServerRestart {
                durability: parsed("durability", &file.durability, parse_durability)?
                    .unwrap_or_default(),
            },
        })
    }

    /// Its settings, for the `--fault` text and the results.
    pub(crate) fn settings(&self) -> Vec<Setting> {
        match self {
            NodeSpec::Kill { nodes } | NodeSpec::Restart { nodes } => {
                vec![Setting::Word("nodes", nodes_text(nodes))]
            }
            NodeSpec::ClockJump { node, rate } => vec![
                Setting::Word("nodes", node.to_string()),
                Setting::Count("rate", *rate),
            ],
            NodeSpec::ServerRestart { durability } => vec![Setting::Word(
                "durability",
                durability_name(*durability).to_owned(),
            )],
        }
    }

    /// The servers it starts for itself: Redlock's nodes (one with its fast clock), or a
    /// restartable Redis.
    pub(crate) fn topology(&self) -> Topology {
        match self {
            NodeSpec::Kill { .. } | NodeSpec::Restart { .. } => {
                Topology::RedisNodes { fake_clock: None }
            }
            NodeSpec::ClockJump { node, rate } => Topology::RedisNodes {
                fake_clock: Some((*node, *rate)),
            },
            NodeSpec::ServerRestart { durability } => Topology::RedisNode(*durability),
        }
    }
}

/// Node indices as written (`3,4`).
fn nodes_text(nodes: &[usize]) -> String {
    let nodes: Vec<String> = nodes.iter().map(usize::to_string).collect();
    nodes.join(",")
}

fn parse_nodes(text: &str) -> Result<Vec<usize>, String> {
    text.split(',')
        .map(|n| {
            n.trim()
                .parse::<usize>()
                .ok()
                .filter(|i| *i < REDLOCK_NODES)
                .ok_or_else(|| {
                    format!(
                        "expected node indices 0..{} separated by commas, got {text:?}",
                        REDLOCK_NODES - 1
                    )
                })
        })
        .collect()
}

fn parse_durability(text: &str) -> Result<Durability, String> {
    match text.trim().replace('_', "-").as_str() {
        "none" => Ok(Durability::None),
        "aof-always" => Ok(Durability::AofAlways),
        other => Err(format!("expected none or aof-always, got {other:?}")),
    }
}

/// A durability as written.
fn durability_name(d: Durability) -> &'static str {
    match d {
        Durability::None => "none",
        Durability::AofAlways => "aof-always",
    }
}

/// A node fault as its family sees it.
type NodeFaultSpec<'a> = Spec<&'a NodeSpec>;

/// A fault on the case's own servers, which it needs; whether to measure what followed.
pub(super) async fn inject(
    spec: &NodeFaultSpec<'_>,
    env: &FaultEnv,
    rec: &mut Record,
) -> Result<bool, NotApplied> {
    let ServerAccess::Own(own) = env.server.clone() else {
        return not_applied(
            rec,
            format!("{} needs servers started for the case", spec.kind),
        );
    };
    run_node_fault(spec, env, rec, own)
        .await
        .or_else(|e| not_applied(rec, format!("{} failed: {e}", spec.kind)))
}

/// Kills, restarts or reports the case's own Redis servers; whether to measure what followed.
async fn run_node_fault(
    spec: &NodeFaultSpec<'_>,
    env: &FaultEnv,
    rec: &mut Record,
    own: Arc<dyn CaseServers>,
) -> Result<bool, String> {
    match spec.family {
        NodeSpec::Kill { nodes } => {
            let (killer, killed) = (own.clone(), nodes.clone());
            rec.target = blocking(move || killer.kill_nodes(&killed)).await?;
            rec.took_effect(format!("killed {}", rec.target));
            if spec.duration.is_some() {
                hold_for(env, spec.duration, rec).await;
                let nodes = nodes.clone();
                blocking(move || own.restart_nodes(&nodes)).await?;
                rec.stop = Some(env.clock.now());
            }
            Ok(true)
        }
        NodeSpec::Restart { nodes } => {
            let nodes = nodes.clone();
            rec.target = blocking(move || own.restart_nodes(&nodes)).await?;
            rec.took_effect(format!("restarted {}", rec.target));
            rec.stop = Some(env.clock.now());
            Ok(true)
        }
        NodeSpec::ServerRestart { .. } => {
            rec.target = blocking(move || own.restart_server()).await?;
            rec.took_effect(format!("restarted {}", rec.target));
            rec.stop = Some(env.clock.now());
            rec.param("restart_ms", (env.clock.now() - rec.start) as f64 / 1e6);
            Ok(true)
        }
        &NodeSpec::ClockJump { node, rate } => {
            // The node runs under libfaketime from its start: the fault lasts the whole case.
            rec.start = env.go;
            rec.target = format!("redis node {node}");
            rec.note(format!(
                "the node's wall clock ran {rate}x as fast (libfaketime) from the case start: its keys expire after 1/{rate} of their TTL"
            ));
            rec.evidence(clock_ahead(own, &[node], rate).await);
            Ok(false)
        }
    }
}

/// How far apart the two readings of a faked node's clock are taken.
const CLOCK_SAMPLE: Duration = Duration::from_millis(250);

/// How far the measured rate of a faked clock may be from the rate asked, as a share of it.
const CLOCK_RATE_TOLERANCE: f64 = 0.25;

/// The evidence that the faked nodes' wall clocks run `rate` times as fast: each node's `TIME`
/// against the real clock, now (the fault's `at`) and [`CLOCK_SAMPLE`] later.
async fn clock_ahead(
    own: Arc<dyn CaseServers>,
    nodes: &[usize],
    rate: u32,
) -> Result<String, String> {
    let read = |own: Arc<dyn CaseServers>, nodes: Vec<usize>| {
        blocking(move || {
            nodes
                .iter()
                .map(|&n| own.node_clock_ahead_ms(n).map(|ms| (n, ms)))
                .collect::<Result<Vec<_>, _>>()
        })
    };
    let started = std::time::Instant::now();
    let first = read(own.clone(), nodes.to_vec()).await?;
    tokio::time::sleep(CLOCK_SAMPLE).await;
    let second = read(own, nodes.to_vec()).await?;
    let elapsed_ms = started.elapsed().as_secs_f64() * 1e3;
    let samples: Vec<(usize, f64, f64)> = first
        .iter()
        .zip(&second)
        .map(|(&(n, a), &(_, b))| (n, a, b))
        .collect();
    clock_evidence(&samples, elapsed_ms, rate)
}

/// Whether each node's clock ran `rate` times as fast, within [`CLOCK_RATE_TOLERANCE`]: `samples`
/// are (node, ms ahead of the real clock, ms ahead `elapsed_ms` later).
fn clock_evidence(
    samples: &[(usize, f64, f64)],
    elapsed_ms: f64,
    rate: u32,
) -> Result<String, String> {
    let asked = f64::from(rate);
    let mut text = Vec::new();
    let mut all_close = !samples.is_empty();
    for &(n, a, b) in samples {
        let measured = 1.0 + (b - a) / elapsed_ms.max(1.0);
        all_close &= (measured - asked).abs() <= CLOCK_RATE_TOLERANCE * asked;
        text.push(format!(
            "node {n}'s TIME was {a:.0} ms ahead of the real clock, then {b:.0} ms {elapsed_ms:.0} ms \
             later: {measured:.1}x as fast (asked {rate}x)"
        ));
    }
    if all_close {
        Ok(text.join("; "))
    } else {
        Err(format!(
            "the clock did not run {rate}x as fast: {}",
            text.join("; ")
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fast_clock_counts_only_at_about_the_rate_asked() {
        // 10x: 2250 ms more ahead over 250 ms of real time.
        let ok = clock_evidence(&[(2, 2333.0, 4583.0)], 250.0, 10).expect("10x");
        assert!(ok.contains("node 2's TIME was 2333 ms ahead"), "{ok}");
        assert!(ok.ends_with("10.0x as fast (asked 10x)"), "{ok}");
        // Ahead, but not running fast (a clock set forward once): it used to count, being 50 ms ahead.
        let stepped = clock_evidence(&[(2, 2333.0, 2334.0)], 250.0, 10).expect_err("1x");
        assert!(
            stepped.starts_with("the clock did not run 10x as fast"),
            "{stepped}"
        );
        // 2x asked, 1.4x seen: outside the tolerance.
        assert!(clock_evidence(&[(1, 0.0, 100.0)], 250.0, 2).is_err());
        assert!(clock_evidence(&[], 250.0, 2).is_err());
    }
}
