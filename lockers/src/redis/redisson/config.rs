//! Settings of the faithful Redisson rows ([`RedissonConfig`]): which generation of Redisson's watchdog
//! runs ([`Generation`]), the topology that decides whether lock writes wait for replicas
//! ([`Topology`]), and Redisson's own defaults (`lockWatchdogTimeout` 30 s, `lockWatchdogBatchSize` 100,
//! `checkLockSyncedSlaves` true, `slavesSyncTimeout` 1 s: `org.redisson.config.Config`; `timeout` 3 s,
//! `retryAttempts` 3, `retryInterval` 1.5 s: `BaseConfig`, 3.43.0; `retryAttempts` 4 and `retryDelay`
//! `EqualJitterDelay(1 s, 2 s)` in 3.52.0 and 4.x; `scanInterval` 5 s in `ClusterServersConfig`, 1 s in
//! `SentinelServersConfig`).

use std::time::Duration;

use crate::error::LockError;
use crate::redis::keys::{DEFAULT_PREFIX, random_client_id, validate_naming};
use crate::redis::transport::connection::ConnectionSettings;
pub use crate::redis::transport::replica_sync::Topology;
use crate::settings::Renewal;

/// Which generation of Redisson's lock watchdog a client reproduces.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Generation {
    /// Redisson 3.x before 3.44 (`RedissonBaseLock.renewExpiration`): one timer per held lock, every
    /// timeout/3 after the previous answer; a renewal error drops the entry and renewal stops for good.
    Classic,
    /// Redisson 3.44 and later (`org.redisson.renewal.LockRenewalScheduler` / `LockTask`): one scheduler
    /// per client renews every held lock on each tick, in chunks; an error is retried at the next tick.
    #[default]
    Scheduler,
}

/// How long Redisson waits before re-sending a renew call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RetryDelay {
    /// Up to 3.4x (`retryInterval`): `retry_interval` before re-sending after a connection failure or
    /// a retried server error; a response timeout re-sends at once.
    Constant,
    /// 3.52.0 and 4.x (`retryDelay`, default `EqualJitterDelay(1 s, 2 s)` beside a 1.5 s
    /// `retryInterval`): before every re-send, response timeouts included, a pause drawn for attempt
    /// `n` (from 0) between half and all of `min(base × 2^n, max)`, with `base` = ⅔ and `max` = 4⁄3 of
    /// `retry_interval` (1 s and 2 s at Redisson's default).
    #[default]
    EqualJitter,
}

impl RetryDelay {
    /// The pause before re-sending after failed attempt `attempt` (0 for the first send), or `None`
    /// when it re-sends at once; `timed_out` tells a response timeout from other failures.
    pub(crate) fn pause(
        self,
        interval: Duration,
        attempt: u32,
        timed_out: bool,
    ) -> Option<Duration> {
        match self {
            RetryDelay::Constant if timed_out => None,
            RetryDelay::Constant => Some(interval),
            RetryDelay::EqualJitter => {
                let (base, max) = (interval * 2 / 3, interval * 4 / 3);
                let backoff = base
                    .checked_mul(1 << attempt.min(20))
                    .map_or(max, |d| d.min(max));
                let half = backoff / 2;
                Some(half + half.mul_f64(rand::random::<f64>()))
            }
        }
    }

    /// The pause Redisson sizes its timer's tick with: `retryInterval` up to 3.4x; in 3.52+
    /// `retryDelay.calcDelay(0)`, a draw between ⅓ and ⅔ of `interval`, taken here at its middle.
    pub(crate) fn first_pause(self, interval: Duration) -> Duration {
        match self {
            RetryDelay::Constant => interval,
            RetryDelay::EqualJitter => interval / 2,
        }
    }
}

/// What an acquire or a release does when `WAIT` found no replica confirming it (with
/// `checkLockSyncedSlaves`): `CommandAsyncService.handleNoSync` and `ServiceManager.execute`, which
/// every `RLock` acquire and unlock goes through (renewals do not).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum UnsyncedLockCall {
    /// 3.25 to 3.46: both test the error's message for equality with "None of slaves were synced",
    /// but the error says more ("… Try to increase slavesSyncTimeout …", since 3.25), so neither
    /// matches: the call fails at once, and a failed acquire leaves its hold on the primary,
    /// unrenewed, until its TTL.
    FailsAtOnce,
    /// 3.47.0 and later (`NoSyncedSlavesException`, commit f2b6ad8): an acquire's hold is released
    /// again (an unlock, itself waited for), and the whole call is tried again up to `retryAttempts`
    /// times, after `retryDelay.calcDelay(n)` for retry `n` (from 1).
    #[default]
    UndoneAndRetried,
}

