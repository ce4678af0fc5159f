//! Acquire latency over time for one fault scenario's row: per strategy, the longest wait of the
//! acquires granted in each time bin (log scale), on a time axis that starts at each case's first fault
//! (faults aimed at a holder strike at different moments in each case), with the fault shaded and a gap
//! in the line where no lock was granted. Each legend entry carries the measured unavailability: the
//! longest stretch of the measured window without any grant. A strategy that rightly gave up shows as a
//! long gap here, not as a throughput of 0.

use plotters::coord::Shift;
use plotters::prelude::*;

use super::palette::{Palette, SeriesStyle};
use super::{AXIS_SIZE, LABEL_SIZE, LEGEND_ROW, LIGHT, Plot, TITLE_SIZE, err, text};
use crate::grid::{Grid, Row, ran};
use crate::model::{Availability, CaseResult};

/// One strategy's series.
#[derive(Debug, Clone, PartialEq)]
pub struct WaitSeries {
    /// Strategy id.
    pub strategy: String,
    /// Legend text: the strategy and its longest stretch without a grant.
    pub label: String,
    /// The strategy's look in this report.
    pub style: SeriesStyle,
    /// Runs of (seconds from the case's first fault, longest wait in ms) over consecutive bins with
    /// grants.
    pub runs: Vec<Vec<(f64, f64)>>,
}

/// The chart.
#[derive(Debug, Clone, PartialEq)]
pub struct AvailabilityChart {
    /// Title.
    pub title: String,
    /// Fault windows to shade, seconds from the first fault (of the row's first case).
    pub faults: Vec<(f64, f64)>,
    /// The x axis, seconds from the first fault.
    pub x_range: (f64, f64),
    /// One series per strategy that ran, the longest unavailability first.
    pub series: Vec<WaitSeries>,
}

/// The longest stretch without a grant, as the legend words it: its length, and where it lay from
/// `origin_ms` (the first fault).
pub fn unavailability(a: &Availability, origin_ms: f64) -> Option<String> {
    let gap = a.unavailable()?;
    Some(format!(
        "{} for {} ({} to {} s)",
        if a.longest_blocked.is_some() {
            "unavailable"
        } else {
            "no grant"
        },
        span(gap.to_ms - gap.from_ms),
        secs(gap.from_ms - origin_ms),
        secs(gap.to_ms - origin_ms)
    ))
}

fn span(ms: f64) -> String {
    if ms < 1e3 {
        format!("{ms:.0} ms")
    } else {
        format!("{:.2} s", ms / 1e3)
    }
}

fn secs(ms: f64) -> String {
    let s = ms / 1e3;
    // -0.001 s prints as +0.00, not -0.00.
    format!("{:+.2}", if s.abs() < 0.005 { 0.0 } else { s })
}

fn runs(a: &Availability, origin_ms: f64) -> Vec<Vec<(f64, f64)>> {
    let mut runs = Vec::new();
    let mut run = Vec::new();
    for (i, wait) in a.max_wait_ms.iter().enumerate() {
        let mid_s = ((i as f64 + 0.5) * a.bin_ms - origin_ms) / 1e3;
        match wait {
            Some(w) => run.push((mid_s, *w)),
            None if !run.is_empty() => runs.push(std::mem::take(&mut run)),
            None => {}
        }
    }
    if !run.is_empty() {
        runs.push(run);
    }
    runs
}

/// The first fault's start, ms from the case start.
fn origin_ms(case: &CaseResult) -> f64 {
    case.faults.first().map_or(0.0, |f| f.start_ms)
}

fn fault_windows(case: &CaseResult, end_s: f64) -> Vec<(f64, f64)> {
    let origin = origin_ms(case);
    case.faults
        .iter()
        .map(|f| {
            let from = (f.start_ms - origin) / 1e3;
            let to = f.stop_ms.map_or(end_s, |t| (t - origin) / 1e3);
            (from, to.max(from + 0.02))
        })
        .collect()
}

impl AvailabilityChart {
    /// The chart of `row`, each series in its strategy's look from `palette`; None when no case of
    /// the row recorded grants over time (rows without faults).
    pub fn of_row(grid: &Grid<'_>, row: &Row<'_>, palette: &Palette) -> Option<Self> {
        let cases: Vec<(&str, &CaseResult, &Availability)> = grid
            .strategies
            .iter()
            .filter_map(|s| {
                let case = row.case(&s.id).filter(|c| ran(c))?;
                Some((s.id.as_str(), case, case.availability.as_ref()?))
            })
            .collect();
        let first: &CaseResult = cases.first()?.1;
        let span_of = |case: &CaseResult, a: &Availability| {
            let origin = origin_ms(case) / 1e3;
            (-origin, a.grants.len() as f64 * a.bin_ms / 1e3 - origin)
        };
        let x_range = cases
            .iter()
            .map(|(_, c, a)| span_of(c, a))
            .fold((0.0f64, 0.1f64), |(lo, hi), (l, h)| (lo.min(l), hi.max(h)));
        // Longest unavailability first, so the legend reads as a ranking of what differs.
        let mut cases = cases;
        cases.sort_by(|(_, _, a), (_, _, b)| {
            let gap = |a: &Availability| a.unavailable().map_or(-1.0, |g| g.to_ms - g.from_ms);
            gap(b).total_cmp(&gap(a))
        });
        let series = cases
            .iter()
            .map(|(id, case, a)| WaitSeries {
                strategy: (*id).to_owned(),
                label: match unavailability(a, origin_ms(case)) {
                    Some(gap) => format!("{id}: {gap}"),
                    None => (*id).to_owned(),
                },
                style: palette.style(id),
                runs: runs(a, origin_ms(case)),
            })
            .collect();
        Some(AvailabilityChart {
            title: format!("Acquire latency over time — {}", row.label),
            faults: fault_windows(first, x_range.1),
            x_range,
            series,
        })
    }

