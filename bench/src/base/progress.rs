//! The progress bar of a run (indicatif), shown only when stdout is a terminal: one bar per case with
//! the elapsed time against the case's length and the completed critical sections per second, after a
//! title the caller sets (`compare`: the scenario, the trial and the suite's ETA).

use std::sync::Arc;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};

/// Makes a bar per case, or hidden bars when progress is off.
#[derive(Debug, Clone)]
pub(crate) struct Progress {
    enabled: bool,
    title: Option<Arc<str>>,
}

impl Progress {
    /// Progress on when `enabled` (callers pass "stdout is a terminal and not disabled").
    pub(crate) fn new(enabled: bool) -> Self {
        Progress {
            enabled,
            title: None,
        }
    }

    /// The same, with `title` before every case's label.
    pub(crate) fn titled(self, title: Option<String>) -> Self {
        Progress {
            title: title.map(Arc::from),
            ..self
        }
    }

    /// A bar for one case of `length` (None: bounded by a count only).
    pub(crate) fn case(&self, label: &str, length: Option<Duration>) -> CaseProgress {
        if !self.enabled {
            return CaseProgress(ProgressBar::hidden());
        }
        let bar = match length {
            Some(d) => ProgressBar::new(d.as_millis().max(1) as u64),
            None => ProgressBar::new_spinner(),
        };
        let template = if length.is_some() {
            "{prefix:>32} [{bar:24}] {elapsed:>4} {msg}"
        } else {
            "{prefix:>32} {spinner} {elapsed:>4} {msg}"
        };
        if let Ok(style) = ProgressStyle::with_template(template) {
            bar.set_style(style.progress_chars("=> "));
        }
        bar.set_prefix(match &self.title {
            Some(title) => format!("{title} {label}"),
            None => label.to_owned(),
        });
        CaseProgress(bar)
    }
}

/// One case's bar.
#[derive(Debug)]
pub(crate) struct CaseProgress(ProgressBar);

impl CaseProgress {
    /// Shows `elapsed` and the completions so far.
    pub(crate) fn update(&self, elapsed: Duration, completed: u64, measuring: bool) {
        self.0.set_position(elapsed.as_millis() as u64);
        let secs = elapsed.as_secs_f64().max(1e-3);
        if measuring {
            self.0.set_message(format!(
                "{completed} done, {:.0}/s",
                completed as f64 / secs
            ));
        } else {
            self.0.set_message("warming up");
        }
    }

    /// Removes the bar.
    pub(crate) fn finish(&self) {
        self.0.finish_and_clear();
    }
}
