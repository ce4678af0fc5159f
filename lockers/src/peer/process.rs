//! One adapter child process: spawning it (stderr to a log file), the writer and reader tasks, requests
//! matched to replies by id with a deadline, the clock sync, and routing events to the leases they are
//! about (each lease reports to the events of the client that took it, since one process may serve
//! several clients). A process that exits or stops answering fails every request with a clear `Backend`
//! error and loses every lease it held, whichever client took it; nothing waits on it forever.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Map, Value};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::sync::{mpsc, oneshot};

use crate::error::LockError;
use crate::event::{Events, LockEvent, Renewed};
use crate::lease::{LeaseState, LossReason};
use crate::peer::credentials::{PASSWORD_VARIABLE, Password};
use crate::peer::wire::{self, Incoming, PeerEvent, WireError};

/// The `backend` name of every adapter error.
pub(crate) const BACKEND: &str = "peer adapter";

/// How to start an adapter.
#[derive(Debug, Clone)]
pub struct PeerCommand {
    /// The program (an interpreter or the adapter itself).
    pub program: PathBuf,
    /// Its arguments.
    pub args: Vec<String>,
    /// Shown when the program is missing: the command that installs it.
    pub install_hint: String,
}

/// What an acquire request remembers until its reply, so the reader can register the lease before any
/// event about it is read.
pub(crate) struct AcquireWait {
    pub(crate) key: Arc<str>,
    /// The client that asked (its lease reports to that client's events).
    pub(crate) client: ClientTag,
    /// When the parent sent the acquire.
    pub(crate) sent_at: Instant,
    /// The TTL the lease starts with (measured from the send of the winning attempt).
    pub(crate) ttl: Duration,
    /// Whether the acquire may retry (a wait): then the adapter's `sent` of the winning attempt counts.
    pub(crate) retries: bool,
}

/// A granted lease as the reader registered it: its state and when its winning attempt was sent.
pub(crate) type Granted = (Arc<LeaseState>, Instant);

/// A reply, with the lease state the reader registered for a granted acquire.
pub(crate) type Reply = Result<(Map<String, Value>, Option<Granted>), WireError>;

/// One client of an adapter process: its number on the wire (`client` in requests) and where its
/// leases' events go.
#[derive(Debug, Clone)]
pub(crate) struct ClientTag {
    pub(crate) id: u32,
    pub(crate) events: Events,
}

enum Pending {
    Request {
        tx: oneshot::Sender<Reply>,
        acquire: Option<AcquireWait>,
    },
    /// A release sent from `Drop`: nobody waits; a success is reported as `Released`.
    Abandoned { key: Arc<str>, client: ClientTag },
}

/// The shared side of a running adapter: used by the locker, its leases and the reader task.
pub(crate) struct Adapter {
    pub(crate) id: Arc<str>,
    lines: mpsc::UnboundedSender<String>,
    pending: Mutex<HashMap<u64, Pending>>,
    leases: Mutex<HashMap<String, Arc<LeaseState>>>,
    next_id: AtomicU64,
    dead: Mutex<Option<String>>,
    /// The parent's clock origin; parent time = nanoseconds since `base`.
    base: Instant,
    /// parent ns − adapter ns, from the clock sync.
    offset_ns: AtomicI64,
    pub(crate) log_path: PathBuf,
    pub(crate) request_timeout: Duration,
    pub(crate) pid: Option<u32>,
    /// Whether `hello` declared `lost_signal`: a `lost` event from an adapter that did not is a breach
    /// of the protocol (its declaration does not match its library), not a signal to act on quietly.
    declares_lost: AtomicBool,
}

impl std::fmt::Debug for Adapter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Adapter")
            .field("id", &self.id)
            .field("log", &self.log_path)
            .finish_non_exhaustive()
    }
}

/// Ends the child when dropped, and removes its log if it is empty (a log with anything in it stays,
/// for the errors that name it).
#[derive(Debug)]
pub(crate) struct ChildGuard {
    _kill: oneshot::Sender<()>,
    log_path: PathBuf,
}

impl Drop for ChildGuard {
    fn drop(&mut self) {
        if std::fs::metadata(&self.log_path).is_ok_and(|m| m.len() == 0) {
            let _ = std::fs::remove_file(&self.log_path);
        }
    }
}

/// A running adapter process as its clients share it: the protocol side, the child (ended when the
/// last client lets go of the process), the clients it has served and the clock sync's round trip.
#[derive(Debug)]
pub(crate) struct Process {
    pub(crate) adapter: Arc<Adapter>,
    child: Mutex<Option<ChildGuard>>,
    /// The next client number.
    next_client: AtomicU32,
    /// Clients opened and not yet closed.
    open: AtomicUsize,
    /// The smallest clock-sync round trip, once synced.
    ping_rtt: std::sync::OnceLock<Duration>,
}

