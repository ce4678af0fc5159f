//! The command line, the top layer: every clap struct (the server-address flags defined once, in
//! [`ServerArgs`], and flattened where a command takes them), their conversion into the commands'
//! requests, and [`cli_main`], which parses, builds the one tokio runtime and runs the command.
//! Values that need domain checks (durations, lease modes, task distributions) are taken as text here
//! and checked by the workload or the command, so every bad value gets one error line naming its
//! field.
//!
//! One dialect for every flag, so a flag learned on one command works on the others:
//! - A long flag is the name of the field it sets, `_` written `-`: the workload-file field
//!   (`--watchdog-timeout` sets `watchdog_timeout`, `--warmup` sets `warmup`, `--leases` sets
//!   `leases`) or, for a command's own setting, its words joined by `-` (`--step-budget`). Never an
//!   underscore.
//! - A flag that takes a comma-separated LIST is plural (`--strategies`, `--scenarios`, `--leases`,
//!   `--steps`); one that takes a single value is singular (`run --scenario NAME|FILE`); a
//!   repeatable flag is singular, one value per use (`--fault`).
//! - One concept, one spelling across commands (`--warmup` on `run` and `scale`; `-s` is the
//!   scenario on `run` and `compare`). A spelling that was replaced stays a hidden alias, so old
//!   command lines keep working: `--warm-up` for `--warmup`, `--lease` for `--leases`,
//!   `compare --scenario` for `--scenarios`. `bench/tests/cli.rs` checks these rules on every flag.

use std::ffi::OsString;
use std::path::PathBuf;

use clap::error::ErrorKind;
use clap::{Args, Parser, Subcommand};
use lockbench_reports::sections::Part;

use crate::backends::GivenAddresses;
use crate::base::duration::{format_duration, parse_duration};
use crate::base::error::{BenchError, EXIT_FAILED, EXIT_OK, EXIT_USAGE};
use crate::base::stdout::{out, outln};
use crate::commands::compare::CompareRequest;
use crate::commands::report::{FailOn, ReportRequest};
use crate::commands::run::{RunOutcome, RunRequest};
use crate::commands::scale::{ScaleOptions, ScaleRequest};
use crate::commands::{check_adapter, compare, pages, report, scale, suite};
use crate::driver::child;
use crate::kinds::ServerKindExt;
use crate::workload::{Fit, ScenarioFile, split_list};
use crate::{scenarios, strategies};

/// The value syntax of the workload flags `run` and `compare` share, as one literal for `concat!`
/// (every command's help states the syntax it accepts).
macro_rules! workload_syntax {
    () => {
        "\
DURATIONS are humantime: 500ms, 20s, 1m 30s.
TASK distributions: 50ms | uniform 10ms..100ms | exp 50ms | lognormal 50ms 0.5 | \"95% 50ms, 5% uniform 3s..5s\".
LEASES: watchdog | fixed:<duration>, comma-separated; each lease mode runs as its own case per strategy."
    };
}

/// lockbench: compare distributed lock strategies on real local servers.
#[derive(Debug, Parser)]
#[command(
    name = "lockbench",
    version,
    about = "Compares distributed lock strategies on real local servers: throughput, latency, renewal health and safety",
    long_about = None,
    arg_required_else_help = true,
    propagate_version = true,
    after_help = "\
Examples:
  lockbench strategies                              # what can be compared
  lockbench run --strategies memory --duration 2s   # a first run, no server needed
  lockbench compare --quick                         # every strategy through the quick suite, about 4 minutes
  lockbench report results/compare-<UTC time>       # render the reports again
  lockbench completions bash > ~/.local/share/bash-completion/completions/lockbench   # tab completion
  lockbench man > lockbench.1                       # the man page (man ./lockbench.1)
