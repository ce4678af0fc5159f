//! Server addresses as users write them (`--redis redis://host:port/0`, `--etcd http://a:2379,http://b:2379`,
//! `--zk host:2181,host2:2181/chroot`), reduced to the socket addresses lockbench can probe.

use std::net::{SocketAddr, ToSocketAddrs};

/// The socket address inside a Redis URL (`redis://[user:pass@]host[:port][/db]` or `host:port`).
pub fn redis_socket(url: &str) -> Result<SocketAddr, String> {
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
            let endpoint = endpoint.trim();
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
    let hosts = connect.split('/').next().unwrap_or("");
    hosts.split(',').map(|h| resolve(h.trim(), 2181)).collect()
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_in_every_form() {
        let local = |port: u16| SocketAddr::from(([127, 0, 0, 1], port));
        assert_eq!(redis_socket("redis://127.0.0.1:7000/0"), Ok(local(7000)));
        assert_eq!(redis_socket("redis://user:pw@127.0.0.1/"), Ok(local(6379)));
        assert_eq!(redis_socket("127.0.0.1:1"), Ok(local(1)));
        assert_eq!(
            etcd_sockets("http://127.0.0.1:1,127.0.0.1:2"),
            Ok(vec![local(1), local(2)])
        );
        assert_eq!(zk_sockets("127.0.0.1:5/locks"), Ok(vec![local(5)]));
        assert_eq!(zk_sockets("127.0.0.1"), Ok(vec![local(2181)]));
        assert!(redis_socket("redis://").is_err());
        assert!(redis_socket("redis://no-such-host.invalid:1").is_err());
    }
}
