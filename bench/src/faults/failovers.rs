//! Failovers, spec and injection: a primary failed over to its replica by hand (`failover`:
//! Redis, PostgreSQL or MySQL, behind the clients' proxies), through Sentinel
//! (`sentinel_failover`), and a Redis Cluster master's failover by kill or by `CLUSTER FAILOVER`
//! (`cluster_master_kill`, `cluster_failover`), each on servers the case starts for itself (a kind
//! offers them as [`ServerFault::Failover`], [`ServerFault::SentinelFailover`] and
//! [`ServerFault::ClusterFailover`]). They strike the server or right after a holder's acquire, and
//! only an acquire after them tested the lock.

use std::time::Duration;

use lockbench_servers::redis_cluster::NODE_TIMEOUT as CLUSTER_NODE_TIMEOUT;
use lockbench_servers::redis_sentinel::DOWN_AFTER as SENTINEL_DOWN_AFTER;
use lockers::Capabilities;

use super::board::HoldEnd;
use super::env::{
    FaultEnv, NotApplied, Record, ServerAccess, Victim, blocking, describe_victim, not_applied,
};
use super::kind::{Aftermath, Failover, Needs, Targets};
use super::spec::{FaultFile, Profile, Setting, Spec, timing};
use super::topology::{self, Topology};
use crate::base::duration::Units;
use crate::base::time_scale::TimeScale;
use crate::kinds::{FailoverReport, ServerFault};
use crate::strategies::Strategy;

/// What the family says of `kind`.
pub(super) fn profile(kind: Failover) -> Profile {
    let failover = Profile {
        targets: Targets::ServerOrHolder,
        aftermath: Aftermath::MovesLock,
        ..Profile::PLAIN
    };
    match kind {
        Failover::Replica => Profile {
            allowed: &["replication_lag"],
            needs: Needs::Offered(ServerFault::Failover),
            proxies: true,
            ..failover
        },
        Failover::Sentinel => Profile {
            needs: Needs::Offered(ServerFault::SentinelFailover),
            of_the_strategy: given_the_sentinels,
            ..failover
        },
        Failover::ClusterMasterKill | Failover::ClusterCommand => Profile {
            needs: Needs::Offered(ServerFault::ClusterFailover),
            of_the_strategy: runs_on_a_cluster,
            ..failover
        },
    }
}

/// A failover's kind with the setting of its own: the delay of a replica's replication link.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FailoverSpec {
    /// `failover`, its replica's link from the primary delayed by `replication_lag`.
    Replica {
        /// The delay of the replication link from the primary to the replica.
        replication_lag: Duration,
    },
    /// `sentinel_failover`.
    Sentinel,
    /// `cluster_master_kill`.
    ClusterMasterKill,
    /// `cluster_failover`.
    ClusterCommand,
}

impl FailoverSpec {
    /// Reads and checks the settings of a failover of `kind` as written (no replication lag by
    /// default).
    pub(crate) fn read(kind: Failover, file: &FaultFile, units: Units) -> Result<Self, String> {
        Ok(match kind {
            Failover::Replica => FailoverSpec::Replica {
                replication_lag: timing("replication_lag", &file.replication_lag, units)?
                    .unwrap_or(Duration::ZERO),
            },
            Failover::Sentinel => FailoverSpec::Sentinel,
            Failover::ClusterMasterKill => FailoverSpec::ClusterMasterKill,
            Failover::ClusterCommand => FailoverSpec::ClusterCommand,
        })
    }

    /// The kind.
    pub(crate) fn kind(&self) -> Failover {
        match self {
            FailoverSpec::Replica { .. } => Failover::Replica,
            FailoverSpec::Sentinel => Failover::Sentinel,
            FailoverSpec::ClusterMasterKill => Failover::ClusterMasterKill,
            FailoverSpec::ClusterCommand => Failover::ClusterCommand,
        }
    }

    /// Its settings, for the `--fault` text and the results.
    pub(crate) fn settings(&self) -> Vec<Setting> {
        match *self {
            FailoverSpec::Replica { replication_lag } => {
                vec![Setting::Timing("replication_lag", replication_lag)]
            }
            _ => Vec::new(),
        }
    }

