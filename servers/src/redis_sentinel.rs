//! A Redis primary and replica watched by 3 Sentinels ([`RedisSentinels`]), all on 127.0.0.1: the
//! setup of a team that runs Redis with automatic failover. Clients find the primary by asking the
//! Sentinels (`redis+sentinel://…/lockbench`); when the primary dies, the Sentinels agree it is down
//! after [`DOWN_AFTER`], elect a leader among themselves and promote the replica. With an ACL user
//! ([`RedisSentinels::start_with`]), the replica and the Sentinels authenticate as it, and the
//! Sentinels ask for its password too (`requirepass`, and `sentinel-pass` among themselves). With TLS
//! as well, replication, the Sentinels' links and clients' links all speak TLS.

use std::net::{Ipv4Addr, SocketAddr};
use std::process::Command;
use std::time::{Duration, Instant};

use crate::certs::TlsFiles;
use crate::process::{ServerProcess, make_temp_dir, retry_on_port_race};
use crate::redis::{RedisOptions, RedisPair, wait_serving_as};
use crate::{Result, ServerError, free_ports, probe};

/// The name the Sentinels monitor the primary under.
pub const SERVICE: &str = "lockbench";
/// How long the primary must be silent before a Sentinel thinks it down (`down-after-milliseconds`;
/// Redis's default is 30 s, production setups often use 1–5 s).
pub const DOWN_AFTER: Duration = Duration::from_secs(1);
/// How many Sentinels must agree the primary is down (of 3).
const QUORUM: u32 = 2;
const SENTINELS: usize = 3;
/// How long the Sentinels get to discover the replica and each other.
const DISCOVERY_TIMEOUT: Duration = Duration::from_secs(15);
const COMMAND_TIMEOUT: Duration = Duration::from_secs(2);

/// One `redis-server --sentinel` process.
#[derive(Debug)]
pub struct Sentinel {
    process: ServerProcess,
    addr: SocketAddr,
    /// Its TLS port, when the group speaks TLS (the plain port stays for the launcher's probes).
    tls_port: Option<u16>,
    /// Its `requirepass`, if any.
    password: Option<String>,
}

impl Sentinel {
    /// Starts a Sentinel monitoring `primary`, authenticating to it as `auth` (user, password), over
    /// TLS with `tls` (then it also serves clients on a TLS port).
    fn start(
        program: &std::path::Path,
        primary: SocketAddr,
        auth: Option<(&str, &str)>,
        tls: Option<&TlsFiles>,
    ) -> Result<Self> {
        retry_on_port_race(|| {
            let ports = free_ports(2)?;
            let (port, tls_port) = (ports[0], tls.map(|_| ports[1]));
            let dir = make_temp_dir("sentinel")?;
            let config = dir.path().join("sentinel.conf");
            let log = dir.path().join("sentinel.log");
            // Sentinel rewrites its config file as it learns the topology, so it must be writable.
            let text = format!(
                "port {port}\nbind 127.0.0.1\ndaemonize no\nlogfile \"{log}\"\ndir \"{dir}\"\n\
                 sentinel resolve-hostnames no\n\
                 sentinel monitor {SERVICE} {ip} {primary_port} {QUORUM}\n\
                 sentinel down-after-milliseconds {SERVICE} {down}\n\
                 sentinel failover-timeout {SERVICE} 10000\n\
                 sentinel parallel-syncs {SERVICE} 1\n{auth}{tls}",
                log = log.display(),
                dir = dir.path().display(),
                ip = primary.ip(),
                primary_port = primary.port(),
                down = DOWN_AFTER.as_millis(),
                auth = auth
                    .map(|(user, password)| format!(
                        "sentinel auth-user {SERVICE} {user}\nsentinel auth-pass {SERVICE} {password}\n\
                         requirepass {password}\nsentinel sentinel-pass {password}\n"
                    ))
                    .unwrap_or_default(),
                tls = tls
                    .zip(tls_port)
                    .map(|(files, tls_port)| format!(
                        "tls-port {tls_port}\ntls-cert-file \"{}\"\ntls-key-file \"{}\"\n\
                         tls-ca-cert-file \"{}\"\ntls-auth-clients no\ntls-replication yes\n",
                        files.cert.display(),
                        files.key.display(),
                        files.ca.display()
                    ))
                    .unwrap_or_default(),
            );
            std::fs::write(&config, text)?;
            let mut command = Command::new(program);
            command.arg(&config).arg("--sentinel");
            let process = ServerProcess::spawn("redis sentinel", command, dir, "sentinel.log")?;
            let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
            let login = auth.map(|(_, password)| ("default", password));
            wait_serving_as(&process, addr, login)?;
            let password = auth.map(|(_, password)| password.to_owned());
            Ok(Self {
                process,
                addr,
                tls_port,
                password,
            })
        })
    }

