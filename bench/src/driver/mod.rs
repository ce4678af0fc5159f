//! The load driver (DESIGN §5): workers that run the workload against `dyn Locker`s, the protected
//! resource, the safety oracle and the metrics.
//!
//! | module | job |
//! |---|---|
//! | [`case`] | one case: checks, timing, supervision, server counters |
//! | [`tasks`], [`processes`], [`child`], [`protocol`] | the two worker modes |
//! | [`worker`] | one client's load loop |
//! | [`resource`], [`resource_socket`] | the protected counters with fencing (safety measures 2 and 3) |
//! | [`oracle`] | overlapping believed-held intervals (safety measure 1), hand-off latency |
//! | [`holds`] | acquire / end-of-hold events for fault injection |
//! | [`holder_sample`] | the stretch of one key's intervals the holder timeline shows |
//! | [`renewal`] | renewal metrics from `LockEvent`s |
//! | [`tally`], [`histogram`], [`cost`] | per-worker figures, HdrHistograms, client cost |
//! | [`stop`] | the stop signal |

pub mod case;
pub mod child;
pub mod cost;
pub mod histogram;
pub mod holder_sample;
pub mod holds;
pub mod oracle;
pub mod processes;
pub mod protocol;
pub mod renewal;
pub mod resource;
pub mod resource_socket;
pub mod stop;
pub mod tally;
pub mod tasks;
pub mod worker;
