//! Settings of the `redlock` strategy ([`RedlockConfig`]) and the quorum arithmetic they imply
//! (majority, clock drift, validity).

use std::time::Duration;

use crate::error::LockError;
use crate::redis::keys::{DEFAULT_PREFIX, random_client_id, validate_naming};
use crate::redis::transport::connection::ConnectionSettings;
use crate::settings::Renewal;

/// Settings of a [`crate::redis::Redlock`] client.
#[derive(Debug, Clone, PartialEq)]
pub struct RedlockConfig {
    /// The TTL set on every node by a watchdog lease and by each extension (default 30 s), and the
    /// extension period as a fraction of it (default 1/3, as every renewing strategy here;
    /// node-redlock's `using` extends 500 ms before expiry instead — see the module docs).
    pub renewal: Renewal,
    /// Bound on one node's answer to one `SET NX PX`, extension or release. `None` (default) derives it
    /// from the TTL: 0.5 % of it, within [5 ms, 50 ms] (the published algorithm: "small compared to the
    /// auto-release time", e.g. 5–50 ms for a 10 s TTL), so a dead node costs little of the validity.
    pub node_timeout: Option<Duration>,
    /// Clock drift allowance as a fraction of the TTL (default 0.01, the published 1 %).
    pub drift_factor: f64,
    /// Constant drift allowance added to it (default 2 ms, the published value).
    pub drift_constant: Duration,
    /// Base pause before another attempt after a miss (default 200 ms, node-redlock's `retryDelay`).
    pub retry_delay: Duration,
    /// Random extra pause in [0, `retry_jitter`] (default 100 ms), so contenders that split the votes do
    /// not collide again. Only added: node-redlock's `retryJitter` (also 100 ms) moves the pause either
    /// way, 200 ± 100 ms.
    pub retry_jitter: Duration,
    /// Prepended to every key (default `lockbench:`); no braces.
    pub key_prefix: String,
    /// This client's id, the first part of every lock value; default: a random UUID-shaped string.
    pub client_id: String,
    /// Connect and response timeouts of each node's connection.
    pub connection: ConnectionSettings,
}

impl Default for RedlockConfig {
    fn default() -> Self {
        RedlockConfig {
            renewal: Renewal::default(),
            node_timeout: None,
            drift_factor: 0.01,
            drift_constant: Duration::from_millis(2),
            retry_delay: Duration::from_millis(200),
            retry_jitter: Duration::from_millis(100),
            key_prefix: DEFAULT_PREFIX.into(),
            client_id: random_client_id(),
            connection: ConnectionSettings::default(),
        }
    }
}

impl RedlockConfig {
    /// Checks the settings; a `Config` error names the bad one.
    pub fn validate(&self) -> Result<(), LockError> {
        self.renewal.validate()?;
        if self.node_timeout.is_some_and(|t| t.is_zero()) {
            return Err(LockError::Config("node_timeout must be > 0".into()));
        }
        if !(self.drift_factor.is_finite() && (0.0..0.5).contains(&self.drift_factor)) {
            return Err(LockError::Config(format!(
                "drift_factor must be in [0, 0.5), got {}",
                self.drift_factor
            )));
        }
        if self.retry_delay.is_zero() {
            return Err(LockError::Config("retry_delay must be > 0".into()));
        }
        validate_naming(&self.key_prefix, &self.client_id)?;
        self.connection.validate()
    }

    /// The per-node timeout for a lock of `ttl`.
    pub fn node_timeout_for(&self, ttl: Duration) -> Duration {
        self.node_timeout.unwrap_or_else(|| {
            ttl.mul_f64(0.005)
                .clamp(Duration::from_millis(5), Duration::from_millis(50))
        })
    }

    /// The clock drift allowance for `ttl`: `ttl × drift_factor + drift_constant`.
    pub fn drift(&self, ttl: Duration) -> Duration {
        ttl.mul_f64(self.drift_factor) + self.drift_constant
    }

    /// The pause before the next attempt: `retry_delay` plus a random part of `retry_jitter`.
    pub(in crate::redis) fn retry_pause(&self) -> Duration {
        self.retry_delay + self.retry_jitter.mul_f64(rand::random::<f64>())
    }
}

/// The number of nodes that make a majority of `n`: ⌊n/2⌋ + 1.
pub fn quorum(n: usize) -> usize {
    n / 2 + 1
}

/// The validity left of a lock of `ttl` whose attempt took `elapsed`: `ttl − elapsed − drift`, or
/// `None` when that is not positive (the lock must be treated as not acquired).
pub fn validity(ttl: Duration, elapsed: Duration, drift: Duration) -> Option<Duration> {
    ttl.checked_sub(elapsed)
        .and_then(|left| left.checked_sub(drift))
        .filter(|v| !v.is_zero())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::redis::config_checks::assert_each_names_its_field;

    #[test]
    fn quorum_validity_and_node_timeout_follow_the_published_rules() {
        assert_eq!([1, 2, 3, 4, 5, 6, 7].map(quorum), [1, 2, 2, 3, 3, 4, 4]);
        let config = RedlockConfig::default();
        let ttl = Duration::from_secs(10);
        assert_eq!(config.drift(ttl), Duration::from_millis(102));
        assert_eq!(
            validity(ttl, Duration::from_millis(8), config.drift(ttl)),
            Some(Duration::from_millis(9_890))
        );
        assert_eq!(
            validity(ttl, Duration::from_millis(9_898), config.drift(ttl)),
            None
        );
        assert_eq!(config.node_timeout_for(ttl), Duration::from_millis(50));
        assert_eq!(
            config.node_timeout_for(Duration::from_millis(600)),
            Duration::from_millis(5)
        );
        assert_eq!(
            config.node_timeout_for(Duration::from_secs(4)),
            Duration::from_millis(20)
        );
    }

    #[test]
    fn each_bad_value_names_its_field() {
        assert_each_names_its_field::<RedlockConfig>(
            &[
                ("renewal.ttl", |c| c.renewal.ttl = Duration::ZERO),
                ("renewal.ratio", |c| c.renewal.ratio = 1.0),
                ("node_timeout", |c| c.node_timeout = Some(Duration::ZERO)),
                ("drift_factor", |c| c.drift_factor = f64::NAN),
                ("retry_delay", |c| c.retry_delay = Duration::ZERO),
                ("key_prefix", |c| c.key_prefix = "{".into()),
                ("client_id", |c| c.client_id = "".into()),
            ],
            RedlockConfig::validate,
        );
    }
}
