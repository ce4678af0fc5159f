//! The renewal-at-scale results model: what `lockbench scale` writes to `scale.json`, as serde types.
//!
//! One [`ScaleResults`] holds, per strategy, one [`ScalePoint`] per step of held locks (1k, 10k, 100k by
//! default): what holding that many locks with one client costs the server (renew calls, CPU) and the
//! client (CPU, resident set, threads), measured over a window in which the client only holds. A
//! strategy that could not reach a step has a [`ScaleStop`] saying where and why (thread limit, RSS cap,
//! acquire errors, time budget).
//!
//! Described by a JSON schema derived from these types ([`crate::schema::scale`], committed as
//! `reports/schema/scale.schema.json`). Conventions are those of the results file ([`crate::model`]): durations are float milliseconds in
//! `_ms` fields, rates are per second (`_per_s`), sizes are bytes (`_bytes`). The chart of cost against
//! held locks needs only [`ScaleResults::cost_series`].

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::model::Environment;

/// The scale file format version. Bumped on any change that is not a pure addition of optional data.
pub const SCALE_SCHEMA_VERSION: u32 = 1;

/// One `lockbench scale` run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ScaleResults {
    /// [`SCALE_SCHEMA_VERSION`] of the writer.
    #[schemars(extend("const" = SCALE_SCHEMA_VERSION))]
    pub schema_version: u32,
    /// False when the run was interrupted: what was measured is kept.
    pub complete: bool,
    /// When the run started, RFC 3339 UTC.
    pub started_at: String,
    /// When the results were written, RFC 3339 UTC.
    pub finished_at: String,
    /// What was asked.
    pub settings: ScaleSettings,
    /// Where it ran.
    pub environment: Environment,
    /// One entry per strategy, in run order.
    pub strategies: Vec<ScaleSeries>,
}

/// The settings of a scale run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ScaleSettings {
    /// Held-lock counts, ascending; each step adds locks to those already held.
    pub steps: Vec<u64>,
    /// Measured window per step, during which the client only holds.
    pub hold_ms: f64,
    /// TTL of the watchdog leases.
    pub watchdog_timeout_ms: f64,
    /// Renewal period (timeout × ratio).
    pub renew_period_ms: f64,
    /// Concurrent acquires while filling a step.
    pub acquire_concurrency: u64,
    /// A step whose locks are not all acquired within this long stops the strategy.
    pub step_budget_ms: f64,
    /// The strategy stops once the client has this many threads.
    pub max_threads: u64,
    /// The strategy stops once the client's resident set passes this.
    pub max_rss_bytes: u64,
    /// How long every row cycled acquire and release before its first step, unmeasured (the warm-up a
    /// JVM library needs, given to every row of the run alike); absent in older files.
    #[serde(default)]
    pub warm_up_ms: Option<f64>,
    /// Passes per strategy (`--passes`): each pass a fresh client in a fresh process holds the same
    /// steps again, so a loss can be told apart from a one-off; 1 in older files.
    #[serde(default = "one_pass")]
    pub passes: u32,
}

/// [`ScaleSettings::passes`] of a file written before passes were recorded.
fn one_pass() -> u32 {
    1
}

/// One strategy's steps.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ScaleSeries {
    /// Strategy id.
    pub strategy: String,
    /// `redis`, `etcd`, `zookeeper` or `in-process`.
    pub server: String,
    /// Locks renewed per server call when renewal is batched (`redis-watchdog-batched`: 100); 1 for
    /// per-lock renewal; absent when one call renews every lock of the client (etcd keep-alive,
    /// ZooKeeper session) or there is no server.
    pub locks_per_renew_call: Option<u64>,
    /// One point per step reached, ascending.
    pub points: Vec<ScalePoint>,
    /// Where and why the strategy stopped short of the last step; absent when it reached every step.
    pub stopped: Option<ScaleStop>,
    /// For a peer (a real library through its adapter): the library and the version its process
    /// loaded, as it reported them (`Redisson RLock 3.52.0`); absent for lockbench's own rows.
    #[serde(default)]
    pub library: Option<String>,
    /// For a peer: lockbench's rows it is read beside in the pairs table (its model first); empty for
    /// lockbench's own rows.
    #[serde(default)]
    pub beside: Vec<String>,
    /// Whether the client figures (CPU, RSS, threads, the caps) were read from the library's own
    /// adapter process rather than lockbench's: true for a peer, whose library holds and renews its
    /// locks there.
    #[serde(default)]
    pub in_adapter_process: bool,
    /// The client's resident set once connected (and warmed up), before its first acquire: memory per
    /// held lock is the growth from here; absent in files written before it was recorded.
    #[serde(default)]
    pub client_rss_at_start_bytes: Option<u64>,
    /// The passes after the first, in run order, when the run repeated every strategy
    /// ([`ScaleSettings::passes`]): `points` and `stopped` above are the first pass's. Empty with one
    /// pass (and in older files).
    #[serde(default)]
    pub repeats: Vec<ScalePass>,
}

