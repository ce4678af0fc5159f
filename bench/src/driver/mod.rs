//! The load driver (docs/design.md §5): workers that run the workload against `dyn Locker`s, the protected
//! resource, the safety oracle and the metrics. It sits above fault injection ([`crate::faults`]) and
//! the workload; the hold intervals and the stop signal it shares with them are leaf types
//! ([`crate::base::holds`], [`crate::base::stop`]).
//!
//! | module | job |
//! |---|---|
//! | [`case`] | one case: checks, faults, server counters, its figures |
//! | [`mode`] | what the worker modes share: context, timing, supervision, their output |
//! | [`tasks`], [`processes`], [`worker_link`], [`child`], [`protocol`], [`remote`] | the worker modes: tasks, worker processes (the driver's link to each), remote workers over TCP |
//! | [`worker`] | one client's load loop |
//! | [`many_locks`] | one client holding many locks, in a worker process or here (`lockbench scale`) |
//! | [`resource`], [`resource_socket`] | the protected counters with fencing (safety measures 2 and 3); a worker's handle on them |
//! | [`oracle`] | overlapping believed-held intervals (safety measure 1), hand-off latency |
//! | [`holder_sample`] | the stretch of one key's intervals the holder timeline shows |
//! | [`availability`] | grants over time and the longest stretch without one (fault scenarios' chart) |
//! | [`renewal`] | renewal metrics from `LockEvent`s |
//! | [`tally`], [`histogram`], [`cost`] | per-worker figures, HdrHistograms, client cost |

pub(crate) mod availability;
pub(crate) mod case;
pub(crate) mod child;
pub(crate) mod cost;
pub(crate) mod histogram;
pub(crate) mod holder_sample;
pub(crate) mod many_locks;
pub(crate) mod mode;
pub(crate) mod oracle;
pub(crate) mod processes;
pub(crate) mod protocol;
pub(crate) mod remote;
pub(crate) mod renewal;
pub(crate) mod resource;
pub(crate) mod resource_socket;
pub(crate) mod tally;
pub(crate) mod tasks;
pub(crate) mod worker;
pub(crate) mod worker_link;
