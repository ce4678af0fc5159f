//! What a case cost: the clients, the server and the driver itself.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Client cost over the measured window.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ClientCost {
    /// `driver_process` (tasks mode: the lockbench process, driver and resource included, and the
    /// peer adapter processes its clients' libraries run in) or
    /// `worker_processes` (the sum over the client processes) or `remote_workers` (the sum of what
    /// each remote worker measured of its own process).
    #[schemars(extend("enum" = ["driver_process", "worker_processes", "remote_workers"]))]
    pub scope: String,
    /// Most threads seen at once.
    pub threads_max: u64,
    /// Largest resident set seen (summed over processes).
    pub rss_max_bytes: u64,
    /// CPU time (user + system).
    pub cpu_seconds: f64,
    /// Average cores busy: `cpu_seconds / window`.
    pub cpu_cores: f64,
}

/// What the server did during a case (deltas over the case).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ServerCost {
    /// The server kind's name in lockbench's registry: `redis`, `redis-nodes` (Redlock's independent
    /// Redis servers: every figure below is summed over them), `etcd`, `zookeeper`, …
    pub kind: String,
    /// Server CPU time, when known (managed servers: from /proc; Redis: `INFO cpu`).
    pub cpu_seconds: Option<f64>,
    /// Work the server counted (Redis: commandstats calls, the commands scripts ran included — an
    /// EVALSHA whose script makes three `redis.call`s counts four; etcd: gRPC calls handled, a stream
    /// once when it ends; ZooKeeper: packets received and sent).
    pub requests: u64,
    /// Requests the clients sent: Redis top-level commands as the clients counted them (a script call
    /// once, however many `redis.call`s it makes; Redis 7.0's own counters count those too, so cannot
    /// tell them apart; a test checks the count equals what `MONITOR` saw); etcd gRPC messages received
    /// (`grpc_server_msg_received_total`: unary calls and every stream message, lease keep-alives
    /// included); ZooKeeper packets received (`zk_packets_received`). Null for peers on Redis (their
    /// clients are not lockers') and in files written before it was measured. The "least server
    /// work" rule reads this figure.
    #[serde(default)]
    pub client_requests: Option<u64>,
    /// Renewal calls the server saw: etcd `LeaseKeepAlive` messages received; on Redis, when
    /// `MONITOR` followed the case (`lockbench compare --peers`), calls of a script known to renew a
    /// lock (lockbench's own, redsync's Extend, node redlock's extend). Null where not told apart.
    #[serde(default)]
    pub renew_calls: Option<u64>,
    /// Redis, when `MONITOR` followed the case: script calls (`EVALSHA`, `EVAL`) by the SHA1 of the
    /// script's text, so two rows can be checked for running the same scripts. Empty otherwise.
    #[serde(default)]
    pub scripts: BTreeMap<String, u64>,
    /// Requests per second of the case.
    pub requests_per_s: f64,
    /// Requests by command or method.
    pub by_command: BTreeMap<String, u64>,
}

/// The driver's own cost, measured per cycle (acquire + task + release and the bookkeeping around it)
/// in the measured window: the cycle's wall time minus the time spent inside `acquire`, `release`,
/// the task and the think time.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct DriverCost {
    /// Cycles measured.
    pub cycles: u64,
    /// Mean wall time of a cycle, in nanoseconds.
    pub cycle_ns: f64,
    /// Mean time inside the strategy's `acquire` + `release`, in nanoseconds.
    pub strategy_ns: f64,
    /// Mean driver time per cycle (timestamps, resource, oracle records, histograms), in nanoseconds.
    pub overhead_ns: f64,
}
