//! Server addresses as users write them (`--redis redis://host:port/0`, `--etcd http://a:2379,http://b:2379`,
//! `--zk host:2181,host2:2181/chroot`), reduced to the socket addresses lockbench can probe. Credentials
//! and TLS files in them (`rediss://user:pass@host:port/?ca=ca.pem`, see [`lockers::address`]) are
//! skipped here; errors never repeat them. A Sentinel address (`redis+sentinel://h1,h2/service`) is
//! reduced to the primary its Sentinels name when asked.

use std::net::{SocketAddr, ToSocketAddrs};
use std::time::Duration;

use lockbench_servers::probe::{resp_command, resp_command_as};
use lockers::address::{self, Credentials};

/// The address without credentials and TLS parameters.
fn bare(address: &str) -> Result<String, String> {
    address::split(address)
        .map(|parts| parts.bare)
        .map_err(|e| e.to_string())
}

/// The user and password inside an address, if any.
pub fn credentials(address: &str) -> Option<Credentials> {
    address::split(address).ok()?.credentials
}

/// The scheme of a Redis address resolved through Sentinels.
const SENTINEL_SCHEME: &str = "redis+sentinel://";
/// How long each Sentinel gets to name the primary.
const SENTINEL_TIMEOUT: Duration = Duration::from_secs(2);

/// Whether a Redis URL names Sentinels rather than a server (`redis+sentinel://`,
/// `rediss+sentinel://`).
pub fn is_sentinel(url: &str) -> bool {
    url.trim().starts_with(SENTINEL_SCHEME) || url.trim().starts_with("rediss+sentinel://")
}

/// The scheme of a Redis Cluster address (its nodes as seeds).
const CLUSTER_SCHEME: &str = "redis+cluster://";
/// The same over TLS.
const TLS_CLUSTER_SCHEME: &str = "rediss+cluster://";

/// Whether a Redis URL names a Redis Cluster's nodes (`redis+cluster://`, `rediss+cluster://`).
pub fn is_cluster(url: &str) -> bool {
    url.trim().starts_with(CLUSTER_SCHEME) || url.trim().starts_with(TLS_CLUSTER_SCHEME)
}

/// The hosts of a cluster or Sentinel address (a cluster's seeds, the Sentinels), resolved.
pub fn hosts_of(url: &str) -> Result<Vec<SocketAddr>, String> {
    let default_port = if is_sentinel(url) { 26379 } else { 6379 };
    let url = bare(url)?;
    let rest = url.split_once("://").map_or("", |(_, rest)| rest);
    let hosts = rest.split(['/', '?']).next().unwrap_or("");
    hosts
        .split(',')
        .map(|h| resolve(h.trim(), default_port))
        .collect()
}

/// Whether a Redis URL asks for TLS (`rediss://`): lockbench's plain probes cannot read such a server.
pub fn is_tls(url: &str) -> bool {
    [
        "rediss://",
        "rediss+cluster://",
        "rediss+sentinel://",
        "https://",
    ]
    .iter()
    .any(|scheme| url.trim().starts_with(scheme))
}

/// ZooKeeper's `user:password` (`LOCKBENCH_ZK_AUTH`) before a connect string without one.
pub fn fill_zk_secret(address: &str, secret: &str) -> Result<String, String> {
    if address.contains('@') {
        Ok(address.to_owned())
    } else if let Some((user, password)) = secret.split_once(':') {
        Ok(format!("{}:{}@{address}", encode(user), encode(password)))
    } else {
        Err("must be user:password".to_owned())
    }
}

/// A Redis URL's user (`redis://app@host` → `app:<pw>@`, or the `default` user for `redis://host`),
/// in each URL of a list; once in a Sentinel or cluster address.
pub fn fill_redis_secret(address: &str, secret: &str) -> Result<String, String> {
    fill_each(address, secret, true)
}

/// Each etcd endpoint's user (`https://root@host`).
pub fn fill_etcd_secret(address: &str, secret: &str) -> Result<String, String> {
    fill_each(address, secret, false)
}

fn fill_each(address: &str, secret: &str, default_user: bool) -> Result<String, String> {
    if is_sentinel(address) || is_cluster(address) {
        // One address with many hosts: the servers' password goes in once.
        return fill(address.trim(), secret, true)
            .ok_or_else(|| "is set but cannot be filled in".to_owned());
    }
    address
        .split(',')
        .map(|one| fill(one.trim(), secret, default_user))
        .collect::<Option<Vec<_>>>()
        .map(|all| all.join(","))
        .ok_or_else(|| "is set but the address names no user (write user@host)".to_owned())
}

