//! `peer`: a lock library in another language as a strategy. The client is a child process (an
//! *adapter*) speaking JSON lines on stdin/stdout (`adapters/PROTOCOL.md`); this side turns its replies
//! and events into the same [`Lease`]s and [`LockEvent`]s the native strategies produce, so the driver and
//! the oracle see a peer exactly as a native strategy.
//!
//! - One [`PeerLocker`] is one client of the library: its own library client instance (connection,
//!   session, renewal) in an adapter process. By default each client starts a process of its own; with
//!   [`PeerProcesses`] the clients of an adapter that serves many (`PeerConfig::serves_many_clients`)
//!   share one process, each still its own library client, as lockbench's own strategies run every
//!   client of a case in one process with its own connections. Requests name their client
//!   (`client` on the wire); lease ids are unique per process, so events need no client.
//! - Ids are `<runtime>-<library>` (`py-redis-lock`, `node-redlock`, `jvm-curator`, each declared by
//!   its manifest, see [`catalog`] and [`manifest`]): the
//!   runtime prefix names what actually runs the client, keeps peer ids apart from native ids (`redlock`
//!   vs `node-redlock`) and keeps ids kebab-case, safe in file names, flags and TOML like the native ones.
//! - The adapter's monotonic timestamps are mapped to this process's [`Instant`]s by a clock sync at
//!   start (`ping`; the sample with the smallest round trip wins).
//! - The local deadline follows the same rule as native strategies: from when the acquire (or a renewal
//!   the adapter reports) was sent, plus the TTL granted. An adapter whose library renews without telling
//!   (`renew_events: false`, e.g. a ZooKeeper session) has an open deadline; its leases end on a `lost`
//!   event only.
//! - Fencing tokens: the library's, where it has one; otherwise the token is 0 and the capability says so.
//! - A `lost` event from an adapter that declared `lost_signal: false` breaks the protocol: the driver
//!   acts on losses only where the signal is declared, so a declaration that hides what the library
//!   does fails the adapter (its leases are lost, naming the breach) instead of passing unseen.
//! - An adapter that exits or does not answer within [`PeerConfig::request_timeout`] (plus the acquire's
//!   wait) is a [`LockError::Backend`] naming the adapter and its log; its leases are lost.

pub mod catalog;
pub mod credentials;
pub mod manifest;
mod process;
mod wire;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use serde_json::{Map, Value};

use crate::error::LockError;
use crate::event::{Events, LockEvent};
use crate::lease::{AcquireOptions, FencingToken, Lease, LeaseHandle, LeaseMode, OwnerId};
use crate::locker::{Capabilities, LibraryThreadsHeld, Locker, PeerProcess};
use crate::settings::Renewal;
pub use process::PeerCommand;
use process::{AcquireWait, Adapter, ClientTag, Process};

/// An open deadline for leases the adapter renews without reporting it (about 30 years).
const OPEN_DEADLINE: Duration = Duration::from_secs(30 * 365 * 24 * 3600);

/// Settings of a [`PeerLocker`].
#[derive(Debug, Clone)]
pub struct PeerConfig {
    /// The peer id (`py-redis-lock`, ...); the adapter's `hello` must name the same.
    pub id: String,
    /// How to start the adapter.
    pub command: PeerCommand,
    /// Server addresses given to the adapter (`redis://127.0.0.1:6379`, `127.0.0.1:2181`,
    /// `http://127.0.0.1:2379`).
    pub servers: Vec<String>,
    /// Further adapter settings, passed in `hello`'s `config` as strings.
    pub settings: Vec<(String, String)>,
    /// The TTL of a watchdog lease (`renewal.ttl`, default 30 s), sent with each watchdog acquire. The
    /// library renews on its own schedule, so `renewal.ratio` is not sent.
    pub renewal: Renewal,
    /// How long any request may go unanswered (beyond an acquire's wait) before the adapter is declared
    /// hung (default 5 s).
    pub request_timeout: Duration,
    /// How long the adapter may take to start and answer `hello` (runtimes such as the JVM take
    /// seconds; default 30 s).
    pub start_timeout: Duration,
    /// Where the adapter's stderr log goes; default `<temp>/lockbench-peers/`.
    pub log_dir: Option<PathBuf>,
    /// The library version the adapter must report having loaded; another one fails the start with
    /// both versions and the install command. `None`: any version.
    pub pinned_version: Option<String>,
    /// Whether the adapter serves many clients in one process (its `hello` then declares
    /// `multi_client`); only then do the clients of [`PeerLocker::start_in`] share a process.
    pub serves_many_clients: bool,
}

