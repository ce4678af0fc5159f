//! Runs a case's faults on schedule: each fault waits for its `at`, picks its target (for `holder`:
//! the first client to acquire a lock from then on, checked to still hold it), applies the fault,
//! lifts it after `duration` (at once if the case ends first: a paused worker is always resumed),
//! then measures what followed from the hold events — when the targeted holder noticed its loss,
//! and when the lock was available again — and returns its [`FaultWindow`]. Faults run concurrently,
//! each in its own task; blocking calls (server commands, kills) run off the async threads.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use lockbench_reports::model::FaultWindow;
use lockbench_servers::Fault;
use lockbench_servers::probe::resp_command;
use tokio::task::JoinSet;

use super::board::HoldBoard;
use super::cgroup::CpuQuota;
use super::proxies::{self, ClientProxies};
use super::spec::{FaultKind, FaultScope, FaultSpec, Target};
use super::topology::CaseServers;
use super::workers::{Crash, WorkerControl};
use crate::backends::ServerKind;
use crate::clock::{MonoClock, duration_ns};
use crate::driver::holds::{HoldChange, HoldEvent};
use crate::driver::oracle::EndedBy;
use crate::driver::protocol::ToChild;
use crate::driver::stop::StopSignal;

const COMMAND_TIMEOUT: Duration = Duration::from_secs(2);

/// The server a case's faults act on.
#[derive(Debug, Clone)]
pub enum ServerAccess {
    /// None (the strategy has no server).
    None,
    /// The run's shared server; `pid` when lockbench started it.
    Shared {
        /// Which server.
        kind: ServerKind,
        /// Where it listens.
        socket: SocketAddr,
        /// Its process (a process-group leader), when lockbench started it.
        pid: Option<u32>,
    },
    /// Servers started for this case.
    Own(Arc<CaseServers>),
}

/// Everything the fault tasks of one case share.
#[derive(Debug, Clone)]
pub struct FaultEnv {
    /// The shared clock.
    pub clock: MonoClock,
    /// The case start (ns); `at` counts from here.
    pub go: u64,
    /// Set when the case ends.
    pub stop: StopSignal,
    /// The workers' hold events.
    pub board: Arc<HoldBoard>,
    /// The worker processes (processes mode).
    pub workers: Option<WorkerControl>,
    /// The clients' proxies, when the case has them.
    pub proxies: Option<Arc<ClientProxies>>,
    /// The server.
    pub server: ServerAccess,
}

/// Runs every fault of `specs`; returns their windows in start order once the case has ended.
pub async fn run_all(specs: Vec<FaultSpec>, env: FaultEnv) -> Vec<FaultWindow> {
    let mut tasks = JoinSet::new();
    for spec in specs {
        tasks.spawn(run_one(spec, env.clone()));
    }
    let mut windows = Vec::new();
    while let Some(done) = tasks.join_next().await {
        match done {
            Ok(w) => windows.push(w),
            Err(e) => windows.push(FaultWindow {
                kind: "unknown".into(),
                target: String::new(),
                parameters: BTreeMap::new(),
                start_ms: 0.0,
                stop_ms: None,
                recovery_ms: None,
                loss_noticed_ms: None,
                note: Some(format!("the fault task failed: {e}")),
            }),
        }
    }
    windows.sort_by(|a, b| a.start_ms.total_cmp(&b.start_ms));
    windows
}

/// One fault's record while it runs (ns), turned into a [`FaultWindow`] at the end.
#[derive(Debug)]
struct Record {
    kind: FaultKind,
    target: String,
    parameters: BTreeMap<String, serde_json::Value>,
    start: u64,
    stop: Option<u64>,
    recovery: Option<u64>,
    noticed: Option<u64>,
    notes: Vec<String>,
}

impl Record {
    fn new(spec: &FaultSpec, planned: u64) -> Self {
        Record {
            kind: spec.kind,
            target: spec.target.to_string(),
            parameters: spec
                .parameters()
                .into_iter()
                .map(|(n, v)| (n.to_owned(), v))
                .collect(),
            start: planned,
            stop: None,
            recovery: None,
            noticed: None,
            notes: Vec::new(),
        }
    }

    fn param(&mut self, name: &str, value: impl Into<serde_json::Value>) {
        self.parameters.insert(name.to_owned(), value.into());
    }

    fn note(&mut self, note: impl Into<String>) {
        self.notes.push(note.into());
    }

    fn window(self, go: u64) -> FaultWindow {
        let ms = |ns: u64| ns.saturating_sub(go) as f64 / 1e6;
        let rel = |ns: u64| ns.saturating_sub(self.start) as f64 / 1e6;
        FaultWindow {
            kind: self.kind.name().to_owned(),
            target: self.target,
            parameters: self.parameters,
            start_ms: ms(self.start),
            stop_ms: self.stop.map(ms),
            recovery_ms: self.recovery.map(rel),
            loss_noticed_ms: self.noticed.map(rel),
            note: (!self.notes.is_empty()).then(|| self.notes.join("; ")),
        }
    }
}

