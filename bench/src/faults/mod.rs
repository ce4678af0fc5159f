//! Faults (docs/design.md §6): what a scenario asks to inject and how it is injected, one file per
//! family holding both — the settings its kinds take, parsed and checked, what they need of the
//! strategy's kind, and how they are applied and lifted — beside what every family shares: the fault
//! as written and checked ([`spec`]), the kinds ([`kind`]), which strategies a fault applies to
//! ([`applicability`]: where the strategy's kind offers what its family needs), and the machinery
//! that injects them during a case and records each fault's window (kind, target, parameters, start
//! and stop relative to the case start, and what followed) in the results.
//!
//! | module | job |
//! |---|---|
//! | [`kind`] | the kinds of fault, each in its family, and the terms a family describes them in |
//! | [`spec`] | a fault as written ([`FaultFile`], `--fault`) and what every checked fault takes ([`spec::Spec`]); a family's [`spec::Profile`] |
//! | [`families`] | each kind's family: a checked fault ([`FaultSpec`]: its family's own settings in a [`families::FamilySpec`]), checking a fault as written, its results' settings, its own servers |
//! | [`worker_process`], [`server_pause`], [`redis_commands`], [`network`], [`failovers`], [`leader_kill`], [`node_faults`], [`sessions`] | the families: each one's spec and injection |
//! | [`applicability`] | which fault applies to which strategy |
//! | [`board`] | the workers' hold events: who holds what now, what happened since |
//! | [`runner`] | the schedule: wait, apply through the family, lift, collect the windows |
//! | [`server_strike`] | what every fault on the server shares: its victim, measuring what followed |
//! | [`env`] | what the fault tasks share: server access, records, target choice, measuring |
//! | [`workers`] | signals and commands ([`workers::WorkerCommand`]) to worker processes |
//! | [`proxies`] | a TCP proxy per client between it and the server |
//! | [`topology`] | servers a case starts for itself (primary + replica, 3-member clusters) |
//! | [`cgroup`] | a CPU quota through a cgroup |
//!
//! A case with faults gets a [`CaseFaults`]: the worker modes ask it for each client's endpoints
//! (proxies in front of the server when a fault needs them), feed it the workers' hold events, start
//! it when the case starts and collect its windows when the case ends.

pub(crate) mod applicability;
pub(crate) mod board;
pub(crate) mod cgroup;
pub(crate) mod env;
pub(crate) mod failovers;
pub(crate) mod families;
pub(crate) mod kind;
pub(crate) mod leader_kill;
pub(crate) mod network;
pub(crate) mod node_faults;
pub(crate) mod proxies;
pub(crate) mod redis_commands;
pub(crate) mod runner;
pub(crate) mod server_pause;
pub(crate) mod server_strike;
pub(crate) mod sessions;
pub(crate) mod spec;
pub(crate) mod topology;
pub(crate) mod worker_process;
pub(crate) mod workers;

pub(crate) use self::families::{
    FaultSpec, case_topology, needs_processes, needs_proxies, own_topology,
};
pub(crate) use self::kind::Target;
pub(crate) use self::spec::{FaultFile, parse_fault_text};

use std::sync::Arc;

use lockbench_reports::model::{FaultWindow, ServerInfo};
use tokio::task::JoinHandle;

use self::board::HoldBoard;
use self::env::{FaultEnv, ServerAccess};
use self::failovers::FailoverSpec;
use self::families::FamilySpec;
use self::proxies::ClientProxies;
use self::workers::WorkerControl;
use crate::backends::stats::StatsSource;
use crate::backends::{Backends, EndpointAddrs};
use crate::base::clock::MonoClock;
use crate::base::holds::HoldSink;
use crate::base::stop::StopSignal;
use crate::kinds::CaseServers;
use crate::strategies::Strategy;

/// The faults of one case and what they need: the hold board, the clients' endpoints (through
/// proxies when needed) and the servers started for the case. Dropping it stops those servers and
/// proxies.
#[derive(Debug)]
pub(crate) struct CaseFaults {
    specs: Vec<FaultSpec>,
    board: Arc<HoldBoard>,
    base: EndpointAddrs,
    per_client: Vec<EndpointAddrs>,
    proxies: Option<Arc<ClientProxies>>,
    server: ServerAccess,
    own: Option<Arc<dyn CaseServers>>,
    /// What the case's lock names start with (key `k` is `{key_prefix}{k}`).
    key_prefix: String,
}

impl CaseFaults {
    /// A case without faults: every client uses `base`.
    pub(crate) fn none(base: EndpointAddrs) -> Self {
        CaseFaults {
            specs: Vec::new(),
            board: HoldBoard::new(),
            base,
            per_client: Vec::new(),
            proxies: None,
            server: ServerAccess::None,
            own: None,
            key_prefix: String::new(),
        }
    }

