//! The lock queue of Curator's `InterProcessMutex`: each contender creates an ephemeral-sequential node
//! under the lock's parent; the lowest sequence holds the lock; each waiter watches only the node just
//! below its own (no herd) and re-lists when it goes.
//!
//! Our node is guarded: dropped before the lock is held (a failed, timed-out or cancelled acquire), it is
//! deleted in the background, found by a per-acquire tag in its name if the create's answer never came.
//! ZooKeeper serves one session's requests in order, so that late lookup always sees the create.

use std::time::{Duration, Instant};

use zookeeper_client::{Acls, Client, CreateMode};

use super::error::{no_answer, retrying, zk_error};
use crate::error::LockError;
use crate::renewal::in_background;

/// What every lock node's name contains, before its sequence number.
const LOCK_NAME: &str = "-lock-";

/// Our node in a lock's queue. Dropped while armed, it is deleted in the background.
pub(super) struct LockNode {
    client: Client,
    parent: String,
    /// `<random hex>-lock-`: unique to this acquire.
    tag: String,
    /// The full path, once the create was answered.
    path: Option<String>,
    sequence: i64,
    pub(super) czxid: i64,
    armed: bool,
}

impl std::fmt::Debug for LockNode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LockNode")
            .field("path", &self.path)
            .field("czxid", &self.czxid)
            .finish_non_exhaustive()
    }
}

/// Where our node stands in the queue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Position {
    /// Lowest sequence: we hold the lock.
    Head,
    /// Behind the node at this path.
    Behind(String),
    /// Our node is not in the queue any more (the session ended or someone deleted it).
    Gone,
}

/// The sequence number of a lock node's name, if it is one.
fn sequence_of(name: &str) -> Option<i64> {
    let (_, sequence) = name.rsplit_once(LOCK_NAME)?;
    sequence.parse().ok()
}

/// What creating our node found.
#[derive(Debug)]
pub(super) struct Entered {
    pub(super) node: LockNode,
    pub(super) position: Position,
    /// When the create (and the list behind it) was sent.
    pub(super) sent_at: Instant,
}

impl LockNode {
    /// Where we stand among `children` of the parent.
    pub(super) fn position(&self, children: &[String]) -> Position {
        let mut ahead: Option<(i64, &String)> = None;
        let mut listed = false;
        for child in children {
            let Some(sequence) = sequence_of(child) else {
                continue;
            };
            if sequence == self.sequence {
                listed = true;
            } else if sequence < self.sequence && ahead.is_none_or(|(s, _)| sequence > s) {
                ahead = Some((sequence, child));
            }
        }
        match (listed, ahead) {
            (false, _) => Position::Gone,
            (true, None) => Position::Head,
            (true, Some((_, name))) => Position::Behind(format!("{}/{name}", self.parent)),
        }
    }

    /// Lists the queue again and says where we stand; returns when the list was sent, too.
    pub(super) async fn recheck(
        &self,
        timeout: Duration,
    ) -> Result<(Position, Instant), LockError> {
        let sent_at = Instant::now();
        let (listed, _) = retrying(timeout, "list lock queue", || {
            self.client.get_children(&self.parent)
        })
        .await?;
        match listed {
            Ok((children, _)) => Ok((self.position(&children), sent_at)),
            Err(zookeeper_client::Error::NoNode) => Ok((Position::Gone, sent_at)),
            Err(e) => Err(zk_error("list lock queue", e)),
        }
    }

    /// The children of the parent, listed again.
    async fn relist(&self, timeout: Duration) -> Result<Vec<String>, LockError> {
        let (listed, _) = retrying(timeout, "list lock queue", || {
            self.client.get_children(&self.parent)
        })
        .await?;
        listed
            .map(|(children, _)| children)
            .map_err(|e| zk_error("list lock queue", e))
    }

    /// Deletes the node. `Ok(false)`: it was already gone.
    pub(super) async fn remove(mut self, timeout: Duration) -> Result<bool, LockError> {
        self.armed = false;
        let path = self.path.take().unwrap_or_default();
        delete_node(&self.client, &path, timeout).await
    }

    /// The node's path.
    pub(super) fn path(&self) -> &str {
        self.path.as_deref().unwrap_or_default()
    }

    /// Keeps the node: the caller now holds the lock through it.
    pub(super) fn keep(mut self) {
        self.armed = false;
    }
}

impl Drop for LockNode {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        let (client, parent, tag, path) = (
            self.client.clone(),
            std::mem::take(&mut self.parent),
            std::mem::take(&mut self.tag),
            self.path.take(),
        );
        in_background(async move {
            let path = match path {
                Some(path) => Some(path),
                None => find_tagged(&client, &parent, &tag, CLEAN_UP_FOR)
                    .await
                    .ok()
                    .flatten(),
            };
            if let Some(path) = path {
                let _ = delete_node(&client, &path, CLEAN_UP_FOR).await;
            }
        });
    }
}

/// How long background clean-up keeps trying to delete a node left behind.
pub(super) const CLEAN_UP_FOR: Duration = Duration::from_secs(30);