impl Process {
    /// Spawns the adapter process (see [`Adapter::spawn`]).
    pub(crate) fn spawn(
        id: &str,
        command: (&PeerCommand, Option<&Password>),
        log_path: PathBuf,
        request_timeout: Duration,
    ) -> Result<Arc<Process>, LockError> {
        let (adapter, child) = Adapter::spawn(id, command, log_path, request_timeout)?;
        Ok(Arc::new(Process {
            adapter,
            child: Mutex::new(Some(child)),
            next_client: AtomicU32::new(0),
            open: AtomicUsize::new(0),
            ping_rtt: std::sync::OnceLock::new(),
        }))
    }

    /// A number for a new client, counted as open until [`close_client`](Self::close_client).
    pub(crate) fn open_client(&self) -> u32 {
        self.open.fetch_add(1, Ordering::AcqRel);
        self.next_client.fetch_add(1, Ordering::Relaxed)
    }

    /// How many clients this process has served.
    pub(crate) fn clients_served(&self) -> u32 {
        self.next_client.load(Ordering::Relaxed)
    }

    /// The clock sync's round trip: synced once, by the first client (later ones wait for it).
    pub(crate) async fn sync_clock_once(&self) -> Result<Duration, LockError> {
        if let Some(rtt) = self.ping_rtt.get() {
            return Ok(*rtt);
        }
        let rtt = self.adapter.sync_clock(8).await?;
        Ok(*self.ping_rtt.get_or_init(|| rtt))
    }

    /// Closes client `client`: while others are open, a `close` of that client (its library client
    /// ends; the process serves the others); the last one closes the process and ends the child.
    pub(crate) async fn close_client(&self, client: u32) {
        let adapter = &self.adapter;
        let limit = Duration::from_secs(1);
        if self.open.fetch_sub(1, Ordering::AcqRel) > 1 {
            let close = adapter.request(|id| wire::close(id, Some(client)), None, Duration::ZERO);
            let _ = tokio::time::timeout(limit, close).await;
            return;
        }
        adapter.send_close();
        let until = Instant::now() + limit;
        while Instant::now() < until && !adapter.is_dead() {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        drop(lock(&self.child).take());
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Adapter {
    /// Spawns the adapter with stderr appended to `log_path`, and its servers' `password` (when
    /// they have one) in its environment ([`PASSWORD_VARIABLE`]).
    pub(crate) fn spawn(
        id: &str,
        (command, password): (&PeerCommand, Option<&Password>),
        log_path: PathBuf,
        request_timeout: Duration,
    ) -> Result<(Arc<Adapter>, ChildGuard), LockError> {
        if let Some(dir) = log_path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| {
                LockError::Config(format!("peer {id}: cannot create log dir {dir:?}: {e}"))
            })?;
        }
        let log = std::fs::File::create(&log_path).map_err(|e| {
            LockError::Config(format!("peer {id}: cannot create log {log_path:?}: {e}"))
        })?;
        let mut child = tokio::process::Command::new(&command.program);
        match password {
            Some(password) => child.env(PASSWORD_VARIABLE, &password.0),
            None => child.env_remove(PASSWORD_VARIABLE),
        };
        let mut child = child
            .args(&command.args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(log)
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| {
                LockError::Config(format!(
                    "peer {id}: cannot start {} ({e}); install the peers with: {}",
                    command.program.display(),
                    command.install_hint
                ))
            })?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            return Err(LockError::Config(format!("peer {id}: no stdio pipes")));
        };
        let (lines, rx) = mpsc::unbounded_channel();
        let adapter = Arc::new(Adapter {
            id: id.into(),
            lines,
            pending: Mutex::default(),
            leases: Mutex::default(),
            next_id: AtomicU64::new(1),
            dead: Mutex::new(None),
            base: Instant::now(),
            offset_ns: AtomicI64::new(0),
            declares_lost: AtomicBool::new(false),
            log_path: log_path.clone(),
            request_timeout,
            pid: child.id(),
        });
        tokio::spawn(write_lines(stdin, rx));
        tokio::spawn(read_lines(adapter.clone(), stdout));
        let (kill, killed) = oneshot::channel::<()>();
        let watcher = adapter.clone();
        tokio::spawn(async move {
            tokio::select! {
                status = child.wait() => {
                    let why = match status {
                        Ok(s) => format!("exited ({s})"),
                        Err(e) => format!("could not be waited for ({e})"),
                    };
                    watcher.mark_dead(why);
                }
                _ = killed => {
                    let _ = child.start_kill();
                    let _ = child.wait().await;
                    watcher.mark_dead("was stopped".into());
                }
            }
        });
        Ok((
            adapter,
            ChildGuard {
                _kill: kill,
                log_path,
            },
        ))
    }

