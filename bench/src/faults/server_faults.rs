//! Faults on the server: SIGSTOP/SIGCONT of its process (`pause_server`), Redis `CLIENT PAUSE`
//! (`client_pause`) and `CLIENT KILL TYPE pubsub` (`pubsub_kill`), a Lua script that keeps Redis busy
//! (`busy_script`), a Redis failover to the replica (`failover`, through Sentinel:
//! `sentinel_failover`), a Redis Cluster master's failover by kill or by `CLUSTER FAILOVER`
//! (`cluster_master_kill`, `cluster_failover`), the kill of a cluster's leader
//! (`leader_kill`), kills and restarts of Redlock's nodes (`node_kill`, `node_restart`; `clock_jump` is
//! set up when its node starts) and the restart of a single Redis with or without persistence
//! (`server_restart`), and the end of a holder's session from the server (`terminate_session`:
//! PostgreSQL's `pg_terminate_backend`, MySQL's `KILL CONNECTION`).

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use lockbench_servers::probe::resp_command;
use lockbench_servers::redis_cluster::NODE_TIMEOUT as CLUSTER_NODE_TIMEOUT;
use lockbench_servers::redis_sentinel::DOWN_AFTER as SENTINEL_DOWN_AFTER;

use super::board::HoldEnd;
use super::env::{
    FaultEnv, Record, ServerAccess, Victim, blocking, check_struck_hold, describe_victim, hold_for,
    lasts_until, measure_any, measure_victim, pick_client, seen_in_state, sleep_until,
};
use super::topology;
use crate::base::clock::duration_ns;
use crate::kinds::{CaseServers, FailoverReport};
use crate::kinds::{ServerFault, ServerKindExt};
use crate::workload::faults::{FaultKind, FaultSpec, Target};

const COMMAND_TIMEOUT: Duration = Duration::from_secs(2);

/// The Redis address the commands of `fault` go to.
fn redis_socket(server: &ServerAccess, fault: ServerFault) -> Option<SocketAddr> {
    match server {
        ServerAccess::Shared { kind, socket, .. } => kind.faults().offers(fault).then_some(*socket),
        ServerAccess::Own(own) => own.redis_primary(),
        ServerAccess::None => None,
    }
}

/// Signals a server's process group.
fn signal_group(pid: u32, signal: libc::c_int) -> Result<(), String> {
    let pgid = i32::try_from(pid).map_err(|e| e.to_string())?;
    // SAFETY: kill(2) has no memory-safety preconditions; servers lockbench starts lead their own
    // process group and stay alive (unreaped) while the case runs.
    if unsafe { libc::kill(-pgid, signal) } == 0 {
        Ok(())
    } else {
        Err(format!(
            "signal {signal} to server {pid}: {}",
            std::io::Error::last_os_error()
        ))
    }
}

async fn redis_command(socket: SocketAddr, args: Vec<String>) -> Result<String, String> {
    redis_command_within(socket, args, COMMAND_TIMEOUT).await
}

async fn redis_command_within(
    socket: SocketAddr,
    args: Vec<String>,
    timeout: Duration,
) -> Result<String, String> {
    blocking(move || {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        resp_command(socket, &args, timeout).map_err(|e| e.to_string())
    })
    .await
}

/// Busy-loops on the server's own clock until `ARGV[1]` ms have passed (a script that only reads,
/// as the long scripts of redisson#3332 were to the lock's clients: everything else waits).
const BUSY_SCRIPT: &str = "local s = redis.call('TIME') local b = s[1] * 1000 + s[2] / 1000 \
    while true do local n = redis.call('TIME') \
    if n[1] * 1000 + n[2] / 1000 - b >= tonumber(ARGV[1]) then return 1 end end";

