//! `lockbench scale`: what holding many locks costs. One client per strategy holds 1k, then 10k, then
//! 100k locks (each step adds to the locks already held); after each step it holds still for a measured
//! window and records the server's renew calls and CPU per second, and the client's CPU, resident set and
//! threads (docs/design.md §3 batched renewal, §5 client/server cost, §8 targets). Writes `DIR/scale.json`
//! ([`lockbench_reports::scale`]) after every strategy, so an interrupted run keeps what it measured
//! (`complete: false`), and prints a table. SIGINT or SIGTERM (the stop signal `run` and `compare`
//! share) stops the strategy under way (its child is told in turn, and records where it stopped),
//! starts no other, writes the file marked incomplete and exits 130.
//!
//! Each strategy runs in its own worker process, through the driver's many-locks mode
//! (`bench/src/driver/many_locks/`: the same `lockbench worker` a case's client runs in, told to hold
//! many locks), so its client RSS, threads and CPU are its own and not what earlier strategies left
//! behind; the servers are started once, by this process, which also empties a managed Redis between
//! strategies.
//!
//! With `--passes N` every strategy holds the steps N times, each pass a fresh client in a fresh child
//! process, the first pass of every strategy before the second of any; `scale.json` keeps the first
//! pass in each series' points and the later ones in its `repeats`, so a loss can be told apart from
//! a one-off ([`lockbench_reports::many_locks`]).
//!
//! Everything is bounded: a step that is not filled within `--step-budget`, a client that reaches
//! `--max-threads` threads or `--max-rss-mib` resident memory, or an acquire error stops that strategy,
//! and the stop is recorded with its reason (`stopped at 9984: thread cap 10000 reached`). The locks held
//! so far are still measured, then released.
//!
//! Beside `redis-watchdog-batched`, the same run measures a raw sender making the same calls on the
//! same schedule with no `lockers` code between: the yardstick its client-CPU target is a ratio to,
//! measured under the same load. [`table`] renders the terminal table and the docs/design.md §8
//! checks.

pub mod table;

use std::path::PathBuf;
use std::time::Duration;

use lockbench_reports::scale::{SCALE_SCHEMA_VERSION, ScalePass, ScaleResults};

use crate::backends::{Backends, GivenAddresses};
use crate::base::clock::now_rfc3339;
use crate::base::duration::{format_duration, parse_duration};
use crate::base::error::{BenchError, EXIT_INTERRUPTED, EXIT_OK};
use crate::base::stdout::{out, outln};
use crate::base::{environment, output};
use crate::commands::preflight;
use crate::commands::signals::stop_signals;
use crate::driver::many_locks::measure_one;
use crate::strategies::beside::with_libraries;
use crate::strategies::{self, Strategy, StrategyChoice};

pub use crate::driver::many_locks::raw::RAW_SENDER;
pub use crate::driver::many_locks::{Isolation, ScaleSpec, Subject, measure};
pub use table::{checks, render};

/// The file a scale run writes in its output directory.
pub const SCALE_FILE: &str = "scale.json";

/// Upper bounds on what may be asked, so a typo cannot take the machine down.
const MAX_STEP: u64 = 1_000_000;
const MAX_DURATION: Duration = Duration::from_secs(600);
const MAX_CONCURRENCY: usize = 1024;
const MAX_PASSES: u32 = 20;

/// Default of [`ScaleOptions::steps`].
pub const DEFAULT_STEPS: &str = "1000,10000,100000";
/// Default of [`ScaleOptions::hold`].
pub const DEFAULT_HOLD: &str = "10s";
/// Default of [`ScaleOptions::watchdog_timeout`].
pub const DEFAULT_WATCHDOG_TIMEOUT: &str = "3s";
/// Default of [`ScaleOptions::concurrency`].
pub const DEFAULT_CONCURRENCY: usize = 64;
/// Default of [`ScaleOptions::step_budget`].
pub const DEFAULT_STEP_BUDGET: &str = "60s";
/// Default of [`ScaleOptions::max_threads`].
pub const DEFAULT_MAX_THREADS: u64 = 10_000;
/// Default of [`ScaleOptions::max_rss_mib`].
pub const DEFAULT_MAX_RSS_MIB: u64 = 4096;
/// Default of [`ScaleOptions::passes`].
pub const DEFAULT_PASSES: u32 = 1;

