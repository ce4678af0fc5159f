//! Settings of the `zookeeper` strategy ([`ZkConfig`]) and how lock keys become znode paths.

use std::time::Duration;

use crate::error::LockError;
use crate::settings::Renewal;

/// Settings of a [`ZooKeeperLock`](super::ZooKeeperLock) client.
#[derive(Debug, Clone, PartialEq)]
pub struct ZkConfig {
    /// The TTL is the session timeout asked of the server (the session is the lease of every lock the
    /// client holds); the ratio says how often the client confirms its session with a probe request, as a
    /// fraction of the negotiated timeout. The server clamps the timeout to its `[minSessionTimeout,
    /// maxSessionTimeout]`; the negotiated value is the one used. Default 10 s probed every third
    /// (Curator's default is 60 s, the Java client's 30 s; 10 s is a common production choice for locks
    /// and keeps loss detection within seconds).
    pub renewal: Renewal,
    /// Path prefix without leading or trailing `/`: lock `k` queues under `/<prefix>/<k>/`. Default
    /// `lockbench/zookeeper`.
    pub prefix: String,
    /// How long [`ZooKeeperLock::connect`](super::ZooKeeperLock::connect) (and a reconnect after session
    /// expiry) waits for a session before it fails with a `Backend` error. Default 5 s.
    pub connect_timeout: Duration,
    /// Bound on each request (create, list, delete): past it the request counts as failed. Default 5 s.
    pub request_timeout: Duration,
    /// Treat any disconnect as the loss of every lock at once (Curator's "standard" connection-state
    /// policy, where SUSPENDED counts as lost). Default `false`: a disconnect is survived if the client
    /// reconnects within the session timeout. A disconnect longer than the session timeout always loses
    /// the locks, flag or not: the local deadline (last confirmed request + session timeout) passes.
    pub lose_on_disconnect: bool,
}

impl Default for ZkConfig {
    fn default() -> Self {
        ZkConfig {
            renewal: Renewal::new(Duration::from_secs(10)),
            prefix: "lockbench/zookeeper".into(),
            connect_timeout: Duration::from_secs(5),
            request_timeout: Duration::from_secs(5),
            lose_on_disconnect: false,
        }
    }
}

impl ZkConfig {
    /// Checks the settings; a `Config` error names the bad one.
    pub fn validate(&self) -> Result<(), LockError> {
        self.renewal.validate()?;
        for (name, value) in [
            ("connect_timeout", self.connect_timeout),
            ("request_timeout", self.request_timeout),
        ] {
            if value.is_zero() {
                return Err(LockError::Config(format!("{name} must be > 0")));
            }
        }
        let segments_ok = self
            .prefix
            .split('/')
            .all(|s| !s.is_empty() && path_segment(s) == s);
        if !segments_ok {
            return Err(LockError::Config(format!(
                "prefix must be znode names joined by '/' (no leading, trailing or doubled '/', no '.' \
                 or '..' names, no control characters), got {:?}",
                self.prefix
            )));
        }
        Ok(())
    }
}

/// A lock key as one znode name: `%`, `/` and the characters ZooKeeper refuses are written `%XX` (UTF-8
/// bytes), `.` and `..` become `%2E` and `%2E%2E`, the empty key `%`. Distinct keys give distinct names.
pub(super) fn path_segment(key: &str) -> String {
    let refused = |c: char| matches!(c, '%' | '/' | '\u{0}'..='\u{1f}' | '\u{7f}'..='\u{9f}' | '\u{e000}'..='\u{f8ff}' | '\u{fff0}'..='\u{ffff}');
    let mut out = String::with_capacity(key.len());
    for c in key.chars() {
        if refused(c) {
            let mut buf = [0; 4];
            for byte in c.encode_utf8(&mut buf).bytes() {
                out.push_str(&format!("%{byte:02X}"));
            }
        } else {
            out.push(c);
        }
    }
    match out.as_str() {
        "" => "%".into(),
        "." | ".." => out.replace('.', "%2E"),
        _ => out,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn segments_are_valid_and_distinct() {
        let keys = ["a", "a/b", "a%2Fb", "", ".", "..", "...", "x\u{0}y", "ünï"];
        let names: Vec<String> = keys.iter().map(|k| path_segment(k)).collect();
        assert_eq!(
            names,
            [
                "a", "a%2Fb", "a%252Fb", "%", "%2E", "%2E%2E", "...", "x%00y", "ünï"
            ]
        );
        let unique: std::collections::HashSet<_> = names.iter().collect();
        assert_eq!(unique.len(), names.len());
    }

    #[test]
    fn bad_settings_are_config_errors() {
        let bad = [
            ZkConfig {
                renewal: Renewal::new(Duration::ZERO),
                ..ZkConfig::default()
            },
            ZkConfig {
                renewal: Renewal {
                    ratio: 1.0,
                    ..Renewal::default()
                },
                ..ZkConfig::default()
            },
            ZkConfig {
                prefix: "/abs".into(),
                ..ZkConfig::default()
            },
            ZkConfig {
                prefix: "a//b".into(),
                ..ZkConfig::default()
            },
            ZkConfig {
                prefix: "a/..".into(),
                ..ZkConfig::default()
            },
            ZkConfig {
                prefix: String::new(),
                ..ZkConfig::default()
            },
        ];
        for config in bad {
            assert_eq!(
                config.validate().unwrap_err().kind(),
                "config",
                "{config:?}"
            );
        }
        ZkConfig::default().validate().unwrap();
    }
}
