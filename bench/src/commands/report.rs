//! `lockbench report RESULTS.json [--baseline OLD.json [--fail-on regression|violation|contradiction]]
//! [--scale SCALE.json] [--out DIR] [--section NAME] [--format csv]`: renders the reports again from a results file — a comparison
//! (`lockbench compare`) or a single run (`lockbench run`) — with the changes against an earlier file
//! when `--baseline` is given (one summary line printed, then one line per first-screen cell the two
//! runs contradict each other on and a count line; with `--fail-on`, exit 1 when the changes or the
//! contradictions hold what it names: the CI gate, and the check that a suite's answers repeat) and the cost-against-held-locks charts and losses at scale when a
//! `lockbench scale` file is given or `runs/many-locks/scale.json` lies beside the results (RESULTS may
//! also be the results directory, and either file gzip'd). With `--section`, prints one section of the
//! Markdown report instead, as the whole report shows it. Also the one place that writes reports for
//! `compare`.

use std::path::{Path, PathBuf};

use lockbench_reports::Comparison;
use lockbench_reports::contradictions::{self, Contradiction};
use lockbench_reports::delta::{self, Deltas};
use lockbench_reports::limits::{Limit, case_label};
use lockbench_reports::model::Verdict;
use lockbench_reports::scale::{CostSeries, ScaleResults};
use lockbench_reports::sections::Part;
use lockbench_reports::{ReportInput, WrittenReport, markdown, write_report};

use crate::base::error::{BenchError, EXIT_FAILED, EXIT_OK};
use crate::base::output;
use crate::base::stdout::{out, outln};

/// What `lockbench report` is asked to do.
#[derive(Debug, Clone)]
pub struct ReportRequest {
    /// The results file to report (a comparison or a single run).
    pub results: PathBuf,
    /// An earlier results file: the report adds the changes against it.
    pub baseline: Option<PathBuf>,
    /// A `lockbench scale` file: the report adds cost against held locks.
    pub scale: Option<PathBuf>,
    /// Output directory (default: the directory of the results file).
    pub out: Option<PathBuf>,
    /// What in the changes against the baseline fails the command (exit 1).
    pub fail_on: Vec<FailOn>,
    /// Print this section of the Markdown report alone instead of writing the reports.
    pub section: Option<Part>,
    /// Also write the report's tables as CSV (`--format csv`): scorecard.csv and verdicts.csv.
    pub csv: bool,
}

/// What `--fail-on` turns into exit code 1: a change against the baseline, or a figure past an
/// absolute limit.
#[derive(Debug, Clone, PartialEq)]
pub enum FailOn {
    /// A new violation, or throughput down by more than the noise ([`delta::CaseDelta::regression`]);
    /// needs `--baseline`.
    Regression,
    /// A case violated now that was not before; without a baseline, any violated case.
    Violation,
    /// A first-screen cell whose two runs contradict each other beyond their trials' uncertainty
    /// ([`contradictions::find`]); needs `--baseline`.
    Contradiction,
    /// A figure of some case past an absolute limit (`p99>200ms`, `baseline:cs/s<500`).
    Limit(Limit),
}

impl FailOn {
    /// Parses one `--fail-on` value; the error says what was expected.
    pub fn parse(text: &str) -> Result<FailOn, String> {
        match text.trim() {
            "regression" => Ok(FailOn::Regression),
            "violation" => Ok(FailOn::Violation),
            "contradiction" => Ok(FailOn::Contradiction),
            other if other.contains(['>', '<']) => Limit::parse(other).map(FailOn::Limit),
            other => Err(format!(
                "{other:?}: expected regression, violation, contradiction or a limit such as p99>200ms"
            )),
        }
    }

    /// Its flag value.
    pub fn name(&self) -> String {
        match self {
            FailOn::Regression => "regression".into(),
            FailOn::Violation => "violation".into(),
            FailOn::Contradiction => "contradiction".into(),
            FailOn::Limit(limit) => limit.to_string(),
        }
    }

    /// Whether it compares two runs, so it needs `--baseline`.
    pub fn needs_baseline(&self) -> bool {
        matches!(self, FailOn::Regression | FailOn::Contradiction)
    }
}

/// The earlier run the gates compare against: its name, the changes and the contradictions.
pub(crate) struct Against<'a> {
    name: &'a str,
    deltas: &'a Deltas,
    contradictions: &'a [Contradiction],
}

