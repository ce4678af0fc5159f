//! The Redis-nodes kind: N independent Redis servers, Redlock's masters (5 when lockbench starts
//! them): their flag and addresses, their version probe and how lockbench starts them. The entry is
//! written once for any program speaking Redis's protocol (`Program`): the Valkey-nodes kind is
//! the same entry on `valkey-server`.

pub mod case_servers;
pub mod counters;
pub mod held;

use std::net::SocketAddr;

use lockbench_servers::{RedisNodeOptions, RedisNodes, RedisOptions, probe};

use super::redis::{Program, RedisProgram, server_version};
use super::{
    CaseStarts, EndpointAddrs, KindEntry, Monitor, PROBE_TIMEOUT, ServerEntry, ServerFaults,
    ServerKind, Started, no_proxy_address,
};
use crate::kinds::address;
use crate::kinds::endpoints::required_list;

/// The kind's id, as the strategy registry names it.
pub const KIND: ServerKind = ServerKind::RedisNodes;

/// The Redis-nodes kind.
pub(super) static REDIS_NODES: KindEntry = entry::<RedisProgram>(
    "redis-nodes",
    "Use these independent Redis servers as Redlock's nodes instead of starting five \
     (URLs as for --redis, comma-separated).",
    "LOCKBENCH_REDIS_PASSWORD",
    case_servers::STARTS,
);

/// The entry of independent `P` servers' kind, with its flag (`--flag`), help, password variable
/// and per-case set-ups.
pub(crate) const fn entry<P: Program>(
    flag: &'static str,
    help: &'static str,
    secret_variable: &'static str,
    own: CaseStarts,
) -> KindEntry {
    KindEntry {
        kind: P::NODES,
        distributed: true,
        in_driver_process: false,
        server: Some(ServerEntry {
            flag,
            value_name: "URLS",
            help,
            secret_variable,
            fill_secret: address::fill_redis_secret,
            sockets: |address| {
                address
                    .split(',')
                    .map(|url| address::redis_socket(url.trim()))
                    .collect()
            },
            as_endpoint,
            version: |address, _| {
                let mut version = None;
                for url in address.split(',') {
                    version = server_version(P::FLAVOR, url.trim())?;
                }
                Ok(version)
            },
            checked_by_client: |_| false,
            client_check: None,
            client_addresses: client_addresses::<P>,
            user_is_no_secret: false,
            peers_read_password: false,
            many_servers_behind: |_| None,
            start: start::<P>,
            set_endpoint: |endpoints, address| {
                P::swap_into_redis_fields(endpoints);
                endpoints.redis_nodes = address.split(',').map(str::to_owned).collect();
                P::swap_into_redis_fields(endpoints);
            },
            proxied_sockets: proxied_sockets::<P>,
            via_proxies: via_proxies::<P>,
            faults: ServerFaults {
                commands: &[],
                end_sessions: None,
                own,
            },
            monitor: Some(Monitor {
                renewals_after_unlock: false,
            }),
            requests_from_tally: true,
            counters: counters::read,
            held: held::HELD,
        }),
    }
}

/// One URL per node, as strategies take them (`host:port` becomes `redis://host:port/`).
fn as_endpoint(address: &str) -> String {
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
}

/// The nodes' addresses in a run's `endpoints`, for a peer's adapter.
fn client_addresses<P: Program>(
    endpoints: &EndpointAddrs,
) -> Result<Vec<String>, lockers::LockError> {
    let mut fields = endpoints.clone();
    P::swap_into_redis_fields(&mut fields);
    let what = format!("independent {} nodes", P::FLAVOR.name());
    required_list(&fields.redis_nodes, &what).map(<[String]>::to_vec)
}

/// Starts Redlock's nodes of `P` on loopback.
fn start<P: Program>() -> Result<Started, lockbench_servers::ServerError> {
    let options = RedisNodeOptions {
        redis: RedisOptions::of(P::FLAVOR),
        ..RedisNodeOptions::default()
    };
    let nodes = RedisNodes::start(RedisNodes::DEFAULT_COUNT, options, None)?;
    let version = probe::resp_command(nodes.node(0).addr(), &["INFO", "server"], PROBE_TIMEOUT)
        .ok()
        .and_then(|info| server_version_in(P::FLAVOR, &info))
        .unwrap_or_default();
    Ok(Started {
        address: nodes.urls().join(","),
        sockets: nodes.nodes().iter().map(|n| n.addr()).collect(),
        pids: nodes.nodes().iter().map(|n| n.pid()).collect(),
        version,
        startup: nodes.nodes().iter().map(|n| n.startup()).sum(),
        handle: Box::new(nodes),
    })
}

/// The version field of `flavor` in an `INFO server` reply.
fn server_version_in(flavor: lockbench_servers::Flavor, info: &str) -> Option<String> {
    lockbench_servers::redis::info_field(info, flavor.version_field()).map(str::to_owned)
}

/// The nodes' sockets a proxy each stands in front of.
fn proxied_sockets<P: Program>(endpoints: &EndpointAddrs) -> Result<Vec<SocketAddr>, String> {
    let mut fields = endpoints.clone();
    P::swap_into_redis_fields(&mut fields);
    if fields.redis_nodes.is_empty() {
        return Err(no_proxy_address(P::NODES.name()));
    }
    fields
        .redis_nodes
        .iter()
        .map(|url| address::redis_socket(url))
        .collect()
}

/// `endpoints` with the nodes replaced by their proxies.
fn via_proxies<P: Program>(endpoints: &mut EndpointAddrs, proxies: &[SocketAddr]) {
    P::swap_into_redis_fields(endpoints);
    endpoints.redis_nodes = endpoints
        .redis_nodes
        .iter()
        .zip(proxies)
        .map(|(url, proxy)| address::redis_url_via(url, *proxy))
        .collect();
    P::swap_into_redis_fields(endpoints);
}
