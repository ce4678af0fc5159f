//! Settings of the `redis-keyspace` strategy: its two designs ([`Variant`]) and [`KeyspaceConfig`].

use std::time::Duration;

use crate::error::LockError;
use crate::locker::Capabilities;
use crate::redis::acquire;
use crate::redis::keys::{DEFAULT_PREFIX, random_client_id, validate_naming};
use crate::redis::transport::connection::ConnectionSettings;
use crate::settings::Renewal;

/// The id of the naive variant.
pub const NAIVE_ID: &str = "redis-keyspace-naive";
/// The id of the shadow-key variant.
pub const SHADOW_ID: &str = "redis-keyspace-shadow";

/// Which keyspace design a [`crate::redis::RedisKeyspace`] client runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Variant {
    /// Re-acquire when the lock key's own `expired` event arrives (flawed on purpose).
    Naive,
    /// Renew when a shorter-lived shadow key's `expired` event arrives.
    Shadow,
}

impl Variant {
    /// Both variants.
    pub const ALL: [Variant; 2] = [Variant::Naive, Variant::Shadow];

    /// The strategy id of this variant.
    pub const fn id(self) -> &'static str {
        match self {
            Variant::Naive => NAIVE_ID,
            Variant::Shadow => SHADOW_ID,
        }
    }

    /// What this variant can do, without connecting (for listings). Both declare a lost signal: the naive
    /// holder learns of a takeover when its re-acquire fails, the shadow holder when a renewal is
    /// answered "not yours" — each before its local deadline.
    pub const fn capabilities(self) -> Capabilities {
        acquire::capabilities(false, true)
    }
}

/// Settings of a [`crate::redis::RedisKeyspace`] client.
#[derive(Debug, Clone, PartialEq)]
pub struct KeyspaceConfig {
    /// TTL of a watchdog lease (default 30 s) and, as the ratio, how often the naive holder moves its
    /// local belief forward (default every third). The shadow variant renews on its shadow's expiry
    /// instead (`shadow_ratio`).
    pub renewal: Renewal,
    /// Shadow key TTL as a fraction of the timeout, in (0, 1) (default 2/3; shadow variant only).
    pub shadow_ratio: f64,
    /// A waiter re-checks the lock this often even without an event (default 250 ms), so a lost event
    /// delays it at most this long.
    pub waiter_recheck: Duration,
    /// Prepended to every key (default `lockbench:`); no braces.
    pub key_prefix: String,
    /// This client's id, the first part of every holder value; default: a random UUID-shaped string.
    pub client_id: String,
    /// Connect and response timeouts.
    pub connection: ConnectionSettings,
}

impl Default for KeyspaceConfig {
    fn default() -> Self {
        KeyspaceConfig {
            renewal: Renewal::default(),
            shadow_ratio: 2.0 / 3.0,
            waiter_recheck: Duration::from_millis(250),
            key_prefix: DEFAULT_PREFIX.into(),
            client_id: random_client_id(),
            connection: ConnectionSettings::default(),
        }
    }
}

impl KeyspaceConfig {
    /// Checks the settings; a `Config` error names the bad one.
    pub fn validate(&self) -> Result<(), LockError> {
        if !(self.shadow_ratio > 0.0 && self.shadow_ratio < 1.0) {
            return Err(LockError::Config(format!(
                "shadow_ratio must be in (0, 1), got {}",
                self.shadow_ratio
            )));
        }
        self.renewal.validate()?;
        if self.shadow_ttl() < Duration::from_millis(1) {
            return Err(LockError::Config(format!(
                "renewal.ttl × shadow_ratio must be ≥ 1 ms, got {:?}",
                self.shadow_ttl()
            )));
        }
        if self.waiter_recheck.is_zero() {
            return Err(LockError::Config("waiter_recheck must be > 0".into()));
        }
        validate_naming(&self.key_prefix, &self.client_id)?;
        self.connection.validate()
    }

    /// The shadow key's TTL: `renewal.ttl × shadow_ratio`.
    pub fn shadow_ttl(&self) -> Duration {
        self.renewal.ttl.mul_f64(self.shadow_ratio)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::redis::config_checks::assert_each_names_its_field;

    #[test]
    fn each_bad_value_names_its_field() {
        assert_each_names_its_field::<KeyspaceConfig>(
            &[
                ("renewal.ttl", |c| c.renewal.ttl = Duration::ZERO),
                ("renewal.ratio", |c| c.renewal.ratio = 1.0),
                ("shadow_ratio", |c| c.shadow_ratio = 0.0),
                ("shadow_ratio", |c| c.shadow_ratio = f64::NAN),
                ("≥ 1 ms", |c| c.renewal.ttl = Duration::from_micros(100)),
                ("waiter_recheck", |c| c.waiter_recheck = Duration::ZERO),
                ("key_prefix", |c| c.key_prefix = "{".into()),
                ("client_id", |c| c.client_id = String::new()),
            ],
            KeyspaceConfig::validate,
        );
    }

    #[test]
    fn variants_report_their_ids() {
        assert_eq!(Variant::Naive.id(), NAIVE_ID);
        assert_eq!(Variant::Shadow.id(), SHADOW_ID);
        assert!(Variant::ALL.iter().all(|v| v.capabilities().wait_notify));
    }
}