/// Settings of a [`crate::redis::Redisson`] client.
#[derive(Debug, Clone, PartialEq)]
pub struct RedissonConfig {
    /// Classic (per-lock timers) or scheduler (3.44+) renewal.
    pub generation: Generation,
    /// The TTL of a watchdog lease (`renewal.ttl`: `lockWatchdogTimeout`, default 30 s). Redisson
    /// hard-codes the renewal at a third of it, so `renewal.ratio` must stay 1/3.
    pub renewal: Renewal,
    /// Locks per renew call of the 3.44+ scheduler (`lockWatchdogBatchSize`, default 100).
    pub batch_size: usize,
    /// Single server (never `WAIT`) or a topology with replicas.
    pub topology: Topology,
    /// Fail a lock write that no replica confirmed (`checkLockSyncedSlaves`, default true).
    pub check_lock_synced_slaves: bool,
    /// How long `WAIT` waits for replicas (`slavesSyncTimeout`, default 1 s).
    pub slaves_sync_timeout: Duration,
    /// What an acquire or release no replica confirmed does (3.43:
    /// [`UnsyncedLockCall::FailsAtOnce`]; 3.52: [`UnsyncedLockCall::UndoneAndRetried`]).
    pub unsynced_lock_call: UnsyncedLockCall,
    /// Prepended to every key and channel (default `lockbench:`); no braces.
    pub key_prefix: String,
    /// This client's id, prefixed to every owner (Redisson's connection manager id); default random.
    pub client_id: String,
    /// Extra attempts of a renew call that timed out or lost its connection (`retryAttempts`: 3 up to
    /// 3.4x, 4 in 3.52.0 and 4.x). Acquire and release are never retried (`syncedEvalNoRetry`).
    pub retry_attempts: u32,
    /// The pause before a re-send (`retryInterval`, 1.5 s), which [`RetryDelay::EqualJitter`] scales.
    pub retry_interval: Duration,
    /// Constant `retryInterval` (3.43) or jittered `retryDelay` (3.52.0, 4.x).
    pub retry_delay: RetryDelay,
    /// How often a client of a Redis Cluster reads the layout again without waiting for an error
    /// (`ClusterServersConfig` `scanInterval`, default 5 s).
    pub cluster_scan_interval: Duration,
    /// How often a client behind Sentinel asks the Sentinels for the primary again without waiting
    /// for an error (`SentinelServersConfig` `scanInterval`, default 1 s).
    pub sentinel_scan_interval: Duration,
    /// Connect and response timeouts; the default response timeout is Redisson's `timeout` (3 s).
    /// With [`Topology::Replicated`] a command may take `response_timeout + slaves_sync_timeout`
    /// (Redisson's batch timeout for a synced write).
    pub connection: ConnectionSettings,
}

/// Redisson's default `lockWatchdogBatchSize`: locks per renew call of the 3.44+ scheduler.
pub const DEFAULT_BATCH_SIZE: usize = 100;

impl Default for RedissonConfig {
    fn default() -> Self {
        RedissonConfig {
            generation: Generation::default(),
            renewal: Renewal::default(),
            batch_size: DEFAULT_BATCH_SIZE,
            topology: Topology::default(),
            check_lock_synced_slaves: true,
            slaves_sync_timeout: Duration::from_secs(1),
            unsynced_lock_call: UnsyncedLockCall::UndoneAndRetried,
            key_prefix: DEFAULT_PREFIX.into(),
            client_id: random_client_id(),
            retry_attempts: 4,
            retry_interval: Duration::from_millis(1500),
            retry_delay: RetryDelay::EqualJitter,
            cluster_scan_interval: Duration::from_secs(5),
            sentinel_scan_interval: Duration::from_secs(1),
            connection: ConnectionSettings {
                response_timeout: Duration::from_secs(3),
                ..ConnectionSettings::default()
            },
        }
    }
}

