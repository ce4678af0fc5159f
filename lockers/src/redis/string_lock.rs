//! The token-valued string lock of `redis-guard-thread` and `redis-keyspace`: the lock is a string at
//! `P{name}` whose value names one acquire (`<client id>:<owner>:<nonce>`), with three scripts —
//! `SET NX PX` + fencing `INCR` (`string_acquire.lua`), check-and-pexpire (`string_renew.lua`) and
//! check-and-delete (`string_release.lua`) — each optionally carrying redis-keyspace's shadow key
//! `P{name}:shadow`, set, re-armed and deleted with the lock.
//!
//! A [`StringLock`] is one acquire's claim: the keys, its holder value and whether it has a shadow. Its
//! calls run on the multiplexed connection (async) or on a renewal thread's own blocking connection.

use std::sync::{Arc, LazyLock};
use std::time::{Duration, Instant};

use super::transport::connection::Commands;
use redis::ScriptInvocation;

use super::keys::LockKeys;
use super::scripts::{
    self, Attempt, LuaScript, acquire_attempt, renew_outcome, ttl_millis, unexpected,
};
use super::transport::connection::RedisConnection;
use crate::error::LockError;
use crate::event::{Events, LockEvent};
use crate::lease::OwnerId;
use crate::renewal::RenewOutcome;

/// `SET NX PX` + fencing `INCR` (+ an optional shadow key): `{1, token}` or `{0, pttl}`.
pub(crate) static STRING_ACQUIRE: LazyLock<LuaScript> = LazyLock::new(|| {
    LuaScript::with_lib("string_acquire", include_str!("scripts/string_acquire.lua"))
});

/// Check-and-pexpire (+ re-arm an optional shadow key): 0 (not ours) or the PTTL found before.
pub(crate) static STRING_RENEW: LazyLock<LuaScript> =
    LazyLock::new(|| LuaScript::with_lib("string_renew", include_str!("scripts/string_renew.lua")));

/// Check-and-delete (+ an optional shadow key): 1 (deleted) or 0 (not ours).
pub(crate) static STRING_RELEASE: LazyLock<LuaScript> = LazyLock::new(|| {
    LuaScript::with_lib("string_release", include_str!("scripts/string_release.lua"))
});

/// Loads the string-lock scripts into the server's cache.
pub(super) async fn load_scripts(connection: &mut Commands) -> Result<(), LockError> {
    scripts::load(
        connection,
        &[&STRING_ACQUIRE, &STRING_RENEW, &STRING_RELEASE],
    )
    .await
}

/// A fresh holder value: `<client id>:<owner>:<16 hex digits>`, unique per acquire, so a renewal or
/// release of one hold can never touch a later hold of the same owner.
pub(super) fn holder_value(client_id: &str, owner: &OwnerId) -> Arc<str> {
    format!("{client_id}:{owner}:{:016x}", rand::random::<u64>()).into()
}

/// One acquire's claim on a string lock: the lock's keys, the holder value it stores, and the shadow key's
/// TTL in ms when the claim carries a shadow (redis-keyspace's shadow variant).
#[derive(Debug, Clone)]
pub(super) struct StringLock {
    /// The lock's keys (the shadow key among them, used only with `shadow_ttl_ms`).
    pub(super) keys: Arc<LockKeys>,
    /// The holder value.
    pub(super) value: Arc<str>,
    /// Set, re-armed and deleted with the lock when present.
    shadow_ttl_ms: Option<u64>,
}

impl StringLock {
    /// A claim on `keys` with a fresh holder value for `owner`; with a shadow key living `shadow_ttl`.
    pub(super) fn new(
        keys: Arc<LockKeys>,
        client_id: &str,
        owner: &OwnerId,
        shadow_ttl: Option<Duration>,
    ) -> Self {
        StringLock {
            keys,
            value: holder_value(client_id, owner),
            shadow_ttl_ms: shadow_ttl.map(ttl_millis),
        }
    }

    /// The shadow key, when the claim has one.
    pub(super) fn shadow_key(&self) -> Option<&str> {
        self.shadow().map(|(key, _)| key)
    }

    /// The shadow key and its TTL in ms, when the claim has one.
    fn shadow(&self) -> Option<(&str, u64)> {
        self.shadow_ttl_ms.map(|ms| (self.keys.shadow.as_str(), ms))
    }

