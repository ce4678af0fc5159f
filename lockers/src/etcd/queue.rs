//! The lock queue of etcd's Go `concurrency.Mutex`, one request per step: each contender puts a key under
//! `<prefix>/<lock>/` with its lease; the key with the smallest create revision holds the lock; a waiter
//! watches the delete of the key just below its own (no herd) and re-checks.
//!
//! Keys this client puts are guarded: a key (and a lock's own lease) left behind by a failed, timed-out or
//! cancelled acquire is deleted (revoked) in the background, never kept alive by an orphan.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use etcd_client::{
    Compare, CompareOp, EventType, GetOptions, KvClient, LeaseClient, PutOptions, SortOrder,
    SortTarget, Txn, TxnOp, TxnOpResponse, TxnResponse, WatchClient, WatchFilterType, WatchOptions,
};

use super::error::Retry;
use super::names::Slot;
use crate::error::LockError;
use crate::renewal::in_background;

/// The etcd clients the queue operations use.
#[derive(Clone)]
pub(super) struct Queue {
    pub(super) kv: KvClient,
    pub(super) watch: WatchClient,
    pub(super) leases: LeaseClient,
    pub(super) retry: Retry,
}

impl std::fmt::Debug for Queue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Queue")
            .field("retry", &self.retry)
            .finish_non_exhaustive()
    }
}

/// A lease granted for one lock (fixed-lease mode), revoked in the background when dropped (deleting any
/// key still attached to it).
pub(super) struct OwnLease {
    pub(super) id: i64,
    leases: Box<LeaseClient>,
}

impl std::fmt::Debug for OwnLease {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "OwnLease({:x})", self.id)
    }
}

impl OwnLease {
    /// Takes over lease `id`.
    pub(super) fn new(id: i64, leases: &LeaseClient) -> Self {
        OwnLease {
            id,
            leases: Box::new(leases.clone()),
        }
    }
}

impl Drop for OwnLease {
    fn drop(&mut self) {
        let (id, mut leases) = (self.id, (*self.leases).clone());
        in_background(async move {
            // Already expired or revoked is fine: the lease is gone either way.
            let _ = leases.revoke(id).await;
        });
    }
}

/// A key this client put in a lock's queue, with its create revision. Dropped while armed it is deleted in
/// the background.
pub(super) struct QueueKey {
    pub(super) name: String,
    pub(super) revision: i64,
    kv: KvClient,
    retry: Retry,
    /// `None` once given up (removed or kept).
    slot: Option<Slot>,
}

impl std::fmt::Debug for QueueKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("QueueKey")
            .field("name", &self.name)
            .field("revision", &self.revision)
            .finish_non_exhaustive()
    }
}

impl QueueKey {
    /// Deletes the key if it is still the one we created. `Ok(false)`: it was already gone.
    pub(super) async fn remove(mut self) -> Result<bool, LockError> {
        let slot = self.slot.take();
        let (name, revision) = (std::mem::take(&mut self.name), self.revision);
        let removed = delete_own_key(&self.kv, name.clone(), revision, self.retry).await;
        match (removed, slot) {
            (Err(error), Some(slot)) => {
                delete_in_background(&self.kv, name, revision, self.retry, slot);
                Err(error)
            }
            (removed, _) => removed,
        }
    }

    /// Keeps the key: the caller now holds the lock through it (and owns its name's slot).
    pub(super) fn keep(mut self) -> (String, i64, Option<Slot>) {
        (
            std::mem::take(&mut self.name),
            self.revision,
            self.slot.take(),
        )
    }
}

impl Drop for QueueKey {
    fn drop(&mut self) {
        if let Some(slot) = self.slot.take() {
            let name = std::mem::take(&mut self.name);
            delete_in_background(&self.kv, name, self.revision, self.retry, slot);
        }
    }
}

