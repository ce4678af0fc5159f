//! What both layouts say alike: the sections in report order ([`lay_out`], each written by a
//! [`Layout`]), the topics shown only with their data (found once per report) and the links to them,
//! and the headings and sentences that introduce each section. Markdown and HTML differ only in how
//! they lay these out. A document can quote one section on its own ([`Part`], [`lay_out_part`]): the
//! tables in `docs/findings/` are such sections, rendered from committed results files.

use crate::comparison::Comparison;
use crate::content;
use crate::delta::Deltas;
use crate::grid::Grid;
use crate::pairing::{self, ModelRows};
use crate::report::Report;
use crate::rules::{Finding, TIE_PCT};
use crate::scorecard::{self, Scorecard};
use crate::topics::{self, CostTable, Fault, Pair};

/// Heading of the verdict matrix.
pub const VERDICTS: &str = "Breaking points: verdicts";
/// Heading of the list of cells where the measurement disagrees with theory.
pub const AGAINST_THEORY: &str = "Where the measurement disagrees with theory";
/// Heading of the list of what each scenario does.
pub const MECHANISMS: &str = "What each scenario does to a lock";
/// Heading of "which strategy when".
pub const WHICH: &str = "Which strategy when";
/// Heading of the Redlock topic.
pub const REDLOCK: &str = "Redlock and clocks";
/// Under [`REDLOCK`].
pub const REDLOCK_INTRO: &str = "Each fault: violated trials of the trials run, per strategy that ran it, and the mechanism (from the scenario file).";
/// Heading of the peers topic.
pub const PEERS: &str = "Peers beside their counterparts";
/// Under [`PEERS`].
pub const PEERS_INTRO: &str = "Each peer (the real library, through its adapter) beside the lockbench strategy that models it: baseline figures, then every scenario where the two do not agree (violated trials / trials), as the legend of \"Models against their libraries\" below says: differ (with the mechanism the scenario file states, or unexplained) or not told apart by the trials run.";
/// Heading of the models topic ([`pairing::intro`] under it).
pub const MODELS: &str = "Models against their libraries";
/// Heading of the cost table.
pub const COST: &str = "Cost under baseline";
/// Heading of the headline tables.
pub const HEADLINES: &str = "Headline numbers";
/// Under [`HEADLINES`].
pub const HEADLINES_INTRO: &str = "Latencies in ms; margin = TTL left when a renewal landed.";
/// The changes section when no case matches the baseline file.
pub const NO_MATCH: &str = "No case of this run matches a case of the baseline file.";

/// The topics shown only with their data.
#[derive(Debug)]
pub struct Topics {
    /// Redlock and clocks: one table per fault.
    pub faults: Vec<Fault>,
    /// Each peer beside its counterpart.
    pub pairs: Vec<Pair>,
    /// Each model against its libraries.
    pub models: Vec<ModelRows>,
}

impl Topics {
    /// The topics of `grid`.
    pub fn of(grid: &Grid<'_>) -> Self {
        Topics {
            faults: topics::redlock_faults(grid),
            pairs: topics::peer_pairs(grid),
            models: pairing::models_against_libraries(grid),
        }
    }

    /// The topics worth a link on the first screen, in page order: (heading, HTML id).
    pub fn links(&self) -> Vec<(&'static str, &'static str)> {
        let mut links = Vec::new();
        if topics::worth_a_link(&self.faults) {
            links.push((REDLOCK, "redlock"));
        }
        if !self.pairs.is_empty() {
            links.push((PEERS, "peers"));
        }
        if !self.models.is_empty() {
            links.push((MODELS, "models"));
        }
        links
    }
}

/// Under the scorecard: what its figures are measured under, and how to read it.
pub fn scorecard_note(under: &str) -> String {
    format!(
        "Scorecard: speed, latency and cost under {under}; breaks and data over every scenario. {}",
        scorecard::NOTE
    )
}

/// Under [`WHICH`]: where the findings come from.
pub fn which_intro() -> String {
    format!(
        "Derived from the measured numbers by the stated rules (figures within {TIE_PCT:.0}% of the best are ties on a noisy machine)."
    )
}

/// The heading of the list of cases not measured or with notes.
pub fn not_measured_heading(count: usize) -> String {
    format!("Not measured or with notes ({count})")
}

/// Under the cost table: what it counts, and the client CPU scope of this report.
pub fn cost_note(scope: &str) -> String {
    format!("{} Client CPU scope here: {scope}.", topics::COST_NOTE)
}

/// The cases on one side only, as lines: `Only in this run: a, b.`; none for an empty side.
pub fn one_sided(deltas: &Deltas) -> Vec<String> {
    [
        ("Only in this run", &deltas.only_new),
        ("Only in the baseline file", &deltas.only_old),
    ]
    .into_iter()
    .filter(|(_, list)| !list.is_empty())
    .map(|(what, list)| format!("{what}: {}.", list.join(", ")))
    .collect()
}

