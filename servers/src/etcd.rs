//! Runs etcd (3.4) children: a single member ([`EtcdServer`]) or a cluster ([`EtcdCluster`]),
//! with client and peer URLs on free 127.0.0.1 ports and data under [`data_parent`].
//!
//! Members use `--heartbeat-interval 50 --election-timeout 500` (etcd's defaults are 100 and
//! 1000). etcd refuses leases shorter than about 1.5 × the election timeout (it raises the TTL
//! to that minimum), so these settings keep the minimum lease TTL at about 1 s and second-scale
//! lease tests meaningful; they also make leader elections after a kill take well under a
//! second.
//!
//! [`data_parent`]: crate::data_parent

use std::net::{Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::certs::TlsFiles;
use crate::group::{GroupMember, ServerGroup};
use crate::process::{
    ServerProcess, make_temp_dir, process_accessors, retry_on_port_race, wait_all_ready,
};
use crate::programs::Program;
use crate::{Result, free_ports, probe};

const START_TIMEOUT: Duration = Duration::from_secs(20);
const PROBE_TIMEOUT: Duration = Duration::from_millis(500);

/// Settings for [`EtcdServer::start_with`] and [`EtcdCluster::start_with`]. `Debug` hides the password.
#[derive(Clone, PartialEq, Eq)]
pub struct EtcdOptions {
    /// The `etcd` to run; overrides `LOCKBENCH_ETCD` and `PATH`.
    pub etcd: Option<PathBuf>,
    /// `--heartbeat-interval` (default 50 ms).
    pub heartbeat_interval: Duration,
    /// `--election-timeout` (default 500 ms); etcd's minimum lease TTL is about 1.5 × this.
    pub election_timeout: Duration,
    /// Serve clients over TLS with these files (`--cert-file`, `--key-file`; no `--trusted-ca-file`,
    /// so client certificates are neither asked for nor required). Health and metrics then move to a plain-HTTP
    /// `--listen-metrics-urls` port on 127.0.0.1, which the launcher's probes use. Default: none.
    pub tls: Option<TlsFiles>,
    /// Switch authentication on once the cluster is up, with user `root` and this password (which
    /// clients then give as `https://root:<password>@…`). Default: no authentication.
    pub root_password: Option<String>,
}

impl std::fmt::Debug for EtcdOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EtcdOptions")
            .field("etcd", &self.etcd)
            .field("heartbeat_interval", &self.heartbeat_interval)
            .field("election_timeout", &self.election_timeout)
            .field("tls", &self.tls)
            .field("root_password", &self.root_password.as_ref().map(|_| "***"))
            .finish()
    }
}

impl Default for EtcdOptions {
    fn default() -> Self {
        Self {
            etcd: None,
            heartbeat_interval: Duration::from_millis(50),
            election_timeout: Duration::from_millis(500),
            tls: None,
            root_password: None,
        }
    }
}

/// One running etcd member (on its own, or one of an [`EtcdCluster`]), killed on drop.
#[derive(Debug)]
pub struct EtcdServer {
    process: ServerProcess,
    name: String,
    client: SocketAddr,
    /// Where `/health` and `/metrics` are served over plain HTTP (the client port, unless TLS).
    metrics: SocketAddr,
    tls: bool,
    peer: SocketAddr,
    version: String,
    startup: Duration,
}

impl EtcdServer {
    /// Starts a single-member cluster and waits until `GET /health` reports `"health":"true"`.
    pub fn start() -> Result<Self> {
        Self::start_with(EtcdOptions::default())
    }

    /// Like [`start`](Self::start) with `options`.
    pub fn start_with(options: EtcdOptions) -> Result<Self> {
        let mut members = start_members(1, &options)?;
        members.pop().ok_or_else(|| {
            crate::ServerError::Io(std::io::Error::other("etcd start produced no member"))
        })
    }

    /// The client URL, `http://127.0.0.1:PORT` (`https://` with TLS).
    pub fn endpoint(&self) -> String {
        let scheme = if self.tls { "https" } else { "http" };
        format!("{scheme}://{}", self.client)
    }

    /// The client address.
    pub fn client_addr(&self) -> SocketAddr {
        self.client
    }

    /// The peer URL, `http://127.0.0.1:PORT`.
    pub fn peer_url(&self) -> String {
        format!("http://{}", self.peer)
    }

    /// The member name (`n0`, `n1`, …).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The server version reported by `GET /version`, e.g. `3.4.23`.
    pub fn version(&self) -> &str {
        &self.version
    }

    /// Whether `GET /health` answers `"health":"true"` within 500 ms (false while paused,
    /// killed, or without a quorum).
    pub fn is_healthy(&self) -> bool {
        is_healthy(self.metrics)
    }

    /// Whether this member currently is the leader, from `etcd_server_is_leader` in
    /// `GET /metrics`; `None` if it does not answer within 500 ms.
    pub fn is_leader(&self) -> Option<bool> {
        let metrics = probe::http_get(self.metrics, "/metrics", PROBE_TIMEOUT).ok()?;
        metrics.body.lines().find_map(|line| {
            line.strip_prefix("etcd_server_is_leader ")
                .map(|v| v.trim() == "1")
        })
    }

    process_accessors!();
}

