//! The Redis kind: one Redis server (or the primary its Sentinels name, or a Redis Cluster's
//! nodes): its flag and addresses, its version probe and how lockbench starts one. The entry is
//! written once for any program speaking Redis's protocol (`Program`): the Valkey kind is the
//! same entry on `valkey-server`.

pub mod case_servers;
mod check;
pub mod counters;
pub mod held;

use std::net::SocketAddr;

use lockbench_servers::redis::info_field;
use lockbench_servers::{Flavor, RedisOptions, RedisServer};

use super::{
    CaseStarts, EndpointAddrs, KindEntry, Monitor, PROBE_TIMEOUT, REDIS_PRIMARY_COMMANDS,
    ServerEntry, ServerFaults, ServerKind, Started, no_proxy_address,
};
use crate::kinds::address;
use crate::kinds::endpoints::required;

/// The kind's id, as the strategy registry names it.
pub const KIND: ServerKind = ServerKind::Redis;

/// A server program speaking Redis's protocol, and where its addresses sit among a run's endpoints:
/// what the Redis kind's entry, probes and per-case set-ups take from it.
pub(crate) trait Program: 'static {
    /// Redis or Valkey.
    const FLAVOR: Flavor;
    /// Its kind.
    const KIND: ServerKind;
    /// The kind of its independent servers (Redlock's nodes).
    const NODES: ServerKind;
    /// Swaps its fields of `endpoints` with the Redis ones (nothing for Redis itself), so the Redis
    /// kind's address handling runs on them; twice is no change.
    fn swap_into_redis_fields(endpoints: &mut EndpointAddrs);
}

/// Redis itself.
pub(crate) struct RedisProgram;

impl Program for RedisProgram {
    const FLAVOR: Flavor = Flavor::Redis;
    const KIND: ServerKind = KIND;
    const NODES: ServerKind = ServerKind::RedisNodes;
    fn swap_into_redis_fields(_: &mut EndpointAddrs) {}
}

/// The Redis kind.
pub(super) static REDIS: KindEntry = entry::<RedisProgram>(
    "redis",
    "Use this Redis instead of starting one: redis://[user[:pass]@]host:port[/db], \
     rediss://…/?ca=ca.pem for TLS, redis+sentinel://host:port[,…]/service (the primary its \
     Sentinels name) or redis+cluster://host:port[,…] (a Redis Cluster's nodes); \
     rediss+sentinel:// and rediss+cluster:// with ?ca= for TLS. The password may come from \
     LOCKBENCH_REDIS_PASSWORD.",
    "LOCKBENCH_REDIS_PASSWORD",
    case_servers::STARTS,
);

/// The entry of program `P`'s kind, with its flag (`--flag`), help, password variable and per-case
/// set-ups.
pub(crate) const fn entry<P: Program>(
    flag: &'static str,
    help: &'static str,
    secret_variable: &'static str,
    own: CaseStarts,
) -> KindEntry {
    KindEntry {
        kind: P::KIND,
        distributed: true,
        in_driver_process: false,
        server: Some(ServerEntry {
            flag,
            value_name: "URL",
            help,
            secret_variable,
            fill_secret: address::fill_redis_secret,
            sockets: redis_sockets,
            as_endpoint: str::to_owned,
            version: version::<P>,
            checked_by_client,
            client_check: Some(check::through_client::<P>),
            client_addresses: client_addresses::<P>,
            user_is_no_secret: false,
            peers_read_password: false,
            many_servers_behind: many_servers_behind::<P>,
            start: start::<P>,
            set_endpoint: set_endpoint::<P>,
            proxied_sockets: proxied_sockets::<P>,
            via_proxies: via_proxies::<P>,
            faults: ServerFaults {
                commands: REDIS_PRIMARY_COMMANDS,
                end_sessions: None,
                own,
            },
            monitor: Some(Monitor {
                renewals_after_unlock: true,
            }),
            requests_from_tally: true,
            counters: counters::read,
            held: held::HELD,
        }),
    }
}

/// The version of the server at `address` (through the strategies' own client for ACL users and TLS:
/// a wrong password or an untrusted certificate is bad input, reported before anything is measured).
fn version<P: Program>(address: &str, _: SocketAddr) -> Result<Option<String>, String> {
    if checked_by_client(address) {
        // Checked through the strategies' own client, once the run is set up.
        Ok(None)
    } else if address::is_sentinel(address) {
        server_version(P::FLAVOR, &address::sentinel_primary_url(address)?)
    } else {
        server_version(P::FLAVOR, address)
    }
}

/// `P`'s address in a run's `endpoints`, for a peer's adapter.
fn client_addresses<P: Program>(
    endpoints: &EndpointAddrs,
) -> Result<Vec<String>, lockers::LockError> {
    let what = format!("{} server", P::KIND.name());
    required(redis_fields::<P>(endpoints).redis.as_deref(), &what).map(|a| vec![a.to_owned()])
}

