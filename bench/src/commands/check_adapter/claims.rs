//! The conformance checks of `lockbench check-adapter`: `lockers::conformance`'s cases run against
//! the adapter's clients, each seen with exactly the capabilities its manifest claims (so a claim the
//! library does not keep fails its case), plus the two checks the suite words differently for a peer
//! (a watchdog lease outliving its TTL, a release of a lock deleted behind its back).

use std::future::Future;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use lockers::conformance::{self, Target};
use lockers::peer::catalog::{PeerSpec, Reentry};
use lockers::peer::{PeerLocker, PeerProcesses};
use lockers::{
    AcquireOptions, Capabilities, Events, Lease, LeaseMode, LockError, Locker, OwnerId, Renewal,
};

use super::row::Row;

/// How long one case may take before it counts as failed.
const CASE_LIMIT: Duration = Duration::from_secs(30);

/// Deletes every lock on the check's own servers (FLUSHALL on each Redis), as an operator or a bug
/// would behind the holder's back.
pub(crate) type Remove = Arc<dyn Fn() -> futures::future::BoxFuture<'static, ()> + Send + Sync>;

/// The adapter as the conformance suite sees it.
struct Adapter {
    spec: PeerSpec,
    servers: Vec<String>,
    renewal: Renewal,
    short_lease: Duration,
    log_dir: PathBuf,
    processes: Arc<PeerProcesses>,
    remove: Option<Remove>,
}

#[async_trait]
impl Target for Adapter {
    async fn client(&self, events: Events) -> Arc<dyn Locker> {
        let config = self.spec.config(self.servers.clone(), &[], self.renewal);
        let mut config = config.unwrap_or_else(|e| panic!("{e}"));
        config.log_dir = Some(self.log_dir.clone());
        let locker = PeerLocker::start_in(config, events, &self.processes)
            .await
            .unwrap_or_else(|e| panic!("{}: {e}", self.spec.id));
        Arc::new(AsClaimed {
            locker,
            claims: self.spec.capabilities,
        })
    }

    fn watchdog_timeout(&self) -> Duration {
        self.renewal.ttl
    }

    fn short_lease(&self) -> Duration {
        self.short_lease
    }

    async fn remove_behind_back(&self, _lease: &Lease) {
        if let Some(remove) = &self.remove {
            remove().await;
        }
    }

    fn slack(&self) -> Duration {
        Duration::from_millis(500)
    }
}

/// A client that declares what the manifest claims; a watchdog lease asked of an adapter that claims
/// none is a long fixed one (the suite's cases that need renewal are not run for it).
#[derive(Debug)]
struct AsClaimed {
    locker: PeerLocker,
    claims: Capabilities,
}

#[async_trait]
impl Locker for AsClaimed {
    fn id(&self) -> &str {
        self.locker.id()
    }

    fn capabilities(&self) -> Capabilities {
        self.claims
    }

    async fn acquire(&self, key: &str, opts: &AcquireOptions) -> Result<Lease, LockError> {
        let mut opts = opts.clone();
        if opts.lease == LeaseMode::Watchdog && !self.claims.auto_renew {
            opts.lease = LeaseMode::Fixed(Duration::from_secs(10));
        }
        self.locker.acquire(key, &opts).await
    }

    async fn close(&self) {
        self.locker.close().await;
    }
}

/// Runs one case on its own task: `Err` with its panic's words, or when it outlasts [`CASE_LIMIT`].
async fn run_case(case: impl Future<Output = ()> + Send + 'static) -> Result<(), String> {
    run_case_within(CASE_LIMIT, case).await
}

/// [`run_case`] with a limit of its own.
async fn run_case_within(
    limit: Duration,
    case: impl Future<Output = ()> + Send + 'static,
) -> Result<(), String> {
    let mut task = tokio::spawn(case);
    match tokio::time::timeout(limit, &mut task).await {
        Ok(Ok(())) => Ok(()),
        Ok(Err(e)) => Err(match e.try_into_panic() {
            Ok(panic) => panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| (*s).to_owned()))
                .unwrap_or_else(|| "failed".into()),
            Err(e) => e.to_string(),
        }),
        Err(_) => {
            task.abort();
            Err(format!("did not finish within {limit:?}"))
        }
    }
}

/// A row from a case's outcome.
fn judged(check: &'static str, claimed: &str, passed: &str, outcome: Result<(), String>) -> Row {
    match outcome {
        Ok(()) => Row::judged(check, claimed, passed, true),
        Err(why) => Row::judged(check, claimed, one_line(&why), false),
    }
}

fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Runs `$case` of `lockers::conformance` against `$target`.
macro_rules! case {
    ($target:expr, $case:ident) => {{
        let target = $target.clone();
        run_case(async move { conformance::$case(&*target).await }).await
    }};
}

