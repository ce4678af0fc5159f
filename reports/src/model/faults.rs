//! The faults injected during a case, as the results file records them.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

// Named in doc links only.
#[cfg(doc)]
use super::{CaseResult, HeldInterval};

/// One fault injected during a case. Times are relative to the start of the case, like
/// [`HeldInterval`], so a timeline can draw the window behind the holders' intervals.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct FaultWindow {
    /// What was injected: `pause_worker` (SIGSTOP/SIGCONT of a client process), `crash_worker`
    /// (kill -9 of a holder), `starve_worker` (the client's runtime threads blocked), `cpu_hog`,
    /// `pause_server` (SIGSTOP/SIGCONT of a server), `client_pause` (Redis `CLIENT PAUSE`),
    /// `pubsub_kill` (Redis `CLIENT KILL TYPE pubsub`), `proxy_delay`, `proxy_blackhole`,
    /// `proxy_reset` (the TCP proxy between clients and server), `failover` (Redis primary killed,
    /// replica promoted), `sentinel_failover` (Redis primary killed, its Sentinels promote the
    /// replica; `promoted_after_ms`), `leader_kill` (etcd / ZooKeeper leader killed).
    pub kind: String,
    /// What it hit, for people: `client 3`, `redis 127.0.0.1:40123`, `etcd member 1 (leader)`.
    pub target: String,
    /// The fault's settings by name (`duration_ms`, `delay_ms`, `direction`, `key`, ...).
    #[schemars(extend("additionalProperties" = {"type": ["string", "number", "boolean", "null"]}))]
    pub parameters: BTreeMap<String, serde_json::Value>,
    /// When the fault was applied.
    pub start_ms: f64,
    /// When it was lifted; null when it is permanent for the rest of the case (a crash, a killed
    /// primary or leader) or instantaneous (a dropped connection).
    pub stop_ms: Option<f64>,
    /// The lock-unavailable window after the fault. For a fault aimed at a holder (worker faults,
    /// network faults on one client, a failover right after an acquire): from `start_ms` until
    /// another client acquired the key that holder held. For a fault on the server or on every
    /// client: until any client's acquire returned (an acquire already in flight can return just
    /// after the fault). Null when not measured (`proxy_delay` on every client, `pubsub_kill`) or
    /// when no acquire followed before the case ended.
    pub recovery_ms: Option<f64>,
    /// For a fault aimed at a holder: from `start_ms` until that holder noticed `lost()` (its
    /// believed-held interval ended by the loss). Null when it never noticed (it released normally,
    /// was killed, or the case ended first).
    #[serde(default)]
    pub loss_noticed_ms: Option<f64>,
    /// One line on anything the reader should know (e.g. a variant this machine could not apply).
    pub note: Option<String>,
    /// Whether the fault took effect, from its own evidence (`evidence`): a paused process was seen
    /// stopped in `/proc`, the proxy blackholed bytes, the cgroup throttled the process, a CPU hog's
    /// threads ran, a starved worker's runtime threads were seen held, the replica was promoted, a
    /// PING from another connection waited through `CLIENT PAUSE`, a faked node's `TIME` ran ahead of
    /// the real clock. False makes the case's verdict unknown ([`CaseResult::fault_not_applied`]).
    /// Null when the kind gives no evidence to check (and in older files).
    #[serde(default)]
    pub applied: Option<bool>,
    /// The evidence `applied` rests on, or why the fault did not take effect (one line).
    #[serde(default)]
    pub evidence: Option<String>,
    /// Why the fault's window ended before its planned end (the case stopped first, the run was
    /// interrupted): the fault did not run as described, so the case has no verdict. Null when it ran
    /// to its end (and in older files).
    #[serde(default)]
    pub cut_short: Option<String>,
}