Each command's --help has its syntax and more examples."
)]
pub struct Cli {
    /// Also print internal diagnostics: the driver's own cost per cycle, each scenario's case length.
    #[arg(short, long, global = true)]
    pub verbose: bool,
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
// `Run` is by far the largest variant; the value is parsed once, so boxing would buy nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Subcommand)]
pub enum Command {
    /// List the lock strategies, the server each needs and what each can do.
    #[command(after_help = "\
Examples:
  lockbench strategies            # every strategy: its server, whether `all` includes it, capabilities
  lockbench strategies --peers    # only the real libraries, each with the strategy that models it
  lockbench strategies --adapter docs/examples/your-own-lock/py-hand-made-lock.toml   # with your own")]
    Strategies {
        /// Only the peers (the real libraries), each with the strategy that models it.
        #[arg(long)]
        peers: bool,
        /// Adapters of your own, listed after lockbench's rows.
        #[command(flatten)]
        adapters: AdapterFlags,
    },
    /// List the scenario presets.
    #[command(after_help = "\
Examples:
  lockbench scenarios                                        # every preset and what it does to a lock
  lockbench run -s process-pause --strategies redis-watchdog   # run one of them")]
    Scenarios,
    /// Run a scenario against strategies; writes DIR/results.json and prints a summary.
    Run(RunArgs),
    /// Run the default suite across every strategy; writes DIR/results.json, report.html, report.md
    /// and charts.
    Compare(CompareArgs),
    /// Render the reports again from a results file, optionally with changes against a baseline file.
    Report(ReportArgs),
    /// Hold 1k, 10k, 100k locks per strategy and record what renewal costs the server and the client;
    /// writes DIR/scale.json.
    Scale(ScaleArgs),
    /// A remote worker: `--connect ADDR` serves the clients of a `lockbench run --workers remote`
    /// driver, case after case (LOCKBENCH_WORKER_TOKEN must match the driver's). Without
    /// `--connect`: internal, one client of a processes-mode run (reads its spec on stdin).
    Worker(WorkerArgs),
    /// Check an adapter of your own against its manifest: the protocol, then each capability it claims,
    /// on servers started for it; prints a table and exits 1 on any failure.
    #[command(after_help = "\
Starts the servers the adapter needs (as `run` does), then checks the protocol (hello's fields, the
id, the version loaded, concurrent requests, a reply for every id, a broken line) and each capability
the manifest claims, in under two minutes. A claim it cannot test is printed as such, never as a pass.
Exit codes: 0 every check passed, 1 a check failed, 2 bad input (a bad manifest, a missing runtime).

Examples:
  lockbench check-adapter docs/examples/your-own-lock/py-hand-made-lock.toml
  lockbench check-adapter adapters/python/py-redis-py.toml")]
    CheckAdapter(CheckAdapterArgs),
    /// Print a shell completion script to stdout, for bash, zsh, fish, elvish or powershell.
    #[command(after_help = "\
Examples:
  lockbench completions bash > ~/.local/share/bash-completion/completions/lockbench
  lockbench completions zsh > ~/.zfunc/_lockbench          # with fpath+=~/.zfunc before compinit
  lockbench completions fish > ~/.config/fish/completions/lockbench.fish
  lockbench completions powershell >> $PROFILE")]
    Completions {
        /// The shell the script is for.
        #[arg(value_name = "SHELL", value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print lockbench's man page (roff) to stdout.
    #[command(after_help = "\
Examples:
  lockbench man > lockbench.1 && man ./lockbench.1
  lockbench man | sudo tee /usr/local/share/man/man1/lockbench.1 >/dev/null   # then: man lockbench")]
    Man,
}

impl Command {
    /// The `--adapter` flags of a command that takes them.
    fn adapter_flags(&self) -> Option<&AdapterFlags> {
        match self {
            Command::Strategies { adapters, .. } => Some(adapters),
            Command::Run(args) => Some(&args.adapters),
            Command::Compare(args) => Some(&args.adapters),
            Command::Scale(args) => Some(&args.adapters),
            Command::Worker(args) => Some(&args.adapters),
            _ => None,
        }
    }
}

/// The server-address flags: servers the user runs, used instead of starting them, one flag per
/// server kind as its registry entry names it ([`kinds`](crate::backends::kinds)). Credentials go in
/// the address (`user:pass@`, percent-encoded) or, better, in the kind's secret variable
/// (`LOCKBENCH_REDIS_PASSWORD`, `LOCKBENCH_ETCD_PASSWORD`, `LOCKBENCH_ZK_AUTH`, …); TLS files go in
/// the query (`?ca=ca.pem`, optionally `&cert=client.pem&key=client.key`). Addresses are shown and
/// recorded redacted.
#[derive(Clone, Default)]
pub struct ServerArgs {
    given: GivenAddresses,
}

impl std::fmt::Debug for ServerArgs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Redacted, as every address lockbench shows.
        self.given.fmt(f)
    }
}

