//! Writes a report to a directory: `report.html` (self-contained), `report.md`, and every chart as
//! `charts/NAME.png` and `charts/NAME.svg`. Charts left over from an earlier report in the same
//! directory are removed, so the directory always shows one report.

use std::fs;
use std::path::{Path, PathBuf};

use crate::charts::ChartError;
use crate::report::{ReportInput, build};
use crate::{html, markdown};

/// The HTML report's file name.
pub const HTML_FILE: &str = "report.html";
/// The Markdown report's file name.
pub const MARKDOWN_FILE: &str = "report.md";
/// The charts' directory, relative to the reports.
pub const CHARTS_DIR: &str = "charts";

/// Chart name prefixes a report writes (and may remove from an earlier report).
/// (`verdicts` was a chart of the verdict matrix once; an earlier report's copy is removed.)
const CHART_PREFIXES: [&str; 7] = [
    "verdicts",
    "throughput-",
    "availability-",
    "latency-",
    "margin-",
    "timeline-",
    "cost-",
];

/// What was written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WrittenReport {
    /// `DIR/report.html`.
    pub html: PathBuf,
    /// `DIR/report.md`.
    pub markdown: PathBuf,
    /// `DIR/charts`.
    pub charts_dir: PathBuf,
    /// Chart names (each has a `.png` and a `.svg`).
    pub charts: Vec<String>,
}

/// Why a report could not be written (one line).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WriteError {
    /// A chart failed to draw.
    #[error(transparent)]
    Chart(#[from] ChartError),
    /// A file could not be written.
    #[error("writing {path}: {source}")]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// What the system said.
        source: std::io::Error,
    },
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> WriteError + '_ {
    move |source| WriteError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Writes `bytes` to `path` through a temp file and a rename.
pub(crate) fn write_file(path: &Path, bytes: &[u8]) -> Result<(), WriteError> {
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned());
    let temp = path.with_file_name(format!(
        ".{}.{}.tmp",
        name.unwrap_or_default(),
        std::process::id()
    ));
    fs::write(&temp, bytes).map_err(io(path))?;
    fs::rename(&temp, path).map_err(|e| {
        let _ = fs::remove_file(&temp);
        io(path)(e)
    })
}

/// Builds the report of `input` and writes it into `dir` (created if needed).
pub fn write_report(dir: &Path, input: ReportInput<'_>) -> Result<WrittenReport, WriteError> {
    let report = build(input)?;
    let charts_dir = dir.join(CHARTS_DIR);
    fs::create_dir_all(&charts_dir).map_err(io(&charts_dir))?;
    remove_old_charts(&charts_dir);
    let mut names = Vec::new();
    for placed in &report.charts {
        let chart = &placed.chart;
        write_file(&charts_dir.join(format!("{}.png", chart.name)), &chart.png)?;
        write_file(
            &charts_dir.join(format!("{}.svg", chart.name)),
            chart.svg.as_bytes(),
        )?;
        names.push(chart.name.clone());
    }
    let html_path = dir.join(HTML_FILE);
    write_file(&html_path, html::render(&report).as_bytes())?;
    let markdown_path = dir.join(MARKDOWN_FILE);
    write_file(
        &markdown_path,
        markdown::render(&report, CHARTS_DIR).as_bytes(),
    )?;
    Ok(WrittenReport {
        html: html_path,
        markdown: markdown_path,
        charts_dir,
        charts: names,
    })
}

fn remove_old_charts(dir: &Path) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let ours = path.extension().is_some_and(|e| e == "png" || e == "svg")
            && path
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .is_some_and(|stem| CHART_PREFIXES.iter().any(|p| stem.starts_with(p)));
        if ours {
            let _ = fs::remove_file(path);
        }
    }
}