/// Refuses, in one line, a gate that cannot be checked: one that compares two runs without a
/// baseline, or a limit on a scenario that is not among `scenarios`.
pub(crate) fn check_gates<'a>(
    fail_on: &[FailOn],
    has_baseline: bool,
    scenarios: impl IntoIterator<Item = &'a str> + Clone,
) -> Result<(), BenchError> {
    for gate in fail_on {
        if gate.needs_baseline() && !has_baseline {
            return Err(BenchError::usage(format!(
                "--fail-on {}: compares two runs: give it to `lockbench report NEW --baseline OLD`",
                gate.name()
            )));
        }
        if let FailOn::Limit(limit) = gate
            && let Some(named) = &limit.scenario
            && !scenarios.clone().into_iter().any(|s| s == named)
        {
            return Err(BenchError::usage(format!(
                "--fail-on {}: scenario '{named}' is not among the scenarios here",
                gate.name()
            )));
        }
    }
    Ok(())
}

/// Prints, on stderr, one line per gate that found something, and returns the exit code: 1 when any
/// did.
pub(crate) fn gate(fail_on: &[FailOn], current: &Comparison, against: Option<&Against>) -> i32 {
    let mut code = EXIT_OK;
    for gate in fail_on {
        let (count, cases) = found(gate, current, against);
        if count == 0 {
            continue;
        }
        code = EXIT_FAILED;
        let against =
            against.map_or_else(|| "this run".to_owned(), |a| format!("against {}", a.name));
        eprintln!(
            "lockbench: --fail-on {}: {count} found {against}",
            gate.name()
        );
        for line in cases {
            eprintln!("  {line}");
        }
    }
    code
}

/// How many of what `gate` names the results hold, and a line per case where it names cases (the
/// changes and contradictions against a baseline were printed already).
fn found(gate: &FailOn, current: &Comparison, against: Option<&Against>) -> (usize, Vec<String>) {
    let cases: Vec<String> = match (gate, against) {
        (FailOn::Limit(limit), _) => limit
            .breaches(current)
            .into_iter()
            .map(|b| format!("{}: {}", b.case, b.figure))
            .collect(),
        (FailOn::Violation, None) => current
            .runs
            .iter()
            .flat_map(|r| r.results.cases.iter().map(move |c| (r, c)))
            .filter(|(_, c)| c.safety.verdict == Verdict::Violated)
            .map(|(r, c)| format!("{}: violated", case_label(&r.results.scenario.name, c)))
            .collect(),
        (FailOn::Violation, Some(a)) => return (a.deltas.new_violations(), Vec::new()),
        (FailOn::Regression, Some(a)) => return (a.deltas.regressions(), Vec::new()),
        (FailOn::Contradiction, Some(a)) => return (a.contradictions.len(), Vec::new()),
        // Refused before anything ran ([`check_gates`]).
        (FailOn::Regression | FailOn::Contradiction, None) => Vec::new(),
    };
    (cases.len(), cases)
}

/// A file's text ([`output::read_text`]); unreadable is a one-line usage error.
fn read_text(path: &Path) -> Result<String, BenchError> {
    output::read_text(path)
        .map_err(|e| BenchError::usage(format!("{}: cannot read: {e}", path.display())))
}

/// Reads a results file (comparison or single run); bad input is a one-line usage error.
pub(crate) fn read_results(path: &Path) -> Result<Comparison, BenchError> {
    let text = read_text(path)?;
    Comparison::read(&text).map_err(|e| BenchError::usage(format!("{}: {e}", path.display())))
}

fn read_scale(path: &Path) -> Result<Vec<CostSeries>, BenchError> {
    let text = read_text(path)?;
    ScaleResults::from_json(&text)
        .map(|s| s.cost_series())
        .map_err(|e| BenchError::usage(format!("{}: {e}", path.display())))
}

/// The many-locks pass `compare` wrote beside `results` (`runs/many-locks/scale.json`), when there.
fn own_scale_file(results: &Path) -> Option<PathBuf> {
    let path = results
        .parent()?
        .join("runs")
        .join(crate::commands::suite::MANY_LOCKS)
        .join("scale.json");
    path.is_file().then_some(path)
}

