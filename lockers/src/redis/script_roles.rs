//! The roles of the Redis strategies' Lua scripts by SHA1 ([`script_shas`]), for an observer of the
//! server (`MONITOR`) that tells acquires, renewals and releases apart by the SHA1 an `EVALSHA` names.

use std::sync::LazyLock;

use super::redisson::{REDISSON_ACQUIRE, REDISSON_RELEASE, REDISSON_RENEW, REDISSON_RENEW_BATCH};
use super::scripts::{
    LuaScript, WATCHDOG_ACQUIRE, WATCHDOG_RELEASE, WATCHDOG_RENEW, WATCHDOG_RENEW_BATCH,
};
use super::string_lock::{STRING_ACQUIRE, STRING_RELEASE, STRING_RENEW};

/// What a Lua script of a Redis strategy does, for an observer of the server (`MONITOR`) that tells
/// the calls apart by the SHA1 an `EVALSHA` names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScriptRole {
    /// Takes the lock at `KEYS[1]` (or answers who holds it).
    Acquire,
    /// Extends locks: every key it names is a lock key (or a lock's shadow key).
    Renew,
    /// Releases the lock at `KEYS[1]`.
    Release,
}

/// The role and SHA1 of every script the Redis strategies of this crate send (redis-watchdog,
/// redis-guard-thread, redis-keyspace-*, redisson-classic, redisson).
pub fn script_shas() -> Vec<(ScriptRole, &'static str)> {
    let scripts: [(ScriptRole, &'static LazyLock<LuaScript>); 11] = [
        (ScriptRole::Acquire, &WATCHDOG_ACQUIRE),
        (ScriptRole::Renew, &WATCHDOG_RENEW),
        (ScriptRole::Renew, &WATCHDOG_RENEW_BATCH),
        (ScriptRole::Release, &WATCHDOG_RELEASE),
        (ScriptRole::Acquire, &STRING_ACQUIRE),
        (ScriptRole::Renew, &STRING_RENEW),
        (ScriptRole::Release, &STRING_RELEASE),
        (ScriptRole::Acquire, &REDISSON_ACQUIRE),
        (ScriptRole::Renew, &REDISSON_RENEW),
        (ScriptRole::Renew, &REDISSON_RENEW_BATCH),
        (ScriptRole::Release, &REDISSON_RELEASE),
    ];
    scripts
        .into_iter()
        .map(|(role, script)| (role, LazyLock::force(script).sha()))
        .collect()
}
