//! Builds a report from a comparison: every chart, the derived findings and, with a baseline file, the
//! changes — everything the Markdown and HTML renderers then lay out.

use crate::charts::availability::AvailabilityChart;
use crate::charts::cost::CostChart;
use crate::charts::latency::LatencyChart;
use crate::charts::margin::MarginChart;
use crate::charts::palette::Palette;
use crate::charts::throughput::ThroughputChart;
use crate::charts::timeline::TimelineChart;
use crate::charts::{Chart, ChartError, render};
use crate::comparison::Comparison;
use crate::delta::{self, Deltas};
use crate::grid::{Grid, ran, slug};
use crate::model::Verdict;
use crate::rules::{self, Finding};

/// What a report is made from.
#[derive(Debug, Clone, Copy)]
pub struct ReportInput<'a> {
    /// The results reported.
    pub current: &'a Comparison,
    /// An earlier results file and its name, for the changes section.
    pub baseline: Option<(&'a Comparison, &'a str)>,
    /// Cost against held locks, per strategy (from a `lockbench scale` run,
    /// [`crate::scale::ScaleResults::cost_series`]); the charts are drawn only when there is data.
    pub cost: &'a [crate::scale::CostSeries],
}

/// The part of the report a chart belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Section {
    /// Throughput per row (rows without faults).
    Throughput,
    /// Lock availability over time per fault row: a lane per strategy, the fault shaded.
    Availability,
    /// Acquire latency percentiles per row.
    Latency,
    /// Renewal margins per row.
    Margin,
    /// Holder timelines per case.
    Timeline,
    /// Cost against held locks.
    Cost,
}

impl Section {
    /// Heading of the section.
    pub fn heading(self) -> &'static str {
        match self {
            Section::Throughput => "Throughput",
            Section::Availability => "Lock availability under faults",
            Section::Latency => "Acquire latency percentiles",
            Section::Margin => "Renewal margin",
            Section::Timeline => "Holder timelines",
            Section::Cost => "Cost against held locks",
        }
    }
}

/// A chart with its place in the report.
#[derive(Debug, Clone)]
pub struct PlacedChart {
    /// Its section.
    pub section: Section,
    /// Whether it shows a violation (timelines of violated cases are shown first).
    pub violated: bool,
    /// The chart.
    pub chart: Chart,
}

/// A report, ready to lay out.
#[derive(Debug)]
pub struct Report<'a> {
    /// What it reports.
    pub input: ReportInput<'a>,
    /// The rows and columns.
    pub grid: Grid<'a>,
    /// "Which strategy when".
    pub findings: Vec<Finding>,
    /// Changes against the baseline file, with its name.
    pub deltas: Option<(Deltas, String)>,
    /// Every chart, in report order.
    pub charts: Vec<PlacedChart>,
}

/// Every strategy's look in a report's charts: the report's strategies in their order, then any
/// strategy only the cost data has.
pub fn palette(grid: &Grid<'_>, cost: &[crate::scale::CostSeries]) -> Palette {
    Palette::new(
        grid.strategies
            .iter()
            .map(|s| s.id.as_str())
            .chain(cost.iter().map(|c| c.strategy.as_str())),
    )
}

/// The report without its charts: the tables and findings only (what a document quoting one of its
/// sections needs, drawn in a fraction of the time).
pub fn without_charts(input: ReportInput<'_>) -> Report<'_> {
    let grid = Grid::new(input.current);
    let findings = rules::derive(&grid);
    let deltas = input
        .baseline
        .map(|(old, name)| (delta::compare(old, input.current), name.to_owned()));
    Report {
        input,
        grid,
        findings,
        deltas,
        charts: Vec::new(),
    }
}

/// Builds the report: draws every chart (a chart that fails to draw fails the report).
pub fn build<'a>(input: ReportInput<'a>) -> Result<Report<'a>, ChartError> {
    let mut report = without_charts(input);
    report.charts = charts(&report.grid, input.cost)?;
    Ok(report)
}

/// Every chart of `grid` (and of the cost data), in report order.
fn charts(
    grid: &Grid<'_>,
    cost: &[crate::scale::CostSeries],
) -> Result<Vec<PlacedChart>, ChartError> {
    let palette = palette(grid, cost);
    let mut charts = Vec::new();
    let mut place = |section, violated, chart| {
        charts.push(PlacedChart {
            section,
            violated,
            chart,
        })
    };
    // A fault row shows its lock availability over time, the fault shaded, in place of a throughput
    // bar that would read a strategy that rightly gave up as 0 CS/s.
    for row in &grid.rows {
        if let Some(plot) = AvailabilityChart::of_row(grid, row, &palette) {
            let title = plot.title.clone();
            place(
                Section::Availability,
                false,
                render(&format!("availability-{}", row.slug), &title, &plot)?,
            );
        } else {
            let plot = ThroughputChart::of_row(grid, row, &palette);
            let title = plot.title.clone();
            place(
                Section::Throughput,
                false,
                render(&format!("throughput-{}", row.slug), &title, &plot)?,
            );
        }
    }
    for row in &grid.rows {
        if let Some(plot) = LatencyChart::of_row(grid, row, &palette) {
            let title = plot.title.clone();
            place(
                Section::Latency,
                false,
                render(&format!("latency-{}", row.slug), &title, &plot)?,
            );
        }
    }
    for row in &grid.rows {
        if let Some(plot) = MarginChart::of_row(grid, row, &palette) {
            let title = plot.title.clone();
            place(
                Section::Margin,
                false,
                render(&format!("margin-{}", row.slug), &title, &plot)?,
            );
        }
    }
    for row in &grid.rows {
        for strategy in &grid.strategies {
            let Some(case) = row.case(&strategy.id).filter(|c| ran(c)) else {
                continue;
            };
            if let Some(plot) = TimelineChart::of_case(case, &row.label) {
                let title = plot.title.clone();
                let name = format!("timeline-{}-{}", row.slug, slug(&strategy.id));
                place(
                    Section::Timeline,
                    case.safety.verdict == Verdict::Violated,
                    render(&name, &title, &plot)?,
                );
            }
        }
    }
    let absent = absent_at_scale(grid, cost);
    for plot in CostChart::of_scale(cost, &palette) {
        let plot = plot.naming_absent(&absent);
        place(
            Section::Cost,
            false,
            render(&format!("cost-{}", plot.slug), &plot.title, &plot)?,
        );
    }
    Ok(charts)
}

/// The report's strategies the scale data lacks (yardsticks aside), each with why, for the cost
/// charts to name.
pub fn absent_at_scale(
    grid: &Grid<'_>,
    cost: &[crate::scale::CostSeries],
) -> Vec<(String, String)> {
    grid.strategies
        .iter()
        .filter(|s| !grid.is_yardstick(&s.id) && !cost.iter().any(|c| c.strategy == s.id))
        .map(|s| (s.id.clone(), crate::many_locks::why_left_out(s).to_owned()))
        .collect()
}

impl Report<'_> {
    /// The sections that have charts, in report order.
    pub fn sections(&self) -> Vec<Section> {
        let mut sections: Vec<Section> = Vec::new();
        for placed in &self.charts {
            if !sections.contains(&placed.section) {
                sections.push(placed.section);
            }
        }
        sections
    }

    /// The charts of `section`, violated timelines first.
    pub fn charts_in(&self, section: Section) -> impl Iterator<Item = &PlacedChart> {
        let of = move |violated: bool| {
            self.charts
                .iter()
                .filter(move |p| p.section == section && p.violated == violated)
        };
        of(true).chain(of(false))
    }
}
