//! The protected resource over a Unix socket, for worker processes, or over TCP, for remote workers
//! (which first present the run's worker token, and whose holds are timed by the resource's own clock
//! as their messages arrive, since they share no clock with it): the lockbench process serves it
//! ([`ResourceServer`]), each worker process connects once ([`RemoteResource`]). A worker reaches the
//! resource through a [`ResourceClient`]: directly in tasks mode, over the socket in processes mode.
//!
//! Why a socket rather than shared memory: process workers exist to be paused (SIGSTOP) and killed
//! (SIGKILL). A worker stopped inside a lock of a shared-memory resource would freeze every other
//! worker's critical section (or, killed, leave it locked for good); behind a socket, the resource
//! stays in a process no fault touches, and every operation is applied whole or not at all.
//!
//! Both ends use plain blocking I/O on dedicated threads (the server: one thread per connection; the
//! worker: its own thread, for the length of one round trip): the kernel then wakes the reader
//! directly, which costs far less than waking a parked async runtime on each side of every call.
//!
//! Wire protocol, one line per request and per answer:
//!
//! ```text
//! r <key> <token|-> [<acquired_at>]  ->  <counter>
//! w <key> <value> <token|-> <lease>   ->  a (accepted) | x (rejected)
//! h <client> <key> <acquire_started> <start>   ->  k   (a hold began; sent before the read)
//! e <client> <key> <end> <ended_by>            ->  k   (it ended; sent before the release)
//! c                                             ->  <the resource's clock, ns>
//! ```
//!
//! A remote worker reads the resource's clock a few times when it connects (`c`) and keeps the
//! offset of the round trip with the shortest time (its error is at most half that round trip), and
//! sends its hold times corrected by it. The resource still times the holds by its own clock as the
//! messages arrive; the difference between its stamp and the worker's corrected one is the delay the
//! transport adds to each hold's begin and end, kept for [`ResourceServer::stamp_delays`].

use std::fmt::Write as _;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::resource::{Resource, WriteVerdict};
use crate::base::clock::mono_now_ns;
use crate::base::holds::EndedBy;

/// How long a worker waits for one answer before giving up (the driver is gone or stuck).
const ANSWER_TIMEOUT: Duration = Duration::from_secs(30);

/// Serves a [`Resource`] on a Unix socket (worker processes) or a TCP port (remote workers) until
/// stopped or dropped.
pub(crate) struct ResourceServer {
    /// Connects to the listener once, so a blocked accept wakes and sees the stop flag.
    wake: Box<dyn Fn() + Send>,
    stopping: Arc<AtomicBool>,
    accept: Option<JoinHandle<()>>,
    /// Remote workers: per hold message, its arrival stamp minus the worker's clock-corrected one.
    delays: Option<StampDelays>,
}

/// Per hold message of a remote worker, the resource's arrival stamp minus the worker's own time of
/// the event, corrected to the resource's clock (ns; negative when the correction overshot).
type StampDelays = Arc<std::sync::Mutex<Vec<i64>>>;

impl std::fmt::Debug for ResourceServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResourceServer")
            .field("running", &self.accept.is_some())
            .finish()
    }
}

/// What a connection must do first, and whose clock times its holds.
#[derive(Clone)]
struct Access {
    /// The first line must be `t <token>` (remote workers).
    token: Option<Arc<str>>,
    /// Hold beginnings and ends, and each reader's acquire time, are taken from the resource's own
    /// clock as each message arrives, not from the worker's (remote workers share no clock with it).
    stamp: bool,
    /// With `stamp`: where each hold message's arrival stamp minus the worker's time goes.
    delays: Option<StampDelays>,
}

/// A connection both ends of which can be used at once.
trait Duplex: Read + Write + Send + Sized + 'static {
    fn duplicate(&self) -> io::Result<Self>;
}

impl Duplex for UnixStream {
    fn duplicate(&self) -> io::Result<Self> {
        self.try_clone()
    }
}

impl Duplex for TcpStream {
    fn duplicate(&self) -> io::Result<Self> {
        self.set_nodelay(true)?;
        self.try_clone()
    }
}

