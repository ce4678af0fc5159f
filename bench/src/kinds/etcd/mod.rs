//! The etcd kind: an etcd cluster: its flag and endpoints, its version probe and how lockbench
//! starts one.

pub mod case_servers;
mod check;
pub mod counters;
pub mod held;

use lockbench_servers::{EtcdServer, probe};

use super::{
    KindEntry, PROBE_TIMEOUT, ServerEntry, ServerFaults, ServerKind, Started, no_proxy_address,
};
use crate::kinds::address;
use crate::kinds::endpoints::required_list;

/// The kind's id, as the strategy registry names it.
pub const KIND: ServerKind = ServerKind::Etcd;

/// The etcd kind.
pub(super) static ETCD: KindEntry = KindEntry {
    kind: KIND,
    distributed: true,
    in_driver_process: false,
    server: Some(ServerEntry {
        flag: "etcd",
        value_name: "URLS",
        help: "Use this etcd instead of starting one: http://host:port, or \
               https://[user[:pass]@]host:port?ca=ca.pem (comma-separated). The password may come \
               from LOCKBENCH_ETCD_PASSWORD.",
        secret_variable: "LOCKBENCH_ETCD_PASSWORD",
        fill_secret: address::fill_etcd_secret,
        sockets: address::etcd_sockets,
        as_endpoint: str::to_owned,
        version: |address, first| {
            if address::is_tls(address) {
                return Ok(None);
            }
            Ok(probe::http_get(first, "/version", PROBE_TIMEOUT)
                .ok()
                .and_then(|r| json_field(&r.body, "etcdserver")))
        },
        checked_by_client: |_| true,
        client_check: Some(check::through_client),
        client_addresses: |endpoints| {
            required_list(&endpoints.etcd, "etcd server").map(<[String]>::to_vec)
        },
        user_is_no_secret: false,
        peers_read_password: false,
        many_servers_behind: |_| None,
        start: || Ok(one_server!(EtcdServer::start()?, endpoint, client_addr)),
        set_endpoint: |endpoints, address| {
            endpoints.etcd = address.split(',').map(str::to_owned).collect();
        },
        proxied_sockets: |endpoints| {
            if endpoints.etcd.is_empty() {
                return Err(no_proxy_address("etcd"));
            }
            address::etcd_sockets(&endpoints.etcd.join(","))
        },
        via_proxies: |endpoints, proxies| {
            endpoints.etcd = endpoints
                .etcd
                .iter()
                .zip(proxies)
                .map(|(endpoint, proxy)| {
                    let endpoint = if endpoint.contains("://") {
                        endpoint.clone()
                    } else {
                        format!("http://{endpoint}")
                    };
                    address::address_via(&endpoint, *proxy)
                })
                .collect();
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

fn json_field(body: &str, field: &str) -> Option<String> {
    let value: serde_json::Value = serde_json::from_str(body).ok()?;
    value.get(field)?.as_str().map(str::to_owned)
}