/// The re-entry row: the check that fits what the manifest says a same-owner re-acquire does.
async fn reentry_row(reentry: Reentry, target: &Arc<Adapter>) -> Row {
    match reentry {
        Reentry::Counted => judged(
            "re-entry",
            "yes",
            "the same owner acquired twice and released twice",
            case!(target, reentrant_acquire_and_release),
        ),
        Reentry::Waits => judged(
            "re-entry",
            "no",
            "the same owner's second acquire timed out",
            case!(target, non_reentrant_same_owner_times_out),
        ),
        Reentry::Shared => {
            let t = target.clone();
            judged(
                "re-entry",
                "shared: granted at once, one release frees it",
                "the same owner's second acquire was granted at once; one release let another client in",
                run_case(async move { shared_reentry(&t).await }).await,
            )
        }
    }
}

/// Every conformance check the manifest's claims call for, in the table's order.
pub(crate) async fn check(
    spec: &PeerSpec,
    servers: Vec<String>,
    renewal: Renewal,
    log_dir: PathBuf,
    remove: Option<Remove>,
) -> Vec<Row> {
    let claims = spec.capabilities;
    let granule = claims.ttl_granularity.max(Duration::from_millis(1));
    let short = claims.min_ttl.max(Duration::from_millis(800));
    let short_lease = granule * short.as_millis().div_ceil(granule.as_millis()) as u32;
    let target = Arc::new(Adapter {
        spec: spec.clone(),
        servers,
        renewal,
        short_lease,
        log_dir,
        processes: PeerProcesses::new(),
        remove: remove.clone(),
    });
    let mut rows = vec![judged(
        "mutual exclusion",
        "always",
        "8 clients taking turns, never two inside",
        case!(target, mutual_exclusion),
    )];
    rows.push(reentry_row(spec.reentry, &target).await);
    rows.push(if claims.fixed_lease {
        judged(
            "fixed lease expires on time",
            "yes",
            &format!("a {short_lease:?} lease let the next owner in on time"),
            case!(target, fixed_lease_expires),
        )
    } else {
        Row::not_claimed("fixed lease expires on time")
    });
    rows.push(if claims.auto_renew {
        let t = target.clone();
        judged(
            "watchdog lease outlives its TTL",
            "yes",
            &format!(
                "held {:?} on a {:?} TTL, another client refused throughout",
                outlive(renewal.ttl),
                renewal.ttl
            ),
            run_case_within(outlive(renewal.ttl) + CASE_LIMIT, async move {
                watchdog_outlives(&t).await
            })
            .await,
        )
    } else {
        Row::not_claimed("watchdog lease outlives its TTL")
    });
    rows.push(match (claims.lost_signal, &remove) {
        (false, _) => Row::not_claimed("lost() when deleted behind its back"),
        (true, None) => Row::not_tested(
            "lost() when deleted behind its back",
            "yes",
            "the check deletes locks behind their back on Redis only",
        ),
        (true, Some(_)) => judged(
            "lost() when deleted behind its back",
            "yes",
            "lost() resolved within a TTL",
            case!(target, lost_when_removed_behind_back),
        ),
    });
    rows.push(if spec.tells_stale_release {
        stale_release(&target, claims, remove.is_some()).await
    } else {
        Row::not_claimed("release of a lock no longer held")
    });
    rows.push(if claims.fencing {
        judged(
            "fencing tokens increase",
            "yes",
            "6 holders in turn, each token above the last",
            case!(target, tokens_strictly_increase),
        )
    } else {
        Row::not_claimed("fencing tokens increase")
    });
    rows
}

/// A release of a lock no longer held answers `not_held`: after a fixed lease expired and another
/// owner took the lock (the suite's case), or after the lock was deleted behind its back.
async fn stale_release(target: &Arc<Adapter>, claims: Capabilities, can_remove: bool) -> Row {
    const CHECK: &str = "release of a lock no longer held";
    const CLAIMED: &str = "answers not_held";
    if claims.fixed_lease {
        return judged(
            CHECK,
            CLAIMED,
            "not_held after its lease expired and another owner took it",
            case!(target, stale_release_is_not_held),
        );
    }
    if !can_remove {
        return Row::not_tested(
            CHECK,
            CLAIMED,
            "no fixed lease, and the check deletes locks on Redis only",
        );
    }
    let t = target.clone();
    let outcome = run_case(async move {
        let client = t.client(Events::none()).await;
        let key = format!("check-adapter:stale:{:08x}", rand::random::<u32>());
        let lease = client
            .acquire(&key, &AcquireOptions::try_once())
            .await
            .unwrap_or_else(|e| panic!("could not take a free lock: {e}"));
        t.remove_behind_back(&lease).await;
        match lease.release().await {
            Err(LockError::NotHeld { .. }) => {}
            other => panic!("the release of a deleted lock gave {other:?}, not not_held"),
        }
        client.close().await;
    })
    .await;
    judged(
        CHECK,
        CLAIMED,
        "not_held after the lock was deleted behind its back",
        outcome,
    )
}