    /// Where it listens.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Sends one command (e.g. `&["SENTINEL", "MASTER", "lockbench"]`) and returns the reply as text.
    pub fn command(&self, args: &[&str]) -> Result<String> {
        let login = self.password.as_deref().map(|p| ("default", p));
        probe::resp_command_as(self.addr, login, args, COMMAND_TIMEOUT)
    }

    /// Where clients connect: its TLS port when the group speaks TLS, else [`Self::addr`].
    pub fn client_addr(&self) -> SocketAddr {
        match self.tls_port {
            Some(port) => SocketAddr::from((Ipv4Addr::LOCALHOST, port)),
            None => self.addr,
        }
    }

    /// The primary this Sentinel names for [`SERVICE`] now (its TLS address when the group speaks TLS).
    pub fn primary(&self) -> Option<SocketAddr> {
        let reply = self
            .command(&["SENTINEL", "GET-MASTER-ADDR-BY-NAME", SERVICE])
            .ok()?;
        let mut lines = reply.lines();
        let ip: std::net::IpAddr = lines.next()?.trim().parse().ok()?;
        let port: u16 = lines.next()?.trim().parse().ok()?;
        Some(SocketAddr::new(ip, port))
    }

    /// One field of `SENTINEL MASTER lockbench` (a flat name/value list).
    fn master_field(&self, field: &str) -> Option<String> {
        let reply = self.command(&["SENTINEL", "MASTER", SERVICE]).ok()?;
        let words: Vec<&str> = reply.lines().map(str::trim).collect();
        words
            .chunks(2)
            .find(|pair| pair.first() == Some(&field))
            .and_then(|pair| pair.get(1))
            .map(|v| (*v).to_owned())
    }

    /// The process.
    pub fn process(&self) -> &ServerProcess {
        &self.process
    }
}

/// A primary + replica ([`RedisPair`], asynchronous replication) and 3 Sentinels monitoring it as
/// [`SERVICE`] with quorum 2. Everything is killed on drop.
#[derive(Debug)]
pub struct RedisSentinels {
    pair: RedisPair,
    sentinels: Vec<Sentinel>,
    startup: Duration,
    /// The ACL user and password clients use (in [`Self::url`]), if any.
    auth: Option<(String, String)>,
    /// The CA clients trust, when the group speaks TLS.
    ca: Option<std::path::PathBuf>,
}

impl RedisSentinels {
    /// Starts the pair and the Sentinels and waits until every Sentinel knows the replica and the
    /// other two Sentinels (they find each other through the primary within a few seconds), so a
    /// failover can be agreed on.
    pub fn start() -> Result<Self> {
        Self::start_with(RedisOptions::default())
    }

    /// Like [`start`](Self::start), with `options` for the primary and the replica. An ACL user in
    /// them is the one the replica, the Sentinels and clients authenticate as; with TLS, replication,
    /// the Sentinels' links to the servers and clients' links to the Sentinels and the primary all
    /// speak it (the Sentinels name the servers' TLS ports).
    pub fn start_with(options: RedisOptions) -> Result<Self> {
        let began = Instant::now();
        // A Sentinel is the server program in Sentinel mode (`--sentinel`), Redis's and Valkey's alike.
        let program = options
            .flavor
            .program()
            .locate(options.redis_server.as_deref())?;
        let auth = options
            .security
            .as_ref()
            .map(|s| (s.user.clone(), s.password.clone()));
        let tls = options.security.as_ref().and_then(|s| s.tls.clone());
        let pair = RedisPair::start_with(options)?;
        let login = auth.as_ref().map(|(u, p)| (u.as_str(), p.as_str()));
        let primary = pair.primary().client_addr();
        let sentinels = (0..SENTINELS)
            .map(|_| Sentinel::start(&program, primary, login, tls.as_ref()))
            .collect::<Result<Vec<_>>>()?;
        let group = Self {
            pair,
            sentinels,
            startup: Duration::ZERO,
            auth,
            ca: tls.map(|files| files.ca),
        };
        group.wait_for_discovery()?;
        Ok(Self {
            startup: began.elapsed(),
            ..group
        })
    }

