//! Real etcd children: a single member and a 3-member cluster serve reads and writes, elect a
//! new leader when the leader is killed, and die with their handle.
#![allow(clippy::unwrap_used)]

mod common;

use std::time::{Duration, Instant};

use lockbench_servers::{EtcdCluster, EtcdOptions, EtcdServer, ServerError, data_parent, poll};

async fn put(endpoint: &str, key: &str, value: &str) {
    let mut client = etcd_client::Client::connect([endpoint], None)
        .await
        .unwrap();
    client.put(key, value, None).await.unwrap();
}

async fn get(endpoint: &str, key: &str) -> Option<String> {
    let mut client = etcd_client::Client::connect([endpoint], None)
        .await
        .unwrap();
    let response = client.get(key, None).await.unwrap();
    response
        .kvs()
        .first()
        .map(|kv| kv.value_str().unwrap().to_owned())
}

#[test]
fn etcd_member_serves_writes_and_dies_on_drop() {
    let server = EtcdServer::start().unwrap();
    eprintln!("startup etcd: {} ms", server.startup().as_millis());
    eprintln!("etcd data dir: {}", server.data_dir().display());
    assert!(server.data_dir().starts_with(data_parent()));
    assert!(server.endpoint().starts_with("http://127.0.0.1:"));
    assert!(server.version().starts_with("3."), "{}", server.version());
    assert!(server.is_healthy());
    assert_eq!(server.is_leader(), Some(true));

    let rt = common::runtime();
    rt.block_on(put(&server.endpoint(), "lockbench/k", "v1"));
    assert_eq!(
        rt.block_on(get(&server.endpoint(), "lockbench/k"))
            .as_deref(),
        Some("v1")
    );

    let pid = server.pid();
    drop(server);
    common::assert_gone(pid);
}

#[test]
fn missing_etcd_names_the_install_command() {
    let err = EtcdServer::start_with(EtcdOptions {
        etcd: Some("/nonexistent/etcd".into()),
        ..EtcdOptions::default()
    })
    .unwrap_err();
    assert!(matches!(err, ServerError::Missing { .. }), "{err:?}");
    let text = err.to_string();
    assert!(text.contains("apt-get install -y etcd-server"), "{text}");
    assert_eq!(text.lines().count(), 1, "{text}");
}

#[test]
fn etcd_cluster_replicates_and_dies_on_drop() {
    let cluster = EtcdCluster::start(3).unwrap();
    eprintln!(
        "startup etcd cluster(3): {} ms",
        cluster.startup().as_millis()
    );
    assert_eq!(cluster.len(), 3);
    let endpoints = cluster.endpoints();
    assert_eq!(endpoints.len(), 3);
    assert!(cluster.leader().is_some());

    let rt = common::runtime();
    rt.block_on(put(&endpoints[0], "lockbench/c", "written-on-0"));
    // A linearizable read through another member sees the write.
    assert_eq!(
        rt.block_on(get(&endpoints[1], "lockbench/c")).as_deref(),
        Some("written-on-0")
    );
    assert_eq!(
        rt.block_on(get(&endpoints[2], "lockbench/c")).as_deref(),
        Some("written-on-0")
    );

    let pids = cluster.pids();
    drop(cluster);
    pids.into_iter().for_each(common::assert_gone);
}

#[test]
fn etcd_cluster_elects_a_new_leader_when_the_leader_dies() {
    let cluster = EtcdCluster::start(3).unwrap();
    let old = cluster.leader().expect("a leader after start");
    cluster.kill(old).unwrap();
    assert!(!cluster.member(old).is_running());
    let killed_at = Instant::now();
    let new = cluster
        .wait_for_leader(Duration::from_secs(10))
        .expect("a new leader within 10 s");
    let elapsed = killed_at.elapsed();
    eprintln!("etcd new leader after {} ms", elapsed.as_millis());
    assert_ne!(new, old);
    assert!(elapsed < Duration::from_secs(10));

    let survivors: Vec<String> = (0..3)
        .filter(|&i| i != old)
        .map(|i| cluster.member(i).endpoint())
        .collect();
    let rt = common::runtime();
    rt.block_on(put(&survivors[0], "lockbench/after", "failover"));
    assert_eq!(
        rt.block_on(get(&survivors[1], "lockbench/after"))
            .as_deref(),
        Some("failover")
    );
}

#[test]
fn paused_etcd_member_is_unhealthy_until_resumed() {
    let server = EtcdServer::start().unwrap();
    server.pause().unwrap();
    let began = Instant::now();
    assert!(!server.is_healthy());
    assert!(began.elapsed() >= Duration::from_millis(400));
    server.resume().unwrap();
    // Right after SIGCONT etcd catches up on missed ticks; give it a moment.
    assert!(
        poll::until(Duration::from_secs(5), || server.is_healthy()),
        "still unhealthy after resume"
    );
}
