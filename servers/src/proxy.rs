//! A fault-injecting TCP proxy on 127.0.0.1 in front of one server: forwards every connection
//! to the upstream address and, per direction and while running, passes, delays or blackholes
//! the bytes; it can also reset every live connection or refuse new ones. This kernel has no
//! netem, so network delay and partitions are made here.
//!
//! Each accepted connection gets four threads: per direction a reader, which reads a chunk and
//! queues it with the time it is due (or drops it, when blackholed), and a writer, which sends
//! queued chunks in order once due. They all exit when either side closes, on
//! [`Proxy::reset_all`], and when the proxy is dropped.

use std::collections::HashMap;
use std::io::{self, Read, Write};
use std::net::{Ipv4Addr, Shutdown, SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

/// How long the proxy waits for the upstream server to accept a connection.
const UPSTREAM_CONNECT_TIMEOUT: Duration = Duration::from_secs(2);
/// How often blocked writers and delayed chunks look at the reset/stop flags.
const FLAG_POLL: Duration = Duration::from_millis(20);
const CHUNK: usize = 64 * 1024;

/// Which way bytes flow through the proxy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Direction {
    /// From the client to the server (requests).
    Upstream,
    /// From the server to the client (replies, events).
    Downstream,
}

impl Direction {
    fn index(self) -> usize {
        match self {
            Direction::Upstream => 0,
            Direction::Downstream => 1,
        }
    }
}

/// What the proxy does to the bytes flowing in one direction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Fault {
    /// Forward at once.
    #[default]
    Pass,
    /// Forward each chunk this long after it was read, keeping the order.
    Delay(Duration),
    /// Read and drop everything; the connection stays open, so the peer just hears nothing.
    Blackhole,
}

/// A running proxy; dropping it closes the listener and every connection.
#[derive(Debug)]
pub struct Proxy {
    addr: SocketAddr,
    shared: Arc<Shared>,
    acceptor: Option<JoinHandle<()>>,
}

#[derive(Debug)]
struct Shared {
    upstream: Mutex<SocketAddr>,
    stopping: AtomicBool,
    refusing: AtomicBool,
    faults: Mutex<[Fault; 2]>,
    conns: Mutex<HashMap<u64, Arc<Conn>>>,
    next_id: AtomicU64,
    /// Bytes read and dropped under [`Fault::Blackhole`], both directions.
    blackholed: AtomicU64,
    /// Bytes forwarded late under [`Fault::Delay`], both directions.
    delayed: AtomicU64,
}

#[derive(Debug)]
struct Conn {
    id: u64,
    client: TcpStream,
    server: TcpStream,
    reset: AtomicBool,
}

impl Conn {
    /// (source, destination) for `direction`.
    fn ends(&self, direction: Direction) -> (&TcpStream, &TcpStream) {
        match direction {
            Direction::Upstream => (&self.client, &self.server),
            Direction::Downstream => (&self.server, &self.client),
        }
    }
}