/// Deletes `name` if its create revision is still `revision`; returns whether it was there. If an earlier
/// attempt went unanswered and the key is gone, that attempt is taken to have deleted it.
pub(super) async fn delete_own_key(
    kv: &KvClient,
    name: String,
    revision: i64,
    retry: Retry,
) -> Result<bool, LockError> {
    let txn = Txn::new()
        .when([Compare::create_revision(
            name.clone(),
            CompareOp::Equal,
            revision,
        )])
        .and_then([TxnOp::delete(name, None)]);
    let (answer, ambiguous) = retry
        .run_noting_ambiguity("delete lock key", || {
            let (mut kv, txn) = (kv.clone(), txn.clone());
            async move { kv.txn(txn).await }
        })
        .await?;
    Ok(answer.succeeded() || ambiguous)
}

/// How long background clean-up keeps trying to delete a key left behind.
const CLEAN_UP_FOR: Duration = Duration::from_secs(30);

/// Deletes our key in the background, retrying while no member is available (for up to 30 s), then gives
/// its name's slot back; used when the caller cannot wait (drop guards, abandoned leases) or its own
/// attempt failed.
pub(super) fn delete_in_background(
    kv: &KvClient,
    name: String,
    revision: i64,
    retry: Retry,
    slot: Slot,
) {
    let kv = kv.clone();
    let retry = Retry {
        overall: CLEAN_UP_FOR,
        ..retry
    };
    in_background(async move {
        let _ = delete_own_key(&kv, name, revision, retry).await;
        drop(slot);
    });
}

/// What putting our key in the queue found.
#[derive(Debug)]
pub(super) struct Enqueued {
    pub(super) key: QueueKey,
    /// The create revision at the head of the queue: ours means we hold the lock.
    pub(super) head: i64,
    /// When the request was sent.
    pub(super) sent_at: Instant,
}

/// The key just below ours in the queue, as read at `revision`.
#[derive(Debug)]
pub(super) enum Predecessor {
    /// Nobody is ahead of us.
    None,
    /// `name` is ahead of us; watch its delete from `revision + 1`.
    Waiting { name: Vec<u8>, revision: i64 },
    /// Our own key is gone (its lease ended or it was deleted).
    OursGone,
}

fn head_of(queue: &str, order: SortOrder, max_create_revision: Option<i64>) -> TxnOp {
    let mut options = GetOptions::new()
        .with_prefix()
        .with_sort(SortTarget::Create, order)
        .with_limit(1)
        .with_keys_only();
    if let Some(max) = max_create_revision {
        options = options.with_max_create_revision(max);
    }
    TxnOp::get(queue, Some(options))
}

fn ranges(answer: &TxnResponse) -> Vec<etcd_client::GetResponse> {
    answer
        .op_responses()
        .into_iter()
        .filter_map(|r| match r {
            TxnOpResponse::Get(get) => Some(get),
            _ => None,
        })
        .collect()
}

fn unexpected(what: &str) -> LockError {
    LockError::backend("etcd", format!("unexpected answer to {what}"))
}

impl Queue {
    /// Puts our key (with `lease`) in `queue` unless it exists, and reads the head of the queue, in one txn
    /// (as Go's `Mutex.tryAcquire`). An existing key is ours only under `lease` (Go's key name is its
    /// lease, so it adopts only keys of its own lease): one under another lease is a leftover of an earlier
    /// hold whose clean-up gave up, and its lease could end while we hold; it is deleted and ours put
    /// instead. If this future is dropped mid-request, the request finishes in the background and deletes
    /// the key it created, so nothing is left behind.
    pub(super) async fn enqueue(
        &self,
        queue: &str,
        slot: Slot,
        lease: i64,
    ) -> Result<Enqueued, LockError> {
        let mut slot = slot;
        // One leftover at most: while we hold the slot, nobody else puts a key under its name.
        for _ in 0..2 {
            let (enqueued, found) = self.enqueue_once(queue, slot, lease).await?;
            if found.lease == lease {
                return Ok(enqueued);
            }
            let (name, revision, kept) = enqueued.key.keep();
            let Some(kept) = kept else {
                return Err(unexpected("enqueue txn (slot given up)"));
            };
            match delete_own_key(&self.kv, name.clone(), revision, self.retry).await {
                Ok(_) => slot = kept,
                Err(error) => {
                    delete_in_background(&self.kv, name, revision, self.retry, kept);
                    return Err(error);
                }
            }
        }
        Err(unexpected(
            "enqueue txn (a key under another lease came back)",
        ))
    }

