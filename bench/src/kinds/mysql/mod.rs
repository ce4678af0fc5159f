//! The MySQL kind: a MySQL or MariaDB server (MariaDB when lockbench starts one): its flag and URL,
//! and how lockbench starts one, prepares the tables its strategies need and ends a holder's
//! session.

pub mod case_servers;
mod check;
pub mod counters;
pub mod held;

use std::net::SocketAddr;
use std::time::Duration;

use lockbench_servers::{MariaDbServer, ServerError};

use super::{KindEntry, ServerEntry, ServerFaults, ServerKind, Started, no_proxy_address};
use crate::kinds::address;
use crate::kinds::endpoints::required;

/// How long ending a holder's sessions may take, per statement.
const END_SESSIONS_TIMEOUT: Duration = Duration::from_secs(2);

/// The kind's id, as the strategy registry names it.
pub const KIND: ServerKind = ServerKind::Mysql;

/// The MySQL kind.
pub(super) static MYSQL: KindEntry = KindEntry {
    kind: KIND,
    distributed: true,
    in_driver_process: false,
    server: Some(ServerEntry {
        flag: "mysql",
        value_name: "URL",
        help: "Use this MySQL or MariaDB instead of starting one: mysql://user[:pass]@host:port/db \
               (or mariadb://), ?ca=ca.pem (optionally &cert=&key=) for TLS. The tables the \
               strategies need must exist (the error says what to create). The password may come \
               from LOCKBENCH_MYSQL_PASSWORD.",
        secret_variable: "LOCKBENCH_MYSQL_PASSWORD",
        fill_secret: address::fill_etcd_secret,
        sockets: |address| address::mysql_socket(address).map(|s| vec![s]),
        as_endpoint: str::to_owned,
        // Read through the strategies' own client (it logs in as the user).
        version: |_, _| Ok(None),
        checked_by_client: |_| true,
        client_check: Some(check::through_client),
        client_addresses: |endpoints| {
            required(endpoints.mysql.as_deref(), "mysql server").map(|a| vec![a.to_owned()])
        },
        // Its addresses carry a password (lockbench's own server's too).
        user_is_no_secret: false,
        peers_read_password: true,
        many_servers_behind: |_| None,
        start: || {
            let s = MariaDbServer::start()?;
            prepare_own_mysql(&s)?;
            Ok(one_server!(s, url, addr))
        },
        set_endpoint: |endpoints, address| endpoints.mysql = Some(address.to_owned()),
        proxied_sockets: |endpoints| {
            let url = endpoints
                .mysql
                .as_deref()
                .ok_or_else(|| no_proxy_address("mysql"))?;
            address::mysql_socket(url).map(|s| vec![s])
        },
        via_proxies: |endpoints, proxies| {
            if let (Some(url), Some(proxy)) = (&endpoints.mysql, proxies.first()) {
                endpoints.mysql = Some(address::address_via(url, *proxy));
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

/// Gives a MariaDB lockbench started (never a user's) what its rows need: the strategies' tables and
/// what the adapters on MySQL declare in their manifests' `server_setup` (ShedLock's `shedlock`). On a
/// primary with a replica, they replicate.
pub fn prepare_own_mysql(server: &MariaDbServer) -> Result<(), ServerError> {
    server.query(lockers::mysql::SCHEMA)?;
    for setup in lockers::peer::catalog::server_setups(KIND) {
        server.query(&setup)?;
    }
    Ok(())
}

/// Ends the sessions holding `lock` on the MariaDB at `socket` (`KILL CONNECTION` of each connection
/// [`lockers::mysql::holder_sessions`] lists, as lockbench's user, allowed to): the session holding
/// its user lock, or the one that last took or renewed its live lease row. How many it ended (a
/// session that ended meanwhile is not counted). Blocking.
fn end_holder_sessions(socket: SocketAddr, lock: &str) -> Result<usize, String> {
    let query = |sql: &str| lockbench_servers::mariadb::query(socket, sql, END_SESSIONS_TIMEOUT);
    let rows = query(&lockers::mysql::holder_sessions(lock)).map_err(|e| e.to_string())?;
    let ids = rows
        .iter()
        .filter_map(|row| row.first()?.as_deref()?.parse::<u64>().ok());
    Ok(ids
        .filter(|id| query(&format!("KILL CONNECTION {id}")).is_ok())
        .count())
}