/// The settings of a scale run as given (text, checked by [`ScaleOptions::spec`], whose errors name
/// the flag each value came from).
#[derive(Debug, Clone)]
pub struct ScaleOptions {
    /// The strategies (default: all but those whose held count means nothing).
    pub strategies: Option<StrategyChoice>,
    /// Held-lock counts, ascending, comma-separated (`10k` works).
    pub steps: String,
    /// Measured window per step.
    pub hold: String,
    /// TTL of the watchdog leases (renewed every third of it).
    pub watchdog_timeout: String,
    /// Concurrent acquires while filling a step.
    pub concurrency: usize,
    /// Most time a step may take to fill before the strategy stops.
    pub step_budget: String,
    /// Stop a strategy once the client has this many threads.
    pub max_threads: u64,
    /// Stop a strategy once the client's resident set passes this many MiB.
    pub max_rss_mib: u64,
    /// Run every strategy in this process.
    pub in_process: bool,
    /// Measure the raw sender beside `redis-watchdog-batched` (default on).
    pub yardstick: bool,
    /// Add the real libraries read beside the chosen strategies ([`libraries_beside`](crate::strategies::beside::libraries_beside)).
    pub peers: bool,
    /// Acquire-and-release cycles every row runs before its first step, unmeasured; `None`: the longest
    /// warm-up any chosen row needs (its runtime compiles as it goes: the JVM libraries), else none.
    pub warm_up: Option<String>,
    /// How many times every strategy holds the steps, each time a fresh client in a fresh process
    /// (the report flags only a loss that repeats).
    pub passes: u32,
}

impl Default for ScaleOptions {
    fn default() -> Self {
        ScaleOptions {
            strategies: None,
            steps: DEFAULT_STEPS.to_owned(),
            hold: DEFAULT_HOLD.to_owned(),
            watchdog_timeout: DEFAULT_WATCHDOG_TIMEOUT.to_owned(),
            concurrency: DEFAULT_CONCURRENCY,
            step_budget: DEFAULT_STEP_BUDGET.to_owned(),
            max_threads: DEFAULT_MAX_THREADS,
            max_rss_mib: DEFAULT_MAX_RSS_MIB,
            in_process: false,
            yardstick: true,
            peers: false,
            warm_up: None,
            passes: DEFAULT_PASSES,
        }
    }
}

/// What `lockbench scale` is asked to do.
#[derive(Debug, Clone, Default)]
pub struct ScaleRequest {
    /// The settings.
    pub options: ScaleOptions,
    /// Output directory (default: `results/scale-UTCTIME`).
    pub out: Option<PathBuf>,
    /// Servers the user gave instead of starting them.
    pub servers: GivenAddresses,
}

impl ScaleOptions {
    /// Checks every value; a usage error names the bad flag. Strategies run in child processes of the
    /// current executable unless `in_process` is set.
    pub fn spec(&self) -> Result<ScaleSpec, BenchError> {
        let usage = |flag: &str, why: String| BenchError::usage(format!("--{flag}: {why}"));
        let strategies: Vec<&'static Strategy> = match &self.strategies {
            Some(choice) => choice.entries().to_vec(),
            None => strategies::STRATEGIES
                .iter()
                // Left out: those whose held count means nothing.
                .filter(|s| s.in_all && s.facts.in_many_locks)
                .collect(),
        };
        // The adapters `--adapter` added hold their locks too.
        let strategies: Vec<&'static Strategy> = strategies
            .into_iter()
            .chain(strategies::added())
            .fold(Vec::new(), |mut all, s| {
                if !all.iter().any(|a: &&Strategy| a.id == s.id) {
                    all.push(s);
                }
                all
            });
        let strategies = if self.peers {
            with_libraries(strategies)
        } else {
            strategies
        };
        let steps = parse_steps(&self.steps).map_err(|e| usage("steps", e))?;
        let duration = |flag: &str, text: &str| {
            let d = parse_duration(text).map_err(|e| usage(flag, e))?;
            if d.is_zero() || d > MAX_DURATION {
                return Err(usage(
                    flag,
                    format!("must be > 0 and ≤ {}", format_duration(MAX_DURATION)),
                ));
            }
            Ok(d)
        };
        let hold = duration("hold", &self.hold)?;
        let watchdog_timeout = duration("watchdog-timeout", &self.watchdog_timeout)?;
        let step_budget = duration("step-budget", &self.step_budget)?;
        let warm_up = match &self.warm_up {
            Some(text) => {
                let d = parse_duration(text).map_err(|e| usage("warmup", e))?;
                if d > MAX_DURATION {
                    let most = format_duration(MAX_DURATION);
                    return Err(usage("warmup", format!("must be ≤ {most}")));
                }
                d
            }
            None => strategies
                .iter()
                .map(|s| s.facts.min_warmup)
                .max()
                .unwrap_or_default(),
        };
        if !(1..=MAX_CONCURRENCY).contains(&self.concurrency) {
            return Err(usage(
                "concurrency",
                format!("must be in 1..={MAX_CONCURRENCY}"),
            ));
        }
        if self.max_threads == 0 {
            return Err(usage("max-threads", "must be ≥ 1".into()));
        }
        if self.max_rss_mib == 0 {
            return Err(usage("max-rss-mib", "must be ≥ 1".into()));
        }
        if !(1..=MAX_PASSES).contains(&self.passes) {
            return Err(usage("passes", format!("must be in 1..={MAX_PASSES}")));
        }
        let isolation = if self.in_process {
            Isolation::InProcess
        } else {
            let exe = std::env::current_exe().map_err(|e| {
                BenchError::failed(format!("cannot find the lockbench executable: {e}"))
            })?;
            Isolation::ChildProcess(exe)
        };
        Ok(ScaleSpec {
            strategies,
            steps,
            hold,
            watchdog_timeout,
            concurrency: self.concurrency,
            step_budget,
            max_threads: self.max_threads,
            max_rss_bytes: self.max_rss_mib.saturating_mul(1 << 20),
            isolation,
            yardstick: self.yardstick,
            warm_up,
            passes: self.passes,
        })
    }
}