    /// The parent's clock now, in nanoseconds since `base`.
    pub(crate) fn now_ns(&self) -> i64 {
        i64::try_from(self.base.elapsed().as_nanos()).unwrap_or(i64::MAX)
    }

    /// Maps an adapter timestamp to the parent's clock.
    pub(crate) fn to_instant(&self, adapter_ns: i64) -> Instant {
        let parent = adapter_ns.saturating_add(self.offset_ns.load(Ordering::Relaxed));
        self.base + Duration::from_nanos(u64::try_from(parent).unwrap_or(0))
    }

    /// Estimates the clock offset from `samples` pings, keeping the one with the smallest round trip.
    /// Returns that round trip.
    pub(crate) async fn sync_clock(&self, samples: usize) -> Result<Duration, LockError> {
        let mut best: Option<(i64, i64)> = None; // (rtt, offset)
        for _ in 0..samples {
            let sent = self.now_ns();
            let reply = self
                .request(|id| wire::ping(id, sent), None, Duration::ZERO)
                .await?;
            let done = self.now_ns();
            let fields = reply
                .map_err(|e| self.backend_error(format_args!("failed a ping: {}", e.message)))?
                .0;
            let adapter_t = fields
                .get("t")
                .and_then(Value::as_i64)
                .ok_or_else(|| self.protocol_error("ping reply without integer \"t\""))?;
            let rtt = done - sent;
            let offset = sent + rtt / 2 - adapter_t;
            if best.is_none_or(|(r, _)| rtt < r) {
                best = Some((rtt, offset));
            }
        }
        let (rtt, offset) = best.unwrap_or((0, 0));
        self.offset_ns.store(offset, Ordering::Relaxed);
        Ok(Duration::from_nanos(u64::try_from(rtt).unwrap_or(0)))
    }

    /// A `Backend` error about this adapter, naming its log.
    pub(crate) fn backend_error(&self, what: impl std::fmt::Display) -> LockError {
        LockError::backend(
            BACKEND,
            format!(
                "peer {} {what} (adapter log: {})",
                self.id,
                self.log_path.display()
            ),
        )
    }

    fn protocol_error(&self, what: &str) -> LockError {
        self.backend_error(format_args!("broke the protocol: {what}"))
    }

