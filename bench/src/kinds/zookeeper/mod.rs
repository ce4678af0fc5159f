//! The ZooKeeper kind: a ZooKeeper ensemble: its flag and connect string, its version probe and
//! how lockbench starts one.

pub mod case_servers;
pub mod counters;
pub mod held;

use std::net::SocketAddr;

use lockbench_servers::{ZkServer, probe};

use super::{
    KindEntry, PROBE_TIMEOUT, ServerEntry, ServerFaults, ServerKind, Started, no_proxy_address,
};
use crate::kinds::address;
use crate::kinds::endpoints::required;

/// The kind's id, as the strategy registry names it.
pub const KIND: ServerKind = ServerKind::ZooKeeper;

/// The ZooKeeper kind.
pub(super) static ZOOKEEPER: KindEntry = KindEntry {
    kind: KIND,
    distributed: true,
    in_driver_process: false,
    server: Some(ServerEntry {
        flag: "zk",
        value_name: "HOSTS",
        help: "Use this ZooKeeper instead of starting one: [user:pass@]host:port[,host:port] (digest \
               auth; or LOCKBENCH_ZK_AUTH=user:pass).",
        secret_variable: "LOCKBENCH_ZK_AUTH",
        fill_secret: address::fill_zk_secret,
        sockets: address::zk_sockets,
        as_endpoint: str::to_owned,
        version: |_, first| {
            Ok(probe::four_letter_word(first, "srvr", PROBE_TIMEOUT)
                .ok()
                .and_then(|srvr| {
                    srvr.lines()
                        .find_map(|l| l.strip_prefix("Zookeeper version: "))
                        .map(|v| v.split([',', '-']).next().unwrap_or(v).trim().to_owned())
                }))
        },
        checked_by_client: |_| false,
        client_check: None,
        client_addresses: |endpoints| {
            required(endpoints.zookeeper.as_deref(), "zookeeper server").map(|a| vec![a.to_owned()])
        },
        user_is_no_secret: false,
        peers_read_password: false,
        many_servers_behind: |_| None,
        start: || Ok(one_server!(ZkServer::start()?, connect_string, addr)),
        set_endpoint: |endpoints, address| endpoints.zookeeper = Some(address.to_owned()),
        proxied_sockets: |endpoints| {
            address::zk_sockets(
                endpoints
                    .zookeeper
                    .as_deref()
                    .ok_or_else(|| no_proxy_address("zookeeper"))?,
            )
        },
        via_proxies: |endpoints, proxies| {
            if let Some(connect) = &endpoints.zookeeper {
                // Digest credentials before the hosts, a chroot after them.
                let (credentials, hosts) = match connect.rfind('@') {
                    Some(at) => connect.split_at(at + 1),
                    None => ("", connect.as_str()),
                };
                let chroot = hosts.find('/').map(|i| &hosts[i..]).unwrap_or("");
                let proxies: Vec<String> = proxies.iter().map(SocketAddr::to_string).collect();
                endpoints.zookeeper = Some(format!("{credentials}{}{chroot}", proxies.join(",")));
            }
        },
        faults: ServerFaults {
            commands: &[],
            end_sessions: None,
            own: case_servers::STARTS,
        },
        monitor: None,
        requests_from_tally: false,
        counters: counters::read,
        held: held::HELD,
    }),
};