impl ServerArgs {
    /// The addresses as the commands take them.
    pub fn given(&self) -> GivenAddresses {
        self.given.clone()
    }
}

impl clap::FromArgMatches for ServerArgs {
    fn from_arg_matches(matches: &clap::ArgMatches) -> Result<Self, clap::Error> {
        let mut args = ServerArgs::default();
        args.update_from_arg_matches(matches)?;
        Ok(args)
    }

    fn update_from_arg_matches(&mut self, matches: &clap::ArgMatches) -> Result<(), clap::Error> {
        for kind in crate::kinds::all() {
            if let Some(server) = kind.server()
                && let Some(address) = matches.get_one::<String>(server.flag)
            {
                self.given.set(kind, address.clone());
            }
        }
        Ok(())
    }
}

impl Args for ServerArgs {
    fn augment_args(mut command: clap::Command) -> clap::Command {
        for server in crate::kinds::all().filter_map(|k| k.server()) {
            command = command.arg(
                clap::Arg::new(server.flag)
                    .long(server.flag)
                    .value_name(server.value_name)
                    .help(server.help)
                    .action(clap::ArgAction::Set),
            );
        }
        command
    }

    fn augment_args_for_update(command: clap::Command) -> clap::Command {
        Self::augment_args(command)
    }
}

/// The `--adapter` flag of `strategies`, `run`, `compare`, `scale` and `worker` (defined once): a
/// team's own adapter, declared by its manifest (adapters/README.md, "Manifests"), added as a peer row
/// and run with the chosen strategies.
#[derive(Debug, Clone, Default, Args)]
pub struct AdapterFlags {
    /// An adapter of your own, by its manifest (repeatable): added as a peer row, run beside the
    /// chosen strategies; its stderr goes to DIR/adapter-logs/ (docs/your-own-lock.md).
    #[arg(long = "adapter", value_name = "FILE")]
    pub adapters: Vec<PathBuf>,
    /// Internal: where the added adapters' logs go (a worker process is given its run's).
    #[arg(long, hide = true, value_name = "DIR")]
    pub adapter_logs: Option<PathBuf>,
}

impl AdapterFlags {
    /// Adds each adapter as a row (after checking that lockbench's own manifests read); a bad
    /// manifest is a usage error, one line.
    pub fn register(&self) -> Result<(), BenchError> {
        if let Some(why) = lockers::peer::catalog::load_error() {
            return Err(BenchError::usage(why));
        }
        for path in &self.adapters {
            strategies::add_adapter(path).map_err(BenchError::usage)?;
        }
        if let Some(dir) = &self.adapter_logs {
            strategies::log_added_adapters_under(dir);
        }
        Ok(())
    }
}

/// `lockbench check-adapter`.
#[derive(Debug, Clone, Args)]
pub struct CheckAdapterArgs {
    /// The adapter's manifest (adapters/README.md, "Manifests").
    #[arg(value_name = "MANIFEST.toml")]
    pub manifest: PathBuf,
}

/// The workload flags of `run` and `compare` (defined once): each overrides the scenario's field, or,
/// for `compare`, the `--workload` file's.
#[derive(Debug, Clone, Default, Args)]
pub struct WorkloadFlags {
    /// Concurrent clients (each its own lock client, one holder at a time).
    #[arg(short, long, value_name = "N", allow_negative_numbers = true, value_parser = whole_number::<u32>)]
    pub clients: Option<u32>,
    /// Distinct lock keys (contention = clients / keys).
    #[arg(short, long, value_name = "N", allow_negative_numbers = true, value_parser = whole_number::<u32>)]
    pub keys: Option<u32>,
    /// Task duration distribution inside the critical section.
    #[arg(long, value_name = "DIST")]
    pub task: Option<String>,
    /// Lease modes, comma-separated: watchdog, fixed:300ms.
    #[arg(long, value_name = "LIST", alias = "lease")]
    pub leases: Option<String>,
    /// TTL of watchdog leases (renewed every third of it).
    #[arg(long, value_name = "DURATION", allow_hyphen_values = true)]
    pub watchdog_timeout: Option<String>,
    /// How long an acquire waits for a held lock (`0`: try once).
    #[arg(long, value_name = "DURATION", allow_hyphen_values = true)]
    pub acquire_wait: Option<String>,
    /// Pause between a release and the next acquire (closed loop).
    #[arg(long, value_name = "DURATION", allow_hyphen_values = true)]
    pub think: Option<String>,
    /// Open loop: cycles per second per client; latency then counts from the intended start.
    #[arg(long, value_name = "PER_S", allow_negative_numbers = true)]
    pub rate: Option<f64>,
    /// When lost() fires during a task: abort (stop, skip the write) or ignore (finish and write).
    #[arg(long, value_name = "abort|ignore")]
    pub on_lost: Option<String>,
}

