//! What a fault can do to client processes (processes mode): signal them (SIGSTOP, SIGCONT, SIGKILL),
//! send them commands (starve your runtime, run a CPU hog), and the record of the ones it killed, so the
//! driver does not count a killed worker's silence as a failure.

use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};
use tokio::sync::mpsc;

/// The name of a CPU hog's threads in the worker ([`WorkerCommand::Hog`]): the driver counts them in
/// `/proc` as the evidence that the hog ran.
pub(crate) const HOG_THREAD: &str = "lockbench-hog";

/// The name a worker's runtime thread takes while a starvation ([`WorkerCommand::Starve`]) holds it
/// (and gives back after): the driver watches for it in `/proc` as the evidence that the runtime was
/// starved, and for how long.
pub(crate) const STARVED_THREAD: &str = "lockbench-held";

/// How many runtime worker threads a worker process has, as its runtime (tokio's default multi-thread
/// runtime, built the same way as this process's) counts them: `TOKIO_WORKER_THREADS`, else the
/// available parallelism. A worker inherits both from the driver.
pub(crate) fn runtime_threads() -> usize {
    std::env::var("TOKIO_WORKER_THREADS")
        .ok()
        .and_then(|n| n.trim().parse::<usize>().ok())
        .filter(|n| *n > 0)
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

/// The evidence of a starvation from what `/proc` showed: `most` threads of worker process `pid` seen
/// held at once, for `held_ms`; the claim is that every one of its `threads` runtime threads was.
pub(crate) fn starve_evidence(
    most: usize,
    threads: usize,
    pid: u32,
    held_ms: Option<f64>,
) -> Result<String, String> {
    match held_ms {
        Some(ms) if most >= threads => Ok(format!(
            "all {threads} runtime threads of worker process {pid} were held for {ms:.0} ms \
             (/proc/{pid}/task)"
        )),
        Some(ms) => Err(format!(
            "only {most} of the {threads} runtime threads of worker process {pid} were held at \
             once (for {ms:.0} ms; /proc/{pid}/task): the others kept its runtime going"
        )),
        None => Err(format!(
            "no runtime thread of worker process {pid} was held (/proc/{pid}/task)"
        )),
    }
}

/// A worker process killed by a fault.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Crash {
    /// Client index.
    pub client: u32,
    /// What it held when killed: (key, since ns).
    pub held: Option<(u32, u64)>,
    /// When it was killed (ns).
    pub at_ns: u64,
}

/// What a fault asks a worker process to do to itself; the worker protocol carries it
/// (`ToChild::Fault` in the driver's protocol).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum WorkerCommand {
    /// Block every runtime worker thread until `until_ns` (CPU starvation of the client).
    Starve {
        /// When the threads are let go (machine-wide monotonic ns).
        until_ns: u64,
    },
    /// Run `threads` busy-looping threads until `until_ns` (a CPU hog).
    Hog {
        /// How many.
        threads: u32,
        /// When they stop.
        until_ns: u64,
    },
}

/// Handles on the worker processes of one case.
#[derive(Debug, Clone)]
pub(crate) struct WorkerControl {
    pids: Arc<Vec<u32>>,
    commands: Arc<Vec<mpsc::UnboundedSender<WorkerCommand>>>,
    crashes: Arc<Mutex<Vec<Crash>>>,
}

impl WorkerControl {
    /// Control over workers with these pids and command channels (both by client index).
    pub(crate) fn new(pids: Vec<u32>, commands: Vec<mpsc::UnboundedSender<WorkerCommand>>) -> Self {
        WorkerControl {
            pids: Arc::new(pids),
            commands: Arc::new(commands),
            crashes: Arc::default(),
        }
    }

    /// The process id of `client`.
    pub(crate) fn pid(&self, client: u32) -> Option<u32> {
        self.pids.get(client as usize).copied()
    }

    /// Sends `signal` to `client`'s process group: the worker and any peer adapter process it started
    /// (the library a peer measures lives there), so a pause or a crash reaches the whole client.
    pub(crate) fn signal(&self, client: u32, signal: libc::c_int) -> Result<(), String> {
        let pid = self
            .pid(client)
            .and_then(|p| i32::try_from(p).ok())
            .filter(|p| *p > 0)
            .ok_or_else(|| format!("no worker process for client {client}"))?;
        // SAFETY: kill(2) has no memory-safety preconditions; the pid is a child the driver has not
        // reaped yet (it waits for every worker only after the case), leading its own process group.
        if unsafe { libc::kill(-pid, signal) } == 0 {
            Ok(())
        } else {
            Err(format!(
                "signal {signal} to worker {client}: {}",
                std::io::Error::last_os_error()
            ))
        }
    }

    /// Sends a command to `client`; false if it is gone.
    pub(crate) fn send(&self, client: u32, command: WorkerCommand) -> bool {
        self.commands
            .get(client as usize)
            .is_some_and(|tx| tx.send(command).is_ok())
    }

    /// Records a worker the fault killed.
    pub(crate) fn record_crash(&self, crash: Crash) {
        self.crashes
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(crash);
    }

    /// The workers killed so far.
    pub(crate) fn crashes(&self) -> Vec<Crash> {
        self.crashes
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_starvation_is_applied_only_when_every_runtime_thread_was_held() {
        assert_eq!(
            starve_evidence(2, 2, 42, Some(1990.4)),
            Ok(
                "all 2 runtime threads of worker process 42 were held for 1990 ms (/proc/42/task)"
                    .into()
            )
        );
        // One held thread of two: the runtime ran on the other (it used to count as applied).
        let one = starve_evidence(1, 2, 42, Some(1990.0)).expect_err("one of two");
        assert!(one.starts_with("only 1 of the 2 runtime threads"), "{one}");
        assert!(starve_evidence(0, 2, 42, None).is_err());
        assert!(runtime_threads() >= 1);
    }
}