/// `1000,10000,100000` → strictly ascending counts in 1..=1,000,000 (`10k` and `1m` also accepted).
fn parse_steps(text: &str) -> Result<Vec<u64>, String> {
    let mut steps = Vec::new();
    for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let lower = part.to_ascii_lowercase();
        let (digits, scale) = if let Some(d) = lower.strip_suffix('k') {
            (d, 1_000)
        } else if let Some(d) = lower.strip_suffix('m') {
            (d, 1_000_000)
        } else {
            (lower.as_str(), 1)
        };
        let n = digits
            .parse::<u64>()
            .ok()
            .and_then(|n| n.checked_mul(scale))
            .ok_or_else(|| format!("expected counts like 1000,10k,100k, got {part:?}"))?;
        if n == 0 || n > MAX_STEP {
            return Err(format!("{part:?} is out of range 1..={MAX_STEP}"));
        }
        if steps.last().is_some_and(|&last| n <= last) {
            return Err(format!("steps must be strictly ascending, got {text:?}"));
        }
        steps.push(n);
    }
    if steps.is_empty() {
        return Err("no step given".into());
    }
    Ok(steps)
}

/// Runs `lockbench scale`: prints the table, writes `DIR/scale.json`, returns the exit code.
pub async fn command(args: ScaleRequest) -> Result<i32, BenchError> {
    let spec = args.options.spec()?;
    let started_at = now_rfc3339();
    let out_dir = args
        .out
        .clone()
        .unwrap_or_else(|| output::default_dir("scale", &started_at));
    let out_dir = output::claim_dir(&out_dir, SCALE_FILE)?;
    if strategies::added_log_dir().is_none() {
        // Else `compare`, whose many-locks entry this is, chose the folder.
        strategies::log_added_adapters_under(&out_dir.join(strategies::ADDED_ADAPTER_LOGS));
    }
    let given = args.servers.clone();
    let needed = strategies::servers_needed(&spec.strategies);
    preflight::valkey_rows_need_valkey(&spec.strategies, &given)?;
    let interrupt = stop_signals();
    let backends = Backends::prepare(&needed, &given, strategies::check_address).await?;
    preflight::valkey_rows_have_their_commands(&spec.strategies, &backends, &spec.settings())
        .await?;
    let mut results = ScaleResults {
        schema_version: SCALE_SCHEMA_VERSION,
        complete: false,
        started_at,
        finished_at: now_rfc3339(),
        settings: spec.to_model(),
        environment: environment::collect(backends.infos()),
        strategies: Vec::new(),
    };
    let subjects: Vec<(&'static Strategy, Subject)> = spec
        .strategies
        .iter()
        .flat_map(|s| spec.subjects_of(s))
        .collect();
    // Pass by pass: the first of every subject, then the second of every subject, …, so a stretch of
    // bad luck on the machine falls on one pass of several strategies, not on every pass of one.
    'passes: for pass in 1..=spec.passes {
        for (index, &(strategy, subject)) in subjects.iter().enumerate() {
            if interrupt.is_set() {
                break 'passes;
            }
            let name = match subject {
                Subject::Strategy => strategy.id,
                Subject::RawSender => RAW_SENDER,
            };
            match spec.passes {
                1 => eprintln!("lockbench scale: {name} …"),
                n => eprintln!("lockbench scale: {name} (pass {pass} of {n}) …"),
            }
            let series = measure_one(strategy, subject, &spec, &backends, &interrupt).await;
            match results.strategies.get_mut(index) {
                Some(first) if pass > 1 => first.repeats.push(ScalePass {
                    points: series.points,
                    stopped: series.stopped,
                }),
                _ => results.strategies.push(series),
            }
            results.finished_at = now_rfc3339();
            // Written after every measurement, so an interrupted run keeps what it measured.
            output::write_atomic(&out_dir, SCALE_FILE, &results.to_json())?;
        }
    }
    let interrupted = interrupt.is_set();
    results.complete = !interrupted;
    results.finished_at = now_rfc3339();
    let path = output::write_atomic(&out_dir, SCALE_FILE, &results.to_json())?;
    out!("{}", render(&results));
    outln!("results: {}", path.display());
    Ok(if interrupted {
        EXIT_INTERRUPTED
    } else {
        EXIT_OK
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::strategies::beside::rows_beside;

    #[test]
    fn steps_parse_and_are_checked() {
        assert_eq!(
            parse_steps("1000,10k, 100K").ok(),
            Some(vec![1000, 10_000, 100_000])
        );
        assert_eq!(parse_steps("1m").ok(), Some(vec![1_000_000]));
        for bad in ["", "0", "10,5", "10,10", "2m", "x", "-5"] {
            assert!(parse_steps(bad).is_err(), "{bad:?} accepted");
        }
    }

    #[test]
    fn defaults_are_valid_isolated_and_leave_out_the_naive_variant() {
        let spec = ScaleOptions::default()
            .spec()
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(spec.steps, [1000, 10_000, 100_000]);
        assert_eq!(spec.renew_period(), Duration::from_secs(1));
        assert!(matches!(spec.isolation, Isolation::ChildProcess(_)));
        assert!(
            spec.strategies
                .iter()
                .any(|s| s.id == "redis-watchdog-batched")
        );
        assert!(!spec.strategies.iter().any(|s| !s.facts.in_many_locks));
        assert_eq!(spec.to_model().max_rss_bytes, 4096 << 20);
        assert_eq!(
            spec.warm_up,
            Duration::ZERO,
            "lockbench's own rows need none"
        );
        let spec = ScaleOptions {
            in_process: true,
            ..ScaleOptions::default()
        }
        .spec()
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(spec.isolation, Isolation::InProcess);
    }

    #[test]
    fn peers_put_each_library_after_the_rows_it_is_read_beside_on_the_same_server() {
        let spec = ScaleOptions {
            strategies: StrategyChoice::parse(
                "redisson,redis-watchdog-batched,zookeeper,etcd-lease",
            )
            .ok(),
            peers: true,
            ..ScaleOptions::default()
        }
        .spec()
        .unwrap_or_else(|e| panic!("{e}"));
        let ids: Vec<&str> = spec.strategies.iter().map(|s| s.id).collect();
        assert_eq!(
            ids,
            [
                "redisson",
                "jvm-redisson",
                "jvm-redisson-4",
                "redis-watchdog-batched",
                "zookeeper",
                "jvm-curator",
                "py-kazoo",
                "etcd-lease",
                "go-etcd-mutex",
                "py-etcd3"
            ]
        );
        for peer in spec.strategies.iter().filter(|s| s.is_peer()) {
            for row in rows_beside(peer) {
                let native = strategies::find(&row).unwrap_or_else(|| panic!("{row}"));
                assert!(
                    !native.is_peer() && native.server == peer.server,
                    "{row} beside {}",
                    peer.id
                );
            }
        }
        // Every row warms up as long as the JVM libraries need, so a pair runs the same workload.
        assert_eq!(
            spec.warm_up,
            strategies::find("jvm-redisson").map_or(Duration::ZERO, |s| s.facts.min_warmup)
        );
        assert!(spec.warm_up > Duration::ZERO);
        assert_eq!(
            rows_beside(strategies::find("jvm-redisson").unwrap_or_else(|| panic!())),
            ["redisson", "redis-watchdog-batched"]
        );
    }
}
