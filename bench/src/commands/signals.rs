//! The process's stop signal, shared by every command that measures (`run`, `compare` through it,
//! `scale`): the first SIGINT or SIGTERM asks the command to stop and write what it measured, marked
//! incomplete (exit 130); a second kills the servers and worker processes and exits at once.

use crate::base::stop::StopSignal;
use crate::driver::worker_link::kill_all_workers;

/// The process's stop signal, set by the first SIGINT (Ctrl-C) or SIGTERM (what `timeout`,
/// systemd, Kubernetes and CI send): the run stops and writes what it measured. The watcher is
/// installed once per process, on the first call, so a signal between two runs of a `compare` stops
/// it as well (a signal already received is not forgotten). A second signal kills servers and
/// workers and exits at once.
pub(crate) fn stop_signals() -> StopSignal {
    static SIGNALS: std::sync::OnceLock<StopSignal> = std::sync::OnceLock::new();
    SIGNALS
        .get_or_init(|| {
            let interrupt = StopSignal::new();
            tokio::spawn(watch_stop_signals(interrupt.clone()));
            interrupt
        })
        .clone()
}

/// Waits for SIGINT or SIGTERM; its name, or `None` when signals cannot be watched.
async fn next_stop_signal(terminate: &mut tokio::signal::unix::Signal) -> Option<&'static str> {
    tokio::select! {
        r = tokio::signal::ctrl_c() => r.ok().map(|()| "interrupted"),
        s = terminate.recv() => s.map(|()| "terminated (SIGTERM)"),
    }
}

/// First signal: stop the run and write what was measured. Second: kill servers and workers, exit
/// 130.
async fn watch_stop_signals(interrupt: StopSignal) {
    let Ok(mut terminate) =
        tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
    else {
        return;
    };
    let Some(how) = next_stop_signal(&mut terminate).await else {
        return;
    };
    interrupt.set();
    eprintln!(
        "lockbench: {how}; stopping and writing what was measured (Ctrl-C again to quit now)"
    );
    if next_stop_signal(&mut terminate).await.is_some() {
        lockbench_servers::kill_all_servers();
        kill_all_workers();
        std::process::exit(crate::base::error::EXIT_INTERRUPTED);
    }
}