    /// The same, told what the case's lock names start with (a cluster fault fails over the master
    /// of the target's lock).
    pub(crate) fn with_key_prefix(self, key_prefix: &str) -> Self {
        CaseFaults {
            key_prefix: key_prefix.to_owned(),
            ..self
        }
    }

    /// Prepares `specs` for a case of `strategy` with `clients` clients: starts the servers a fault
    /// destroys and the proxies a fault needs. Whether every fault applies is the plan's to say
    /// (a case it skips never gets here); an error is a set-up that failed, in one line.
    pub(crate) async fn prepare(
        specs: &[FaultSpec],
        strategy: &'static Strategy,
        clients: u32,
        backends: &Backends,
        endpoints: &EndpointAddrs,
    ) -> Result<Self, String> {
        if specs.is_empty() {
            return Ok(Self::none(endpoints.clone()));
        }
        let fail = |e: String| format!("fault set-up: {e}");
        let topology = case_topology(specs);
        let own = match topology {
            None => None,
            Some(topology) => {
                let lag = specs
                    .iter()
                    .filter_map(|s| match s.family {
                        FamilySpec::Failover(FailoverSpec::Replica { replication_lag }) => {
                            Some(replication_lag)
                        }
                        _ => None,
                    })
                    .max()
                    .unwrap_or_default();
                let kind = strategy.server;
                let started =
                    tokio::task::spawn_blocking(move || topology::start(topology, kind, lag))
                        .await
                        .map_err(|e| fail(format!("server start task failed: {e}")))?
                        .map_err(fail)?;
                Some(started)
            }
        };
        let base = match &own {
            Some(own) => own.endpoints(),
            None => endpoints.clone(),
        };
        let server = match (&own, backends.get(strategy.server)) {
            (Some(own), _) => ServerAccess::Own(own.clone()),
            (None, Some(b)) => match b.socket() {
                Some(socket) => ServerAccess::Shared {
                    kind: b.kind(),
                    socket,
                    pid: b.pid(),
                },
                None => ServerAccess::None,
            },
            (None, None) => ServerAccess::None,
        };
        let (proxies, per_client) = if specs.iter().any(|s| needs_proxies(s.kind)) {
            let (proxies, per_client) =
                ClientProxies::start(clients, strategy.server, &base).map_err(fail)?;
            (Some(Arc::new(proxies)), per_client)
        } else {
            (None, Vec::new())
        };
        Ok(CaseFaults {
            specs: specs.to_vec(),
            board: HoldBoard::new(),
            base,
            per_client,
            proxies,
            server,
            own,
            key_prefix: String::new(),
        })
    }

    /// Whether the case injects anything.
    pub(crate) fn is_active(&self) -> bool {
        !self.specs.is_empty()
    }

    /// The endpoints `client` connects to.
    pub(crate) fn endpoints(&self, client: u32) -> EndpointAddrs {
        self.per_client
            .get(client as usize)
            .unwrap_or(&self.base)
            .clone()
    }

    /// The hold board (processes mode posts the workers' events here).
    pub(crate) fn board(&self) -> &Arc<HoldBoard> {
        &self.board
    }

    /// A sink for in-process workers' hold events; `None` when the case has no faults.
    pub(crate) fn hold_sink(&self) -> Option<HoldSink> {
        self.is_active().then(|| self.board.sink())
    }

    /// Where the server cost is read when the case runs on its own servers.
    pub(crate) fn stats_source(&self) -> Option<StatsSource> {
        self.own.as_deref().and_then(topology::stats_source)
    }

    /// The servers started for the case, for the results' environment.
    pub(crate) fn server_info(&self) -> Option<ServerInfo> {
        self.own.as_ref().map(|o| o.info())
    }

    /// Starts the faults' schedule for a case that started at `go` and ends when `stop` is set;
    /// the handle yields the windows once the case has ended. `None` when there are no faults.
    pub(crate) fn start(
        &self,
        clock: MonoClock,
        go: u64,
        stop: StopSignal,
        workers: Option<WorkerControl>,
    ) -> Option<JoinHandle<Vec<FaultWindow>>> {
        if !self.is_active() {
            return None;
        }
        let env = FaultEnv {
            clock,
            go,
            stop,
            board: self.board.clone(),
            workers,
            proxies: self.proxies.clone(),
            server: self.server.clone(),
            key_prefix: self.key_prefix.clone(),
        };
        Some(tokio::spawn(runner::run_all(self.specs.clone(), env)))
    }
}

/// Awaits a started schedule's windows (none when there was no schedule or its task failed).
pub(crate) async fn windows(handle: Option<JoinHandle<Vec<FaultWindow>>>) -> Vec<FaultWindow> {
    match handle {
        Some(h) => h.await.unwrap_or_default(),
        None => Vec::new(),
    }
}