/// Sleeps until `at` (ns); false if the case ended first.
async fn sleep_until(env: &FaultEnv, at: u64) -> bool {
    tokio::select! {
        biased;
        _ = env.stop.wait() => false,
        _ = tokio::time::sleep_until(env.clock.instant(at).into()) => true,
    }
}

/// Waits `d` (how long a fault lasts) or until the case ends, whichever comes first; the caller then
/// lifts the fault.
async fn hold_for(env: &FaultEnv, d: Option<Duration>) {
    if let Some(d) = d {
        let until = env.clock.now() + duration_ns(d);
        sleep_until(env, until).await;
    }
}

/// Runs `f` on the blocking pool.
async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, String> + Send + 'static,
) -> Result<T, String> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| format!("task failed: {e}"))?
}

async fn run_one(spec: FaultSpec, env: FaultEnv) -> FaultWindow {
    let planned = env.go + duration_ns(spec.at);
    let mut rec = Record::new(&spec, planned);
    if !sleep_until(&env, planned).await {
        rec.note("not applied: the case ended first");
        return rec.window(env.go);
    }
    match spec.kind.scope() {
        FaultScope::WorkerProcess => worker_fault(&spec, &env, &mut rec).await,
        FaultScope::Network => network_fault(&spec, &env, &mut rec).await,
        FaultScope::Server => server_fault(&spec, &env, &mut rec).await,
    }
    rec.window(env.go)
}

/// A client that held a key when the fault hit it.
#[derive(Debug, Clone, Copy)]
struct Victim {
    client: u32,
    held: Option<(u32, u64)>,
}

/// The fault's target client: `holder` waits for the first acquire at or after `from` whose holder
/// still holds when looked at; `client:N` is taken as it is.
async fn pick_client(env: &FaultEnv, target: Target, from: u64) -> Option<Victim> {
    match target {
        Target::Client(client) => Some(Victim {
            client,
            held: env.board.holding(client),
        }),
        Target::Holder => {
            let mut cursor = env.board.cursor();
            loop {
                let candidate = env
                    .board
                    .next(&mut cursor, &env.stop, |e| {
                        (e.change == HoldChange::Acquired && e.at_ns >= from).then_some(*e)
                    })
                    .await?;
                let held = env.board.holding(candidate.client);
                if held == Some((candidate.key, candidate.at_ns)) {
                    return Some(Victim {
                        client: candidate.client,
                        held,
                    });
                }
            }
        }
        Target::All | Target::Server => None,
    }
}

/// After a fault hit `victim` at `t0` (board position `cursor`): when it noticed the loss of the key it
/// held, and when another client acquired that key.
async fn measure_victim(env: &FaultEnv, victim: Victim, cursor: usize, t0: u64, rec: &mut Record) {
    let Some((key, _)) = victim.held else {
        return;
    };
    let client = victim.client;
    let noticed = async {
        let mut c = cursor;
        env.board
            .next(&mut c, &env.stop, |e: &HoldEvent| {
                (e.client == client && e.key == key && matches!(e.change, HoldChange::Ended(_)))
                    .then_some(*e)
            })
            .await
            .filter(|e| e.change == HoldChange::Ended(EndedBy::Lost))
            .map(|e| e.at_ns.max(t0))
    };
    let recovered = async {
        let mut c = cursor;
        env.board
            .next(&mut c, &env.stop, |e: &HoldEvent| {
                (e.key == key
                    && e.client != client
                    && e.change == HoldChange::Acquired
                    && e.at_ns >= t0)
                    .then_some(e.at_ns)
            })
            .await
    };
    let (noticed, recovered) = tokio::join!(noticed, recovered);
    rec.noticed = noticed;
    rec.recovery = recovered.filter(|_| rec.kind.measures_recovery());
}

/// After a server-wide fault at `t0`: when any client acquired any key.
async fn measure_any(env: &FaultEnv, cursor: usize, t0: u64, rec: &mut Record) {
    let mut c = cursor;
    rec.recovery = env
        .board
        .next(&mut c, &env.stop, |e| {
            (e.change == HoldChange::Acquired && e.at_ns >= t0).then_some(e.at_ns)
        })
        .await;
}

fn describe_victim(victim: &Victim) -> String {
    match victim.held {
        Some((key, _)) => format!("client {} (holding key {key})", victim.client),
        None => format!("client {}", victim.client),
    }
}