/// One more pass of a strategy: a fresh client holding the same steps again.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ScalePass {
    /// One point per step reached, ascending.
    pub points: Vec<ScalePoint>,
    /// Where and why this pass stopped short of the last step; absent when it reached every step.
    pub stopped: Option<ScaleStop>,
}

/// Where a strategy stopped.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ScaleStop {
    /// Locks held when it stopped.
    pub held: u64,
    /// The step it was filling.
    pub step: u64,
    /// Why: `thread cap 10000 reached`, `acquire failed: …`, `RSS cap …`, `budget …`.
    pub reason: String,
}

impl ScaleStop {
    /// `stopped at 9990 held (filling step 10000): ` followed by `reason` (the stop's own, or a
    /// shortened one).
    pub fn describe(&self, reason: &str) -> String {
        format!(
            "stopped at {} held (filling step {}): {reason}",
            self.held, self.step
        )
    }

    /// `stopped at 9998: reason`.
    pub fn one_line(&self) -> String {
        format!("stopped at {}: {}", self.held, self.reason)
    }
}

/// The cost of holding `held_locks` locks with one client, over one measured window.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ScalePoint {
    /// Locks held when the window started.
    pub held_locks: u64,
    /// Locks still held (not lost) when it ended.
    pub held_at_end: u64,
    /// Time it took to acquire this step's new locks.
    pub fill_ms: f64,
    /// Length of the measured window.
    pub window_ms: f64,
    /// Requests the server received per second that were renewals (Redis `EVALSHA` calls, etcd
    /// `LeaseKeepAlive` messages, ZooKeeper packets); absent without a server.
    pub renew_calls_per_s: Option<f64>,
    /// The ceiling the design allows: held ÷ renewal period ÷ locks per call (for per-lock and batched
    /// renewal); absent where one call renews every lock.
    pub renew_calls_bound_per_s: Option<f64>,
    /// Per-lock renewals per second, from the strategy's `Renewed` events.
    pub renewals_per_s: f64,
    /// Renewal failures (`RenewFailed` events) since the step began filling.
    pub renew_failures: u64,
    /// Leases lost (`Lost` events) since the step began filling.
    pub lost: u64,
    /// The least remaining TTL any renewal in the window found before extending (`Renewed` events'
    /// `remaining_ttl_before`), ms: the thinnest safety margin; absent when no renewal reported one.
    #[serde(default)]
    pub thinnest_margin_ms: Option<f64>,
    /// The 0.1th percentile of the remaining TTLs the renewals in the window found, ms: the thin end of
    /// the margin's distribution, less at the mercy of one late call than the least; absent when no
    /// renewal reported one.
    #[serde(default)]
    pub margin_p0_1_ms: Option<f64>,
    /// Server CPU time per second of holding, in ms (a whole core is 1000); absent when unknown.
    pub server_cpu_ms_per_s: Option<f64>,
    /// Redis only: time the server spent executing the renew scripts (`INFO commandstats` usec of the
    /// script commands) per second, ms. Redis measures it in wall-clock time, so on a busy machine it can
    /// exceed the CPU time.
    pub server_command_ms_per_s: Option<f64>,
    /// Client CPU (user + system, the whole process) in percent of one core.
    pub client_cpu_percent: f64,
    /// Client resident set at the end of the window.
    pub client_rss_bytes: u64,
    /// Client threads at the end of the window.
    pub client_threads: u64,
    /// Locks the server itself held at the end of the window: in Redis the keys named after the run's
    /// lock keys (`SCAN MATCH *scale*`, less the `…:fence` counters), ephemeral nodes in ZooKeeper
    /// (`zk_ephemerals_count`), keys in etcd, granted advisory locks and unexpired lease rows (lockbench's
    /// and Spring JDBC's `INT_LOCK`) in PostgreSQL; less those there before the row's first acquire; absent
    /// where not counted. Read beside `held_at_end`, which
    /// is the client's own view (a peer that reports no loss keeps its leases held).
    #[serde(default)]
    pub server_held: Option<u64>,
}

