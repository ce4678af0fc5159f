//! The SQL set-ups a case starts for itself, written once for PostgreSQL and MariaDB over what
//! differs between them ([`SqlServer`]: the server, its session list, its log line; [`SqlPair`]:
//! its replication): a primary with a replica for `failover` ([`PrimaryReplica`]), and one server
//! in a network namespace of its own with short TCP keepalives for `keepalive_partition`
//! ([`NamespacedSql`]), whose sessions from some client ports are watched on one session of its own
//! kept open ([`Sessions`]).

use std::collections::BTreeMap;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use lockbench_reports::model::ServerInfo;
use lockbench_servers::{Keepalives, Namespaced, Partition, Proxy, ServerError};

use crate::kinds::case_servers::{
    CaseServers, FailoverReport, NAMESPACED_KEEPALIVES as KEEPALIVES, SessionWatch, case_info,
    fail_over_pair, lag_link, lag_words, promoted,
};
use crate::kinds::{EndpointAddrs, ServerKind};

/// The [`SqlServer`] methods that say where a server is and what it logs (`addr`, `pid`,
/// `version`, `startup`, `log_len`, `log_since`), run a query on it and kill it, given by the server type's inherent methods of the
/// same names (which take precedence over the trait's in `Self::…`).
macro_rules! served_by_inherent_methods {
    () => {
        fn addr(&self) -> std::net::SocketAddr {
            Self::addr(self)
        }
        fn pid(&self) -> u32 {
            Self::pid(self)
        }
        fn version(&self) -> &str {
            Self::version(self)
        }
        fn startup(&self) -> std::time::Duration {
            Self::startup(self)
        }
        fn log_len(&self) -> u64 {
            Self::log_len(self)
        }
        fn log_since(&self, mark: u64) -> String {
            Self::log_since(self, mark)
        }
        fn query(
            &self,
            sql: &str,
        ) -> Result<Vec<Vec<Option<String>>>, lockbench_servers::ServerError> {
            Self::query(self, sql)
        }
        fn kill(&self) -> std::io::Result<()> {
            Self::kill(self)
        }
    };
}
pub(crate) use served_by_inherent_methods;

/// The [`SqlPair`] methods that start, reach, link and promote a pair of `$server`s (`start`,
/// `primary`, `replica`, `replicate_through`, `promote_replica`), given by the pair type's inherent
/// methods of the same names.
macro_rules! replicated_by_inherent_methods {
    ($server:ty) => {
        fn start() -> Result<Self, lockbench_servers::ServerError> {
            Self::start()
        }
        fn primary(&self) -> &$server {
            Self::primary(self)
        }
        fn replica(&self) -> &$server {
            Self::replica(self)
        }
        fn replicate_through(
            &self,
            upstream: std::net::SocketAddr,
        ) -> Result<(), lockbench_servers::ServerError> {
            Self::replicate_through(self, upstream)
        }
        fn promote_replica(&self) -> Result<(), lockbench_servers::ServerError> {
            Self::promote_replica(self)
        }
    };
}
pub(crate) use replicated_by_inherent_methods;

/// How long one statement of a [`Sessions`] watch may take.
const WATCH_TIMEOUT: Duration = Duration::from_secs(2);

/// What a SQL server started in a network namespace is to a case: its kind, how to start it and
/// its tables, where it is, how its sessions are counted and what its log says when keepalive gave
/// up a client.
pub(crate) trait SqlServer: std::fmt::Debug + Send + Sync + Sized + 'static {
    /// Its kind.
    const KIND: ServerKind;
    /// How messages name it ("postgres").
    const NAME: &'static str;
    /// How the set-up's description names it ("server", "MariaDB").
    const DESCRIBED: &'static str;
    /// Where it lists its sessions, as errors name it ("pg_stat_activity").
    const SESSION_LIST: &'static str;
    /// What its log says when keepalive gave up a client's connection.
    const TIMED_OUT: &'static str;
    /// A session of its own, kept open for a watch.
    type Session: std::fmt::Debug + Send + 'static;

    /// Starts one in a namespace of its own with `keepalives`. Blocking.
    fn start_inside(keepalives: Keepalives) -> Result<Namespaced<Self>, ServerError>;
    /// Creates the tables its rows need.
    fn prepare(&self) -> Result<(), ServerError>;
    /// Its address among a run's endpoints.
    fn endpoints(&self) -> EndpointAddrs;
    /// Where it listens.
    fn addr(&self) -> SocketAddr;
    /// Its process id.
    fn pid(&self) -> u32;
    /// Its version.
    fn version(&self) -> &str;
    /// How long it took to start.
    fn startup(&self) -> Duration;
    /// How long its log is now: a mark for [`SqlServer::log_since`].
    fn log_len(&self) -> u64;
    /// What its log gained after `mark`.
    fn log_since(&self, mark: u64) -> String;
    /// Its keepalive settings as the set-up's description gives them, in parentheses.
    fn keepalive_words(keepalives: Keepalives) -> String;
    /// The statement counting its sessions from `host`'s `ports`.
    fn count_sessions(host: Ipv4Addr, ports: &[u16]) -> String;
    /// Opens a session to it, each statement bounded by `timeout`.
    fn open_session(&self, timeout: Duration) -> Result<Self::Session, ServerError>;
    /// Runs `sql` on `session`: its rows as text.
    fn session_query(
        session: &mut Self::Session,
        sql: &str,
    ) -> Result<Vec<Vec<Option<String>>>, ServerError>;
    /// Runs `sql` on a connection of its own: its rows as text.
    fn query(&self, sql: &str) -> Result<Vec<Vec<Option<String>>>, ServerError>;
    /// Kills it (`SIGKILL`).
    fn kill(&self) -> std::io::Result<()>;
}