impl Shared {
    fn conns(&self) -> MutexGuard<'_, HashMap<u64, Arc<Conn>>> {
        self.conns.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn faults(&self) -> MutexGuard<'_, [Fault; 2]> {
        self.faults.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn upstream(&self) -> SocketAddr {
        *self.upstream.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn fault(&self, direction: Direction) -> Fault {
        self.faults()[direction.index()]
    }

    fn done(&self, conn: &Conn) -> bool {
        conn.reset.load(Ordering::Acquire) || self.stopping.load(Ordering::Acquire)
    }
}

/// Makes the socket send a reset (RST) instead of a FIN when its last descriptor closes.
fn set_linger_zero(stream: &TcpStream) {
    let linger = libc::linger {
        l_onoff: 1,
        l_linger: 0,
    };
    // SAFETY: the fd is a valid open socket for the duration of the call, and the option value
    // points to a properly sized, initialised `linger` struct.
    unsafe {
        libc::setsockopt(
            stream.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_LINGER,
            (&raw const linger).cast(),
            std::mem::size_of::<libc::linger>() as libc::socklen_t,
        );
    }
}

impl Proxy {
    /// Starts a proxy on a free 127.0.0.1 port forwarding to `upstream`, with every direction
    /// on [`Fault::Pass`].
    pub fn start(upstream: SocketAddr) -> crate::Result<Proxy> {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared {
            upstream: Mutex::new(upstream),
            stopping: AtomicBool::new(false),
            refusing: AtomicBool::new(false),
            faults: Mutex::new([Fault::Pass; 2]),
            conns: Mutex::new(HashMap::new()),
            next_id: AtomicU64::new(0),
            blackholed: AtomicU64::new(0),
            delayed: AtomicU64::new(0),
        });
        let acceptor_shared = Arc::clone(&shared);
        let acceptor = thread::Builder::new()
            .name("lockbench-proxy-accept".into())
            .spawn(move || accept_loop(&listener, &acceptor_shared))?;
        Ok(Proxy {
            addr,
            shared,
            acceptor: Some(acceptor),
        })
    }

    /// The address clients connect to (127.0.0.1).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The server the proxy forwards new connections to.
    pub fn upstream(&self) -> SocketAddr {
        self.shared.upstream()
    }

    /// Forwards connections accepted from now on to `upstream` (e.g. a replica promoted in a
    /// failover). Live connections keep their server; [`reset_all`](Self::reset_all) ends them so
    /// the clients reconnect to the new one.
    pub fn set_upstream(&self, upstream: SocketAddr) {
        *self
            .shared
            .upstream
            .lock()
            .unwrap_or_else(|p| p.into_inner()) = upstream;
    }

    /// Sets the fault for one direction; it applies to every chunk read from now on, on live
    /// and new connections. Chunks already queued keep their due time.
    pub fn set(&self, direction: Direction, fault: Fault) {
        self.shared.faults()[direction.index()] = fault;
    }

    /// Sets the same fault for both directions.
    pub fn set_both(&self, fault: Fault) {
        *self.shared.faults() = [fault; 2];
    }

    /// The current fault of one direction.
    pub fn fault(&self, direction: Direction) -> Fault {
        self.shared.fault(direction)
    }

    /// When true, new connections are accepted and immediately closed with a reset; live ones
    /// are untouched.
    pub fn refuse(&self, refuse: bool) {
        self.shared.refusing.store(refuse, Ordering::Release);
    }

    /// Bytes dropped so far under [`Fault::Blackhole`] (both directions, since the start): the
    /// evidence that a partition took effect.
    pub fn blackholed_bytes(&self) -> u64 {
        self.shared.blackholed.load(Ordering::Relaxed)
    }

    /// Bytes forwarded late so far under [`Fault::Delay`] (both directions, since the start).
    pub fn delayed_bytes(&self) -> u64 {
        self.shared.delayed.load(Ordering::Relaxed)
    }

    /// Closes every live connection with a reset (`SO_LINGER` 0), on both the client and the
    /// server side, so both peers see "connection reset"; returns how many were live. New
    /// connections are still accepted.
    pub fn reset_all(&self) -> usize {
        let conns: Vec<Arc<Conn>> = self.shared.conns().drain().map(|(_, c)| c).collect();
        let live = conns.len();
        for conn in conns {
            conn.reset.store(true, Ordering::Release);
            set_linger_zero(&conn.client);
            set_linger_zero(&conn.server);
            // Wakes the readers without sending anything; the RST goes out when the last
            // thread drops its handle and the sockets close.
            let _ = conn.client.shutdown(Shutdown::Read);
            let _ = conn.server.shutdown(Shutdown::Read);
        }
        live
    }

    /// The local ports of the live connections to the upstream server (what the server sees as its
    /// clients' ports).
    pub fn upstream_ports(&self) -> Vec<u16> {
        self.shared
            .conns()
            .values()
            .filter_map(|c| Some(c.server.local_addr().ok()?.port()))
            .collect()
    }

