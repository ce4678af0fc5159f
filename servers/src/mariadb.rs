//! Runs MariaDB children (Debian's packaged `mariadbd`, MySQL's drop-in): a single server
//! ([`MariaDbServer`]) and a primary with an asynchronous replica ([`MariaDbPair`], binlog
//! replication by GTID), each from a fresh data directory (`mariadb-install-db`) in its temp dir,
//! with no option file read (`--no-defaults`), listening on 127.0.0.1 only on a free port, its Unix
//! socket in the temp dir; and a single server in a network namespace of its own
//! ([`NamespacedMariaDb`], listening on the namespace's end of a veth link, optionally with short
//! TCP keepalive settings). When lockbench is root the server runs as root (`--user=root`).
//!
//! Each server has a database [`DATABASE`] and a user [`USER`] with the password [`PASSWORD`]
//! allowed everything but writing to a read-only replica (a throw-away server on loopback: the
//! password is no secret). The
//! `metadata_lock_info` plugin is loaded, so the user locks sessions hold (`GET_LOCK`) can be
//! listed (`information_schema.METADATA_LOCK_INFO`). Dropping a handle kills the server
//! (`SIGKILL`: every session ends with it) and removes the data directory.
//!
//! [`query`] runs statements as that user, on the `mysql_async` client, from any thread; a
//! [`Session`] keeps one connection open between statements.

use std::net::{Ipv4Addr, SocketAddr};
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use crate::certs::TlsFiles;
use crate::netns::{self, Keepalives, Namespaced, NetNamespace, whole_secs};
use crate::process::{ServerProcess, make_temp_dir, process_accessors, retry_on_port_race};
use crate::programs::Program;
use crate::{Result, ServerError, free_ports};

/// The user clients log in as.
pub const USER: &str = "lockbench";
/// [`USER`]'s password.
pub const PASSWORD: &str = "lockbench";
/// The database clients use.
pub const DATABASE: &str = "lockbench";
/// The user the launcher promotes a replica as (allowed everything, [`PASSWORD`] too).
const ADMIN: &str = "lockbench_admin";

const START_TIMEOUT: Duration = Duration::from_secs(30);
const REPLICATION_TIMEOUT: Duration = Duration::from_secs(20);
const QUERY_TIMEOUT: Duration = Duration::from_secs(5);

/// Settings for [`MariaDbServer::start_with`]. `Default` is a plain server.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MariaDbOptions {
    /// Serve TLS too with this certificate and key; plain connections stay allowed.
    pub tls: Option<TlsFiles>,
    /// TCP keepalive on the clients' connections (`tcp_keepalive_time`, `_interval`, `_probes`);
    /// `None`: the system's.
    pub keepalives: Option<Keepalives>,
}

/// The server options for `keepalives`. MariaDB has no `tcp_user_timeout`: a connection whose
/// last reply is unacknowledged when the client goes silent is on retransmission, where keepalive
/// never fires (Linux retries for about 15 minutes); an idle one ends at the limit, the session
/// with "Aborted connection ... (Got timeout reading communication packets)" in the log.
fn keepalive_settings(keepalives: &Keepalives) -> [String; 3] {
    [
        format!("--tcp-keepalive-time={}", whole_secs(keepalives.idle)),
        format!(
            "--tcp-keepalive-interval={}",
            whole_secs(keepalives.interval)
        ),
        format!("--tcp-keepalive-probes={}", keepalives.count),
    ]
}

/// A MariaDB server inside a network namespace of its own; [`USER`] logs in from anywhere, this
/// side of the link included.
pub type NamespacedMariaDb = Namespaced<MariaDbServer>;

impl Namespaced<MariaDbServer> {
    /// Creates a namespace and starts a fresh server in it with `options`. Fails with one line
    /// when the namespace cannot be made.
    pub fn start(options: MariaDbOptions) -> Result<Self> {
        Namespaced::start_inside(|namespace| {
            MariaDbServer::start_in(&options, Role::Single, Some(namespace))
        })
    }
}

/// A server's part in replication.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    /// No binlog.
    Single,
    /// Writes a binlog for replicas (server id 1).
    Primary,
    /// Read-only until promoted (server id 2), with a binlog of its own so it can serve as the next
    /// primary.
    Replica,
}

