//! The settings the SQL strategies share (PostgreSQL's and MySQL's): the watchdog lease, the bound
//! on connecting and how often a waiting lease-row acquire tries again.

use std::time::Duration;

use crate::error::LockError;
use crate::settings::Renewal;

/// How a SQL strategy talks to its server (`PostgresConfig`, `MysqlConfig`).
#[derive(Debug, Clone, PartialEq)]
pub struct SqlConfig {
    /// A watchdog lease's TTL and renewal period: a lease row is renewed every period; a lock held by
    /// the session (an advisory lock, `GET_LOCK`) has its session checked every period (its local
    /// deadline is the last answer plus the TTL).
    pub renewal: Renewal,
    /// Bound on connecting (TCP, start-up, authentication).
    pub connect_timeout: Duration,
    /// How often a waiting lease-row acquire tries again (a lease row wakes nobody).
    pub poll_interval: Duration,
}

impl Default for SqlConfig {
    fn default() -> Self {
        SqlConfig {
            renewal: Renewal::default(),
            connect_timeout: Duration::from_secs(5),
            poll_interval: Duration::from_millis(20),
        }
    }
}

impl SqlConfig {
    /// Checks the settings; a `Config` error names the bad one.
    pub fn validate(&self) -> Result<(), LockError> {
        self.renewal.validate()?;
        if self.connect_timeout.is_zero() {
            return Err(LockError::Config("connect_timeout must be > 0".into()));
        }
        if self.poll_interval.is_zero() {
            return Err(LockError::Config("poll_interval must be > 0".into()));
        }
        Ok(())
    }
}
