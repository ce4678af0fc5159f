//! `lockbench`: the CLI and load driver that compares distributed lock strategies on real servers.
//!
//! The binary is a thin shell around [`cli_main`], which builds the one tokio runtime; tests drive
//! the same path in-process through [`cli_main`] or, for a run, [`run_in_process`]. The benches reuse
//! [`base::measure`], [`base::proc_stat`], [`backends`], [`strategies`], [`base::environment`] and
//! [`commands::scale`]; every other module is private to the crate.
//!
//! Modules form one-way layers; each uses only the layers below it:
//!
//! | layer | module | job |
//! |---|---|---|
//! | 1 leaf types (`base/`) | `clock`, `duration`, `stop`, `holds`, `suggest` | the monotonic clock and the RFC 3339 timestamp; durations as text; the stop signal; hold intervals (`Interval`, `EndedBy`, `IntervalBatch`) and hold events; "did you mean" for misspelled names |
//! | | `error`, `output`, `stdout`, `progress`, `table`, `time_scale`, `proc_stat`, `measure`, `environment` | errors and exit codes; the atomic results file; printing that a closed pipe ends quietly; progress bars; the summary table; `--time-scale`; process CPU; measurement helpers shared with `cargo bench`; the machine |
//! | | [`kinds`] | the server kinds, one folder each with the same skeleton, registered by one line; server addresses as users write them (`kinds::address`) |
//! | | [`backends`], [`strategies`] | the servers (given or started here) and their cost counters, above the kinds; the registry, one entry per strategy id |
//! | 2 faults | `faults` | one file per fault family, its spec (settings read and checked) and its injection: worker pause/crash/starvation, proxies, server freeze, failover, leader loss; which fault applies where (what a kind offers); its own commands and errors |
//! | 3 workload | `workload`, `scenarios` | what a run asks for, its faults checked by their families: TOML presets and files, flags, checks |
//! | 4 driver | `driver`, `results`, `trials` | workers (tasks or processes), the protected resource, the safety oracle, metrics; the results model from a run's cases |
//! | 5 commands (`commands/`) | `suite`, `plan`, `run`, `compare`, `report`, `scale`, `signals`, `pages` | the suite and the one typed plan `compare` and `run` build from it (scenarios, cases with their registry entries, what does not apply and why, the estimate); each command takes a domain request (`RunRequest`, `CompareRequest`, `ReportRequest`, `ScaleRequest`); the stop signal (SIGINT, SIGTERM) they share; shell completions and the man page |
//! | 6 CLI | `cli` | every clap struct, converted into the commands' requests (`--strategies` parsed there, once, into a `StrategyChoice`); the runtime |

// Functions of at most 100 lines (clippy.toml) in this crate's code; its inline tests are exempt.
#![cfg_attr(not(test), warn(clippy::too_many_lines))]
// Every command prints through `base::stdout` (a closed pipe is no panic there); only the worker
// child, which talks to its driver, writes stdout itself.
#![deny(clippy::print_stdout)]

pub mod backends;
pub mod base;
mod cli;
pub mod commands;
mod driver;
mod faults;
pub mod kinds;
mod results;
mod scenarios;
pub mod strategies;
mod trial_stop;
mod trials;
mod workload;

pub use base::error::{BenchError, EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE};
pub use cli::{Cli, Command, RunArgs, cli_main, run_in_process};
pub use commands::run::RunOutcome;
