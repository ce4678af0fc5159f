//! Whether the console shows internal diagnostics (`-v`/`--verbose`): the driver's own cost per cycle,
//! each scenario's case length. By default the console holds progress and findings only; the results
//! file records the diagnostics either way. Set once by the CLI before a command runs.

use std::sync::atomic::{AtomicBool, Ordering};

static VERBOSE: AtomicBool = AtomicBool::new(false);

/// Shows the diagnostics from now on (`true`) or not.
pub(crate) fn set_verbose(on: bool) {
    VERBOSE.store(on, Ordering::Relaxed);
}

/// Whether the diagnostics are shown.
pub(crate) fn verbose() -> bool {
    VERBOSE.load(Ordering::Relaxed)
}