impl ResourceServer {
    /// Binds `path` and starts accepting connections.
    pub(crate) fn start(path: &Path, resource: Arc<Resource>) -> io::Result<Self> {
        let listener = UnixListener::bind(path)?;
        let access = Access {
            token: None,
            stamp: false,
            delays: None,
        };
        let path = path.to_path_buf();
        Self::spawn(
            move |stopping| accept_loop(listener.incoming(), &resource, &access, &stopping),
            Box::new(move || drop(UnixStream::connect(&path))),
            None,
        )
    }

    /// Binds a free TCP port on `ip` for remote workers, whose connections must first present
    /// `token`; holds are timed by the resource's clock. Returns the server and its address.
    pub(crate) fn start_tcp(
        ip: IpAddr,
        resource: Arc<Resource>,
        token: Arc<str>,
    ) -> io::Result<(Self, SocketAddr)> {
        let listener = TcpListener::bind((ip, 0))?;
        let address = listener.local_addr()?;
        resource.holds.keep_all();
        let delays = StampDelays::default();
        let access = Access {
            token: Some(token),
            stamp: true,
            delays: Some(delays.clone()),
        };
        let server = Self::spawn(
            move |stopping| accept_loop(listener.incoming(), &resource, &access, &stopping),
            Box::new(move || drop(TcpStream::connect_timeout(&address, ANSWER_TIMEOUT))),
            Some(delays),
        )?;
        Ok((server, address))
    }

    fn spawn(
        serve: impl FnOnce(Arc<AtomicBool>) + Send + 'static,
        wake: Box<dyn Fn() + Send>,
        delays: Option<StampDelays>,
    ) -> io::Result<Self> {
        let stopping = Arc::new(AtomicBool::new(false));
        let accept = std::thread::Builder::new()
            .name("resource-accept".into())
            .spawn({
                let stopping = stopping.clone();
                move || serve(stopping)
            })?;
        Ok(ResourceServer {
            wake,
            stopping,
            accept: Some(accept),
            delays,
        })
    }

    /// Remote workers (a TCP server): per hold message so far, the resource's arrival stamp minus
    /// the worker's own time of the event corrected to the resource's clock, ns, sorted. Empty for
    /// worker processes, whose own times are used.
    pub(crate) fn stamp_delays(&self) -> Vec<i64> {
        let mut delays = self
            .delays
            .as_ref()
            .map(|d| d.lock().unwrap_or_else(|e| e.into_inner()).clone())
            .unwrap_or_default();
        delays.sort_unstable();
        delays
    }

    /// Stops accepting (connection threads end when their worker closes its end).
    pub(crate) fn stop(&mut self) {
        if let Some(accept) = self.accept.take() {
            self.stopping.store(true, Ordering::Release);
            // Wake the blocked accept; it sees the flag and returns.
            (self.wake)();
            let _ = accept.join();
        }
    }
}

impl Drop for ResourceServer {
    fn drop(&mut self) {
        self.stop();
    }
}

fn accept_loop<S: Duplex>(
    incoming: impl Iterator<Item = io::Result<S>>,
    resource: &Arc<Resource>,
    access: &Access,
    stopping: &AtomicBool,
) {
    for stream in incoming {
        if stopping.load(Ordering::Acquire) {
            return;
        }
        let Ok(stream) = stream else { continue };
        let (resource, access) = (resource.clone(), access.clone());
        let spawned = std::thread::Builder::new()
            .name("resource-conn".into())
            .spawn(move || serve_connection(stream, &resource, &access));
        if spawned.is_err() {
            return;
        }
    }
}

