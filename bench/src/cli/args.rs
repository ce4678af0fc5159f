//! Each command's own flags (`run`, `compare`, `worker`, `report`, `scale`) and the request they
//! make of the command: the one place a `--strategies` list is parsed.

use std::path::PathBuf;

use clap::Args;
use lockbench_reports::sections::Part;

use super::flags::{AdapterFlags, FormatFlag, GateFlag, ServerArgs, WorkloadFlags, whole_number};
use crate::base::error::BenchError;
use crate::commands::compare::CompareRequest;
use crate::commands::report::ReportRequest;
use crate::commands::run::{Execution, RunRequest};
use crate::commands::scale;
use crate::commands::scale::{ScaleOptions, ScaleRequest};
use crate::strategies::StrategyChoice;
use crate::workload::{ScenarioFile, split_list};

/// `lockbench run`: a scenario (preset or TOML file) with overrides.
#[derive(Debug, Clone, Default, Args)]
#[command(after_help = concat!(workload_syntax!(), "
Exit codes: 0 done, 1 failed while running, 2 bad input (nothing measured), 130 interrupted (partial results written).

Examples:
  lockbench run --strategies memory --duration 2s                # a first run, no server needed
  lockbench run -s process-pause --strategies redis-watchdog,zookeeper
  lockbench run -s lease-too-short --leases watchdog,fixed:1s --task \"uniform 10ms..100ms\"
  lockbench run -s my-scenario.toml --clients 8 --keys 2 --out results/mine
  lockbench run --strategies redis-watchdog --redis redis://10.0.0.5:6379/0 --fault \"pause_worker at=1s duration=2s\""))]
pub struct RunArgs {
    /// Preset name (see `lockbench scenarios`) or path of a scenario TOML file.
    #[arg(short, long, value_name = "NAME|FILE", default_value = "baseline")]
    pub scenario: String,
    /// Strategy ids, comma-separated, or `all` (see `lockbench strategies`).
    #[arg(long, value_name = "LIST")]
    pub strategies: Option<String>,
    /// Measured time per case (`0`: bounded by --cycles only).
    #[arg(short, long, value_name = "DURATION", allow_hyphen_values = true)]
    pub duration: Option<String>,
    /// Stop a case after this many completed critical sections (after warm-up).
    #[arg(long, value_name = "N", allow_negative_numbers = true, value_parser = whole_number::<u64>)]
    pub cycles: Option<u64>,
    /// Unmeasured time at the start of each case.
    #[arg(
        long,
        value_name = "DURATION",
        alias = "warm-up",
        allow_hyphen_values = true
    )]
    pub warmup: Option<String>,
    /// The workload: clients, keys, task, leases, TTL, acquire wait, think time or rate, on lost().
    #[command(flatten)]
    pub workload: WorkloadFlags,
    /// Where clients run: tasks (one process), processes (one child process per client) or remote
    /// (`lockbench worker --connect` processes that connect over TCP, one per client; the token comes
    /// from LOCKBENCH_WORKER_TOKEN on both sides).
    #[arg(long, value_name = "MODE")]
    pub workers: Option<String>,
    /// Where to listen for remote workers [default: 127.0.0.1:7457].
    #[arg(long, value_name = "ADDR")]
    pub listen: Option<String>,
    /// Peers: one adapter process per client even with workers = tasks (by default an adapter that
    /// serves many clients runs a case's clients in one process, each its own library client).
    #[arg(long)]
    pub peer_process_per_client: bool,
    /// Seed for key choice and task durations.
    #[arg(long, value_name = "N", allow_negative_numbers = true, value_parser = whole_number::<u64>)]
    pub seed: Option<u64>,
    /// Output directory [default: results/SCENARIO-UTCTIME].
    #[arg(short, long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Servers to use instead of starting them.
    #[command(flatten)]
    pub servers: ServerArgs,
    /// No progress bar (it is shown only when stdout is a terminal anyway).
    #[arg(long)]
    pub no_progress: bool,
    /// Write each case's history (every acquire, read, write and release, as invoked and completed)
    /// as JSON lines into DIR/history/, for a checker outside lockbench (bench/tests/checker/).
    #[arg(long)]
    pub history: bool,
    /// Run each case N times, each with its own seed, and pool them into one result that says how
    /// many trials were violated, with the 95 % interval of the rate [default: one run, not pooled].
    #[arg(long, value_name = "N", allow_negative_numbers = true, value_parser = whole_number::<u32>)]
    pub trials: Option<u32>,
    /// With --trials: the most trials a case may run; a case whose trials disagree, or where the
    /// scenario's theory calls the break a race and it broke in every trial, gets extra trials until
    /// its 95 % interval is narrow [default: --trials, no extra trials].
    #[arg(long, value_name = "N", allow_negative_numbers = true, value_parser = whole_number::<u32>)]
    pub max_trials: Option<u32>,
    /// Inject a fault in every case, replacing the scenario's (repeatable; `none` removes them):
    /// KIND [at=D] [target=holder|client:N|all|server] [duration=D] and the kind's settings, e.g.
    /// "pause_worker at=1s duration=2s". Kinds: pause_worker, crash_worker, starve_worker, cpu_hog
    /// (threads=N), cgroup_quota (quota=D period=D), pause_server, client_pause, pubsub_kill
    /// (every=D), proxy_delay (delay=D direction=upstream|downstream|both), proxy_blackhole,
    /// proxy_reset (every=D), failover (replication_lag=D), sentinel_failover,
    /// cluster_master_kill, cluster_failover, leader_kill,
    /// node_kill (nodes=I,J duration=D),
    /// node_restart (nodes=I,J), clock_jump (nodes=I rate=N), server_restart (durability=none|aof-always),
    /// terminate_session (target=holder only), keepalive_partition (PostgreSQL or MariaDB in a namespace of its own).
    #[arg(long = "fault", value_name = "FAULT")]
    pub faults: Vec<String>,
    /// Adapters of your own.
    #[command(flatten)]
    pub adapters: AdapterFlags,
}