/// Keeps the Redis at `socket` busy for `length`: other clients are answered `BUSY` after 100 ms
/// (`lua-time-limit`, alias of Redis 7's `busy-reply-threshold`, lowered for the script and then set
/// back to what it was).
async fn busy_script(socket: SocketAddr, length: Duration) -> Result<(), String> {
    let limit = |value: &str| {
        ["CONFIG", "SET", "lua-time-limit", value]
            .map(str::to_owned)
            .to_vec()
    };
    let get = ["CONFIG", "GET", "lua-time-limit"]
        .map(str::to_owned)
        .to_vec();
    // The reply is the name and the value, one per line.
    let before = redis_command(socket, get).await?;
    let before = before.lines().nth(1).unwrap_or("5000").to_owned();
    redis_command(socket, limit("100")).await?;
    let ms = length.as_millis().to_string();
    let args = ["EVAL", BUSY_SCRIPT, "0", &ms].map(str::to_owned).to_vec();
    let ran = redis_command_within(socket, args, length + COMMAND_TIMEOUT).await;
    redis_command(socket, limit(&before)).await?;
    ran.map(drop)
}

/// A fault that was not applied; why is on its record.
struct NotApplied;

/// Notes on `rec` that the fault was not applied, and why.
fn not_applied<T>(rec: &mut Record, why: impl Into<String>) -> Result<T, NotApplied> {
    rec.not_applied(why);
    Err(NotApplied)
}

/// Applies a server fault, lifts it, and measures what followed.
pub(super) async fn apply(spec: &FaultSpec, env: &FaultEnv, rec: &mut Record) {
    let Ok(victim) = strike_after_acquire(spec, env, rec).await else {
        return;
    };
    let cursor = env.board.cursor();
    let t0 = env.clock.now();
    rec.start = t0;
    let applied = match spec.kind {
        FaultKind::PauseServer => pause_server(spec, env, rec).await,
        FaultKind::ClientPause => client_pause(spec, env, rec, t0).await,
        FaultKind::PubsubKill => pubsub_kill(spec, env, rec, t0).await,
        FaultKind::BusyScript => busy(spec, env, rec, victim.as_ref()).await,
        FaultKind::Failover => failover(spec, env, rec, victim.as_ref(), Switch::Replica).await,
        FaultKind::SentinelFailover => {
            failover(spec, env, rec, victim.as_ref(), Switch::Sentinel).await
        }
        FaultKind::ClusterMasterKill => {
            failover(spec, env, rec, victim.as_ref(), Switch::ClusterKill).await
        }
        FaultKind::ClusterFailover => {
            failover(spec, env, rec, victim.as_ref(), Switch::ClusterCommand).await
        }
        FaultKind::LeaderKill => leader_kill(env, rec).await,
        FaultKind::TerminateSession => terminate_session(env, rec, victim.as_ref()).await,
        FaultKind::NodeKill => node_fault(spec, env, rec, NodeFault::Kill).await,
        FaultKind::NodeRestart => node_fault(spec, env, rec, NodeFault::Restart).await,
        FaultKind::ClockJump => node_fault(spec, env, rec, NodeFault::ClockJump).await,
        FaultKind::ServerRestart => node_fault(spec, env, rec, NodeFault::ServerRestart).await,
        // Applied by the worker and network fault runners.
        FaultKind::PauseWorker
        | FaultKind::CrashWorker
        | FaultKind::StarveWorker
        | FaultKind::CpuHog
        | FaultKind::CgroupQuota
        | FaultKind::ProxyDelay
        | FaultKind::ProxyBlackhole
        | FaultKind::ProxyReset
        | FaultKind::KeepalivePartition => Ok(false),
    };
    let Ok(measure) = applied else {
        return;
    };
    // A fault aimed at a holder (a failover or a busy script right after its acquire) must have
    // struck while that hold lasted, or no lock was at stake.
    if let Some(v) = &victim {
        check_struck_hold(env, spec.target, v, t0, rec).await;
    }
    match victim {
        Some(v) => measure_victim(env, v, cursor, t0, rec).await,
        None if measure => measure_any(env, cursor, t0, rec).await,
        None => {}
    }
}

