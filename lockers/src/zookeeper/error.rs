//! How ZooKeeper client failures become [`LockError`]s: named after the operation that failed, with every
//! request bounded in time so nothing waits on a silent server forever.

use std::future::Future;
use std::time::Duration;

use crate::error::LockError;

/// A ZooKeeper operation that failed or got no answer.
#[derive(Debug, thiserror::Error)]
pub(super) enum ZkFailure {
    /// The client returned an error.
    #[error("{what}: {source}")]
    Client {
        /// The operation.
        what: &'static str,
        /// The client's error.
        #[source]
        source: zookeeper_client::Error,
    },
    /// No answer within the bound.
    #[error("{what}: no answer within {timeout:?}")]
    NoAnswer {
        /// The operation.
        what: &'static str,
        /// The bound.
        timeout: Duration,
    },
}

/// A `Backend` error for a failed ZooKeeper operation.
pub(super) fn zk_error(what: &'static str, source: zookeeper_client::Error) -> LockError {
    LockError::backend("zookeeper", ZkFailure::Client { what, source })
}

/// A `Backend` error for a ZooKeeper operation that got no answer within `timeout`.
pub(super) fn no_answer(what: &'static str, timeout: Duration) -> LockError {
    LockError::backend("zookeeper", ZkFailure::NoAnswer { what, timeout })
}

/// Awaits one ZooKeeper request, bounded by `timeout`; the client error is kept for the caller to match.
pub(super) async fn within<T>(
    timeout: Duration,
    what: &'static str,
    request: impl Future<Output = Result<T, zookeeper_client::Error>>,
) -> Result<Result<T, zookeeper_client::Error>, LockError> {
    tokio::time::timeout(timeout, request)
        .await
        .map_err(|_| no_answer(what, timeout))
}

/// Pause between attempts of a request whose connection was lost.
const RETRY_PAUSE: Duration = Duration::from_millis(25);

/// Runs a request that is safe to repeat, sending it again while the connection is lost (the client
/// reconnects meanwhile, to any server of the ensemble), all within `timeout`. Returns the final answer
/// and whether an earlier attempt was lost in flight (and so may have been applied).
pub(super) async fn retrying<T, F, Fut>(
    timeout: Duration,
    what: &'static str,
    mut request: F,
) -> Result<(Result<T, zookeeper_client::Error>, bool), LockError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, zookeeper_client::Error>>,
{
    let deadline = tokio::time::Instant::now() + timeout;
    let mut lost_before = false;
    loop {
        match tokio::time::timeout_at(deadline, request()).await {
            Ok(Err(zookeeper_client::Error::ConnectionLoss))
                if tokio::time::Instant::now() + RETRY_PAUSE < deadline =>
            {
                lost_before = true;
                tokio::time::sleep(RETRY_PAUSE).await;
            }
            Ok(answer) => return Ok((answer, lost_before)),
            Err(_) => return Err(no_answer(what, timeout)),
        }
    }
}