/// How one format writes each section of a report. A section shown only with its data is asked for
/// only when it has some.
pub trait Layout {
    /// The title and the user's workload lines.
    fn head(&self, out: &mut String, c: &Comparison);
    /// The scorecard, its headline lines and how to read it.
    fn scorecard(&self, out: &mut String, card: &Scorecard);
    /// The links to the topics worth one, as (heading, HTML id); maybe none.
    fn also(&self, out: &mut String, links: &[(&str, &str)]);
    /// The environment lines.
    fn environment(&self, out: &mut String, c: &Comparison);
    /// The verdict matrix: one row per strategy, one column per row of the grid, then many-locks.
    fn verdicts(&self, out: &mut String, report: &Report<'_>);
    /// Under the matrix: the cases where the measurement disagrees with theory.
    fn against_theory(&self, out: &mut String, lines: Vec<String>);
    /// Under the matrix: what each scenario does to a lock, as (scenario, sentence).
    fn mechanisms(&self, out: &mut String, mechanisms: Vec<(String, String)>);
    /// Under the matrix: the cases not measured or with notes.
    fn not_measured(&self, out: &mut String, lines: Vec<String>);
    /// The findings, each with its rule and evidence.
    fn which_strategy_when(&self, out: &mut String, findings: &[Finding]);
    /// Redlock and clocks: one table per fault.
    fn redlock_and_clocks(&self, out: &mut String, faults: &[Fault]);
    /// Each peer beside its counterpart.
    fn peers(&self, out: &mut String, pairs: &[Pair]);
    /// Each model against its libraries.
    fn models(&self, out: &mut String, models: &[ModelRows]);
    /// The cost table under baseline, with what it counts.
    fn cost(&self, out: &mut String, cost: &CostTable);
    /// One headline table per run, under its scenario and workload.
    fn headline_numbers(&self, out: &mut String, grid: &Grid<'_>);
    /// The changes against the baseline file `name`.
    fn changes(&self, out: &mut String, deltas: &Deltas, name: &str);
    /// Every chart section with its charts.
    fn charts(&self, out: &mut String, report: &Report<'_>);
}

/// The report in `layout`: every section in report order.
pub fn lay_out(report: &Report<'_>, layout: &impl Layout) -> String {
    let c = report.input.current;
    let grid = &report.grid;
    let topics = Topics::of(grid);
    let mut out = String::new();
    layout.head(&mut out, c);
    if let Some(card) = scorecard::of(grid, report.input.cost) {
        layout.scorecard(&mut out, &card);
    }
    layout.also(&mut out, &topics.links());
    layout.environment(&mut out, c);
    layout.verdicts(&mut out, report);
    let against = content::against_theory(grid);
    if !against.is_empty() {
        layout.against_theory(&mut out, against);
    }
    let mechanisms = content::mechanisms(c);
    if !mechanisms.is_empty() {
        layout.mechanisms(&mut out, mechanisms);
    }
    let missing = content::not_measured(grid);
    if !missing.is_empty() {
        layout.not_measured(&mut out, missing);
    }
    layout.which_strategy_when(&mut out, &report.findings);
    if !topics.faults.is_empty() {
        layout.redlock_and_clocks(&mut out, &topics.faults);
    }
    if !topics.pairs.is_empty() {
        layout.peers(&mut out, &topics.pairs);
    }
    if !topics.models.is_empty() {
        layout.models(&mut out, &topics.models);
    }
    if let Some(cost) = topics::cost_table(grid) {
        layout.cost(&mut out, &cost);
    }
    layout.headline_numbers(&mut out, grid);
    if let Some((deltas, name)) = &report.deltas {
        layout.changes(&mut out, deltas, name);
    }
    layout.charts(&mut out, report);
    out
}

/// A section a document can quote on its own, by name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part {
    /// The first screen: one row per strategy and the headline lines.
    Scorecard,
    /// The verdict matrix with its legend.
    Verdicts,
    /// "Which strategy when".
    Which,
    /// Redlock and clocks.
    Redlock,
    /// Each peer beside its counterpart.
    Peers,
    /// Each model against its libraries.
    Models,
    /// The cost table under baseline.
    Cost,
}

impl Part {
    /// Every part, in report order.
    pub const ALL: [Part; 7] = [
        Part::Scorecard,
        Part::Verdicts,
        Part::Which,
        Part::Redlock,
        Part::Peers,
        Part::Models,
        Part::Cost,
    ];

    /// Its name, as documents and the command line write it.
    pub fn name(self) -> &'static str {
        match self {
            Part::Scorecard => "scorecard",
            Part::Verdicts => "verdicts",
            Part::Which => "which",
            Part::Redlock => "redlock",
            Part::Peers => "peers",
            Part::Models => "models",
            Part::Cost => "cost",
        }
    }

    /// The part called `name`, if any.
    pub fn named(name: &str) -> Option<Part> {
        Part::ALL.into_iter().find(|p| p.name() == name)
    }
}

/// One section of the report in `layout`, exactly as the whole report shows it; `None` when the
/// report has no data for it (the whole report leaves it out then).
pub fn lay_out_part(report: &Report<'_>, layout: &impl Layout, part: Part) -> Option<String> {
    let grid = &report.grid;
    let mut out = String::new();
    match part {
        Part::Scorecard => layout.scorecard(&mut out, &scorecard::of(grid, report.input.cost)?),
        Part::Verdicts => layout.verdicts(&mut out, report),
        Part::Which => layout.which_strategy_when(&mut out, &report.findings),
        Part::Redlock => {
            let faults = topics::redlock_faults(grid);
            if faults.is_empty() {
                return None;
            }
            layout.redlock_and_clocks(&mut out, &faults);
        }
        Part::Peers => {
            let pairs = topics::peer_pairs(grid);
            if pairs.is_empty() {
                return None;
            }
            layout.peers(&mut out, &pairs);
        }
        Part::Models => {
            let models = pairing::models_against_libraries(grid);
            if models.is_empty() {
                return None;
            }
            layout.models(&mut out, &models);
        }
        Part::Cost => layout.cost(&mut out, &topics::cost_table(grid)?),
    }
    Some(out)
}
