//! `LockError`: the one error type every strategy returns, with kinds a caller can act on.

use std::time::Duration;

/// A boxed error from a backend client library (redis-rs, etcd-client, zookeeper-client, I/O).
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// What went wrong with a lock operation.
///
/// Each kind asks for a different reaction: retry later (`Timeout`), stop the work the lease guarded
/// (`NotHeld`), pick another strategy or option (`Unsupported`), look at the server or the
/// network (`Backend`), or fix the settings (`Config`).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LockError {
    /// The lock was held by someone else for the whole wait (or at the single try).
    #[error("lock {key:?} not acquired within {waited:?}")]
    Timeout {
        /// The lock key.
        key: String,
        /// How long the caller waited (zero for a single try).
        waited: Duration,
    },
    /// The caller does not hold the lock: it expired, was taken over, or was never held.
    #[error("lock {key:?} is not held by this owner")]
    NotHeld {
        /// The lock key.
        key: String,
    },
    /// The strategy cannot do what was asked (for example a sub-second etcd lease).
    #[error("{strategy} does not support {what}")]
    Unsupported {
        /// The strategy id.
        strategy: &'static str,
        /// What was asked for.
        what: String,
    },
    /// The server or the network failed.
    #[error("{backend} error: {source}")]
    Backend {
        /// Which backend: "redis", "etcd", "zookeeper".
        backend: &'static str,
        /// The client library's error.
        #[source]
        source: BoxError,
    },
    /// A setting is invalid; the message names it.
    #[error("invalid configuration: {0}")]
    Config(String),
}

impl LockError {
    /// Wraps a backend client error.
    pub fn backend(backend: &'static str, source: impl Into<BoxError>) -> Self {
        LockError::Backend {
            backend,
            source: source.into(),
        }
    }

    /// A short, stable name for the kind, used to count errors by kind in results.
    pub fn kind(&self) -> &'static str {
        match self {
            LockError::Timeout { .. } => "timeout",
            LockError::NotHeld { .. } => "not_held",
            LockError::Unsupported { .. } => "unsupported",
            LockError::Backend { .. } => "backend",
            LockError::Config(_) => "config",
        }
    }
}
