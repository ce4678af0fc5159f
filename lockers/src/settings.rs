//! The one renewal setting every strategy's config embeds ([`Renewal`]): a watchdog lease's TTL and how
//! often it is renewed, validated once.

use std::time::Duration;

use crate::error::LockError;

/// How a renewed ([`LeaseMode::Watchdog`](crate::LeaseMode::Watchdog)) lease lives: its TTL, and the
/// renewal period as a fraction of it. Every strategy reads it its own way — Redisson's
/// `lockWatchdogTimeout` renewed every third (the Redis strategies, `memory`), an etcd lease kept alive
/// every third (whole seconds), a ZooKeeper session timeout probed every third — but it is one setting.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Renewal {
    /// The TTL of a watchdog lease, > 0 (default 30 s, Redisson's `lockWatchdogTimeout`).
    pub ttl: Duration,
    /// The renewal period as a fraction of `ttl`, in (0, 1) (default 1/3, as Redisson and etcd's Go
    /// `concurrency.Session` renew).
    pub ratio: f64,
}

impl Default for Renewal {
    fn default() -> Self {
        Renewal::new(Duration::from_secs(30))
    }
}

impl Renewal {
    /// A TTL of `ttl`, renewed every third of it.
    pub const fn new(ttl: Duration) -> Self {
        Renewal {
            ttl,
            ratio: 1.0 / 3.0,
        }
    }

    /// The renewal period: `ttl × ratio`.
    pub fn period(&self) -> Duration {
        self.ttl.mul_f64(self.ratio)
    }

    /// Checks the setting; a `Config` error names the bad field (`renewal.ttl`, `renewal.ratio`).
    pub fn validate(&self) -> Result<(), LockError> {
        if self.ttl.is_zero() {
            return Err(LockError::Config("renewal.ttl must be > 0".into()));
        }
        if !(self.ratio > 0.0 && self.ratio < 1.0) {
            return Err(LockError::Config(format!(
                "renewal.ratio must be in (0, 1), got {}",
                self.ratio
            )));
        }
        Ok(())
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn default_is_redissons_watchdog() {
        let renewal = Renewal::default();
        renewal.validate().unwrap();
        assert_eq!(renewal.ttl, Duration::from_secs(30));
        assert_eq!(renewal.period(), Duration::from_secs(10));
    }

    #[test]
    fn each_bad_value_names_its_field() {
        let zero = Renewal::new(Duration::ZERO).validate().unwrap_err();
        assert!(zero.to_string().contains("renewal.ttl"), "{zero}");
        for ratio in [0.0, 1.0, f64::NAN] {
            let bad = Renewal {
                ratio,
                ..Renewal::default()
            };
            let err = bad.validate().unwrap_err();
            assert!(err.to_string().contains("renewal.ratio"), "{err}");
        }
    }
}