    /// The same with its timings divided by `factor` (`--time-scale`).
    pub(crate) fn scaled(&self, factor: TimeScale) -> Self {
        match *self {
            FailoverSpec::Replica { replication_lag } => FailoverSpec::Replica {
                replication_lag: replication_lag / factor,
            },
            other => other,
        }
    }

    /// The servers it starts for itself (it kills one of them).
    pub(crate) fn topology(&self) -> Topology {
        match self {
            FailoverSpec::Replica { .. } => Topology::Pair,
            FailoverSpec::Sentinel => Topology::RedisSentinel,
            FailoverSpec::ClusterMasterKill | FailoverSpec::ClusterCommand => {
                Topology::RedisCluster
            }
        }
    }
}

/// A Sentinel failover moves a strategy's lock only if its library asks the Sentinels for the
/// primary (a peer's adapter is given one server's address).
fn given_the_sentinels(strategy: &Strategy, _: &Capabilities) -> Result<(), String> {
    if crate::strategies::is_peer(strategy.id) {
        return Err("its library is given one server's address, not the Sentinels'".to_owned());
    }
    Ok(())
}

/// A cluster's failover moves a strategy's lock only if it runs on a Redis Cluster.
fn runs_on_a_cluster(strategy: &Strategy, _: &Capabilities) -> Result<(), String> {
    if crate::strategies::runs_on_redis_cluster(strategy.id) {
        return Ok(());
    }
    Err(format!(
        "it does not run on a Redis Cluster ({})",
        crate::strategies::NOT_ON_REDIS_CLUSTER
    ))
}

/// A failover to the replica: by hand, through Sentinel, or of a cluster's master (by kill or by
/// `CLUSTER FAILOVER`).
pub(super) async fn inject(
    spec: &Spec<&FailoverSpec>,
    env: &FaultEnv,
    rec: &mut Record,
    victim: Option<&Victim>,
) -> Result<bool, NotApplied> {
    let switch = spec.family.kind();
    let ServerAccess::Own(own) = env.server.clone() else {
        return not_applied(
            rec,
            format!("{} needs servers started for the case", spec.kind),
        );
    };
    let kind = spec.kind;
    let server = own.kind().name();
    let proxies = env.proxies.clone();
    // In a cluster, the master of the target's lock (lock 0 for `target = "server"`): every
    // lockbench Redis strategy tags a lock's keys with `{name}`, so this key shares their slot.
    let key = victim.and_then(|v| v.held).map_or(0, |(key, _)| key);
    let slot_key = format!("{{{}{key}}}", env.key_prefix);
    // Who held what as the failover began, by the holders' own reports.
    let holders = env.board.holders();
    let began = env.clock.now();
    let failover = move || match switch {
        Failover::Sentinel => own.sentinel_failover(),
        Failover::ClusterMasterKill => own.cluster_failover(&slot_key, true),
        Failover::ClusterCommand => own.cluster_failover(&slot_key, false),
        Failover::Replica => topology::failover(own.as_ref(), proxies.as_deref()),
    };
    let report = match blocking(failover).await {
        Ok(report) => report,
        Err(e) => return not_applied(rec, format!("{kind} failed: {e}")),
    };
    let promoted = env.clock.now();
    record_failover(switch, server, key, &report, rec);
    match lock_at_stake(env, switch, &report, &holders, (began, promoted)).await {
        Ok(Some(at_stake)) => {
            let promoted = rec.evidence.take().unwrap_or_default();
            rec.took_effect(format!("{promoted}; {at_stake}"));
        }
        Ok(None) => {}
        Err(why) => return not_applied(rec, why),
    }
    if let Some(v) = victim {
        rec.target = format!(
            "{} (right after {} acquired)",
            rec.target,
            describe_victim(v)
        );
        rec.param("client", v.client);
        if let Some((key, _)) = v.held {
            rec.param("key", key);
        }
    }
    Ok(true)
}