fn serve_connection<S: Duplex>(stream: S, resource: &Resource, access: &Access) {
    let Ok(read_half) = stream.duplicate() else {
        return;
    };
    let mut writer = stream;
    let mut reader = BufReader::new(read_half);
    let mut line = String::new();
    if let Some(token) = &access.token {
        // A remote worker's first line is its token; anything else ends the connection unanswered.
        let presented = reader
            .read_line(&mut line)
            .ok()
            .and_then(|_| line.trim_end().strip_prefix("t "));
        if !presented.is_some_and(|p| same_secret(p, token)) || writer.write_all(b"k\n").is_err() {
            return;
        }
    }
    // With `stamp`: when this connection's current hold began, on the resource's clock.
    let mut began_at = None;
    loop {
        line.clear();
        match reader.read_line(&mut line) {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
        if access.stamp {
            line = stamped(resource, &line, &mut began_at, access.delays.as_ref());
        }
        // A malformed request ends the connection; the worker reports the error.
        let Some(answer) = answer(resource, &line) else {
            return;
        };
        if writer.write_all(answer.as_bytes()).is_err() {
            return;
        }
    }
}

/// `line` with the worker's times replaced by the resource's: a hold begins and ends when its
/// message arrives (its acquire started as long before as the worker says the acquire took), and a
/// read's acquire time is when this connection's hold began. The arrival stamp minus the worker's
/// own (clock-corrected) time of a hold's begin or end goes to `delays`.
fn stamped(
    resource: &Resource,
    line: &str,
    began_at: &mut Option<u64>,
    delays: Option<&StampDelays>,
) -> String {
    let words: Vec<&str> = line.split_ascii_whitespace().collect();
    let now = resource.now();
    let worker_time = match words.as_slice() {
        ["h", _, _, _, at] | ["e", _, _, at, _] => at.parse::<u64>().ok(),
        _ => None,
    };
    if let (Some(delays), Some(at)) = (delays, worker_time) {
        let delay = i64::try_from(i128::from(now) - i128::from(at)).unwrap_or(i64::MAX);
        delays.lock().unwrap_or_else(|e| e.into_inner()).push(delay);
    }
    match words.as_slice() {
        ["h", client, key, acquire_started, start] => {
            // The acquire's length is the worker's to tell (a duration needs no shared clock).
            let waited = match (acquire_started.parse::<u64>(), start.parse::<u64>()) {
                (Ok(a), Ok(b)) => b.saturating_sub(a),
                _ => 0,
            };
            *began_at = Some(now);
            format!("h {client} {key} {} {now}\n", now.saturating_sub(waited))
        }
        ["e", client, key, _, ended_by] => format!("e {client} {key} {now} {ended_by}\n"),
        ["r", key, token, _] => match began_at {
            Some(at) => format!("r {key} {token} {at}\n"),
            None => format!("r {key} {token}\n"),
        },
        _ => line.to_owned(),
    }
}

/// Compares a presented secret with the expected one in time independent of where they differ.
pub(crate) fn same_secret(presented: &str, expected: &str) -> bool {
    let (a, b) = (presented.as_bytes(), expected.as_bytes());
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

fn answer(resource: &Resource, line: &str) -> Option<String> {
    let mut words = line.split_ascii_whitespace();
    let op = words.next()?;
    let mut number = || -> Option<u64> { words.next()?.parse().ok() };
    match op {
        "c" => return Some(format!("{}\n", resource.now())),
        "h" => {
            let (client, key) = (
                u32::try_from(number()?).ok()?,
                u32::try_from(number()?).ok()?,
            );
            let (acquire_started, start) = (number()?, number()?);
            resource.holds.began(client, key, acquire_started, start);
            return Some("k\n".to_owned());
        }
        "e" => {
            let (client, key) = (
                u32::try_from(number()?).ok()?,
                u32::try_from(number()?).ok()?,
            );
            let end = number()?;
            let ended_by = EndedBy::try_from(u8::try_from(number()?).ok()?).ok()?;
            resource.holds.ended(client, key, end, ended_by);
            return Some("k\n".to_owned());
        }
        _ => {}
    }
    let key: u32 = words.next()?.parse().ok()?;
    let token = |word: &str| -> Option<Option<u64>> {
        if word == "-" {
            Some(None)
        } else {
            word.parse().ok().map(Some)
        }
    };
    match op {
        "r" => {
            let token = token(words.next()?)?;
            let acquired_at = match words.next() {
                Some(word) => word.parse().ok()?,
                None => u64::MAX,
            };
            Some(format!(
                "{}\n",
                resource.read_acquired(key, token, acquired_at)
            ))
        }
        "w" => {
            let value: u64 = words.next()?.parse().ok()?;
            let token = token(words.next()?)?;
            let lease: u64 = words.next()?.parse().ok()?;
            Some(match resource.write(key, value, token, lease) {
                WriteVerdict::Accepted => "a\n".to_owned(),
                WriteVerdict::Rejected => "x\n".to_owned(),
            })
        }
        _ => None,
    }
}

/// A worker process's connection to the resource. Calls block the calling thread for one round trip.
pub(crate) struct RemoteResource {
    reader: BufReader<Box<dyn Read + Send>>,
    writer: Box<dyn Write + Send>,
    request: String,
    answer: String,
    /// Added to this worker's clock to get the resource's (remote workers; 0 over the Unix socket,
    /// whose ends share the machine's clock).
    offset_ns: i128,
}

impl std::fmt::Debug for RemoteResource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RemoteResource").finish_non_exhaustive()
    }
}

