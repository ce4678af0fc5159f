//! Cost at each held-lock step of a `lockbench scale` run ([`crate::scale::ScaleResults::cost_series`]),
//! one chart per figure (server renew calls and CPU, client CPU, memory and threads): one row per
//! strategy, its name at the left, a marker at each step on a log axis of the figure (a ring at the
//! fewest locks, a dot at the most, joined by a line in the strategy's colour, so its growth reads as
//! the line's length), and the values written at the right. A scale run has few steps (two in the
//! committed ones), so the values are written out rather than read off axes. Rows run costliest first
//! (at the most locks each held). Rows with no figure are named under the plot: strategies the run
//! measured without this figure, and, in a report ([`CostChart::naming_absent`]), the report's
//! strategies the run left out, with why. [`CostChart::of_scale`] makes the charts, and a report
//! draws them only when it is given such data.

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::palette::{Palette, SeriesStyle};
use plotters::coord::types::RangedCoordf64;

use super::{AXIS_SIZE, LABEL_SIZE, LIGHT, Plot, TITLE_SIZE, err, text, tick, widest, wrap};
use crate::format::{group, rate};
use crate::many_locks::NOT_IN_THE_PASS;
use crate::scale::{CostPoint, CostSeries};

/// One strategy's row: (held locks, cost) pairs.
#[derive(Debug, Clone, PartialEq)]
pub struct CostLine {
    /// Strategy id.
    pub strategy: String,
    /// Where it stopped short, when it did (`stopped at 9000: budget`).
    pub stopped: Option<String>,
    /// The strategy's look in this report.
    pub style: SeriesStyle,
    /// Its steps with a figure, ascending by held locks; empty when the run has no such figure of it.
    pub points: Vec<(f64, f64)>,
}

/// The chart.
#[derive(Debug, Clone, PartialEq)]
pub struct CostChart {
    /// Title, e.g. `Client CPU against held locks`.
    pub title: String,
    /// File-name part, e.g. `client-cpu`.
    pub slug: String,
    /// The figure with its unit, e.g. `client CPU (% of one core)`.
    pub figure: String,
    /// Every strategy of the run, in its order (those without this figure have no points).
    pub lines: Vec<CostLine>,
    /// The report's strategies the run left out, each with why, named under the plot.
    pub absent: Vec<(String, String)>,
}

/// The figures a scale run gives per point: (slug, title, figure, value).
type Metric = (
    &'static str,
    &'static str,
    &'static str,
    fn(&CostPoint) -> Option<f64>,
);

const METRICS: [Metric; 5] = [
    (
        "renew-calls",
        "Server renew calls against held locks",
        "renew calls per second",
        |p| p.renew_calls_per_s,
    ),
    (
        "server-cpu",
        "Server CPU against held locks",
        "server CPU (ms per second)",
        |p| p.server_cpu_ms_per_s,
    ),
    (
        "client-cpu",
        "Client CPU against held locks",
        "client CPU (% of one core)",
        |p| Some(p.client_cpu_percent),
    ),
    (
        "client-rss",
        "Client memory against held locks",
        "client resident set (MiB)",
        |p| Some(p.rss_mb),
    ),
    (
        "client-threads",
        "Client threads against held locks",
        "client threads",
        |p| Some(p.threads as f64),
    ),
];

impl CostChart {
    /// One chart per figure of a scale run that has data (none when `series` is empty), each row in
    /// its strategy's look from `palette`.
    pub fn of_scale(series: &[CostSeries], palette: &Palette) -> Vec<CostChart> {
        METRICS
            .iter()
            .map(|(slug, title, figure, value)| CostChart {
                title: (*title).to_owned(),
                slug: (*slug).to_owned(),
                figure: (*figure).to_owned(),
                lines: series
                    .iter()
                    .map(|s| CostLine {
                        strategy: s.strategy.clone(),
                        style: palette.style(&s.strategy),
                        stopped: s.stopped.clone(),
                        points: s
                            .points
                            .iter()
                            .filter_map(|p| value(p).map(|v| (p.held_locks as f64, v)))
                            .collect(),
                    })
                    .collect(),
                absent: Vec::new(),
            })
            .filter(CostChart::has_data)
            .collect()
    }