/// `reentrant = "shared"`: the holding owner's second try is granted at once, and releasing that one
/// hold lets another client take the lock at once (the first hold was freed with it).
async fn shared_reentry(t: &Adapter) {
    let (a, b) = (
        t.client(Events::none()).await,
        t.client(Events::none()).await,
    );
    let key = format!("check-adapter:shared:{:08x}", rand::random::<u32>());
    let same = AcquireOptions::try_once().owner(OwnerId::new("worker-1"));
    let first = a
        .acquire(&key, &same)
        .await
        .unwrap_or_else(|e| panic!("could not take a free lock: {e}"));
    let second = match a.acquire(&key, &same).await {
        Ok(second) => second,
        Err(e) => panic!("the same owner's second try was refused ({e}), not granted at once"),
    };
    second
        .release()
        .await
        .unwrap_or_else(|e| panic!("release of the second hold: {e}"));
    let other = match b.acquire(&key, &AcquireOptions::wait(t.slack())).await {
        Ok(other) => other,
        Err(e) => panic!(
            "after one release another client still could not take the lock within {:?} ({e}): \
             the holds are counted, not shared",
            t.slack()
        ),
    };
    let _ = other.release().await;
    let _ = first.release().await;
    a.close().await;
    b.close().await;
}

/// How long a watchdog lease on `ttl` is held to show it outlives its TTL: three TTLs, or the TTL and
/// 15 s more for a long one (a 30 s TTL renewed every 15 s is still renewed three times).
fn outlive(ttl: Duration) -> Duration {
    (ttl * 3).min(ttl + Duration::from_secs(15))
}

/// A watchdog lease stays held for [`outlive`] of its TTL while another client keeps trying.
async fn watchdog_outlives(t: &Adapter) {
    let (a, b) = (
        t.client(Events::none()).await,
        t.client(Events::none()).await,
    );
    let key = format!("check-adapter:watchdog:{:08x}", rand::random::<u32>());
    let lease = a
        .acquire(&key, &AcquireOptions::try_once())
        .await
        .unwrap_or_else(|e| panic!("could not take a free lock: {e}"));
    let until = Instant::now() + outlive(t.renewal.ttl);
    while Instant::now() < until {
        match b.acquire(&key, &AcquireOptions::try_once()).await {
            Err(LockError::Timeout { .. }) => {}
            Ok(_) => panic!("another client took the lock after {:?}", until.elapsed()),
            Err(e) => panic!("another client's try failed: {e}"),
        }
        assert!(
            lease.is_held(),
            "the holder lost its lease before it was released"
        );
        tokio::time::sleep(t.renewal.ttl / 5).await;
    }
    lease
        .release()
        .await
        .unwrap_or_else(|e| panic!("release: {e}"));
    a.close().await;
    b.close().await;
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::path::Path;

    use lockers::peer::manifest;

    use super::*;

    /// `py-memory` (system python3, no server) from a manifest that claims shared re-entry, with
    /// `hello` appended.
    fn memory_claiming_shared_reentry(hello: &str, log_dir: &Path) -> Arc<Adapter> {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../adapters/python/py-memory.toml");
        let text = std::fs::read_to_string(&path)
            .unwrap()
            .replace("reentrant = false", "reentrant = \"shared\"")
            + hello;
        let spec = manifest::parse(&text, &path, true).unwrap();
        assert_eq!(spec.reentry, Reentry::Shared);
        Arc::new(Adapter {
            spec,
            servers: Vec::new(),
            renewal: Renewal::new(Duration::from_secs(1)),
            short_lease: Duration::from_millis(800),
            log_dir: log_dir.to_path_buf(),
            processes: PeerProcesses::new(),
            remove: None,
        })
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_shared_reentry_check_passes_on_a_shared_hold_and_fails_on_an_exclusive_one() {
        let dir = tempfile::tempdir().unwrap();
        let shared =
            memory_claiming_shared_reentry("\n[hello]\nsame_client = \"shared\"\n", dir.path());
        run_case(async move { shared_reentry(&shared).await })
            .await
            .unwrap();
        let exclusive = memory_claiming_shared_reentry("", dir.path());
        let why = run_case(async move { shared_reentry(&exclusive).await })
            .await
            .unwrap_err();
        assert!(why.contains("second try was refused"), "{why}");
    }
}