    fn wait_for_discovery(&self) -> Result<()> {
        let deadline = Instant::now() + DISCOVERY_TIMEOUT;
        let others = (SENTINELS - 1).to_string();
        loop {
            let ready = self.sentinels.iter().all(|s| {
                s.master_field("num-slaves").as_deref() == Some("1")
                    && s.master_field("num-other-sentinels").as_deref() == Some(others.as_str())
            });
            if ready {
                return Ok(());
            }
            if Instant::now() >= deadline {
                let sentinel = &self.sentinels[0];
                return Err(ServerError::Start {
                    server: "redis sentinels".to_owned(),
                    reason: format!(
                        "the Sentinels did not find the replica and each other within {DISCOVERY_TIMEOUT:?}"
                    ),
                    log_tail: sentinel.process.log_tail(20),
                });
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// The client address: `redis+sentinel://127.0.0.1:A,127.0.0.1:B,127.0.0.1:C/lockbench`, with
    /// `user:password@` before the hosts when the servers have an ACL user; with TLS,
    /// `rediss+sentinel://…` on the Sentinels' TLS ports and `?ca=` the CA.
    pub fn url(&self) -> String {
        let hosts: Vec<String> = self
            .sentinels
            .iter()
            .map(|s| s.client_addr().to_string())
            .collect();
        let login = self
            .auth
            .as_ref()
            .map(|(user, password)| format!("{user}:{password}@"))
            .unwrap_or_default();
        match &self.ca {
            Some(ca) => format!(
                "rediss+sentinel://{login}{}/{SERVICE}?ca={}",
                hosts.join(","),
                ca.display()
            ),
            None => format!("redis+sentinel://{login}{}/{SERVICE}", hosts.join(",")),
        }
    }

    /// The primary and replica as started (after a failover, the replica is the primary).
    pub fn pair(&self) -> &RedisPair {
        &self.pair
    }

    /// The Sentinels.
    pub fn sentinels(&self) -> &[Sentinel] {
        &self.sentinels
    }

    /// The primary a majority of the Sentinels names now, if they agree.
    pub fn primary(&self) -> Option<SocketAddr> {
        let named: Vec<SocketAddr> = self
            .sentinels
            .iter()
            .filter_map(Sentinel::primary)
            .collect();
        named
            .iter()
            .find(|a| named.iter().filter(|b| b == a).count() * 2 > SENTINELS)
            .copied()
    }

    /// Waits until a majority of the Sentinels names a primary other than `old` and that server
    /// answers `ROLE` as a master; returns it (its plain address, as
    /// [`RedisServer::addr`](crate::RedisServer::addr)) and when
    /// that was seen. `None` within `timeout`.
    pub fn wait_for_new_primary(
        &self,
        old: SocketAddr,
        timeout: Duration,
    ) -> Option<(SocketAddr, Instant)> {
        let deadline = Instant::now() + timeout;
        let servers = [self.pair.primary(), self.pair.replica()];
        // The Sentinels name a server by the address clients use (its TLS port with TLS).
        let server_of = |named: SocketAddr| {
            servers
                .iter()
                .find(|s| s.addr() == named || s.client_addr() == named)
        };
        while Instant::now() < deadline {
            if let Some(primary) = self
                .primary()
                .and_then(server_of)
                .filter(|s| s.addr() != old && s.client_addr() != old)
            {
                let login = self.auth.as_ref().map(|(u, p)| (u.as_str(), p.as_str()));
                let role =
                    probe::resp_command_as(primary.addr(), login, &["ROLE"], COMMAND_TIMEOUT);
                if role.is_ok_and(|r| r.lines().next().map(str::trim) == Some("master")) {
                    return Some((primary.addr(), Instant::now()));
                }
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        None
    }

    /// How long `start` took until the Sentinels were ready.
    pub fn startup(&self) -> Duration {
        self.startup
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sentinels_promote_the_replica_when_the_primary_dies() {
        let group = RedisSentinels::start().expect("sentinels");
        let old = group.pair().primary().addr();
        assert_eq!(group.primary(), Some(old));
        assert!(group.url().starts_with("redis+sentinel://127.0.0.1:"));
        group.pair().primary().kill().expect("kill primary");
        let killed = Instant::now();
        let (new, seen) = group
            .wait_for_new_primary(old, Duration::from_secs(20))
            .expect("a new primary");
        assert_eq!(new, group.pair().replica().addr());
        assert!(
            seen - killed >= DOWN_AFTER,
            "promoted after {:?}",
            seen - killed
        );
    }
}