    fn acquire_call(&self, ttl_ms: u64) -> ScriptInvocation<'static> {
        let mut call = STRING_ACQUIRE.prepare();
        call.key(&self.keys.lock).key(&self.keys.fence);
        self.with_shadow(&mut call, ttl_ms);
        call
    }

    fn renew_call(&self, ttl_ms: u64) -> ScriptInvocation<'static> {
        let mut call = STRING_RENEW.prepare();
        call.key(&self.keys.lock);
        self.with_shadow(&mut call, ttl_ms);
        call
    }

    /// The shadow key (if any) after the lock's keys; then the TTL, the value and the shadow's TTL.
    fn with_shadow(&self, call: &mut ScriptInvocation<'_>, ttl_ms: u64) {
        if let Some((key, _)) = self.shadow() {
            call.key(key);
        }
        call.arg(ttl_ms).arg(&*self.value);
        if let Some((_, shadow_ms)) = self.shadow() {
            call.arg(shadow_ms);
        }
    }

    fn release_call(&self) -> ScriptInvocation<'static> {
        let mut call = STRING_RELEASE.prepare();
        call.key(&self.keys.lock);
        if let Some((key, _)) = self.shadow() {
            call.key(key);
        }
        call.arg(&*self.value);
        call
    }

    /// Tries to take the lock once, for `ttl_ms`.
    pub(super) async fn try_acquire(
        &self,
        connection: &mut Commands,
        ttl_ms: u64,
    ) -> Result<Attempt, LockError> {
        let answer = scripts::run(connection, &self.acquire_call(ttl_ms)).await?;
        acquire_attempt(&STRING_ACQUIRE, answer)
    }

    /// Extends the lock to `ttl_ms` if the value still holds it (and re-arms the shadow key).
    pub(super) async fn renew(
        &self,
        connection: &mut Commands,
        ttl_ms: u64,
    ) -> Result<RenewOutcome, LockError> {
        let answer = scripts::run(connection, &self.renew_call(ttl_ms)).await?;
        Ok(renew_outcome(answer))
    }

    /// [`renew`](Self::renew) on a blocking connection (a renewal thread's own).
    pub(super) fn renew_blocking(
        &self,
        connection: &mut redis::Connection,
        ttl_ms: u64,
    ) -> Result<RenewOutcome, LockError> {
        let answer: i64 = self.renew_call(ttl_ms).invoke(connection)?;
        Ok(renew_outcome(answer))
    }

    /// Deletes the lock (and the shadow key) if the value holds it: emits `Released`, or answers
    /// [`LockError::NotHeld`] when it did not hold it.
    pub(super) async fn release(
        &self,
        connection: &RedisConnection,
        events: &Events,
    ) -> Result<(), LockError> {
        let mut commands = connection.commands();
        let answer = scripts::run(&mut commands, &self.release_call()).await?;
        self.released(answer, events)
    }

    /// [`release`](Self::release) on a blocking connection (a renewal thread's own).
    pub(super) fn release_blocking(
        &self,
        connection: &mut redis::Connection,
        events: &Events,
    ) -> Result<(), LockError> {
        let answer: i64 = self.release_call().invoke(connection)?;
        self.released(answer, events)
    }

    /// Deletes the lock if the value holds it, with no event: whether it did (a redlock node's vote).
    pub(super) async fn delete_if_ours(
        &self,
        connection: &mut Commands,
    ) -> Result<bool, LockError> {
        let answer: i64 = scripts::run(connection, &self.release_call()).await?;
        match answer {
            1 => Ok(true),
            0 => Ok(false),
            other => Err(unexpected(&STRING_RELEASE, &[other])),
        }
    }

    fn released(&self, answer: i64, events: &Events) -> Result<(), LockError> {
        match answer {
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
            other => Err(unexpected(&STRING_RELEASE, &[other])),
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn holder_values_are_unique_per_acquire() {
        let owner = OwnerId::new("w");
        let (a, b) = (holder_value("c", &owner), holder_value("c", &owner));
        assert!(a.starts_with("c:w:") && b.starts_with("c:w:"));
        assert_ne!(a, b);
    }
}
