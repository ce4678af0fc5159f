//! Real ZooKeeper children (JVMs): a standalone server and a 3-node ensemble serve writes and
//! reads, the ensemble elects a new leader when the leader is killed, and all die with their
//! handle.
#![allow(clippy::unwrap_used)]

mod common;

use std::time::{Duration, Instant};

use lockbench_servers::{ServerError, ZkEnsemble, ZkOptions, ZkServer, data_parent};
use zookeeper_client as zk;

async fn connect(connect_string: &str) -> zk::Client {
    zk::Client::connector()
        .with_session_timeout(Duration::from_secs(5))
        .connect(connect_string)
        .await
        .unwrap()
}

async fn create(connect_string: &str, path: &str, data: &[u8]) {
    let client = connect(connect_string).await;
    let options = zk::CreateMode::Persistent.with_acls(zk::Acls::anyone_all());
    client.create(path, data, &options).await.unwrap();
}

/// Reads through `connect_string` after a `sync`, so a follower is up to date with the leader.
async fn read(connect_string: &str, path: &str) -> Vec<u8> {
    let client = connect(connect_string).await;
    client.sync(path).await.unwrap();
    client.get_data(path).await.unwrap().0
}

#[test]
fn zookeeper_serves_writes_and_dies_on_drop() {
    let server = ZkServer::start().unwrap();
    eprintln!("startup zookeeper: {} ms", server.startup().as_millis());
    eprintln!("zookeeper data dir: {}", server.data_dir().display());
    assert!(server.data_dir().starts_with(data_parent()));
    assert_eq!(server.connect_string(), server.addr().to_string());
    assert!(server.version().starts_with("3."), "{}", server.version());
    assert_eq!(server.mode().as_deref(), Some("standalone"));
    let mntr = server.mntr().unwrap();
    assert!(mntr.contains("zk_server_state\tstandalone"), "{mntr}");

    let rt = common::runtime();
    rt.block_on(create(&server.connect_string(), "/lockbench-k", b"v1"));
    assert_eq!(
        rt.block_on(read(&server.connect_string(), "/lockbench-k")),
        b"v1"
    );

    let pid = server.pid();
    drop(server);
    common::assert_gone(pid);
}

#[test]
fn missing_java_names_the_install_command() {
    let err = ZkServer::start_with(ZkOptions {
        java: Some("/nonexistent/java".into()),
        ..ZkOptions::default()
    })
    .unwrap_err();
    assert!(matches!(err, ServerError::Missing { .. }), "{err:?}");
    let text = err.to_string();
    assert!(
        text.contains("apt-get install -y default-jre-headless"),
        "{text}"
    );
    assert_eq!(text.lines().count(), 1, "{text}");

    let err = ZkServer::start_with(ZkOptions {
        classpath: Some("/nonexistent/zookeeper.jar".into()),
        ..ZkOptions::default()
    })
    .unwrap_err();
    assert!(
        err.to_string().contains("apt-get install -y zookeeper"),
        "{err}"
    );
}

#[test]
fn zookeeper_ensemble_replicates_and_dies_on_drop() {
    let ensemble = ZkEnsemble::start(3).unwrap();
    eprintln!(
        "startup zookeeper ensemble(3): {} ms",
        ensemble.startup().as_millis()
    );
    assert_eq!(ensemble.len(), 3);
    assert_eq!(ensemble.connect_string().split(',').count(), 3);
    let modes: Vec<String> = ensemble.nodes().iter().map(|n| n.mode().unwrap()).collect();
    assert_eq!(
        modes.iter().filter(|m| *m == "leader").count(),
        1,
        "{modes:?}"
    );
    assert_eq!(
        modes.iter().filter(|m| *m == "follower").count(),
        2,
        "{modes:?}"
    );

    let rt = common::runtime();
    rt.block_on(create(
        &ensemble.node(0).connect_string(),
        "/lockbench-e",
        b"on-0",
    ));
    assert_eq!(
        rt.block_on(read(&ensemble.node(1).connect_string(), "/lockbench-e")),
        b"on-0"
    );
    assert_eq!(
        rt.block_on(read(&ensemble.node(2).connect_string(), "/lockbench-e")),
        b"on-0"
    );

    let pids = ensemble.pids();
    drop(ensemble);
    pids.into_iter().for_each(common::assert_gone);
}

#[test]
fn zookeeper_ensemble_elects_a_new_leader_when_the_leader_dies() {
    let ensemble = ZkEnsemble::start(3).unwrap();
    let old = ensemble.leader().expect("a leader after start");
    ensemble.kill(old).unwrap();
    let killed_at = Instant::now();
    let new = ensemble
        .wait_for_leader(Duration::from_secs(10))
        .expect("a new leader within 10 s");
    let elapsed = killed_at.elapsed();
    eprintln!("zookeeper new leader after {} ms", elapsed.as_millis());
    assert_ne!(new, old);
    assert!(elapsed < Duration::from_secs(10));

    let survivors: Vec<String> = (0..3)
        .filter(|&i| i != old)
        .map(|i| ensemble.node(i).connect_string())
        .collect();
    let rt = common::runtime();
    rt.block_on(create(&survivors[0], "/lockbench-after", b"failover"));
    assert_eq!(
        rt.block_on(read(&survivors[1], "/lockbench-after")),
        b"failover"
    );
}