impl RunArgs {
    /// The flags that override the scenario file (`--strategies` is the request's, parsed).
    pub fn overrides(&self) -> ScenarioFile {
        // `--fault` text is checked where it is applied (the run, `RunRequest::faults`).
        ScenarioFile {
            duration: self.duration.clone(),
            cycles: self.cycles,
            warmup: self.warmup.clone(),
            workers: self.workers.clone(),
            peer_process_per_client: self.peer_process_per_client.then_some(true),
            seed: self.seed,
            ..self.workload.fields()
        }
    }

    /// The run these flags ask for; `--strategies` is parsed here, once (a bad list is a usage error).
    pub fn request(&self) -> Result<RunRequest, BenchError> {
        let strategies = match self.strategies.as_deref() {
            // An empty list says what the scenario file's field needs.
            Some(list) if split_list(list).is_empty() => {
                return Err(BenchError::usage(
                    "strategies: name at least one strategy (or all)",
                ));
            }
            Some(list) => Some(StrategyChoice::parse(list).map_err(BenchError::usage)?),
            None => None,
        };
        Ok(RunRequest {
            scenario: self.scenario.clone(),
            strategies,
            overrides: self.overrides(),
            faults: self.faults.clone(),
            history: self.history,
            execution: Execution {
                out: self.out.clone(),
                servers: self.servers.given(),
                progress: !self.no_progress,
                trials: self.trials.unwrap_or(0),
                progress_title: None,
                settle_early: false,
                max_trials: self.max_trials.unwrap_or(0),
                extra_trials_until: None,
                listen: self.listen.clone(),
            },
        })
    }
}

