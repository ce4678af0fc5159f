//! The MySQL strategies (MariaDB too), on the [`mysql_async`] client: `mysql-get-lock` ([`get_lock`]:
//! a user lock, `GET_LOCK`, held by the session of a connection kept for the hold) and `mysql-lease`
//! ([`lease`]: a lease row on the server's clock). What both share lives in `connection`: the settings
//! ([`MysqlConfig`]), connecting (one line without the password on failure), the tables they need
//! ([`SCHEMA`]; lockbench creates them only on servers it started), a key's name on the server
//! ([`lock_name`]) and how client errors become [`LockError`](crate::LockError)s.

mod connection;
pub mod get_lock;
pub mod lease;

pub use connection::{
    FENCING_TABLE, HELD_LOCKS, LEASE_TABLE, MAX_LOCK_NAME, MysqlConfig, SCHEMA, check_server,
    holder_sessions, lock_name,
};
