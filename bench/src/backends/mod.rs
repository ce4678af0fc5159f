//! The servers a run talks to: the addresses the user gave (checked before anything runs) or servers
//! lockbench starts itself (through `lockbench-servers`) and stops at the end — dropping [`Backends`]
//! kills them, and a Ctrl-C handler can kill them all with `lockbench_servers::kill_all_servers`.

use crate::kinds::address;
pub mod monitor;
pub mod stats;

use std::collections::{BTreeMap, BTreeSet};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use lockbench_reports::model::ServerInfo;

use crate::base::error::BenchError;
use crate::kinds::ServerKindExt;
use crate::kinds::Started;
pub use crate::kinds::{self, EndpointAddrs, ServerKind};

const PROBE_TIMEOUT: Duration = Duration::from_secs(2);

/// How a server the user gave is checked through the strategies' own client (user/password, TLS, a
/// cluster's layout read from the seeds, the primary asked of the Sentinels): the registry says it per
/// server kind (`strategies::check_address`). `Ok(Some(version))` when the server told its version;
/// an error is one line without the password.
pub type AddressCheck = for<'a> fn(ServerKind, &'a str) -> AddressCheckFuture<'a>;

pub use crate::kinds::AddressCheckFuture;

/// Server addresses given on the command line, by kind (`Debug` shows them redacted).
#[derive(Clone, Default, PartialEq, Eq)]
pub struct GivenAddresses {
    by_kind: BTreeMap<ServerKind, String>,
}

impl GivenAddresses {
    /// The address given for `kind` (its flag, [`ServerEntry::flag`](kinds::ServerEntry)).
    pub fn get(&self, kind: ServerKind) -> Option<&str> {
        self.by_kind.get(&kind).map(String::as_str)
    }

    /// Whether no address was given: lockbench starts every server itself.
    pub fn is_empty(&self) -> bool {
        self.by_kind.is_empty()
    }

    /// Gives `address` for `kind`.
    pub fn set(&mut self, kind: ServerKind, address: String) {
        self.by_kind.insert(kind, address);
    }
}

impl std::fmt::Debug for GivenAddresses {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut map = f.debug_map();
        for (kind, address) in &self.by_kind {
            map.entry(&kind.name(), &lockers::address::redact(address));
        }
        map.finish()
    }
}

/// A server lockbench started: its process ids (one per socket) and the handle that stops it.
struct Managed {
    pids: Vec<Option<u32>>,
    _handle: Box<dyn std::any::Any + Send + Sync>,
}

/// One server in use. Its address may carry credentials: it is shown redacted (results, `Debug`).
pub struct Backend {
    kind: ServerKind,
    address: String,
    sockets: Vec<SocketAddr>,
    version: Option<String>,
    startup: Option<Duration>,
    managed: Option<Managed>,
}

impl std::fmt::Debug for Backend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Backend")
            .field("kind", &self.kind)
            .field("address", &lockers::address::redact(&self.address))
            .field("sockets", &self.sockets)
            .field("version", &self.version)
            .field("managed", &self.managed.is_some())
            .finish_non_exhaustive()
    }
}

impl Backend {
    /// The user and password in its address (the first one of a list), if any.
    pub fn credentials(&self) -> Option<lockers::address::Credentials> {
        address::credentials(self.address.split(',').next().unwrap_or(""))
    }

    /// Whether its address asks for TLS.
    pub fn is_tls(&self) -> bool {
        address::is_tls(&self.address)
    }

    /// Its address as strategies take it. It may carry credentials: never show it (see
    /// [`info`](Self::info) for the redacted one).
    pub fn address(&self) -> &str {
        &self.address
    }

    /// Which server.
    pub fn kind(&self) -> ServerKind {
        self.kind
    }

    /// The first socket address (where statistics are asked).
    pub fn socket(&self) -> Option<SocketAddr> {
        self.sockets.first().copied()
    }

    /// Every socket with its server's process id (for servers lockbench started): Redlock's nodes,
    /// or the one server.
    pub fn nodes(&self) -> Vec<(SocketAddr, Option<u32>)> {
        self.sockets
            .iter()
            .enumerate()
            .map(|(i, socket)| {
                let pid = self
                    .managed
                    .as_ref()
                    .and_then(|m| m.pids.get(i).copied().flatten());
                (*socket, pid)
            })
            .collect()
    }

    /// The process id, for servers lockbench started.
    pub fn pid(&self) -> Option<u32> {
        self.managed
            .as_ref()
            .and_then(|m| m.pids.first().copied().flatten())
    }

    /// What the results say about it.
    pub fn info(&self) -> ServerInfo {
        ServerInfo {
            kind: self.kind.name().to_owned(),
            version: self.version.clone(),
            address: lockers::address::redact(&self.address),
            managed: self.managed.is_some(),
            startup_ms: self.startup.map(|d| d.as_secs_f64() * 1e3),
        }
    }
}