/// Writes the reports of `current` into `dir`.
pub(crate) fn render(
    dir: &Path,
    current: &Comparison,
    baseline: Option<(&Comparison, &str)>,
    cost: &[CostSeries],
) -> Result<WrittenReport, BenchError> {
    write_report(
        dir,
        ReportInput {
            current,
            baseline,
            cost,
        },
    )
    .map_err(|e| BenchError::failed(e.to_string()))
}

/// Writes the scorecard and the verdict matrix of `current` as CSV into `dir` (beside report.md);
/// returns the files written.
pub(crate) fn write_csv(
    dir: &Path,
    current: &Comparison,
    cost: &[CostSeries],
) -> Result<Vec<PathBuf>, BenchError> {
    lockbench_reports::csv::write_csv(
        dir,
        ReportInput {
            current,
            baseline: None,
            cost,
        },
    )
    .map_err(|e| BenchError::failed(e.to_string()))
}

/// Prints where the CSV tables are, when there are any.
pub(crate) fn print_tables(tables: &[PathBuf]) {
    let names: Vec<String> = tables.iter().map(|p| p.display().to_string()).collect();
    if !names.is_empty() {
        outln!("tables: {}", names.join(", "));
    }
}

/// Prints where the reports are.
pub(crate) fn print_written(written: &WrittenReport) {
    outln!("report: {}", written.html.display());
    outln!("        {}", written.markdown.display());
    outln!(
        "charts: {} ({} charts, PNG and SVG)",
        written.charts_dir.display(),
        written.charts.len()
    );
}

/// Prints `part` of the Markdown report of `current` (with `cost` from a scale file); a results file
/// without data for it is bad input.
fn print_section(
    results: &Path,
    current: &Comparison,
    cost: &[CostSeries],
    part: Part,
) -> Result<i32, BenchError> {
    let report = lockbench_reports::report::without_charts(ReportInput {
        current,
        baseline: None,
        cost,
    });
    let text = markdown::section(&report, part).ok_or_else(|| {
        BenchError::usage(format!(
            "{}: no data for section {} in this results file",
            results.display(),
            part.name()
        ))
    })?;
    out!("{text}");
    Ok(EXIT_OK)
}

/// Runs `lockbench report`.
pub(crate) fn command(mut args: ReportRequest) -> Result<i32, BenchError> {
    // A results directory (what `compare` and `run` write) stands for its results.json, the
    // baseline's as well as the new run's.
    for path in std::iter::once(&mut args.results).chain(args.baseline.as_mut()) {
        if path.is_dir() {
            *path = path.join(crate::base::output::RESULTS_FILE);
        }
    }
    let current = read_results(&args.results)?;
    let baseline = match &args.baseline {
        Some(path) => Some((read_results(path)?, path.display().to_string())),
        None => None,
    };
    let scenarios = current
        .runs
        .iter()
        .map(|r| r.results.scenario.name.as_str());
    check_gates(&args.fail_on, baseline.is_some(), scenarios)?;
    let cost = match args.scale.clone().or_else(|| own_scale_file(&args.results)) {
        Some(path) => read_scale(&path)?,
        None => Vec::new(),
    };
    if let Some(part) = args.section {
        return print_section(&args.results, &current, &cost, part);
    }
    let dir = match &args.out {
        Some(dir) => dir.clone(),
        None => args
            .results
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .map_or_else(|| PathBuf::from("."), Path::to_path_buf),
    };
    let dir = crate::base::output::prepare_dir(&dir)?;
    let written = render(
        &dir,
        &current,
        baseline.as_ref().map(|(c, name)| (c, name.as_str())),
        &cost,
    )?;
    print_written(&written);
    if args.csv {
        print_tables(&write_csv(&dir, &current, &cost)?);
    }
    let Some((old, name)) = &baseline else {
        return Ok(gate(&args.fail_on, &current, None));
    };
    let deltas = delta::compare(old, &current);
    outln!("changes against {name}: {}", deltas.summary());
    let found = contradictions::find(old, &current);
    let this = args.results.display().to_string();
    for c in &found {
        outln!(
            "contradiction: {}: {name} {}; {this} {}",
            c.cell,
            c.old,
            c.new
        );
    }
    outln!(
        "contradictions against {name}: {} ({})",
        found.len(),
        contradictions::RULE
    );
    let against = Against {
        name,
        deltas: &deltas,
        contradictions: &found,
    };
    Ok(gate(&args.fail_on, &current, Some(&against)))
}