/// Deletes the node at `path`; `Ok(false)` if it was not there (or the session that owned it is gone).
/// If an attempt was lost in flight and the node is then gone, that attempt is taken to have deleted it.
pub(super) async fn delete_node(
    client: &Client,
    path: &str,
    timeout: Duration,
) -> Result<bool, LockError> {
    let (answer, lost_before) =
        retrying(timeout, "delete lock node", || client.delete(path, None)).await?;
    match answer {
        Ok(()) => Ok(true),
        Err(zookeeper_client::Error::NoNode) => Ok(lost_before),
        Err(zookeeper_client::Error::SessionExpired) => Ok(false),
        Err(e) => Err(zk_error("delete lock node", e)),
    }
}

/// Deletes the node at `path` in the background, retrying for up to 30 s; for when the caller cannot wait
/// or its own attempt failed.
pub(super) fn delete_in_background(client: &Client, path: String) {
    let client = client.clone();
    in_background(async move {
        let _ = delete_node(&client, &path, CLEAN_UP_FOR).await;
    });
}

/// The path of the child of `parent` whose name starts with `tag`, if any.
async fn find_tagged(
    client: &Client,
    parent: &str,
    tag: &str,
    timeout: Duration,
) -> Result<Option<String>, LockError> {
    let (listed, _) = retrying(timeout, "list lock queue", || client.get_children(parent)).await?;
    let children = match listed {
        Ok((children, _)) => children,
        Err(zookeeper_client::Error::NoNode) => return Ok(None),
        Err(e) => return Err(zk_error("list lock queue", e)),
    };
    Ok(children
        .into_iter()
        .find(|c| c.starts_with(tag))
        .map(|c| format!("{parent}/{c}")))
}

/// Creates our ephemeral-sequential node under `parent` and lists the queue, pipelined: both requests
/// are sent back to back, so one round trip. Creates missing parents as container nodes (which the
/// server removes once empty) and retries when one vanishes in between. The nodes get `acls`.
pub(super) async fn enqueue(
    client: &Client,
    acls: Acls<'static>,
    parent: &str,
    timeout: Duration,
) -> Result<Entered, LockError> {
    let tag = format!("{:016x}{LOCK_NAME}", rand::random::<u64>());
    let prefix = format!("{parent}/{tag}");
    let mut node = LockNode {
        client: client.clone(),
        parent: parent.to_owned(),
        tag,
        path: None,
        sequence: 0,
        czxid: 0,
        armed: true,
    };
    let ephemeral = CreateMode::EphemeralSequential.with_acls(acls);
    let container = CreateMode::Container.with_acls(acls);
    for _ in 0..3 {
        let sent_at = Instant::now();
        // Requests are sent when the methods are called; ZooKeeper answers a session's requests in order,
        // so the list sees our node.
        let create = client.create(&prefix, &[], &ephemeral);
        let list = client.get_children(parent);
        let (created, listed) = tokio::time::timeout(timeout, async { tokio::join!(create, list) })
            .await
            .map_err(|_| no_answer("create lock node", timeout))?;
        let created = match created {
            Ok((stat, sequence)) => Ok((
                stat.czxid,
                sequence.into_i64(),
                format!("{prefix}{sequence}"),
            )),
            // The create may or may not have happened: look for our tag before creating again.
            Err(zookeeper_client::Error::ConnectionLoss) => {
                match find_tagged(client, parent, &node.tag, timeout).await? {
                    None => continue,
                    Some(path) => created_stat(client, path, timeout).await,
                }
            }
            Err(e) => Err(e),
        };
        match created {
            Ok((czxid, sequence, path)) => {
                node.path = Some(path);
                node.sequence = sequence;
                node.czxid = czxid;
                let children = match listed {
                    Ok((children, _)) => children,
                    Err(_) => node.relist(timeout).await?,
                };
                let position = node.position(&children);
                return Ok(Entered {
                    node,
                    position,
                    sent_at,
                });
            }
            Err(zookeeper_client::Error::NoNode) => {
                retrying(timeout, "create lock parent", || {
                    client.mkdir(parent, &container)
                })
                .await?
                .0
                .map_err(|e| zk_error("create lock parent", e))?;
            }
            Err(e) => return Err(zk_error("create lock node", e)),
        }
    }
    Err(LockError::backend(
        "zookeeper",
        format!("lock parent {parent} vanished three times while creating a node under it"),
    ))
}

/// The czxid, sequence number and path of the lock node at `path` (found after a lost create answer).
async fn created_stat(
    client: &Client,
    path: String,
    timeout: Duration,
) -> Result<(i64, i64, String), zookeeper_client::Error> {
    let sequence = sequence_of(&path).ok_or_else(|| {
        zookeeper_client::Error::UnexpectedError(format!("not a lock node: {path}"))
    })?;
    match retrying(timeout, "read lock node", || client.get_data(&path)).await {
        Ok((Ok((_, stat)), _)) => Ok((stat.czxid, sequence, path)),
        Ok((Err(e), _)) => Err(e),
        Err(_) => Err(zookeeper_client::Error::ConnectionLoss),
    }
}

/// Returns once the node at `path` is gone (or changed, or the watch ended, or the connection was lost:
/// the caller re-lists).
pub(super) async fn wait_gone(client: &Client, path: &str) -> Result<(), LockError> {
    match client.get_and_watch_data(path).await {
        Ok((_, _, watcher)) => {
            watcher.changed().await;
            Ok(())
        }
        Err(zookeeper_client::Error::NoNode | zookeeper_client::Error::ConnectionLoss) => Ok(()),
        Err(e) => Err(zk_error("watch predecessor", e)),
    }
}
