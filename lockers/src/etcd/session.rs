//! The client's session: one etcd lease that carries every watchdog lock of the client, kept alive over
//! the lease keep-alive stream every TTL × ratio (as etcd's Go `concurrency.Session` does).

use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use etcd_client::{LeaseClient, LeaseKeepAliveStream, LeaseKeeper};
use tokio::task::AbortHandle;

use super::error::{Retry, etcd_error, no_answer};
use crate::error::LockError;
use crate::event::Events;
use crate::lease::LossReason;
use crate::renewal::{
    RenewSession, SessionHolds, SessionPlan, SessionRenewal, renew_session_until_lost,
};

/// What the session knows about one lock it carries (nothing: the queue key lives in the lease handle).
pub(super) type SessionLock = ();

/// A granted lease, kept alive by a background task until it is lost or this value is dropped.
#[derive(Debug)]
pub(super) struct EtcdSession {
    lease: i64,
    holds: Arc<SessionHolds<SessionLock>>,
    keep_alive: AbortHandle,
}

impl EtcdSession {
    /// Grants a lease of `ttl` seconds and starts keeping it alive every `period`.
    pub(super) async fn grant(
        leases: &LeaseClient,
        ttl: i64,
        period: Duration,
        retry: Retry,
        events: &Events,
    ) -> Result<Arc<Self>, LockError> {
        let sent_at = Instant::now();
        // A repeated grant at worst leaves an unused lease, which expires.
        let granted = retry
            .run("lease grant", || {
                let mut leases = leases.clone();
                async move { leases.grant(ttl, None).await }
            })
            .await?;
        let lease = granted.id();
        let granted_ttl = Duration::from_secs(u64::try_from(granted.ttl()).unwrap_or(0));
        if granted_ttl.is_zero() {
            return Err(LockError::backend(
                "etcd",
                format!("lease grant of {ttl} s answered with TTL {}", granted.ttl()),
            ));
        }
        let holds = Arc::new(SessionHolds::new(
            &format!("etcd lease {lease:x}"),
            sent_at + granted_ttl,
        ));
        let plan = SessionPlan {
            period,
            deadline_loss: LossReason::ChannelClosed,
        };
        let keeper = KeepAlive {
            leases: leases.clone(),
            lease,
            ttl: granted_ttl,
            attempt_timeout: retry.attempt.min(period),
            stream: None,
        };
        let task = tokio::spawn(renew_session_until_lost(
            holds.clone(),
            plan,
            sent_at + period,
            events.clone(),
            keeper,
        ));
        Ok(Arc::new(EtcdSession {
            lease,
            holds,
            keep_alive: task.abort_handle(),
        }))
    }

    /// The lease id.
    pub(super) fn lease(&self) -> i64 {
        self.lease
    }

    /// The locks carried by this session.
    pub(super) fn holds(&self) -> &Arc<SessionHolds<SessionLock>> {
        &self.holds
    }

    /// Not known lost and its deadline not passed.
    pub(super) fn is_live(&self) -> bool {
        self.holds.session().is_held()
    }
}

impl Drop for EtcdSession {
    fn drop(&mut self) {
        self.keep_alive.abort();
    }
}

/// Keeps one lease alive over a keep-alive stream, reopening the stream after it fails.
struct KeepAlive {
    leases: LeaseClient,
    lease: i64,
    ttl: Duration,
    attempt_timeout: Duration,
    stream: Option<(LeaseKeeper, LeaseKeepAliveStream)>,
}

impl KeepAlive {
    /// One keep-alive on the open stream.
    async fn on_stream(
        keeper: &mut LeaseKeeper,
        stream: &mut LeaseKeepAliveStream,
    ) -> Result<SessionRenewal, LockError> {
        keeper
            .keep_alive()
            .await
            .map_err(|e| etcd_error("keep-alive send", e))?;
        match stream.message().await {
            Ok(Some(answer)) if answer.ttl() > 0 => Ok(SessionRenewal::Extended {
                granted: Duration::from_secs(answer.ttl().unsigned_abs()),
            }),
            Ok(Some(_)) => Ok(SessionRenewal::Gone(LossReason::LeaseRevoked)),
            Ok(None) => Err(LockError::backend("etcd", "keep-alive stream ended")),
            Err(e) => Err(etcd_error("keep-alive stream", e)),
        }
    }

    async fn attempt(&mut self) -> Result<SessionRenewal, LockError> {
        if let Some((keeper, stream)) = &mut self.stream {
            return Self::on_stream(keeper, stream).await;
        }
        // Opening the stream sends a keep-alive and waits for its answer (the client keeps that answer's
        // TTL to itself; a keep-alive always restores the lease's granted TTL).
        match self.leases.keep_alive(self.lease).await {
            Ok(pair) => {
                self.stream = Some(pair);
                Ok(SessionRenewal::Extended { granted: self.ttl })
            }
            Err(etcd_client::Error::LeaseKeepAliveError(why)) if why.contains("not found") => {
                Ok(SessionRenewal::Gone(LossReason::LeaseRevoked))
            }
            Err(e) => Err(etcd_error("keep-alive stream open", e)),
        }
    }
}

#[async_trait]
impl RenewSession for KeepAlive {
    async fn renew(&mut self) -> Result<SessionRenewal, LockError> {
        let outcome = match tokio::time::timeout(self.attempt_timeout, self.attempt()).await {
            Ok(outcome) => outcome,
            Err(_) => Err(no_answer("keep-alive", self.attempt_timeout)),
        };
        if outcome.is_err() {
            // A failed or silent stream is reopened on the next attempt (maybe on another member).
            self.stream = None;
        }
        outcome
    }
}