    /// How many proxied connections are open right now.
    pub fn connections(&self) -> usize {
        self.shared.conns().len()
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.shared.stopping.store(true, Ordering::Release);
        for (_, conn) in self.shared.conns().drain() {
            let _ = conn.client.shutdown(Shutdown::Both);
            let _ = conn.server.shutdown(Shutdown::Both);
        }
        // Wake the blocking accept so the thread sees the flag. Only join if that worked.
        let woke = TcpStream::connect_timeout(&self.addr, Duration::from_secs(1)).is_ok();
        if let Some(acceptor) = self.acceptor.take()
            && woke
        {
            let _ = acceptor.join();
        }
    }
}

fn accept_loop(listener: &TcpListener, shared: &Arc<Shared>) {
    loop {
        let accepted = listener.accept();
        if shared.stopping.load(Ordering::Acquire) {
            return;
        }
        let client = match accepted {
            Ok((client, _)) => client,
            Err(_) => {
                // E.g. out of file descriptors: back off instead of spinning.
                thread::sleep(Duration::from_millis(10));
                continue;
            }
        };
        if shared.refusing.load(Ordering::Acquire) {
            set_linger_zero(&client);
            continue;
        }
        let conn_shared = Arc::clone(shared);
        let spawned = thread::Builder::new()
            .name("lockbench-proxy-conn".into())
            .spawn(move || serve(client, conn_shared));
        if spawned.is_err() {
            thread::sleep(Duration::from_millis(10));
        }
    }
}

/// Connects upstream, registers the connection and runs the upstream reader on this thread.
fn serve(client: TcpStream, shared: Arc<Shared>) {
    let server = match TcpStream::connect_timeout(&shared.upstream(), UPSTREAM_CONNECT_TIMEOUT) {
        Ok(server) => server,
        Err(_) => {
            set_linger_zero(&client);
            return;
        }
    };
    for stream in [&client, &server] {
        let _ = stream.set_nodelay(true);
        let _ = stream.set_write_timeout(Some(FLAG_POLL));
    }
    let conn = Arc::new(Conn {
        id: shared.next_id.fetch_add(1, Ordering::Relaxed),
        client,
        server,
        reset: AtomicBool::new(false),
    });
    shared.conns().insert(conn.id, Arc::clone(&conn));
    if shared.stopping.load(Ordering::Acquire) {
        close(&shared, &conn);
        return;
    }
    let mut directions = Vec::new();
    for direction in [Direction::Upstream, Direction::Downstream] {
        let (tx, rx) = mpsc::channel();
        let (writer_shared, writer_conn) = (Arc::clone(&shared), Arc::clone(&conn));
        let spawned = thread::Builder::new()
            .name("lockbench-proxy-write".into())
            .spawn(move || write_loop(&writer_shared, &writer_conn, direction, &rx));
        if spawned.is_err() {
            close(&shared, &conn);
            return;
        }
        directions.push((direction, tx));
    }
    let mut directions = directions.into_iter();
    let (Some(up), Some(down)) = (directions.next(), directions.next()) else {
        return;
    };
    let (down_shared, down_conn) = (Arc::clone(&shared), Arc::clone(&conn));
    let spawned = thread::Builder::new()
        .name("lockbench-proxy-read".into())
        .spawn(move || read_loop(&down_shared, &down_conn, down.0, &down.1));
    if spawned.is_err() {
        close(&shared, &conn);
        return;
    }
    read_loop(&shared, &conn, up.0, &up.1);
}

