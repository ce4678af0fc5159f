//! Throughput per strategy for one row (scenario × lease): horizontal bars, one per strategy, fastest
//! at the top and the cases that did not run last, each with a whisker over its 95 % interval and its
//! value and verdict written at the end.

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::palette::{Palette, SeriesStyle};
use super::{AXIS_SIZE, LABEL_SIZE, MUTED, Plot, TITLE_SIZE, VIOLATED, err, text};
use crate::format::rate;
use crate::grid::{Grid, Row, ran, verdict_word};
use crate::rate_interval::RateInterval;

/// One bar.
#[derive(Debug, Clone, PartialEq)]
pub struct Bar {
    /// Strategy id.
    pub strategy: String,
    /// The strategy's look in this report.
    pub style: SeriesStyle,
    /// Completed critical sections per second (the mean of its trials' rates, as the scorecard's);
    /// None when the case did not run.
    pub value: Option<f64>,
    /// The 95 % interval of the mean rate, when there were several trials (as the scorecard's).
    pub range: Option<(f64, f64)>,
    /// `safe`, `VIOLATED`, `skipped`, ...
    pub verdict: &'static str,
}

/// The chart.
#[derive(Debug, Clone, PartialEq)]
pub struct ThroughputChart {
    /// Title.
    pub title: String,
    /// Bars, top to bottom: fastest first, those that did not run last.
    pub bars: Vec<Bar>,
}

impl ThroughputChart {
    /// The chart of `row`, each bar in its strategy's colour from `palette`.
    pub fn of_row(grid: &Grid<'_>, row: &Row<'_>, palette: &Palette) -> Self {
        let mut bars: Vec<Bar> = grid
            .strategies
            .iter()
            .filter_map(|s| {
                let case = row.case(&s.id)?;
                let rate = ran(case).then(|| RateInterval::of_case(case));
                Some(Bar {
                    strategy: s.id.clone(),
                    style: palette.style(&s.id),
                    value: rate.as_ref().map(|r| r.mean),
                    range: rate.and_then(|r| r.bounds),
                    verdict: verdict_word(Some(case)),
                })
            })
            .collect();
        // Fastest first; a stable sort keeps the report's order among equals and the not-run.
        bars.sort_by(|a, b| {
            let key = |bar: &Bar| bar.value.map_or(f64::NEG_INFINITY, |v| v);
            key(b).total_cmp(&key(a))
        });
        ThroughputChart {
            title: format!("Throughput — {}", row.label),
            bars,
        }
    }
}

impl Bar {
    /// What is written at the bar's end: its rate, with the verdict where it says more.
    fn label(&self) -> String {
        match self.value {
            Some(v) if self.verdict == "VIOLATED" => format!("{} CS/s · VIOLATED", rate(v)),
            // Under a fault that takes the lock away, a safe strategy that completed nothing
            // waited for a lock it could not get: that is the right answer, not a breakage.
            Some(v) if gave_up(v, self.verdict) => {
                format!("{} CS/s · safe: gave up (no lock)", rate(v))
            }
            Some(v) => format!("{} CS/s", rate(v)),
            None => self.verdict.to_owned(),
        }
    }
}

/// Whether a bar is a safe case that completed (about) nothing: it gave up rather than break.
fn gave_up(value: f64, verdict: &str) -> bool {
    verdict == "safe" && value < 0.005
}

impl Plot for ThroughputChart {
    fn size(&self) -> (u32, u32) {
        (960, 110 + 44 * self.bars.len().max(1) as u32)
    }

