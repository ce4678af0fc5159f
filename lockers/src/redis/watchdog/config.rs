//! Settings of the `redis-watchdog` strategy ([`WatchdogConfig`]) and its renewal modes.

use crate::error::LockError;
use crate::redis::keys::{DEFAULT_PREFIX, random_client_id, validate_naming};
use crate::redis::transport::connection::ConnectionSettings;
use crate::settings::Renewal;

/// How held watchdog leases are renewed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RenewalMode {
    /// One timer and one renew call per held lock (Redisson's classic watchdog). The default: it is the
    /// behaviour the strategy reproduces, and at a few held locks per client it costs nothing extra.
    #[default]
    PerLock,
    /// One scheduler per client renews every due lock in one script call per `chunk` keys (Redisson ≥
    /// 3.44). Fewer server calls with many held locks, at the price of renewing each lock up to half a
    /// period early or late (see [`crate::redis`]).
    Batched {
        /// Locks per renew call, > 0 (Redisson uses 100).
        chunk: usize,
    },
}

impl RenewalMode {
    /// Batched renewal with Redisson's chunk of 100 keys.
    pub const BATCHED_DEFAULT: RenewalMode = RenewalMode::Batched { chunk: 100 };
}

/// Settings of a [`crate::redis::RedisWatchdog`] client.
#[derive(Debug, Clone, PartialEq)]
pub struct WatchdogConfig {
    /// TTL of a watchdog lease (Redisson's `lockWatchdogTimeout`) and its renewal period (default 30 s,
    /// renewed every 10 s).
    pub renewal: Renewal,
    /// Per-lock timers (default) or batched renewal.
    pub renewal_mode: RenewalMode,
    /// Prepended to every key and channel (default `lockbench:`); no braces.
    pub key_prefix: String,
    /// This client's id, prefixed to every owner (`<client id>:<owner>`); default: a random UUID-shaped
    /// hex string. Two clients with one id would be one owner space: keep ids unique.
    pub client_id: String,
    /// Connect and response timeouts.
    pub connection: ConnectionSettings,
}

impl Default for WatchdogConfig {
    fn default() -> Self {
        WatchdogConfig {
            renewal: Renewal::default(),
            renewal_mode: RenewalMode::default(),
            key_prefix: DEFAULT_PREFIX.into(),
            client_id: random_client_id(),
            connection: ConnectionSettings::default(),
        }
    }
}

impl WatchdogConfig {
    /// Checks the settings; a `Config` error names the bad one.
    pub fn validate(&self) -> Result<(), LockError> {
        self.renewal.validate()?;
        if let RenewalMode::Batched { chunk: 0 } = self.renewal_mode {
            return Err(LockError::Config("renewal_mode.chunk must be > 0".into()));
        }
        validate_naming(&self.key_prefix, &self.client_id)?;
        self.connection.validate()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::redis::config_checks::assert_each_names_its_field;

    #[test]
    fn defaults_are_valid_and_redisson_like() {
        let config = WatchdogConfig::default();
        config.validate().unwrap();
        assert_eq!(config.renewal.ttl, Duration::from_secs(30));
        assert_eq!(config.renewal_mode, RenewalMode::PerLock);
    }

    #[test]
    fn each_bad_value_names_its_field() {
        assert_each_names_its_field::<WatchdogConfig>(
            &[
                ("renewal.ttl", |c| c.renewal.ttl = Duration::ZERO),
                ("renewal.ratio", |c| c.renewal.ratio = 1.0),
                ("renewal.ratio", |c| c.renewal.ratio = f64::NAN),
                ("renewal_mode.chunk", |c| {
                    c.renewal_mode = RenewalMode::Batched { chunk: 0 }
                }),
                ("key_prefix", |c| c.key_prefix = "a{".into()),
                ("client_id", |c| c.client_id = String::new()),
                ("connection.connect_timeout", |c| {
                    c.connection.connect_timeout = Duration::ZERO
                }),
            ],
            WatchdogConfig::validate,
        );
    }
}
