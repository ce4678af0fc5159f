//! What the fault tasks of one case share: the server they act on ([`ServerAccess`]), their
//! environment ([`FaultEnv`]), each fault's [`Record`] (turned into its `FaultWindow`), and the steps
//! every kind uses: waiting on the case's clock, picking the target client, measuring what followed
//! from the hold events — when the targeted holder noticed its loss, and when the lock was available
//! again.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use lockbench_reports::model::FaultWindow;

use super::board::HoldBoard;
use super::proxies::ClientProxies;
use super::topology::CaseServers;
use super::workers::WorkerControl;
use crate::backends::ServerKind;
use crate::clock::{MonoClock, duration_ns};
use crate::holds::EndedBy;
use crate::holds::{HoldChange, HoldEvent};
use crate::stop::StopSignal;
use crate::workload::faults::{FaultKind, FaultSpec, Target};

/// The server a case's faults act on.
#[derive(Debug, Clone)]
pub(crate) enum ServerAccess {
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
pub(crate) struct FaultEnv {
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
    /// What the case's lock names start with (key `k` is `{key_prefix}{k}`).
    pub key_prefix: String,
}

/// One fault's record while it runs (ns), turned into a [`FaultWindow`] at the end.
#[derive(Debug)]
pub(super) struct Record {
    pub(super) kind: FaultKind,
    pub(super) target: String,
    pub(super) parameters: BTreeMap<String, serde_json::Value>,
    pub(super) start: u64,
    pub(super) stop: Option<u64>,
    pub(super) recovery: Option<u64>,
    pub(super) noticed: Option<u64>,
    pub(super) notes: Vec<String>,
}

impl Record {
    pub(super) fn new(spec: &FaultSpec, planned: u64) -> Self {
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

    pub(super) fn param(&mut self, name: &str, value: impl Into<serde_json::Value>) {
        self.parameters.insert(name.to_owned(), value.into());
    }

    pub(super) fn note(&mut self, note: impl Into<String>) {
        self.notes.push(note.into());
    }

    pub(super) fn window(self, go: u64) -> FaultWindow {
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
pub(super) async fn sleep_until(env: &FaultEnv, at: u64) -> bool {
    tokio::select! {
        biased;
        _ = env.stop.wait() => false,
        _ = tokio::time::sleep_until(env.clock.instant(at).into()) => true,
    }
}

/// Waits `d` (how long a fault lasts) or until the case ends, whichever comes first; the caller then
/// lifts the fault.
pub(super) async fn hold_for(env: &FaultEnv, d: Option<Duration>) {
    if let Some(d) = d {
        let until = env.clock.now() + duration_ns(d);
        sleep_until(env, until).await;
    }
}

/// Runs `f` on the blocking pool.
pub(super) async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, String> + Send + 'static,
) -> Result<T, String> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| format!("task failed: {e}"))?
}

/// A client that held a key when the fault hit it.
#[derive(Debug, Clone, Copy)]
pub(super) struct Victim {
    pub(super) client: u32,
    pub(super) held: Option<(u32, u64)>,
}

/// The fault's target client: `holder` waits for the first acquire at or after `from` whose holder
/// still holds when looked at; `client:N` is taken as it is.
pub(super) async fn pick_client(env: &FaultEnv, target: Target, from: u64) -> Option<Victim> {
    match target {
        Target::Client(client) => Some(Victim {
            client,
            held: env.board.holding(client),
        }),
        Target::Holder => {
            // From the start of the log: an acquire posted just before this fault task looked (the
            // first one of a case, for a fault at 0 s) still counts.
            let mut cursor = 0;
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
pub(super) async fn measure_victim(
    env: &FaultEnv,
    victim: Victim,
    cursor: usize,
    t0: u64,
    rec: &mut Record,
) {
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
pub(super) async fn measure_any(env: &FaultEnv, cursor: usize, t0: u64, rec: &mut Record) {
    let mut c = cursor;
    rec.recovery = env
        .board
        .next(&mut c, &env.stop, |e| {
            (e.change == HoldChange::Acquired && e.at_ns >= t0).then_some(e.at_ns)
        })
        .await;
}

pub(super) fn describe_victim(victim: &Victim) -> String {
    match victim.held {
        Some((key, _)) => format!("client {} (holding key {key})", victim.client),
        None => format!("client {}", victim.client),
    }
}