/// The holder a fault aimed at one strikes (right after its acquire, or `after_acquire` later);
/// none for a fault on the server as a whole.
async fn strike_after_acquire(
    spec: &FaultSpec,
    env: &FaultEnv,
    rec: &mut Record,
) -> Result<Option<Victim>, NotApplied> {
    // A failover aimed at a holder strikes right after that client's acquire.
    let victim = if spec.target == Target::Holder {
        let Some(v) = pick_client(env, spec.target, rec.start).await else {
            return not_applied(rec, "no client acquired a lock before the case ended");
        };
        Some(v)
    } else {
        None
    };
    if let (
        Some(after),
        Some(Victim {
            held: Some((_, acquired)),
            ..
        }),
    ) = (spec.after_acquire, &victim)
        && !sleep_until(env, acquired + duration_ns(after)).await
    {
        return not_applied(rec, "the case ended before after_acquire");
    }
    Ok(victim)
}

/// SIGSTOP to the server's process group for the fault's length, then SIGCONT.
async fn pause_server(
    spec: &FaultSpec,
    env: &FaultEnv,
    rec: &mut Record,
) -> Result<bool, NotApplied> {
    let target = match &env.server {
        ServerAccess::Shared {
            pid: Some(pid),
            kind,
            socket,
        } => Some((*pid, format!("{} {socket}", kind.name()))),
        ServerAccess::Own(own) => {
            let own = own.clone();
            blocking(move || Ok(own.serving_pid())).await.ok().flatten()
        }
        ServerAccess::Shared { pid: None, .. } | ServerAccess::None => None,
    };
    let Some((pid, what)) = target else {
        return not_applied(
            rec,
            "the server was not started by lockbench (no process to pause)",
        );
    };
    rec.target = what;
    rec.start = env.clock.now();
    if let Err(e) = signal_group(pid, libc::SIGSTOP) {
        return not_applied(rec, e);
    }
    rec.evidence(seen_in_state(pid, 'T', "server process").await);
    hold_for(env, spec.duration, rec).await;
    // The clock is read before the signal: the server may run again the moment it is sent.
    let resumed = env.clock.now();
    if let Err(e) = signal_group(pid, libc::SIGCONT) {
        rec.note(e);
    }
    rec.stop = Some(resumed);
    Ok(true)
}

/// The Redis server the commands of `fault` go to, named as the fault's target.
fn redis_target(
    env: &FaultEnv,
    rec: &mut Record,
    fault: ServerFault,
) -> Result<SocketAddr, NotApplied> {
    let Some(socket) = redis_socket(&env.server, fault) else {
        return not_applied(rec, "no Redis server");
    };
    rec.target = format!("redis {socket}");
    Ok(socket)
}

/// Redis `CLIENT PAUSE … ALL` for the fault's length, seen by a PING from another connection.
async fn client_pause(
    spec: &FaultSpec,
    env: &FaultEnv,
    rec: &mut Record,
    t0: u64,
) -> Result<bool, NotApplied> {
    let socket = redis_target(env, rec, ServerFault::ClientPause)?;
    let ms = spec.duration.unwrap_or_default().as_millis().to_string();
    let args = ["CLIENT", "PAUSE", &ms, "ALL"].map(str::to_owned).to_vec();
    if let Err(e) = redis_command(socket, args).await {
        return not_applied(rec, format!("CLIENT PAUSE failed: {e}"));
    }
    let length = spec.duration.unwrap_or_default();
    let ping = tokio::spawn(ping_wait(socket, length));
    hold_for(env, spec.duration, rec).await;
    if env.stop.is_set() {
        let args = ["CLIENT", "UNPAUSE"].map(str::to_owned).to_vec();
        let _ = redis_command(socket, args).await;
    }
    rec.evidence(match ping.await {
        Ok(Ok(waited)) if waited >= (length / 2).min(PAUSED_PING_MIN) => Ok(format!(
            "a PING from another connection waited {:.0} ms for its answer",
            waited.as_secs_f64() * 1e3
        )),
        Ok(Ok(waited)) => Err(format!(
            "a PING from another connection was answered in {:.0} ms: the server did not pause",
            waited.as_secs_f64() * 1e3
        )),
        Ok(Err(e)) => Err(format!("PING during CLIENT PAUSE: {e}")),
        Err(e) => Err(format!("PING during CLIENT PAUSE: {e}")),
    });
    rec.stop = Some(
        env.clock
            .now()
            .min(t0 + duration_ns(spec.duration.unwrap_or_default())),
    );
    Ok(true)
}