async fn worker_fault(spec: &FaultSpec, env: &FaultEnv, rec: &mut Record) {
    let Some(workers) = env.workers.clone() else {
        rec.note("not applied: needs workers = processes");
        return;
    };
    let Some(victim) = pick_client(env, spec.target, rec.start).await else {
        rec.note("not applied: no client acquired a lock before the case ended");
        return;
    };
    rec.target = describe_victim(&victim);
    rec.param("client", victim.client);
    if let Some((key, _)) = victim.held {
        rec.param("key", key);
    }
    let cursor = env.board.cursor();
    let t0 = env.clock.now();
    rec.start = t0;
    let until = |d: Option<Duration>| t0 + d.map(duration_ns).unwrap_or(0);
    match spec.kind {
        FaultKind::PauseWorker => {
            if let Err(e) = workers.signal(victim.client, libc::SIGSTOP) {
                rec.note(e);
                return;
            }
            hold_for(env, spec.duration).await;
            if let Err(e) = workers.signal(victim.client, libc::SIGCONT) {
                rec.note(e);
            }
            rec.stop = Some(env.clock.now());
        }
        FaultKind::CrashWorker => {
            if let Err(e) = workers.signal(victim.client, libc::SIGKILL) {
                rec.note(e);
                return;
            }
            env.board.forget(victim.client);
            workers.record_crash(Crash {
                client: victim.client,
                held: victim.held,
                at_ns: t0,
            });
        }
        FaultKind::StarveWorker | FaultKind::CpuHog => {
            let until_ns = until(spec.duration);
            let command = if spec.kind == FaultKind::CpuHog {
                ToChild::Hog {
                    threads: spec.threads,
                    until_ns,
                }
            } else {
                ToChild::Starve { until_ns }
            };
            if !workers.send(victim.client, command) {
                rec.note("the worker is gone");
                return;
            }
            // The worker ends it by itself at `until_ns`, also if the case ends first.
            rec.stop = Some(until_ns);
        }
        FaultKind::CgroupQuota => {
            let Some(pid) = workers.pid(victim.client) else {
                rec.note("no worker process");
                return;
            };
            let quota = match CpuQuota::apply(pid, spec.quota, spec.period) {
                Ok(q) => q,
                Err(e) => {
                    rec.note(format!(
                        "not applied: cgroup CPU quota unavailable here: {e}"
                    ));
                    return;
                }
            };
            hold_for(env, spec.duration).await;
            drop(quota);
            rec.stop = Some(env.clock.now());
        }
        _ => return,
    }
    measure_victim(env, victim, cursor, t0, rec).await;
}

async fn network_fault(spec: &FaultSpec, env: &FaultEnv, rec: &mut Record) {
    let Some(all) = env.proxies.clone() else {
        rec.note("not applied: the case has no proxies");
        return;
    };
    let victim = match spec.target {
        Target::All => None,
        target => match pick_client(env, target, rec.start).await {
            Some(v) => Some(v),
            None => {
                rec.note("not applied: no client acquired a lock before the case ended");
                return;
            }
        },
    };
    let chosen: Vec<&lockbench_servers::Proxy> = match &victim {
        Some(v) => {
            rec.target = describe_victim(v);
            rec.param("client", v.client);
            if let Some((key, _)) = v.held {
                rec.param("key", key);
            }
            all.of(v.client).iter().collect()
        }
        None => {
            rec.target = "all clients".into();
            all.all().collect()
        }
    };
    let cursor = env.board.cursor();
    let t0 = env.clock.now();
    rec.start = t0;
    match spec.kind {
        FaultKind::ProxyDelay | FaultKind::ProxyBlackhole => {
            let fault = if spec.kind == FaultKind::ProxyDelay {
                Fault::Delay(spec.delay)
            } else {
                Fault::Blackhole
            };
            for p in &chosen {
                proxies::set(p, spec.direction, fault);
            }
            hold_for(env, spec.duration).await;
            for p in &chosen {
                proxies::set(p, spec.direction, Fault::Pass);
                if spec.kind == FaultKind::ProxyBlackhole {
                    // The bytes dropped meanwhile left these streams unusable: end them, as a
                    // partition that outlasts the peers' timeouts does.
                    p.reset_all();
                }
            }
            rec.stop = Some(env.clock.now());
        }
        FaultKind::ProxyReset => {
            let mut resets = 0u64;
            let end = spec.duration.map(|d| t0 + duration_ns(d));
            loop {
                for p in &chosen {
                    p.reset_all();
                }
                resets += 1;
                let (Some(every), Some(end)) = (spec.every, end) else {
                    break;
                };
                let next = env.clock.now() + duration_ns(every);
                if next >= end || !sleep_until(env, next).await {
                    break;
                }
            }
            rec.param("resets", resets);
            rec.stop = end.map(|e| e.min(env.clock.now()));
        }
        _ => return,
    }
    match victim {
        Some(v) => measure_victim(env, v, cursor, t0, rec).await,
        None if spec.kind.measures_recovery() => measure_any(env, cursor, t0, rec).await,
        None => {}
    }
}

