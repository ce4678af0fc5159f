//! Layer 1, the leaf types every other layer uses: the clock, durations as text, the stop signal, hold
//! intervals, "did you mean", errors and exit codes, the atomic results file, progress bars, the summary
//! table, the time scale a run is sped up by (`--time-scale`), stdout that a closed pipe does not turn into a panic, whether diagnostics show (`--verbose`), process CPU, measurement helpers shared with `cargo bench`, and the machine a run ran on.

pub(crate) mod clock;
pub(crate) mod duration;
pub mod environment;
pub(crate) mod error;
pub(crate) mod holds;
pub mod measure;
pub mod output;
pub mod proc_stat;
pub(crate) mod progress;
pub(crate) mod stdout;
pub(crate) mod stop;
pub(crate) mod suggest;
pub(crate) mod table;
pub(crate) mod time_scale;
pub(crate) mod verbosity;
