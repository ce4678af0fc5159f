//! `lockbench`: the CLI and load driver that compares distributed lock strategies on real servers.
//!
//! The binary is a thin shell around [`cli_main`], which builds the one tokio runtime; tests drive
//! the same path in-process through [`cli_main`] or, for a run, [`run()`]. The benches reuse
//! [`measure`], [`proc_stat`], [`backends`], [`strategies`], [`environment`] and [`scale`]; every other
//! module is private to the crate.
//!
//! Modules form one-way layers; each uses only the layers below it:
//!
//! | layer | module | job |
//! |---|---|---|
//! | 1 leaf types | `clock`, `duration`, `stop`, `holds`, `suggest` | the monotonic clock and the RFC 3339 timestamp; durations as text; the stop signal; hold intervals (`Interval`, `EndedBy`, `IntervalBatch`) and hold events; "did you mean" for misspelled names |
//! | | `error`, `output`, `progress`, `table`, [`proc_stat`], [`measure`], [`environment`] | errors and exit codes; the atomic results file; progress bars; the summary table; process CPU; measurement helpers shared with `cargo bench`; the machine |
//! | | [`backends`], [`strategies`] | the servers (given or started here) and their cost counters; the registry, one entry per strategy id |
//! | 2 workload | `workload` (with `workload::faults`), `scenarios` | what a run asks for, fault specs included (pure data): TOML presets and files, flags, checks |
//! | 3 fault injection | `faults` | which fault applies where; worker pause/crash/starvation, proxies, server freeze, failover, leader loss; its own commands and errors |
//! | 4 driver | `driver`, `results`, `trials` | workers (tasks or processes), the protected resource, the safety oracle, metrics; the results model from a run's cases |
//! | 5 commands | `run`, `suite`, `compare`, `report`, [`scale`] | each takes a domain request (`RunRequest`, `CompareRequest`, `ReportRequest`, `ScaleRequest`) |
//! | 6 CLI | `cli` | every clap struct, converted into the commands' requests; the runtime |

pub mod backends;
mod cli;
mod clock;
mod compare;
mod driver;
mod duration;
pub mod environment;
mod error;
mod faults;
mod holds;
pub mod measure;
mod output;
pub mod proc_stat;
mod progress;
mod report;
mod results;
mod run;
pub mod scale;
mod scenarios;
mod stop;
pub mod strategies;
mod suggest;
mod suite;
mod table;
mod trials;
mod workload;

pub use cli::{Cli, Command, RunArgs, cli_main, run};
pub use error::{BenchError, EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE};
pub use run::RunOutcome;
