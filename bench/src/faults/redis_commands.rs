//! Redis commands to the run's one primary, spec and injection: `CLIENT PAUSE` (`client_pause`),
//! `CLIENT KILL TYPE pubsub` (`pubsub_kill`) and a Lua script that keeps Redis busy
//! (`busy_script`). A kind offers each as an ability ([`ServerFault::ClientPause`],
//! [`ServerFault::PubsubKill`], [`ServerFault::BusyScript`]: the Redis and Valkey kinds'
//! [`REDIS_PRIMARY_COMMANDS`](crate::kinds::REDIS_PRIMARY_COMMANDS)); `pubsub_kill` also needs a
//! strategy whose waiters listen on pub/sub.

use std::net::SocketAddr;
use std::time::Duration;

use lockbench_servers::probe::resp_command;
use lockers::Capabilities;

use super::env::{
    FaultEnv, NotApplied, Record, ServerAccess, Victim, blocking, describe_victim, hold_for,
    lasts_until, not_applied, sleep_until,
};
use super::kind::{Aftermath, Needs, RedisCommand, Targets};
use super::spec::{Profile, Spec};
use crate::base::clock::duration_ns;
use crate::kinds::{ServerFault, ServerKindExt};
use crate::strategies::Strategy;

/// What the family says of `kind`.
pub(super) fn profile(kind: RedisCommand) -> Profile {
    match kind {
        RedisCommand::ClientPause => Profile {
            allowed: &["duration"],
            required: &["duration"],
            needs: Needs::Offered(ServerFault::ClientPause),
            ..Profile::PLAIN
        },
        RedisCommand::PubsubKill => Profile {
            allowed: &["duration", "every"],
            aftermath: Aftermath::SlowsDown,
            needs: Needs::Offered(ServerFault::PubsubKill),
            of_the_strategy: listens_on_pubsub,
            ..Profile::PLAIN
        },
        RedisCommand::BusyScript => Profile {
            allowed: &["duration", "after_acquire"],
            required: &["duration"],
            targets: Targets::ServerOrHolder,
            needs: Needs::Offered(ServerFault::BusyScript),
            ..Profile::PLAIN
        },
    }
}

/// Killing pub/sub connections does something only to a strategy whose waiters hold one.
fn listens_on_pubsub(_: &Strategy, caps: &Capabilities) -> Result<(), String> {
    if caps.wait_notify {
        Ok(())
    } else {
        Err("it uses no pub/sub connection (its waiters poll)".to_owned())
    }
}

/// Sends the command of `kind` to the run's Redis primary (the busy script while `victim` holds, if
/// aimed at one); whether to measure what followed.
pub(super) async fn inject(
    kind: RedisCommand,
    spec: &Spec<()>,
    env: &FaultEnv,
    rec: &mut Record,
    (victim, t0): (Option<&Victim>, u64),
) -> Result<bool, NotApplied> {
    match kind {
        RedisCommand::ClientPause => client_pause(spec, env, rec, t0).await,
        RedisCommand::PubsubKill => pubsub_kill(spec, env, rec, t0).await,
        RedisCommand::BusyScript => busy(spec, env, rec, victim).await,
    }
}

const COMMAND_TIMEOUT: Duration = Duration::from_secs(2);

/// The Redis address the commands of `fault` go to.
fn redis_socket(server: &ServerAccess, fault: ServerFault) -> Option<SocketAddr> {
    match server {
        ServerAccess::Shared { kind, socket, .. } => kind.faults().offers(fault).then_some(*socket),
        ServerAccess::Own(own) => own.redis_primary(),
        ServerAccess::None => None,
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
    spec: &Spec<()>,
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
    spec: &Spec<()>,
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
    spec: &Spec<()>,
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

/// `CLIENT KILL TYPE pubsub`, once or every `every` during `duration`; (commands sent, connections
/// killed).
async fn pubsub_kills(spec: &Spec<()>, env: &FaultEnv, socket: SocketAddr, t0: u64) -> (u64, u64) {
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
