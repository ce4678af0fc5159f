//! The client's ZooKeeper session, which is the lease of every lock the client holds: ephemeral lock nodes
//! live exactly as long as it does.
//!
//! What stands in for renewal: the session is kept alive by the client library's own pings (sent when the
//! connection has been idle for 3/20 of the negotiated timeout) and by every request; `zookeeper-client`
//! does not expose ping replies. So the client sends its own probe (an `exists` on `/`, a local read)
//! every negotiated timeout × the ratio of [`ZkConfig::renewal`](super::ZkConfig::renewal).
//! A probe answer proves the server had the session alive when it received the probe, and the server
//! restarts the session timeout on every request it receives, so the session, and every lock under it,
//! lives at least until `sent_at + negotiated timeout`: that is the deadline set, with one `Renewed`
//! event per lock held (round trip = the probe's; `granted_ttl` = the negotiated timeout;
//! `remaining_ttl_before` = `None`, the server does not say). Every lock request (create, list) moves the
//! deadline the same way. Probing costs one read per client per period, not per lock; it also runs while
//! no lock is held, so that the session's deadline is known for the next acquire and for waiters.
//!
//! Loss: the session state `Expired` loses every lock with [`LossReason::SessionExpired`], `Closed` /
//! `AuthFailed` with `ChannelClosed`; with `lose_on_disconnect`, so does any disconnect. Probes that fail
//! until the deadline lose them with `Expired`. A session given up while it may still live on the server
//! (deadline, disconnect) has its lock nodes deleted in the background, so locks their holders believe
//! lost do not keep blocking others; the next acquire opens a new session.

use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use tokio::task::AbortHandle;
use zookeeper_client::{Acls, Client, SessionState, StateWatcher};

use super::config::ZkConfig;
use super::error::{within, zk_error};
use super::queue::{CLEAN_UP_FOR, delete_node};
use crate::address;
use crate::error::LockError;
use crate::event::Events;
use crate::lease::{FencingToken, LossReason};
use crate::renewal::{
    RenewSession, SessionHolds, SessionPlan, SessionRenewal, renew_session_until_lost,
};

/// What the session knows about one lock node it carries.
#[derive(Debug)]
pub(super) struct HeldNode {
    /// The node's path.
    pub(super) path: String,
    /// Its czxid.
    pub(super) token: FencingToken,
    /// The task watching the node for a delete behind our back.
    pub(super) watch: std::sync::Mutex<Option<AbortHandle>>,
}

impl HeldNode {
    /// Stops watching the node.
    pub(super) fn stop_watch(&self) {
        if let Some(task) = self.watch.lock().unwrap_or_else(|e| e.into_inner()).take() {
            task.abort();
        }
    }
}

/// One ZooKeeper session with the locks it carries, its probe and its state watcher.
#[derive(Debug)]
pub(super) struct ZkSession {
    client: Client,
    /// The session authenticated with a digest: its nodes are readable and writable by that user only.
    secured: bool,
    timeout: Duration,
    holds: Arc<SessionHolds<HeldNode>>,
    tasks: [AbortHandle; 3],
}

impl ZkSession {
    /// Opens a session to `connect_string`, failing with a `Backend` error after
    /// [`ZkConfig::connect_timeout`].
    pub(super) async fn connect(
        connect_string: &str,
        config: &ZkConfig,
        events: &Events,
    ) -> Result<Arc<Self>, LockError> {
        let started = Instant::now();
        let shown = address::redact(connect_string);
        let parts = address::split(connect_string)?;
        if !parts.tls.is_empty() {
            return Err(LockError::Config(format!(
                "ZooKeeper connect string {shown:?}: TLS (ca=, cert=, key=) is not supported"
            )));
        }
        let mut connector = Client::connector()
            .with_session_timeout(config.renewal.ttl)
            .with_fail_eagerly();
        if let Some(credentials) = &parts.credentials {
            // ZooKeeper's digest scheme: `addauth digest user:password`.
            let digest = format!("{}:{}", credentials.user, credentials.password);
            connector = connector.with_auth("digest", digest.as_bytes());
        }
        let connect_string = shown.as_str();
        let connecting = connector.connect(&parts.bare);
        let client = match tokio::time::timeout(config.connect_timeout, connecting).await {
            Ok(Ok(client)) => client,
            Ok(Err(zookeeper_client::Error::BadArguments(why))) => {
                return Err(LockError::Config(format!(
                    "ZooKeeper connect string {connect_string:?}: {why}"
                )));
            }
            Ok(Err(e)) => return Err(zk_error("connect", e)),
            Err(_) => {
                return Err(LockError::backend(
                    "zookeeper",
                    format!(
                        "no ZooKeeper server at {connect_string:?} gave a session within {:?}",
                        config.connect_timeout
                    ),
                ));
            }
        };
        let timeout = client.session_timeout();
        let holds = Arc::new(SessionHolds::new(
            &format!("zookeeper session {}", client.session_id()),
            started + timeout,
        ));
        let period = timeout.mul_f64(config.renewal.ratio);
        let plan = SessionPlan {
            period,
            deadline_loss: |_| LossReason::Expired,
        };
        let probe = Probe {
            client: client.clone(),
            timeout,
            attempt_timeout: config.request_timeout.min(period),
        };
        let probing = tokio::spawn(renew_session_until_lost(
            holds.clone(),
            plan,
            started + period,
            events.clone(),
            probe,
        ));
        let watching = tokio::spawn(watch_state(
            client.state_watcher(),
            holds.clone(),
            config.lose_on_disconnect,
        ));
        let clearing = tokio::spawn(clear_when_given_up(client.clone(), holds.clone()));
        Ok(Arc::new(ZkSession {
            client,
            secured: parts.credentials.is_some(),
            timeout,
            holds,
            tasks: [
                probing.abort_handle(),
                watching.abort_handle(),
                clearing.abort_handle(),
            ],
        }))
    }