    /// Sends the request built by `make(id)` and waits for its reply, at most the request timeout plus
    /// `extra` (an acquire's wait).
    pub(crate) async fn request(
        &self,
        make: impl FnOnce(u64) -> String,
        acquire: Option<AcquireWait>,
        extra: Duration,
    ) -> Result<Reply, LockError> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let line = make(id);
        let client = acquire.as_ref().map(|a| a.client.clone());
        let (tx, rx) = oneshot::channel();
        {
            let mut pending = lock(&self.pending);
            if let Some(why) = lock(&self.dead).clone() {
                return Err(self.backend_error(why));
            }
            pending.insert(id, Pending::Request { tx, acquire });
        }
        // Whatever way this future ends, nobody waits for the reply any more.
        struct Forget<'a> {
            adapter: &'a Adapter,
            id: u64,
            reply: oneshot::Receiver<Reply>,
            client: Option<ClientTag>,
        }
        impl Drop for Forget<'_> {
            fn drop(&mut self) {
                {
                    let mut pending = lock(&self.adapter.pending);
                    if let Some(Pending::Request {
                        acquire: Some(a), ..
                    }) = pending.remove(&self.id)
                    {
                        // An acquire whose reply may still come: mark it so a late grant is released.
                        let abandoned = Pending::Abandoned {
                            key: a.key,
                            client: a.client,
                        };
                        pending.insert(self.id, abandoned);
                    }
                }
                // A reply already delivered but not read (the future was dropped before it looked)
                // is given back here. After `close`, the reader's send either landed before (and
                // `try_recv` has it) or fails (and the reader gives the grant back itself).
                self.reply.close();
                if let (Ok(reply), Some(client)) = (self.reply.try_recv(), &self.client) {
                    self.adapter.give_back(reply, client);
                }
            }
        }
        let mut forget = Forget {
            adapter: self,
            id,
            reply: rx,
            client,
        };
        if self.lines.send(line).is_err() {
            return Err(self.backend_error("is not running"));
        }
        let limit = self.request_timeout + extra;
        match tokio::time::timeout(limit, &mut forget.reply).await {
            Ok(Ok(reply)) => Ok(reply),
            Ok(Err(_)) => {
                let why = lock(&self.dead).clone().unwrap_or_else(|| "ended".into());
                Err(self.backend_error(why))
            }
            Err(_) => {
                Err(self.backend_error(format_args!("did not answer within {limit:?} (hung?)")))
            }
        }
    }

    /// Sends a release nobody waits for (from `Drop`); its success is reported as `Released`.
    pub(crate) fn release_in_background(&self, lease: &str, key: Arc<str>, client: &ClientTag) {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let line = wire::release(id, client.id, lease);
        let client = client.clone();
        lock(&self.pending).insert(id, Pending::Abandoned { key, client });
        let _ = self.lines.send(line);
    }

    /// Gives back the lock of a granted acquire nobody took (its future was dropped), so it is not
    /// left held: the lease is forgotten and released in the background. Anything else is dropped.
    fn give_back(&self, reply: Reply, client: &ClientTag) {
        if let Ok((fields, Some((state, _)))) = reply
            && let Some(lease) = lease_id(&fields)
        {
            self.forget_lease(&lease);
            self.release_in_background(&lease, state.key().clone(), client);
        }
    }

    /// Sends a process-wide `close` (no client: the adapter exits) without waiting for anything.
    pub(crate) fn send_close(&self) {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let _ = self.lines.send(wire::close(id, None));
    }

    /// Whether the process has exited or broke the protocol.
    pub(crate) fn is_dead(&self) -> bool {
        lock(&self.dead).is_some()
    }

    /// Stops routing events to `lease` (it was released).
    /// Records what `hello` declared about loss signals.
    pub(crate) fn declare_lost_signal(&self, declared: bool) {
        self.declares_lost.store(declared, Ordering::Relaxed);
    }

    pub(crate) fn forget_lease(&self, lease: &str) {
        lock(&self.leases).remove(lease);
    }

    /// The adapter is gone: fail every waiting request, lose every lease.
    fn mark_dead(&self, why: String) {
        {
            let mut dead = lock(&self.dead);
            if dead.is_none() {
                *dead = Some(why.clone());
            }
        }
        // Dropping the senders wakes every waiter with the reason above.
        lock(&self.pending).clear();
        let leases: Vec<_> = lock(&self.leases).drain().map(|(_, s)| s).collect();
        for state in leases {
            state.mark_lost(LossReason::ChannelClosed(format!(
                "adapter {} {why}",
                self.id
            )));
        }
    }

    fn on_reply(&self, id: u64, body: Result<Map<String, Value>, WireError>) {
        let Some(pending) = lock(&self.pending).remove(&id) else {
            return;
        };
        match pending {
            Pending::Request { tx, acquire } => {
                let client = acquire.as_ref().map(|a| a.client.clone());
                let reply = body.map(|fields| {
                    let state = acquire.zip(lease_id(&fields)).map(|(a, lease)| {
                        // The adapter may say when the attempt that won was sent; never before ours.
                        let start = fields
                            .get("sent")
                            .and_then(Value::as_i64)
                            .filter(|_| a.retries)
                            .map_or(a.sent_at, |t| self.to_instant(t).max(a.sent_at));
                        let state = LeaseState::new(a.key, start + a.ttl, a.client.events);
                        lock(&self.leases).insert(lease, state.clone());
                        (state, start)
                    });
                    (fields, state)
                });
                if let (Err(reply), Some(client)) = (tx.send(reply), &client) {
                    // The acquirer went away between the grant and now.
                    self.give_back(reply, client);
                }
            }
            Pending::Abandoned { key, client } => {
                // An error here (not held, gone) has nobody left to tell.
                let Ok(fields) = body else { return };
                match lease_id(&fields) {
                    // A grant for an acquire that was dropped: release it.
                    Some(lease) if fields.contains_key("token") => {
                        self.release_in_background(&lease, key, &client)
                    }
                    _ => client.events.emit(|| LockEvent::Released {
                        key,
                        at: Instant::now(),
                    }),
                }
            }
        }
    }

    fn on_event(&self, event: PeerEvent) {
        match event {
            PeerEvent::Renewed {
                lease,
                scheduled,
                sent,
                done,
                remaining,
                ttl,
            } => {
                let Some(state) = lock(&self.leases).get(&lease).cloned() else {
                    return;
                };
                let sent_at = self.to_instant(sent);
                state.extend_to(sent_at + ttl);
                state.events().renewed(state.key(), || Renewed {
                    scheduled_at: scheduled.map_or(sent_at, |t| self.to_instant(t)),
                    sent_at,
                    done_at: self.to_instant(done),
                    remaining_ttl_before: remaining,
                    granted_ttl: ttl,
                    trigger_lag: None,
                });
            }
            PeerEvent::RenewFailed { lease, error } => {
                if let Some(state) = lock(&self.leases).get(&lease) {
                    state.events().emit(|| LockEvent::RenewFailed {
                        key: state.key().clone(),
                        at: Instant::now(),
                        error,
                    });
                }
            }
            PeerEvent::Lost {
                lease,
                reason,
                detail,
            } => {
                if !self.declares_lost.load(Ordering::Relaxed) {
                    // The driver acts on a loss only when the row declares the signal; one it would
                    // ignore must not pass unseen.
                    return self.mark_dead(format!(
                        "broke the protocol: sent `lost` ({reason}) but declared lost_signal: false"
                    ));
                }
                if let Some(state) = lock(&self.leases).remove(&lease) {
                    state.mark_lost(loss_reason(&reason, detail));
                }
            }
        }
    }
}