/// `lockbench compare`.
#[derive(Debug, Clone, Default, Args)]
#[command(after_help = concat!("\
Runs every scenario of the suite (baseline, long-tail, lease-too-short, every fault kind and a short
many-locks scale pass; --full adds the library-fidelity scenarios) against every strategy each applies to, every case --trials times with different
seeds, starting each scenario's servers once; then writes DIR/results.json (all scenarios in one file),
DIR/report.html (self-contained), DIR/report.md and DIR/charts/*.png|svg. `lockbench report
DIR/results.json` renders the reports again. Planned on 2 idle cores: default (3 trials) under 20
minutes; --quick (fewer scenarios, 1 trial) under 4 minutes; the plan is printed at the start.
Exit codes: 0 done, 1 a case or scenario failed (the report shows it), 2 bad input, 130 interrupted.
", workload_syntax!(), "

Examples:
  lockbench compare --quick                                  # a first look, about 4 minutes
  lockbench compare --strategies redis-watchdog,etcd-lease,zookeeper --trials 5
  lockbench compare --scenarios baseline,process-pause --clients 5 --task \"uniform 20ms..60ms\" --watchdog-timeout 1500ms
  lockbench compare --workload bench/workloads/queue-consumer.toml --time-scale 10
  lockbench compare --full --out results/full                # + the library-fidelity scenarios
  lockbench compare --strategies redis-watchdog --fail-on 'violation,baseline:p99>200ms'   # a CI gate"))]
pub struct CompareArgs {
    /// The short suite (under 4 minutes: fewer scenarios, 1 trial), for a first look.
    #[arg(long, conflicts_with = "thorough")]
    pub quick: bool,
    /// The full suite: the default one plus the library-fidelity scenarios (Redisson's renewal
    /// errors, busy server, orphaned holders and renewal after unlock; Redis restarts; Redlock's node
    /// faults; failovers through Sentinel and in a Redis Cluster; PostgreSQL's failover, session kill
    /// and keepalive partition), about 40 minutes at 3 trials.
    #[arg(long, conflicts_with = "quick")]
    pub full: bool,
    /// The full suite at 10 trials per case, for tighter violation-rate intervals: planned at about
    /// 2.5 hours on 2 idle cores (every trial runs, none stops at a first violation).
    #[arg(long)]
    pub thorough: bool,
    /// Trials per case, each with its own seed [default: 3; 1 with --quick; 10 with --thorough].
    #[arg(long, value_name = "N", allow_negative_numbers = true, value_parser = whole_number::<u32>)]
    pub trials: Option<u32>,
    /// The most trials a case may run: a case whose trials disagree, or where theory calls the
    /// break a race and it broke in every trial, gets extra trials (after every planned one, within
    /// the suite's budget) until its 95 % interval is narrow [default: 3 × --trials; --trials with
    /// --quick or --thorough].
    #[arg(long, value_name = "N", allow_negative_numbers = true, value_parser = whole_number::<u32>)]
    pub max_trials: Option<u32>,
    /// Only these scenarios of the suite, comma-separated [default: the whole suite].
    #[arg(short, long, value_name = "LIST", alias = "scenario")]
    pub scenarios: Option<String>,
    /// Output directory [default: results/compare-UTCTIME].
    #[arg(short, long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Strategy ids, comma-separated, or `all` [default: all].
    #[arg(long, value_name = "LIST")]
    pub strategies: Option<String>,
    /// Add the peers: the real libraries through their adapter processes (every manifest in
    /// adapters/*/, as `lockbench strategies` lists them); with --strategies, only those read beside a
    /// chosen strategy. One whose runtime is missing is skipped with the install command.
    #[arg(long)]
    pub peers: bool,
    /// Servers to use instead of starting them.
    #[command(flatten)]
    pub servers: ServerArgs,
    /// No progress bars (they are shown only when stdout is a terminal anyway).
    #[arg(long)]
    pub no_progress: bool,
    /// Write each case's history (every acquire, read, write and release) as JSON lines into each
    /// scenario's DIR/runs/NAME/history/, for a checker outside lockbench (bench/tests/checker/).
    #[arg(long)]
    pub history: bool,
    /// Run every scenario with this workload (a TOML file of workload fields: clients, keys, task,
    /// leases, watchdog_timeout, acquire_wait, think, rate, on_lost; see bench/workloads/); each
    /// scenario keeps its own fault, and the few that need part of their own workload keep it.
    #[arg(long, value_name = "FILE")]
    pub workload: Option<PathBuf>,
    /// The workload's fields as flags, over the --workload file's.
    #[command(flatten)]
    pub workload_flags: WorkloadFlags,
    /// Run at 1/N time: every duration of the workload, the faults and the cases divided by N, a
    /// decimal from 0.1 to 1000 (a 30s TTL runs as 3s with N = 10, as 12s with N = 2.5); round trips,
    /// server latency and GC do not scale.
    #[arg(long, value_name = "N", allow_hyphen_values = true)]
    pub time_scale: Option<String>,
    /// The report's tables in another format too.
    #[command(flatten)]
    pub format: FormatFlag,
    /// What makes the command exit 1 once the reports are written (limits and violation; the
    /// other gates need `lockbench report --baseline`).
    #[command(flatten)]
    pub gates: GateFlag,
    /// Adapters of your own.
    #[command(flatten)]
    pub adapters: AdapterFlags,
}