    /// The session's client.
    /// The ACLs of the nodes this session creates: creator-only when it authenticated, else open.
    pub(super) fn acls(&self) -> Acls<'static> {
        if self.secured {
            Acls::creator_all()
        } else {
            Acls::anyone_all()
        }
    }

    /// The client of this session.
    pub(super) fn client(&self) -> &Client {
        &self.client
    }

    /// The negotiated session timeout.
    pub(super) fn timeout(&self) -> Duration {
        self.timeout
    }

    /// The locks the session carries.
    pub(super) fn holds(&self) -> &Arc<SessionHolds<HeldNode>> {
        &self.holds
    }

    /// A request sent at `sent_at` was answered: the session lives at least the timeout from then.
    pub(super) fn confirmed(&self, sent_at: Instant) {
        if !self.holds.session().has_ended() {
            self.holds.session().extend_to(sent_at + self.timeout);
        }
    }

    /// Usable for new locks: not lost, and the client not in a terminal state.
    pub(super) fn is_live(&self) -> bool {
        !self.holds.session().has_ended() && !self.client.state().is_terminated()
    }
}

impl Drop for ZkSession {
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
    }
}

/// Loses the session's locks when the session ends (or, optionally, disconnects).
async fn watch_state(
    mut states: StateWatcher,
    holds: Arc<SessionHolds<HeldNode>>,
    lose_on_disconnect: bool,
) {
    loop {
        let reason = match states.changed().await {
            SessionState::Expired => LossReason::SessionExpired,
            SessionState::Closed => LossReason::ChannelClosed("ZooKeeper session closed".into()),
            SessionState::AuthFailed => {
                LossReason::ChannelClosed("ZooKeeper authentication failed".into())
            }
            SessionState::Disconnected if lose_on_disconnect => {
                LossReason::ChannelClosed("disconnected from ZooKeeper".into())
            }
            _ => continue,
        };
        holds.lose(reason);
        return;
    }
}

/// Once the session is given up while it may still be alive on the server (lost to its deadline, or to a
/// disconnect with `lose_on_disconnect`), deletes its lock nodes: their holders have been told the locks
/// are lost, so the nodes must not keep blocking others until those leases are dropped. An expired
/// session's nodes are gone already.
async fn clear_when_given_up(client: Client, holds: Arc<SessionHolds<HeldNode>>) {
    let reason = holds.session().wait_lost().await;
    if reason == LossReason::SessionExpired {
        return;
    }
    for hold in holds.held() {
        hold.payload.stop_watch();
        let _ = delete_node(&client, &hold.payload.path, CLEAN_UP_FOR).await;
    }
}

/// Confirms the session with one cheap read.
struct Probe {
    client: Client,
    timeout: Duration,
    attempt_timeout: Duration,
}

#[async_trait]
impl RenewSession for Probe {
    async fn renew(&mut self) -> Result<SessionRenewal, LockError> {
        let answer = within(
            self.attempt_timeout,
            "session probe",
            self.client.check_stat("/"),
        )
        .await?;
        match answer {
            Ok(_) => Ok(SessionRenewal::Extended {
                granted: self.timeout,
            }),
            Err(zookeeper_client::Error::SessionExpired) => {
                Ok(SessionRenewal::Gone(LossReason::SessionExpired))
            }
            Err(zookeeper_client::Error::ClientClosed) => Ok(SessionRenewal::Gone(
                LossReason::ChannelClosed("ZooKeeper client closed".into()),
            )),
            Err(e) => Err(zk_error("session probe", e)),
        }
    }
}
