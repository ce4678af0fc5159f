//! The load driver (DESIGN §5): workers that run the workload against `dyn Locker`s, the protected
//! resource, the safety oracle and the metrics.
//!
//! | module | job |
//! |---|---|
//! | [`case`] | one case: checks, faults, server counters, its figures |
//! | [`mode`] | what the worker modes share: context, timing, supervision, their output |
//! | [`tasks`], [`processes`], [`child`], [`protocol`] | the two worker modes |
//! | [`worker`] | one client's load loop |
//! | [`resource`], [`resource_socket`] | the protected counters with fencing (safety measures 2 and 3) |
//! | [`oracle`] | overlapping believed-held intervals (safety measure 1), hand-off latency |
//! | [`holder_sample`] | the stretch of one key's intervals the holder timeline shows |
//! | [`renewal`] | renewal metrics from `LockEvent`s |
//! | [`tally`], [`histogram`], [`cost`] | per-worker figures, HdrHistograms, client cost |

pub mod case;
pub mod child;
pub mod cost;
pub mod histogram;
pub mod holder_sample;
pub mod mode;
pub mod oracle;
pub mod processes;
pub mod protocol;
pub mod renewal;
pub mod resource;
pub mod resource_socket;
pub mod tally;
pub mod tasks;
pub mod worker;
