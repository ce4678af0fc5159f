//! The strategies against servers secured like production ones, each started here with a certificate
//! authority generated for the test (`openssl`): Redis with an ACL user over TLS (redis-watchdog with its
//! pub/sub wake-up, redis-guard-thread with its own blocking renewal connections), etcd over TLS with
//! user/password authentication, ZooKeeper with digest authentication and creator-only ACLs. Wrong
//! credentials fail with one error line that does not contain the password.
#![allow(clippy::unwrap_used)]

use std::sync::Arc;
use std::time::Duration;

use lockbench_servers::certs::TlsFiles;
use lockbench_servers::{
    EtcdOptions, EtcdServer, RedisOptions, RedisSecurity, RedisServer, TestCertificates, ZkServer,
    poll,
};
use lockers::etcd::{EtcdConfig, EtcdLease};
use lockers::redis::{
    GuardThreadConfig, RedisGuardThread, RedisWatchdog, Redlock, RedlockConfig, WatchdogConfig,
};
use lockers::zookeeper::{ZkConfig, ZooKeeperLock};
use lockers::{AcquireOptions, EventLog, Events, LockError, LockEvent, Locker, Renewal};

const PASSWORD: &str = "Distinctive-pw-7731";
const TIMEOUT: Duration = Duration::from_millis(600);

fn secured_redis(certificates: &TestCertificates) -> RedisServer {
    RedisServer::start_with(RedisOptions {
        security: Some(RedisSecurity {
            user: "app".into(),
            password: PASSWORD.into(),
            tls: Some(TlsFiles::of(certificates)),
        }),
        ..RedisOptions::default()
    })
    .unwrap()
}