    fn legend_width(&self) -> i32 {
        super::legend_width(self.series.iter().map(|s| s.label.as_str()))
    }
}

impl Plot for AvailabilityChart {
    fn size(&self) -> (u32, u32) {
        let legend_height = 120 + LEGEND_ROW * self.series.len() as i32;
        (
            (760 + self.legend_width()) as u32,
            legend_height.max(520) as u32,
        )
    }

    fn draw<DB: DrawingBackend>(&self, area: &DrawingArea<DB, Shift>) -> Result<(), String> {
        let waits = self.series.iter().flat_map(|s| s.runs.iter().flatten());
        let (mut lo, mut hi) = (f64::INFINITY, 0.0f64);
        for &(_, w) in waits {
            lo = lo.min(w.max(0.01));
            hi = hi.max(w);
        }
        if !lo.is_finite() || hi <= 0.0 {
            (lo, hi) = (0.1, 1.0);
        }
        let (y_lo, y_hi) = (lo / 1.6, hi * 2.0);
        let (x_lo, x_hi) = self.x_range;
        let body = area.titled(&self.title, text(TITLE_SIZE)).map_err(err)?;
        let (width, _) = body.dim_in_pixel();
        let (plot_area, legend_area) = body.split_horizontally(width as i32 - self.legend_width());
        let mut chart = ChartBuilder::on(&plot_area)
            .margin(14)
            .margin_right(24)
            .x_label_area_size(56)
            .y_label_area_size(84)
            .build_cartesian_2d(x_lo..x_hi, super::log_axis(y_lo, y_hi))
            .map_err(err)?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_desc("time from the fault's start (s); shaded: the fault")
            .y_desc("longest wait of a granted acquire (ms, log)")
            .axis_desc_style(text(AXIS_SIZE))
            .label_style(text(LABEL_SIZE))
            .x_label_formatter(&|x| super::tick(*x))
            .y_label_formatter(&|y| super::tick(*y))
            .draw()
            .map_err(err)?;
        chart
            .draw_series(self.faults.iter().map(|&(from, to)| {
                Rectangle::new(
                    [(from, y_lo), (to.min(x_hi), y_hi)],
                    LIGHT.mix(0.6).filled(),
                )
            }))
            .map_err(err)?;
        for series in &self.series {
            for run in &series.runs {
                super::draw_line(&mut chart, run.clone(), series.style, 2)?;
                chart
                    .draw_series(run.iter().map(|&(x, y)| {
                        Circle::new((x, y.max(y_lo)), 3, series.style.color.filled())
                    }))
                    .map_err(err)?;
            }
        }
        let entries: Vec<(String, SeriesStyle)> = self
            .series
            .iter()
            .map(|s| (s.label.clone(), s.style))
            .collect();
        super::draw_legend(&legend_area, &entries, 14)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::comparison::Comparison;
    use crate::model::Gap;

    #[test]
    fn the_legend_ranks_the_strategies_by_their_longest_stretch_without_a_grant() {
        let mut c = Comparison::read(include_str!("../../tests/fixtures/compare-quick.json"))
            .expect("fixture");
        // The first scenario's cases, in report order, with gaps that are not in order.
        let cases = &mut c.runs[0].results.cases;
        assert!(cases.len() >= 3, "{}", cases.len());
        for (case, gap_ms) in cases.iter_mut().zip([100.0, 500.0, 300.0]) {
            case.availability = Some(Availability {
                bin_ms: 100.0,
                grants: vec![1, 0, 1],
                max_wait_ms: vec![Some(1.0), None, Some(1.0)],
                longest_gap: Some(Gap {
                    from_ms: 50.0,
                    to_ms: 50.0 + gap_ms,
                }),
                longest_blocked: None,
            });
        }
        let grid = Grid::new(&c);
        let palette = Palette::new(grid.strategies.iter().map(|s| s.id.as_str()));
        let row = &grid.rows[0];
        let chart = AvailabilityChart::of_row(&grid, row, &palette).expect("a chart");
        let gap = |id: &str| {
            row.case(id)
                .and_then(|c| c.availability.as_ref()?.unavailable())
                .map_or(-1.0, |g| g.to_ms - g.from_ms)
        };
        let gaps: Vec<f64> = chart.series.iter().map(|s| gap(&s.strategy)).collect();
        assert_eq!(&gaps[..3], &[500.0, 300.0, 100.0], "{:?}", chart.series);
        assert!(
            chart.series[0].label.contains("no grant for 500 ms"),
            "{:?}",
            chart.series[0]
        );
    }

    #[test]
    fn bins_without_grants_break_the_line_and_the_gap_is_worded() {
        let a = Availability {
            bin_ms: 100.0,
            grants: vec![2, 0, 0, 1, 1],
            max_wait_ms: vec![Some(5.0), None, None, Some(900.0), Some(2.0)],
            longest_gap: Some(Gap {
                from_ms: 90.0,
                to_ms: 350.0,
            }),
            longest_blocked: None,
        };
        assert_eq!(
            runs(&a, 50.0),
            vec![vec![(0.0, 5.0)], vec![(0.3, 900.0), (0.4, 2.0)]]
        );
        assert_eq!(
            unavailability(&a, 90.0).as_deref(),
            Some("no grant for 260 ms (+0.00 to +0.26 s)")
        );
    }
}