impl RedissonConfig {
    /// The defaults of the Redisson version `generation` stands for: 3.43.0's for
    /// [`Generation::Classic`] (3 attempts, constant `retryInterval`, an unsynced lock call failing
    /// at once), 3.52.0's for [`Generation::Scheduler`] (4 attempts, jittered `retryDelay`), the
    /// version `jvm-redisson` runs.
    pub fn new(generation: Generation) -> Self {
        let defaults = RedissonConfig::default();
        match generation {
            Generation::Classic => RedissonConfig {
                generation,
                retry_attempts: 3,
                retry_delay: RetryDelay::Constant,
                unsynced_lock_call: UnsyncedLockCall::FailsAtOnce,
                ..defaults
            },
            Generation::Scheduler => RedissonConfig {
                generation,
                ..defaults
            },
        }
    }

    /// Checks the settings; a `Config` error names the bad one.
    pub fn validate(&self) -> Result<(), LockError> {
        self.renewal.validate()?;
        if self.renewal.ttl < Duration::from_millis(3) {
            return Err(LockError::Config(
                "renewal.ttl must be at least 3 ms".into(),
            ));
        }
        if (self.renewal.ratio - 1.0 / 3.0).abs() > 1e-9 {
            return Err(LockError::Config(format!(
                "renewal.ratio is {}, but Redisson renews at a third of the timeout (hard-coded \
                 `internalLockLeaseTime / 3`): leave it at 1/3",
                self.renewal.ratio
            )));
        }
        if self.batch_size == 0 {
            return Err(LockError::Config("batch_size must be > 0".into()));
        }
        for (name, interval) in [
            ("slaves_sync_timeout", self.slaves_sync_timeout),
            ("cluster_scan_interval", self.cluster_scan_interval),
            ("sentinel_scan_interval", self.sentinel_scan_interval),
        ] {
            if interval.is_zero() {
                return Err(LockError::Config(format!("{name} must be > 0")));
            }
        }
        validate_naming(&self.key_prefix, &self.client_id)?;
        self.connection.validate()
    }

    /// The renewal period: a third of the watchdog timeout, as Redisson computes it
    /// (`internalLockLeaseTime / 3`).
    pub(crate) fn renewal_period(&self) -> Duration {
        self.renewal.ttl / 3
    }

    /// The tick of this client's Redisson timer ([`super::timer::tick_for`]), from its first retry
    /// pause and `timeout` (the connection's response timeout).
    pub(crate) fn timer_tick(&self) -> Duration {
        let first = self.retry_delay.first_pause(self.retry_interval);
        let at_least_10ms = self.retry_delay == RetryDelay::EqualJitter;
        super::timer::tick_for(first, self.connection.response_timeout, at_least_10ms)
    }
}

/// Redisson's command timeouts for a run whose watchdog timeout is `ttl`, as both the Redisson rows and
/// the real Redisson peers (`jvm-redisson*`) are configured: Redisson's defaults (`timeout` 3 s,
/// `retryInterval` 1.5 s, and in 3.52/4.x the `retryDelay` `EqualJitterDelay(1 s, 2 s)` whose bounds
/// follow `retryInterval`; read from the 3.43.0, 3.52.0 and 4.7.0 jars' `Config`) scaled by `ttl` ÷
/// Redisson's own `lockWatchdogTimeout` (30 s). One rule for every row: at 30 s they are Redisson's
/// defaults unchanged, at a 3 s TTL a tenth of them (300 ms, 150 ms, 100–200 ms), so a run at a shorter
/// TTL is Redisson's defaults at a faster clock. No floor and no ceiling (at 600 ms, the shortest TTL a
/// scenario uses, 60 ms and 30 ms); `retryAttempts` is never scaled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ScaledTimeouts {
    /// Redisson's `timeout` (the response timeout).
    pub response_timeout: Duration,
    /// Redisson's `retryInterval`.
    pub retry_interval: Duration,
}

impl ScaledTimeouts {
    /// The timeouts for watchdog timeout `ttl`, rounded to whole milliseconds (Redisson's unit).
    pub fn for_ttl(ttl: Duration) -> Self {
        let defaults = RedissonConfig::default();
        let scale = ttl.as_secs_f64() / defaults.renewal.ttl.as_secs_f64();
        let scaled = |default: Duration| {
            Duration::from_millis((default.as_millis() as f64 * scale).round() as u64)
        };
        ScaledTimeouts {
            response_timeout: scaled(defaults.connection.response_timeout),
            retry_interval: scaled(defaults.retry_interval),
        }
    }

