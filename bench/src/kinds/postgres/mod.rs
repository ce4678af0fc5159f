//! The PostgreSQL kind: a PostgreSQL server: its flag and URL, and how lockbench starts one and
//! prepares the tables its strategies need.

pub mod counters;
pub mod held;

use std::time::Duration;

use lockbench_servers::{PostgresServer, ServerError};

use super::{CaseServers, KindEntry, ServerEntry, ServerFaults, Started, no_proxy_address};
use crate::backends::address;

/// The PostgreSQL kind.
pub(super) static POSTGRES: KindEntry = KindEntry {
    name: "postgres",
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
            replica_failover: true,
            redis_primary: false,
            leader_kill: false,
            independent_nodes: false,
            terminate_session: true,
            keepalive_partition: true,
        },
        // A PostgreSQL primary + streaming replica (failover: a fresh server from `initdb` and its
        // copy from `pg_basebackup`; measured 1.36-1.52 s to start both, 2.7 s on a busy machine,
        // then the tables and the replication link's proxy).
        case_servers: CaseServers {
            pair: Some(Duration::from_millis(2000)),
            cluster: None,
            sentinels: None,
        },
        counters: counters::read,
        held: held::HELD,
    }),
};

/// Gives a PostgreSQL server lockbench started (never a user's) what its rows need: the strategies'
/// tables, the Spring JDBC peer's `INT_LOCK`, and `pg_stat_statements`' view. On a primary with a
/// replica, they replicate.
pub fn prepare_own_postgres(server: &PostgresServer) -> Result<(), ServerError> {
    server.query(lockers::postgres::SCHEMA)?;
    server.query(lockers::peer::catalog::SPRING_INT_LOCK_TABLE)?;
    server.query("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")?;
    Ok(())
}
