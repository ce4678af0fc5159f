//! The script-free commands of `valkey-ifeq` ([`IfeqLock`]): one acquire's claim on a string lock, taken
//! with a `MULTI`/`EXEC` of `SET NX PX` and the fencing `INCR`, renewed with `SET … IFEQ … PX`, released
//! with `DELIFEQ`; and the check that the server has those commands ([`check_server`]), asked of the
//! server itself.

use std::sync::Arc;
use std::time::Instant;

use redis::Value;

use crate::error::LockError;
use crate::event::{Events, LockEvent};
use crate::lease::FencingToken;
use crate::redis::keys::LockKeys;
use crate::redis::transport::connection::{BACKEND, Commands};
use crate::renewal::RenewOutcome;

/// The strategy id (named here because the refusal names it).
pub const ID: &str = "valkey-ifeq";

/// One acquire's claim: the lock's keys and the holder value it stores (unique per acquire).
#[derive(Debug, Clone)]
pub(super) struct IfeqLock {
    pub(super) keys: Arc<LockKeys>,
    pub(super) value: Arc<str>,
}

impl IfeqLock {
    /// One attempt for `ttl_ms`: `MULTI`, `SET lock value NX PX ttl`, `INCR fence`, `EXEC`. The token
    /// when the `SET` took the lock, `None` when the lock was held (that attempt's `INCR` is wasted).
    pub(super) async fn try_acquire(
        &self,
        mut commands: Commands,
        ttl_ms: u64,
    ) -> Result<Option<FencingToken>, LockError> {
        let mut transaction = redis::pipe();
        transaction
            .atomic()
            .cmd("SET")
            .arg(&self.keys.lock)
            .arg(&*self.value)
            .arg("NX")
            .arg("PX")
            .arg(ttl_ms)
            .cmd("INCR")
            .arg(&self.keys.fence);
        let (set, counter): (Option<String>, u64) = transaction.query_async(&mut commands).await?;
        Ok(set.map(|_ok| FencingToken(counter)))
    }

    /// `SET lock value IFEQ value PX ttl`: extended when the value still holds the lock (the TTL found
    /// before is not asked for), gone when the server answered nil.
    pub(super) async fn renew(
        &self,
        mut commands: Commands,
        ttl_ms: u64,
    ) -> Result<RenewOutcome, LockError> {
        let set: Option<String> = redis::cmd("SET")
            .arg(&self.keys.lock)
            .arg(&*self.value)
            .arg("IFEQ")
            .arg(&*self.value)
            .arg("PX")
            .arg(ttl_ms)
            .query_async(&mut commands)
            .await?;
        Ok(match set {
            Some(_ok) => RenewOutcome::Extended {
                remaining_before: None,
            },
            None => RenewOutcome::Gone,
        })
    }

    /// `DELIFEQ lock value`: emits `Released`, or answers [`LockError::NotHeld`] when the value no
    /// longer held the lock.
    pub(super) async fn release(
        &self,
        mut commands: Commands,
        events: &Events,
    ) -> Result<(), LockError> {
        let deleted: i64 = redis::cmd("DELIFEQ")
            .arg(&self.keys.lock)
            .arg(&*self.value)
            .query_async(&mut commands)
            .await?;
        match deleted {
            1 => {
                events.emit(|| LockEvent::Released {
                    key: self.keys.name.clone(),
                    at: Instant::now(),
                });
                Ok(())
            }
            0 => Err(LockError::NotHeld {
                key: self.keys.name.to_string(),
            }),
            other => Err(LockError::backend(
                BACKEND,
                format!("DELIFEQ answered {other}"),
            )),
        }
    }
}

/// A command the strategy needs and the Valkey version that added it.
struct Needed {
    what: &'static str,
    since: &'static str,
}

const IFEQ: Needed = Needed {
    what: "SET … IFEQ",
    since: "Valkey 8.1",
};
const DELIFEQ: Needed = Needed {
    what: "DELIFEQ",
    since: "Valkey 9.0",
};

/// Asks the server whether it has `SET … IFEQ` (an `IFEQ` token among `COMMAND DOCS SET`'s arguments)
/// and `DELIFEQ` (`COMMAND INFO DELIFEQ` not nil). A server without either is refused with one
/// [`LockError::Unsupported`] line naming each missing command and the Valkey version that added it.
pub(super) async fn check_server(commands: &mut Commands) -> Result<(), LockError> {
    let info: Value = redis::cmd("COMMAND")
        .arg("INFO")
        .arg("DELIFEQ")
        .query_async(commands)
        .await?;
    let has_delifeq =
        matches!(&info, Value::Array(items) if items.first().is_some_and(|i| *i != Value::Nil));
    // A server older than `COMMAND DOCS` (Redis < 7) answers an error: it has no IFEQ either.
    let docs: Option<Value> = redis::cmd("COMMAND")
        .arg("DOCS")
        .arg("SET")
        .query_async(commands)
        .await
        .ok();
    let has_ifeq = docs.as_ref().is_some_and(mentions_ifeq);
    let missing: Vec<String> = [(has_ifeq, IFEQ), (has_delifeq, DELIFEQ)]
        .into_iter()
        .filter(|(has, _)| !has)
        .map(|(_, needed)| format!("{} (added in {})", needed.what, needed.since))
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    Err(LockError::Unsupported {
        strategy: ID,
        what: format!(
            "this server: it lacks {}; run it on Valkey 9.0 or later",
            missing.join(" and ")
        ),
    })
}

/// Whether a `COMMAND DOCS` reply names an `IFEQ` argument (its token; a whole string, so a history
/// line that mentions IFEQ does not count).
fn mentions_ifeq(value: &Value) -> bool {
    match value {
        Value::BulkString(bytes) => bytes.eq_ignore_ascii_case(b"IFEQ"),
        Value::SimpleString(text) => text.eq_ignore_ascii_case("IFEQ"),
        Value::Array(items) | Value::Set(items) => items.iter().any(mentions_ifeq),
        Value::Map(pairs) => pairs
            .iter()
            .any(|(key, value)| mentions_ifeq(key) || mentions_ifeq(value)),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bulk(text: &str) -> Value {
        Value::BulkString(text.as_bytes().to_vec())
    }

    #[test]
    fn only_an_ifeq_token_counts() {
        let with = Value::Array(vec![
            bulk("set"),
            Value::Array(vec![bulk("token"), bulk("IFEQ")]),
        ]);
        let history_only = Value::Array(vec![bulk("Added the `IFEQ` option.")]);
        assert!(mentions_ifeq(&with));
        assert!(!mentions_ifeq(&history_only));
        assert!(!mentions_ifeq(&Value::Nil));
    }
}
