//! Runs PostgreSQL children (Debian's packaged server, `/usr/lib/postgresql/<version>/bin`): a
//! single server ([`PostgresServer`]) and a primary with a streaming replica ([`PostgresPair`]),
//! each from a fresh data directory (`initdb`) in its temp dir, listening on 127.0.0.1 only on a
//! free port, with `pg_stat_statements` loaded so the statements clients sent can be counted from
//! the server's side; and a single server in a network namespace of its own ([`NamespacedPostgres`],
//! listening on the namespace's end of a veth link, optionally with short TCP keepalive settings). PostgreSQL refuses to run as root: when lockbench is root, the data directory
//! is handed to the `postgres` user and the server runs as that user.
//!
//! The server trusts loopback connections of the superuser [`USER`] (there is no password). Dropping a
//! handle shuts the server down at once (`SIGQUIT`: the postmaster ends every session), then kills
//! what is left and removes the data directory.

use std::ffi::CString;
use std::io::{self, Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use crate::netns::{self, Keepalives, Namespaced, NetNamespace, whole_secs};
use crate::process::{ServerProcess, make_temp_dir, process_accessors, retry_on_port_race};
use crate::{Result, ServerError, free_ports};

/// The superuser `initdb` creates; clients connect as it.
pub const USER: &str = "lockbench";
/// The database clients use.
pub const DATABASE: &str = "postgres";
/// Environment variable naming the directory of PostgreSQL's programs (`initdb`, `postgres`).
pub const BIN_DIR_ENV: &str = "LOCKBENCH_POSTGRES_BIN";
/// Where Debian keeps each PostgreSQL version's programs.
const DEBIAN_DIR: &str = "/usr/lib/postgresql";
const INSTALL: &str = "sudo apt-get install -y postgresql (or run docker/install-deps.sh)";

const START_TIMEOUT: Duration = Duration::from_secs(20);
const REPLICATION_TIMEOUT: Duration = Duration::from_secs(20);
const QUERY_TIMEOUT: Duration = Duration::from_secs(5);
/// How long `pg_promote` may wait for the promotion to end.
const PROMOTE_TIMEOUT: Duration = Duration::from_secs(30);
const SHUTDOWN_WAIT: Duration = Duration::from_secs(3);

/// Settings for [`PostgresServer::start_with`]. `Default` is a plain server.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PostgresOptions {
    /// Serve TLS too (`ssl = on`) with this certificate and key (copied into the server's temp dir,
    /// readable by the server's user only); plain connections stay allowed.
    pub tls: Option<crate::certs::TlsFiles>,
    /// TCP keepalive on the clients' connections (`tcp_keepalives_*`); `None`: the system's.
    pub keepalives: Option<Keepalives>,
}

/// The server settings (`-c name=value`) for `keepalives` (`tcp_keepalives_idle`, `_interval`,
/// `_count`; the session ends with "could not receive data from client: Connection timed out").
/// `tcp_user_timeout` is set to the same limit: a reply still unacknowledged when the peer went
/// silent puts the socket on retransmission, where keepalive never fires (Linux would retry for
/// about 15 minutes); with it, that socket is given up at the same limit, and a keepalive one too
/// (Linux then ends a probing connection once the user timeout has passed).
fn keepalive_settings(keepalives: &Keepalives) -> [String; 4] {
    [
        format!("tcp_keepalives_idle={}", whole_secs(keepalives.idle)),
        format!(
            "tcp_keepalives_interval={}",
            whole_secs(keepalives.interval)
        ),
        format!("tcp_keepalives_count={}", keepalives.count),
        format!("tcp_user_timeout={}", keepalives.limit().as_millis()),
    ]
}

/// A PostgreSQL server inside a network namespace of its own, trusting connections from this side
/// of the link.
pub type NamespacedPostgres = Namespaced<PostgresServer>;