/// What `P`'s address in `endpoints` stands for when it is many servers (a cluster).
fn many_servers_behind<P: Program>(endpoints: &EndpointAddrs) -> Option<&'static str> {
    let cluster = match P::FLAVOR {
        Flavor::Redis => "a Redis Cluster",
        Flavor::Valkey => "a Valkey cluster",
    };
    redis_fields::<P>(endpoints)
        .redis
        .as_deref()
        .is_some_and(address::is_cluster)
        .then_some(cluster)
}

/// Starts one `P` server on loopback.
fn start<P: Program>() -> Result<Started, lockbench_servers::ServerError> {
    let server = RedisServer::start_with(RedisOptions::of(P::FLAVOR))?;
    Ok(one_server!(server, url, addr))
}

/// Puts `P`'s `address` into `endpoints`.
fn set_endpoint<P: Program>(endpoints: &mut EndpointAddrs, address: &str) {
    P::swap_into_redis_fields(endpoints);
    endpoints.redis = Some(address.to_owned());
    // Behind Sentinel and in a cluster there are replicas: Redisson's sentinel and cluster modes
    // WAIT for them.
    endpoints.redis_replicated = address::is_sentinel(address) || address::is_cluster(address);
    P::swap_into_redis_fields(endpoints);
}

/// The socket of `P`'s server a proxy stands in front of.
fn proxied_sockets<P: Program>(endpoints: &EndpointAddrs) -> Result<Vec<SocketAddr>, String> {
    let url = redis_fields::<P>(endpoints)
        .redis
        .ok_or_else(|| no_proxy_address(P::KIND.name()))?;
    if address::is_sentinel(&url) {
        return Err(
            "a proxy cannot stand between clients and the primary their Sentinels \
                    name: network faults need a direct server address"
                .into(),
        );
    }
    if address::is_cluster(&url) {
        return Err(
            "a proxy cannot stand between clients and a cluster's nodes (MOVED answers \
             name the nodes themselves): network faults need a direct server address"
                .into(),
        );
    }
    Ok(vec![address::redis_socket(&url)?])
}

/// `endpoints` with `P`'s server replaced by its proxy.
fn via_proxies<P: Program>(endpoints: &mut EndpointAddrs, proxies: &[SocketAddr]) {
    P::swap_into_redis_fields(endpoints);
    if let (Some(url), Some(proxy)) = (&endpoints.redis, proxies.first()) {
        endpoints.redis = Some(address::redis_url_via(url, *proxy));
    }
    P::swap_into_redis_fields(endpoints);
}

/// `endpoints` with `P`'s fields in the Redis ones.
fn redis_fields<P: Program>(endpoints: &EndpointAddrs) -> EndpointAddrs {
    let mut fields = endpoints.clone();
    P::swap_into_redis_fields(&mut fields);
    fields
}

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

/// Connects to the `flavor` server at `url` as the strategies do and reads its version (`None` if
/// `INFO` is not allowed). The error is one line without the password.
pub(super) fn server_version(flavor: Flavor, url: &str) -> Result<Option<String>, String> {
    let client = lockers::redis::connection::open_client(url).map_err(|e| e.to_string())?;
    let mut connection = client
        .get_connection_with_timeout(PROBE_TIMEOUT)
        .map_err(|e| format!("cannot connect: {e}"))?;
    let info: Option<String> = redis::cmd("INFO").arg("server").query(&mut connection).ok();
    info.map_or(Ok(None), |info| version_in(flavor, &info))
}

/// The `flavor` server's own version in its `INFO server` reply; an error when a Valkey is asked for
/// and the server is not one (it does not say `server_name:valkey`).
pub(crate) fn version_in(flavor: Flavor, info: &str) -> Result<Option<String>, String> {
    if flavor == Flavor::Valkey && info_field(info, "server_name") != Some("valkey") {
        let redis = info_field(info, "redis_version").unwrap_or("of an unknown version");
        return Err(format!(
            "not a Valkey server: it reports Redis {redis} and no server_name:valkey"
        ));
    }
    Ok(info_field(info, flavor.version_field()).map(str::to_owned))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_valkey_is_told_apart_by_its_server_name() {
        let valkey = "redis_version:7.2.4\r\nserver_name:valkey\r\nvalkey_version:9.1.2\r\n";
        let redis = "redis_version:7.0.15\r\n";
        assert_eq!(version_in(Flavor::Valkey, valkey), Ok(Some("9.1.2".into())));
        assert_eq!(version_in(Flavor::Redis, valkey), Ok(Some("7.2.4".into())));
        assert_eq!(version_in(Flavor::Redis, redis), Ok(Some("7.0.15".into())));
        let refused = version_in(Flavor::Valkey, redis).expect_err("not a Valkey");
        assert!(refused.contains("Redis 7.0.15"), "{refused}");
    }
}
