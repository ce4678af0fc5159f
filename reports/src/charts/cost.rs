//! Cost against held locks: one line per strategy, held locks on a log x axis, a cost figure (server
//! renew calls and CPU, client CPU, memory and threads) on a log y axis. The data comes from a
//! `lockbench scale` run ([`crate::scale::ScaleResults::cost_series`]); [`CostChart::of_scale`] makes
//! one chart per figure, and a report draws them only when it is given such data. Log axes are
//! labelled at a few round values per decade, with no minor grid; the legend sits right of the plot.

use plotters::coord::Shift;
use plotters::prelude::*;

use super::palette::{Palette, SeriesStyle};
use super::{AXIS_SIZE, LABEL_SIZE, LEGEND_ROW, Plot, TITLE_SIZE, err, text, tick};
use crate::scale::{CostPoint, CostSeries};

/// One strategy's line: (held locks, cost) pairs.
#[derive(Debug, Clone, PartialEq)]
pub struct CostLine {
    /// Strategy id.
    pub strategy: String,
    /// Legend text (strategy id, and where it stopped short).
    pub label: String,
    /// The strategy's look in this report.
    pub style: SeriesStyle,
    /// Points with a positive cost, ascending by held locks.
    pub points: Vec<(f64, f64)>,
}

/// The chart.
#[derive(Debug, Clone, PartialEq)]
pub struct CostChart {
    /// Title, e.g. `Client CPU against held locks`.
    pub title: String,
    /// File-name part, e.g. `client-cpu`.
    pub slug: String,
    /// Y axis title with its unit, e.g. `client CPU (% of one core)`.
    pub y_desc: String,
    /// The lines.
    pub lines: Vec<CostLine>,
}

/// The figures a scale run gives per point: (slug, title, y axis, figure).
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
    /// One chart per figure of a scale run that has data (none when `series` is empty), each line
    /// in its strategy's look from `palette`.
    pub fn of_scale(series: &[CostSeries], palette: &Palette) -> Vec<CostChart> {
        METRICS
            .iter()
            .map(|(slug, title, y_desc, figure)| CostChart {
                title: (*title).to_owned(),
                slug: (*slug).to_owned(),
                y_desc: format!("{y_desc}, log scale"),
                lines: series
                    .iter()
                    .map(|s| CostLine {
                        strategy: s.strategy.clone(),
                        style: palette.style(&s.strategy),
                        label: match &s.stopped {
                            Some(why) => format!("{} ({why})", s.strategy),
                            None => s.strategy.clone(),
                        },
                        points: s
                            .points
                            .iter()
                            .filter_map(|p| {
                                figure(p)
                                    .filter(|v| *v > 0.0 && p.held_locks > 0)
                                    .map(|v| (p.held_locks as f64, v))
                            })
                            .collect(),
                    })
                    .collect(),
            })
            .filter(CostChart::has_data)
            .collect()
    }

    /// Whether there is anything to draw.
    pub fn has_data(&self) -> bool {
        self.lines.iter().any(|s| !s.points.is_empty())
    }

    /// The lines with points, each with its legend entry.
    fn drawn(&self) -> impl Iterator<Item = &CostLine> {
        self.lines.iter().filter(|l| !l.points.is_empty())
    }

    fn legend_width(&self) -> i32 {
        super::legend_width(self.drawn().map(|l| l.label.as_str()))
    }
}

impl Plot for CostChart {
    fn size(&self) -> (u32, u32) {
        let legend_height = 120 + LEGEND_ROW * self.drawn().count() as i32;
        (
            (760 + self.legend_width()) as u32,
            legend_height.max(560) as u32,
        )
    }

    fn draw<DB: DrawingBackend>(&self, area: &DrawingArea<DB, Shift>) -> Result<(), String> {
        let points = self.lines.iter().flat_map(|s| s.points.iter());
        let (mut x_lo, mut x_hi) = (f64::INFINITY, 1.0f64);
        let (mut y_lo, mut y_hi) = (f64::INFINITY, 0.0f64);
        for &(x, y) in points {
            x_lo = x_lo.min(x);
            x_hi = x_hi.max(x);
            y_lo = y_lo.min(y);
            y_hi = y_hi.max(y);
        }
        if !x_lo.is_finite() || !y_lo.is_finite() {
            (x_lo, y_lo, y_hi) = (1.0, 0.1, 1.0);
        }
        let body = area.titled(&self.title, text(TITLE_SIZE)).map_err(err)?;
        let (width, _) = body.dim_in_pixel();
        let (plot_area, legend_area) = body.split_horizontally(width as i32 - self.legend_width());
        let mut chart = ChartBuilder::on(&plot_area)
            .margin(14)
            .margin_right(24)
            .x_label_area_size(56)
            .y_label_area_size(84)
            .build_cartesian_2d(
                super::log_axis(x_lo / 1.5, x_hi * 1.5),
                super::log_axis(y_lo / 2.0, y_hi * 2.0),
            )
            .map_err(err)?;
        chart
            .configure_mesh()
            .x_desc("held locks (log scale)")
            .y_desc(&self.y_desc)
            .axis_desc_style(text(AXIS_SIZE))
            .label_style(text(LABEL_SIZE))
            .x_label_formatter(&|x| tick(*x))
            .y_label_formatter(&|y| tick(*y))
            .draw()
            .map_err(err)?;
        for series in self.drawn() {
            let color = series.style.color;
            let mut data = series.points.clone();
            data.sort_by(|a, b| a.0.total_cmp(&b.0));
            super::draw_line(&mut chart, data.clone(), series.style, 3)?;
            chart
                .draw_series(data.iter().map(|&p| Circle::new(p, 4, color.filled())))
                .map_err(err)?;
        }
        let entries: Vec<(String, SeriesStyle)> =
            self.drawn().map(|l| (l.label.clone(), l.style)).collect();
        super::draw_legend(&legend_area, &entries, 14)
    }
}
