//! A network namespace of lockbench's own, joined to this one by a veth pair on a private /30
//! (`10.231.x.y`, a block no interface here uses yet), and silent partitions inside it: nf_tables
//! rules that drop one peer's TCP packets both ways without a reset, so the server in the namespace
//! notices only through its own timers (TCP keepalive), as across a real network.
//!
//! The namespace is named `lockbench-<pid>-<starttime>-<n>` after the process that made it; dropping
//! the handle deletes it (its veth end goes with it, and the pair with that). A namespace whose owner
//! is gone (a run killed before its destructors ran) is deleted by the next process that creates one.
//! Creating one needs root (`CAP_NET_ADMIN`) and iproute2's `ip`; a partition needs `nft` (Debian's
//! `nftables`). Without them the error is one line naming what is missing.
//!
//! A server started inside one is a [`Namespaced`] handle (the PostgreSQL and MariaDB launchers
//! offer one each), with the short server-side TCP keepalive of [`Keepalives`].

use std::collections::BTreeSet;
use std::io;
use std::net::Ipv4Addr;
use std::os::fd::AsRawFd;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use crate::process::{owner_alive, process_identity};
use crate::programs;
use crate::{Result, ServerError};

/// What a namespace name starts with.
const PREFIX: &str = "lockbench-";
/// Where `ip netns` keeps its namespaces (one file each, to `setns(2)` into).
const NETNS_DIR: &str = "/var/run/netns";
/// The namespace's end of the veth pair.
const INNER_LINK: &str = "veth0";
const IP_INSTALL: &str = "run as root (CAP_NET_ADMIN) with iproute2 installed: sudo apt-get install -y iproute2 (or run docker/install-deps.sh)";
/// The /30 blocks of 10.231.0.0/16.
const BLOCKS: u32 = 1 << 14;
/// Held (`flock`) by the process choosing a block until its addresses are up, so two processes
/// never choose the same free block at the same instant.
const CHOOSING_LOCK: &str = "/run/lockbench-netns.lock";

/// A network namespace with a veth link to this one; deleted on drop.
#[derive(Debug)]
pub struct NetNamespace {
    name: String,
    host_addr: Ipv4Addr,
    inner_addr: Ipv4Addr,
}

impl NetNamespace {
    /// Creates a namespace with its loopback up and a veth pair: this side `10.231.x.(4k+1)/30`, the
    /// namespace's side `.(4k+2)`. Fails with one line when this machine cannot (not root, no `ip`).
    pub fn create() -> Result<Self> {
        static SWEPT: OnceLock<()> = OnceLock::new();
        SWEPT.get_or_init(remove_abandoned_namespaces);
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let pid = std::process::id();
        let identity = process_identity(pid).unwrap_or_else(|| format!("{pid} 0"));
        let name = namespace_name(&identity, n);
        let host_link = host_link_name(pid, n);
        let _choosing = ChoosingLock::take()?;
        let used = used_addresses()?;
        let block = free_block(&used, pid.wrapping_mul(31).wrapping_add(n))
            .ok_or_else(|| start_error("every /30 of 10.231.0.0/16 is in use here".into()))?;
        let (host_addr, inner_addr) = block_addrs(block);
        ip(&["netns", "add", &name])?;
        // From here on, dropping the handle removes what was made.
        let ns = NetNamespace {
            name,
            host_addr,
            inner_addr,
        };
        let host_cidr = format!("{host_addr}/30");
        let inner_cidr = format!("{inner_addr}/30");
        let name = ns.name.as_str();
        let steps: [&[&str]; 6] = [
            &[
                "link", "add", &host_link, "type", "veth", "peer", "name", INNER_LINK, "netns",
                name,
            ],
            &["addr", "add", &host_cidr, "dev", &host_link],
            &["link", "set", &host_link, "up"],
            &["-n", name, "addr", "add", &inner_cidr, "dev", INNER_LINK],
            &["-n", name, "link", "set", INNER_LINK, "up"],
            &["-n", name, "link", "set", "lo", "up"],
        ];
        for args in steps {
            ip(args)?;
        }
        Ok(ns)
    }