impl CompareArgs {
    /// The comparison these flags ask for; `--strategies` is parsed here, once (a bad list is a
    /// usage error).
    pub fn request(&self) -> Result<CompareRequest, BenchError> {
        let strategies = self
            .strategies
            .as_deref()
            .map(StrategyChoice::parse)
            .transpose()
            .map_err(|e| BenchError::usage(format!("--strategies: {e}")))?;
        Ok(CompareRequest {
            quick: self.quick,
            full: self.full,
            thorough: self.thorough,
            trials: self.trials,
            max_trials: self.max_trials,
            scenarios: self.scenarios.clone(),
            out: self.out.clone(),
            strategies,
            peers: self.peers,
            servers: self.servers.given(),
            progress: !self.no_progress,
            history: self.history,
            workload: self.workload.clone(),
            workload_fields: self.workload_flags.fields(),
            time_scale: self.time_scale.clone(),
            csv: self.format.csv(),
            fail_on: self.gates.fail_on.clone(),
        })
    }
}

/// `lockbench worker`.
#[derive(Debug, Clone, Default, Args)]
#[command(after_help = "\
ADDR is host:port; DURATIONS are humantime: 500ms, 20s, 1m 30s.

Examples (LOCKBENCH_WORKER_TOKEN set to one secret on every machine):
  lockbench run -s lease-too-short --clients 3 --workers remote --listen 0.0.0.0:7457   # the driver
  lockbench worker --connect driver.internal:7457 --wait 1m   # on each load machine, once per client")]
pub struct WorkerArgs {
    /// The driver's remote-worker address (`host:port`, as printed by `lockbench run --workers remote`).
    #[arg(long, value_name = "ADDR")]
    pub connect: Option<String>,
    /// Exit once the driver has been unreachable this long (it finished, or never started).
    #[arg(
        long,
        value_name = "DURATION",
        default_value = "30s",
        allow_hyphen_values = true
    )]
    pub wait: String,
    /// Adapters of your own (a remote worker needs the driver's).
    #[command(flatten)]
    pub adapters: AdapterFlags,
}