/// Redis `CLIENT KILL TYPE pubsub`, as often as the fault says.
async fn pubsub_kill(
    spec: &FaultSpec,
    env: &FaultEnv,
    rec: &mut Record,
    t0: u64,
) -> Result<bool, NotApplied> {
    let socket = redis_target(env, rec, ServerFault::PubsubKill)?;
    let (kills, killed) = pubsub_kills(spec, env, socket, t0).await;
    if let Some(d) = spec.duration {
        lasts_until(env, t0, t0 + duration_ns(d), rec).await;
    }
    rec.param("kills", kills);
    rec.param("connections_killed", killed);
    rec.evidence(if killed > 0 {
        Ok(format!("the server killed {killed} pub/sub connections"))
    } else {
        Err("the server killed no pub/sub connection".to_owned())
    });
    rec.stop = spec
        .duration
        .map(|d| (t0 + duration_ns(d)).min(env.clock.now()));
    Ok(false)
}

/// A Lua script that keeps Redis busy for the fault's length (while `victim` holds, if aimed at one).
async fn busy(
    spec: &FaultSpec,
    env: &FaultEnv,
    rec: &mut Record,
    victim: Option<&Victim>,
) -> Result<bool, NotApplied> {
    let Some(socket) = redis_socket(&env.server, ServerFault::BusyScript) else {
        return not_applied(rec, "no Redis server");
    };
    rec.target = match victim {
        Some(v) => format!("redis {socket} (while {} held)", describe_victim(v)),
        None => format!("redis {socket}"),
    };
    if let Some(v) = victim {
        rec.param("client", v.client);
    }
    let length = spec.duration.unwrap_or_default();
    rec.evidence(match busy_script(socket, length).await {
        Ok(()) => Ok(format!(
            "the script kept the server busy for {} ms",
            length.as_millis()
        )),
        Err(e) => Err(format!("busy script failed: {e}")),
    });
    rec.stop = Some(env.clock.now());
    Ok(true)
}

/// How a failover moves the primary.
#[derive(Debug, Clone, Copy)]
enum Switch {
    /// To the replica, by hand (Redis or PostgreSQL).
    Replica,
    /// Through Redis Sentinel.
    Sentinel,
    /// Of a cluster's master, by killing it.
    ClusterKill,
    /// Of a cluster's master, by `CLUSTER FAILOVER`.
    ClusterCommand,
}