/// One strategy's cost against held locks, for the chart (its first pass), and the losses of every
/// pass.
#[derive(Debug, Clone, PartialEq)]
pub struct CostSeries {
    /// Strategy id.
    pub strategy: String,
    /// Where it stopped short, as one line (`stopped at 9998: …`).
    pub stopped: Option<String>,
    /// Ascending by held locks.
    pub points: Vec<CostPoint>,
    /// The passes after the first ([`ScaleSeries::repeats`]); empty with one pass.
    pub repeats: Vec<CostPass>,
}

/// One more pass of a [`CostSeries`].
#[derive(Debug, Clone, PartialEq)]
pub struct CostPass {
    /// Where it stopped short, as one line.
    pub stopped: Option<String>,
    /// Ascending by held locks.
    pub points: Vec<CostPoint>,
}

/// One point of a [`CostSeries`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CostPoint {
    /// Held locks (x axis).
    pub held_locks: u64,
    /// Server renew calls per second (absent without a server).
    pub renew_calls_per_s: Option<f64>,
    /// Server CPU, ms per second of holding.
    pub server_cpu_ms_per_s: Option<f64>,
    /// Client CPU, percent of one core.
    pub client_cpu_percent: f64,
    /// Client resident set, MiB.
    pub rss_mb: f64,
    /// Client threads.
    pub threads: u64,
    /// Leases lost since the step began filling.
    pub lost: u64,
    /// Renewals that failed since the step began filling.
    pub renew_failures: u64,
    /// The least TTL left when a renewal landed, ms (absent when no renewal reported one).
    pub thinnest_margin_ms: Option<f64>,
}

/// What one pass of a strategy cost in safety: the step that went worst.
#[derive(Debug, Clone, PartialEq)]
pub struct PassLosses {
    /// Steps it measured (0: it held nothing, see `stopped`).
    pub steps: usize,
    /// Where it stopped short, as one line.
    pub stopped: Option<String>,
    /// The step with the most locks lost, then the most failed renewals; `None` when no step lost a
    /// lease or failed a renewal.
    pub worst: Option<CostPoint>,
    /// The most locks it held through a step without a loss or failed renewal (0 when none).
    pub held_cleanly: u64,
}

impl PassLosses {
    /// The losses of one pass's `points`, which stopped short where `stopped` says.
    pub fn of(points: &[CostPoint], stopped: Option<&str>) -> Self {
        PassLosses {
            steps: points.len(),
            stopped: stopped.map(str::to_owned),
            worst: points
                .iter()
                .filter(|p| p.lost > 0 || p.renew_failures > 0)
                .max_by_key(|p| (p.lost, p.renew_failures))
                .copied(),
            held_cleanly: points
                .iter()
                .filter(|p| p.lost == 0 && p.renew_failures == 0)
                .map(|p| p.held_locks)
                .max()
                .unwrap_or(0),
        }
    }

    /// Whether it lost a lease or failed a renewal at some step.
    pub fn troubled(&self) -> bool {
        self.worst.is_some()
    }

    /// Leases lost at its worst step (0 when none).
    pub fn lost(&self) -> u64 {
        self.worst.map_or(0, |w| w.lost)
    }

    /// Failed renewals at its worst step (0 when none).
    pub fn renew_failures(&self) -> u64 {
        self.worst.map_or(0, |w| w.renew_failures)
    }
}

