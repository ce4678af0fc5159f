//! The PostgreSQL kind: a PostgreSQL server: its flag and URL, and how lockbench starts one and
//! prepares the tables its strategies need.

pub mod case_servers;
mod check;
pub mod counters;
pub mod held;

use std::net::SocketAddr;
use std::time::Duration;

use lockbench_servers::{PostgresServer, ServerError};

use super::{KindEntry, ServerEntry, ServerFaults, ServerKind, Started, no_proxy_address};
use crate::kinds::address;
use crate::kinds::endpoints::required;

/// How long ending a holder's sessions may take.
const END_SESSIONS_TIMEOUT: Duration = Duration::from_secs(2);

/// The kind's id, as the strategy registry names it.
pub const KIND: ServerKind = ServerKind::Postgres;

/// The PostgreSQL kind.
pub(super) static POSTGRES: KindEntry = KindEntry {
    kind: KIND,
    distributed: true,
    in_driver_process: false,
    server: Some(ServerEntry {
        flag: "postgres",
        value_name: "URL",
        help: "Use this PostgreSQL instead of starting one: postgres://user[:pass]@host:port/db, \
               ?sslmode=require&ca=ca.pem (optionally &cert=&key=) for TLS. The tables the \
               strategies need must exist (the error says what to create). The password may come \
               from LOCKBENCH_POSTGRES_PASSWORD.",
        secret_variable: "LOCKBENCH_POSTGRES_PASSWORD",
        fill_secret: address::fill_etcd_secret,
        sockets: |address| address::postgres_socket(address).map(|s| vec![s]),
        as_endpoint: str::to_owned,
        // Read through the strategies' own client (it logs in as the user).
        version: |_, _| Ok(None),
        checked_by_client: |_| true,
        client_check: Some(check::through_client),
        client_addresses: |endpoints| {
            required(endpoints.postgres.as_deref(), "postgres server").map(|a| vec![a.to_owned()])
        },
        // Its address names its user (lockbench's own server: `lockbench@`, no password).
        user_is_no_secret: true,
        peers_read_password: false,
        many_servers_behind: |_| None,
        start: || {
            let s = PostgresServer::start()?;
            prepare_own_postgres(&s)?;
            Ok(one_server!(s, url, addr))
        },
        set_endpoint: |endpoints, address| endpoints.postgres = Some(address.to_owned()),
        proxied_sockets: |endpoints| {
            let url = endpoints
                .postgres
                .as_deref()
                .ok_or_else(|| no_proxy_address("postgres"))?;
            address::postgres_socket(url).map(|s| vec![s])
        },
        via_proxies: |endpoints, proxies| {
            if let (Some(url), Some(proxy)) = (&endpoints.postgres, proxies.first()) {
                endpoints.postgres = Some(address::address_via(url, *proxy));
            }
        },
        faults: ServerFaults {
            commands: &[],
            end_sessions: Some(end_holder_sessions),
            own: case_servers::STARTS,
        },
        monitor: None,
        requests_from_tally: false,
        counters: counters::read,
        held: held::HELD,
    }),
};

/// Gives a PostgreSQL server lockbench started (never a user's) what its rows need: the strategies'
/// tables, what the adapters on PostgreSQL declare in their manifests' `server_setup` (the tables
/// their libraries' documentation has users create: Spring's `INT_LOCK`, ShedLock's `shedlock`), and `pg_stat_statements`' view. On a primary with a
/// replica, they replicate.
pub fn prepare_own_postgres(server: &PostgresServer) -> Result<(), ServerError> {
    server.query(lockers::postgres::SCHEMA)?;
    for setup in lockers::peer::catalog::server_setups(KIND) {
        server.query(&setup)?;
    }
    server.query("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")?;
    Ok(())
}

/// Ends the sessions holding `lock` on the PostgreSQL at `socket` (`pg_terminate_backend`, as
/// lockbench's superuser), whichever row holds it: lockbench's own rows' tables and the Spring JDBC
/// peer's INT_LOCK (the run's own server has both). How many it ended. Blocking.
fn end_holder_sessions(socket: SocketAddr, lock: &str) -> Result<usize, String> {
    let sql = format!(
        "SELECT pg_terminate_backend(pid) FROM ({} UNION {}) s",
        lockers::postgres::holder_sessions(lock),
        lockers::peer::catalog::spring_jdbc_holder_sessions(lock)
    );
    lockbench_servers::postgres::query(socket, &sql, END_SESSIONS_TIMEOUT)
        .map(|rows| rows.len())
        .map_err(|e| e.to_string())
}
