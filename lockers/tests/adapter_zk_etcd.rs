//! The ZooKeeper and etcd peers (kazoo `Lock`, Curator `InterProcessMutex`, python-etcd3 `Lock`) through
//! their adapters on a real server: the conformance suite, one adapter process per client.
#![allow(clippy::unwrap_used)]

use std::time::Duration;

use lockbench_servers::{EtcdServer, ZkServer};

#[path = "support/peers.rs"]
mod peers;

use peers::{Peer, spec};

/// The session timeout the kazoo clients ask for.
const SESSION: Duration = Duration::from_secs(1);

fn kazoo() -> Peer<ZkServer> {
    let server = ZkServer::start().unwrap();
    Peer {
        spec: spec("py-kazoo"),
        servers: vec![server.connect_string()],
        settings: Vec::new(),
        watchdog: SESSION,
        short_lease: SESSION,
        slack: Duration::from_millis(400),
        fixed_for_watchdog: None,
        remove: Box::new(|_| unreachable!("kazoo declares no lost_signal")),
        _server: server,
    }
}

fn etcd3() -> Peer<EtcdServer> {
    let server = EtcdServer::start().unwrap();
    Peer {
        spec: spec("py-etcd3"),
        servers: vec![server.endpoint()],
        settings: Vec::new(),
        watchdog: Duration::from_secs(2),
        short_lease: Duration::from_secs(1),
        slack: Duration::from_millis(400),
        fixed_for_watchdog: Some(Duration::from_secs(10)),
        remove: Box::new(|_| unreachable!("python-etcd3 declares no auto_renew")),
        _server: server,
    }
}

mod py_kazoo {
    use super::*;

    lockers::conformance_tests!(kazoo());
}

mod py_etcd3 {
    use super::*;

    lockers::conformance_tests!(etcd3());
}

fn curator() -> Peer<ZkServer> {
    Peer {
        spec: spec("jvm-curator"),
        ..kazoo()
    }
}

mod jvm_curator {
    use super::*;

    lockers::conformance_tests!(curator());
}