/// The Redis address server commands go to.
fn redis_socket(server: &ServerAccess) -> Option<SocketAddr> {
    match server {
        ServerAccess::Shared {
            kind: ServerKind::Redis,
            socket,
            ..
        } => Some(*socket),
        ServerAccess::Own(own) => own.redis_primary(),
        _ => None,
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
    blocking(move || {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        resp_command(socket, &args, COMMAND_TIMEOUT).map_err(|e| e.to_string())
    })
    .await
}

async fn server_fault(spec: &FaultSpec, env: &FaultEnv, rec: &mut Record) {
    // A failover aimed at a holder strikes right after that client's acquire.
    let victim = if spec.target == Target::Holder {
        let Some(v) = pick_client(env, spec.target, rec.start).await else {
            rec.note("not applied: no client acquired a lock before the case ended");
            return;
        };
        Some(v)
    } else {
        None
    };
    let cursor = env.board.cursor();
    let t0 = env.clock.now();
    rec.start = t0;
    let measure = match spec.kind {
        FaultKind::PauseServer => {
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
                _ => None,
            };
            let Some((pid, what)) = target else {
                rec.note(
                    "not applied: the server was not started by lockbench (no process to pause)",
                );
                return;
            };
            rec.target = what;
            rec.start = env.clock.now();
            if let Err(e) = signal_group(pid, libc::SIGSTOP) {
                rec.note(e);
                return;
            }
            hold_for(env, spec.duration).await;
            if let Err(e) = signal_group(pid, libc::SIGCONT) {
                rec.note(e);
            }
            rec.stop = Some(env.clock.now());
            true
        }
        FaultKind::ClientPause | FaultKind::PubsubKill => {
            let Some(socket) = redis_socket(&env.server) else {
                rec.note("not applied: no Redis server");
                return;
            };
            rec.target = format!("redis {socket}");
            if spec.kind == FaultKind::ClientPause {
                let ms = spec.duration.unwrap_or_default().as_millis().to_string();
                let args = ["CLIENT", "PAUSE", &ms, "ALL"].map(str::to_owned).to_vec();
                if let Err(e) = redis_command(socket, args).await {
                    rec.note(format!("CLIENT PAUSE failed: {e}"));
                    return;
                }
                hold_for(env, spec.duration).await;
                if env.stop.is_set() {
                    let args = ["CLIENT", "UNPAUSE"].map(str::to_owned).to_vec();
                    let _ = redis_command(socket, args).await;
                }
                rec.stop = Some(
                    env.clock
                        .now()
                        .min(t0 + duration_ns(spec.duration.unwrap_or_default())),
                );
                true
            } else {
                let (kills, killed) = pubsub_kills(spec, env, socket, t0).await;
                rec.param("kills", kills);
                rec.param("connections_killed", killed);
                rec.stop = spec
                    .duration
                    .map(|d| (t0 + duration_ns(d)).min(env.clock.now()));
                false
            }
        }
        FaultKind::Failover => {
            let ServerAccess::Own(own) = env.server.clone() else {
                rec.note("not applied: failover needs a primary + replica started for the case");
                return;
            };
            let proxies = env.proxies.clone();
            match blocking(move || own.failover(proxies.as_deref())).await {
                Ok(report) => {
                    rec.target = format!(
                        "redis primary {} → replica {}",
                        report.old_primary, report.new_primary
                    );
                    if let Some(bytes) = report.unreplicated_bytes {
                        rec.param("unreplicated_bytes", bytes);
                    }
                    rec.param("primary_keys", report.primary_keys);
                    rec.param("keys_missing_on_replica", report.missing_keys);
                    rec.param("keys_stale_on_replica", report.stale_keys);
                }
                Err(e) => {
                    rec.note(format!("failover failed: {e}"));
                    return;
                }
            }
            if let Some(v) = &victim {
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
            true
        }
        FaultKind::LeaderKill => {
            let ServerAccess::Own(own) = env.server.clone() else {
                rec.note("not applied: leader_kill needs a cluster started for the case");
                return;
            };
            match blocking(move || own.kill_leader()).await {
                Ok((what, election)) => {
                    rec.target = what;
                    match election {
                        Some(d) => rec.param("new_leader_ms", d.as_secs_f64() * 1e3),
                        None => rec.note("no new leader within 10 s"),
                    }
                }
                Err(e) => {
                    rec.note(format!("leader kill failed: {e}"));
                    return;
                }
            }
            true
        }
        _ => false,
    };
    match victim {
        Some(v) => measure_victim(env, v, cursor, t0, rec).await,
        None if measure => measure_any(env, cursor, t0, rec).await,
        None => {}
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
