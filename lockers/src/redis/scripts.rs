//! The Lua scripts of the Redis strategies, loaded once and called by SHA.
//!
//! Every script is `scripts/lib.lua` (shared helpers: fencing-token INCR, extend-only TTL, hash-lock
//! renewal) followed by its own body, so the fencing and TTL rules exist once. [`LuaScript`] wraps
//! `redis::Script`, which sends `EVALSHA` and, on a `NOSCRIPT` answer (script cache flushed, failover to a
//! server that never saw it), loads the script and retries once. [`load`] preloads scripts at connect so
//! the first real call does not pay that round trip.
//!
//! Scripts for another strategy are added the same way: a `.lua` file under `scripts/` and a
//! [`LuaScript::with_lib`] static.

use std::fmt;
use std::sync::LazyLock;

use redis::aio::ConnectionManager;
use redis::{FromRedisValue, ScriptInvocation};

use crate::error::LockError;

/// Helpers every script starts with.
const LIB: &str = include_str!("scripts/lib.lua");

/// One script, with the shared helpers prepended.
pub(crate) struct LuaScript {
    name: &'static str,
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
        LuaScript {
            name,
            script: redis::Script::new(&format!("{LIB}\n{body}")),
        }
    }

    /// A call of this script, to be given keys and arguments.
    pub(crate) fn prepare(&self) -> ScriptInvocation<'_> {
        self.script.prepare_invoke()
    }

    /// The script's SHA1.
    #[allow(dead_code)]
    pub(crate) fn sha(&self) -> &str {
        self.script.get_hash()
    }
}

/// Runs a prepared call by SHA (reloading on `NOSCRIPT`) and converts the answer to `T`.
pub(crate) async fn run<T: FromRedisValue>(
    connection: &mut ConnectionManager,
    call: &ScriptInvocation<'_>,
) -> Result<T, LockError> {
    Ok(call.invoke_async(connection).await?)
}

/// Loads `scripts` into the server's script cache (`SCRIPT LOAD`).
pub(crate) async fn load(
    connection: &mut ConnectionManager,
    scripts: &[&LuaScript],
) -> Result<(), LockError> {
    for script in scripts {
        script.script.load_async(connection).await?;
    }
    Ok(())
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