    /// Its name (as `ip netns list` shows it).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// This side's address on the link.
    pub fn host_addr(&self) -> Ipv4Addr {
        self.host_addr
    }

    /// The namespace's address on the link (where a server inside listens).
    pub fn inner_addr(&self) -> Ipv4Addr {
        self.inner_addr
    }

    /// The file a process `setns(2)`s into to join it.
    pub fn path(&self) -> PathBuf {
        PathBuf::from(NETNS_DIR).join(&self.name)
    }

    /// Drops, inside the namespace, every TCP packet to or from this side's `ports` (the peers'
    /// local ports), both ways and without a reset, until the returned partition is lifted or
    /// dropped. Needs `nft`.
    pub fn partition(&self, ports: &[u16]) -> Result<Partition> {
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let table = format!(
            "lockbench_partition_{}",
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        let script = partition_rules(&table, self.host_addr, ports);
        nft(&self.name, &["-f", "-"], Some(&script))?;
        Ok(Partition {
            namespace: self.name.clone(),
            table,
            lifted: false,
        })
    }
}

impl Drop for NetNamespace {
    fn drop(&mut self) {
        let _ = ip(&["netns", "delete", &self.name]);
    }
}

/// A silent partition of some peers inside a namespace ([`NetNamespace::partition`]); lifted on drop.
#[derive(Debug)]
pub struct Partition {
    namespace: String,
    table: String,
    lifted: bool,
}

impl Partition {
    /// Packets the rules dropped so far (both ways).
    pub fn dropped_packets(&self) -> Result<u64> {
        let listing = nft(
            &self.namespace,
            &["list", "table", "inet", &self.table],
            None,
        )?;
        Ok(counted_packets(&listing))
    }

    /// Removes the rules; returns how many packets they dropped.
    pub fn lift(mut self) -> Result<u64> {
        let dropped = self.dropped_packets()?;
        self.lifted = true;
        self.delete_table()?;
        Ok(dropped)
    }

    fn delete_table(&self) -> Result<String> {
        nft(
            &self.namespace,
            &["delete", "table", "inet", &self.table],
            None,
        )
    }
}

impl Drop for Partition {
    fn drop(&mut self) {
        if !self.lifted {
            let _ = self.delete_table();
        }
    }
}

/// A server inside a network namespace of its own ([`NetNamespace`]), listening on the namespace's
/// end of its veth link, so that a partition inside the namespace ([`NetNamespace::partition`]) is
/// one the server notices only by its own TCP timers. Dropping it stops the server (and removes its
/// data directory), then deletes the namespace.
#[derive(Debug)]
pub struct Namespaced<S> {
    // Declared first: dropped (the server stopped) before the namespace is deleted.
    server: S,
    namespace: NetNamespace,
}

impl<S> Namespaced<S> {
    /// Creates a namespace and starts a server in it with `start` (which spawns it through
    /// [`spawn_inside`]). Fails with one line when the namespace cannot be made.
    pub(crate) fn start_inside(start: impl FnOnce(&NetNamespace) -> Result<S>) -> Result<Self> {
        let namespace = NetNamespace::create()?;
        let server = start(&namespace)?;
        Ok(Self { server, namespace })
    }

    /// The server (its address is the namespace's).
    pub fn server(&self) -> &S {
        &self.server
    }

    /// The namespace it runs in.
    pub fn namespace(&self) -> &NetNamespace {
        &self.namespace
    }
}

/// How a server probes a silent client connection (TCP keepalive, whole seconds as both servers
/// take them): after `idle` without a packet it sends a probe every `interval`, and after `count`
/// unanswered probes the kernel ends the connection, and the server the session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Keepalives {
    /// Silence before the first probe.
    pub idle: Duration,
    /// Time between probes.
    pub interval: Duration,
    /// Unanswered probes before the connection is given up.
    pub count: u32,
}

