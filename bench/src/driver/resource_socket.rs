//! The protected resource over a Unix socket, for worker processes: the lockbench process serves it
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
//! r <key> <token|->                   ->  <counter>
//! w <key> <value> <token|-> <lease>   ->  a (accepted) | x (rejected)
//! ```

use std::fmt::Write as _;
use std::io::{self, BufRead, BufReader, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use super::resource::{Resource, WriteVerdict};

/// How long a worker waits for one answer before giving up (the driver is gone or stuck).
const ANSWER_TIMEOUT: Duration = Duration::from_secs(30);

/// Serves a [`Resource`] on a Unix socket until stopped or dropped.
#[derive(Debug)]
pub(crate) struct ResourceServer {
    path: PathBuf,
    stopping: Arc<AtomicBool>,
    accept: Option<JoinHandle<()>>,
}

impl ResourceServer {
    /// Binds `path` and starts accepting connections.
    pub(crate) fn start(path: &Path, resource: Arc<Resource>) -> io::Result<Self> {
        let listener = UnixListener::bind(path)?;
        let stopping = Arc::new(AtomicBool::new(false));
        let accept = std::thread::Builder::new()
            .name("resource-accept".into())
            .spawn({
                let stopping = stopping.clone();
                move || accept_loop(listener, resource, stopping)
            })?;
        Ok(ResourceServer {
            path: path.to_path_buf(),
            stopping,
            accept: Some(accept),
        })
    }

    /// Stops accepting (connection threads end when their worker closes its end).
    pub(crate) fn stop(&mut self) {
        if let Some(accept) = self.accept.take() {
            self.stopping.store(true, Ordering::Release);
            // Wake the blocked accept; it sees the flag and returns.
            let _ = UnixStream::connect(&self.path);
            let _ = accept.join();
        }
    }
}

impl Drop for ResourceServer {
    fn drop(&mut self) {
        self.stop();
    }
}

fn accept_loop(listener: UnixListener, resource: Arc<Resource>, stopping: Arc<AtomicBool>) {
    for stream in listener.incoming() {
        if stopping.load(Ordering::Acquire) {
            return;
        }
        let Ok(stream) = stream else { continue };
        let resource = resource.clone();
        let spawned = std::thread::Builder::new()
            .name("resource-conn".into())
            .spawn(move || serve_connection(stream, &resource));
        if spawned.is_err() {
            return;
        }
    }
}

fn serve_connection(stream: UnixStream, resource: &Resource) {
    let Ok(read_half) = stream.try_clone() else {
        return;
    };
    let mut writer = stream;
    let mut reader = BufReader::new(read_half);
    let mut line = String::new();
    loop {
        line.clear();
        match reader.read_line(&mut line) {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
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

fn answer(resource: &Resource, line: &str) -> Option<String> {
    let mut words = line.split_ascii_whitespace();
    let op = words.next()?;
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
            Some(format!("{}\n", resource.read(key, token)))
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
#[derive(Debug)]
pub(crate) struct RemoteResource {
    reader: BufReader<UnixStream>,
    writer: UnixStream,
    request: String,
    answer: String,
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
        Ok(RemoteResource {
            reader: BufReader::new(stream.try_clone()?),
            writer: stream,
            request: String::with_capacity(64),
            answer: String::with_capacity(32),
        })
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

    /// Reads `key`'s counter, announcing `token`.
    pub(crate) fn read(&mut self, key: u32, token: Option<u64>) -> io::Result<u64> {
        self.request.clear();
        let _ = write!(self.request, "r {key} ");
        push_token(&mut self.request, token);
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
    /// See [`Resource::read`].
    #[inline]
    pub(crate) async fn read(&mut self, key: u32, token: Option<u64>) -> io::Result<u64> {
        match self {
            ResourceClient::Local(r) => Ok(r.read(key, token)),
            ResourceClient::Remote(r) => r.read(key, token),
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
    use crate::clock::MonoClock;
    use crate::stop::StopSignal;

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