impl Namespaced<PostgresServer> {
    /// Creates a namespace and starts a fresh server in it with `options`, trusting connections
    /// from this side of the link. Fails with one line when the namespace cannot be made.
    pub fn start(options: PostgresOptions) -> Result<Self> {
        Namespaced::start_inside(|namespace| PostgresServer::start_in(options, Some(namespace)))
    }
}

/// One PostgreSQL server.
#[derive(Debug)]
pub struct PostgresServer {
    process: ServerProcess,
    addr: SocketAddr,
    version: String,
    startup: Duration,
}

impl PostgresServer {
    /// Starts a fresh server and waits until it answers a query.
    pub fn start() -> Result<Self> {
        Self::start_with(PostgresOptions::default())
    }

    /// Starts a fresh server with `options` and waits until it answers a query.
    pub fn start_with(options: PostgresOptions) -> Result<Self> {
        Self::start_in(options, None)
    }

    /// [`Self::start_with`], inside `namespace` when given.
    fn start_in(options: PostgresOptions, namespace: Option<&NetNamespace>) -> Result<Self> {
        let bin = bin_dir()?;
        let began = Instant::now();
        retry_on_port_race(|| {
            let dir = make_temp_dir("postgres")?;
            let data = dir.path().join("data");
            let owner = run_as_postgres_user(dir.path())?;
            let mut initdb = Command::new(bin.join("initdb"));
            initdb
                .arg("-D")
                .arg(&data)
                .args(["-U", USER, "-A", "trust", "-E", "UTF8", "--no-sync"])
                .args(["--no-instructions", "--locale", "C"]);
            run_to_end(initdb, owner, "initdb")?;
            let mut settings = Vec::new();
            if let Some(tls) = &options.tls {
                for (from, name) in [(&tls.cert, "server.crt"), (&tls.key, "server.key")] {
                    let to = data.join(name);
                    std::fs::copy(from, &to)?;
                    std::fs::set_permissions(
                        &to,
                        std::os::unix::fs::PermissionsExt::from_mode(0o600),
                    )?;
                    if let Some((uid, gid)) = owner {
                        std::os::unix::fs::chown(&to, Some(uid), Some(gid))?;
                    }
                }
                settings.extend(["ssl=on".to_owned()]);
            }
            if let Some(keepalives) = options.keepalives {
                settings.extend(keepalive_settings(&keepalives));
            }
            if let Some(namespace) = namespace {
                // initdb trusts loopback only; the clients come from this side of the link.
                let mut hba = std::fs::OpenOptions::new()
                    .append(true)
                    .open(data.join("pg_hba.conf"))?;
                writeln!(hba, "host all all {}/32 trust", namespace.host_addr())?;
            }
            Self::spawn(&bin, dir, owner, began, &settings, namespace)
        })
    }

    fn spawn(
        bin: &Path,
        dir: tempfile::TempDir,
        owner: Option<(u32, u32)>,
        began: Instant,
        settings: &[String],
        namespace: Option<&NetNamespace>,
    ) -> Result<Self> {
        let port = free_ports(1)?[0];
        let ip = namespace.map_or(Ipv4Addr::LOCALHOST, NetNamespace::inner_addr);
        let mut command = Command::new(bin.join("postgres"));
        command
            .arg("-D")
            .arg(dir.path().join("data"))
            .args(["-p", &port.to_string()])
            .arg("-c")
            .arg(format!("listen_addresses={ip}"))
            .arg("-c")
            .arg(format!("unix_socket_directories={}", dir.path().display()))
            .args(["-c", "shared_preload_libraries=pg_stat_statements"])
            .args(["-c", "pg_stat_statements.track=all"])
            // A benchmark's throw-away server: no crash safety needed, small memory.
            .args(["-c", "fsync=off", "-c", "full_page_writes=off"])
            .args(["-c", "shared_buffers=16MB", "-c", "max_connections=300"])
            .args(["-c", "wal_level=replica", "-c", "max_wal_senders=4"])
            .args(["-c", "hot_standby=on"]);
        for setting in settings {
            command.arg("-c").arg(setting);
        }
        // Held open until the child has joined it.
        let namespace_file = match namespace {
            Some(namespace) => Some(netns::spawn_inside(&mut command, namespace, owner)?),
            None => {
                if let Some((uid, gid)) = owner {
                    command.uid(uid).gid(gid);
                }
                None
            }
        };
        let process = ServerProcess::spawn("postgres", command, dir, "postgres.log")?;
        drop(namespace_file);
        let addr = SocketAddr::from((ip, port));
        process.wait_ready(START_TIMEOUT, Duration::from_millis(20), || {
            process.listens_on(port) && query(addr, "SELECT 1", QUERY_TIMEOUT).is_ok()
        })?;
        let version = query(addr, "SHOW server_version", QUERY_TIMEOUT)?
            .into_iter()
            .next()
            .and_then(|row| row.into_iter().next().flatten())
            .map(|v| v.split_whitespace().next().unwrap_or_default().to_owned())
            .unwrap_or_default();
        Ok(Self {
            process,
            addr,
            version,
            startup: began.elapsed(),
        })
    }