/// One address with `password` filled in; `None` when it has no user and `default_user` is false.
fn fill(address: &str, password: &str, default_user: bool) -> Option<String> {
    let (scheme, rest) = match address.find("://") {
        Some(i) => address.split_at(i + 3),
        None => ("", address),
    };
    let end = rest.find('?').unwrap_or(rest.len());
    match rest[..end].rfind('@') {
        Some(at) if rest[..at].contains(':') => Some(address.to_owned()),
        Some(at) => Some(format!(
            "{scheme}{}:{}{}",
            &rest[..at],
            encode(password),
            &rest[at..]
        )),
        None if default_user => Some(format!("{scheme}:{}@{rest}", encode(password))),
        None => None,
    }
}

/// Percent-encodes everything but unreserved characters, so a secret fits in an address.
fn encode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// The socket address inside a Redis URL (`redis://[user:pass@]host[:port][/db]` or `host:port`);
/// for a Sentinel address, the primary its Sentinels name now; for a cluster address, its first
/// master now.
pub fn redis_socket(url: &str) -> Result<SocketAddr, String> {
    if is_sentinel(url) {
        return sentinel_primary(url);
    }
    if is_cluster(url) {
        return cluster_masters(url).map(|masters| masters[0]);
    }
    if let Some((scheme, _)) = url.trim().split_once("://")
        && !matches!(scheme, "redis" | "rediss")
    {
        return Err(format!(
            "unknown scheme {scheme}:// (use redis://, rediss://, redis+sentinel:// or redis+cluster://)"
        ));
    }
    let url = bare(url)?;
    let url = url.as_str();
    let rest = url
        .strip_prefix("redis://")
        .or_else(|| url.strip_prefix("rediss://"))
        .unwrap_or(url);
    let authority = rest.split('/').next().unwrap_or("");
    let host_port = authority.rsplit('@').next().unwrap_or("");
    resolve(host_port, 6379)
}

/// The socket addresses of comma-separated etcd endpoints (`http://host:port`).
pub fn etcd_sockets(endpoints: &str) -> Result<Vec<SocketAddr>, String> {
    endpoints
        .split(',')
        .map(|endpoint| {
            let endpoint = bare(endpoint.trim())?;
            let endpoint = endpoint.as_str();
            let rest = endpoint
                .strip_prefix("http://")
                .or_else(|| endpoint.strip_prefix("https://"))
                .unwrap_or(endpoint);
            resolve(rest.trim_end_matches('/'), 2379)
        })
        .collect()
}

/// The socket addresses of a ZooKeeper connect string (`host:port[,host:port][/chroot]`).
pub fn zk_sockets(connect: &str) -> Result<Vec<SocketAddr>, String> {
    let connect = bare(connect)?;
    let hosts = connect.split('/').next().unwrap_or("");
    hosts.split(',').map(|h| resolve(h.trim(), 2181)).collect()
}

/// The socket address inside a PostgreSQL URL (`postgres://[user[:pass]@]host[:port][/db][?…]`,
/// `postgresql://` too; port 5432 by default).
pub fn postgres_socket(url: &str) -> Result<SocketAddr, String> {
    url_socket(
        url,
        &["postgres://", "postgresql://"],
        5432,
        "expected postgres://user@host:port/db",
    )
}

/// The socket address inside a MySQL URL (`mysql://[user[:pass]@]host[:port]/db[?…]`, `mariadb://`
/// too; port 3306 by default).
pub fn mysql_socket(url: &str) -> Result<SocketAddr, String> {
    url_socket(
        url,
        &["mysql://", "mariadb://"],
        3306,
        "expected mysql://user@host:port/db (or mariadb://)",
    )
}

/// The socket address inside a URL of one of `schemes` (`scheme[user[:pass]@]host[:port][/…][?…]`,
/// `default_port` when it names none); `expected` when the scheme is none of them.
fn url_socket(
    url: &str,
    schemes: &[&str],
    default_port: u16,
    expected: &str,
) -> Result<SocketAddr, String> {
    let url = url.trim();
    let rest = schemes
        .iter()
        .find_map(|scheme| url.strip_prefix(scheme))
        .ok_or(expected)?;
    let authority = rest.split(['/', '?']).next().unwrap_or("");
    let host_port = authority.rsplit('@').next().unwrap_or("");
    resolve(host_port, default_port)
}

