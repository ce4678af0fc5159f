//! The flags several commands share, each defined once and flattened where a command takes it: the
//! server addresses, `--adapter`, the workload fields, `--format` and `--fail-on`; and the parser of
//! a whole-number value.

use std::path::PathBuf;

use clap::Args;

use crate::backends::GivenAddresses;
use crate::base::error::BenchError;
use crate::commands::report::FailOn;
use crate::kinds::ServerKindExt;
use crate::strategies;
use crate::workload::{ScenarioFile, split_list};

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

/// A whole number flag's value: a negative one is named as such (clap alone would call `-1` an
/// unknown flag, or a parse error of the type).
pub(super) fn whole_number<T: std::str::FromStr>(text: &str) -> Result<T, String>
where
    T::Err: std::fmt::Display,
{
    if text.trim_start().starts_with('-') {
        return Err("must not be negative".into());
    }
    text.parse().map_err(|e: T::Err| e.to_string())
}