impl WorkloadFlags {
    /// The workload fields these flags set.
    pub fn fields(&self) -> ScenarioFile {
        ScenarioFile {
            clients: self.clients,
            keys: self.keys,
            task: self.task.clone(),
            leases: self.leases.as_deref().map(split_list),
            watchdog_timeout: self.watchdog_timeout.clone(),
            acquire_wait: self.acquire_wait.clone(),
            think: self.think.clone(),
            rate: self.rate,
            on_lost: self.on_lost.clone(),
            ..ScenarioFile::default()
        }
    }
}

/// The report-format flag of `report` and `compare` (defined once).
#[derive(Debug, Clone, Default, Args)]
pub struct FormatFlag {
    /// Also write the report's tables in this format beside report.md (report.html and report.md
    /// are always written): csv writes scorecard.csv and verdicts.csv (RFC 4180), one row per
    /// strategy.
    #[arg(long, value_name = "FORMAT", value_parser = ["csv"])]
    pub format: Option<String>,
}

impl FormatFlag {
    /// Whether CSV is asked for.
    pub fn csv(&self) -> bool {
        self.format.as_deref() == Some("csv")
    }
}

/// The `--fail-on` flag of `report` and `compare` (defined once).
#[derive(Debug, Clone, Default, Args)]
pub struct GateFlag {
    /// Exit 1 when the results hold one of these, comma-separated: `violation` (a violated case;
    /// with --baseline, one violated now that was not before), `regression` (with --baseline: a new
    /// violation, or throughput down beyond noise), `contradiction` (with --baseline: a first-screen
    /// cell whose two runs exclude each other), or an absolute limit on every complete case,
    /// `[SCENARIO:]METRIC>VALUE` or `<VALUE`: METRIC is an acquire-latency p50, p90, p99, p999 or
    /// max, `unavailable` (the longest wait for a key nobody held), both durations (200ms, 1.5s),
    /// or `cs/s` (critical sections per second).
    #[arg(
        long,
        value_name = "GATES",
        value_delimiter = ',',
        value_parser = FailOn::parse
    )]
    pub fail_on: Vec<FailOn>,
}

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
    /// The flags that override the scenario file.
    pub fn overrides(&self) -> ScenarioFile {
        // `--fault` text is checked where it is applied (the run, `RunRequest::faults`).
        ScenarioFile {
            strategies: self.strategies.as_deref().map(split_list),
            duration: self.duration.clone(),
            cycles: self.cycles,
            warmup: self.warmup.clone(),
            workers: self.workers.clone(),
            peer_process_per_client: self.peer_process_per_client.then_some(true),
            seed: self.seed,
            ..self.workload.fields()
        }
    }

    /// The run these flags ask for.
    pub fn request(&self) -> RunRequest {
        RunRequest {
            scenario: self.scenario.clone(),
            overrides: self.overrides(),
            faults: self.faults.clone(),
            out: self.out.clone(),
            servers: self.servers.given(),
            progress: !self.no_progress,
            trials: self.trials.unwrap_or(0),
            progress_title: None,
            settle_early: false,
            max_trials: self.max_trials.unwrap_or(0),
            extra_trials_until: None,
            listen: self.listen.clone(),
            fit: Fit::default(),
            history: self.history,
        }
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
    /// The comparison these flags ask for.
    pub fn request(&self) -> CompareRequest {
        CompareRequest {
            quick: self.quick,
            full: self.full,
            thorough: self.thorough,
            trials: self.trials,
            max_trials: self.max_trials,
            scenarios: self.scenarios.clone(),
            out: self.out.clone(),
            strategies: self.strategies.clone(),
            peers: self.peers,
            servers: self.servers.given(),
            progress: !self.no_progress,
            history: self.history,
            workload: self.workload.clone(),
            workload_fields: self.workload_flags.fields(),
            time_scale: self.time_scale.clone(),
            csv: self.format.csv(),
            fail_on: self.gates.fail_on.clone(),
        }
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
    /// Internal: run as one strategy's child process (write DIR/scale.json, print nothing).
    #[arg(long, hide = true)]
    pub worker: bool,
    /// Internal: process ids of the servers, for their CPU time (`redis=PID,zookeeper=PID`).
    #[arg(long, hide = true, value_name = "LIST")]
    pub server_pids: Option<String>,
    /// Internal: as a worker, measure the raw sender beside the batched strategy.
    #[arg(long, hide = true, requires = "worker")]
    pub raw_sender: bool,
    /// Adapters of your own.
    #[command(flatten)]
    pub adapters: AdapterFlags,
}

impl ScaleArgs {
    /// The scale run these flags ask for (`--worker` runs in this process).
    pub fn request(&self) -> ScaleRequest {
        ScaleRequest {
            options: ScaleOptions {
                strategies: self.strategies.clone(),
                steps: self.steps.clone(),
                hold: self.hold.clone(),
                watchdog_timeout: self.watchdog_timeout.clone(),
                concurrency: self.concurrency,
                step_budget: self.step_budget.clone(),
                max_threads: self.max_threads,
                max_rss_mib: self.max_rss_mib,
                in_process: self.in_process || self.worker,
                yardstick: true,
                peers: self.peers,
                warm_up: self.warmup.clone(),
                passes: self.passes,
            },
            out: self.out.clone(),
            servers: self.servers.given(),
            worker: self.worker,
            server_pids: self.server_pids.clone(),
            raw_sender: self.raw_sender,
        }
    }
}

/// Runs `lockbench run` with `args`, in-process (for tests): the run with the request they make.
pub async fn run_in_process(args: RunArgs) -> Result<RunOutcome, BenchError> {
    crate::commands::run::run(args.request()).await
}

/// Parses `args` (program name first), runs the command, prints its output, and returns the exit code.
/// Every error is one line on stderr, `lockbench: <what>`. Builds the one tokio runtime every
/// command runs on.
pub fn cli_main<I, T>(args: I) -> i32
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let cli = match Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(e) => return clap_exit(e),
    };
    crate::base::verbosity::set_verbose(cli.verbose);
    if let Err(e) = cli
        .command
        .adapter_flags()
        .map_or(Ok(()), AdapterFlags::register)
    {
        eprintln!("lockbench: {e}");
        return e.exit_code();
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("lockbench: tokio runtime: {e}");
            return EXIT_FAILED;
        }
    };
    let result = match cli.command {
        Command::Strategies { peers, .. } => list_strategies(peers),
        Command::Scenarios => list_scenarios(),
        Command::Run(args) => runtime.block_on(crate::commands::run::command(args.request())),
        Command::Compare(args) => runtime.block_on(compare::command(args.request())),
        Command::Report(args) => report::command(args.request()),
        Command::Scale(args) => runtime.block_on(scale::command(args.request())),
        Command::CheckAdapter(args) => runtime.block_on(check_adapter::command(&args.manifest)),
        Command::Worker(args) => return worker(&runtime, &args),
        Command::Completions { shell } => {
            use clap::CommandFactory as _;
            out!(
                "{}",
                String::from_utf8_lossy(&pages::completions(Cli::command(), shell))
            );
            Ok(EXIT_OK)
        }
        Command::Man => {
            use clap::CommandFactory as _;
            pages::man_page(Cli::command())
                .map(|page| {
                    out!("{}", String::from_utf8_lossy(&page));
                    EXIT_OK
                })
                .map_err(|e| BenchError::failed(format!("man page: {e}")))
        }
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("lockbench: {e}");
            e.exit_code()
        }
    }
}