    /// This chart naming `absent` under its plot: strategies of the report the run left out, each
    /// with why (`one connection per held lock: not measured at scale`).
    pub fn naming_absent(mut self, absent: &[(String, String)]) -> Self {
        self.absent = absent.to_vec();
        self
    }

    /// Whether there is anything to draw.
    pub fn has_data(&self) -> bool {
        self.lines.iter().any(|l| !l.points.is_empty())
    }

    /// The rows drawn, top to bottom: the costliest first, by the figure at the most locks each
    /// held (a stable sort keeps the run's order among equals).
    pub fn rows(&self) -> Vec<&CostLine> {
        let mut rows: Vec<&CostLine> = self.lines.iter().filter(|l| !l.points.is_empty()).collect();
        let last = |l: &CostLine| l.points.last().map_or(0.0, |p| p.1);
        rows.sort_by(|a, b| last(b).total_cmp(&last(a)));
        rows
    }

    /// The lines under the plot: the key to the markers, and every row without a figure, named.
    pub fn notes(&self) -> Vec<String> {
        let steps = self.steps();
        let held = |n: &f64| format!("{} held locks", group(*n as i64));
        let mut notes = vec![match steps.as_slice() {
            [] => String::new(),
            [only] => format!("\u{25cf} {}", held(only)),
            [first, .., last] => format!(
                "\u{25cb} {}{} · \u{25cf} {} · values at the right, in that order",
                held(first),
                if steps.len() > 2 {
                    " · \u{2022} the steps between"
                } else {
                    ""
                },
                held(last),
            ),
        }];
        let unmeasured: Vec<&str> = self
            .lines
            .iter()
            .filter(|l| l.points.is_empty())
            .map(|l| l.strategy.as_str())
            .collect();
        if !unmeasured.is_empty() {
            notes.push(format!(
                "Not measured: {} (the scale run has no {} of {})",
                unmeasured.join(", "),
                self.figure,
                if unmeasured.len() == 1 { "it" } else { "them" }
            ));
        }
        for line in &self.lines {
            if let Some(why) = &line.stopped {
                notes.push(format!("{} {why}", line.strategy));
            }
        }
        if !self.absent.is_empty() {
            let absent: Vec<String> = self
                .absent
                .iter()
                .map(
                    |(id, why)| match why.strip_suffix(": not measured at scale") {
                        Some(why) => format!("{id} ({why})"),
                        // No reason beyond its absence.
                        None if why == NOT_IN_THE_PASS => id.clone(),
                        None => format!("{id} ({why})"),
                    },
                )
                .collect();
            notes.push(format!("Not in the scale run: {}", absent.join(", ")));
        }
        notes
    }

    /// The held-lock steps of the drawn rows, ascending.
    fn steps(&self) -> Vec<f64> {
        let mut steps: Vec<f64> = self
            .lines
            .iter()
            .flat_map(|l| l.points.iter().map(|p| p.0))
            .collect();
        steps.sort_by(f64::total_cmp);
        steps.dedup();
        steps
    }
}

impl CostLine {
    /// What is written right of the row: its values in step order.
    pub fn values(&self) -> String {
        let values: Vec<String> = self.points.iter().map(|p| value(p.1)).collect();
        values.join(" → ")
    }
}

/// A value as [`rate`] writes it, at the precision of its rounded self (9.99 is `10`, not `10.0`),
/// and a whole number without decimals (4 threads is `4`).
fn value(v: f64) -> String {
    let rounded: f64 = rate(v).replace('\u{2009}', "").parse().unwrap_or(v);
    if rounded.fract() == 0.0 && rounded.abs() < 1e15 {
        group(rounded as i64)
    } else {
        rate(rounded)
    }
}

/// Pixels per row.
const ROW: i32 = 34;
/// The plot's own width, between the names and the values.
const PLOT_WIDTH: i32 = 400;
/// Pixels a labelled value of the axis needs.
const TICK_ROOM: i32 = 56;
/// Height of one note line.
const NOTE_ROW: i32 = 24;
/// Radius of a step's marker; the ring at the fewest locks is larger, so it shows round a dot on
/// the same value.
const DOT: i32 = 5;

