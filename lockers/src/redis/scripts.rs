//! The Lua scripts of the Redis strategies, loaded once and called by SHA.
//!
//! Every script is `scripts/lib.lua` (shared helpers: fencing-token INCR, extend-only TTL, hash-lock
//! renewal) followed by its own body, so the fencing and TTL rules exist once. [`LuaScript`] wraps
//! `redis::Script`, which sends `EVALSHA` and, on a `NOSCRIPT` answer (script cache flushed, failover to a
//! server that never saw it), loads the script and retries once. [`load`] preloads scripts at connect so
//! the first real call does not pay that round trip.
//!
//! Every script's answers follow shared conventions, read here once: acquire scripts answer `{1, token}`
//! or `{0, pttl}` ([`acquire_attempt`]), renew scripts 0 (gone) or the PTTL found ([`renew_outcome`]),
//! and every TTL argument is whole milliseconds ([`ttl_millis`]).
//!
//! Scripts for another strategy are added the same way: a `.lua` file under `scripts/` and a
//! [`LuaScript::with_lib`] static (the watchdog's are here; the string lock's in `string_lock`).

use std::fmt;
use std::sync::LazyLock;
use std::time::Duration;

use super::transport::connection::Commands;
use redis::{FromRedisValue, ScriptInvocation};

use super::transport::connection::BACKEND;
use crate::error::LockError;
use crate::lease::FencingToken;
use crate::renewal::RenewOutcome;

/// Helpers every script starts with.
const LIB: &str = include_str!("scripts/lib.lua");

/// One script, with the shared helpers prepended.
pub(crate) struct LuaScript {
    name: &'static str,
    code: String,
    script: redis::Script,
}

impl fmt::Debug for LuaScript {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LuaScript")
            .field("name", &self.name)
            .field("sha", &self.script.get_hash())
            .finish()
    }
}

impl LuaScript {
    /// `lib.lua` followed by `body`.
    pub(crate) fn with_lib(name: &'static str, body: &str) -> Self {
        let code = format!("{LIB}\n{body}");
        LuaScript {
            name,
            script: redis::Script::new(&code),
            code,
        }
    }

    /// A call of this script, to be given keys and arguments.
    pub(crate) fn prepare(&self) -> ScriptInvocation<'_> {
        self.script.prepare_invoke()
    }

    /// An `EVALSHA` of this script with `keys` keys, to which the caller appends keys and arguments. One
    /// command buffer holds every argument, so a call with many keys costs no allocation per key (unlike
    /// [`prepare`](Self::prepare)). Run it with [`run_cmd`].
    pub(crate) fn evalsha(&self, keys: usize) -> redis::Cmd {
        let mut cmd = redis::cmd("EVALSHA");
        cmd.arg(self.script.get_hash()).arg(keys);
        cmd
    }

    /// The script's text, helpers included (what `SCRIPT LOAD` is sent).
    pub(crate) fn code(&self) -> &str {
        &self.code
    }

    /// The script's SHA1.
    pub(crate) fn sha(&self) -> &str {
        self.script.get_hash()
    }
}

/// Runs `cmd`, an [`evalsha`](LuaScript::evalsha) of `script`, loading the script and sending it again
/// on `NOSCRIPT`.
pub(crate) async fn run_cmd<T: FromRedisValue>(
    connection: &mut Commands,
    script: &LuaScript,
    cmd: &redis::Cmd,
) -> Result<T, LockError> {
    match cmd.query_async(connection).await {
        Err(e) if e.kind() == redis::ErrorKind::Server(redis::ServerErrorKind::NoScript) => {
            script.script.load_async(connection).await?;
            Ok(cmd.query_async(connection).await?)
        }
        answer => Ok(answer?),
    }
}

/// Runs a prepared call by SHA (reloading on `NOSCRIPT`) and converts the answer to `T`.
pub(crate) async fn run<T: FromRedisValue>(
    connection: &mut Commands,
    call: &ScriptInvocation<'_>,
) -> Result<T, LockError> {
    Ok(call.invoke_async(connection).await?)
}

/// Loads `scripts` into the server's script cache (`SCRIPT LOAD`).
pub(crate) async fn load(
    connection: &mut Commands,
    scripts: &[&LuaScript],
) -> Result<(), LockError> {
    for script in scripts {
        script.script.load_async(connection).await?;
    }
    Ok(())
}

/// A TTL in whole milliseconds, rounded up (Redis's granularity), at least 1: what the scripts take.
pub(crate) fn ttl_millis(ttl: Duration) -> u64 {
    let ms = ttl.as_nanos().div_ceil(1_000_000).max(1);
    u64::try_from(ms).unwrap_or(u64::MAX)
}

/// The `Backend` error for an answer `script` never gives.
pub(crate) fn unexpected(script: &LuaScript, answer: &[i64]) -> LockError {
    LockError::backend(
        BACKEND,
        format!(
            "unexpected answer {answer:?} from the {} script",
            script.name
        ),
    )
}

/// One answer of an acquire script (every one answers `{1, token}` or `{0, pttl}`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Attempt {
    /// Taken (or re-entered), with this fencing token.
    Acquired(FencingToken),
    /// Held by someone else for this much longer: the PTTL in ms (≤ 0 when Redis reports no TTL).
    Busy(i64),
}

/// Reads an answer of the acquire script `script`.
pub(crate) fn acquire_attempt(
    script: &LuaScript,
    (granted, value): (i64, i64),
) -> Result<Attempt, LockError> {
    match (granted, u64::try_from(value)) {
        (1, Ok(token)) => Ok(Attempt::Acquired(FencingToken(token))),
        (0, _) => Ok(Attempt::Busy(value)),
        _ => Err(unexpected(script, &[granted, value])),
    }
}

/// Reads a renew script's answer (every one answers alike): 0 = gone, -1 = extended (the key had no
/// TTL), n > 0 = extended with n ms left.
pub(crate) fn renew_outcome(answer: i64) -> RenewOutcome {
    match answer {
        0 => RenewOutcome::Gone,
        n if n > 0 => RenewOutcome::Extended {
            remaining_before: Some(Duration::from_millis(n.unsigned_abs())),
        },
        _ => RenewOutcome::Extended {
            remaining_before: None,
        },
    }
}

/// redis-watchdog acquire: `{1, token}` or `{0, pttl}`.
pub(crate) static WATCHDOG_ACQUIRE: LazyLock<LuaScript> = LazyLock::new(|| {
    LuaScript::with_lib(
        "watchdog_acquire",
        include_str!("scripts/watchdog_acquire.lua"),
    )
});

/// redis-watchdog renewal of one lock: 0 (gone) or the PTTL found before extending.
pub(crate) static WATCHDOG_RENEW: LazyLock<LuaScript> = LazyLock::new(|| {
    LuaScript::with_lib("watchdog_renew", include_str!("scripts/watchdog_renew.lua"))
});

/// redis-watchdog renewal of N locks in one call: N answers as [`WATCHDOG_RENEW`]'s.
pub(crate) static WATCHDOG_RENEW_BATCH: LazyLock<LuaScript> = LazyLock::new(|| {
    LuaScript::with_lib(
        "watchdog_renew_batch",
        include_str!("scripts/watchdog_renew_batch.lua"),
    )
});

/// redis-watchdog release: -1 (not held), 0 (re-entrant holds remain) or 1 (freed and published).
pub(crate) static WATCHDOG_RELEASE: LazyLock<LuaScript> = LazyLock::new(|| {
    LuaScript::with_lib(
        "watchdog_release",
        include_str!("scripts/watchdog_release.lua"),
    )
});