/// `lockbench worker`: a remote worker with `--connect`, else one child of a processes-mode run.
fn worker(runtime: &tokio::runtime::Runtime, args: &WorkerArgs) -> i32 {
    let Some(connect) = &args.connect else {
        if std::io::IsTerminal::is_terminal(&std::io::stdin()) {
            eprintln!(
                "lockbench worker: a driver starts this itself (lockbench run --workers processes) and \
                 writes its case to stdin; for a remote worker give --connect ADDR"
            );
            return EXIT_USAGE;
        }
        return runtime.block_on(child::worker_main());
    };
    let checked = crate::driver::remote::token_from_env()
        .and_then(|token| Ok((token, parse_duration(&args.wait)?)));
    match checked {
        Ok((token, wait)) => runtime.block_on(child::remote_main(connect, &token, wait)),
        Err(e) => {
            eprintln!("lockbench worker: {e}");
            EXIT_USAGE
        }
    }
}

/// Help and version print as clap renders them (exit 0); a usage error prints clap's whole message
/// on one line: what is wrong, the argument it concerns and clap's "did you mean" tip.
fn clap_exit(e: clap::Error) -> i32 {
    match e.kind() {
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => {
            let _ = e.print();
            EXIT_OK
        }
        ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            let _ = e.print();
            EXIT_USAGE
        }
        _ => {
            eprintln!(
                "lockbench: {} (see --help)",
                one_line(&e.render().to_string())
            );
            EXIT_USAGE
        }
    }
}

