//! The command line, the top layer: every clap struct (the flags several commands share, defined
//! once in `flags`, such as [`ServerArgs`], and flattened where a command takes them; each command's
//! own in `args`), their conversion into the commands' requests (where `--strategies` is parsed, once),
//! and [`cli_main`], which parses, builds the one tokio runtime and runs the command; `lists` prints
//! `lockbench strategies` and `lockbench scenarios`.
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

use clap::error::ErrorKind;
use clap::{Parser, Subcommand};

use crate::base::duration::parse_duration;
use crate::base::error::{BenchError, EXIT_FAILED, EXIT_OK, EXIT_USAGE};
use crate::base::stdout::out;
use crate::commands::run::RunOutcome;
use crate::commands::{check_adapter, compare, pages, report, scale};
use crate::driver::child;

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
mod args;
mod flags;
mod lists;

pub use args::RunArgs;
use args::{CompareArgs, ReportArgs, ScaleArgs, WorkerArgs};
use flags::{AdapterFlags, CheckAdapterArgs};
use lists::{list_scenarios, list_strategies};

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

/// Runs `lockbench run` with `args`, in-process (for tests): the run with the request they make.
pub async fn run_in_process(args: RunArgs) -> Result<RunOutcome, BenchError> {
    crate::commands::run::run(args.request()?).await
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
        Command::Run(args) => args
            .request()
            .and_then(|r| runtime.block_on(crate::commands::run::command(r))),
        Command::Compare(args) => args
            .request()
            .and_then(|r| runtime.block_on(compare::command(r))),
        Command::Report(args) => report::command(args.request()),
        Command::Scale(args) => args
            .request()
            .and_then(|r| runtime.block_on(scale::command(r))),
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

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use std::path::PathBuf;

    use super::*;
    use crate::backends::{Backends, ServerKind};
    use crate::commands::scale::{ScaleOptions, ScaleRequest};
    use crate::commands::{plan, suite};
    use crate::driver::many_locks::in_worker::time_bound;
    use crate::driver::many_locks::job::HoldManyJob;
    use crate::driver::many_locks::{Isolation, Subject};
    use crate::strategies::StrategyChoice;

    fn scale_request(extra: &[&str]) -> Result<ScaleRequest, BenchError> {
        let mut argv = vec!["lockbench", "scale"];
        argv.extend_from_slice(extra);
        match Cli::try_parse_from(argv).map(|c| c.command) {
            Ok(Command::Scale(args)) => args.request(),
            other => panic!("not a scale command: {other:?}"),
        }
    }

    fn scale_args(extra: &[&str]) -> ScaleRequest {
        scale_request(extra).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn scale_flags_default_to_the_scale_defaults() {
        assert_eq!(
            format!("{:?}", scale_args(&[]).options),
            format!("{:?}", ScaleOptions::default())
        );
        assert!(scale_args(&["--in-process"]).options.in_process);
        assert!(scale_args(&["--peers"]).options.peers);
        assert!(Cli::try_parse_from(["lockbench", "scale", "--worker"]).is_err());
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
            let err = scale_request(&[flag, value])
                .and_then(|r| r.options.spec())
                .expect_err(value);
            assert!(matches!(err, BenchError::Usage(_)), "{err}");
            assert!(err.to_string().contains(flag), "{err} should name {flag}");
        }
    }

    #[test]
    fn a_hold_many_job_round_trips_through_its_json_line() {
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
        let job = HoldManyJob::new(
            spec.strategies[1],
            Subject::RawSender,
            &spec,
            &Backends::default(),
        );
        let line = serde_json::to_string(&job).unwrap_or_else(|e| panic!("{e}"));
        let read: HoldManyJob = serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}"));
        let child = read.spec;
        assert_eq!(child.steps, [10, 20_000]);
        assert_eq!(child.hold, Duration::from_millis(1500));
        assert_eq!(child.max_rss_bytes, 512 << 20);
        assert_eq!(child.warm_up, Duration::from_secs(2));
        assert_eq!(child.strategies.len(), 1);
        assert_eq!(child.strategies[0].id, spec.strategies[1].id);
        assert_eq!(child.passes, 1);
        assert_eq!(child.isolation, Isolation::InProcess);
        assert_eq!(read.subject, Subject::RawSender);
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
            let choice = StrategyChoice::all();
            let ask = plan::SuiteAsk {
                choice: &choice,
                trials,
                settle_early,
                user: None,
                monitor_commands: false,
                history: false,
            };
            let plan = plan::suite_plan(&suite::entries(suite::Suite::Full), ask);
            let planned = plan::planned_total(plan::estimates(&plan)).as_secs_f64() / 3600.0;
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
            Ok(Command::Run(a)) => a.request().expect("a request").overrides,
            other => panic!("{other:?}"),
        };
        let mut compare_argv = argv("compare");
        compare_argv.extend(["--workload", "w.toml", "--time-scale", "10"]);
        let compare = match Cli::try_parse_from(compare_argv).map(|c| c.command) {
            Ok(Command::Compare(a)) => a.request().expect("a request"),
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
            Ok(Command::Run(a)) => a.request().expect("a request").execution.servers,
            Ok(Command::Compare(a)) => a.request().expect("a request").servers,
            Ok(Command::Scale(a)) => a.request().expect("a request").servers,
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