impl CostChart {
    fn name_width(&self) -> i32 {
        widest(self.rows().iter().map(|l| &l.strategy), LABEL_SIZE) + 20
    }

    fn value_width(&self) -> i32 {
        widest(self.rows().iter().map(|l| l.values()), LABEL_SIZE) + 24
    }

    fn width(&self) -> i32 {
        24 + self.name_width() + PLOT_WIDTH + self.value_width()
    }

    /// The notes, wrapped to the chart's width.
    fn note_lines(&self) -> Vec<String> {
        self.notes()
            .iter()
            .flat_map(|note| wrap(note, LABEL_SIZE, self.width() - 36))
            .collect()
    }

    fn notes_height(&self) -> i32 {
        NOTE_ROW * self.note_lines().len() as i32 + 12
    }

    /// The figure's axis range: its least and greatest positive value with room round the markers.
    fn x_range(&self) -> (f64, f64) {
        let (mut lo, mut hi) = (f64::INFINITY, 0.0f64);
        for &(_, v) in self.lines.iter().flat_map(|l| l.points.iter()) {
            if v > 0.0 {
                lo = lo.min(v);
                hi = hi.max(v);
            }
        }
        if !lo.is_finite() {
            return (0.1, 1.0);
        }
        // At least a decade, so a row of equal values still has an axis round it.
        let pad = ((10.0 * lo / hi).sqrt()).max(1.25);
        (lo / pad, hi * pad)
    }
}

/// The labelled values of the figure's axis: [`super::log_ticks`], or only its powers of ten when
/// those would crowd the plot.
fn ticks(lo: f64, hi: f64) -> Vec<f64> {
    let all = super::log_ticks(lo, hi);
    if all.len() as i32 * TICK_ROOM <= PLOT_WIDTH {
        return all;
    }
    let decades: Vec<f64> = all
        .iter()
        .copied()
        .filter(|v| (v.log10() - v.log10().round()).abs() < 1e-9)
        .collect();
    // Every other power of ten when even those crowd.
    let step = if decades.len() as i32 * TICK_ROOM <= PLOT_WIDTH {
        1
    } else {
        2
    };
    decades.into_iter().step_by(step).collect()
}

impl Plot for CostChart {
    fn size(&self) -> (u32, u32) {
        let height = 60 + ROW * self.rows().len().max(1) as i32 + 64 + self.notes_height();
        (self.width() as u32, height as u32)
    }

    fn draw<DB: DrawingBackend>(&self, area: &DrawingArea<DB, Shift>) -> Result<(), String> {
        let (_, height) = area.dim_in_pixel();
        let (upper, foot) = area.split_vertically(height as i32 - self.notes_height());
        let rows = self.rows();
        let n = rows.len().max(1) as f64;
        let (lo, hi) = self.x_range();
        let mut chart = ChartBuilder::on(&upper)
            .caption(&self.title, text(TITLE_SIZE))
            .margin(12)
            .margin_left(4)
            .margin_right(0)
            .x_label_area_size(56)
            .y_label_area_size(self.name_width())
            .right_y_label_area_size(self.value_width())
            .build_cartesian_2d((lo..hi).log_scale().with_key_points(ticks(lo, hi)), 0.0..n)
            .map_err(err)?;
        chart
            .configure_mesh()
            .disable_y_mesh()
            .disable_y_axis()
            .x_desc(format!("{}, log scale", self.figure))
            .axis_desc_style(text(AXIS_SIZE))
            .label_style(text(LABEL_SIZE))
            .bold_line_style(LIGHT)
            .x_label_formatter(&|x| tick(*x))
            .draw()
            .map_err(err)?;
        for (i, line) in rows.iter().enumerate() {
            let y = n - i as f64 - 0.5;
            draw_row(&mut chart, line, y)?;
            let (left, row_y) = chart.backend_coord(&(lo, y));
            let (right, _) = chart.backend_coord(&(hi, y));
            for (label, x, side) in [
                (line.strategy.clone(), left - 10, HPos::Right),
                (line.values(), right + 12, HPos::Left),
            ] {
                upper
                    .draw(&Text::new(
                        label,
                        (x, row_y),
                        text(LABEL_SIZE).pos(Pos::new(side, VPos::Center)),
                    ))
                    .map_err(err)?;
            }
        }
        for (i, note) in self.note_lines().into_iter().enumerate() {
            foot.draw(&Text::new(
                note,
                (24, NOTE_ROW / 2 + i as i32 * NOTE_ROW),
                text(LABEL_SIZE).pos(Pos::new(HPos::Left, VPos::Center)),
            ))
            .map_err(err)?;
        }
        Ok(())
    }
}

