//! What a fault can do to client processes (processes mode): signal them (SIGSTOP, SIGCONT, SIGKILL),
//! send them commands (starve your runtime, run a CPU hog), and the record of the ones it killed, so the
//! driver does not count a killed worker's silence as a failure.

use std::collections::HashMap;
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

/// What `/proc` showed of threads renamed [`STARVED_THREAD`] during a starvation: the most held at
/// once, and for how long that many were (ms, from the first to the last sight of them; `None`:
/// none ever was).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct HeldSeen {
    /// The most held at once.
    pub most: usize,
    /// From the first to the last sight of `most` held.
    pub held_ms: Option<f64>,
}

/// What a worker whose client is a peer reports of its library's starvation
/// ([`lockers::Locker::starve_library`]): its adapter's answer, sent before the worker starves its
/// own runtime.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum LibraryStarve {
    /// Adapter process `pid` held `held` of the `threads` its library renews on.
    Held {
        /// The adapter process.
        pid: u32,
        /// Held when it answered.
        held: u32,
        /// The library's threads.
        threads: u32,
    },
    /// It could not (an adapter without `starve`, an error): why.
    Failed {
        /// Why.
        why: String,
    },
}

/// The library's part of a peer's starvation: what the worker reported (`None`: nothing came) and
/// what `/proc` showed of the adapter process.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct LibrarySeen {
    /// The worker's report.
    pub report: Option<LibraryStarve>,
    /// The adapter's threads seen held.
    pub seen: HeldSeen,
}

/// The evidence of a starvation from what `/proc` showed: `runtime` of worker process `pid`, whose
/// claim is that every one of its `threads` runtime threads was held at once; for a peer, `library`
/// too, whose claim is that every thread its library renews on was (in the adapter process), or the
/// library renewed on and the starvation did not happen to it. Each must have lasted at least
/// [`HELD_SHARE`] of the `planned_ms` the fault asked for: a shorter one is not the experiment the
/// scenario describes.
pub(crate) fn starve_evidence(
    runtime: HeldSeen,
    threads: usize,
    pid: u32,
    library: Option<&LibrarySeen>,
    planned_ms: f64,
) -> Result<String, String> {
    let too_short = |ms: f64, whose: &str| {
        (ms < planned_ms * HELD_SHARE).then(|| {
            format!(
                "{whose} held for {ms:.0} ms of the {planned_ms:.0} ms planned: the starvation was \
                 shorter than the fault"
            )
        })
    };
    let runtime_ms = match runtime.held_ms {
        Some(ms) if runtime.most >= threads => {
            if let Some(short) = too_short(
                ms,
                &format!("the runtime threads of worker process {pid} were"),
            ) {
                return Err(short);
            }
            ms
        }
        Some(ms) => {
            return Err(format!(
                "only {} of the {threads} runtime threads of worker process {pid} were held at \
                 once (for {ms:.0} ms; /proc/{pid}/task): the others kept its runtime going",
                runtime.most
            ));
        }
        None => {
            return Err(format!(
                "no runtime thread of worker process {pid} was held (/proc/{pid}/task)"
            ));
        }
    };
    let runtime_held = format!(
        "all {threads} runtime threads of worker process {pid} were held for {runtime_ms:.0} ms"
    );
    let Some(library) = library else {
        return Ok(format!("{runtime_held} (/proc/{pid}/task)"));
    };
    let (adapter, held, of) = match &library.report {
        None => {
            return Err(format!(
                "{runtime_held}, but the worker reported nothing of its library's threads, which \
                 renew in its adapter process"
            ));
        }
        Some(LibraryStarve::Failed { why }) => {
            return Err(format!(
                "{runtime_held}, but its library's threads were not held: {why}"
            ));
        }
        Some(LibraryStarve::Held { pid, held, threads }) => {
            (*pid, *held as usize, *threads as usize)
        }
    };
    let most = library.seen.most;
    match library.seen.held_ms {
        Some(ms) if of > 0 && held >= of && most >= of => match too_short(
            ms,
            &format!(
                "{runtime_held}, but the library threads of its adapter process {adapter} were"
            ),
        ) {
            Some(short) => Err(short),
            None => Ok(format!(
                "{runtime_held} and all {of} library threads of its adapter process {adapter} for \
             {ms:.0} ms (/proc/{pid}/task, /proc/{adapter}/task)"
            )),
        },
        Some(ms) => Err(format!(
            "{runtime_held}, but only {most} of the {of} library threads of its adapter process \
             {adapter} were held at once (for {ms:.0} ms; the adapter said {held}; \
             /proc/{adapter}/task): the others kept the library renewing"
        )),
        None => Err(format!(
            "{runtime_held}, but no library thread of its adapter process {adapter} was held \
             (/proc/{adapter}/task; the adapter said {held} of {of})"
        )),
    }
}