/// Where a worker finds the resource. Its `Debug` and `Display` leave the token out.
#[derive(Clone, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum ResourceAddress {
    /// The driver's Unix socket (worker processes on its machine).
    Unix(PathBuf),
    /// The driver's TCP port and the token to present (remote workers).
    Tcp {
        /// `host:port`.
        address: String,
        /// Sent first, as `t <token>`.
        token: String,
    },
}

impl std::fmt::Display for ResourceAddress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ResourceAddress::Unix(path) => write!(f, "{}", path.display()),
            ResourceAddress::Tcp { address, .. } => write!(f, "tcp://{address}"),
        }
    }
}

impl std::fmt::Debug for ResourceAddress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ResourceAddress({self})")
    }
}

fn push_token(out: &mut String, token: Option<u64>) {
    match token {
        Some(t) => {
            let _ = write!(out, "{t}");
        }
        None => out.push('-'),
    }
}

impl RemoteResource {
    /// Connects to the socket at `path`.
    pub(crate) fn connect(path: &Path) -> io::Result<Self> {
        let stream = UnixStream::connect(path)?;
        stream.set_read_timeout(Some(ANSWER_TIMEOUT))?;
        stream.set_write_timeout(Some(ANSWER_TIMEOUT))?;
        Ok(Self::over(Box::new(stream.duplicate()?), Box::new(stream)))
    }

    /// Connects to the resource at `address` (a TCP one is given its token first).
    pub(crate) fn connect_to(address: &ResourceAddress) -> io::Result<Self> {
        let (address, token) = match address {
            ResourceAddress::Unix(path) => return Self::connect(path),
            ResourceAddress::Tcp { address, token } => (address, token),
        };
        let target = address
            .to_socket_addrs()?
            .next()
            .ok_or_else(|| io::Error::other(format!("{address}: no address")))?;
        let stream = TcpStream::connect_timeout(&target, ANSWER_TIMEOUT)?;
        stream.set_read_timeout(Some(ANSWER_TIMEOUT))?;
        stream.set_write_timeout(Some(ANSWER_TIMEOUT))?;
        let mut resource = Self::over(Box::new(stream.duplicate()?), Box::new(stream));
        resource.request = format!("t {token}\n");
        resource
            .acknowledged()
            .map_err(|_| io::Error::other("the resource refused the worker token"))?;
        resource.offset_ns = resource.clock_offset()?;
        Ok(resource)
    }