/// Asks the Sentinels of `url` in turn which server is the primary of its service
/// (`SENTINEL GET-MASTER-ADDR-BY-NAME`, without credentials, or with the address's password when a
/// Sentinel answers `NOAUTH`).
fn sentinel_primary(url: &str) -> Result<SocketAddr, String> {
    let password = credentials(url).map(|c| c.password);
    let url = bare(url)?;
    let rest = &url[SENTINEL_SCHEME.len()..];
    let (hosts, path) = rest
        .split_once('/')
        .ok_or("the service name is missing (…/service)")?;
    let service = path.split('/').next().unwrap_or_default();
    let mut why = Vec::new();
    for host in hosts.split(',') {
        let answer = resolve(host.trim(), 26379).and_then(|sentinel| {
            let ask = ["SENTINEL", "GET-MASTER-ADDR-BY-NAME", service];
            match (resp_command(sentinel, &ask, SENTINEL_TIMEOUT), &password) {
                (Err(e), Some(password)) if e.to_string().contains("NOAUTH") => {
                    let login = Some(("default", password.as_str()));
                    resp_command_as(sentinel, login, &ask, SENTINEL_TIMEOUT)
                }
                (answer, _) => answer,
            }
            .map_err(|e| e.to_string())
        });
        match answer.as_deref().map(|text| text.split_once('\n')) {
            Ok(Some((ip, port))) => return resolve(&format!("{ip}:{port}"), 6379),
            Ok(None) => why.push(format!("{host}: does not know {service:?}")),
            Err(e) => why.push(format!("{host}: {e}")),
        }
    }
    Err(format!("no Sentinel named a primary ({})", why.join("; ")))
}

/// The masters of the cluster at `url` now (serving at least one slot, not failed), as the first
/// seed that answers `CLUSTER NODES` lists them (logged in with the address's user and password).
pub fn cluster_masters(url: &str) -> Result<Vec<SocketAddr>, String> {
    let login = credentials(url);
    let auth = login
        .as_ref()
        .map(|c| (c.user.as_str(), c.password.as_str()));
    let auth =
        auth.map(|(user, password)| (if user.is_empty() { "default" } else { user }, password));
    let mut why = Vec::new();
    for seed in hosts_of(url)? {
        match resp_command_as(seed, auth, &["CLUSTER", "NODES"], SENTINEL_TIMEOUT)
            .map(|nodes| masters_in(&nodes))
        {
            Ok(masters) if !masters.is_empty() => return Ok(masters),
            Ok(_) => why.push(format!("{seed}: names no master serving slots")),
            Err(e) => why.push(format!("{seed}: {e}")),
        }
    }
    Err(format!(
        "no cluster node named its masters ({})",
        why.join("; ")
    ))
}

/// The masters serving slots in a `CLUSTER NODES` answer (`id ip:port@bus flags master ping pong
/// epoch state slots…`), failed ones left out.
fn masters_in(nodes: &str) -> Vec<SocketAddr> {
    nodes
        .lines()
        .filter_map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let flags = fields.get(2)?;
            let serving = fields.len() > 8
                && flags.split(',').any(|f| f == "master")
                && !flags.split(',').any(|f| f == "fail" || f == "fail?");
            let addr = fields.get(1)?.split('@').next()?;
            serving.then(|| addr.parse().ok()).flatten()
        })
        .collect()
}

/// A Sentinel address's current primary as a direct address with the same user, password and
/// database (what the up-front check connects to).
pub fn sentinel_primary_url(url: &str) -> Result<String, String> {
    let primary = sentinel_primary(url)?;
    let parts = address::split(url).map_err(|e| e.to_string())?;
    let db = parts.bare[SENTINEL_SCHEME.len()..]
        .split('/')
        .nth(2)
        .unwrap_or("0");
    let user = parts
        .credentials
        .map(|c| format!("{}:{}@", encode(&c.user), encode(&c.password)))
        .unwrap_or_default();
    Ok(format!("redis://{user}{primary}/{db}"))
}

fn resolve(host_port: &str, default_port: u16) -> Result<SocketAddr, String> {
    if host_port.is_empty() {
        return Err("no host in address".into());
    }
    let with_port = if host_port
        .rsplit_once(':')
        .is_some_and(|(_, p)| p.parse::<u16>().is_ok())
    {
        host_port.to_owned()
    } else {
        format!("{host_port}:{default_port}")
    };
    with_port
        .to_socket_addrs()
        .map_err(|e| format!("cannot resolve {with_port}: {e}"))?
        .next()
        .ok_or_else(|| format!("{with_port} resolves to no address"))
}

