//! How etcd client failures become [`LockError`]s: named after the operation that failed, with every
//! request bounded in time so nothing waits on a silent server forever.

use std::future::Future;
use std::time::Duration;

use crate::error::LockError;

/// An etcd operation that failed or got no answer.
#[derive(Debug, thiserror::Error)]
pub(super) enum EtcdFailure {
    /// The client returned an error.
    #[error("{what}: {source}")]
    Client {
        /// The operation.
        what: &'static str,
        /// The client's error.
        #[source]
        source: etcd_client::Error,
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

/// A `Backend` error for a failed etcd operation.
pub(super) fn etcd_error(what: &'static str, source: etcd_client::Error) -> LockError {
    LockError::backend("etcd", EtcdFailure::Client { what, source })
}

/// A `Backend` error for an etcd operation that got no answer within `timeout`.
pub(super) fn no_answer(what: &'static str, timeout: Duration) -> LockError {
    LockError::backend("etcd", EtcdFailure::NoAnswer { what, timeout })
}

/// Pause between retries of a request that found no member available.
const RETRY_PAUSE: Duration = Duration::from_millis(25);

/// Whether `error` means the request reached no serving member (connection refused or reset, no leader,
/// leader changed): worth sending again, possibly to another member.
fn unavailable(error: &etcd_client::Error) -> bool {
    /// gRPC status code `UNAVAILABLE`.
    const UNAVAILABLE: i32 = 14;
    match error {
        etcd_client::Error::GRpcStatus(status) => status.code() as i32 == UNAVAILABLE,
        etcd_client::Error::TransportError(_) => true,
        _ => false,
    }
}

/// How to send a request that is safe to repeat: each attempt is cut off after `attempt` and sent again
/// (possibly to another member) while no member answers, all within `overall`.
#[derive(Debug, Clone, Copy)]
pub(super) struct Retry {
    /// Bound on the whole request.
    pub(super) overall: Duration,
    /// Bound on one attempt.
    pub(super) attempt: Duration,
}

/// What one attempt of a repeated request did.
enum Attempt<T> {
    Answered(T),
    /// Not answered (cut off, or no member available): it may or may not have been applied.
    Unanswered(LockError),
    Failed(LockError),
}

impl Retry {
    /// Runs `request` until an attempt is answered, or `overall` passes. Only for requests that are safe
    /// to repeat (reads, and writes guarded by a compare). Returns whether an earlier attempt went
    /// unanswered (and so may have been applied) along with the answer.
    pub(super) async fn run_noting_ambiguity<T, F, Fut>(
        self,
        what: &'static str,
        mut request: F,
    ) -> Result<(T, bool), LockError>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, etcd_client::Error>>,
    {
        let deadline = tokio::time::Instant::now() + self.overall;
        let mut ambiguous = false;
        loop {
            let attempt_ends = (tokio::time::Instant::now() + self.attempt).min(deadline);
            let attempt = match tokio::time::timeout_at(attempt_ends, request()).await {
                Ok(Ok(answer)) => Attempt::Answered(answer),
                Ok(Err(e)) if unavailable(&e) => Attempt::Unanswered(etcd_error(what, e)),
                Ok(Err(e)) => Attempt::Failed(etcd_error(what, e)),
                Err(_) => Attempt::Unanswered(no_answer(what, self.attempt)),
            };
            match attempt {
                Attempt::Answered(answer) => return Ok((answer, ambiguous)),
                Attempt::Failed(error) => return Err(error),
                Attempt::Unanswered(error) => {
                    if tokio::time::Instant::now() + RETRY_PAUSE >= deadline {
                        return Err(error);
                    }
                    ambiguous = true;
                    tokio::time::sleep(RETRY_PAUSE).await;
                }
            }
        }
    }

    /// Like [`run_noting_ambiguity`](Self::run_noting_ambiguity), for requests whose repetition is
    /// harmless either way.
    pub(super) async fn run<T, F, Fut>(self, what: &'static str, request: F) -> Result<T, LockError>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, etcd_client::Error>>,
    {
        Ok(self.run_noting_ambiguity(what, request).await?.0)
    }
}