    fn draw<DB: DrawingBackend>(&self, area: &DrawingArea<DB, Shift>) -> Result<(), String> {
        let n = self.bars.len().max(1) as i32;
        let max = self
            .bars
            .iter()
            .filter_map(|b| b.range.map(|(_, high)| high).or(b.value))
            .fold(0.0f64, f64::max);
        // Room right of the longest bar for its label.
        let x_max = if max > 0.0 { max * 1.45 } else { 1.0 };
        let label_width = self
            .bars
            .iter()
            .map(|b| {
                area.estimate_text_size(&b.strategy, &text(LABEL_SIZE))
                    .map_or(0, |(w, _)| w)
            })
            .max()
            .unwrap_or(0)
            + 16;
        let mut chart = ChartBuilder::on(area)
            .caption(&self.title, text(TITLE_SIZE))
            .margin(12)
            .margin_right(24)
            .x_label_area_size(52)
            .y_label_area_size(label_width)
            .build_cartesian_2d(0.0..x_max, super::slots(n).into_segmented())
            .map_err(err)?;
        let names: Vec<String> = self.bars.iter().map(|b| b.strategy.clone()).collect();
        chart
            .configure_mesh()
            .disable_y_mesh()
            .disable_y_axis()
            .x_desc("completed critical sections per second")
            .axis_desc_style(text(AXIS_SIZE))
            .label_style(text(LABEL_SIZE))
            .light_line_style(WHITE)
            .x_label_formatter(&|v| super::tick(*v))
            .draw()
            .map_err(err)?;
        super::category_labels(area, &names, |slot| {
            chart.backend_coord(&(0.0, SegmentValue::CenterOf(slot)))
        })?;
        for (i, bar) in self.bars.iter().enumerate() {
            let slot = n - 1 - i as i32;
            let value = bar.value.unwrap_or(0.0);
            let color = if bar.value.is_some() {
                bar.style.color
            } else {
                MUTED
            };
            let mut rect = Rectangle::new(
                [
                    (0.0, SegmentValue::Exact(slot)),
                    (value, SegmentValue::Exact(slot + 1)),
                ],
                color.filled(),
            );
            rect.set_margin(8, 8, 0, 0);
            chart.draw_series(std::iter::once(rect)).map_err(err)?;
            if let Some((low, high)) = bar.range {
                // The 95 % interval: a line across the bar's middle, a dot at each end.
                let center = SegmentValue::CenterOf(slot);
                chart
                    .draw_series(std::iter::once(PathElement::new(
                        vec![(low, center.clone()), (high, center.clone())],
                        BLACK.stroke_width(2),
                    )))
                    .map_err(err)?;
                chart
                    .draw_series(
                        [low, high]
                            .into_iter()
                            .map(|end| Circle::new((end, center.clone()), 3, BLACK.filled())),
                    )
                    .map_err(err)?;
            }
            let label_x = bar.range.map_or(value, |(_, high)| high.max(value));
            let label = bar.label();
            let style = text(LABEL_SIZE)
                .color(if bar.verdict == "VIOLATED" {
                    &VIOLATED
                } else {
                    &BLACK
                })
                .pos(Pos::new(HPos::Left, VPos::Center));
            chart
                .draw_series(std::iter::once(Text::new(
                    label,
                    (label_x + x_max * 0.01, SegmentValue::CenterOf(slot)),
                    style,
                )))
                .map_err(err)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::comparison::Comparison;

    #[test]
    fn bars_run_fastest_first_with_their_interval_and_the_not_run_last() {
        let c = Comparison::read(include_str!("../../tests/fixtures/compare-quick.json"))
            .expect("fixture");
        let grid = Grid::new(&c);
        let palette = Palette::new(grid.strategies.iter().map(|s| s.id.as_str()));
        for row in &grid.rows {
            let chart = ThroughputChart::of_row(&grid, row, &palette);
            let values: Vec<Option<f64>> = chart.bars.iter().map(|b| b.value).collect();
            let ran: Vec<f64> = values.iter().map_while(|v| *v).collect();
            assert!(
                ran.windows(2).all(|w| w[0] >= w[1]),
                "{}: {values:?}",
                row.label
            );
            assert!(
                values[ran.len()..].iter().all(Option::is_none),
                "{}: {values:?}",
                row.label
            );
            for bar in &chart.bars {
                if let (Some((low, high)), Some(v)) = (bar.range, bar.value) {
                    assert!(low <= v && v <= high, "{bar:?}");
                }
            }
        }
    }

    #[test]
    fn a_safe_strategy_that_completed_nothing_gave_up() {
        let bar = |strategy: &str, value: f64, verdict: &'static str| Bar {
            strategy: strategy.to_owned(),
            style: Palette::new(["a", "b"]).style(strategy),
            value: Some(value),
            range: None,
            verdict,
        };
        let chart = ThroughputChart {
            title: "Throughput — server-freeze".to_owned(),
            bars: vec![bar("a", 0.0, "safe"), bar("b", 0.67, "VIOLATED")],
        };
        let svg = super::super::render("t", &chart.title, &chart)
            .expect("the chart draws")
            .svg;
        assert!(svg.contains("gave up (no lock)"), "{svg}");
        assert_eq!(svg.matches("gave up").count(), 1, "only the safe zero bar");
    }
}