/// What a primary with a replica of one [`SqlServer`] is to a case: how it starts, replicates and
/// fails over, and how it is described.
pub(crate) trait SqlPair: std::fmt::Debug + Send + Sync + Sized + 'static {
    /// Its servers.
    type Server: SqlServer;
    /// How the set-up's description names it ("primary + streaming replica").
    const DESCRIBED: &'static str;
    /// What the replica does through a link proxy, as errors name it ("streaming").
    const REPLICATING: &'static str;
    /// Lists the lock state a server holds as (what, value) rows: its rows and the locks its
    /// sessions hold (never replicated), for a failover's comparison.
    const LOCK_STATE: &'static str;
    /// How far a primary has written its log (a WAL position, a binlog file and offset).
    type Written;

    /// Starts a fresh primary and its replica. Blocking.
    fn start() -> Result<Self, ServerError>;
    /// The primary.
    fn primary(&self) -> &Self::Server;
    /// The replica.
    fn replica(&self) -> &Self::Server;
    /// Has the replica follow the primary through `upstream` (a link proxy).
    fn replicate_through(&self, upstream: SocketAddr) -> Result<(), ServerError>;
    /// How far `primary` has written its log, if it says.
    fn written(primary: &Self::Server) -> Option<Self::Written>;
    /// How many bytes of what the primary had `written` the replica had not received, if it says.
    fn unreplicated(replica: &Self::Server, written: Self::Written) -> Option<u64>;
    /// Makes the replica a primary.
    fn promote_replica(&self) -> Result<(), ServerError>;
}

/// A primary + replica `P`; `lag` is the proxy on the replication link when it is delayed.
#[derive(Debug)]
pub(crate) struct PrimaryReplica<P> {
    pub(crate) pair: P,
    lag: Option<Proxy>,
}

impl<P: SqlPair> PrimaryReplica<P> {
    /// Starts a primary with a replica and the tables its rows need (created on the primary,
    /// replicated). With a `replication_lag`, the replica reads from the primary through a proxy
    /// that delays it by that much. Blocking (a few seconds).
    pub(crate) fn start(replication_lag: Duration) -> Result<Self, String> {
        let name = P::Server::NAME;
        let pair = P::start().map_err(|e| format!("{name} primary + replica: {e}"))?;
        pair.primary()
            .prepare()
            .map_err(|e| format!("{name} tables: {e}"))?;
        let lag = lag_link(pair.primary().addr(), replication_lag, |proxy| {
            pair.replicate_through(proxy.addr())
                .map_err(|e| format!("{} through the link proxy: {e}", P::REPLICATING))
        })?;
        Ok(PrimaryReplica { pair, lag })
    }

    /// Kills the primary and compares the lock state it held just before ([`SqlPair::LOCK_STATE`])
    /// with the replica's right after, and how far the replica's received log was behind the
    /// primary's. Nothing pauses the clients' writes first (neither server has a `CLIENT PAUSE`): a
    /// statement that commits between the snapshot and the kill, a few milliseconds, is counted as
    /// the snapshot saw it.
    fn kill_primary(&self) -> Result<FailoverReport, String> {
        let (primary, replica) = (self.pair.primary(), self.pair.replica());
        let before = lock_state::<P>(primary);
        let written = P::written(primary);
        primary
            .kill()
            .map_err(|e| format!("killing the primary: {e}"))?;
        let unreplicated = written.and_then(|written| P::unreplicated(replica, written));
        let after = lock_state::<P>(replica);
        Ok(FailoverReport::compare(
            (primary.addr(), &before),
            (replica.addr(), &after),
            unreplicated,
        ))
    }
}

/// The lock state `server` holds ([`SqlPair::LOCK_STATE`]), by what; empty when it cannot say.
fn lock_state<P: SqlPair>(server: &P::Server) -> BTreeMap<String, String> {
    server
        .query(P::LOCK_STATE)
        .unwrap_or_default()
        .into_iter()
        .filter_map(|row| match row.as_slice() {
            [Some(key), Some(value)] => Some((key.clone(), value.clone())),
            _ => None,
        })
        .collect()
}