/// The share of a starvation's planned length its threads must have been held for it to count as
/// applied (the watch polls every 5 ms, and the runtime starts after the adapter's answer).
pub(crate) const HELD_SHARE: f64 = 0.9;

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
    peer_adapters: bool,
    library_starves: Arc<Mutex<HashMap<u32, LibraryStarve>>>,
}

impl WorkerControl {
    /// Control over workers with these pids and command channels (both by client index);
    /// `peer_adapters`: each worker's client is a peer, its library in an adapter process of its own.
    pub(crate) fn new(
        pids: Vec<u32>,
        commands: Vec<mpsc::UnboundedSender<WorkerCommand>>,
        peer_adapters: bool,
    ) -> Self {
        WorkerControl {
            pids: Arc::new(pids),
            commands: Arc::new(commands),
            crashes: Arc::default(),
            peer_adapters,
            library_starves: Arc::default(),
        }
    }

    /// Whether each worker's client is a peer whose library runs in an adapter process of its own
    /// (a starvation must reach the library's threads there too).
    pub(crate) fn peer_adapters(&self) -> bool {
        self.peer_adapters
    }

    /// Records what `client` reported of its library's starvation.
    pub(crate) fn record_library_starve(&self, client: u32, report: LibraryStarve) {
        self.library_starves
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(client, report);
    }

    /// What `client` reported of its library's last starvation, taken (`None`: nothing yet).
    pub(crate) fn take_library_starve(&self, client: u32) -> Option<LibraryStarve> {
        self.library_starves
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&client)
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

    /// The planned length of the starvations below (ms).
    const PLANNED: f64 = 2000.0;

    #[test]
    fn a_starvation_is_applied_only_when_every_runtime_thread_was_held() {
        let seen = |most, ms| HeldSeen { most, held_ms: ms };
        assert_eq!(
            starve_evidence(seen(2, Some(1990.4)), 2, 42, None, PLANNED),
            Ok(
                "all 2 runtime threads of worker process 42 were held for 1990 ms (/proc/42/task)"
                    .into()
            )
        );
        // One held thread of two: the runtime ran on the other (it used to count as applied).
        let one =
            starve_evidence(seen(1, Some(1990.0)), 2, 42, None, PLANNED).expect_err("one of two");
        assert!(one.starts_with("only 1 of the 2 runtime threads"), "{one}");
        assert!(starve_evidence(seen(0, None), 2, 42, None, PLANNED).is_err());
        // Every thread held, but for half the fault: not the experiment described.
        let short =
            starve_evidence(seen(2, Some(1000.0)), 2, 42, None, PLANNED).expect_err("short");
        assert!(
            short.contains("held for 1000 ms of the 2000 ms planned"),
            "{short}"
        );
        assert!(runtime_threads() >= 1);
    }

    #[test]
    fn a_peers_starvation_is_applied_only_when_its_librarys_threads_were_held_too() {
        let seen = |most, ms| HeldSeen { most, held_ms: ms };
        let runtime = seen(2, Some(1990.0));
        let library = |report, most, ms| LibrarySeen {
            report,
            seen: seen(most, ms),
        };
        let held = |held, threads| {
            Some(LibraryStarve::Held {
                pid: 43,
                held,
                threads,
            })
        };
        assert_eq!(
            starve_evidence(
                runtime,
                2,
                42,
                Some(&library(held(33, 33), 33, Some(1995.2))),
                PLANNED
            ),
            Ok(
                "all 2 runtime threads of worker process 42 were held for 1990 ms and all 33 \
                library threads of its adapter process 43 for 1995 ms (/proc/42/task, \
                /proc/43/task)"
                    .into()
            )
        );
        // The runtime starved while the library renewed on: not applied, whatever the runtime saw.
        for (case, why) in [
            (library(None, 0, None), "reported nothing"),
            (
                library(
                    Some(LibraryStarve::Failed {
                        why: "no `starve`".into(),
                    }),
                    0,
                    None,
                ),
                "were not held: no `starve`",
            ),
            (library(held(32, 33), 32, Some(1995.0)), "only 32 of the 33"),
            (library(held(33, 33), 31, Some(1995.0)), "only 31 of the 33"),
            (library(held(33, 33), 0, None), "no library thread"),
            (library(held(0, 0), 0, None), "no library thread"),
            (
                library(held(33, 33), 33, Some(900.0)),
                "were held for 900 ms of the 2000 ms planned",
            ),
        ] {
            let not = starve_evidence(runtime, 2, 42, Some(&case), PLANNED).expect_err(why);
            assert!(not.contains(why), "{not}");
        }
        // A runtime not starved fails first.
        let runtime_only = starve_evidence(
            seen(1, Some(1990.0)),
            2,
            42,
            Some(&library(held(33, 33), 33, Some(1995.0))),
            PLANNED,
        );
        assert!(
            runtime_only
                .expect_err("runtime")
                .starts_with("only 1 of the 2 runtime")
        );
    }
}
