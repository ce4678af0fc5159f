//! Remote workers, the driver's side (`--workers remote`): clients run in `lockbench worker --connect
//! ADDR` processes on this or other machines, which connect to the driver over TCP. Each connection
//! first presents the run's worker token (`LOCKBENCH_WORKER_TOKEN`, the same on every machine; never
//! a command-line argument, so it stays out of `ps`); the driver answers `ok` and keeps the connection
//! in a pool until a case takes it. A case takes one connection per client and runs the worker
//! protocol of worker processes over it ([`super::protocol`]); the worker reaches the protected
//! resource over a TCP port of the driver with the same token.
//!
//! Remote workers share no clock with the driver, so overlaps are judged from when the resource saw
//! each hold begin and end (see [`super::resource_socket`]), and the results say so. Faults that act
//! on a client's process or put a proxy in its path do not apply to remote workers.

use std::net::SocketAddr;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::net::TcpListener;
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::sync::{Mutex, mpsc};
use tokio::task::AbortHandle;

use super::protocol::Hello;
use super::resource_socket::same_secret;

/// The environment variable holding the worker token.
pub(crate) const TOKEN_ENV: &str = "LOCKBENCH_WORKER_TOKEN";
/// The shortest token accepted.
pub(crate) const MIN_TOKEN_LEN: usize = 16;
/// Where the driver listens for remote workers unless told otherwise.
pub(crate) const DEFAULT_LISTEN: &str = "127.0.0.1:7457";
/// How long a connecting worker has to present its token.
const HELLO_TIMEOUT: Duration = Duration::from_secs(10);

/// The worker token from [`TOKEN_ENV`], or why there is none usable.
pub(crate) fn token_from_env() -> Result<String, String> {
    match std::env::var(TOKEN_ENV) {
        Ok(token)
            if token.trim().len() >= MIN_TOKEN_LEN && !token.contains(char::is_whitespace) =>
        {
            Ok(token)
        }
        Ok(_) => Err(format!(
            "{TOKEN_ENV} must be at least {MIN_TOKEN_LEN} characters without spaces"
        )),
        Err(_) => Err(format!(
            "remote workers need {TOKEN_ENV} (at least {MIN_TOKEN_LEN} characters), the same on the driver and every worker"
        )),
    }
}

/// One remote worker's connection, authenticated and waiting for a case.
#[derive(Debug)]
pub(crate) struct RemoteLink {
    /// What the worker says.
    pub input: Lines<BufReader<OwnedReadHalf>>,
    /// Where the driver writes.
    pub output: OwnedWriteHalf,
    /// The driver's address as the worker reached it (the resource is offered on the same IP).
    pub local: SocketAddr,
}

/// The remote workers connected and not yet given a case.
#[derive(Debug)]
pub(crate) struct WorkerPool {
    address: SocketAddr,
    token: String,
    links: Mutex<mpsc::UnboundedReceiver<RemoteLink>>,
    accept: AbortHandle,
}

impl WorkerPool {
    /// Listens on `address` for workers presenting `token`.
    pub(crate) async fn listen(address: &str, token: String) -> Result<Self, String> {
        let listener = TcpListener::bind(address)
            .await
            .map_err(|e| format!("cannot listen for remote workers on {address}: {e}"))?;
        let address = listener
            .local_addr()
            .map_err(|e| format!("remote worker listener: {e}"))?;
        let (tx, rx) = mpsc::unbounded_channel();
        let accept = tokio::spawn(accept_loop(listener, token.clone(), tx)).abort_handle();
        Ok(WorkerPool {
            address,
            token,
            links: Mutex::new(rx),
            accept,
        })
    }

    /// Where it listens.
    pub(crate) fn address(&self) -> SocketAddr {
        self.address
    }

    /// The token workers present (also to the resource).
    pub(crate) fn token(&self) -> &str {
        &self.token
    }

    /// Takes `n` connected workers, waiting up to `timeout` for the missing ones.
    pub(crate) async fn take(
        &self,
        n: usize,
        timeout: Duration,
    ) -> Result<Vec<RemoteLink>, String> {
        let mut links = self.links.lock().await;
        let mut taken = Vec::with_capacity(n);
        let deadline = tokio::time::Instant::now() + timeout;
        while taken.len() < n {
            match tokio::time::timeout_at(deadline, links.recv()).await {
                Ok(Some(link)) => taken.push(link),
                Ok(None) => return Err("the remote worker listener stopped".into()),
                Err(_) => {
                    return Err(format!(
                        "{} of {n} remote workers connected to {} within {timeout:?} (start them with `{TOKEN_ENV}=… lockbench worker --connect {}`)",
                        taken.len(),
                        self.address,
                        self.address
                    ));
                }
            }
        }
        Ok(taken)
    }
}

impl Drop for WorkerPool {
    fn drop(&mut self) {
        self.accept.abort();
    }
}

async fn accept_loop(
    listener: TcpListener,
    token: String,
    links: mpsc::UnboundedSender<RemoteLink>,
) {
    loop {
        let Ok((stream, _peer)) = listener.accept().await else {
            // Out of descriptors or the like: wait rather than spin.
            tokio::time::sleep(Duration::from_millis(50)).await;
            continue;
        };
        let (token, links) = (token.clone(), links.clone());
        tokio::spawn(async move {
            let _ = stream.set_nodelay(true);
            let Ok(local) = stream.local_addr() else {
                return;
            };
            let (reader, mut output) = stream.into_split();
            let mut input = BufReader::new(reader).lines();
            let hello = tokio::time::timeout(HELLO_TIMEOUT, input.next_line()).await;
            let accepted = match hello {
                Ok(Ok(Some(line))) => serde_json::from_str::<Hello>(&line)
                    .is_ok_and(|hello| same_secret(&hello.token, &token)),
                _ => return,
            };
            let answer: &[u8] = if accepted {
                b"ok\n"
            } else {
                b"wrong worker token\n"
            };
            if output.write_all(answer).await.is_err() || !accepted {
                return;
            }
            let _ = links.send(RemoteLink {
                input,
                output,
                local,
            });
        });
    }
}
