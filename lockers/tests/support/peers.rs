//! What the adapter tests share: a conformance [`Target`] over any reference adapter with the server it
//! needs, started by the test. Its clients are mapped to processes as a case's are: the clients of an
//! adapter that serves many share one adapter process (each its own library client), the others have
//! one process each. A peer
//! whose runtime is not installed fails the test with the install command, never a silent skip.
#![allow(dead_code)] // each test file uses its own part

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use lockers::conformance::Target;
use lockers::peer::catalog::{self, PeerSpec};
use lockers::peer::{PeerConfig, PeerLocker, PeerProcesses};
use lockers::{AcquireOptions, Capabilities, Events, Lease, LeaseMode, LockError, Locker};

/// A reference adapter with its server (kept alive by `_server`).
pub(crate) struct Peer<S> {
    pub(crate) spec: &'static PeerSpec,
    /// The adapter process the conformance clients share (when the adapter serves many clients).
    pub(crate) processes: Arc<PeerProcesses>,
    pub(crate) _server: S,
    pub(crate) servers: Vec<String>,
    pub(crate) settings: Vec<(String, String)>,
    pub(crate) watchdog: Duration,
    pub(crate) short_lease: Duration,
    pub(crate) slack: Duration,
    /// For libraries without renewal: the fixed lease that stands in for the suite's watchdog leases.
    pub(crate) fixed_for_watchdog: Option<Duration>,
    /// Deletes the lock behind the holder's back, given the lock key.
    pub(crate) remove: Box<dyn Fn(&str) + Send + Sync>,
}

/// The catalog entry of `id`.
pub(crate) fn spec(id: &str) -> &'static PeerSpec {
    catalog::find(id).unwrap_or_else(|| panic!("no reference adapter {id}"))
}

/// The config of a client of `spec`; panics with the install command if its runtime is missing.
pub(crate) fn config(spec: &PeerSpec, servers: Vec<String>, watchdog: Duration) -> PeerConfig {
    spec.config(servers, &[], lockers::Renewal::new(watchdog))
        .unwrap_or_else(|e| panic!("{e}"))
}

impl<S: Send + Sync> Peer<S> {
    /// A client in a new adapter process of its own (a fault may act on its process).
    pub(crate) async fn start(&self, events: Events) -> PeerLocker {
        self.open(events, None).await
    }

    /// A client in the adapter process the target's clients share, if the adapter serves many.
    pub(crate) async fn start_shared(&self, events: Events) -> PeerLocker {
        self.open(events, Some(&self.processes)).await
    }

    /// The clients of an adapter that serves many share one process, each its own library client: they
    /// exclude each other as separate processes would; closing one leaves the process serving the
    /// others, and the last one's close ends it. A client started on its own (for a fault on its
    /// process) has a process of its own.
    pub(crate) async fn clients_share_one_process(&self) {
        let (a, b) = (
            self.start_shared(Events::none()).await,
            self.start_shared(Events::none()).await,
        );
        let own = self.start(Events::none()).await;
        assert_eq!(a.pid(), b.pid());
        assert_ne!(a.pid(), own.pid());
        assert_eq!((b.clients_in_process(), own.clients_in_process()), (2, 1));
        let once = AcquireOptions {
            lease: self
                .fixed_for_watchdog
                .map_or(LeaseMode::Watchdog, LeaseMode::Fixed),
            ..AcquireOptions::try_once()
        };
        let held = a.acquire("shared", &once).await.unwrap();
        assert!(b.acquire("shared", &once).await.is_err(), "b got a's lock");
        assert!(
            own.acquire("shared", &once).await.is_err(),
            "own got a's lock"
        );
        held.release().await.unwrap();
        let token = b.acquire("shared", &once).await.unwrap();
        token.release().await.unwrap();
        let pid = a.pid().unwrap() as libc::pid_t;
        a.close().await;
        let still = b.acquire("after-close", &once).await.unwrap();
        still.release().await.unwrap();
        b.close().await;
        // SAFETY: signal 0 only asks whether the (unreaped or gone) process exists.
        let alive = || unsafe { libc::kill(pid, 0) } == 0 && !is_zombie(pid);
        assert!(!alive(), "the process outlived its last client's close");
        own.close().await;
    }