    /// The resource's clock minus this process's, from the shortest of a few round trips (its
    /// error is at most half that round trip).
    fn clock_offset(&mut self) -> io::Result<i128> {
        let mut best: Option<(u64, i128)> = None;
        for _ in 0..8 {
            self.request.clear();
            self.request.push_str("c\n");
            let sent = mono_now_ns();
            let answer = self.call()?;
            let theirs: u64 = answer.parse().map_err(|_| {
                io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("bad clock answer {answer:?}"),
                )
            })?;
            let back = mono_now_ns();
            let round_trip = back.saturating_sub(sent);
            let offset = i128::from(theirs) - (i128::from(sent) + i128::from(back)) / 2;
            if best.is_none_or(|(rtt, _)| round_trip < rtt) {
                best = Some((round_trip, offset));
            }
        }
        Ok(best.map_or(0, |(_, offset)| offset))
    }

    /// `t` (this process's clock) on the resource's clock.
    fn on_resource_clock(&self, t: u64) -> u64 {
        u64::try_from((i128::from(t) + self.offset_ns).max(0)).unwrap_or(u64::MAX)
    }

    fn over(reader: Box<dyn Read + Send>, writer: Box<dyn Write + Send>) -> Self {
        RemoteResource {
            reader: BufReader::new(reader),
            writer,
            request: String::with_capacity(64),
            answer: String::with_capacity(32),
            offset_ns: 0,
        }
    }

    fn call(&mut self) -> io::Result<&str> {
        self.writer.write_all(self.request.as_bytes())?;
        self.answer.clear();
        if self.reader.read_line(&mut self.answer)? == 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "resource closed",
            ));
        }
        Ok(self.answer.trim_end())
    }

    fn acknowledged(&mut self) -> io::Result<()> {
        match self.call()? {
            "k" => Ok(()),
            other => Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("bad hold answer {other:?}"),
            )),
        }
    }

    /// Tells the resource `client`'s hold of `key` began (see [`super::resource::HoldLog`]).
    pub(crate) fn hold_began(
        &mut self,
        client: u32,
        key: u32,
        acquire_started: u64,
        start: u64,
    ) -> io::Result<()> {
        let (acquire_started, start) = (
            self.on_resource_clock(acquire_started),
            self.on_resource_clock(start),
        );
        self.request.clear();
        let _ = writeln!(self.request, "h {client} {key} {acquire_started} {start}");
        self.acknowledged()
    }

    /// Tells the resource `client`'s hold of `key` ended.
    pub(crate) fn hold_ended(
        &mut self,
        client: u32,
        key: u32,
        end: u64,
        ended_by: EndedBy,
    ) -> io::Result<()> {
        let end = self.on_resource_clock(end);
        self.request.clear();
        let _ = writeln!(
            self.request,
            "e {client} {key} {end} {}",
            u8::from(ended_by)
        );
        self.acknowledged()
    }

    /// Reads `key`'s counter, announcing `token`.
    #[cfg(test)]
    pub(crate) fn read(&mut self, key: u32, token: Option<u64>) -> io::Result<u64> {
        self.read_acquired(key, token, None)
    }

    /// Reads `key`'s counter, announcing `token` and when its lease was acquired.
    pub(crate) fn read_acquired(
        &mut self,
        key: u32,
        token: Option<u64>,
        acquired_at: Option<u64>,
    ) -> io::Result<u64> {
        self.request.clear();
        let _ = write!(self.request, "r {key} ");
        push_token(&mut self.request, token);
        if let Some(at) = acquired_at {
            let _ = write!(self.request, " {at}");
        }
        self.request.push('\n');
        let answer = self.call()?;
        answer.parse().map_err(|_| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                format!("bad read answer {answer:?}"),
            )
        })
    }

    /// Writes `value` to `key` for `lease` with `token`.
    pub(crate) fn write(
        &mut self,
        key: u32,
        value: u64,
        token: Option<u64>,
        lease: u64,
    ) -> io::Result<WriteVerdict> {
        self.request.clear();
        let _ = write!(self.request, "w {key} {value} ");
        push_token(&mut self.request, token);
        let _ = writeln!(self.request, " {lease}");
        match self.call()? {
            "a" => Ok(WriteVerdict::Accepted),
            "x" => Ok(WriteVerdict::Rejected),
            other => Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("bad write answer {other:?}"),
            )),
        }
    }
}

/// How a worker reaches the resource: directly (tasks) or over the socket (processes).
#[derive(Debug)]
pub(crate) enum ResourceClient {
    /// Same process.
    Local(Arc<Resource>),
    /// Worker process.
    Remote(RemoteResource),
}

impl ResourceClient {
    /// A worker process tells the resource a hold began (in tasks mode nothing: no worker is killed).
    #[inline]
    pub(crate) async fn hold_began(
        &mut self,
        client: u32,
        key: u32,
        acquire_started: u64,
        start: u64,
    ) -> io::Result<()> {
        match self {
            ResourceClient::Local(_) => Ok(()),
            ResourceClient::Remote(r) => r.hold_began(client, key, acquire_started, start),
        }
    }

    /// A worker process tells the resource the hold ended (in tasks mode nothing).
    #[inline]
    pub(crate) async fn hold_ended(
        &mut self,
        client: u32,
        key: u32,
        end: u64,
        ended_by: EndedBy,
    ) -> io::Result<()> {
        match self {
            ResourceClient::Local(_) => Ok(()),
            ResourceClient::Remote(r) => r.hold_ended(client, key, end, ended_by),
        }
    }

    /// See [`Resource::read_acquired`].
    #[inline]
    pub(crate) async fn read(
        &mut self,
        key: u32,
        token: Option<u64>,
        acquired_at: u64,
    ) -> io::Result<u64> {
        match self {
            ResourceClient::Local(r) => Ok(r.read_acquired(key, token, acquired_at)),
            ResourceClient::Remote(r) => r.read_acquired(key, token, Some(acquired_at)),
        }
    }