fn is_healthy(addr: SocketAddr) -> bool {
    probe::http_get(addr, "/health", PROBE_TIMEOUT)
        .is_ok_and(|r| r.status == 200 && r.body.contains(r#""health":"true""#))
}

fn unique_token() -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    format!(
        "lockbench-{}-{}-{nanos}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

/// Starts `n` members forming one new cluster and waits until all are healthy.
fn start_members(n: usize, options: &EtcdOptions) -> Result<Vec<EtcdServer>> {
    let program = Program::Etcd.locate(options.etcd.as_deref())?;
    let began = Instant::now();
    retry_on_port_race(|| {
        let ports = free_ports(3 * n)?;
        let addr = |port: u16| SocketAddr::from((Ipv4Addr::LOCALHOST, port));
        let (client_ports, rest) = ports.split_at(n);
        let (peer_ports, metrics_ports) = rest.split_at(n);
        // Without TLS, health and metrics are asked on the client port, as clients see it.
        let probe_ports = if options.tls.is_some() {
            metrics_ports
        } else {
            client_ports
        };
        let scheme = if options.tls.is_some() {
            "https"
        } else {
            "http"
        };
        let initial_cluster = peer_ports
            .iter()
            .enumerate()
            .map(|(i, port)| format!("n{i}=http://127.0.0.1:{port}"))
            .collect::<Vec<_>>()
            .join(",");
        let token = unique_token();
        let mut processes = Vec::with_capacity(n);
        for (i, (&client, &peer)) in client_ports.iter().zip(peer_ports).enumerate() {
            let dir = make_temp_dir("etcd")?;
            let client_url = format!("{scheme}://127.0.0.1:{client}");
            let peer_url = format!("http://127.0.0.1:{peer}");
            let mut command = Command::new(&program);
            command
                .args(["--name", &format!("n{i}")])
                .arg("--data-dir")
                .arg(dir.path().join("data"))
                .args(["--listen-client-urls", &client_url])
                .args(["--advertise-client-urls", &client_url])
                .args(["--listen-peer-urls", &peer_url])
                .args(["--initial-advertise-peer-urls", &peer_url])
                .args(["--initial-cluster", &initial_cluster])
                .args(["--initial-cluster-token", &token])
                .args(["--initial-cluster-state", "new"])
                .arg("--heartbeat-interval")
                .arg(options.heartbeat_interval.as_millis().to_string())
                .arg("--election-timeout")
                .arg(options.election_timeout.as_millis().to_string())
                .args(["--logger", "zap", "--log-outputs"])
                .arg(dir.path().join("etcd.log"));
            if let Some(tls) = &options.tls {
                command
                    .arg("--cert-file")
                    .arg(&tls.cert)
                    .arg("--key-file")
                    .arg(&tls.key)
                    .arg("--listen-metrics-urls")
                    .arg(format!("http://127.0.0.1:{}", metrics_ports[i]));
            }
            let name = if n == 1 {
                "etcd".to_owned()
            } else {
                format!("etcd member n{i}")
            };
            processes.push(ServerProcess::spawn(name, command, dir, "etcd.log")?);
        }
        let refs: Vec<&ServerProcess> = processes.iter().collect();
        wait_all_ready(&refs, START_TIMEOUT, Duration::from_millis(10), |i| {
            is_healthy(addr(probe_ports[i])) && refs[i].listens_on(client_ports[i])
        })?;
        let version = probe::http_get(addr(probe_ports[0]), "/version", PROBE_TIMEOUT)
            .map(|r| json_string_field(&r.body, "etcdserver").unwrap_or_default())
            .unwrap_or_default();
        if let Some(password) = &options.root_password {
            let ca = options.tls.as_ref().map(|tls| tls.ca.clone());
            crate::etcd_auth::enable(addr(client_ports[0]), ca, password.clone())?;
        }
        let startup = began.elapsed();
        Ok(processes
            .into_iter()
            .enumerate()
            .map(|(i, process)| EtcdServer {
                process,
                name: format!("n{i}"),
                client: addr(client_ports[i]),
                metrics: addr(probe_ports[i]),
                tls: options.tls.is_some(),
                peer: addr(peer_ports[i]),
                version: version.clone(),
                startup,
            })
            .collect())
    })
}

/// The string value of `"field":"value"` in a flat JSON object.
fn json_string_field(json: &str, field: &str) -> Option<String> {
    let key = format!("\"{field}\"");
    let rest = json[json.find(&key)? + key.len()..].trim_start();
    let rest = rest.strip_prefix(':')?.trim_start().strip_prefix('"')?;
    Some(rest[..rest.find('"')?].to_owned())
}

/// A running etcd cluster of several members with a unique `--initial-cluster-token`, killed
/// on drop.
pub type EtcdCluster = ServerGroup<EtcdServer>;

impl GroupMember for EtcdServer {
    fn process(&self) -> &ServerProcess {
        &self.process
    }

    fn is_leader_now(&self) -> bool {
        self.is_leader() == Some(true)
    }
}

impl ServerGroup<EtcdServer> {
    /// Starts `n` members and waits until every one is healthy (which implies a leader).
    pub fn start(n: usize) -> Result<Self> {
        Self::start_with(n, EtcdOptions::default())
    }

    /// Like [`start`](Self::start) with `options`.
    pub fn start_with(n: usize, options: EtcdOptions) -> Result<Self> {
        let began = Instant::now();
        let members = start_members(n.max(1), &options)?;
        Ok(Self::new(members, began.elapsed()))
    }

    /// Every member's client URL, in member order.
    pub fn endpoints(&self) -> Vec<String> {
        self.members().iter().map(EtcdServer::endpoint).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn version_from_json() {
        let body = r#"{"etcdserver":"3.4.23","etcdcluster":"3.4.0"}"#;
        assert_eq!(
            json_string_field(body, "etcdserver").as_deref(),
            Some("3.4.23")
        );
        assert_eq!(json_string_field(body, "nope"), None);
    }

    #[test]
    fn tokens_are_unique() {
        assert_ne!(unique_token(), unique_token());
    }
}