/// clap's rendered error as one line: its lines up to the usage summary, joined; a tip is set off
/// with `;`.
fn one_line(rendered: &str) -> String {
    let mut line = String::new();
    for part in rendered
        .lines()
        .map(str::trim)
        .take_while(|l| !l.starts_with("Usage:") && !l.starts_with("For more information"))
        .filter(|l| !l.is_empty())
    {
        let part = part.strip_prefix("error: ").unwrap_or(part);
        if !line.is_empty() {
            line.push_str(if part.starts_with("tip:") { "; " } else { " " });
        }
        line.push_str(part);
    }
    if line.is_empty() {
        line.push_str("bad arguments");
    }
    line
}

/// A whole number flag's value: a negative one is named as such (clap alone would call `-1` an
/// unknown flag, or a parse error of the type).
fn whole_number<T: std::str::FromStr>(text: &str) -> Result<T, String>
where
    T::Err: std::fmt::Display,
{
    if text.trim_start().starts_with('-') {
        return Err("must not be negative".into());
    }
    text.parse().map_err(|e: T::Err| e.to_string())
}

fn list_strategies(only_peers: bool) -> Result<i32, BenchError> {
    let settings = strategies::StrategySettings::new(std::time::Duration::from_secs(30));
    let width = strategies::every().map(|s| s.id.len()).max().unwrap_or(8);
    outln!(
        "{:width$}  {:10}  {:6}  description",
        "id",
        "server",
        "in all"
    );
    for s in strategies::every().filter(|s| !only_peers || s.is_peer()) {
        outln!(
            "{:width$}  {:10}  {:6}  {}",
            s.id,
            s.server.name(),
            if s.in_all { "yes" } else { "no" },
            s.description
        );
        if let Some(model) = s.counterpart {
            outln!("{:width$}  modelled by: {model}", "");
        }
        if let Some(registry) = s.peer_spec().and_then(|p| p.registry.as_ref()) {
            let other = format!("{}@<version>", s.id);
            outln!(
                "{:width$}  other versions: {other} ({})",
                "",
                registry.name()
            );
        }
        match s.capabilities(&settings) {
            Ok(c) => {
                let flags: Vec<&str> = [
                    (c.reentrant, "reentrant"),
                    (c.fencing, "fencing"),
                    (c.auto_renew, "auto_renew"),
                    (c.fixed_lease, "fixed_lease"),
                    (c.wait_notify, "wait_notify"),
                    (c.lost_signal, "lost_signal"),
                    (c.hold_identity, "hold_identity"),
                ]
                .into_iter()
                .filter_map(|(on, name)| on.then_some(name))
                .collect();
                outln!(
                    "{:width$}  capabilities: {}; min ttl {}, ttl granularity {}",
                    "",
                    flags.join(" "),
                    format_duration(c.min_ttl),
                    format_duration(c.ttl_granularity)
                );
            }
            Err(e) => outln!("{:width$}  capabilities: unavailable ({e})", ""),
        }
    }
    Ok(EXIT_OK)
}

