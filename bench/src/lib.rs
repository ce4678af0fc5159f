//! `lockbench`: the CLI and load driver that compares distributed lock strategies on real servers.
//!
//! The binary is a thin shell around [`cli_main`]; tests drive the same path in-process through
//! [`cli_main`] or, for a run, [`run::run`].
//!
//! | module | job |
//! |---|---|
//! | [`cli`] | the command line |
//! | [`workload`], [`scenarios`] | what a run asks for: TOML presets and files, flags, checks |
//! | [`strategies`] | the registry: one entry per strategy id |
//! | [`backends`] | the servers: given addresses (checked) or started here; server cost counters |
//! | [`driver`] | workers (tasks or processes), the protected resource, the safety oracle, metrics |
//! | [`faults`] | fault injection: worker pause/crash/starvation, proxies, server freeze, failover, leader loss |
//! | [`results`], [`output`], [`table`] | the results model, the atomic results file, the summary |
//! | [`compare`], [`report`] | the default suite and its combined results; the HTML/Markdown reports |
//! | [`scale`] | `lockbench scale`: the cost of holding 1k → 100k locks |
//! | [`measure`] | measurement helpers shared with `cargo bench` (histograms, CPU time, Redis commandstats, target checks) |

pub mod backends;
pub mod cli;
pub mod clock;
pub mod compare;
pub mod driver;
pub mod duration;
pub mod environment;
pub mod error;
pub mod faults;
pub mod holds;
pub mod measure;
pub mod output;
pub mod proc_stat;
pub mod progress;
pub mod report;
pub mod results;
pub mod run;
pub mod scale;
pub mod scenarios;
pub mod stop;
pub mod strategies;
pub mod table;
pub mod workload;

use std::ffi::OsString;

use clap::Parser;
use clap::error::ErrorKind;

pub use cli::{Cli, Command, RunArgs};
pub use error::{BenchError, EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE};
pub use run::{RunOutcome, run};

/// Parses `args` (program name first), runs the command, prints its output, and returns the exit code.
/// Every error is one line on stderr, `lockbench: <what>`.
pub fn cli_main<I, T>(args: I) -> i32
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let cli = match Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(e) => return clap_exit(e),
    };
    let result = match cli.command {
        Command::Strategies => list_strategies(),
        Command::Scenarios => list_scenarios(),
        Command::Run(args) => run_command(args),
        Command::Compare(args) => compare::command(args),
        Command::Report(args) => report::command(args),
        Command::Scale(args) => scale::command(args),
        Command::Worker => return driver::child::worker_main(),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("lockbench: {e}");
            e.exit_code()
        }
    }
}

/// Help and version print as clap renders them (exit 0); a usage error prints its first line only.
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
            let rendered = e.render().to_string();
            let first = rendered
                .lines()
                .map(str::trim)
                .find(|l| !l.is_empty())
                .unwrap_or("bad arguments");
            let first = first.strip_prefix("error: ").unwrap_or(first);
            eprintln!("lockbench: {first} (see --help)");
            EXIT_USAGE
        }
    }
}

fn list_strategies() -> Result<i32, BenchError> {
    let settings = strategies::StrategySettings::new(std::time::Duration::from_secs(30));
    let width = strategies::STRATEGIES
        .iter()
        .map(|s| s.id.len())
        .max()
        .unwrap_or(8);
    println!(
        "{:width$}  {:10}  {:6}  description",
        "id", "server", "in all"
    );
    for s in strategies::STRATEGIES {
        println!(
            "{:width$}  {:10}  {:6}  {}",
            s.id,
            s.server.name(),
            if s.in_all { "yes" } else { "no" },
            s.description
        );
        match (s.capabilities)(&settings) {
            Ok(c) => {
                let flags: Vec<&str> = [
                    (c.reentrant, "reentrant"),
                    (c.fencing, "fencing"),
                    (c.auto_renew, "auto_renew"),
                    (c.fixed_lease, "fixed_lease"),
                    (c.wait_notify, "wait_notify"),
                    (c.lost_signal, "lost_signal"),
                ]
                .into_iter()
                .filter_map(|(on, name)| on.then_some(name))
                .collect();
                println!(
                    "{:width$}  capabilities: {}; min ttl {}, ttl granularity {}",
                    "",
                    flags.join(" "),
                    duration::format_duration(c.min_ttl),
                    duration::format_duration(c.ttl_granularity)
                );
            }
            Err(e) => println!("{:width$}  capabilities: unavailable ({e})", ""),
        }
    }
    Ok(EXIT_OK)
}

fn list_scenarios() -> Result<i32, BenchError> {
    let width = scenarios::PRESETS
        .iter()
        .map(|p| p.name.len())
        .max()
        .unwrap_or(8);
    for preset in scenarios::PRESETS {
        println!("{:width$}  {}", preset.name, preset.description());
    }
    Ok(EXIT_OK)
}

fn run_command(args: RunArgs) -> Result<i32, BenchError> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| BenchError::failed(format!("tokio runtime: {e}")))?;
    let outcome = runtime.block_on(run::run(args))?;
    print!("{}", table::render(&outcome.results));
    println!("results: {}", outcome.path.display());
    if outcome.interrupted {
        return Ok(EXIT_INTERRUPTED);
    }
    let failed = outcome
        .results
        .cases
        .iter()
        .any(|c| c.status == lockbench_reports::model::CaseStatus::Failed);
    Ok(if failed { EXIT_FAILED } else { EXIT_OK })
}