    /// The address clients connect to.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// A connection URL, `postgres://lockbench@127.0.0.1:PORT/postgres`.
    pub fn url(&self) -> String {
        format!("postgres://{USER}@{}/{DATABASE}", self.addr)
    }

    /// The server's version (`SHOW server_version`), e.g. `15.18`.
    pub fn version(&self) -> &str {
        &self.version
    }

    /// Runs `sql` (simple query protocol) and returns its rows as text.
    pub fn query(&self, sql: &str) -> Result<Vec<Vec<Option<String>>>> {
        query(self.addr, sql, QUERY_TIMEOUT)
    }

    process_accessors!();
}

impl Drop for PostgresServer {
    fn drop(&mut self) {
        // Immediate shutdown: the postmaster ends its sessions (which run in process groups of
        // their own) before it exits; the process handle then kills what is left.
        let Ok(pid) = i32::try_from(self.process.pid()) else {
            return;
        };
        if self.process.is_running() {
            // SAFETY: kill(2) has no memory-safety preconditions; the child is not reaped yet.
            unsafe { libc::kill(pid, libc::SIGQUIT) };
            let deadline = Instant::now() + SHUTDOWN_WAIT;
            while self.process.is_running() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(10));
            }
        }
    }
}

/// A primary with one streaming replica (`pg_basebackup`), for failover.
#[derive(Debug)]
pub struct PostgresPair {
    primary: PostgresServer,
    replica: PostgresServer,
}

