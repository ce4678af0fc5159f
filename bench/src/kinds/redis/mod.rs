//! The Redis kind: one Redis server (or the primary its Sentinels name, or a Redis Cluster's
//! nodes): its flag and addresses, its version probe and how lockbench starts one.

pub mod case_servers;
mod check;
pub mod counters;
pub mod held;

use std::net::SocketAddr;

use lockbench_servers::RedisServer;

use super::{
    KindEntry, Monitor, PROBE_TIMEOUT, ServerEntry, ServerFaults, ServerKind, Started,
    no_proxy_address,
};
use crate::backends::address;
use crate::kinds::endpoints::required;

/// The kind's id, as the strategy registry names it.
pub const KIND: ServerKind = ServerKind::Redis;

/// The Redis kind.
pub(super) static REDIS: KindEntry = KindEntry {
    kind: KIND,
    distributed: true,
    in_driver_process: false,
    server: Some(ServerEntry {
        flag: "redis",
        value_name: "URL",
        help: "Use this Redis instead of starting one: redis://[user[:pass]@]host:port[/db], \
               rediss://…/?ca=ca.pem for TLS, redis+sentinel://host:port[,…]/service (the primary its \
               Sentinels name) or redis+cluster://host:port[,…] (a Redis Cluster's nodes); \
               rediss+sentinel:// and rediss+cluster:// with ?ca= for TLS. The password may come from \
               LOCKBENCH_REDIS_PASSWORD.",
        secret_variable: "LOCKBENCH_REDIS_PASSWORD",
        fill_secret: address::fill_redis_secret,
        sockets: redis_sockets,
        as_endpoint: str::to_owned,
        version: |address, _| {
            // Through the strategies' own client (ACL user, TLS): a wrong password or an untrusted
            // certificate is bad input, reported before anything is measured.
            if checked_by_client(address) {
                // Checked through the strategies' own client, once the run is set up.
                Ok(None)
            } else if address::is_sentinel(address) {
                redis_version(&address::sentinel_primary_url(address)?)
            } else {
                redis_version(address)
            }
        },
        checked_by_client,
        client_check: Some(check::through_client),
        client_addresses: |endpoints| {
            required(endpoints.redis.as_deref(), "redis server").map(|a| vec![a.to_owned()])
        },
        user_is_no_secret: false,
        many_servers_behind: |endpoints| {
            endpoints
                .redis
                .as_deref()
                .is_some_and(address::is_cluster)
                .then_some("a Redis Cluster")
        },
        start: || Ok(one_server!(RedisServer::start()?, url, addr)),
        set_endpoint: |endpoints, address| {
            endpoints.redis = Some(address.to_owned());
            // Behind Sentinel and in a cluster there are replicas: Redisson's sentinel and cluster
            // modes WAIT for them.
            endpoints.redis_replicated =
                address::is_sentinel(address) || address::is_cluster(address);
        },
        proxied_sockets: |endpoints| {
            let url = endpoints
                .redis
                .as_deref()
                .ok_or_else(|| no_proxy_address("redis"))?;
            if address::is_sentinel(url) {
                return Err(
                    "a proxy cannot stand between clients and the primary their Sentinels \
                            name: network faults need a direct Redis address"
                        .into(),
                );
            }
            if address::is_cluster(url) {
                return Err(
                    "a proxy cannot stand between clients and a cluster's nodes (MOVED answers \
                     name the nodes themselves): network faults need a direct Redis address"
                        .into(),
                );
            }
            Ok(vec![address::redis_socket(url)?])
        },
        via_proxies: |endpoints, proxies| {
            if let (Some(url), Some(proxy)) = (&endpoints.redis, proxies.first()) {
                endpoints.redis = Some(address::redis_url_via(url, *proxy));
            }
        },
        faults: ServerFaults {
            redis_commands: true,
            end_sessions: None,
            own: case_servers::STARTS,
        },
        monitor: Some(Monitor {
            renewals_after_unlock: true,
        }),
        requests_from_tally: true,
        counters: counters::read,
        held: held::HELD,
    }),
};

/// The sockets of a given Redis address. A cluster's counters are its masters' summed. Over TLS the
/// plain probes can read neither a cluster nor Sentinels: their hosts only.
fn redis_sockets(address: &str) -> Result<Vec<SocketAddr>, String> {
    if address::is_tls(address) && !address.trim().starts_with("rediss://") {
        address::hosts_of(address)
    } else if address::is_cluster(address) {
        address::cluster_masters(address)
    } else {
        address::redis_socket(address).map(|a| vec![a])
    }
}

/// Whether a Redis address is checked through the strategies' own client rather than a plain probe: a
/// cluster (its layout comes from the seeds) and Sentinels over TLS.
fn checked_by_client(address: &str) -> bool {
    address::is_cluster(address) || (address::is_sentinel(address) && address::is_tls(address))
}

/// Connects to the Redis at `url` as the strategies do and reads its version (`None` if `INFO` is
/// not allowed). The error is one line without the password.
pub(super) fn redis_version(url: &str) -> Result<Option<String>, String> {
    let client = lockers::redis::connection::open_client(url).map_err(|e| e.to_string())?;
    let mut connection = client
        .get_connection_with_timeout(PROBE_TIMEOUT)
        .map_err(|e| format!("cannot connect: {e}"))?;
    let info: Option<String> = redis::cmd("INFO").arg("server").query(&mut connection).ok();
    Ok(info.and_then(|info| {
        lockbench_servers::redis::info_field(&info, "redis_version").map(str::to_owned)
    }))
}