impl CostSeries {
    /// The losses of every pass, the first first.
    pub fn passes(&self) -> Vec<PassLosses> {
        std::iter::once(PassLosses::of(&self.points, self.stopped.as_deref()))
            .chain(
                self.repeats
                    .iter()
                    .map(|p| PassLosses::of(&p.points, p.stopped.as_deref())),
            )
            .collect()
    }
}

/// Why a scale file could not be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ScaleReadError {
    /// Not JSON, or not the shape of a scale file.
    #[error("not a lockbench scale file: {0}")]
    Json(#[from] serde_json::Error),
    /// Written by a version with a different [`SCALE_SCHEMA_VERSION`].
    #[error(
        "scale schema_version {found} is not supported (this build reads {SCALE_SCHEMA_VERSION})"
    )]
    Version {
        /// The version in the file.
        found: u64,
    },
}

impl ScaleResults {
    /// Parses a scale file, checking its `schema_version` first.
    pub fn from_json(text: &str) -> Result<Self, ScaleReadError> {
        #[derive(Deserialize)]
        struct Head {
            schema_version: u64,
        }
        let head: Head = serde_json::from_str(text)?;
        if head.schema_version != u64::from(SCALE_SCHEMA_VERSION) {
            return Err(ScaleReadError::Version {
                found: head.schema_version,
            });
        }
        Ok(serde_json::from_str(text)?)
    }

    /// The file's JSON text (pretty-printed).
    pub fn to_json(&self) -> String {
        // Serializing these plain structs cannot fail (string keys, finite or null numbers).
        serde_json::to_string_pretty(self).unwrap_or_default()
    }

    /// Cost against held locks, one series per strategy: what the "cost vs held locks" chart draws.
    pub fn cost_series(&self) -> Vec<CostSeries> {
        self.strategies
            .iter()
            .map(ScaleSeries::cost_series)
            .collect()
    }
}

impl ScaleSeries {
    /// This strategy's cost against held locks, with its later passes.
    pub fn cost_series(&self) -> CostSeries {
        CostSeries {
            strategy: self.strategy.clone(),
            stopped: self.stopped.as_ref().map(ScaleStop::one_line),
            points: self.points.iter().map(ScalePoint::cost_point).collect(),
            repeats: self
                .repeats
                .iter()
                .map(|pass| CostPass {
                    stopped: pass.stopped.as_ref().map(ScaleStop::one_line),
                    points: pass.points.iter().map(ScalePoint::cost_point).collect(),
                })
                .collect(),
        }
    }
}