impl PeerConfig {
    /// A config for `id` started by `command`, talking to `servers`, with the defaults above.
    pub fn new(id: impl Into<String>, command: PeerCommand, servers: Vec<String>) -> Self {
        PeerConfig {
            id: id.into(),
            command,
            servers,
            settings: Vec::new(),
            renewal: Renewal::default(),
            request_timeout: Duration::from_secs(5),
            start_timeout: Duration::from_secs(30),
            log_dir: None,
            pinned_version: None,
            serves_many_clients: false,
        }
    }
}

/// What the adapter said about itself in `hello`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PeerInfo {
    /// The library's name.
    pub library: String,
    /// The library's version, as installed.
    pub version: String,
    /// Whether the adapter reports renewals (`renewed` events).
    pub renew_events: bool,
    /// The smallest clock-sync round trip at start: a floor for the protocol's cost per request.
    pub ping_rtt: Duration,
    /// Whether the adapter can block the threads its library renews on (`starve`).
    pub starve: bool,
}

/// The adapter processes of one case (one per peer id), so the clients of an adapter that serves many
/// clients share one process. A process ends with its last client.
#[derive(Debug, Default)]
pub struct PeerProcesses {
    running: tokio::sync::Mutex<HashMap<String, Weak<Process>>>,
}

impl PeerProcesses {
    /// No processes yet.
    pub fn new() -> Arc<Self> {
        Arc::default()
    }
}

/// A lock library driven through an adapter process: one client of the library.
#[derive(Debug)]
pub struct PeerLocker {
    process: Arc<Process>,
    adapter: Arc<Adapter>,
    client: ClientTag,
    capabilities: Capabilities,
    info: PeerInfo,
    watchdog_timeout: Duration,
}

fn wire_error(adapter: &Adapter, key: &str, waited: Duration, e: wire::WireError) -> LockError {
    match e.kind.as_str() {
        "timeout" => LockError::Timeout {
            key: key.into(),
            waited,
        },
        "not_held" => LockError::NotHeld { key: key.into() },
        "unsupported" => LockError::Unsupported {
            strategy: "peer",
            what: format!("{}: {}", adapter.id, e.message),
        },
        "config" => LockError::Config(format!("peer {}: {}", adapter.id, e.message)),
        _ => adapter.backend_error(format_args!("library error: {}", e.message)),
    }
}

fn flag(caps: &Map<String, Value>, name: &str) -> bool {
    caps.get(name).and_then(Value::as_bool).unwrap_or(false)
}

fn ms(caps: &Map<String, Value>, name: &str, default: Duration) -> Duration {
    caps.get(name)
        .and_then(Value::as_f64)
        .filter(|v| v.is_finite() && *v >= 0.0)
        .map_or(default, |v| Duration::from_secs_f64(v / 1e3))
}

impl PeerLocker {
    /// Starts an adapter process for this one client, checks its `hello` and syncs clocks. A missing
    /// runtime is a `Config` error naming the install command.
    pub async fn start(config: PeerConfig, events: Events) -> Result<Self, LockError> {
        Self::open(config, events, None).await
    }

    /// Opens a client on `processes`' process for this adapter if it serves many clients (starting it
    /// for the first), else starts a process of its own as [`start`](Self::start) does.
    pub async fn start_in(
        config: PeerConfig,
        events: Events,
        processes: &PeerProcesses,
    ) -> Result<Self, LockError> {
        Self::open(config, events, Some(processes)).await
    }

    async fn open(
        config: PeerConfig,
        events: Events,
        shared: Option<&PeerProcesses>,
    ) -> Result<Self, LockError> {
        config.renewal.validate()?;
        if config.request_timeout.is_zero() {
            return Err(LockError::Config(format!(
                "peer {}: request_timeout must be > 0",
                config.id
            )));
        }
        // Held until this client is open, so a second client waits for the first's process.
        let mut running = match shared {
            Some(p) if config.serves_many_clients => Some(p.running.lock().await),
            _ => None,
        };
        let reuse = running
            .as_ref()
            .and_then(|r| r.get(&config.id))
            .and_then(Weak::upgrade)
            .filter(|p| !p.adapter.is_dead());
        let process = match reuse {
            Some(p) => p,
            None => {
                let log = process::default_log_path(config.log_dir.as_deref(), &config.id);
                let (_, password) = credentials::take_password(&config.servers)?;
                let spawn = (&config.command, password.as_ref());
                Process::spawn(&config.id, spawn, log, config.request_timeout)?
            }
        };
        let client = ClientTag {
            id: process.open_client(),
            events,
        };
        let client_id = client.id;
        let opened = Self::hello(&config, process.clone(), client, running.is_some()).await;
        match (&opened, running.as_mut()) {
            (Ok(_), Some(running)) => {
                running.insert(config.id.clone(), Arc::downgrade(&process));
            }
            (Err(_), _) => process.close_client(client_id).await,
            (Ok(_), None) => {}
        }
        opened
    }