    /// See [`Resource::write`].
    #[inline]
    pub(crate) async fn write(
        &mut self,
        key: u32,
        value: u64,
        token: Option<u64>,
        lease: u64,
    ) -> io::Result<WriteVerdict> {
        match self {
            ResourceClient::Local(r) => Ok(r.write(key, value, token, lease)),
            ResourceClient::Remote(r) => r.write(key, value, token, lease),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::clock::MonoClock;
    use crate::base::stop::StopSignal;

    #[test]
    fn a_resource_address_never_shows_its_token() {
        let address = ResourceAddress::Tcp {
            address: "127.0.0.1:7000".into(),
            token: "very-secret-worker-token".into(),
        };
        for shown in [address.to_string(), format!("{address:?}")] {
            assert!(shown.contains("127.0.0.1:7000"), "{shown}");
            assert!(!shown.contains("very-secret"), "{shown}");
        }
    }

    #[test]
    fn the_socket_gives_the_same_answers_and_stops() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("resource.sock");
        let shared = Arc::new(Resource::new(1, MonoClock::new(), None, StopSignal::new()));
        let mut server = ResourceServer::start(&path, shared.clone()).expect("serves");
        let mut a = RemoteResource::connect(&path).expect("connect a");
        let mut b = RemoteResource::connect(&path).expect("connect b");
        let va = a.read(0, Some(1)).expect("read a");
        let vb = b.read(0, Some(2)).expect("read b");
        assert_eq!(
            b.write(0, vb + 1, Some(2), 2).ok(),
            Some(WriteVerdict::Accepted)
        );
        assert_eq!(
            a.write(0, va + 1, Some(1), 1).ok(),
            Some(WriteVerdict::Rejected)
        );
        assert_eq!(a.read(0, None).ok(), Some(1));
        assert_eq!(shared.totals().stale_rejected, 1);
        assert!(a.read(7, None).is_ok(), "unknown keys read 0");
        server.stop();
        assert!(
            RemoteResource::connect(&path)
                .and_then(|mut c| c.read(0, None))
                .is_err()
        );
    }

    /// Set in the child process of `killed_holders_leave_every_hold_on_the_record`: `SOCKET,LOG,CLIENT`.
    const HOLD_CHILD: &str = "LOCKBENCH_TEST_HOLD_CHILD";

    /// The holder the kill test runs in a child process (the test binary again): announces holds of
    /// key 0 back to back, and after each acknowledged announcement appends it to its own log with an
    /// unbuffered write (so what it wrote survives a SIGKILL). Without the variable it does nothing.
    #[test]
    fn hold_child() {
        let Ok(spec) = std::env::var(HOLD_CHILD) else {
            return;
        };
        let parts: Vec<&str> = spec.split(',').collect();
        let client: u32 = parts[2].parse().expect("client");
        let mut resource = RemoteResource::connect(Path::new(parts[0])).expect("connects");
        let mut log = std::fs::OpenOptions::new()
            .append(true)
            .open(parts[1])
            .expect("log");
        let mut t: u64 = 1_000;
        loop {
            resource.hold_began(client, 0, t, t + 1).expect("began");
            log.write_all(format!("b {}\n", t + 1).as_bytes())
                .expect("log");
            std::thread::sleep(Duration::from_micros(300));
            resource
                .hold_ended(client, 0, t + 5, EndedBy::Released)
                .expect("ended");
            log.write_all(format!("e {}\n", t + 5).as_bytes())
                .expect("log");
            t += 10;
        }
    }

    #[test]
    fn killed_holders_leave_every_hold_on_the_record() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("resource.sock");
        let shared = Arc::new(Resource::new(1, MonoClock::new(), None, StopSignal::new()));
        let _server = ResourceServer::start(&path, shared.clone()).expect("serves");
        for client in 0..6u32 {
            let log = dir.path().join(format!("holds-{client}.log"));
            std::fs::write(&log, "").expect("log file");
            let mut child = std::process::Command::new(std::env::current_exe().expect("exe"))
                .args([
                    "--exact",
                    "driver::resource_socket::tests::hold_child",
                    "--nocapture",
                ])
                .env(
                    HOLD_CHILD,
                    format!("{},{},{client}", path.display(), log.display()),
                )
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .spawn()
                .expect("child starts");
            // Let it hold a varying number of times, then SIGKILL it mid-stride.
            std::thread::sleep(Duration::from_millis(150 + 37 * u64::from(client)));
            child.kill().expect("SIGKILL");
            child.wait().expect("reaped");
            let killed_at = u64::MAX / 2;
            let text = std::fs::read_to_string(&log).expect("log");
            let lines: Vec<(&str, u64)> = text
                .lines()
                .map(|l| {
                    let (op, t) = l.split_once(' ').expect("op and time");
                    (op, t.parse().expect("time"))
                })
                .collect();
            assert!(lines.len() >= 4, "client {client} held a few times: {text}");
            // What the holder knows it did: ended holds, and an open one if its last line began it.
            let ended_by_holder: Vec<u64> = lines
                .iter()
                .filter(|(op, _)| *op == "b")
                .map(|(_, t)| *t)
                .collect();
            let record = shared.holds.of_killed(client, 0, killed_at);
            let starts: Vec<u64> = record.iter().map(|i| i.start).collect();
            // Nothing lost: every hold the holder logged is on the record, in order.
            assert!(
                starts.len() >= ended_by_holder.len(),
                "client {client}: the record has {} holds, the holder logged {}",
                starts.len(),
                ended_by_holder.len()
            );
            assert_eq!(
                &starts[..ended_by_holder.len()],
                &ended_by_holder[..],
                "client {client}"
            );
            // Nothing invented: at most the one hold acknowledged just before the kill, not yet
            // in the holder's log.
            assert!(starts.len() <= ended_by_holder.len() + 1, "client {client}");
            for (i, interval) in record.iter().enumerate() {
                let logged_end = lines
                    .iter()
                    .find(|(op, t)| *op == "e" && *t == interval.start + 4)
                    .map(|(_, t)| *t);
                let last = i + 1 == record.len();
                match logged_end {
                    Some(end) => {
                        assert_eq!(interval.end, end);
                        assert_eq!(interval.ended_by, EndedBy::Released);
                    }
                    // Only the last hold can lack its end in the log: ended on the record just
                    // before the kill, or open at the kill and closed then.
                    None => {
                        assert!(last, "client {client}: hold {interval:?} has no end");
                        assert!(interval.end == interval.start + 4 || interval.end == killed_at);
                    }
                }
                if interval.end == killed_at {
                    assert!(last && interval.ended_by == EndedBy::Stopped);
                }
            }
        }
    }