impl Keepalives {
    /// How long after its last packet a silent connection is given up: `idle + interval × count`
    /// (each rounded up to whole seconds, as the servers apply them).
    pub fn limit(&self) -> Duration {
        Duration::from_secs(
            whole_secs(self.idle) + whole_secs(self.interval) * u64::from(self.count),
        )
    }
}

/// `d` in whole seconds, rounded up, at least 1.
pub(crate) fn whole_secs(d: Duration) -> u64 {
    d.as_millis().div_ceil(1000).max(1) as u64
}

/// Makes `command`'s child join `namespace` before it runs, then become `owner` (uid, gid) when
/// given. The returned file must stay open until the child is spawned.
pub(crate) fn spawn_inside(
    command: &mut Command,
    namespace: &NetNamespace,
    owner: Option<(u32, u32)>,
) -> Result<std::fs::File> {
    let file = open(&namespace.path())?;
    let fd = file.as_raw_fd();
    // SAFETY: the closure runs in the forked child before exec and only makes the
    // async-signal-safe calls of `join_in_child`; `fd` stays open until the caller has spawned.
    unsafe { command.pre_exec(move || join_in_child(fd, owner)) };
    Ok(file)
}

/// `lockbench-<pid>-<starttime>-<n>` from a process identity `"PID STARTTIME"`.
fn namespace_name(identity: &str, n: u32) -> String {
    format!(
        "{PREFIX}{}-{n}",
        identity.split_whitespace().collect::<Vec<_>>().join("-")
    )
}

/// The process identity `"PID STARTTIME"` a namespace name carries, if it is one of ours.
fn namespace_owner(name: &str) -> Option<String> {
    let mut parts = name.strip_prefix(PREFIX)?.split('-');
    let (pid, start, n) = (parts.next()?, parts.next()?, parts.next()?);
    let numbers = [pid, start, n]
        .iter()
        .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()));
    (numbers && parts.next().is_none()).then(|| format!("{pid} {start}"))
}

/// This side's end of the veth pair (at most 15 bytes, an interface name's limit).
fn host_link_name(pid: u32, n: u32) -> String {
    format!("lb{:x}-{:x}", pid & 0xff_ffff, n & 0xffff)
}

/// The machine-wide lock on choosing a block ([`CHOOSING_LOCK`]), released when dropped.
struct ChoosingLock(std::fs::File);

impl ChoosingLock {
    fn take() -> Result<Self> {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(CHOOSING_LOCK)
            .map_err(|e| start_error(format!("{CHOOSING_LOCK}: {e}")))?;
        // SAFETY: flock(2) on a descriptor this function owns; no memory is shared with it.
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) } != 0 {
            let e = io::Error::last_os_error();
            return Err(start_error(format!("locking {CHOOSING_LOCK}: {e}")));
        }
        Ok(ChoosingLock(file))
    }
}

impl Drop for ChoosingLock {
    fn drop(&mut self) {
        // SAFETY: as in `take`; closing the file would release it too.
        unsafe { libc::flock(self.0.as_raw_fd(), libc::LOCK_UN) };
    }
}

/// (this side, the namespace's side) of /30 block `block` of 10.231.0.0/16.
fn block_addrs(block: u32) -> (Ipv4Addr, Ipv4Addr) {
    let base = u32::from(Ipv4Addr::new(10, 231, 0, 0)) + (block % BLOCKS) * 4;
    (Ipv4Addr::from(base + 1), Ipv4Addr::from(base + 2))
}

/// The first /30 block from `start` on (wrapping) none of whose addresses is in `used`.
fn free_block(used: &BTreeSet<Ipv4Addr>, start: u32) -> Option<u32> {
    (0..BLOCKS)
        .map(|i| start.wrapping_add(i) % BLOCKS)
        .find(|&block| {
            let (host, inner) = block_addrs(block);
            let base = u32::from(host) - 1;
            !(base..base + 4).any(|a| used.contains(&Ipv4Addr::from(a))) && !used.contains(&inner)
        })
}