/// One row at `y`: its steps' markers joined by a line in its colour; a ring at the fewest locks,
/// a dot at the most, small dots between (a value of 0 has no place on a log axis and is only
/// written).
fn draw_row<DB: DrawingBackend, X: Ranged<ValueType = f64>>(
    chart: &mut ChartContext<'_, DB, Cartesian2d<X, RangedCoordf64>>,
    line: &CostLine,
    y: f64,
) -> Result<(), String> {
    let color = line.style.color;
    let drawn: Vec<(f64, f64)> = line
        .points
        .iter()
        .filter(|p| p.1 > 0.0)
        .map(|p| (p.1, y))
        .collect();
    chart
        .draw_series(std::iter::once(PathElement::new(
            drawn.clone(),
            color.stroke_width(3),
        )))
        .map_err(err)?;
    let last = drawn.len().saturating_sub(1);
    for (k, &at) in drawn.iter().enumerate() {
        if k == 0 && last > 0 {
            chart
                .draw_series([
                    Circle::new(at, DOT + 2, WHITE.filled()),
                    Circle::new(at, DOT + 2, color.stroke_width(3)),
                ])
                .map_err(err)?;
        } else {
            let radius = if k == last { DOT } else { DOT - 2 };
            chart
                .draw_series(std::iter::once(Circle::new(at, radius, color.filled())))
                .map_err(err)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(held: u64, calls: Option<f64>) -> CostPoint {
        CostPoint {
            held_locks: held,
            renew_calls_per_s: calls,
            server_cpu_ms_per_s: Some(1.0),
            client_cpu_percent: held as f64 / 1000.0,
            rss_mb: 20.0,
            threads: 4,
            lost: 0,
            renew_failures: 0,
            thinnest_margin_ms: None,
        }
    }

    fn series(strategy: &str, calls: [Option<f64>; 2]) -> CostSeries {
        CostSeries {
            strategy: strategy.to_owned(),
            stopped: None,
            points: vec![point(1000, calls[0]), point(10_000, calls[1])],
            repeats: Vec::new(),
        }
    }

    #[test]
    fn rows_run_costliest_first_and_rows_without_the_figure_are_named() {
        let cost = [
            series("cheap", [Some(1.0), Some(1.0)]),
            series("unmeasured", [None, None]),
            series("dear", [Some(1000.0), Some(10_000.0)]),
        ];
        let charts = CostChart::of_scale(&cost, &Palette::default());
        let renew = &charts[0];
        assert_eq!(renew.slug, "renew-calls");
        let rows: Vec<&str> = renew.rows().iter().map(|l| l.strategy.as_str()).collect();
        assert_eq!(rows, ["dear", "cheap"]);
        assert_eq!(renew.rows()[0].values(), "1\u{2009}000 → 10\u{2009}000");
        assert_eq!(
            [
                value(9.987),
                value(0.9954),
                value(4498.9),
                value(4.0),
                value(2.49)
            ],
            ["10", "1", "4\u{2009}499", "4", "2.5"]
        );
        let renew = renew.clone().naming_absent(&[
            (
                "pg".into(),
                "one lock per connection: not measured at scale".into(),
            ),
            ("other".into(), NOT_IN_THE_PASS.into()),
        ]);
        assert_eq!(
            renew.notes(),
            [
                "\u{25cb} 1\u{2009}000 held locks · \u{25cf} 10\u{2009}000 held locks · values at the right, in that order",
                "Not measured: unmeasured (the scale run has no renew calls per second of it)",
                "Not in the scale run: pg (one lock per connection), other",
            ]
        );
        // The client CPU chart has every row.
        assert_eq!(charts[2].rows().len(), 3);
        assert_eq!(charts[2].notes().len(), 1);
    }
}