    #[test]
    fn a_remote_worker_corrects_its_clock_and_the_resource_keeps_each_stamps_delay() {
        let shared = Arc::new(Resource::new(1, MonoClock::new(), None, StopSignal::new()));
        let token = "a-worker-token-of-some-length";
        let (server, address) =
            ResourceServer::start_tcp("127.0.0.1".parse().expect("ip"), shared, token.into())
                .expect("serves");
        let mut worker = RemoteResource::connect_to(&ResourceAddress::Tcp {
            address: address.to_string(),
            token: token.into(),
        })
        .expect("connects");
        // One machine, one CLOCK_MONOTONIC: the offset is within the shortest round trip.
        assert!(worker.offset_ns.abs() < 5_000_000, "{}", worker.offset_ns);
        let t = mono_now_ns();
        worker.hold_began(0, 0, t, t).expect("began");
        worker
            .hold_ended(0, 0, mono_now_ns(), EndedBy::Released)
            .expect("ended");
        let delays = server.stamp_delays();
        assert_eq!(delays.len(), 2, "{delays:?}");
        for d in delays {
            assert!((-5_000_000..1_000_000_000).contains(&d), "{d} ns");
        }
    }

    #[test]
    fn malformed_requests_end_the_connection() {
        let shared = Resource::new(1, MonoClock::new(), None, StopSignal::new());
        assert_eq!(answer(&shared, "r 0 -\n").as_deref(), Some("0\n"));
        assert_eq!(answer(&shared, "w 0 5 3 9\n").as_deref(), Some("a\n"));
        for bad in ["", "q 0", "r x -", "r 0 y", "w 0 1 2"] {
            assert!(answer(&shared, bad).is_none(), "{bad:?}");
        }
    }
}