impl PostgresPair {
    /// Starts a primary, copies it to a replica that streams from it, and waits until the primary
    /// sees the replica streaming.
    pub fn start() -> Result<Self> {
        let primary = PostgresServer::start()?;
        let bin = bin_dir()?;
        let began = Instant::now();
        let dir = make_temp_dir("postgres")?;
        let owner = run_as_postgres_user(dir.path())?;
        let mut backup = Command::new(bin.join("pg_basebackup"));
        backup
            .args(["-h", "127.0.0.1", "-p", &primary.addr.port().to_string()])
            .args(["-U", USER, "-D"])
            .arg(dir.path().join("data"))
            .args(["-R", "-X", "stream", "--no-sync"]);
        run_to_end(backup, owner, "pg_basebackup")?;
        let replica = PostgresServer::spawn(&bin, dir, owner, began, &[], None)?;
        let deadline = Instant::now() + REPLICATION_TIMEOUT;
        loop {
            let streaming = primary
                .query("SELECT count(*) FROM pg_stat_replication WHERE state = 'streaming'")?;
            if first_value(&streaming).as_deref() == Some("1") {
                break;
            }
            if Instant::now() > deadline {
                return Err(replica
                    .process
                    .start_error("the replica never streamed".into()));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok(Self { primary, replica })
    }

    /// The primary.
    pub fn primary(&self) -> &PostgresServer {
        &self.primary
    }

    /// The replica.
    pub fn replica(&self) -> &PostgresServer {
        &self.replica
    }

    /// Points the replica's stream at `upstream` (a proxy in front of the primary: `primary_conninfo`
    /// set and reloaded, which restarts the WAL receiver) and waits until it streams from there and
    /// has replayed everything the primary had written.
    pub fn replicate_through(&self, upstream: SocketAddr) -> Result<()> {
        let conninfo = format!(
            "host={} port={} user={USER} application_name=replica",
            upstream.ip(),
            upstream.port()
        );
        self.replica
            .query(&format!("ALTER SYSTEM SET primary_conninfo = '{conninfo}'"))?;
        self.replica.query("SELECT pg_reload_conf()")?;
        let deadline = Instant::now() + REPLICATION_TIMEOUT;
        let written = first_value(&self.primary.query("SELECT pg_current_wal_lsn()::text")?);
        let caught_up = format!(
            "SELECT count(*) FROM pg_stat_wal_receiver WHERE status = 'streaming' \
             AND sender_port = {} AND pg_last_wal_replay_lsn() >= '{}'::pg_lsn",
            upstream.port(),
            written.unwrap_or_else(|| "0/0".into())
        );
        while first_value(&self.replica.query(&caught_up)?).as_deref() != Some("1") {
            if Instant::now() > deadline {
                return Err(self.replica.process.start_error(format!(
                    "the replica did not stream through {upstream} within {REPLICATION_TIMEOUT:?}"
                )));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok(())
    }

    /// Promotes the replica to a primary (`pg_promote()`, waiting until it is done). It takes about
    /// 0.1 s here, but a fresh clone's test run once saw it outlast a query's 5 s: the wait is the
    /// promotion's own, and the query waits a little longer than that.
    pub fn promote_replica(&self) -> Result<()> {
        let sql = format!("SELECT pg_promote(true, {})", PROMOTE_TIMEOUT.as_secs());
        let done = query(self.replica.addr, &sql, PROMOTE_TIMEOUT + QUERY_TIMEOUT)?;
        if first_value(&done).as_deref() == Some("t") {
            Ok(())
        } else {
            Err(reply(&format!(
                "the replica was not promoted within {PROMOTE_TIMEOUT:?}"
            )))
        }
    }
}

/// The first column of the first row of a query's answer (`None`: no row, or NULL).
pub fn first_value(rows: &[Vec<Option<String>>]) -> Option<String> {
    rows.first()?.first()?.clone()
}

/// The directory of PostgreSQL's programs: `LOCKBENCH_POSTGRES_BIN`, else Debian's newest
/// `/usr/lib/postgresql/<version>/bin`.
pub fn bin_dir() -> Result<PathBuf> {
    let missing = |what: String| ServerError::Missing {
        program: what,
        install: INSTALL.to_owned(),
    };
    if let Some(dir) = std::env::var_os(BIN_DIR_ENV).filter(|v| !v.is_empty()) {
        let dir = PathBuf::from(dir);
        return if dir.join("postgres").is_file() && dir.join("initdb").is_file() {
            Ok(dir)
        } else {
            Err(missing(format!(
                "postgres ({}, {BIN_DIR_ENV})",
                dir.display()
            )))
        };
    }
    let newest = std::fs::read_dir(DEBIAN_DIR)
        .ok()
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let version: u32 = e.file_name().to_str()?.parse().ok()?;
            let bin = e.path().join("bin");
            bin.join("postgres").is_file().then_some((version, bin))
        })
        .max();
    newest
        .map(|(_, bin)| bin)
        .ok_or_else(|| missing(format!("postgres ({DEBIAN_DIR}/<version>/bin)")))
}

/// When this process is root: gives `dir` to the `postgres` user and returns its ids, for the
/// server to run as (PostgreSQL refuses root). `None` otherwise.
fn run_as_postgres_user(dir: &Path) -> Result<Option<(u32, u32)>> {
    // SAFETY: geteuid(2) has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Ok(None);
    }
    let name = CString::new("postgres").map_err(io::Error::other)?;
    // SAFETY: `name` is a valid C string; the returned record is read at once, before any other
    // getpw* call on this thread could overwrite it.
    let (uid, gid) = unsafe {
        let record = libc::getpwnam(name.as_ptr());
        if record.is_null() {
            return Err(ServerError::Missing {
                program: "the postgres user (lockbench runs as root)".into(),
                install: INSTALL.to_owned(),
            });
        }
        ((*record).pw_uid, (*record).pw_gid)
    };
    std::os::unix::fs::chown(dir, Some(uid), Some(gid))?;
    Ok(Some((uid, gid)))
}

/// Runs a set-up program (as `owner` when given) to its end; a failure is a start error with its
/// output.
fn run_to_end(mut command: Command, owner: Option<(u32, u32)>, name: &str) -> Result<()> {
    if let Some((uid, gid)) = owner {
        command.uid(uid).gid(gid);
    }
    let output = command.output()?;
    if output.status.success() {
        return Ok(());
    }
    Err(ServerError::Start {
        server: name.to_owned(),
        reason: format!("exited with {}", output.status),
        log_tail: String::from_utf8_lossy(&output.stderr).into_owned(),
    })
}

/// Runs `sql` on the server at `addr` as [`USER`] on [`DATABASE`] (trust authentication, the
/// simple query protocol) and returns its rows, each column as text (`None` for NULL). An error
/// the server reports is [`ServerError::Reply`].
pub fn query(addr: SocketAddr, sql: &str, timeout: Duration) -> Result<Vec<Vec<Option<String>>>> {
    query_in(addr, DATABASE, sql, timeout)
}

/// [`query`] in `database`.
pub fn query_in(
    addr: SocketAddr,
    database: &str,
    sql: &str,
    timeout: Duration,
) -> Result<Vec<Vec<Option<String>>>> {
    Session::connect(addr, database, timeout)?.query(sql)
}

/// One open session as [`USER`] (trust authentication, the simple query protocol), for callers that
/// need a connection to stay open between statements (a session-level lock). Dropping it ends the
/// session (`Terminate`).
#[derive(Debug)]
pub struct Session {
    stream: TcpStream,
}

impl Session {
    /// Connects to the server at `addr`, in `database`; every read and write is bounded by `timeout`.
    pub fn connect(addr: SocketAddr, database: &str, timeout: Duration) -> Result<Self> {
        let mut stream = TcpStream::connect_timeout(&addr, timeout)?;
        stream.set_read_timeout(Some(timeout))?;
        stream.set_write_timeout(Some(timeout))?;
        let mut startup = Vec::new();
        startup.extend_from_slice(&196_608_i32.to_be_bytes()); // protocol 3.0
        for part in ["user", USER, "database", database, ""] {
            startup.extend_from_slice(part.as_bytes());
            startup.push(0);
        }
        let mut message = ((startup.len() + 4) as i32).to_be_bytes().to_vec();
        message.extend_from_slice(&startup);
        stream.write_all(&message)?;
        expect_ready(&mut stream, &mut Vec::new())?;
        Ok(Self { stream })
    }