impl<P: SqlPair> CaseServers for PrimaryReplica<P> {
    fn kind(&self) -> ServerKind {
        P::Server::KIND
    }

    fn endpoints(&self) -> EndpointAddrs {
        self.pair.primary().endpoints()
    }

    fn stats_at(&self) -> Option<(SocketAddr, Option<u32>)> {
        let primary = self.pair.primary();
        Some((primary.addr(), Some(primary.pid())))
    }

    fn info(&self) -> ServerInfo {
        case_info(
            P::Server::KIND,
            self.pair.primary().version().to_owned(),
            format!(
                "{} started per case{}",
                P::DESCRIBED,
                lag_words(self.lag.as_ref())
            ),
            self.pair.primary().startup() + self.pair.replica().startup(),
        )
    }

    fn serving_pid(&self) -> Option<(u32, String)> {
        let primary = self.pair.primary();
        Some((
            primary.pid(),
            format!("{} primary {}", P::Server::NAME, primary.addr()),
        ))
    }

    fn fail_over(&self, redirect: &dyn Fn(SocketAddr)) -> Result<FailoverReport, String> {
        fail_over_pair(
            self.lag.as_ref(),
            self.pair.replica().addr(),
            redirect,
            || {
                let report = self.kill_primary()?;
                promoted(self.pair.promote_replica())?;
                Ok(report)
            },
        )
    }
}

/// One `S` in a network namespace of its own, with [`KEEPALIVES`].
#[derive(Debug)]
pub(crate) struct NamespacedSql<S>(Arc<Namespaced<S>>);

impl<S: SqlServer> NamespacedSql<S> {
    /// Starts it and the tables its rows need. Blocking (about a second).
    pub(crate) fn start() -> Result<Self, String> {
        let name = S::NAME;
        let namespaced = S::start_inside(KEEPALIVES)
            .map_err(|e| format!("{name} in a network namespace: {e}"))?;
        namespaced
            .server()
            .prepare()
            .map_err(|e| format!("{name} tables: {e}"))?;
        Ok(NamespacedSql(Arc::new(namespaced)))
    }
}

impl<S: SqlServer> CaseServers for NamespacedSql<S> {
    fn kind(&self) -> ServerKind {
        S::KIND
    }

    fn endpoints(&self) -> EndpointAddrs {
        self.0.server().endpoints()
    }

    fn stats_at(&self) -> Option<(SocketAddr, Option<u32>)> {
        Some((self.0.server().addr(), Some(self.0.server().pid())))
    }

    fn info(&self) -> ServerInfo {
        let server = self.0.server();
        case_info(
            S::KIND,
            server.version().to_owned(),
            format!(
                "one {} in network namespace {} started per case ({})",
                S::DESCRIBED,
                self.0.namespace().name(),
                S::keepalive_words(KEEPALIVES)
            ),
            server.startup(),
        )
    }

    fn serving_pid(&self) -> Option<(u32, String)> {
        let server = self.0.server();
        Some((
            server.pid(),
            format!("{} {} (in a network namespace)", S::NAME, server.addr()),
        ))
    }

    fn keepalive_limit(&self) -> Option<Duration> {
        Some(KEEPALIVES.limit())
    }

    fn partition(&self, ports: &[u16]) -> Result<Partition, String> {
        self.0
            .namespace()
            .partition(ports)
            .map_err(|e| format!("partition: {e}"))
    }

    /// On one session of its own kept open for the fault, counting the server's "timed out" log
    /// lines from now on.
    fn watch_sessions(&self, ports: &[u16]) -> Result<Box<dyn SessionWatch>, String> {
        let server = self.0.server();
        let count = S::count_sessions(self.0.namespace().host_addr(), ports);
        let session = server
            .open_session(WATCH_TIMEOUT)
            .map_err(|e| format!("a session to watch {}: {e}", S::SESSION_LIST))?;
        Ok(Box::new(Sessions {
            server: self.0.clone(),
            session,
            count,
            log_mark: server.log_len(),
        }))
    }
}

/// The namespaced server's sessions from some client ports, watched on one session kept open.
#[derive(Debug)]
struct Sessions<S: SqlServer> {
    server: Arc<Namespaced<S>>,
    session: S::Session,
    /// Counts the watched sessions in the server's session list.
    count: String,
    /// The server log's length when the watch began.
    log_mark: u64,
}

impl<S: SqlServer> SessionWatch for Sessions<S> {
    fn read(&mut self) -> Result<(u64, usize), String> {
        let rows = S::session_query(&mut self.session, &self.count)
            .map_err(|e| format!("{}: {e}", S::SESSION_LIST))?;
        let live = rows
            .first()
            .and_then(|row| row.first()?.as_ref()?.parse().ok())
            .unwrap_or_default();
        let log = self.server.server().log_since(self.log_mark);
        Ok((live, log.matches(S::TIMED_OUT).count()))
    }

    fn timed_out_line(&self) -> &'static str {
        S::TIMED_OUT
    }
}