    /// Says `hello` for `client` on `process` and checks the answer (its name, pinned version and,
    /// when `shared`, that it serves many clients); the first client syncs the clock.
    async fn hello(
        config: &PeerConfig,
        process: Arc<Process>,
        client: ClientTag,
        shared: bool,
    ) -> Result<Self, LockError> {
        let adapter = process.adapter.clone();
        let mut settings = Map::new();
        let (servers, _) = credentials::take_password(&config.servers)?;
        settings.insert("servers".into(), servers.into());
        for (k, v) in &config.settings {
            settings.insert(k.clone(), v.clone().into());
        }
        let hello = adapter
            .request(
                |id| wire::hello(id, client.id, &settings),
                None,
                config.start_timeout.saturating_sub(config.request_timeout),
            )
            .await?
            .map_err(|e| wire_error(&adapter, "", Duration::ZERO, e))?
            .0;
        let text = |name: &str| hello.get(name).and_then(Value::as_str).unwrap_or_default();
        // A row at another version of its library (`id@version`) runs the shipped adapter, which
        // calls itself by the shipped id.
        let adapter_id = config.id.split('@').next().unwrap_or_default();
        if text("adapter") != adapter_id {
            return Err(LockError::Config(format!(
                "peer {}: the adapter calls itself {:?}",
                config.id,
                text("adapter")
            )));
        }
        if shared && hello.get("multi_client").and_then(Value::as_bool) != Some(true) {
            return Err(LockError::Config(format!(
                "peer {}: the adapter does not declare multi_client (an older build?); rebuild the \
                 peers with: {}",
                config.id, config.command.install_hint
            )));
        }
        let empty = Map::new();
        let caps = hello
            .get("capabilities")
            .and_then(Value::as_object)
            .unwrap_or(&empty);
        let capabilities = Capabilities {
            reentrant: flag(caps, "reentrant"),
            fencing: flag(caps, "fencing"),
            auto_renew: flag(caps, "auto_renew"),
            fixed_lease: flag(caps, "fixed_lease"),
            wait_notify: flag(caps, "wait_notify"),
            lost_signal: flag(caps, "lost_signal"),
            hold_identity: flag(caps, "hold_identity"),
            min_ttl: ms(caps, "min_ttl_ms", Duration::from_millis(1)),
            ttl_granularity: ms(caps, "ttl_granularity_ms", Duration::from_millis(1)),
        };
        if let Some(pin) = config.pinned_version.as_deref()
            && text("version") != pin
        {
            return Err(LockError::Config(format!(
                "peer {}: its process loaded {} {}, but the row runs {pin}; install {pin} with: {}",
                config.id,
                text("library"),
                text("version"),
                config.command.install_hint
            )));
        }
        adapter.declare_lost_signal(capabilities.lost_signal);
        let ping_rtt = process.sync_clock_once().await?;
        let info = PeerInfo {
            library: text("library").to_owned(),
            version: text("version").to_owned(),
            renew_events: flag(caps, "renew_events"),
            ping_rtt,
            starve: flag(caps, "starve"),
        };
        Ok(PeerLocker {
            process,
            adapter,
            client,
            capabilities,
            info,
            watchdog_timeout: config.renewal.ttl,
        })
    }

    /// Asks the adapter to block its library's threads for `hold` (`starve`); how many it held.
    async fn starve(&self, hold: Duration) -> Result<LibraryThreadsHeld, LockError> {
        let unsupported = |what: String| LockError::Unsupported {
            strategy: "peer",
            what: format!("{}: {what}", self.adapter.id),
        };
        let (Some(pid), true) = (self.adapter.pid, self.info.starve) else {
            return Err(unsupported(
                "the adapter cannot block its library's threads (it declares no `starve`)".into(),
            ));
        };
        let reply = self
            .adapter
            .request(|id| wire::starve(id, self.client.id, hold), None, hold)
            .await?
            .map_err(|e| wire_error(&self.adapter, "", Duration::ZERO, e))?
            .0;
        let count = |name: &str| {
            reply
                .get(name)
                .and_then(Value::as_u64)
                .and_then(|n| u32::try_from(n).ok())
        };
        match (count("held"), count("threads")) {
            (Some(held), Some(threads)) => Ok(LibraryThreadsHeld { pid, held, threads }),
            _ => Err(self
                .adapter
                .backend_error("answered starve without counts (\"held\", \"threads\")")),
        }
    }

    /// What the adapter said about itself.
    pub fn info(&self) -> &PeerInfo {
        &self.info
    }

    /// The adapter's process id (for fault injection: pause or kill the client; clients sharing a
    /// process share it).
    pub fn pid(&self) -> Option<u32> {
        self.adapter.pid
    }

