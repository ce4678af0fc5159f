//! A self-reconnecting command connection (redis-rs's `ConnectionManager`) that counts the requests its
//! server sees (in its client's [`RequestCount`]), through reconnects.
//!
//! - A command or pipeline is counted when sent (so one in flight is counted already), and taken back
//!   if it failed because the link was broken: no server read it. One that timed out stays counted (it
//!   was written; the server reads it when it can).
//! - Every connection the manager opens starts with a handshake (`AUTH` with a password, `SELECT` for a
//!   database other than 0), the first and each one after a reconnect alike. The manager tells nobody
//!   when it connected, so the handshake is counted with the first answer a new connection carries: at
//!   the start, and after an error that makes the manager connect again — an unrecoverable one (a
//!   broken link), not a response timeout, after which the same connection carries on.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use redis::aio::{ConnectionLike, ConnectionManager, ConnectionManagerConfig};
use redis::{Cmd, Pipeline, RedisError, RedisFuture, RedisResult, Value};

use super::client::RequestCount;

/// A lazy `ConnectionManager` to one server, counting what it sends. Cloning is cheap and shares the
/// connection.
#[derive(Clone)]
pub(crate) struct CountedManager {
    manager: ConnectionManager,
    client: redis::Client,
    /// Set while the next answer will come over a connection whose handshake is not counted yet.
    fresh: Arc<AtomicBool>,
    /// The count this manager's requests go to.
    requests: RequestCount,
}

impl CountedManager {
    /// A manager of `client`'s server that connects on first use, counting in `requests`.
    pub(crate) fn new_lazy(
        client: redis::Client,
        config: ConnectionManagerConfig,
        requests: RequestCount,
    ) -> RedisResult<Self> {
        let manager = ConnectionManager::new_lazy_with_config(client.clone(), config)?;
        Ok(CountedManager {
            manager,
            client,
            fresh: Arc::new(AtomicBool::new(true)),
            requests,
        })
    }

    /// The client the manager connects with.
    pub(crate) fn client(&self) -> &redis::Client {
        &self.client
    }

    /// Settles the count of `n` requests, counted when sent, once answered (`error`: the request's own
    /// failure, if any).
    fn answered(&self, error: Option<&RedisError>, n: u64) {
        let Some(error) = error else {
            if self.fresh.swap(false, Ordering::Relaxed) {
                self.requests.handshake(&self.client);
            }
            return;
        };
        if error.is_unrecoverable_error() {
            // The link broke, so the manager connects again (it does on these errors only); that
            // connection's handshake comes with its first answer.
            self.fresh.store(true, Ordering::Relaxed);
        }
        if (error.is_unrecoverable_error() || error.is_io_error()) && !error.is_timeout() {
            // Not written, or written to a link that broke under it: no server read it.
            self.requests.unsent(n);
        }
    }
}

impl ConnectionLike for CountedManager {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        self.requests.sent(1);
        Box::pin(async move {
            let answer = self.manager.req_packed_command(cmd).await;
            self.answered(answer.as_ref().err(), 1);
            answer
        })
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        let wrapper = if pipeline.is_transaction() { 2 } else { 0 };
        let n = (pipeline.len() + wrapper) as u64;
        self.requests.sent(n);
        Box::pin(async move {
            let answer = self
                .manager
                .req_packed_commands(pipeline, offset, count)
                .await;
            self.answered(answer.as_ref().err(), n);
            answer
        })
    }

    fn get_db(&self) -> i64 {
        self.manager.get_db()
    }
}