/// `lockbench scenarios`: every preset with the suites of `compare` that run it (read from the
/// suite itself) and its description; then the many-locks pass, which only `compare` runs.
fn list_scenarios() -> Result<i32, BenchError> {
    let mut rows: Vec<(&str, String, String)> = scenarios::PRESETS
        .iter()
        .map(|p| (p.name, suite_column(p.name), p.description()))
        .collect();
    rows.push((
        suite::MANY_LOCKS,
        suite_column(suite::MANY_LOCKS),
        "compare only: `lockbench scale` holding 10,000 locks with one client, 3 passes per strategy"
            .to_owned(),
    ));
    let width = rows.iter().map(|r| r.0.len()).max().unwrap_or(8);
    let suites = rows.iter().map(|r| r.1.len()).max().unwrap_or(6);
    outln!("{:width$}  {:suites$}  description", "scenario", "suites");
    for (name, in_suites, description) in &rows {
        outln!("{name:width$}  {in_suites:suites$}  {description}");
    }
    outln!(
        "suites: `compare --quick`, `compare` (default), `compare --full`, `compare --thorough` (the \
         full suite at 10 trials); one in a suite also runs alone with `compare --scenarios NAME`; every \
         preset runs with `run -s NAME`, the only way for those by name only"
    );
    Ok(EXIT_OK)
}