    /// Runs `sql` and returns its rows, each column as text (`None` for NULL). An error the server
    /// reports is [`ServerError::Reply`].
    pub fn query(&mut self, sql: &str) -> Result<Vec<Vec<Option<String>>>> {
        let mut q = vec![b'Q'];
        q.extend_from_slice(&((sql.len() + 5) as i32).to_be_bytes());
        q.extend_from_slice(sql.as_bytes());
        q.push(0);
        self.stream.write_all(&q)?;
        let mut rows = Vec::new();
        expect_ready(&mut self.stream, &mut rows).map(|()| rows)
    }

    /// This end's port (what the server sees as the client's, `pg_stat_activity.client_port`).
    pub fn local_port(&self) -> Result<u16> {
        Ok(self.stream.local_addr()?.port())
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        let _ = self.stream.write_all(&[b'X', 0, 0, 0, 4]);
    }
}

/// Reads messages until `ReadyForQuery`, collecting data rows into `rows`; the first error
/// response is returned once the server is ready again.
fn expect_ready(stream: &mut TcpStream, rows: &mut Vec<Vec<Option<String>>>) -> Result<()> {
    let mut error = None;
    loop {
        let mut head = [0u8; 5];
        stream
            .read_exact(&mut head)
            .map_err(|e| no_answer(e, stream))?;
        let len = i32::from_be_bytes([head[1], head[2], head[3], head[4]]);
        let len = usize::try_from(len - 4).map_err(io::Error::other)?;
        let mut body = vec![0u8; len];
        stream
            .read_exact(&mut body)
            .map_err(|e| no_answer(e, stream))?;
        match head[0] {
            b'R' if body.get(..4) != Some(&[0, 0, 0, 0]) => {
                return Err(reply(
                    "the server asks for a password (lockbench's own trust it)",
                ));
            }
            b'D' => rows.push(data_row(&body)),
            b'E' => {
                let text = error_text(&body);
                if error.is_none() {
                    error = Some(text.clone());
                }
                // An error before the session is ready ends the connection.
                if rows.is_empty() && text.contains("FATAL") {
                    return Err(reply(&text));
                }
            }
            b'Z' => return error.map_or(Ok(()), |e| Err(reply(&e))),
            _ => {}
        }
    }
}

/// A read that timed out, named as such with its bound (the OS calls it "Resource temporarily
/// unavailable").
fn no_answer(e: io::Error, stream: &TcpStream) -> io::Error {
    match (e.kind(), stream.read_timeout()) {
        (io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut, Ok(Some(bound))) => io::Error::new(
            io::ErrorKind::TimedOut,
            format!("no answer within {bound:?}"),
        ),
        _ => e,
    }
}

fn reply(message: &str) -> ServerError {
    ServerError::Reply {
        server: "postgres".into(),
        message: message.to_owned(),
    }
}

fn data_row(body: &[u8]) -> Vec<Option<String>> {
    let mut columns = Vec::new();
    let count = body
        .get(..2)
        .map_or(0, |b| u16::from_be_bytes([b[0], b[1]]));
    let mut at = 2;
    for _ in 0..count {
        let Some(len) = body.get(at..at + 4) else {
            break;
        };
        let len = i32::from_be_bytes([len[0], len[1], len[2], len[3]]);
        at += 4;
        match usize::try_from(len) {
            Ok(len) => {
                let value = body.get(at..at + len).unwrap_or_default();
                columns.push(Some(String::from_utf8_lossy(value).into_owned()));
                at += len;
            }
            Err(_) => columns.push(None),
        }
    }
    columns
}

/// `SEVERITY: message` from an ErrorResponse's fields.
fn error_text(body: &[u8]) -> String {
    let mut severity = "";
    let mut message = "";
    for field in body.split(|b| *b == 0).filter(|f| !f.is_empty()) {
        let text = std::str::from_utf8(&field[1..]).unwrap_or_default();
        match field[0] {
            b'S' => severity = text,
            b'M' => message = text,
            _ => {}
        }
    }
    format!("{severity}: {message}")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A server that accepts and then says nothing gives an error that names the wait, not the OS's
    /// "Resource temporarily unavailable".
    #[test]
    fn a_silent_server_is_no_answer_within_the_bound() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = listener.local_addr().expect("addr");
        let err = query(addr, "SELECT 1", Duration::from_millis(200)).expect_err("silence");
        assert!(err.to_string().contains("no answer within 200ms"), "{err}");
        drop(listener);
    }
}