    /// How many clients the adapter process has served so far (this one included).
    pub fn clients_in_process(&self) -> u32 {
        self.process.clients_served()
    }

    /// The adapter's stderr log.
    pub fn log_path(&self) -> &std::path::Path {
        &self.adapter.log_path
    }
}

#[async_trait]
impl PeerProcess for PeerLocker {
    fn protocol_round_trip(&self) -> Duration {
        self.info.ping_rtt
    }

    fn loaded_library(&self) -> (String, String) {
        (self.info.library.clone(), self.info.version.clone())
    }

    fn adapter_process(&self) -> Option<u32> {
        self.adapter.pid
    }

    async fn starve_library(&self, hold: Duration) -> Result<LibraryThreadsHeld, LockError> {
        self.starve(hold).await
    }
}

#[async_trait]
impl Locker for PeerLocker {
    fn id(&self) -> &str {
        &self.adapter.id
    }

    fn peer(&self) -> Option<&dyn PeerProcess> {
        Some(self)
    }

    fn capabilities(&self) -> Capabilities {
        self.capabilities
    }

    async fn acquire(&self, key: &str, opts: &AcquireOptions) -> Result<Lease, LockError> {
        let caps = &self.capabilities;
        let unsupported = |what: &str| LockError::Unsupported {
            strategy: "peer",
            what: format!("{}: {what}", self.adapter.id),
        };
        let (ttl, open) = match opts.lease {
            LeaseMode::Fixed(d) if d.is_zero() => {
                return Err(LockError::Config("fixed lease must be > 0".into()));
            }
            LeaseMode::Fixed(_) if !caps.fixed_lease => return Err(unsupported("a fixed lease")),
            LeaseMode::Watchdog if !caps.auto_renew => {
                return Err(unsupported("a renewed (watchdog) lease"));
            }
            LeaseMode::Fixed(d) => (d, false),
            LeaseMode::Watchdog => (self.watchdog_timeout, !self.info.renew_events),
        };
        let owner = opts.owner.clone().unwrap_or_else(OwnerId::unique);
        let key: Arc<str> = key.into();
        let sent_at = Instant::now();
        let wait = AcquireWait {
            key: key.clone(),
            client: self.client.clone(),
            sent_at,
            ttl: if open { OPEN_DEADLINE } else { ttl },
            retries: opts.wait.is_some(),
        };
        let reply = self
            .adapter
            .request(
                |id| {
                    wire::acquire(
                        id,
                        self.client.id,
                        &key,
                        opts.wait,
                        opts.lease,
                        self.watchdog_timeout,
                        owner.as_str(),
                    )
                },
                Some(wait),
                opts.wait.unwrap_or_default(),
            )
            .await?;
        let (fields, state) =
            reply.map_err(|e| wire_error(&self.adapter, &key, sent_at.elapsed(), e))?;
        let lease_id = fields.get("lease").and_then(Value::as_str);
        let (Some((state, sent_at)), Some(lease_id)) = (state, lease_id) else {
            return Err(self
                .adapter
                .backend_error("granted an acquire without a lease id"));
        };
        let token = FencingToken(fields.get("token").and_then(Value::as_u64).unwrap_or(0));
        self.client.events.emit(|| LockEvent::Acquired {
            key: key.clone(),
            token,
            mode: opts.lease,
            sent_at,
            at: Instant::now(),
        });
        let hold = PeerHold {
            adapter: self.adapter.clone(),
            lease: lease_id.to_owned(),
            key,
            client: self.client.clone(),
        };
        Ok(Lease::new(
            owner,
            token,
            opts.lease,
            sent_at,
            state,
            Box::new(hold),
        ))
    }

    async fn close(&self) {
        self.process.close_client(self.client.id).await;
    }
}

/// A peer lease's release path: a `release` request for the adapter's lease id.
#[derive(Debug)]
struct PeerHold {
    adapter: Arc<Adapter>,
    lease: String,
    key: Arc<str>,
    client: ClientTag,
}

#[async_trait]
impl LeaseHandle for PeerHold {
    async fn release(self: Box<Self>) -> Result<(), LockError> {
        self.adapter.forget_lease(&self.lease);
        let reply = self
            .adapter
            .request(
                |id| wire::release(id, self.client.id, &self.lease),
                None,
                Duration::ZERO,
            )
            .await?;
        reply.map_err(|e| wire_error(&self.adapter, &self.key, Duration::ZERO, e))?;
        self.client.events.emit(|| LockEvent::Released {
            key: self.key.clone(),
            at: Instant::now(),
        });
        Ok(())
    }

    fn abandon(self: Box<Self>) {
        self.adapter.forget_lease(&self.lease);
        self.adapter
            .release_in_background(&self.lease, self.key.clone(), &self.client);
    }
}
