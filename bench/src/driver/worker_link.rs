//! The driver's link to each worker: a `lockbench worker` child started in its own process group (and
//! tracked so a second Ctrl-C can kill it), JSON lines both ways (the events it sends, the `go` and
//! the command and fault channels to it), and its end with the words for how it exited.

use std::collections::HashMap;
use std::path::Path;
use std::process::Stdio;
use std::sync::Mutex;

use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncWrite, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, Command};
use tokio::sync::mpsc;

use super::mode::{CaseContext, CaseError, Timing};
use super::protocol::{FromChild, ToChild};
use crate::faults::workers::WorkerCommand;

static LIVE_WORKERS: Mutex<Vec<u32>> = Mutex::new(Vec::new());

/// Kills every worker process still running (for a second Ctrl-C, just before exiting).
pub(crate) fn kill_all_workers() {
    let pids = LIVE_WORKERS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .clone();
    for pid in pids {
        if let Ok(pid) = i32::try_from(pid) {
            // SAFETY: kill(2) has no memory-safety preconditions; each worker leads its own group.
            unsafe { libc::kill(-pid, libc::SIGKILL) };
        }
    }
}

/// A worker the case talks to: a child process (processes mode) or a remote worker's connection.
pub(super) struct WorkerLink {
    pub(super) child: Option<Child>,
    pub(super) input: Option<Box<dyn AsyncWrite + Unpin + Send>>,
    pub(super) pid: Option<u32>,
}

impl Drop for WorkerLink {
    fn drop(&mut self) {
        if let Some(pid) = self.pid {
            forget_worker(pid);
        }
    }
}

/// A worker process started outside a case (a many-locks series') that [`kill_all_workers`] kills
/// too: it must lead its own process group. Forgotten when dropped.
#[derive(Debug)]
pub(crate) struct LiveWorker(u32);

impl LiveWorker {
    /// Tracks the process `pid` until the guard is dropped.
    pub(crate) fn track(pid: u32) -> Self {
        track_worker(pid);
        LiveWorker(pid)
    }
}

impl Drop for LiveWorker {
    fn drop(&mut self) {
        forget_worker(self.0);
    }
}

fn track_worker(pid: u32) {
    LIVE_WORKERS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push(pid);
}

fn forget_worker(pid: u32) {
    LIVE_WORKERS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .retain(|p| *p != pid);
}

/// What a worker said, or that it closed its output.
pub(super) enum Event {
    Message(u32, FromChild),
    Closed(u32),
}

pub(crate) async fn send<W: AsyncWrite + Unpin + ?Sized>(
    input: &mut W,
    line: &impl serde::Serialize,
) -> std::io::Result<()> {
    let mut text = serde_json::to_string(line).map_err(std::io::Error::other)?;
    text.push('\n');
    input.write_all(text.as_bytes()).await?;
    input.flush().await
}

/// Forwards what worker `client` says to `events`, then its end.
pub(super) fn read_events<R>(client: u32, mut lines: Lines<R>, events: mpsc::UnboundedSender<Event>)
where
    R: AsyncBufRead + Unpin + Send + 'static,
{
    tokio::spawn(async move {
        while let Ok(Some(line)) = lines.next_line().await {
            let message = serde_json::from_str(&line).unwrap_or_else(|e| FromChild::Error {
                message: format!("unreadable line from worker: {e}"),
            });
            if events.send(Event::Message(client, message)).is_err() {
                return;
            }
        }
        let _ = events.send(Event::Closed(client));
    });
}

/// `exe worker` with the adapters the user added, its input and output piped, leading its own
/// process group (a terminal's Ctrl-C reaches only the driver), killed when its handle is dropped.
/// A case's workers and a many-locks series' worker start the same way.
pub(crate) fn worker_command(exe: &Path) -> Command {
    let mut command = Command::new(exe);
    command
        .arg("worker")
        .args(crate::strategies::added_adapter_args())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .process_group(0);
    command
}

