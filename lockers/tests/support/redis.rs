//! What the Redis strategy tests share: one redis-server per test with a strategy's clients of it
//! ([`Setup`]), the conformance [`Target`] every Redis strategy runs under (600 ms watchdog leases,
//! 300 ms fixed leases, `DEL` behind the holder's back), server-side counters (`INFO commandstats`,
//! `PUBSUB NUMSUB`), a `SIGSTOP` guard, small helpers for keys and busy locks, and
//! [`on_each_flavor!`], which runs a file's cases on Redis and on Valkey.
#![allow(dead_code, unused_macros, unused_imports)] // each test file uses its own part

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
pub(crate) use lockbench_servers::Flavor;
use lockbench_servers::{RedisOptions, RedisServer};
use lockers::conformance::Target;
use lockers::{AcquireOptions, EventLog, Events, Lease, LockError, LockEvent, Locker};

/// The watchdog timeout every test client runs with.
pub(crate) const TIMEOUT: Duration = Duration::from_millis(600);
/// The key prefix every test client runs with.
pub(crate) const PREFIX: &str = "lbtest:";

/// The server key of the lock called `name`.
pub(crate) fn lock_key(name: &str) -> String {
    format!("{PREFIX}{{{name}}}")
}

/// `name` with a random suffix, so tests never share a lock.
pub(crate) fn unique(name: &str) -> String {
    format!("{name}:{:08x}", rand::random::<u32>())
}

/// Asserts that a try-once acquire of `key` finds it held.
pub(crate) async fn expect_busy(locker: &dyn Locker, key: &str) {
    match locker.acquire(key, &AcquireOptions::try_once()).await {
        Err(LockError::Timeout { .. }) => {}
        other => panic!("expected the lock to be busy, got {other:?}"),
    }
}

/// The TTL each `Renewed` event in `log` found before extending (each must report one).
pub(crate) fn renewal_margins(log: &EventLog) -> Vec<Duration> {
    log.snapshot()
        .into_iter()
        .filter_map(|e| match e {
            LockEvent::Renewed {
                remaining_ttl_before,
                ..
            } => Some(remaining_ttl_before.expect("a remaining TTL")),
            _ => None,
        })
        .collect()
}

/// Asserts that every renewal found its lock alive with at most one watchdog timeout left.
pub(crate) fn assert_margins_in_range(margins: &[Duration]) {
    assert!(
        margins.iter().all(|m| !m.is_zero() && *m <= TIMEOUT),
        "margins out of range: {margins:?}"
    );
}

/// How a strategy's test clients connect.
#[async_trait]
pub(crate) trait Strategy: Send + Sync + 'static {
    /// The strategy's client type.
    type Client: Locker + 'static;

    /// A new client of the server at `url`, reporting to `events`.
    async fn connect(&self, url: &str, events: Events) -> Arc<Self::Client>;
}

/// One redis-server (stopped on drop) and a strategy whose clients connect to it.
pub(crate) struct Setup<S> {
    pub(crate) server: RedisServer,
    pub(crate) strategy: S,
}

impl<S: Strategy> Setup<S> {
    /// A default server.
    pub(crate) fn start(strategy: S) -> Self {
        Self::start_with(strategy, RedisOptions::default())
    }

    /// A default server of `flavor` (Redis or Valkey).
    pub(crate) fn start_on(flavor: Flavor, strategy: S) -> Self {
        Self::start_with(strategy, RedisOptions::of(flavor))
    }

    /// A server started with `options`.
    pub(crate) fn start_with(strategy: S, options: RedisOptions) -> Self {
        Setup {
            server: RedisServer::start_with(options).unwrap(),
            strategy,
        }
    }

    /// A new client.
    pub(crate) async fn connect(&self, events: Events) -> Arc<S::Client> {
        self.strategy.connect(&self.server.url(), events).await
    }

    /// Two clients reporting no events (a holder and a contender).
    pub(crate) async fn pair(&self) -> (Arc<S::Client>, Arc<S::Client>) {
        (
            self.connect(Events::none()).await,
            self.connect(Events::none()).await,
        )
    }

    /// A raw command's answer.
    pub(crate) fn redis(&self, args: &[&str]) -> String {
        self.server.command(args).unwrap()
    }

    /// `calls` of `cmdstat_<command>` in `INFO commandstats` (commands run inside scripts included).
    pub(crate) fn calls(&self, command: &str) -> u64 {
        let info = self.redis(&["INFO", "commandstats"]);
        lockbench_servers::redis::commandstats(&info)
            .get(command)
            .map_or(0, |stat| stat.calls)
    }

    /// Script calls the server has run.
    pub(crate) fn evalsha_calls(&self) -> u64 {
        self.calls("evalsha")
    }

    /// Clients subscribed to `channel`.
    pub(crate) fn subscribers(&self, channel: &str) -> u64 {
        let reply = self.redis(&["PUBSUB", "NUMSUB", channel]);
        reply.lines().nth(1).unwrap().parse().unwrap()
    }

    /// Stops the server (`SIGSTOP`) until the guard is dropped, also when the test fails.
    pub(crate) fn freeze(&self) -> Frozen<'_> {
        self.server.pause().unwrap();
        Frozen(&self.server)
    }
}

/// Turns each `async fn case(flavor: Flavor)` named into two tests, `on_redis::case` and
/// `on_valkey::case`: the one case on each server program. With `@conformance |flavor| target;`
/// first, the two modules also run the conformance suite, `target` evaluated with `flavor` bound.
/// The modules see the caller's names (`use super::*`).
macro_rules! on_each_flavor {
    ($(@conformance |$flavor:ident| $target:expr;)? $($case:ident),* $(,)?) => {
        /// The cases on Redis.
        mod on_redis {
            #[allow(unused_imports)]
            use super::*;
            $(
                #[allow(non_upper_case_globals)]
                const $flavor: ::lockbench_servers::Flavor = ::lockbench_servers::Flavor::Redis;
                lockers::conformance_tests!($target);
            )?
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $case() {
                    super::$case(::lockbench_servers::Flavor::Redis).await;
                }
            )*
        }

        /// The same cases on Valkey.
        mod on_valkey {
            #[allow(unused_imports)]
            use super::*;
            $(
                #[allow(non_upper_case_globals)]
                const $flavor: ::lockbench_servers::Flavor = ::lockbench_servers::Flavor::Valkey;
                lockers::conformance_tests!($target);
            )?
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $case() {
                    super::$case(::lockbench_servers::Flavor::Valkey).await;
                }
            )*
        }
    };
}
pub(crate) use on_each_flavor;

/// Resumes a `SIGSTOP`ped server when dropped.
pub(crate) struct Frozen<'a>(&'a RedisServer);

impl Drop for Frozen<'_> {
    fn drop(&mut self) {
        self.0.resume().unwrap();
    }
}

#[async_trait]
impl<S: Strategy> Target for Setup<S> {
    async fn client(&self, events: Events) -> Arc<dyn Locker> {
        self.connect(events).await
    }

    fn watchdog_timeout(&self) -> Duration {
        TIMEOUT
    }

    fn short_lease(&self) -> Duration {
        Duration::from_millis(300)
    }

    async fn remove_behind_back(&self, lease: &Lease) {
        assert_eq!(self.redis(&["DEL", &lock_key(lease.key())]), "1");
    }

    fn slack(&self) -> Duration {
        Duration::from_millis(200)
    }
}