    /// One enqueue txn; returns the key (ours or a leftover) and the lease it was found under.
    async fn enqueue_once(
        &self,
        queue: &str,
        slot: Slot,
        lease: i64,
    ) -> Result<(Enqueued, Found), LockError> {
        let name = slot.key_in(queue);
        let absent = Compare::create_revision(name.clone(), CompareOp::Equal, 0);
        let put = TxnOp::put(name.clone(), "", Some(PutOptions::new().with_lease(lease)));
        let txn = Txn::new()
            .when([absent])
            .and_then([put, head_of(queue, SortOrder::Ascend, None)])
            .or_else([
                TxnOp::get(name.clone(), Some(GetOptions::new().with_keys_only())),
                head_of(queue, SortOrder::Ascend, None),
            ]);
        let (kv, retry) = (self.kv.clone(), self.retry);
        let sent_at = Instant::now();
        // Safe to repeat: the compare makes a second put a read of the first.
        let request = retry.run("enqueue txn", move || {
            let (mut kv, txn) = (kv.clone(), txn.clone());
            async move { kv.txn(txn).await }
        });
        let mut in_flight = InFlightEnqueue {
            request: Some(Box::pin(request)),
            kv: self.kv.clone(),
            name: name.clone(),
            retry,
            slot: Some(slot),
        };
        let answer = (&mut in_flight).await?;
        let slot = in_flight.slot.take();
        let found = found_key(&answer, lease)?;
        let head = ranges(&answer)
            .last()
            .and_then(|r| r.kvs().first().map(|kv| kv.create_revision()))
            .ok_or_else(|| unexpected("enqueue txn (empty queue)"))?;
        let enqueued = Enqueued {
            key: QueueKey {
                name,
                revision: found.revision,
                kv: self.kv.clone(),
                retry,
                slot,
            },
            head,
            sent_at,
        };
        Ok((enqueued, found))
    }

    /// The key just below ours (greatest create revision smaller than ours) and whether ours still exists,
    /// in one read-only txn (Go's `waitDeletes` step plus its final check of our key).
    pub(super) async fn predecessor(
        &self,
        queue: &str,
        ours: &QueueKey,
    ) -> Result<Predecessor, LockError> {
        let txn = Txn::new().and_then([
            head_of(queue, SortOrder::Descend, Some(ours.revision - 1)),
            TxnOp::get(ours.name.clone(), Some(GetOptions::new().with_count_only())),
        ]);
        let answer = self
            .retry
            .run("predecessor read", || {
                let (mut kv, txn) = (self.kv.clone(), txn.clone());
                async move { kv.txn(txn).await }
            })
            .await?;
        let revision = answer
            .header()
            .map(|h| h.revision())
            .ok_or_else(|| unexpected("predecessor read (no header)"))?;
        let [before, mine] = ranges(&answer)
            .try_into()
            .map_err(|_| unexpected("predecessor read"))?;
        if mine.count() == 0 {
            return Ok(Predecessor::OursGone);
        }
        Ok(match before.kvs().first() {
            None => Predecessor::None,
            Some(kv) => Predecessor::Waiting {
                name: kv.key().to_vec(),
                revision,
            },
        })
    }

    /// Returns once `name` has been deleted at a revision after `after` (or the watch ended, so the caller
    /// re-checks).
    pub(super) async fn wait_deleted(&self, name: Vec<u8>, after: i64) -> Result<(), LockError> {
        let options = WatchOptions::new()
            .with_start_revision(after + 1)
            .with_filters([WatchFilterType::NoPut]);
        let mut stream = self
            .retry
            .run("watch predecessor", || {
                let (mut watch, name, options) =
                    (self.watch.clone(), name.clone(), options.clone());
                async move { watch.watch(name, Some(options)).await }
            })
            .await?;
        loop {
            match stream.message().await {
                Ok(Some(answer)) => {
                    let deleted = answer
                        .events()
                        .iter()
                        .any(|e| e.event_type() == EventType::Delete);
                    if deleted || answer.canceled() {
                        return Ok(());
                    }
                }
                Ok(None) => return Ok(()),
                Err(e) => return Err(super::error::etcd_error("watch predecessor", e)),
            }
        }
    }
}

