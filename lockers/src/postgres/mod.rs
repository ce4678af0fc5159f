//! The PostgreSQL strategies, on the [`tokio-postgres`](tokio_postgres) client: `postgres-advisory`
//! ([`advisory`]: a session-level advisory lock on a connection kept for the hold) and
//! `postgres-lease` ([`lease`]: a lease row on the server's clock). What both share lives in
//! `connection`: the settings ([`PostgresConfig`]), connecting (one line without the password on
//! failure), the tables they need ([`SCHEMA`]; lockbench creates them only on servers it started) and
//! how client errors become [`LockError`](crate::LockError)s.

pub mod advisory;
mod connection;
pub mod lease;

pub use connection::{
    FENCING_TABLE, LEASE_TABLE, PostgresConfig, SCHEMA, check_server, holder_sessions,
};