    /// Whether these are Redisson's defaults unchanged (at its 30 s watchdog).
    pub fn are_defaults(&self) -> bool {
        *self == Self::for_ttl(RedissonConfig::default().renewal.ttl)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::redis::config_checks::assert_each_names_its_field;

    #[test]
    fn defaults_are_redissons() {
        let config = RedissonConfig::default();
        config.validate().unwrap();
        assert_eq!(config.renewal.ttl, Duration::from_secs(30));
        assert_eq!(config.renewal_period(), Duration::from_secs(10));
        assert_eq!(config.batch_size, 100);
        assert_eq!(config.slaves_sync_timeout, Duration::from_secs(1));
        assert!(config.check_lock_synced_slaves);
        assert_eq!(config.topology, Topology::Single);
        assert_eq!(config.retry_attempts, 4);
        assert_eq!(config.retry_delay, RetryDelay::EqualJitter);
        let classic = RedissonConfig::new(Generation::Classic);
        assert_eq!(
            (classic.retry_attempts, classic.retry_delay),
            (3, RetryDelay::Constant)
        );
        assert_eq!(classic.unsynced_lock_call, UnsyncedLockCall::FailsAtOnce);
        assert_eq!(
            config.unsynced_lock_call,
            UnsyncedLockCall::UndoneAndRetried
        );
        assert_eq!(config.connection.response_timeout, Duration::from_secs(3));
        assert_eq!(config.cluster_scan_interval, Duration::from_secs(5));
        assert_eq!(config.sentinel_scan_interval, Duration::from_secs(1));
    }

    #[test]
    fn equal_jitter_pauses_between_half_and_all_of_the_capped_backoff() {
        let ms = Duration::from_millis;
        let pause = |attempt, timed_out| {
            RetryDelay::EqualJitter
                .pause(ms(1500), attempt, timed_out)
                .unwrap()
        };
        for _ in 0..50 {
            assert!((ms(500)..=ms(1000)).contains(&pause(0, true)));
            assert!((ms(1000)..=ms(2000)).contains(&pause(1, false)));
            assert!((ms(1000)..=ms(2000)).contains(&pause(40, true)));
        }
        assert_eq!(RetryDelay::Constant.pause(ms(50), 2, true), None);
        assert_eq!(RetryDelay::Constant.pause(ms(50), 2, false), Some(ms(50)));
    }

    #[test]
    fn timeouts_are_redissons_defaults_scaled_by_ttl_over_30_s() {
        let at = |ms| ScaledTimeouts::for_ttl(Duration::from_millis(ms));
        let ms = Duration::from_millis;
        let pair = |timeout, retry| ScaledTimeouts {
            response_timeout: ms(timeout),
            retry_interval: ms(retry),
        };
        assert_eq!(at(30_000), pair(3000, 1500));
        assert!(at(30_000).are_defaults());
        assert!(!at(3000).are_defaults());
        assert_eq!(at(3000), pair(300, 150));
        assert_eq!(at(1000), pair(100, 50));
        assert_eq!(at(600), pair(60, 30));
        assert_eq!(at(60_000), pair(6000, 3000));
    }

    #[test]
    fn each_bad_value_names_its_field() {
        assert_each_names_its_field::<RedissonConfig>(
            &[
                ("renewal.ttl", |c| c.renewal.ttl = Duration::ZERO),
                ("renewal.ratio", |c| c.renewal.ratio = 0.5),
                ("batch_size", |c| c.batch_size = 0),
                ("slaves_sync_timeout", |c| {
                    c.slaves_sync_timeout = Duration::ZERO
                }),
                ("cluster_scan_interval", |c| {
                    c.cluster_scan_interval = Duration::ZERO
                }),
                ("sentinel_scan_interval", |c| {
                    c.sentinel_scan_interval = Duration::ZERO
                }),
                ("key_prefix", |c| c.key_prefix = "a}".into()),
                ("client_id", |c| c.client_id = " ".into()),
                ("connection.response_timeout", |c| {
                    c.connection.response_timeout = Duration::ZERO
                }),
            ],
            RedissonConfig::validate,
        );
    }
}