/// One MariaDB server.
#[derive(Debug)]
pub struct MariaDbServer {
    process: ServerProcess,
    addr: SocketAddr,
    version: String,
    startup: Duration,
}

impl MariaDbServer {
    /// Starts a fresh server and waits until [`USER`] can log in and query.
    pub fn start() -> Result<Self> {
        Self::start_with(MariaDbOptions::default())
    }

    /// Starts a fresh server with `options` and waits until [`USER`] can log in and query.
    pub fn start_with(options: MariaDbOptions) -> Result<Self> {
        Self::start_in(&options, Role::Single, None)
    }

    /// Starts a fresh server in `role`, inside `namespace` when given.
    fn start_in(
        options: &MariaDbOptions,
        role: Role,
        namespace: Option<&NetNamespace>,
    ) -> Result<Self> {
        let server = Program::MariaDb.locate(None)?;
        let install = Program::MariaDbInstallDb.locate(None)?;
        let began = Instant::now();
        retry_on_port_race(|| {
            let dir = make_temp_dir("mariadb")?;
            install_data_dir(&install, dir.path())?;
            Self::spawn(&server, dir, began, options, (role, namespace))
        })
    }

    fn spawn(
        program: &Path,
        dir: tempfile::TempDir,
        began: Instant,
        options: &MariaDbOptions,
        (role, namespace): (Role, Option<&NetNamespace>),
    ) -> Result<Self> {
        let port = free_ports(1)?[0];
        let ip = namespace.map_or(Ipv4Addr::LOCALHOST, NetNamespace::inner_addr);
        let path = dir.path();
        let mut command = Command::new(program);
        command
            .arg("--no-defaults")
            .arg(format!("--datadir={}", path.join("data").display()))
            .arg(format!("--socket={}", path.join("mariadb.sock").display()))
            .arg(format!("--pid-file={}", path.join("mariadb.pid").display()))
            .arg(format!("--tmpdir={}", path.display()))
            .arg(format!("--port={port}"))
            .arg(format!("--bind-address={ip}"))
            .args(["--skip-name-resolve", "--max-connections=300"])
            .args(["--character-set-server=utf8mb4"])
            .args(["--plugin-load-add=metadata_lock_info"])
            // A benchmark's throw-away server: no crash safety needed, small memory.
            .args([
                "--innodb-flush-log-at-trx-commit=0",
                "--innodb-doublewrite=0",
            ])
            .args(["--innodb-buffer-pool-size=32M", "--innodb-log-file-size=8M"])
            .args(["--key-buffer-size=1M", "--aria-pagecache-buffer-size=8M"])
            .args(["--sync-binlog=0", "--performance-schema=OFF"]);
        command.args(role_settings(role, path));
        if let Some(tls) = &options.tls {
            command
                .arg(format!("--ssl-cert={}", tls.cert.display()))
                .arg(format!("--ssl-key={}", tls.key.display()));
        }
        if let Some(keepalives) = &options.keepalives {
            command.args(keepalive_settings(keepalives));
        }
        if is_root() {
            command.arg("--user=root");
        }
        // Held open until the child has joined it.
        let namespace_file = namespace
            .map(|n| netns::spawn_inside(&mut command, n, None))
            .transpose()?;
        let process = ServerProcess::spawn("mariadbd", command, dir, "mariadb.log")?;
        drop(namespace_file);
        let addr = SocketAddr::from((ip, port));
        process.wait_ready(START_TIMEOUT, Duration::from_millis(20), || {
            process.listens_on(port) && query(addr, "SELECT 1", QUERY_TIMEOUT).is_ok()
        })?;
        let version = first_value(&query(addr, "SELECT VERSION()", QUERY_TIMEOUT)?)
            .map(|v| v.split('-').next().unwrap_or_default().to_owned())
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

    /// A connection URL with the password: `mysql://lockbench:lockbench@127.0.0.1:PORT/lockbench`.
    pub fn url(&self) -> String {
        format!("mysql://{USER}:{PASSWORD}@{}/{DATABASE}", self.addr)
    }

    /// The server's version (`VERSION()` up to its first `-`), e.g. `10.11.19`.
    pub fn version(&self) -> &str {
        &self.version
    }

    /// Runs `sql` (one or more statements) as [`USER`] and returns the rows of every result, each
    /// column as text (`None` for NULL).
    pub fn query(&self, sql: &str) -> Result<Vec<Vec<Option<String>>>> {
        query(self.addr, sql, QUERY_TIMEOUT)
    }

    process_accessors!();
}

/// The settings of a server's replication role.
fn role_settings(role: Role, dir: &Path) -> Vec<String> {
    let binlog = format!("--log-bin={}", dir.join("binlog").display());
    match role {
        Role::Single => vec!["--skip-log-bin".to_owned()],
        Role::Primary => vec![binlog, "--server-id=1".to_owned()],
        Role::Replica => vec![
            binlog,
            "--server-id=2".to_owned(),
            "--read-only=ON".to_owned(),
        ],
    }
}

/// Whether this process runs as root (`mariadbd` then needs `--user=root`).
fn is_root() -> bool {
    // SAFETY: geteuid(2) has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// The statements that give a fresh data directory lockbench's database and user (the bootstrap
/// runs without grant tables until they are loaded). The user may do anything but write to a
/// read-only server (a replica), as an application's user.
fn setup_sql() -> String {
    format!(
        "FLUSH PRIVILEGES;\n\
         CREATE DATABASE {DATABASE};\n\
         CREATE USER '{USER}'@'%' IDENTIFIED BY '{PASSWORD}';\n\
         GRANT ALL PRIVILEGES ON *.* TO '{USER}'@'%' WITH GRANT OPTION;\n\
         REVOKE READ_ONLY ADMIN ON *.* FROM '{USER}'@'%';\n\
         CREATE USER '{ADMIN}'@'%' IDENTIFIED BY '{PASSWORD}';\n\
         GRANT ALL PRIVILEGES ON *.* TO '{ADMIN}'@'%' WITH GRANT OPTION;\n"
    )
}

/// Makes `dir/data` with `mariadb-install-db` (system tables, no test database, then
/// [`setup_sql`]); a failure is a start error with its output.
fn install_data_dir(program: &Path, dir: &Path) -> Result<()> {
    let setup = dir.join("setup.sql");
    std::fs::write(&setup, setup_sql())?;
    let mut command = Command::new(program);
    command
        .arg("--no-defaults")
        .arg(format!("--datadir={}", dir.join("data").display()))
        .arg(format!("--extra-file={}", setup.display()))
        // Its temporary tables beside the data, not in the shared /tmp.
        .arg(format!("--tmpdir={}", dir.display()))
        .args(["--skip-test-db", "--skip-name-resolve"])
        .args(["--innodb-log-file-size=8M", "--innodb-buffer-pool-size=32M"]);
    if is_root() {
        command.arg("--user=root");
    }
    let output = command.output()?;
    if output.status.success() {
        return Ok(());
    }
    let mut log_tail = String::from_utf8_lossy(&output.stdout).into_owned();
    log_tail.push_str(&String::from_utf8_lossy(&output.stderr));
    Err(ServerError::Start {
        server: "mariadb-install-db".into(),
        reason: format!("exited with {}", output.status),
        log_tail,
    })
}

/// A primary with one asynchronous replica (binlog replication, the replica following the
/// primary's GTIDs), for failover.
#[derive(Debug)]
pub struct MariaDbPair {
    primary: MariaDbServer,
    replica: MariaDbServer,
}

impl MariaDbPair {
    /// Starts a primary and a replica, points the replica at the primary (`CHANGE MASTER TO`) and
    /// waits until the replica's threads run and the primary sees it connected.
    pub fn start() -> Result<Self> {
        let options = MariaDbOptions::default();
        let primary = MariaDbServer::start_in(&options, Role::Primary, None)?;
        let replica = MariaDbServer::start_in(&options, Role::Replica, None)?;
        let pair = Self { primary, replica };
        pair.follow(pair.primary.addr)?;
        Ok(pair)
    }

    /// The primary.
    pub fn primary(&self) -> &MariaDbServer {
        &self.primary
    }

    /// The replica.
    pub fn replica(&self) -> &MariaDbServer {
        &self.replica
    }

    /// Points the replica at `upstream` (a proxy in front of the primary) and waits until it
    /// replicates from there and has applied everything the primary had written.
    pub fn replicate_through(&self, upstream: SocketAddr) -> Result<()> {
        self.follow(upstream)
    }

    /// Promotes the replica to a primary: replication stopped and forgotten, writes allowed.
    pub fn promote_replica(&self) -> Result<()> {
        let sql = "STOP SLAVE; RESET SLAVE ALL; SET GLOBAL read_only = OFF";
        query_as(ADMIN, self.replica.addr, sql, QUERY_TIMEOUT).map(drop)
    }

    /// Makes the replica replicate from `upstream` (from the GTID it has applied) and waits until
    /// its threads run and it has applied the primary's binlog up to now.
    fn follow(&self, upstream: SocketAddr) -> Result<()> {
        self.replica.query(&format!(
            "STOP SLAVE; CHANGE MASTER TO MASTER_HOST = '{}', MASTER_PORT = {}, \
             MASTER_USER = '{USER}', MASTER_PASSWORD = '{PASSWORD}', \
             MASTER_CONNECT_RETRY = 1, MASTER_USE_GTID = slave_pos; START SLAVE",
            upstream.ip(),
            upstream.port()
        ))?;
        let written =
            first_value(&self.primary.query("SELECT @@gtid_binlog_pos")?).unwrap_or_default();
        let deadline = Instant::now() + REPLICATION_TIMEOUT;
        let caught_up = format!(
            "SELECT MASTER_GTID_WAIT('{written}', 0.2) = 0 \
             AND (SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS \
             WHERE VARIABLE_NAME = 'SLAVE_RUNNING') = 'ON'"
        );
        while first_value(&self.replica.query(&caught_up)?).as_deref() != Some("1") {
            if Instant::now() > deadline {
                return Err(self.replica.process.start_error(format!(
                    "the replica did not replicate from {upstream} within {REPLICATION_TIMEOUT:?}"
                )));
            }
        }
        Ok(())
    }
}

/// The first column of the first row of a query's answer (`None`: no row, or NULL).
pub fn first_value(rows: &[Vec<Option<String>>]) -> Option<String> {
    rows.first()?.first()?.clone()
}

/// Runs `sql` (one or more statements) on the server at `addr` as [`USER`] in [`DATABASE`] and
/// returns the rows of every result, each column as text (`None` for NULL); the whole exchange is
/// bounded by `timeout`. An error the server reports is [`ServerError::Reply`]. Runs on a thread of
/// its own with a one-off runtime, so it may be called from anywhere.
pub fn query(addr: SocketAddr, sql: &str, timeout: Duration) -> Result<Vec<Vec<Option<String>>>> {
    query_as(USER, addr, sql, timeout)
}

/// [`query`] as `user`.
fn query_as(
    user: &'static str,
    addr: SocketAddr,
    sql: &str,
    timeout: Duration,
) -> Result<Vec<Vec<Option<String>>>> {
    let sql = sql.to_owned();
    let thread = std::thread::spawn(move || -> Result<Vec<Vec<Option<String>>>> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        runtime.block_on(async move {
            match tokio::time::timeout(timeout, run(user, addr, &sql)).await {
                Ok(answer) => answer.map_err(|e| reply_error(&e)),
                Err(e) => Err(timed_out(e, timeout)),
            }
        })
    });
    thread
        .join()
        .map_err(|_| reply_error(&"the query thread panicked"))?
}

/// Logs in as `user` and runs `sql`, collecting every result's rows.
async fn run(
    user: &str,
    addr: SocketAddr,
    sql: &str,
) -> mysql_async::Result<Vec<Vec<Option<String>>>> {
    let mut conn = connect(user, addr).await?;
    let rows = run_on(&mut conn, sql).await?;
    conn.disconnect().await?;
    Ok(rows)
}

/// Logs in to the server at `addr` as `user`, in [`DATABASE`].
async fn connect(user: &str, addr: SocketAddr) -> mysql_async::Result<mysql_async::Conn> {
    let opts = mysql_async::OptsBuilder::default()
        .ip_or_hostname(addr.ip().to_string())
        .tcp_port(addr.port())
        .user(Some(user))
        .pass(Some(PASSWORD))
        .db_name(Some(DATABASE))
        // Over TCP as asked, not over the Unix socket the server names.
        .prefer_socket(false)
        // Given, so the client does not ask the server (a probe then adds only its own statement
        // to the server's counters): the server's defaults.
        .max_allowed_packet(Some(16 << 20))
        .wait_timeout(Some(28_800));
    mysql_async::Conn::new(opts).await
}

/// Runs `sql` on `conn`, collecting every result's rows.
async fn run_on(
    conn: &mut mysql_async::Conn,
    sql: &str,
) -> mysql_async::Result<Vec<Vec<Option<String>>>> {
    use mysql_async::prelude::Queryable;
    let mut rows = Vec::new();
    let mut result = conn.query_iter(sql).await?;
    while !result.is_empty() {
        let set: Vec<mysql_async::Row> = result.collect().await?;
        rows.extend(set.into_iter().map(text_row));
    }
    Ok(rows)
}

/// A statement for a [`Session`]'s thread and where its answer goes.
type Request = (
    String,
    std::sync::mpsc::Sender<Result<Vec<Vec<Option<String>>>>>,
);

/// One connection as [`USER`] kept open between statements (for a watch that should not add a
/// login per look to the server's counters). The connection lives on a thread of its own with a
/// one-off runtime, so the session may be used from anywhere; dropping it ends the session.
#[derive(Debug)]
pub struct Session {
    requests: std::sync::mpsc::Sender<Request>,
    timeout: Duration,
}

impl Session {
    /// Logs in to the server at `addr`; logging in and each statement are bounded by `timeout`.
    pub fn connect(addr: SocketAddr, timeout: Duration) -> Result<Self> {
        let (requests, incoming) = std::sync::mpsc::channel::<Request>();
        let (ready, connected) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let Ok(runtime) = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            else {
                return;
            };
            runtime.block_on(async move {
                let bounded = |e: tokio::time::error::Elapsed| timed_out(e, timeout);
                let conn = tokio::time::timeout(timeout, connect(USER, addr)).await;
                let mut conn = match conn.map_err(bounded) {
                    Ok(Ok(conn)) => conn,
                    Ok(Err(e)) => return drop(ready.send(Err(reply_error(&e)))),
                    Err(e) => return drop(ready.send(Err(e))),
                };
                let _ = ready.send(Ok(()));
                while let Ok((sql, answer)) = incoming.recv() {
                    let rows = tokio::time::timeout(timeout, run_on(&mut conn, &sql)).await;
                    let rows = rows
                        .map_err(bounded)
                        .and_then(|r| r.map_err(|e| reply_error(&e)));
                    let _ = answer.send(rows);
                }
                let _ = conn.disconnect().await;
            });
        });
        connected
            .recv()
            .map_err(|_| reply_error(&"the session thread ended"))??;
        Ok(Self { requests, timeout })
    }

    /// Runs `sql` and returns the rows of every result, each column as text (`None` for NULL).
    pub fn query(&mut self, sql: &str) -> Result<Vec<Vec<Option<String>>>> {
        let (answer, rows) = std::sync::mpsc::channel();
        self.requests
            .send((sql.to_owned(), answer))
            .map_err(|_| reply_error(&"the session ended"))?;
        rows.recv_timeout(self.timeout + Duration::from_secs(1))
            .map_err(|_| reply_error(&"the session ended"))?
    }
}

