//! Layer 5, the commands: each takes a domain request (`RunRequest`, `CompareRequest`,
//! `ReportRequest`, `ScaleRequest`) and does one job; `check_adapter` checks a team's adapter against
//! its manifest. `compare` builds one `plan` of its `suite` of scenarios (the strategies parsed
//! once, every case with its registry entry, what does not apply and why, the estimate) and runs it
//! scenario by scenario through `run`, which executes a scenario's plan; `report` draws a results folder; [`scale`] holds many locks at once;
//! `preflight` checks the chosen rows against the run's servers before anything is measured;
//! `signals` is the stop signal (SIGINT, SIGTERM) every measuring command shares; `pages` prints
//! the shell completions and the man page; `committed` holds the runs the default suite leaves out for
//! time, which its report shows from their committed results.

pub(crate) mod check_adapter;
pub(crate) mod committed;
pub(crate) mod compare;
pub(crate) mod pages;
pub(crate) mod plan;
pub(crate) mod preflight;
pub(crate) mod report;
pub(crate) mod run;
pub mod scale;
pub(crate) mod signals;
pub(crate) mod suite;