impl ScalePoint {
    /// The chart's view of this point.
    pub fn cost_point(&self) -> CostPoint {
        CostPoint {
            held_locks: self.held_locks,
            renew_calls_per_s: self.renew_calls_per_s,
            server_cpu_ms_per_s: self.server_cpu_ms_per_s,
            client_cpu_percent: self.client_cpu_percent,
            rss_mb: self.client_rss_bytes as f64 / (1024.0 * 1024.0),
            threads: self.client_threads,
            lost: self.lost,
            renew_failures: self.renew_failures,
            thinnest_margin_ms: self.thinnest_margin_ms,
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
pub(crate) mod tests {
    use super::*;

    /// A one-step, one-strategy results file.
    pub(crate) fn sample() -> ScaleResults {
        let point = ScalePoint {
            held_locks: 1000,
            held_at_end: 1000,
            fill_ms: 120.0,
            window_ms: 10_000.0,
            renew_calls_per_s: Some(10.0),
            renew_calls_bound_per_s: Some(10.0),
            renewals_per_s: 1000.0,
            renew_failures: 0,
            lost: 0,
            thinnest_margin_ms: Some(2000.0),
            margin_p0_1_ms: Some(2010.0),
            server_cpu_ms_per_s: Some(4.0),
            server_command_ms_per_s: Some(1.5),
            client_cpu_percent: 0.8,
            client_rss_bytes: 64 << 20,
            client_threads: 3,
            server_held: None,
        };
        ScaleResults {
            schema_version: SCALE_SCHEMA_VERSION,
            complete: true,
            started_at: "2025-01-01T00:00:00Z".into(),
            finished_at: "2025-01-01T00:01:00Z".into(),
            settings: ScaleSettings {
                steps: vec![1000],
                hold_ms: 10_000.0,
                watchdog_timeout_ms: 3000.0,
                renew_period_ms: 1000.0,
                acquire_concurrency: 64,
                step_budget_ms: 60_000.0,
                max_threads: 10_000,
                max_rss_bytes: 4 << 30,
                warm_up_ms: None,
                passes: 1,
            },
            environment: Environment {
                lockbench_version: "0.1.0".into(),
                git_commit: None,
                os: "linux".into(),
                kernel: "6".into(),
                cpu_model: "cpu".into(),
                cores: 2,
                memory_bytes: 1 << 30,
                servers: Vec::new(),
            },
            strategies: vec![ScaleSeries {
                strategy: "redis-watchdog-batched".into(),
                server: "redis".into(),
                locks_per_renew_call: Some(100),
                points: vec![point],
                stopped: Some(ScaleStop {
                    held: 1000,
                    step: 10_000,
                    reason: "budget".into(),
                }),
                ..ScaleSeries::default()
            }],
        }
    }

    #[test]
    fn round_trips_and_checks_the_version() {
        let results = sample();
        let text = results.to_json();
        assert_eq!(ScaleResults::from_json(&text).unwrap(), results);
        let newer = text.replace(
            &format!("\"schema_version\": {SCALE_SCHEMA_VERSION}"),
            "\"schema_version\": 99",
        );
        let err = ScaleResults::from_json(&newer).unwrap_err();
        assert!(err.to_string().contains("99"), "{err}");
        assert!(ScaleResults::from_json("[]").is_err());
    }

    #[test]
    fn cost_series_is_the_charts_view() {
        let series = sample().cost_series();
        assert_eq!(series.len(), 1);
        assert_eq!(series[0].strategy, "redis-watchdog-batched");
        assert_eq!(
            series[0].stopped.as_deref(),
            Some("stopped at 1000: budget")
        );
        let point = series[0].points[0];
        assert_eq!(point.held_locks, 1000);
        assert_eq!(point.rss_mb, 64.0);
        assert_eq!(point.threads, 3);
        assert_eq!(point.renew_calls_per_s, Some(10.0));
    }

    #[test]
    fn a_file_written_before_passes_reads_as_one_pass() {
        let old =
            ScaleResults::from_json(include_str!("../tests/fixtures/scale-redis.json")).unwrap();
        assert_eq!(old.settings.passes, 1);
        for series in old.cost_series() {
            assert!(series.repeats.is_empty());
            assert_eq!(series.passes().len(), 1, "{}", series.strategy);
        }
    }

    #[test]
    fn every_pass_is_recorded_and_read_back_with_its_losses() {
        let mut results = sample();
        results.settings.passes = 3;
        let first = results.strategies[0].points[0].clone();
        let lossy = ScalePoint {
            lost: 34,
            renew_failures: 7,
            ..first.clone()
        };
        results.strategies[0].repeats = vec![
            ScalePass {
                points: vec![lossy],
                stopped: None,
            },
            ScalePass {
                points: Vec::new(),
                stopped: Some(ScaleStop {
                    held: 0,
                    step: 1000,
                    reason: "could not connect".into(),
                }),
            },
        ];
        let text = results.to_json();
        assert!(text.contains("\"repeats\""), "{text}");
        let back = ScaleResults::from_json(&text).unwrap();
        assert_eq!(back, results);
        let passes = back.cost_series()[0].passes();
        assert_eq!(passes.len(), 3);
        assert!(!passes[0].troubled());
        assert_eq!(passes[0].held_cleanly, 1000);
        assert_eq!((passes[1].lost(), passes[1].renew_failures()), (34, 7));
        assert_eq!(passes[1].held_cleanly, 0);
        assert_eq!(passes[2].steps, 0);
        assert_eq!(
            passes[2].stopped.as_deref(),
            Some("stopped at 0: could not connect")
        );
    }
}
