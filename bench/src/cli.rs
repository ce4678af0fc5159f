//! The command line (clap derive). Values that need domain checks (durations, lease modes, task
//! distributions) are taken as text here and checked by the workload, so every bad value gets one error
//! line naming its field.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use crate::workload::ScenarioFile;

/// lockbench: compare distributed lock strategies on real local servers.
#[derive(Debug, Parser)]
#[command(
    name = "lockbench",
    version,
    about = "Compares distributed lock strategies on real local servers: throughput, latency, renewal health and safety",
    long_about = None,
    arg_required_else_help = true,
    propagate_version = true
)]
pub struct Cli {
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
    Strategies,
    /// List the scenario presets.
    Scenarios,
    /// Run a scenario against strategies; writes DIR/results.json and prints a summary.
    Run(RunArgs),
    /// Run the default suite across every strategy; writes DIR/results.json, report.html, report.md
    /// and charts.
    Compare(crate::compare::CompareArgs),
    /// Render the reports again from a results file, optionally with changes against a baseline file.
    Report(crate::report::ReportArgs),
    /// Hold 1k, 10k, 100k locks per strategy and record what renewal costs the server and the client;
    /// writes DIR/scale.json.
    Scale(crate::scale::ScaleArgs),
    /// Internal: one client of a processes-mode run (reads its spec on stdin).
    #[command(hide = true)]
    Worker,
}

/// `lockbench run`: a scenario (preset or TOML file) with overrides.
#[derive(Debug, Clone, Default, Args)]
#[command(after_help = "\
DURATIONS are humantime: 500ms, 20s, 1m 30s.
TASK distributions: 50ms | uniform 10ms..100ms | exp 50ms | lognormal 50ms 0.5 | \"95% 50ms, 5% uniform 3s..5s\".
LEASES: watchdog | fixed:<duration>, comma-separated; each lease mode runs as its own case per strategy.
Exit codes: 0 done, 1 failed while running, 2 bad input (nothing measured), 130 interrupted (partial results written).")]
pub struct RunArgs {
    /// Preset name (see `lockbench scenarios`) or path of a scenario TOML file.
    #[arg(short, long, value_name = "NAME|FILE", default_value = "baseline")]
    pub scenario: String,
    /// Strategy ids, comma-separated, or `all` (see `lockbench strategies`).
    #[arg(long, value_name = "LIST")]
    pub strategies: Option<String>,
    /// Measured time per case (`0`: bounded by --cycles only).
    #[arg(short, long, value_name = "DURATION")]
    pub duration: Option<String>,
    /// Stop a case after this many completed critical sections (after warm-up).
    #[arg(long, value_name = "N")]
    pub cycles: Option<u64>,
    /// Unmeasured time at the start of each case.
    #[arg(long, value_name = "DURATION")]
    pub warmup: Option<String>,
    /// Concurrent clients (each its own lock client, one holder at a time).
    #[arg(short, long, value_name = "N")]
    pub clients: Option<u32>,
    /// Distinct lock keys (contention = clients / keys).
    #[arg(short, long, value_name = "N")]
    pub keys: Option<u32>,
    /// Task duration distribution inside the critical section.
    #[arg(long, value_name = "DIST")]
    pub task: Option<String>,
    /// Lease modes, comma-separated: watchdog, fixed:300ms.
    #[arg(long, value_name = "LIST")]
    pub lease: Option<String>,
    /// TTL of watchdog leases (renewed every third of it).
    #[arg(long, value_name = "DURATION")]
    pub watchdog_timeout: Option<String>,
    /// How long an acquire waits for a held lock (`0`: try once).
    #[arg(long, value_name = "DURATION")]
    pub acquire_wait: Option<String>,
    /// Pause between a release and the next acquire (closed loop).
    #[arg(long, value_name = "DURATION")]
    pub think: Option<String>,
    /// Open loop: cycles per second per client; latency then counts from the intended start.
    #[arg(long, value_name = "PER_S")]
    pub rate: Option<f64>,
    /// Where clients run: tasks (one process) or processes (one child process per client).
    #[arg(long, value_name = "MODE")]
    pub workers: Option<String>,
    /// When lost() fires during a task: abort (stop, skip the write) or ignore (finish and write).
    #[arg(long, value_name = "abort|ignore")]
    pub on_lost: Option<String>,
    /// Seed for key choice and task durations.
    #[arg(long, value_name = "N")]
    pub seed: Option<u64>,
    /// Output directory [default: results/SCENARIO-UTCTIME].
    #[arg(short, long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Use this Redis instead of starting one (redis://host:port).
    #[arg(long, value_name = "URL")]
    pub redis: Option<String>,
    /// Use this etcd instead of starting one (http://host:port, comma-separated).
    #[arg(long, value_name = "URLS")]
    pub etcd: Option<String>,
    /// Use this ZooKeeper instead of starting one (host:port, comma-separated).
    #[arg(long, value_name = "HOSTS")]
    pub zk: Option<String>,
    /// No progress bar (it is shown only when stdout is a terminal anyway).
    #[arg(long)]
    pub no_progress: bool,
    /// Inject a fault in every case, replacing the scenario's (repeatable; `none` removes them):
    /// KIND [at=D] [target=holder|client:N|all|server] [duration=D] and the kind's settings, e.g.
    /// "pause_worker at=1s duration=2s". Kinds: pause_worker, crash_worker, starve_worker, cpu_hog
    /// (threads=N), cgroup_quota (quota=D period=D), pause_server, client_pause, pubsub_kill
    /// (every=D), proxy_delay (delay=D direction=upstream|downstream|both), proxy_blackhole,
    /// proxy_reset (every=D), failover (replication_lag=D), leader_kill.
    #[arg(long = "fault", value_name = "FAULT")]
    pub faults: Vec<String>,
}

fn list(text: &Option<String>) -> Option<Vec<String>> {
    text.as_ref().map(|t| {
        t.split(',')
            .map(|s| s.trim().to_owned())
            .filter(|s| !s.is_empty())
            .collect()
    })
}

impl RunArgs {
    /// The flags that override the scenario file.
    pub fn overrides(&self) -> ScenarioFile {
        ScenarioFile {
            description: None,
            strategies: list(&self.strategies),
            clients: self.clients,
            keys: self.keys,
            task: self.task.clone(),
            leases: list(&self.lease),
            watchdog_timeout: self.watchdog_timeout.clone(),
            acquire_wait: self.acquire_wait.clone(),
            think: self.think.clone(),
            rate: self.rate,
            duration: self.duration.clone(),
            cycles: self.cycles,
            warmup: self.warmup.clone(),
            workers: self.workers.clone(),
            on_lost: self.on_lost.clone(),
            seed: self.seed,
            // `--fault` text is checked where it is applied (`run::apply_fault_flags`).
            faults: None,
        }
    }
}