/// Whether a failover put a lock at stake: the evidence that it did (none to add for a manual
/// cluster failover), or why not. A
/// failover that killed the primary compared the lock state the primary held just before it died
/// with the new primary's: none held (every task had ended and released) means no lock was at
/// stake. A promotion by hand, which is over in milliseconds, must also find a hold open across it
/// (begun before the failover `window` began, not ended before the promotion, by its holder's own
/// reports): a holder whose task ended during the failover's first milliseconds had nothing for the
/// new primary to lose, and its case, safe or not, says nothing of the lock's promise across a
/// failover. (Sentinel and cluster promotions take seconds, longer than the tasks: their holder
/// was struck at the kill, by [`check_struck_hold`], and its lock stays on the server until it
/// expires.) A manual cluster failover kills nothing and compares nothing: its applied stays
/// "promoted".
async fn lock_at_stake(
    env: &FaultEnv,
    switch: Failover,
    report: &FailoverReport,
    holders: &[(u32, u32, u64)],
    (began, promoted): (u64, u64),
) -> Result<Option<String>, String> {
    if matches!(switch, Failover::ClusterCommand) {
        return Ok(None);
    }
    if report.primary_keys == 0 {
        return Err(format!(
            "replica {} promoted, but the primary held no lock state when it died: no lock was at \
             stake",
            report.new_primary
        ));
    }
    let state = format!(
        "of the {} keys the primary held when it died, {} were missing and {} stale on the new \
         primary",
        report.primary_keys, report.missing_keys, report.stale_keys
    );
    let ms = |ns: u64| ns as f64 / 1e6;
    let mut held = None;
    if matches!(switch, Failover::Replica) {
        for &(client, key, since) in holders.iter().filter(|h| h.2 <= began) {
            match env.board.hold_end(client, key, since, &env.stop).await {
                HoldEnd::Ended(end) if end >= promoted => {
                    held = Some(format!(
                        "client {client} held key {key} across the promotion (from {:.1} ms before \
                         the failover began to {:.1} ms after the promotion, by its own reports)",
                        ms(began - since),
                        ms(end - promoted)
                    ));
                    break;
                }
                HoldEnd::Died => {
                    held = Some(format!(
                        "client {client} held key {key} across the promotion (its worker died \
                         holding it)"
                    ));
                    break;
                }
                HoldEnd::Ended(_) | HoldEnd::Unknown => {}
            }
        }
        if held.is_none() {
            return Err(format!(
                "replica {} promoted {:.1} ms after the failover began, but no client held a lock \
                 across the promotion by its own reports ({} holder(s) when it began, every hold \
                 ended before the promotion or unreported); {state}",
                report.new_primary,
                ms(promoted - began),
                holders.len()
            ));
        }
    }
    Ok(Some(match held {
        Some(held) => format!("{held}; {state}"),
        None => state,
    }))
}

/// What a failover of `kind` of `server`s (on the master of lock `key`, in a cluster) did, as its
/// record says it.
fn record_failover(
    switch: Failover,
    server: &str,
    key: u32,
    report: &FailoverReport,
    rec: &mut Record,
) {
    let cluster = matches!(
        switch,
        Failover::ClusterMasterKill | Failover::ClusterCommand
    );
    rec.took_effect(format!("replica {} promoted", report.new_primary));
    rec.target = if cluster {
        format!(
            "redis cluster master {} → replica {} (slot of lock {key})",
            report.old_primary, report.new_primary
        )
    } else {
        format!(
            "{server} primary {} → replica {}",
            report.old_primary, report.new_primary
        )
    };
    // A manual cluster failover kills nothing: the replica has every write.
    if switch != Failover::ClusterCommand {
        if let Some(bytes) = report.unreplicated_bytes {
            rec.param("unreplicated_bytes", bytes);
        }
        rec.param("primary_keys", report.primary_keys);
        rec.param("keys_missing_on_replica", report.missing_keys);
        rec.param("keys_stale_on_replica", report.stale_keys);
    }
    if let Some(after) = report.promoted_after {
        rec.param("promoted_after_ms", after.as_secs_f64() * 1e3);
        let (name, bound) = if cluster {
            ("cluster_node_timeout_ms", CLUSTER_NODE_TIMEOUT)
        } else {
            ("sentinel_down_after_ms", SENTINEL_DOWN_AFTER)
        };
        rec.param(name, bound.as_secs_f64() * 1e3);
    }
}