/// `lockbench report`.
#[derive(Debug, Clone, Args)]
#[command(after_help = "\
RESULTS.json is DIR/results.json of `lockbench compare` or of `lockbench run`, or DIR itself, or
either gzip'd (FILE.json.gz). Writes
report.html, report.md and charts/ into --out (default: the directory of RESULTS.json). Without
--scale, DIR/runs/many-locks/scale.json (the many-locks pass of `compare`) is read when it exists. With --baseline, prints one
line: how many cases changed beyond noise (a verdict changed, or throughput moved by more than the two
cases' trial spread, at least 10%) and how many are new violations; the report lists only those cases.
With --baseline it also prints one line per contradiction and a count line: a first-screen cell the two
runs contradict each other on beyond their own uncertainty (a verdict cell whose 95% Wilson intervals for
the violation rate exclude each other, a \"breaks under\" entry in one scorecard and not the other on such
counts, a CS/s figure whose 95% intervals, Student's t over its trials' own rates, exclude each
other); --fail-on contradiction exits 1 when
there is one: run the same suite twice to check that its answers repeat.
With --section NAME, prints that section alone (the tables in docs/findings/ are such sections of the
files in docs/results/). Exit codes: 0 done, 1 writing failed or --fail-on found what it names, 2 bad input (missing file, not
JSON, wrong schema_version).

Examples:
  lockbench report results/compare-<UTC time>      # reads DIR/results.json, writes the reports beside it
  lockbench report NEW/results.json --baseline OLD/results.json --fail-on regression,violation
  lockbench report results/compare-<UTC time> --fail-on 'violation,baseline:p99>200ms'   # a CI gate
  lockbench report docs/results/default-suite.json.gz --section verdicts
  lockbench report results.json --scale scale.json --out /tmp/report
  lockbench report results/compare-<UTC time> --format csv     # also scorecard.csv and verdicts.csv")]
pub struct ReportArgs {
    /// The results file to report, or the directory holding it.
    #[arg(value_name = "RESULTS.json")]
    pub results: PathBuf,
    /// An earlier results file, or the directory holding it: the report adds the changes against it.
    #[arg(long, value_name = "OLD.json")]
    pub baseline: Option<PathBuf>,
    /// What makes the command exit 1.
    #[command(flatten)]
    pub gates: GateFlag,
    /// A `lockbench scale` file: the report adds cost against held locks and losses at scale
    /// [default: runs/many-locks/scale.json beside RESULTS.json, when there].
    #[arg(long, value_name = "SCALE.json")]
    pub scale: Option<PathBuf>,
    /// Output directory [default: the directory of RESULTS.json].
    #[arg(short, long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Print one section of the Markdown report to stdout, as report.md shows it, and write nothing:
    /// how the tables in docs/findings/ are made.
    #[arg(
        long,
        value_name = "NAME",
        value_parser = clap::builder::PossibleValuesParser::new(Part::ALL.map(Part::name)),
        conflicts_with_all = ["baseline", "out", "format"]
    )]
    pub section: Option<String>,
    /// The report's tables in another format too.
    #[command(flatten)]
    pub format: FormatFlag,
}

impl ReportArgs {
    /// The report these flags ask for.
    pub fn request(&self) -> ReportRequest {
        ReportRequest {
            results: self.results.clone(),
            baseline: self.baseline.clone(),
            scale: self.scale.clone(),
            out: self.out.clone(),
            section: self.section.as_deref().and_then(Part::named),
            csv: self.format.csv(),
            fail_on: self.gates.fail_on.clone(),
        }
    }
}

/// `lockbench scale`: hold 1k → 10k → 100k locks per strategy and record what it costs.
#[derive(Debug, Clone, Args)]
#[command(after_help = "\
Each strategy runs with one client, in its own child process; each step adds locks to those already held,
then the client holds still for --hold while the cost is measured. A strategy stops at the first acquire
error, at --max-threads threads, at --max-rss-mib resident memory or when a step takes longer than
--step-budget to fill; the stop and its reason are recorded. Exit codes: 0 done, 1 failed while running,
2 bad input. DURATIONS are humantime (500ms, 20s, 1m 30s); LIST values are comma-separated, and held-lock
counts take k (10k = 10000).

Examples:
  lockbench scale                                               # 1k, 10k, 100k locks, every strategy
  lockbench scale --strategies redis-watchdog-batched --steps 100000 --watchdog-timeout 3s
  lockbench scale --peers --strategies redisson,zookeeper,etcd-lease   # beside Redisson, Curator, kazoo, etcd's Mutex
  lockbench scale --strategies redis-watchdog --redis redis://10.0.0.5:6379/0 --warmup 2s
  lockbench scale --strategies redis-guard-thread --steps 10k --hold 1s --passes 3   # does a loss repeat?")]