pub(super) fn spawn_worker(
    ctx: &CaseContext<'_>,
    client: u32,
    events: mpsc::UnboundedSender<Event>,
) -> Result<WorkerLink, CaseError> {
    let mut command = worker_command(&ctx.worker_exe);
    let mut child = command.stderr(Stdio::inherit()).spawn().map_err(|e| {
        CaseError::Fail(format!(
            "cannot start worker process {}: {e}",
            ctx.worker_exe.display()
        ))
    })?;
    let pid = child.id().unwrap_or(0);
    track_worker(pid);
    let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
        return Err(CaseError::Fail("worker process without pipes".into()));
    };
    read_events(client, BufReader::new(stdout).lines(), events);
    Ok(WorkerLink {
        child: Some(child),
        input: Some(Box::new(stdin)),
        pid: Some(pid),
    })
}

/// Hands `stdin` to a task that writes every command sent on the returned channel; the worker's input
/// closes when every sender is gone.
fn command_channel(
    mut stdin: Box<dyn AsyncWrite + Unpin + Send>,
) -> mpsc::UnboundedSender<ToChild> {
    let (tx, mut rx) = mpsc::unbounded_channel::<ToChild>();
    tokio::spawn(async move {
        while let Some(command) = rx.recv().await {
            if send(&mut stdin, &command).await.is_err() {
                return;
            }
        }
    });
    tx
}

/// A channel for a fault's commands to one worker, wrapped into [`ToChild::Fault`] on its way to the
/// worker's command channel (which stays open while this channel has senders).
pub(super) fn fault_channel(
    commands: &mpsc::UnboundedSender<ToChild>,
) -> mpsc::UnboundedSender<WorkerCommand> {
    let (tx, mut rx) = mpsc::unbounded_channel::<WorkerCommand>();
    let commands = commands.clone();
    tokio::spawn(async move {
        while let Some(command) = rx.recv().await {
            if commands.send(ToChild::Fault(command)).is_err() {
                return;
            }
        }
    });
    tx
}

/// Kills the worker processes and waits for their ends.
pub(super) async fn end_children(workers: Vec<WorkerLink>) -> HashMap<u32, String> {
    let mut exits = HashMap::new();
    for (client, mut worker) in workers.into_iter().enumerate() {
        if let Some(child) = worker.child.as_mut() {
            // Exited by itself before being ended here: how.
            if let Ok(Some(status)) = child.try_wait() {
                exits.insert(client as u32, exit_words(status));
            }
            let _ = child.start_kill();
            let _ = child.wait().await;
        }
    }
    exits
}

/// `killed by signal 9 (SIGKILL)`, `exited with code 101`.
pub(crate) fn exit_words(status: std::process::ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (status.signal(), status.code()) {
        (Some(signal), _) => {
            let name = match signal {
                libc::SIGHUP => "SIGHUP",
                libc::SIGINT => "SIGINT",
                libc::SIGABRT => "SIGABRT",
                libc::SIGKILL => "SIGKILL",
                libc::SIGSEGV => "SIGSEGV",
                libc::SIGPIPE => "SIGPIPE",
                libc::SIGTERM => "SIGTERM",
                _ => "a signal",
            };
            format!("killed by signal {signal} ({name})")
        }
        (None, Some(code)) => format!("exited with code {code}"),
        (None, None) => "exited".to_owned(),
    }
}

/// Tells every worker when to start, measure and stop; returns a command channel to each.
pub(super) async fn send_go(
    workers: &mut [WorkerLink],
    timing: Timing,
) -> Result<Vec<mpsc::UnboundedSender<ToChild>>, CaseError> {
    let go = ToChild::Go {
        go_ns: timing.go,
        measure_from_ns: timing.measure_from,
        stop_at_ns: timing.stop_at,
    };
    let mut commands = Vec::with_capacity(workers.len());
    for (client, worker) in workers.iter_mut().enumerate() {
        let mut input = worker
            .input
            .take()
            .ok_or_else(|| CaseError::Fail(format!("worker {client}: no input")))?;
        send(&mut input, &go)
            .await
            .map_err(|e| CaseError::Fail(format!("worker {client}: {e}")))?;
        commands.push(command_channel(input));
    }
    Ok(commands)
}
