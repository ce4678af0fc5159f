//! Renewal margin distribution for one row: per strategy, the TTL the server still had when its
//! renewals landed (from the `renew_margin` histogram) as a range bar — whiskers min..max, box p10..p90,
//! a tick at the median — against the TTL, the point renewals are due (two thirds left) and the late
//! zone (under a third left).

use plotters::coord::Shift;
use plotters::coord::ranged1d::SegmentedCoord;
use plotters::coord::types::{RangedCoordf64, RangedCoordi32};
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::palette::{Palette, SeriesStyle};
use super::{AXIS_SIZE, LABEL_SIZE, NOTE_SIZE, Plot, TITLE_SIZE, VIOLATED, err, text};
use crate::format::ms;
use crate::grid::{Grid, Row, ran};
use crate::histogram;

/// One strategy's margins, in milliseconds.
#[derive(Debug, Clone, PartialEq)]
pub struct MarginRange {
    /// Strategy id.
    pub strategy: String,
    /// The strategy's look in this report.
    pub style: SeriesStyle,
    /// Renewals measured.
    pub count: u64,
    /// Smallest margin.
    pub min: f64,
    /// 10th percentile.
    pub p10: f64,
    /// Median.
    pub p50: f64,
    /// 90th percentile.
    pub p90: f64,
    /// Largest.
    pub max: f64,
}

/// The chart.
#[derive(Debug, Clone, PartialEq)]
pub struct MarginChart {
    /// Title.
    pub title: String,
    /// The watchdog TTL of the row.
    pub ttl_ms: f64,
    /// One range per strategy that renewed.
    pub ranges: Vec<MarginRange>,
}

impl MarginChart {
    /// The chart of `row`, each range in its strategy's colour from `palette`; None when no
    /// strategy renewed there.
    pub fn of_row(grid: &Grid<'_>, row: &Row<'_>, palette: &Palette) -> Option<Self> {
        let ranges: Vec<MarginRange> = grid
            .strategies
            .iter()
            .filter_map(|s| {
                let case = row.case(&s.id).filter(|c| ran(c))?;
                let hist = histogram::of_case(case, "renew_margin")?;
                let (min, p, max) = histogram::spread_ms(&hist, &[10.0, 50.0, 90.0]);
                Some(MarginRange {
                    strategy: s.id.clone(),
                    style: palette.style(&s.id),
                    count: hist.len(),
                    min,
                    p10: p[0],
                    p50: p[1],
                    p90: p[2],
                    max,
                })
            })
            .collect();
        (!ranges.is_empty()).then(|| MarginChart {
            title: format!(
                "Renewal margin (TTL left when renewals land) — {}",
                row.label
            ),
            ttl_ms: row.run.results.scenario.workload.watchdog_timeout_ms,
            ranges,
        })
    }
}

/// The plot's coordinates: ms across, one segment per strategy (and, on top, one for the labels of
/// the reference lines) up.
type MarginPlot<'a, DB> =
    ChartContext<'a, DB, Cartesian2d<RangedCoordf64, SegmentedCoord<RangedCoordi32>>>;

impl Plot for MarginChart {
    fn size(&self) -> (u32, u32) {
        (960, 170 + 48 * self.ranges.len().max(1) as u32)
    }

    fn draw<DB: DrawingBackend>(&self, area: &DrawingArea<DB, Shift>) -> Result<(), String> {
        let n = self.ranges.len().max(1) as i32;
        let max = self
            .ranges
            .iter()
            .map(|r| r.max)
            .fold(self.ttl_ms, f64::max);
        let x_max = max * 1.08;
        let mut chart = self.axes(area, n, x_max)?;
        self.draw_references(&mut chart, n, x_max)?;
        let third = self.ttl_ms / 3.0;
        for (i, r) in self.ranges.iter().enumerate() {
            draw_range(&mut chart, r, n - 1 - i as i32, x_max, third)?;
        }
        Ok(())
    }
}

