//! The Redis peers (redis-py `Lock`, python-redis-lock, node redlock) through their adapters on real
//! redis-servers: the conformance suite, one adapter process per client.
#![allow(clippy::unwrap_used)]

use std::time::Duration;

use lockbench_servers::RedisServer;

#[path = "support/peers.rs"]
mod peers;

use peers::{Peer, spec};

fn on_redis(
    id: &str,
    lock_key: fn(&str) -> String,
    watchdog: Duration,
    fixed_for_watchdog: Option<Duration>,
) -> Peer<RedisServer> {
    let server = RedisServer::start().unwrap();
    let url = server.url();
    let addr = server.addr();
    Peer {
        spec: spec(id),
        servers: vec![url],
        settings: Vec::new(),
        watchdog,
        short_lease: watchdog,
        slack: Duration::from_millis(250),
        fixed_for_watchdog,
        remove: Box::new(move |key| {
            let key = lock_key(key);
            lockbench_servers::probe::resp_command(addr, &["DEL", &key], Duration::from_secs(2))
                .unwrap();
        }),
        _server: server,
    }
}

mod redis_py {
    use super::*;

    lockers::conformance_tests!(on_redis(
        "py-redis-py",
        str::to_owned,
        Duration::from_millis(300),
        Some(Duration::from_secs(5))
    ));
}

mod python_redis_lock {
    use super::*;

    lockers::conformance_tests!(on_redis(
        "py-redis-lock",
        |k| format!("lock:{k}"),
        Duration::from_secs(1),
        None
    ));
}

/// node-redlock over three independent redis-servers (a majority is two).
fn redlock() -> Peer<Vec<RedisServer>> {
    let servers: Vec<_> = (0..3).map(|_| RedisServer::start().unwrap()).collect();
    Peer {
        spec: spec("node-redlock"),
        servers: servers.iter().map(RedisServer::url).collect(),
        settings: Vec::new(),
        watchdog: Duration::from_secs(1),
        short_lease: Duration::from_millis(700),
        slack: Duration::from_millis(300),
        fixed_for_watchdog: None,
        remove: {
            let addrs: Vec<_> = servers.iter().map(RedisServer::addr).collect();
            Box::new(move |key| {
                for addr in &addrs {
                    lockbench_servers::probe::resp_command(
                        *addr,
                        &["DEL", key],
                        Duration::from_secs(2),
                    )
                    .unwrap();
                }
            })
        },
        _server: servers,
    }
}

mod node_redlock {
    use super::*;

    lockers::conformance_tests!(redlock());
}
