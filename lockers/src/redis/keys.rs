//! Key naming shared by the Redis strategies: for a lock called `name` under prefix `P`,
//!
//! | what | key | notes |
//! |---|---|---|
//! | the lock | `P{name}` | a hash (watchdog) or a string (guard-thread, keyspace) |
//! | fencing counter | `P{name}:fence` | `INCR`ed on every fresh acquire; never expires |
//! | unlock channel | `P{name}:unlock` | pub/sub channel the release publishes on (watchdog); the Redisson rows name theirs as Redisson does, `redisson_lock__channel:P{name}` (`redisson::lock`) |
//! | shadow key | `P{name}:shadow` | expires before the lock, triggering its renewal (keyspace shadow) |
//!
//! The `{name}` hash tag puts every key of one lock in one Redis Cluster slot, so the scripts that touch
//! several of them stay legal on a cluster. The prefix may not contain braces (it would move the tag), and
//! names may not be empty (an empty tag hashes the whole key, which would split the slot).
//!
//! Also here: the client id every Redis client puts in front of its owners (`<client id>:<owner>`).

use std::sync::Arc;

use crate::error::LockError;
use crate::lease::OwnerId;

/// The keys and channel of one lock.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LockKeys {
    /// The lock's name as the caller gave it (what events and leases report).
    pub(crate) name: Arc<str>,
    /// The lock key.
    pub(crate) lock: String,
    /// The fencing-token counter.
    pub(crate) fence: String,
    /// The channel a release publishes an unlock message on.
    pub(crate) channel: String,
    /// The shadow key whose expiry triggers a renewal.
    pub(crate) shadow: String,
}

impl LockKeys {
    /// The keys of lock `name` under `prefix` (already validated with [`validate_prefix`]).
    pub(crate) fn new(prefix: &str, name: &str) -> Result<Self, LockError> {
        if name.is_empty() {
            return Err(LockError::Config("lock key must not be empty".into()));
        }
        let lock = lock_key(prefix, name);
        Ok(LockKeys {
            name: name.into(),
            fence: format!("{lock}:fence"),
            channel: format!("{lock}:unlock"),
            shadow: format!("{lock}:shadow"),
            lock,
        })
    }
}

/// The lock key of `name` under `prefix`: `P{name}`.
pub(crate) fn lock_key(prefix: &str, name: &str) -> String {
    format!("{prefix}{{{name}}}")
}

/// The key prefix every Redis strategy uses by default.
pub(crate) const DEFAULT_PREFIX: &str = "lockbench:";

/// Checks a client's naming settings: the key prefix and the client id.
pub(crate) fn validate_naming(prefix: &str, client_id: &str) -> Result<(), LockError> {
    validate_prefix(prefix)?;
    validate_client_id(client_id)
}

/// Checks a key prefix: braces would change the hash tag.
fn validate_prefix(prefix: &str) -> Result<(), LockError> {
    if prefix.contains(['{', '}']) {
        return Err(LockError::Config(format!(
            "key_prefix must not contain '{{' or '}}', got {prefix:?}"
        )));
    }
    Ok(())
}

/// Checks a client id: it must be non-empty and free of whitespace.
fn validate_client_id(client_id: &str) -> Result<(), LockError> {
    if client_id.is_empty() || client_id.contains(char::is_whitespace) {
        return Err(LockError::Config(format!(
            "client_id must be non-empty without whitespace, got {client_id:?}"
        )));
    }
    Ok(())
}

/// A fresh random client id shaped like a UUID (32 hex digits in 8-4-4-4-12 groups).
pub fn random_client_id() -> String {
    let n: u128 = rand::random();
    format!(
        "{:08x}-{:04x}-{:04x}-{:04x}-{:012x}",
        (n >> 96) as u32,
        (n >> 80) as u16,
        (n >> 64) as u16,
        (n >> 48) as u16,
        n & 0xffff_ffff_ffff
    )
}

/// The hash field (or stored value) that names `owner` of client `client_id`: `<client id>:<owner>`.
pub(crate) fn owner_field(client_id: &str, owner: &OwnerId) -> Arc<str> {
    format!("{client_id}:{owner}").into()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn keys_share_one_hash_tag() {
        let keys = LockKeys::new("lb:", "orders:7").expect("valid name");
        assert_eq!(keys.lock, "lb:{orders:7}");
        assert_eq!(keys.fence, "lb:{orders:7}:fence");
        assert_eq!(keys.channel, "lb:{orders:7}:unlock");
        assert_eq!(keys.shadow, "lb:{orders:7}:shadow");
    }

    #[test]
    fn bad_names_and_prefixes_are_config_errors() {
        assert_eq!(
            LockKeys::new("lb:", "").map(|_| ()).unwrap_err().kind(),
            "config"
        );
        assert_eq!(validate_prefix("a{b").unwrap_err().kind(), "config");
        assert_eq!(validate_client_id("").unwrap_err().kind(), "config");
        assert_eq!(validate_client_id("a b").unwrap_err().kind(), "config");
    }

    #[test]
    fn client_ids_look_like_uuids() {
        let id = random_client_id();
        let groups: Vec<usize> = id.split('-').map(str::len).collect();
        assert_eq!(groups, [8, 4, 4, 4, 12], "{id}");
        assert_ne!(id, random_client_id());
    }
}