/// A failover to the replica: by hand, through Sentinel, or of a cluster's master (by kill or by
/// `CLUSTER FAILOVER`).
async fn failover(
    spec: &FaultSpec,
    env: &FaultEnv,
    rec: &mut Record,
    victim: Option<&Victim>,
    switch: Switch,
) -> Result<bool, NotApplied> {
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
        Switch::Sentinel => own.sentinel_failover(),
        Switch::ClusterKill => own.cluster_failover(&slot_key, true),
        Switch::ClusterCommand => own.cluster_failover(&slot_key, false),
        Switch::Replica => topology::failover(own.as_ref(), proxies.as_deref()),
    };
    let report = match blocking(failover).await {
        Ok(report) => report,
        Err(e) => return not_applied(rec, format!("{kind} failed: {e}")),
    };
    let promoted = env.clock.now();
    record_failover(kind, server, key, &report, rec);
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
    switch: Switch,
    report: &FailoverReport,
    holders: &[(u32, u32, u64)],
    (began, promoted): (u64, u64),
) -> Result<Option<String>, String> {
    if matches!(switch, Switch::ClusterCommand) {
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
    if matches!(switch, Switch::Replica) {
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
    kind: FaultKind,
    server: &str,
    key: u32,
    report: &FailoverReport,
    rec: &mut Record,
) {
    let cluster = matches!(
        kind,
        FaultKind::ClusterMasterKill | FaultKind::ClusterFailover
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
    if kind != FaultKind::ClusterFailover {
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

/// Ends the sessions holding `victim`'s lock from the server (its kind's `end_sessions`:
/// `pg_terminate_backend`, `KILL CONNECTION`, as lockbench's administrator): what an administrator,
/// a session timeout or a connection pooler's reaper does.
async fn terminate_session(
    env: &FaultEnv,
    rec: &mut Record,
    victim: Option<&Victim>,
) -> Result<bool, NotApplied> {
    let Some((client, key)) = victim.and_then(|v| Some((v.client, v.held?.0))) else {
        return not_applied(
            rec,
            "terminate_session needs a holder (target = \"holder\")",
        );
    };
    let (kind, socket, end_sessions) = match &env.server {
        ServerAccess::Shared { kind, socket, .. } => match kind.faults().end_sessions {
            Some(end) => (*kind, *socket, end),
            None => {
                return not_applied(rec, format!("no session lock on {}", kind.name()));
            }
        },
        ServerAccess::Own(_) | ServerAccess::None => {
            return not_applied(rec, "terminate_session needs the run's PostgreSQL or MySQL");
        }
    };
    let lock = format!("{}{key}", env.key_prefix);
    rec.target = format!(
        "{} {socket}: the session of client {client} holding key {key}",
        kind.name()
    );
    rec.param("client", client);
    rec.param("key", key);
    let lock_c = lock.clone();
    match blocking(move || end_sessions(socket, &lock_c)).await {
        Ok(ended) if ended > 0 => {
            rec.param("sessions_ended", ended);
            rec.took_effect(format!(
                "the server ended {ended} session(s) holding {lock}"
            ));
        }
        Ok(_) => return not_applied(rec, format!("no session held {lock} when it struck")),
        Err(e) => return not_applied(rec, format!("ending the sessions failed: {e}")),
    }
    rec.stop = Some(env.clock.now());
    Ok(true)
}

/// Kills the leader of the case's own cluster and waits for a new one.
async fn leader_kill(env: &FaultEnv, rec: &mut Record) -> Result<bool, NotApplied> {
    let ServerAccess::Own(own) = env.server.clone() else {
        return not_applied(rec, "leader_kill needs a cluster started for the case");
    };
    match blocking(move || own.kill_leader()).await {
        Ok((what, election)) => {
            rec.took_effect(format!("killed {what}"));
            rec.target = what;
            match election {
                Some(d) => rec.param("new_leader_ms", d.as_secs_f64() * 1e3),
                None => rec.note("no new leader within 10 s"),
            }
        }
        Err(e) => return not_applied(rec, format!("leader kill failed: {e}")),
    }
    Ok(true)
}

/// What a fault on the case's own Redis nodes does.
#[derive(Debug, Clone, Copy)]
enum NodeFault {
    /// Kill nodes (and restart them after the fault's duration, if it has one).
    Kill,
    /// Restart nodes.
    Restart,
    /// Run a node's clock fast (from the case's start).
    ClockJump,
    /// Restart the server.
    ServerRestart,
}

/// A fault on the case's own servers, which it needs; whether to measure what followed.
async fn node_fault(
    spec: &FaultSpec,
    env: &FaultEnv,
    rec: &mut Record,
    fault: NodeFault,
) -> Result<bool, NotApplied> {
    let ServerAccess::Own(own) = env.server.clone() else {
        return not_applied(
            rec,
            format!("{} needs servers started for the case", spec.kind),
        );
    };
    run_node_fault(spec, env, rec, own, fault)
        .await
        .or_else(|e| not_applied(rec, format!("{} failed: {e}", spec.kind)))
}

/// Kills, restarts or reports the case's own Redis servers; whether to measure what followed.
async fn run_node_fault(
    spec: &FaultSpec,
    env: &FaultEnv,
    rec: &mut Record,
    own: Arc<dyn CaseServers>,
    fault: NodeFault,
) -> Result<bool, String> {
    let nodes = spec.nodes.clone();
    match fault {
        NodeFault::Kill => {
            let killer = own.clone();
            rec.target = blocking(move || killer.kill_nodes(&nodes)).await?;
            rec.took_effect(format!("killed {}", rec.target));
            if spec.duration.is_some() {
                hold_for(env, spec.duration, rec).await;
                let nodes = spec.nodes.clone();
                blocking(move || own.restart_nodes(&nodes)).await?;
                rec.stop = Some(env.clock.now());
            }
            Ok(true)
        }
        NodeFault::Restart => {
            rec.target = blocking(move || own.restart_nodes(&nodes)).await?;
            rec.took_effect(format!("restarted {}", rec.target));
            rec.stop = Some(env.clock.now());
            Ok(true)
        }
        NodeFault::ServerRestart => {
            rec.target = blocking(move || own.restart_server()).await?;
            rec.took_effect(format!("restarted {}", rec.target));
            rec.stop = Some(env.clock.now());
            rec.param("restart_ms", (env.clock.now() - rec.start) as f64 / 1e6);
            Ok(true)
        }
        NodeFault::ClockJump => {
            // The node runs under libfaketime from its start: the fault lasts the whole case.
            rec.start = env.go;
            rec.target = format!("redis node {}", spec.nodes_text());
            rec.note(format!(
                "the node's wall clock ran {}x as fast (libfaketime) from the case start: its keys expire after 1/{} of their TTL",
                spec.rate, spec.rate
            ));
            rec.evidence(clock_ahead(own, &spec.nodes, spec.rate).await);
            Ok(false)
        }
    }
}

/// A PING answered faster than this (or half the pause, if shorter) was not held by `CLIENT PAUSE`
/// (one on loopback takes well under a millisecond).
const PAUSED_PING_MIN: Duration = Duration::from_millis(50);

/// How long a PING from a fresh connection waits for its answer (at most `pause` and
/// [`COMMAND_TIMEOUT`]): the evidence that `CLIENT PAUSE` held clients back.
async fn ping_wait(socket: SocketAddr, pause: Duration) -> Result<Duration, String> {
    let sent = std::time::Instant::now();
    redis_command_within(socket, vec!["PING".to_owned()], pause + COMMAND_TIMEOUT).await?;
    Ok(sent.elapsed())
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

/// `CLIENT KILL TYPE pubsub`, once or every `every` during `duration`; (commands sent, connections
/// killed).
async fn pubsub_kills(spec: &FaultSpec, env: &FaultEnv, socket: SocketAddr, t0: u64) -> (u64, u64) {
    let end = spec.duration.map(|d| t0 + duration_ns(d));
    let (mut kills, mut killed) = (0u64, 0u64);
    loop {
        let args = ["CLIENT", "KILL", "TYPE", "pubsub"]
            .map(str::to_owned)
            .to_vec();
        if let Ok(reply) = redis_command(socket, args).await {
            kills += 1;
            killed += reply.trim().parse::<u64>().unwrap_or(0);
        }
        let (Some(every), Some(end)) = (spec.every, end) else {
            break;
        };
        let next = env.clock.now() + duration_ns(every);
        if next >= end || !sleep_until(env, next).await {
            break;
        }
    }
    (kills, killed)
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