fn lease_id(fields: &Map<String, Value>) -> Option<String> {
    fields
        .get("lease")
        .and_then(Value::as_str)
        .map(str::to_owned)
}

fn loss_reason(reason: &str, detail: String) -> LossReason {
    match reason {
        "renew_rejected" => LossReason::RenewRejected,
        "expired" => LossReason::Expired,
        "session_expired" => LossReason::SessionExpired,
        "lease_revoked" => LossReason::LeaseRevoked,
        "taken_over" => LossReason::TakenOver,
        _ => LossReason::ChannelClosed(if detail.is_empty() {
            reason.to_owned()
        } else {
            detail
        }),
    }
}

async fn write_lines(
    mut stdin: tokio::process::ChildStdin,
    mut rx: mpsc::UnboundedReceiver<String>,
) {
    while let Some(mut line) = rx.recv().await {
        line.push('\n');
        if stdin.write_all(line.as_bytes()).await.is_err() || stdin.flush().await.is_err() {
            return;
        }
    }
    // Every sender is gone: closing stdin tells the adapter to exit.
}

async fn read_lines(adapter: Arc<Adapter>, stdout: tokio::process::ChildStdout) {
    let mut lines = BufReader::new(stdout).lines();
    loop {
        match lines.next_line().await {
            Ok(Some(line)) if line.trim().is_empty() => {}
            Ok(Some(line)) => match wire::parse(&line) {
                Ok(Incoming::Reply { id, body }) => adapter.on_reply(id, body),
                Ok(Incoming::Event(event)) => adapter.on_event(event),
                Err(why) => {
                    adapter.mark_dead(format!("broke the protocol: {why} in {line:?}"));
                    return;
                }
            },
            Ok(None) => return adapter.mark_dead("closed its stdout".into()),
            Err(e) => return adapter.mark_dead(format!("stdout failed ({e})")),
        }
    }
}

/// Where an adapter's stderr goes by default: `<temp>/lockbench-peers/<id>-<pid>-<n>.log` (removed
/// when lockbench stops an adapter that wrote nothing).
pub(crate) fn default_log_path(dir: Option<&Path>, id: &str) -> PathBuf {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let dir = dir.map_or_else(
        || std::env::temp_dir().join("lockbench-peers"),
        Path::to_path_buf,
    );
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    dir.join(format!("{id}-{}-{n}.log", std::process::id()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The servers' password is in the adapter's environment when given, and only then.
    #[tokio::test]
    async fn the_password_reaches_the_adapter_through_its_environment_only() {
        let dir = std::env::temp_dir().join(format!("lockbench-env-check-{}", std::process::id()));
        let command = PeerCommand {
            program: "sh".into(),
            args: vec![
                "-c".into(),
                format!("printf '[%s]' \"${PASSWORD_VARIABLE}\" >&2"),
            ],
            install_hint: String::new(),
        };
        let timeout = Duration::from_secs(5);
        for (password, logged) in [(Some(Password("s3cret".into())), "[s3cret]"), (None, "[]")] {
            let log = dir.join("adapter.log");
            let spawn = (&command, password.as_ref());
            let process = Process::spawn("env-check", spawn, log.clone(), timeout).expect("spawn");
            let deadline = Instant::now() + timeout;
            while std::fs::read_to_string(&log).unwrap_or_default() != logged {
                assert!(
                    Instant::now() < deadline,
                    "{:?}",
                    std::fs::read_to_string(&log)
                );
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            drop(process);
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}