/// A wait that ran out, named with its bound.
fn timed_out(_: tokio::time::error::Elapsed, timeout: Duration) -> ServerError {
    ServerError::Io(std::io::Error::new(
        std::io::ErrorKind::TimedOut,
        format!("no answer within {timeout:?}"),
    ))
}

/// A row's columns as text.
fn text_row(row: mysql_async::Row) -> Vec<Option<String>> {
    use mysql_async::Value;
    row.unwrap()
        .into_iter()
        .map(|value| match value {
            Value::NULL => None,
            Value::Bytes(bytes) => Some(String::from_utf8_lossy(&bytes).into_owned()),
            Value::Int(v) => Some(v.to_string()),
            Value::UInt(v) => Some(v.to_string()),
            Value::Float(v) => Some(v.to_string()),
            Value::Double(v) => Some(v.to_string()),
            other => Some(other.as_sql(true)),
        })
        .collect()
}

fn reply_error(error: &dyn std::fmt::Display) -> ServerError {
    ServerError::Reply {
        server: "mariadb".into(),
        message: error.to_string().replace('\n', " "),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A server that accepts and then says nothing gives an error that names the wait.
    #[test]
    fn a_silent_server_is_no_answer_within_the_bound() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = listener.local_addr().expect("addr");
        let err = query(addr, "SELECT 1", Duration::from_millis(200)).expect_err("silence");
        assert!(err.to_string().contains("no answer within 200ms"), "{err}");
        drop(listener);
    }
}