impl MarginChart {
    /// The plot on `area` with its caption, its axis up to `x_max` ms, and the strategies' names
    /// beside their `n` slots.
    fn axes<'a, DB: DrawingBackend>(
        &self,
        area: &'a DrawingArea<DB, Shift>,
        n: i32,
        x_max: f64,
    ) -> Result<MarginPlot<'a, DB>, String> {
        let label_width = self
            .ranges
            .iter()
            .map(|r| super::text_width(&r.strategy, LABEL_SIZE))
            .max()
            .unwrap_or(0)
            + 16;
        let mut chart = ChartBuilder::on(area)
            .caption(&self.title, text(TITLE_SIZE))
            .margin(14)
            .margin_right(28)
            .x_label_area_size(56)
            .y_label_area_size(label_width)
            .build_cartesian_2d(0.0..x_max, (0..n).into_segmented())
            .map_err(err)?;
        let names: Vec<String> = self.ranges.iter().map(|r| r.strategy.clone()).collect();
        chart
            .configure_mesh()
            .disable_y_mesh()
            .disable_y_axis()
            .light_line_style(WHITE)
            .x_desc("TTL left on the server when the renewal landed (ms)")
            .axis_desc_style(text(AXIS_SIZE))
            .label_style(text(LABEL_SIZE))
            .x_label_formatter(&|v| super::tick(*v))
            .draw()
            .map_err(err)?;
        super::category_labels(area, &names, |slot| {
            chart.backend_coord(&(0.0, SegmentValue::CenterOf(slot)))
        })?;
        Ok(chart)
    }

    /// The late zone (under a third of the TTL left) shaded, and labelled lines where renewals are
    /// late, where they are due and at the TTL, across the `n` slots.
    fn draw_references<DB: DrawingBackend>(
        &self,
        chart: &mut MarginPlot<'_, DB>,
        n: i32,
        x_max: f64,
    ) -> Result<(), String> {
        // The top segment (slot n) is left free for the labels of the reference lines.
        let (top, bottom) = (|| SegmentValue::Exact(n + 1), || SegmentValue::Exact(0));
        let third = self.ttl_ms / 3.0;
        chart
            .draw_series(std::iter::once(Rectangle::new(
                [(0.0, bottom()), (third, top())],
                VIOLATED.mix(0.08).filled(),
            )))
            .map_err(err)?;
        for (x, label, color) in [
            (third, "late: under ⅓ TTL left", VIOLATED),
            (2.0 * third, "due: ⅔ TTL left", BLACK),
            (self.ttl_ms, "TTL", BLACK),
        ] {
            chart
                .draw_series(std::iter::once(PathElement::new(
                    vec![(x, bottom()), (x, top())],
                    color.mix(0.6).stroke_width(1),
                )))
                .map_err(err)?;
            chart
                .draw_series(std::iter::once(Text::new(
                    label,
                    // A little left of its line, so the line does not run through the label.
                    (x - x_max * 0.006, top()),
                    text(NOTE_SIZE)
                        .color(&color)
                        .pos(Pos::new(HPos::Right, VPos::Top)),
                )))
                .map_err(err)?;
        }
        Ok(())
    }
}

/// One strategy's range `r` in its `slot`: the whisker min..max, the box p10..p90, the median's
/// tick, and a note with its smallest and median margins (red when the smallest was late, under
/// `third` of the TTL left).
fn draw_range<DB: DrawingBackend>(
    chart: &mut MarginPlot<'_, DB>,
    r: &MarginRange,
    slot: i32,
    x_max: f64,
    third: f64,
) -> Result<(), String> {
    let color = r.style.color;
    let mid = || SegmentValue::CenterOf(slot);
    chart
        .draw_series(std::iter::once(PathElement::new(
            vec![(r.min, mid()), (r.max, mid())],
            color.stroke_width(2),
        )))
        .map_err(err)?;
    let mut rect = Rectangle::new(
        [
            (r.p10, SegmentValue::Exact(slot)),
            (
                r.p90.max(r.p10 + x_max * 0.003),
                SegmentValue::Exact(slot + 1),
            ),
        ],
        color.filled(),
    );
    rect.set_margin(12, 12, 0, 0);
    chart.draw_series(std::iter::once(rect)).map_err(err)?;
    let mut median = Rectangle::new(
        [
            (r.p50 - x_max * 0.002, SegmentValue::Exact(slot)),
            (r.p50 + x_max * 0.002, SegmentValue::Exact(slot + 1)),
        ],
        BLACK.filled(),
    );
    median.set_margin(6, 6, 0, 0);
    chart.draw_series(std::iter::once(median)).map_err(err)?;
    let note = format!(
        "min {} · p50 {} ms · {} renewal{}",
        ms(Some(r.min)),
        ms(Some(r.p50)),
        r.count,
        if r.count == 1 { "" } else { "s" }
    );
    let ink = if r.min < third { VIOLATED } else { BLACK };
    // Right of the whisker when there is room, else left of it.
    let (x, h) = if x_max - r.max > 0.3 * x_max {
        (r.max + x_max * 0.01, HPos::Left)
    } else {
        (r.min - x_max * 0.01, HPos::Right)
    };
    chart
        .draw_series(std::iter::once(Text::new(
            note,
            (x, mid()),
            text(NOTE_SIZE).color(&ink).pos(Pos::new(h, VPos::Center)),
        )))
        .map_err(err)?;
    Ok(())
}