/// A boxed txn request that owns what it needs.
type TxnRequest = Pin<Box<dyn Future<Output = Result<TxnResponse, LockError>> + Send>>;

/// An enqueue request in flight, polled in place. Dropped before it finishes (the acquire was cancelled),
/// it moves to a background task that finishes it and deletes the key it created, so the key is never
/// left to a kept-alive session; a delete sent at drop time instead could overtake the put.
struct InFlightEnqueue {
    request: Option<TxnRequest>,
    kv: KvClient,
    name: String,
    retry: Retry,
    slot: Option<Slot>,
}

impl Future for InFlightEnqueue {
    type Output = Result<TxnResponse, LockError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let Some(request) = self.request.as_mut() else {
            return Poll::Ready(Err(unexpected("enqueue txn (polled after completion)")));
        };
        let answer = std::task::ready!(request.as_mut().poll(cx));
        self.request = None;
        Poll::Ready(answer)
    }
}

impl Drop for InFlightEnqueue {
    fn drop(&mut self) {
        let (Some(request), Some(slot)) = (self.request.take(), self.slot.take()) else {
            return;
        };
        let (kv, name, retry) = (self.kv.clone(), std::mem::take(&mut self.name), self.retry);
        in_background(async move {
            match request.await.ok().and_then(|a| found_key(&a, 0).ok()) {
                Some(found) => delete_in_background(&kv, name, found.revision, retry, slot),
                // Unknown outcome: the slot is still ours, so nobody else's key has this name.
                None => delete_name_in_background(&kv, name, retry, slot),
            }
        });
    }
}

/// The key an enqueue txn put or found under our name.
#[derive(Debug, Clone, Copy)]
struct Found {
    revision: i64,
    lease: i64,
}

/// The key from an enqueue answer: put by the txn (at its revision, under `lease`), else the existing one.
fn found_key(answer: &TxnResponse, lease: i64) -> Result<Found, LockError> {
    if answer.succeeded() {
        let revision = answer
            .header()
            .map(|h| h.revision())
            .ok_or_else(|| unexpected("enqueue txn (no header)"))?;
        return Ok(Found { revision, lease });
    }
    ranges(answer)
        .first()
        .and_then(|r| r.kvs().first())
        .map(|kv| Found {
            revision: kv.create_revision(),
            lease: kv.lease(),
        })
        .ok_or_else(|| unexpected("enqueue txn (key neither created nor found)"))
}

/// Deletes `name` whatever its revision, in the background, then gives the slot back (for a key whose
/// create answer never came; while the slot is held, no other key of ours has that name).
fn delete_name_in_background(kv: &KvClient, name: String, retry: Retry, slot: Slot) {
    let kv = kv.clone();
    let retry = Retry {
        overall: CLEAN_UP_FOR,
        ..retry
    };
    in_background(async move {
        let _ = retry
            .run("delete lock key", || {
                let (mut kv, name) = (kv.clone(), name.clone());
                async move { kv.delete(name, None).await }
            })
            .await;
        drop(slot);
    });
}

impl Queue {
    /// One keep-alive of `lease`: opens a keep-alive stream, waits for the answer and closes it. Returns
    /// when it was sent (the lease then lives at least its TTL from that instant).
    pub(super) async fn refresh(&self, lease: i64) -> Result<Instant, LockError> {
        let sent_at = Instant::now();
        self.retry
            .run("lease keep-alive", || {
                let mut leases = self.leases.clone();
                async move { leases.keep_alive(lease).await }
            })
            .await?;
        Ok(sent_at)
    }
}
