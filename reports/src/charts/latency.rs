//! Acquire-latency percentile curves for one row, from the raw HdrHistograms: x is the percentile as
//! its number of nines, log10(1 / (1 − p)), so 90%, 99%, 99.9% are evenly spaced; y is the latency on
//! a log scale; each curve ends at the max. The axis always reaches 99.9 % so the 99 and 99.9 ticks are
//! labelled even when a curve ends before them; the legend sits right of the plot.

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::palette::{Palette, SeriesStyle};
use super::{AXIS_SIZE, LABEL_SIZE, LEGEND_ROW, Plot, TITLE_SIZE, err, text};
use crate::grid::{Grid, Row, ran, verdict_word};
use crate::histogram::{self, PercentilePoint};

/// One strategy's curve.
#[derive(Debug, Clone, PartialEq)]
pub struct Curve {
    /// Strategy id.
    pub strategy: String,
    /// Legend text.
    pub label: String,
    /// The strategy's look in this report.
    pub style: SeriesStyle,
    /// Points, in percentile order.
    pub points: Vec<PercentilePoint>,
}

/// The chart.
#[derive(Debug, Clone, PartialEq)]
pub struct LatencyChart {
    /// Title.
    pub title: String,
    /// Y axis title.
    pub y_desc: String,
    /// Curves.
    pub curves: Vec<Curve>,
}

impl LatencyChart {
    /// Acquire latency curves of `row`, each in its strategy's look from `palette`; None when no
    /// case recorded an acquire.
    pub fn of_row(grid: &Grid<'_>, row: &Row<'_>, palette: &Palette) -> Option<Self> {
        Self::of_histogram(grid, row, palette, "acquire", "acquire latency")
    }

    /// Curves of histogram `name` in `row`.
    pub fn of_histogram(
        grid: &Grid<'_>,
        row: &Row<'_>,
        palette: &Palette,
        name: &str,
        what: &str,
    ) -> Option<Self> {
        let curves: Vec<Curve> = grid
            .strategies
            .iter()
            .filter_map(|s| {
                let case = row.case(&s.id).filter(|c| ran(c))?;
                let hist = histogram::of_case(case, name)?;
                let verdict = verdict_word(Some(case));
                Some(Curve {
                    strategy: s.id.clone(),
                    label: if verdict == "VIOLATED" {
                        format!("{} (VIOLATED)", s.id)
                    } else {
                        s.id.clone()
                    },
                    style: palette.style(&s.id),
                    points: histogram::percentile_curve(&hist),
                })
            })
            .collect();
        (!curves.is_empty()).then(|| LatencyChart {
            title: format!("Acquire latency by percentile — {}", row.label),
            y_desc: format!("{what} (ms, log scale)"),
            curves,
        })
    }
}

/// The x coordinate of a percentile: the number of nines, log10(1 / (1 − p)).
fn x_of(percentile: f64) -> f64 {
    -(1.0 - (percentile / 100.0).min(0.999_999)).log10()
}

/// The tick label of an x coordinate: the percentile it stands for.
fn percentile_label(x: f64) -> String {
    let p = 100.0 * (1.0 - 10f64.powf(-x));
    let text = format!("{p:.4}");
    let text = text.trim_end_matches('0').trim_end_matches('.');
    format!("{text}%")
}

/// The x axis always reaches this many nines (99.9 %).
const MIN_NINES: f64 = 3.0;

/// Where the x ticks go: 0%, 50%, 75%, then every nine (90%, 99%, ...) up to `x_hi`.
fn ticks(x_hi: f64) -> Vec<f64> {
    let mut ticks = vec![0.0, x_of(50.0), x_of(75.0)];
    let mut nines = 1.0;
    while nines <= x_hi + 1e-9 {
        ticks.push(nines);
        nines += 1.0;
    }
    ticks
}

impl LatencyChart {
    fn legend_width(&self) -> i32 {
        super::legend_width(self.curves.iter().map(|c| c.label.as_str()))
    }
}

impl Plot for LatencyChart {
    fn size(&self) -> (u32, u32) {
        let legend_height = 120 + LEGEND_ROW * self.curves.len() as i32;
        (
            (760 + self.legend_width()) as u32,
            legend_height.max(560) as u32,
        )
    }

    fn draw<DB: DrawingBackend>(&self, area: &DrawingArea<DB, Shift>) -> Result<(), String> {
        let points = self.curves.iter().flat_map(|c| c.points.iter());
        let (mut lo, mut hi, mut x_hi) = (f64::INFINITY, 0.0f64, MIN_NINES);
        for p in points {
            if p.value_ms > 0.0 {
                lo = lo.min(p.value_ms);
            }
            hi = hi.max(p.value_ms);
            x_hi = x_hi.max(x_of(p.percentile));
        }
        if !lo.is_finite() || hi <= 0.0 {
            lo = 0.001;
            hi = 1.0;
        }
        let (y_lo, y_hi) = (lo / 1.6, hi * 2.0);
        let body = area.titled(&self.title, text(TITLE_SIZE)).map_err(err)?;
        let (width, _) = body.dim_in_pixel();
        let (plot_area, legend_area) = body.split_horizontally(width as i32 - self.legend_width());
        let mut chart = ChartBuilder::on(&plot_area)
            .margin(14)
            .margin_right(24)
            .x_label_area_size(64)
            .y_label_area_size(84)
            .build_cartesian_2d(0.0..x_hi * 1.04, super::log_axis(y_lo, y_hi))
            .map_err(err)?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(0)
            .x_desc("percentile of acquires")
            .y_desc(&self.y_desc)
            .axis_desc_style(text(AXIS_SIZE))
            .label_style(text(LABEL_SIZE))
            .y_label_formatter(&|y| super::tick(*y))
            .draw()
            .map_err(err)?;
        // The percentile ticks: grid lines in the plot, labels under the axis.
        for x in ticks(x_hi) {
            chart
                .draw_series(std::iter::once(PathElement::new(
                    vec![(x, y_lo), (x, y_hi)],
                    BLACK.mix(0.15).stroke_width(1),
                )))
                .map_err(err)?;
            let (px, py) = chart.backend_coord(&(x, y_lo));
            area.draw(&Text::new(
                percentile_label(x),
                (px, py + 8),
                text(LABEL_SIZE).pos(Pos::new(HPos::Center, VPos::Top)),
            ))
            .map_err(err)?;
        }
        for curve in &self.curves {
            let color = curve.style.color;
            let data: Vec<(f64, f64)> = curve
                .points
                .iter()
                .map(|p| (x_of(p.percentile), p.value_ms.max(y_lo)))
                .collect();
            super::draw_line(&mut chart, data.clone(), curve.style, 3)?;
            chart
                .draw_series(
                    data.iter()
                        .map(|&(x, y)| Circle::new((x, y), 3, color.filled())),
                )
                .map_err(err)?;
        }
        let entries: Vec<(String, SeriesStyle)> = self
            .curves
            .iter()
            .map(|c| (c.label.clone(), c.style))
            .collect();
        super::draw_legend(&legend_area, &entries, 14)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_map_to_evenly_spaced_nines() {
        assert_eq!(x_of(0.0), 0.0);
        assert!((x_of(90.0) - 1.0).abs() < 1e-9);
        assert!((x_of(99.9) - 3.0).abs() < 1e-9);
        assert_eq!(percentile_label(x_of(50.0)), "50%");
        assert_eq!(percentile_label(3.0), "99.9%");
        assert_eq!(percentile_label(0.0), "0%");
        assert_eq!(ticks(2.5).len(), 5, "0, 50, 75, 90, 99");
    }
}