pub struct ScaleArgs {
    /// Strategy ids, comma-separated, or `all` [default: all but redis-keyspace-naive].
    #[arg(long, value_name = "LIST")]
    pub strategies: Option<String>,
    /// Held-lock counts, ascending, comma-separated (`10k` works).
    #[arg(long, value_name = "LIST", default_value = scale::DEFAULT_STEPS)]
    pub steps: String,
    /// Measured window per step.
    #[arg(long, value_name = "DURATION", default_value = scale::DEFAULT_HOLD, allow_hyphen_values = true)]
    pub hold: String,
    /// TTL of the watchdog leases (renewed every third of it).
    #[arg(long, value_name = "DURATION", default_value = scale::DEFAULT_WATCHDOG_TIMEOUT, allow_hyphen_values = true)]
    pub watchdog_timeout: String,
    /// Concurrent acquires while filling a step.
    #[arg(long, value_name = "N", default_value_t = scale::DEFAULT_CONCURRENCY, allow_negative_numbers = true, value_parser = whole_number::<usize>)]
    pub concurrency: usize,
    /// Most time a step may take to fill before the strategy stops.
    #[arg(long, value_name = "DURATION", default_value = scale::DEFAULT_STEP_BUDGET, allow_hyphen_values = true)]
    pub step_budget: String,
    /// Stop a strategy once the client has this many threads (guard threads: one per lock).
    #[arg(long, value_name = "N", default_value_t = scale::DEFAULT_MAX_THREADS, allow_negative_numbers = true, value_parser = whole_number::<u64>)]
    pub max_threads: u64,
    /// Stop a strategy once the client's resident set passes this many MiB.
    #[arg(long, value_name = "MIB", default_value_t = scale::DEFAULT_MAX_RSS_MIB, allow_negative_numbers = true, value_parser = whole_number::<u64>)]
    pub max_rss_mib: u64,
    /// Run every strategy in this process (faster; RSS and threads then carry over between strategies).
    #[arg(long)]
    pub in_process: bool,
    /// Also hold the locks with the real libraries beside each strategy (Redisson beside `redisson` and
    /// `redis-watchdog-batched`, Curator and kazoo beside `zookeeper`, …) and print the pairs with
    /// their ratios; a library's figures are its own adapter process's.
    #[arg(long)]
    pub peers: bool,
    /// Acquire-and-release cycles every strategy runs before its first step, unmeasured [default: the
    /// longest warm-up a chosen strategy needs: 4s with a JVM library, else none].
    #[arg(
        long,
        value_name = "DURATION",
        alias = "warm-up",
        allow_hyphen_values = true
    )]
    pub warmup: Option<String>,
    /// Hold the steps this many times per strategy, each pass a fresh client in a fresh process; the
    /// first pass of every strategy runs before the second of any. scale.json records every pass, and
    /// a report flags only a loss that repeats.
    #[arg(long, value_name = "N", default_value_t = scale::DEFAULT_PASSES, allow_negative_numbers = true, value_parser = whole_number::<u32>)]
    pub passes: u32,
    /// Output directory [default: results/scale-UTCTIME].
    #[arg(short, long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Servers to use instead of starting them.
    #[command(flatten)]
    pub servers: ServerArgs,
    /// Adapters of your own.
    #[command(flatten)]
    pub adapters: AdapterFlags,
}

impl ScaleArgs {
    /// The scale run these flags ask for; an unknown strategy is a usage error naming the flag.
    pub fn request(&self) -> Result<ScaleRequest, BenchError> {
        let strategies = match &self.strategies {
            Some(list) => Some(
                StrategyChoice::parse(list)
                    .map_err(|e| BenchError::usage(format!("--strategies: {e}")))?,
            ),
            None => None,
        };
        Ok(ScaleRequest {
            options: ScaleOptions {
                strategies,
                steps: self.steps.clone(),
                hold: self.hold.clone(),
                watchdog_timeout: self.watchdog_timeout.clone(),
                concurrency: self.concurrency,
                step_budget: self.step_budget.clone(),
                max_threads: self.max_threads,
                max_rss_mib: self.max_rss_mib,
                in_process: self.in_process,
                yardstick: true,
                peers: self.peers,
                warm_up: self.warmup.clone(),
                passes: self.passes,
            },
            out: self.out.clone(),
            servers: self.servers.given(),
        })
    }
}