/// A Redis URL (`redis://[user:pass@]host:port[/db][?query]` or `host:port`) with its host and port
/// replaced.
pub fn redis_url_via(url: &str, proxy: SocketAddr) -> String {
    let url = if url.contains("://") {
        url.to_owned()
    } else {
        format!("redis://{url}")
    };
    let via = address_via(&url, proxy);
    // redis-rs wants a path; `host:port` alone means database 0.
    let Some((scheme, rest)) = via.split_once("://") else {
        return via;
    };
    let (before_query, query) = match rest.split_once('?') {
        Some((before, query)) => (before, Some(query)),
        None => (rest, None),
    };
    match (before_query.contains('/'), query) {
        (true, _) => via,
        (false, Some(query)) => format!("{scheme}://{before_query}/?{query}"),
        (false, None) => format!("{scheme}://{rest}/"),
    }
}

/// One address (`[scheme://][user:pass@]host:port[/path][?query]`) with its host and port replaced by
/// `proxy`, keeping the scheme, credentials, path and query (TLS files): a proxy on 127.0.0.1 still
/// matches a certificate issued for 127.0.0.1.
pub fn address_via(address: &str, proxy: SocketAddr) -> String {
    let (scheme, rest) = match address.find("://") {
        Some(i) => address.split_at(i + 3),
        None => ("", address),
    };
    let end = rest.find(['/', '?']).unwrap_or(rest.len());
    let credentials = rest[..end].rfind('@').map(|at| &rest[..=at]).unwrap_or("");
    format!("{scheme}{credentials}{proxy}{}", &rest[end..])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_fill_in_where_the_address_has_none() {
        assert_eq!(
            fill("redis://app@127.0.0.1:1/?ca=/x", "p@w", true).as_deref(),
            Some("redis://app:p%40w@127.0.0.1:1/?ca=/x")
        );
        assert_eq!(
            fill("rediss://127.0.0.1:1", "pw", true).as_deref(),
            Some("rediss://:pw@127.0.0.1:1")
        );
        assert_eq!(
            fill("redis://a:given@h", "pw", true).as_deref(),
            Some("redis://a:given@h")
        );
        assert_eq!(fill("https://h:2379", "pw", false), None);
    }

    #[test]
    fn addresses_in_every_form() {
        let local = |port: u16| SocketAddr::from(([127, 0, 0, 1], port));
        assert_eq!(redis_socket("redis://127.0.0.1:7000/0"), Ok(local(7000)));
        assert_eq!(redis_socket("redis://user:pw@127.0.0.1/"), Ok(local(6379)));
        assert_eq!(redis_socket("127.0.0.1:1"), Ok(local(1)));
        assert!(redis_socket("http://127.0.0.1:1").is_err_and(|e| e.contains("://")));
        assert!(
            redis_socket("redis+cluster://u:secret@127.0.0.1:1")
                .is_err_and(|e| e.contains("no cluster node") && !e.contains("secret"))
        );
        let nodes = "a1 127.0.0.1:7000@17000 myself,master - 0 0 1 connected 0-5460\n\
                     a2 127.0.0.1:7001@17001 slave a1 0 0 1 connected\n\
                     a3 127.0.0.1:7002@17002 master,fail - 0 0 2 disconnected 5461-16383\n\
                     a4 127.0.0.1:7003@17003 master - 0 0 3 connected 5461-16383\n\
                     a5 127.0.0.1:7004@17004 master - 0 0 0 connected\n";
        assert_eq!(masters_in(nodes), vec![local(7000), local(7003)]);
        assert_eq!(
            etcd_sockets("http://127.0.0.1:1,127.0.0.1:2"),
            Ok(vec![local(1), local(2)])
        );
        assert_eq!(zk_sockets("127.0.0.1:5/locks"), Ok(vec![local(5)]));
        assert_eq!(zk_sockets("127.0.0.1"), Ok(vec![local(2181)]));
        assert_eq!(
            redis_socket("rediss://app:p%2Fw@127.0.0.1:7001?ca=/tmp/ca.pem"),
            Ok(local(7001))
        );
        assert_eq!(
            etcd_sockets("https://root:pw@127.0.0.1:3?ca=/x.pem"),
            Ok(vec![local(3)])
        );
        assert_eq!(zk_sockets("app:pw@127.0.0.1:4/locks"), Ok(vec![local(4)]));
        assert_eq!(
            postgres_socket("postgres://app:p%40ss@127.0.0.1:6/db?sslmode=disable"),
            Ok(local(6))
        );
        assert_eq!(
            postgres_socket("postgresql://127.0.0.1/db"),
            Ok(local(5432))
        );
        assert!(postgres_socket("127.0.0.1:6").is_err());
        assert_eq!(
            mysql_socket("mariadb://app:p%40ss@127.0.0.1:7/db?ca=/x"),
            Ok(local(7))
        );
        assert!(mysql_socket("postgres://127.0.0.1/db").is_err());
        assert!(redis_socket("redis://").is_err());
        assert!(redis_socket("redis://no-such-host.invalid:1").is_err());
    }
}