/// Holds a watchdog lease through several renewals while a second client waits, releases, and checks
/// the waiter gets the lock: every connection kind of the strategy ran over TLS as the ACL user.
async fn lock_cycle_with_renewals(first: &dyn Locker, second: &dyn Locker, log: &EventLog) {
    let lease = first
        .acquire("secured", &AcquireOptions::try_once())
        .await
        .unwrap();
    let wait = AcquireOptions::wait(Duration::from_secs(5));
    let waiter = second.acquire("secured", &wait);
    let (waited, ()) = tokio::join!(waiter, async {
        tokio::time::sleep(TIMEOUT * 3).await;
        assert!(lease.is_held(), "the lease must outlive 3 timeouts");
        lease.release().await.unwrap();
    });
    let renewed = log.count(|e| matches!(e, LockEvent::Renewed { .. }));
    assert!(
        renewed >= 3,
        "expected ≥ 3 renewals in 3 timeouts, saw {renewed}"
    );
    waited.unwrap().release().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_acl_user_over_tls() {
    let certificates = TestCertificates::generate().unwrap();
    let server = secured_redis(&certificates);
    let url = server.url();
    assert!(url.starts_with("rediss://app:"), "{url}");

    let log = EventLog::new();
    let config = || WatchdogConfig {
        renewal: Renewal::new(TIMEOUT),
        ..WatchdogConfig::default()
    };
    let first = RedisWatchdog::connect(&url, config(), Events::to(log.clone()))
        .await
        .unwrap();
    let second = RedisWatchdog::connect(&url, config(), Events::none())
        .await
        .unwrap();
    lock_cycle_with_renewals(&first, &second, &log).await;

    let log = EventLog::new();
    let config = || GuardThreadConfig {
        renewal: Renewal::new(TIMEOUT),
        ..GuardThreadConfig::default()
    };
    let first = RedisGuardThread::connect(&url, config(), Events::to(log.clone()))
        .await
        .unwrap();
    let second = RedisGuardThread::connect(&url, config(), Events::none())
        .await
        .unwrap();
    lock_cycle_with_renewals(&first, &second, &log).await;

    // The port the clients used speaks TLS only: the same address without TLS is refused.
    assert_ne!(url, format!("rediss://app:{PASSWORD}@{}/", server.addr()));
    let plain = url.replace("rediss://", "redis://");
    let plain = plain.split('?').next().unwrap();
    let refused = RedisWatchdog::connect(plain, WatchdogConfig::default(), Events::none()).await;
    assert!(
        refused.is_err(),
        "a plain connection to the TLS port must fail"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redlock_nodes_with_acl_users_over_tls() {
    let certificates = TestCertificates::generate().unwrap();
    let nodes: Vec<RedisServer> = (0..3).map(|_| secured_redis(&certificates)).collect();
    let urls: Vec<String> = nodes.iter().map(RedisServer::url).collect();
    let config = || RedlockConfig {
        renewal: Renewal::new(TIMEOUT),
        ..RedlockConfig::default()
    };
    let log = EventLog::new();
    let first = Redlock::connect(&urls, config(), Events::to(log.clone()))
        .await
        .unwrap();
    let second = Redlock::connect(&urls, config(), Events::none())
        .await
        .unwrap();
    lock_cycle_with_renewals(&first, &second, &log).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_wrong_password_or_missing_ca_fails_without_the_password() {
    let certificates = TestCertificates::generate().unwrap();
    let server = secured_redis(&certificates);
    let wrong = server.url().replace(PASSWORD, "Wrong-pw-5521");
    let error = RedisWatchdog::connect(&wrong, WatchdogConfig::default(), Events::none())
        .await
        .unwrap_err();
    let text = error.to_string();
    assert!(matches!(error, LockError::Backend { .. }), "{text}");
    assert!(
        !text.contains("Wrong-pw-5521") && !text.contains('\n'),
        "{text}"
    );
    assert!(!format!("{error:?}").contains("Wrong-pw-5521"));

    // No CA given: the system's roots do not trust the test CA.
    let untrusted = server.url().split('?').next().unwrap().to_owned();
    let error = RedisWatchdog::connect(&untrusted, WatchdogConfig::default(), Events::none())
        .await
        .unwrap_err();
    assert!(!error.to_string().contains(PASSWORD), "{error}");

    // TLS files on a plain URL, and an unreadable CA file, are configuration errors.
    let plain = format!("redis://app:{PASSWORD}@127.0.0.1:1/?ca=/nonexistent.pem");
    let error = RedisWatchdog::connect(&plain, WatchdogConfig::default(), Events::none())
        .await
        .unwrap_err();
    assert!(matches!(error, LockError::Config(_)), "{error}");
    assert!(!error.to_string().contains(PASSWORD), "{error}");
    let missing = server
        .url()
        .replace(&certificates.ca().display().to_string(), "/nonexistent.pem");
    let error = RedisWatchdog::connect(&missing, WatchdogConfig::default(), Events::none())
        .await
        .unwrap_err();
    assert!(matches!(error, LockError::Config(_)), "{error}");
    assert!(!error.to_string().contains(PASSWORD), "{error}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn etcd_over_tls_with_user_and_password() {
    let certificates = TestCertificates::generate().unwrap();
    let server = EtcdServer::start_with(EtcdOptions {
        tls: Some(TlsFiles::of(&certificates)),
        root_password: Some(PASSWORD.into()),
        ..EtcdOptions::default()
    })
    .unwrap();
    let endpoint = server.endpoint();
    assert!(endpoint.starts_with("https://"), "{endpoint}");

    let ca = certificates.ca().display().to_string();
    let address = |password: &str| {
        vec![format!(
            "https://root:{password}@{}?ca={ca}",
            endpoint.trim_start_matches("https://")
        )]
    };
    let config = || EtcdConfig {
        renewal: Renewal::new(Duration::from_secs(2)),
        ..EtcdConfig::default()
    };
    let log = EventLog::new();
    let first = EtcdLease::connect(&address(PASSWORD), config(), Events::to(log.clone()))
        .await
        .unwrap();
    let second = EtcdLease::connect(&address(PASSWORD), config(), Events::none())
        .await
        .unwrap();
    let lease = first
        .acquire("secured", &AcquireOptions::try_once())
        .await
        .unwrap();
    let wait = AcquireOptions::wait(Duration::from_secs(10));
    let waiter = second.acquire("secured", &wait);
    let (waited, ()) = tokio::join!(waiter, async {
        tokio::time::sleep(Duration::from_millis(2500)).await;
        assert!(lease.is_held());
        lease.release().await.unwrap();
    });
    waited.unwrap().release().await.unwrap();
    let renewed = log.count(|e| matches!(e, LockEvent::Renewed { .. }));
    assert!(
        renewed >= 2,
        "expected ≥ 2 keep-alives in 2.5 s at 2 s/3, saw {renewed}"
    );

    let error = EtcdLease::connect(&address("Wrong-pw-5521"), config(), Events::none())
        .await
        .unwrap_err();
    let text = error.to_string();
    assert!(
        !text.contains("Wrong-pw-5521") && !text.contains('\n'),
        "{text}"
    );
    // Without the CA the server's certificate is not trusted.
    let untrusted = vec![format!("https://root:{PASSWORD}@{}", server.client_addr())];
    let error = EtcdLease::connect(&untrusted, config(), Events::none())
        .await
        .unwrap_err();
    assert!(!error.to_string().contains(PASSWORD), "{error}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zookeeper_digest_auth_and_creator_only_nodes() {
    let server = ZkServer::start().unwrap();
    let connect = format!("app:{PASSWORD}@{}", server.connect_string());
    let config = || ZkConfig {
        renewal: Renewal::new(Duration::from_secs(2)),
        prefix: "secured".into(),
        ..ZkConfig::default()
    };
    let first = ZooKeeperLock::connect(&connect, config(), Events::none())
        .await
        .unwrap();
    assert!(!format!("{first:?}").contains(PASSWORD));
    let lease = first
        .acquire("k", &AcquireOptions::try_once())
        .await
        .unwrap();

    // Someone without the digest cannot read the lock's nodes; someone with it can.
    let anonymous = zookeeper_client::Client::connect(&server.connect_string())
        .await
        .unwrap();
    let children = anonymous.list_children("/secured/k").await;
    assert!(
        matches!(children, Err(zookeeper_client::Error::NoAuth)),
        "{children:?}"
    );
    let second = Arc::new(
        ZooKeeperLock::connect(&connect, config(), Events::none())
            .await
            .unwrap(),
    );
    let waiter = {
        let second = second.clone();
        tokio::spawn(async move {
            second
                .acquire("k", &AcquireOptions::wait(Duration::from_secs(5)))
                .await
        })
    };
    // The waiter is queued: a second node under the lock (`exists` needs no read permission).
    let queued = poll::until_awaited(Duration::from_secs(5), || async {
        let stat = anonymous.check_stat("/secured/k").await.unwrap();
        stat.is_some_and(|s| s.num_children == 2)
    });
    assert!(queued.await, "the waiter's node never appeared");
    lease.release().await.unwrap();
    waiter.await.unwrap().unwrap().release().await.unwrap();
}