/// The IPv4 addresses of this namespace's interfaces, from `ip -o -4 addr show`.
fn used_addresses() -> Result<BTreeSet<Ipv4Addr>> {
    Ok(parse_addresses(&ip(&["-o", "-4", "addr", "show"])?))
}

/// The addresses in `ip -o -4 addr show` output (`2: eth0    inet 10.0.0.5/24 brd ...`).
fn parse_addresses(text: &str) -> BTreeSet<Ipv4Addr> {
    text.lines()
        .filter_map(|line| {
            let mut words = line.split_whitespace();
            words.find(|w| *w == "inet")?;
            words.next()?.split('/').next()?.parse().ok()
        })
        .collect()
}

/// An nft script making table `table` drop every TCP packet between `host` and the namespace
/// whose port on `host`'s side is one of `ports`, both ways, counting them.
fn partition_rules(table: &str, host: Ipv4Addr, ports: &[u16]) -> String {
    let set = ports
        .iter()
        .map(u16::to_string)
        .collect::<Vec<_>>()
        .join(", ");
    format!(
        "table inet {table} {{\n\
         \tchain input {{\n\
         \t\ttype filter hook input priority -10; policy accept;\n\
         \t\tip saddr {host} tcp sport {{ {set} }} counter drop\n\
         \t}}\n\
         \tchain output {{\n\
         \t\ttype filter hook output priority -10; policy accept;\n\
         \t\tip daddr {host} tcp dport {{ {set} }} counter drop\n\
         \t}}\n\
         }}\n"
    )
}

/// The sum of the `counter packets N` figures in an nft listing.
fn counted_packets(listing: &str) -> u64 {
    listing
        .lines()
        .filter_map(|line| {
            let after = line.split("counter packets ").nth(1)?;
            after.split_whitespace().next()?.parse::<u64>().ok()
        })
        .sum()
}

/// Deletes namespaces named after processes that no longer exist.
fn remove_abandoned_namespaces() {
    let Ok(list) = ip(&["netns", "list"]) else {
        return;
    };
    for line in list.lines() {
        let Some(name) = line.split_whitespace().next() else {
            continue;
        };
        let Some(owner) = namespace_owner(name) else {
            continue;
        };
        if !owner_alive(&owner) {
            let _ = ip(&["netns", "delete", name]);
        }
    }
}

fn start_error(reason: String) -> ServerError {
    ServerError::Start {
        server: "network namespace".into(),
        reason,
        log_tail: String::new(),
    }
}

/// Runs `ip args`; its stdout, or one line saying what failed and what is needed.
fn ip(args: &[&str]) -> Result<String> {
    let output = Command::new("ip")
        .args(args)
        .output()
        .map_err(|e| start_error(format!("cannot run ip ({e}); {IP_INSTALL}")))?;
    if output.status.success() {
        return Ok(String::from_utf8_lossy(&output.stdout).into_owned());
    }
    Err(start_error(format!(
        "ip {}: {}; {IP_INSTALL}",
        args.join(" "),
        String::from_utf8_lossy(&output.stderr).trim()
    )))
}

/// Runs `nft args` inside namespace `namespace` (`ip netns exec`), with `input` on its stdin.
fn nft(namespace: &str, args: &[&str], input: Option<&str>) -> Result<String> {
    use std::io::Write;
    if programs::search_path(&"nft".into()).is_none() {
        return Err(ServerError::Missing {
            program: "nft".into(),
            install: programs::install_hint("nftables"),
        });
    }
    let mut child = Command::new("ip")
        .args(["netns", "exec", namespace, "nft"])
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| start_error(format!("cannot run ip netns exec ({e}); {IP_INSTALL}")))?;
    if let Some(mut stdin) = child.stdin.take() {
        stdin.write_all(input.unwrap_or_default().as_bytes())?;
    }
    let output = child.wait_with_output()?;
    if output.status.success() {
        return Ok(String::from_utf8_lossy(&output.stdout).into_owned());
    }
    Err(start_error(format!(
        "nft {} in {namespace}: {}",
        args.join(" "),
        String::from_utf8_lossy(&output.stderr).trim()
    )))
}