/// The suites column of `lockbench scenarios`: `quick, default, full, thorough`, or `by name only`.
fn suite_column(scenario: &str) -> String {
    let names = suite::suites_running(scenario);
    if names.is_empty() {
        "by name only".to_owned()
    } else {
        names.join(", ")
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::backends::{Backends, ServerKind};
    use crate::commands::scale::Isolation;
    use crate::commands::scale::child::{time_bound, worker_args};

    fn scale_args(extra: &[&str]) -> ScaleRequest {
        let mut argv = vec!["lockbench", "scale"];
        argv.extend_from_slice(extra);
        match Cli::try_parse_from(argv).map(|c| c.command) {
            Ok(Command::Scale(args)) => args.request(),
            other => panic!("not a scale command: {other:?}"),
        }
    }

    #[test]
    fn scale_flags_default_to_the_scale_defaults() {
        assert_eq!(scale_args(&[]).options, ScaleOptions::default());
        assert!(scale_args(&["--in-process"]).options.in_process);
        assert!(scale_args(&["--peers"]).options.peers);
        assert!(scale_args(&["--worker"]).options.in_process);
    }

    #[test]
    fn bad_scale_values_name_their_flag() {
        for (flag, value) in [
            ("--steps", "5,1"),
            ("--hold", "0"),
            ("--hold", "1h"),
            ("--watchdog-timeout", "soon"),
            ("--concurrency", "0"),
            ("--max-threads", "0"),
            ("--strategies", "redis-nope"),
        ] {
            let err = scale_args(&[flag, value]).options.spec().expect_err(value);
            assert!(matches!(err, BenchError::Usage(_)), "{err}");
            assert!(err.to_string().contains(flag), "{err} should name {flag}");
        }
    }

    #[test]
    fn scale_worker_arguments_round_trip_through_the_parser() {
        let spec = scale_args(&[
            "--steps",
            "10,20k",
            "--hold",
            "1500ms",
            "--max-rss-mib",
            "512",
            "--warmup",
            "2s",
        ])
        .options
        .spec()
        .unwrap_or_else(|e| panic!("{e}"));
        let argv = worker_args(spec.strategies[0], &spec, &Backends::default());
        let rest: Vec<&str> = argv[1..].iter().map(String::as_str).collect();
        let child = scale_args(&rest)
            .options
            .spec()
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(child.steps, [10, 20_000]);
        assert_eq!(child.hold, Duration::from_millis(1500));
        assert_eq!(child.max_rss_bytes, 512 << 20);
        assert_eq!(child.warm_up, Duration::from_secs(2));
        assert_eq!(child.strategies.len(), 1);
        assert_eq!(child.isolation, Isolation::InProcess);
        assert!(time_bound(&spec) > spec.step_budget * 2);
    }

    /// `about 40 minutes` or `about 2.5 hours` in `text`, in hours.
    fn stated_hours(text: &str) -> Option<f64> {
        let rest = text.split("about ").nth(1)?;
        let mut words = rest.split_whitespace();
        let n: f64 = words.next()?.parse().ok()?;
        match words.next()?.trim_end_matches([',', '.', ';']) {
            "minutes" => Some(n / 60.0),
            "hours" => Some(n),
            _ => None,
        }
    }

    #[test]
    fn the_suite_times_in_compare_help_are_the_planners() {
        use clap::CommandFactory as _;
        let command = Cli::command();
        let compare = command.find_subcommand("compare").expect("compare");
        for (flag, trials, settle_early) in [("full", 3, true), ("thorough", 10, false)] {
            let help = compare
                .get_arguments()
                .find(|a| a.get_id() == flag)
                .and_then(|a| a.get_help())
                .map(ToString::to_string)
                .unwrap_or_default();
            let plan = suite::plan(suite::Suite::Full, "all", trials, settle_early, None);
            let planned = suite::planned_total(&plan).as_secs_f64() / 3600.0;
            let stated =
                stated_hours(&help).unwrap_or_else(|| panic!("--{flag} states no time: {help}"));
            eprintln!("--{flag}: planned {planned:.2} h, stated {stated:.2} h");
            assert!(
                (stated - planned).abs() <= planned * 0.2,
                "--{flag} says {stated:.2} h, the planner {planned:.2} h: {help}"
            );
        }
    }

    #[test]
    fn workload_flags_are_defined_once_and_reach_run_and_compare() {
        let argv = |command: &'static str| {
            vec![
                "lockbench",
                command,
                "--clients",
                "5",
                "--keys",
                "2",
                "--task",
                "uniform 20ms..60ms",
                "--leases",
                "watchdog,fixed:1s",
                "--watchdog-timeout",
                "1500ms",
                "--on-lost",
                "ignore",
            ]
        };
        let run = match Cli::try_parse_from(argv("run")).map(|c| c.command) {
            Ok(Command::Run(a)) => a.request().overrides,
            other => panic!("{other:?}"),
        };
        let mut compare_argv = argv("compare");
        compare_argv.extend(["--workload", "w.toml", "--time-scale", "10"]);
        let compare = match Cli::try_parse_from(compare_argv).map(|c| c.command) {
            Ok(Command::Compare(a)) => a.request(),
            other => panic!("{other:?}"),
        };
        for fields in [&run, &compare.workload_fields] {
            assert_eq!((fields.clients, fields.keys), (Some(5), Some(2)));
            assert_eq!(fields.task.as_deref(), Some("uniform 20ms..60ms"));
            assert_eq!(
                fields.leases.as_deref(),
                Some(&["watchdog".to_owned(), "fixed:1s".to_owned()][..])
            );
            assert_eq!(fields.watchdog_timeout.as_deref(), Some("1500ms"));
            assert_eq!(fields.on_lost.as_deref(), Some("ignore"));
        }
        assert_eq!(compare.workload, Some(PathBuf::from("w.toml")));
        assert_eq!(compare.time_scale.as_deref(), Some("10"));
    }

    #[test]
    fn server_flags_are_defined_once_and_reach_every_command() {
        let given = |argv: &[&str]| match Cli::try_parse_from(argv).map(|c| c.command) {
            Ok(Command::Run(a)) => a.request().servers,
            Ok(Command::Compare(a)) => a.request().servers,
            Ok(Command::Scale(a)) => a.request().servers,
            other => panic!("{other:?}"),
        };
        for command in ["run", "compare", "scale"] {
            let servers = given(&[
                "lockbench",
                command,
                "--redis",
                "redis://127.0.0.1:1",
                "--zk",
                "127.0.0.1:2",
            ]);
            assert_eq!(servers.get(ServerKind::Redis), Some("redis://127.0.0.1:1"));
            assert_eq!(servers.get(ServerKind::ZooKeeper), Some("127.0.0.1:2"));
            assert_eq!(servers.get(ServerKind::Etcd), None);
        }
    }
}
