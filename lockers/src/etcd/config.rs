//! Settings of the `etcd-lease` strategy ([`EtcdConfig`]) and the whole-second rule for etcd lease TTLs.

use std::time::Duration;

use super::error::Retry;
use crate::error::LockError;
use crate::settings::Renewal;

/// Settings of an [`EtcdLease`](super::EtcdLease) client.
#[derive(Debug, Clone, PartialEq)]
pub struct EtcdConfig {
    /// The TTL of the client's session lease, which carries every watchdog lock of the client, and the
    /// keep-alive period as a fraction of it. The TTL is a whole number of seconds ≥ 1 (etcd leases are
    /// whole seconds). Default 60 s kept alive every third, as etcd's Go `concurrency.Session` does. The
    /// server raises TTLs below its minimum (about 1.5 × the election timeout); the TTL it grants is the
    /// one used.
    pub renewal: Renewal,
    /// Key prefix: lock `k` queues under `<prefix>/<k>/`. Default `lockbench/etcd-lease`.
    pub prefix: String,
    /// How long [`EtcdLease::connect`](super::EtcdLease::connect) waits for a member to answer before it
    /// fails with a `Backend` error. Default 5 s.
    pub connect_timeout: Duration,
    /// Bound on each request (grant, txn, delete), retries included: past it the request counts as
    /// failed. Default 5 s.
    pub request_timeout: Duration,
    /// A request that is safe to repeat (every request here: reads, compare-guarded writes, grants) and
    /// has no answer after this long is sent again, possibly to another member. etcd drops a write
    /// proposed while the cluster has no leader and answers it only after its own request timeout
    /// (seconds), so without this a release during a leader election would stall. Default 1 s.
    pub retry_after: Duration,
}

impl Default for EtcdConfig {
    fn default() -> Self {
        EtcdConfig {
            renewal: Renewal::new(Duration::from_secs(60)),
            prefix: "lockbench/etcd-lease".into(),
            connect_timeout: Duration::from_secs(5),
            request_timeout: Duration::from_secs(5),
            retry_after: Duration::from_secs(1),
        }
    }
}

impl EtcdConfig {
    /// Checks the settings; a `Config` error names the bad one.
    pub fn validate(&self) -> Result<(), LockError> {
        self.renewal.validate()?;
        lease_seconds("renewal.ttl", self.renewal.ttl)?;
        if self.prefix.is_empty() || self.prefix.ends_with('/') {
            return Err(LockError::Config(format!(
                "prefix must be non-empty and not end with '/', got {:?}",
                self.prefix
            )));
        }
        for (name, value) in [
            ("connect_timeout", self.connect_timeout),
            ("request_timeout", self.request_timeout),
            ("retry_after", self.retry_after),
        ] {
            if value.is_zero() {
                return Err(LockError::Config(format!("{name} must be > 0")));
            }
        }
        Ok(())
    }

    /// How requests are bounded and repeated.
    pub(super) fn retry(&self) -> Retry {
        Retry {
            overall: self.request_timeout,
            attempt: self.retry_after.min(self.request_timeout),
        }
    }

    /// The keep-alive period: TTL × ratio.
    pub fn keep_alive_period(&self) -> Duration {
        self.renewal.period()
    }
}

/// The TTL in whole seconds, or a `Config` error naming `what`: etcd grants leases in whole seconds, so a
/// sub-second or fractional TTL is rejected rather than silently rounded.
pub(super) fn lease_seconds(what: &str, ttl: Duration) -> Result<i64, LockError> {
    if ttl.subsec_nanos() != 0 || ttl.as_secs() == 0 {
        return Err(LockError::Config(format!(
            "{what} is {ttl:?}, but etcd leases are whole seconds: use a whole number of seconds ≥ 1 s"
        )));
    }
    i64::try_from(ttl.as_secs())
        .map_err(|_| LockError::Config(format!("{what} of {ttl:?} is too long for etcd")))
}
