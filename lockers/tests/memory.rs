//! Runs the conformance suite against the in-process `memory` strategy (no server needed).
#![allow(clippy::unwrap_used)]

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use lockers::conformance::Target;
use lockers::memory::{MemoryConfig, MemoryLocker, MemoryServer};
use lockers::{Events, Lease, Locker, Renewal};

struct Memory {
    server: Arc<MemoryServer>,
}

const TIMEOUT: Duration = Duration::from_millis(600);

#[async_trait]
impl Target for Memory {
    async fn client(&self, events: Events) -> Arc<dyn Locker> {
        let config = MemoryConfig {
            renewal: Renewal::new(TIMEOUT),
        };
        Arc::new(MemoryLocker::new(self.server.clone(), config, events).expect("valid config"))
    }

    fn watchdog_timeout(&self) -> Duration {
        TIMEOUT
    }

    fn short_lease(&self) -> Duration {
        Duration::from_millis(300)
    }

    async fn remove_behind_back(&self, lease: &Lease) {
        assert!(self.server.remove(lease.key()));
    }

    fn slack(&self) -> Duration {
        Duration::from_millis(100)
    }
}

lockers::conformance_tests!(Memory {
    server: MemoryServer::new()
});

#[test]
fn config_rejects_bad_values() {
    let server = MemoryServer::new();
    for (timeout, ratio) in [(0, 0.3), (1000, 0.0), (1000, 1.0), (1000, f64::NAN)] {
        let config = MemoryConfig {
            renewal: Renewal {
                ttl: Duration::from_millis(timeout),
                ratio,
            },
        };
        let err = MemoryLocker::new(server.clone(), config, Events::none()).unwrap_err();
        assert_eq!(err.kind(), "config", "{timeout} ms / {ratio}");
    }
}