/// Opens namespace `path` for a child to join before it runs (see [`join_in_child`]).
fn open(path: &std::path::Path) -> Result<std::fs::File> {
    std::fs::File::open(path).map_err(|e| {
        start_error(format!(
            "cannot open {} ({e}); {IP_INSTALL}",
            path.display()
        ))
    })
}

/// In a forked child before exec: joins the namespace open as `fd`, then becomes `owner` (uid, gid;
/// supplementary groups dropped). Only async-signal-safe calls.
fn join_in_child(fd: i32, owner: Option<(u32, u32)>) -> io::Result<()> {
    // SAFETY: setns(2), setgroups(2), setgid(2) and setuid(2) take plain values (setgroups a null
    // list of length 0) and have no memory-safety preconditions.
    unsafe {
        if libc::setns(fd, libc::CLONE_NEWNET) != 0 {
            return Err(io::Error::last_os_error());
        }
        if let Some((uid, gid)) = owner
            && (libc::setgroups(0, std::ptr::null()) != 0
                || libc::setgid(gid) != 0
                || libc::setuid(uid) != 0)
        {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_carry_their_owner_and_fit_interface_limits() {
        let name = namespace_name("4242 987654", 3);
        assert_eq!(name, "lockbench-4242-987654-3");
        assert_eq!(namespace_owner(&name).as_deref(), Some("4242 987654"));
        for other in [
            "lockbench-4242-3",
            "lockbench-x-1-2",
            "lockbench-1-2-3-4",
            "lbw42",
            "lockbench--1-2",
        ] {
            assert_eq!(namespace_owner(other), None, "{other}");
        }
        let link = host_link_name(4_194_304, 65_535);
        assert_eq!(link, "lb400000-ffff");
        assert!(link.len() <= 15);
    }

    #[test]
    fn a_free_block_avoids_every_used_address() {
        assert_eq!(
            block_addrs(0),
            (Ipv4Addr::new(10, 231, 0, 1), Ipv4Addr::new(10, 231, 0, 2))
        );
        assert_eq!(
            block_addrs(65),
            (Ipv4Addr::new(10, 231, 1, 5), Ipv4Addr::new(10, 231, 1, 6))
        );
        let used = parse_addresses(
            "1: lo    inet 127.0.0.1/8 scope host lo\\       valid_lft forever\n\
             5: lb1-0    inet 10.231.0.1/30 scope global lb1-0\n\
             7: eth0    inet 10.231.0.6/24 brd 10.231.0.255 scope global eth0\n",
        );
        assert_eq!(used.len(), 3);
        assert_eq!(free_block(&used, 0), Some(2));
        assert_eq!(free_block(&used, BLOCKS - 1), Some(BLOCKS - 1));
        assert_eq!(free_block(&used, 3), Some(3));
    }

    #[test]
    fn partition_rules_match_the_peer_ports_both_ways_and_counters_add_up() {
        let rules = partition_rules("t", Ipv4Addr::new(10, 231, 0, 1), &[40000, 40001]);
        assert!(
            rules.contains("hook input priority -10; policy accept;\n\t\tip saddr 10.231.0.1 tcp sport { 40000, 40001 } counter drop"),
            "{rules}"
        );
        assert!(
            rules.contains("hook output priority -10; policy accept;\n\t\tip daddr 10.231.0.1 tcp dport { 40000, 40001 } counter drop"),
            "{rules}"
        );
        let listing = "table inet t {\n\tchain input {\n\t\tip saddr 10.231.0.1 tcp sport { 40000, 40001 } counter packets 7 bytes 420 drop\n\t}\n\
                       \tchain output {\n\t\tip daddr 10.231.0.1 tcp dport { 40000, 40001 } counter packets 3 bytes 180 drop\n\t}\n}\n";
        assert_eq!(counted_packets(listing), 10);
        assert_eq!(counted_packets("table inet t {\n}\n"), 0);
    }
}
