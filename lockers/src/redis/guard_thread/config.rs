//! Settings of the `redis-guard-thread` strategy ([`GuardThreadConfig`]) and of its waiters' polling
//! ([`PollBackoff`]).

use std::time::Duration;

use crate::error::LockError;
use crate::redis::keys::{DEFAULT_PREFIX, random_client_id, validate_naming};
use crate::redis::transport::connection::ConnectionSettings;
use crate::settings::Renewal;

/// How a waiter polls a held lock: the pause after the n-th miss is `initial × factor^n`, capped at
/// `max`, then scaled by a random factor in `[1 − jitter, 1 + jitter]`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PollBackoff {
    /// Pause after the first miss, > 0 (default 10 ms).
    pub initial: Duration,
    /// Growth per miss, ≥ 1 (default 2).
    pub factor: f64,
    /// Largest pause before jitter, ≥ `initial` (default 200 ms).
    pub max: Duration,
    /// Relative jitter, in [0, 1) (default 0.25: ±25 %), so waiters started together spread out.
    pub jitter: f64,
}

impl Default for PollBackoff {
    fn default() -> Self {
        PollBackoff {
            initial: Duration::from_millis(10),
            factor: 2.0,
            max: Duration::from_millis(200),
            jitter: 0.25,
        }
    }
}

impl PollBackoff {
    /// Checks the settings; a `Config` error names the bad one.
    pub fn validate(&self) -> Result<(), LockError> {
        if self.initial.is_zero() {
            return Err(LockError::Config("poll.initial must be > 0".into()));
        }
        if !(self.factor.is_finite() && self.factor >= 1.0) {
            return Err(LockError::Config(format!(
                "poll.factor must be a finite number ≥ 1, got {}",
                self.factor
            )));
        }
        if self.max < self.initial {
            return Err(LockError::Config(format!(
                "poll.max ({:?}) must be ≥ poll.initial ({:?})",
                self.max, self.initial
            )));
        }
        if !(0.0..1.0).contains(&self.jitter) {
            return Err(LockError::Config(format!(
                "poll.jitter must be in [0, 1), got {}",
                self.jitter
            )));
        }
        Ok(())
    }

    /// The pause after miss number `misses` (0 for the first), before jitter.
    pub fn nominal(&self, misses: u32) -> Duration {
        let grown = self.initial.as_secs_f64() * self.factor.powi(misses.min(64) as i32);
        Duration::from_secs_f64(grown.min(self.max.as_secs_f64()))
    }

    /// The pause after miss number `misses`, with jitter.
    pub fn pause(&self, misses: u32) -> Duration {
        let spread = self.jitter * (rand::random::<f64>() * 2.0 - 1.0);
        self.nominal(misses).mul_f64(1.0 + spread)
    }
}

/// Settings of a [`crate::redis::RedisGuardThread`] client.
#[derive(Debug, Clone, PartialEq)]
pub struct GuardThreadConfig {
    /// TTL of a watchdog lease and its renewal period (default 30 s, renewed every third, as Redisson's
    /// watchdog).
    pub renewal: Renewal,
    /// How waiters poll a held lock.
    pub poll: PollBackoff,
    /// Prepended to every key (default `lockbench:`); no braces.
    pub key_prefix: String,
    /// This client's id, the first part of every holder value; default: a random UUID-shaped string.
    pub client_id: String,
    /// Connect and response timeouts, for the shared connection and for every renewal thread's own.
    pub connection: ConnectionSettings,
}

impl Default for GuardThreadConfig {
    fn default() -> Self {
        GuardThreadConfig {
            renewal: Renewal::default(),
            poll: PollBackoff::default(),
            key_prefix: DEFAULT_PREFIX.into(),
            client_id: random_client_id(),
            connection: ConnectionSettings::default(),
        }
    }
}

impl GuardThreadConfig {
    /// Checks the settings; a `Config` error names the bad one.
    pub fn validate(&self) -> Result<(), LockError> {
        self.renewal.validate()?;
        self.poll.validate()?;
        validate_naming(&self.key_prefix, &self.client_id)?;
        self.connection.validate()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::redis::config_checks::assert_each_names_its_field;

    #[test]
    fn backoff_grows_caps_and_jitters_within_bounds() {
        let poll = PollBackoff::default();
        let nominal: Vec<u128> = (0..8).map(|n| poll.nominal(n).as_millis()).collect();
        assert_eq!(nominal, [10, 20, 40, 80, 160, 200, 200, 200]);
        for misses in 0..8 {
            let pause = poll.pause(misses);
            let nominal = poll.nominal(misses);
            assert!(pause >= nominal.mul_f64(0.75) && pause <= nominal.mul_f64(1.25));
        }
        assert_eq!(poll.nominal(u32::MAX), poll.max);
    }

    #[test]
    fn each_bad_value_names_its_field() {
        assert_each_names_its_field::<GuardThreadConfig>(
            &[
                ("renewal.ttl", |c| c.renewal.ttl = Duration::ZERO),
                ("renewal.ratio", |c| c.renewal.ratio = 1.0),
                ("poll.initial", |c| c.poll.initial = Duration::ZERO),
                ("poll.factor", |c| c.poll.factor = 0.5),
                ("poll.factor", |c| c.poll.factor = f64::INFINITY),
                ("poll.max", |c| c.poll.max = Duration::from_millis(1)),
                ("poll.jitter", |c| c.poll.jitter = 1.0),
                ("key_prefix", |c| c.key_prefix = "}".into()),
                ("client_id", |c| c.client_id = "a b".into()),
            ],
            GuardThreadConfig::validate,
        );
    }
}