    async fn open(&self, events: Events, shared: Option<&PeerProcesses>) -> PeerLocker {
        let mut config = config(self.spec, self.servers.clone(), self.watchdog);
        config.settings.extend(self.settings.iter().cloned());
        let started = match shared {
            Some(processes) => PeerLocker::start_in(config, events, processes).await,
            None => PeerLocker::start(config, events).await,
        };
        let locker = started.unwrap_or_else(|e| panic!("{}: {e}", self.spec.id));
        assert_eq!(
            locker.capabilities(),
            self.spec.capabilities,
            "{}: the adapter's hello and the catalog disagree",
            self.spec.id
        );
        assert_eq!(
            locker.info().starve,
            self.spec.starve_library,
            "{}: the adapter's hello and the catalog disagree on `starve`",
            self.spec.id
        );
        locker
    }
}

#[async_trait]
impl<S: Send + Sync> Target for Peer<S> {
    async fn client(&self, events: Events) -> Arc<dyn Locker> {
        let locker = self.start_shared(events).await;
        match self.fixed_for_watchdog {
            Some(lease) => Arc::new(FixedOnly { locker, lease }),
            None => Arc::new(locker),
        }
    }

    fn watchdog_timeout(&self) -> Duration {
        self.watchdog
    }

    fn short_lease(&self) -> Duration {
        self.short_lease
    }

    async fn remove_behind_back(&self, lease: &Lease) {
        (self.remove)(lease.key());
    }

    fn slack(&self) -> Duration {
        self.slack
    }
}

/// A library that cannot renew runs the suite with a long fixed lease wherever a case asks for a watchdog
/// lease (the suite's cases that need renewal are skipped by the capabilities).
#[derive(Debug)]
struct FixedOnly {
    locker: PeerLocker,
    lease: Duration,
}

#[async_trait]
impl Locker for FixedOnly {
    fn id(&self) -> &str {
        self.locker.id()
    }

    fn capabilities(&self) -> Capabilities {
        self.locker.capabilities()
    }

    async fn acquire(&self, key: &str, opts: &AcquireOptions) -> Result<Lease, LockError> {
        let mut opts = opts.clone();
        if opts.lease == LeaseMode::Watchdog {
            opts.lease = LeaseMode::Fixed(self.lease);
        }
        self.locker.acquire(key, &opts).await
    }

    async fn close(&self) {
        self.locker.close().await;
    }
}

/// Runs a conformance case the library is known to depart from and asserts that it still does (the case
/// panics), printing why. If the library ever conforms, this fails so the case moves back to the suite.
pub(crate) async fn expect_departure<F>(case: F, why: &str)
where
    F: std::future::Future<Output = ()> + Send + 'static,
{
    let outcome = tokio::spawn(case).await;
    assert!(
        outcome.is_err(),
        "the library now passes this case; move it back into the conformance list ({why})"
    );
    eprintln!("known departure: {why}");
}

/// Whether `pid` has exited but is not reaped yet.
fn is_zombie(pid: libc::pid_t) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|stat| {
            stat.rsplit(')')
                .next()
                .unwrap_or("")
                .trim_start()
                .starts_with('Z')
        })
        .unwrap_or(true)
}

/// One lock shared by two implementations (a model and its library), each naming it its own way:
/// `holder` takes it as `holder_key`, `waiter` finds it busy as `waiter_key`, then waits for it (up to
/// `wait`) and must not get it before `holder` releases. Answers how long after the release was sent
/// the waiter got it. The waiter is given 500 ms to queue before the release (one that queues later
/// gets a free lock, which only makes the hand-off short, never fails it).
pub(crate) async fn hand_off(
    holder: &dyn Locker,
    holder_key: &str,
    waiter: Arc<dyn Locker>,
    waiter_key: &str,
    wait: Duration,
) -> Duration {
    use std::time::Instant;

    let held = holder
        .acquire(holder_key, &AcquireOptions::try_once())
        .await
        .unwrap_or_else(|e| panic!("{} could not take the free lock: {e}", holder.id()));
    match waiter
        .acquire(waiter_key, &AcquireOptions::try_once())
        .await
    {
        Err(LockError::Timeout { .. }) => {}
        Ok(_) => panic!(
            "{} took {waiter_key} while {} held it as {holder_key}: both hold",
            waiter.id(),
            holder.id()
        ),
        Err(e) => panic!("{}: {e}", waiter.id()),
    }
    let waiting = {
        let key = waiter_key.to_owned();
        tokio::spawn(async move {
            let lease = waiter.acquire(&key, &AcquireOptions::wait(wait)).await;
            (Instant::now(), lease)
        })
    };
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(
        !waiting.is_finished(),
        "the waiter got {waiter_key} (or gave up) while {holder_key} was held"
    );
    let released = Instant::now();
    held.release().await.unwrap();
    let (granted, lease) = waiting.await.unwrap();
    let lease = lease.unwrap_or_else(|e| panic!("the waiter did not get {waiter_key}: {e}"));
    lease.release().await.unwrap();
    granted.duration_since(released)
}