fn read_loop(
    shared: &Shared,
    conn: &Conn,
    direction: Direction,
    queue: &Sender<(Instant, Vec<u8>)>,
) {
    let (mut source, _) = conn.ends(direction);
    let mut buf = vec![0; CHUNK];
    loop {
        let n = match source.read(&mut buf) {
            Ok(0) => return,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(_) => return,
        };
        if shared.done(conn) {
            return;
        }
        let read_at = Instant::now();
        let due = match shared.fault(direction) {
            Fault::Pass => read_at,
            Fault::Delay(delay) => {
                shared.delayed.fetch_add(n as u64, Ordering::Relaxed);
                read_at + delay
            }
            Fault::Blackhole => {
                shared.blackholed.fetch_add(n as u64, Ordering::Relaxed);
                continue;
            }
        };
        if queue.send((due, buf[..n].to_vec())).is_err() {
            return;
        }
    }
}

fn write_loop(
    shared: &Shared,
    conn: &Conn,
    direction: Direction,
    queue: &Receiver<(Instant, Vec<u8>)>,
) {
    let (_, destination) = conn.ends(direction);
    'chunks: while let Ok((due, data)) = queue.recv() {
        loop {
            if shared.done(conn) {
                break 'chunks;
            }
            let now = Instant::now();
            if now >= due {
                break;
            }
            thread::sleep((due - now).min(FLAG_POLL));
        }
        if write_all(shared, conn, destination, &data).is_err() {
            break;
        }
    }
    close(shared, conn);
}

/// Writes all of `data`, re-checking the reset/stop flags whenever the peer is not reading.
fn write_all(shared: &Shared, conn: &Conn, mut stream: &TcpStream, data: &[u8]) -> io::Result<()> {
    let mut written = 0;
    while written < data.len() {
        match stream.write(&data[written..]) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => written += n,
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock
                        | io::ErrorKind::TimedOut
                        | io::ErrorKind::Interrupted
                ) =>
            {
                if shared.done(conn) {
                    return Err(e);
                }
            }
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Ends the connection: a FIN both ways unless it is being reset, and unregisters it.
fn close(shared: &Shared, conn: &Conn) {
    if !conn.reset.load(Ordering::Acquire) {
        let _ = conn.client.shutdown(Shutdown::Both);
        let _ = conn.server.shutdown(Shutdown::Both);
    }
    shared.conns().remove(&conn.id);
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    /// Opens a connection through `proxy` and reads one byte: the tag of the upstream listener that
    /// got it. Returns both ends and the tag.
    fn tag_through(proxy: &Proxy, upstreams: &[(&TcpListener, u8)]) -> (TcpStream, TcpStream, u8) {
        let mut client = TcpStream::connect(proxy.addr()).unwrap();
        client
            .set_read_timeout(Some(Duration::from_secs(5)))
            .unwrap();
        // Whichever listener the proxy connected to accepts; it answers with its tag.
        let deadline = Instant::now() + Duration::from_secs(5);
        let server = 'accept: loop {
            for (listener, tag) in upstreams {
                if let Ok((mut server, _)) = listener.accept() {
                    server.write_all(&[*tag]).unwrap();
                    break 'accept server;
                }
            }
            assert!(Instant::now() < deadline, "no upstream got the connection");
            thread::sleep(Duration::from_millis(5));
        };
        let mut byte = [0u8; 1];
        client.read_exact(&mut byte).unwrap();
        (client, server, byte[0])
    }

    #[test]
    fn set_upstream_moves_new_connections_only() {
        let a = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
        let b = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
        a.set_nonblocking(true).unwrap();
        b.set_nonblocking(true).unwrap();
        let proxy = Proxy::start(a.local_addr().unwrap()).unwrap();
        let upstreams = [(&a, b'a'), (&b, b'b')];
        let (_first, _first_server, tag) = tag_through(&proxy, &upstreams);
        assert_eq!(tag, b'a');
        proxy.set_upstream(b.local_addr().unwrap());
        assert_eq!(proxy.upstream(), b.local_addr().unwrap());
        let (_second, _second_server, tag) = tag_through(&proxy, &upstreams);
        assert_eq!(
            tag, b'b',
            "a connection made after set_upstream goes to the new server"
        );
        assert_eq!(
            proxy.connections(),
            2,
            "the first connection stays on its server"
        );
    }
}
