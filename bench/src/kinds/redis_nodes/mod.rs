//! The Redis-nodes kind: N independent Redis servers, Redlock's masters (5 when lockbench starts
//! them): their flag and addresses, their version probe and how lockbench starts them.

pub mod case_servers;
pub mod counters;
pub mod held;

use lockbench_servers::{RedisNodeOptions, RedisNodes, probe};

use super::redis::redis_version;
use super::{
    KindEntry, Monitor, PROBE_TIMEOUT, ServerEntry, ServerFaults, ServerKind, Started,
    no_proxy_address,
};
use crate::backends::address;
use crate::kinds::endpoints::required_list;

/// The kind's id, as the strategy registry names it.
pub const KIND: ServerKind = ServerKind::RedisNodes;

/// The Redis-nodes kind.
pub(super) static REDIS_NODES: KindEntry = KindEntry {
    kind: KIND,
    distributed: true,
    in_driver_process: false,
    server: Some(ServerEntry {
        flag: "redis-nodes",
        value_name: "URLS",
        help: "Use these independent Redis servers as Redlock's nodes instead of starting five \
               (URLs as for --redis, comma-separated).",
        secret_variable: "LOCKBENCH_REDIS_PASSWORD",
        fill_secret: address::fill_redis_secret,
        sockets: |address| {
            address
                .split(',')
                .map(|url| address::redis_socket(url.trim()))
                .collect()
        },
        // One URL per node, as strategies take them (`host:port` becomes `redis://host:port/`).
        as_endpoint: |address| {
            address
                .split(',')
                .map(str::trim)
                .map(|url| {
                    if url.contains("://") {
                        url.to_owned()
                    } else {
                        format!("redis://{url}/")
                    }
                })
                .collect::<Vec<_>>()
                .join(",")
        },
        version: |address, _| {
            let mut version = None;
            for url in address.split(',') {
                version = redis_version(url.trim())?;
            }
            Ok(version)
        },
        checked_by_client: |_| false,
        client_check: None,
        client_addresses: |endpoints| {
            required_list(&endpoints.redis_nodes, "independent redis nodes").map(<[String]>::to_vec)
        },
        user_is_no_secret: false,
        many_servers_behind: |_| None,
        start: || {
            let nodes =
                RedisNodes::start(RedisNodes::DEFAULT_COUNT, RedisNodeOptions::default(), None)?;
            let version =
                probe::resp_command(nodes.node(0).addr(), &["INFO", "server"], PROBE_TIMEOUT)
                    .ok()
                    .and_then(|info| {
                        lockbench_servers::redis::info_field(&info, "redis_version")
                            .map(str::to_owned)
                    })
                    .unwrap_or_default();
            Ok(Started {
                address: nodes.urls().join(","),
                sockets: nodes.nodes().iter().map(|n| n.addr()).collect(),
                pids: nodes.nodes().iter().map(|n| n.pid()).collect(),
                version,
                startup: nodes.nodes().iter().map(|n| n.startup()).sum(),
                handle: Box::new(nodes),
            })
        },
        set_endpoint: |endpoints, address| {
            endpoints.redis_nodes = address.split(',').map(str::to_owned).collect();
        },
        proxied_sockets: |endpoints| {
            if endpoints.redis_nodes.is_empty() {
                return Err(no_proxy_address("redis-nodes"));
            }
            endpoints
                .redis_nodes
                .iter()
                .map(|url| address::redis_socket(url))
                .collect()
        },
        via_proxies: |endpoints, proxies| {
            endpoints.redis_nodes = endpoints
                .redis_nodes
                .iter()
                .zip(proxies)
                .map(|(url, proxy)| address::redis_url_via(url, *proxy))
                .collect();
        },
        faults: ServerFaults {
            redis_commands: false,
            end_sessions: None,
            own: case_servers::STARTS,
        },
        monitor: Some(Monitor {
            renewals_after_unlock: false,
        }),
        requests_from_tally: true,
        counters: counters::read,
        held: held::HELD,
    }),
};