/// Every server of a run.
#[derive(Debug, Default)]
pub struct Backends {
    servers: Vec<Backend>,
}

impl Backends {
    /// Checks every address the user gave (unreachable → a usage error naming the flag; a Redis cluster,
    /// Sentinels over TLS and etcd also through `check`, the strategies' own client), then starts each
    /// needed server that was not given. Blocking work runs off the async threads.
    pub async fn prepare(
        needed: &BTreeSet<ServerKind>,
        given: &GivenAddresses,
        check: AddressCheck,
    ) -> Result<Self, BenchError> {
        let given = given.clone();
        let needed = needed.clone();
        let mut backends =
            tokio::task::spawn_blocking(move || Self::prepare_blocking(&needed, &given))
                .await
                .map_err(|e| BenchError::failed(format!("server set-up task failed: {e}")))??;
        for server in backends.servers.iter_mut().filter(|s| {
            s.managed.is_none()
                && s.kind
                    .server()
                    .is_some_and(|entry| (entry.checked_by_client)(&s.address))
        }) {
            let version = check_access(check, server).await?;
            server.version = version.or(server.version.take());
        }
        Ok(backends)
    }

    fn prepare_blocking(
        needed: &BTreeSet<ServerKind>,
        given: &GivenAddresses,
    ) -> Result<Self, BenchError> {
        let mut servers = Vec::new();
        for (kind, address) in &given.by_kind {
            servers.push(check_given(*kind, address)?);
        }
        for kind in needed.iter().copied().filter(|k| k.is_external()) {
            if !servers.iter().any(|s| s.kind == kind) {
                servers.push(start(kind)?);
            }
        }
        Ok(Backends { servers })
    }

    /// Every server of the run, in the order of their kinds ([`kinds::all`]).
    pub fn all(&self) -> Vec<&Backend> {
        let mut all: Vec<&Backend> = self.servers.iter().collect();
        all.sort_by_key(|s| s.kind);
        all
    }

    /// The server of `kind`, if the run has one.
    pub fn get(&self, kind: ServerKind) -> Option<&Backend> {
        self.servers.iter().find(|s| s.kind == kind)
    }

    /// The addresses strategies connect to.
    pub fn endpoints(&self) -> EndpointAddrs {
        let mut endpoints = EndpointAddrs::default();
        for server in &self.servers {
            if let Some(entry) = server.kind.server() {
                (entry.set_endpoint)(&mut endpoints, &server.address);
            }
        }
        endpoints
    }

    /// What the results say about the servers.
    pub fn infos(&self) -> Vec<ServerInfo> {
        self.servers.iter().map(Backend::info).collect()
    }
}

/// The server of `kind` the user gave at `address`, probed (its sockets reached, its version read).
fn check_given(kind: ServerKind, address: &str) -> Result<Backend, BenchError> {
    let shown = lockers::address::redact(address);
    let Some(entry) = kind.server() else {
        return Err(BenchError::usage(format!(
            "{} is not a server: {shown}",
            kind.name()
        )));
    };
    let flag = entry.flag;
    let bad = |why: String| BenchError::usage(format!("--{flag} {shown}: {why}"));
    let address = &kind.password_from_env(address).map_err(bad)?;
    let sockets = (entry.sockets)(address).map_err(bad)?;
    for socket in &sockets {
        TcpStream::connect_timeout(socket, PROBE_TIMEOUT)
            .map_err(|e| bad(format!("cannot connect to {socket}: {e}")))?;
    }
    let address = (entry.as_endpoint)(address);
    let version = (entry.version)(&address, sockets[0]).map_err(bad)?;
    Ok(Backend {
        kind,
        address,
        sockets,
        version,
        startup: None,
        managed: None,
    })
}

/// Checks the server the user gave, `server`, through `check`: an error is bad input, one line naming
/// the flag, without the password.
async fn check_access(check: AddressCheck, server: &Backend) -> Result<Option<String>, BenchError> {
    let flag = server.kind.server().map_or("", |entry| entry.flag);
    check(server.kind, &server.address).await.map_err(|e| {
        BenchError::usage(format!(
            "--{flag} {}: {e}",
            lockers::address::redact(&server.address)
        ))
    })
}

/// Starts a server of `kind` on loopback.
fn start(kind: ServerKind) -> Result<Backend, BenchError> {
    let failed =
        |why: String| BenchError::failed(format!("could not start {}: {why}", kind.name()));
    let entry = kind
        .server()
        .ok_or_else(|| failed("it is not a server".to_owned()))?;
    let Started {
        address,
        sockets,
        pids,
        version,
        startup,
        handle,
    } = (entry.start)().map_err(|e| failed(e.to_string()))?;
    Ok(Backend {
        kind,
        address,
        sockets,
        version: (!version.is_empty()).then_some(version),
        startup: Some(startup),
        managed: Some(Managed {
            pids,
            _handle: handle,
        }),
    })
}
