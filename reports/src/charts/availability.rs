//! Lock availability over time for one fault scenario's row: one horizontal lane per strategy, its
//! name at the left, on a shared time axis that starts at each case's first fault (faults aimed at a
//! holder strike at different moments in each case). In each lane, behind, the case's faults shaded;
//! thin ticks where locks were granted (per bin); and a bar in the strategy's colour over the lock's
//! measured unavailability, the longest stretch in which some client waited for a key no client held
//! (in older files, which lack it, the longest stretch without any grant). Lanes run worst first, and
//! each lane's label at the right words its unavailability ([`unavailability`]). A strategy that
//! rightly gave up shows as a long bar here, not as a throughput of 0.

use plotters::coord::Shift;
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::palette::{Palette, SeriesStyle};
use super::{AXIS_SIZE, LABEL_SIZE, LIGHT, Plot, TITLE_SIZE, err, text, widest, wrap};
use crate::grid::{Grid, Row, ran};
use crate::model::{Availability, CaseResult};

/// One strategy's lane.
#[derive(Debug, Clone, PartialEq)]
pub struct Lane {
    /// Strategy id, written left of the lane.
    pub strategy: String,
    /// Its unavailability in full ([`unavailability`]: kind, length, from and to), or that nothing
    /// was measured; the chart writes its length ([`Lane::length`]) and the key its kind.
    pub label: String,
    /// The strategy's look in this report.
    pub style: SeriesStyle,
    /// The case's fault windows, seconds from its first fault.
    pub faults: Vec<(f64, f64)>,
    /// Runs of consecutive bins in which a lock was granted, seconds from the case's first fault.
    pub granted: Vec<(f64, f64)>,
    /// The longest stretch unavailable (the bar, when it has a length), seconds from the case's
    /// first fault; None when the window was empty.
    pub unavailable: Option<(f64, f64)>,
    /// Whether the bar is the lock's measured unavailability (`longest_blocked`); false when it is
    /// the older figure, the longest stretch without any grant.
    pub blocked: bool,
}

/// The chart.
#[derive(Debug, Clone, PartialEq)]
pub struct AvailabilityChart {
    /// Title.
    pub title: String,
    /// The x axis, seconds from the first fault.
    pub x_range: (f64, f64),
    /// The bin width of the grant ticks, ms (the first lane's).
    pub bin_ms: f64,
    /// One lane per strategy that ran, top to bottom: the longest unavailability first.
    pub lanes: Vec<Lane>,
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

/// Runs of consecutive bins with at least one grant, as (from, to) seconds from `origin_ms`.
fn granted(a: &Availability, origin_ms: f64) -> Vec<(f64, f64)> {
    let at = |bin: usize| (bin as f64 * a.bin_ms - origin_ms) / 1e3;
    let mut runs = Vec::new();
    let mut start = None;
    for (i, n) in a.grants.iter().enumerate() {
        match (start, *n > 0) {
            (None, true) => start = Some(i),
            (Some(s), false) => {
                runs.push((at(s), at(i)));
                start = None;
            }
            _ => {}
        }
    }
    if let Some(s) = start {
        runs.push((at(s), at(a.grants.len())));
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

/// The length of `a`'s unavailability, ms (-1 without one), by which lanes are ranked.
fn unavailable_ms(a: &Availability) -> f64 {
    a.unavailable().map_or(-1.0, |g| g.to_ms - g.from_ms)
}

impl AvailabilityChart {
    /// The chart of `row`, each lane in its strategy's look from `palette`; None when no case of the
    /// row recorded grants over time (rows without faults).
    pub fn of_row(grid: &Grid<'_>, row: &Row<'_>, palette: &Palette) -> Option<Self> {
        let mut cases: Vec<(&str, &CaseResult, &Availability)> = grid
            .strategies
            .iter()
            .filter_map(|s| {
                let case = row.case(&s.id).filter(|c| ran(c))?;
                Some((s.id.as_str(), case, case.availability.as_ref()?))
            })
            .collect();
        let bin_ms = cases.first()?.2.bin_ms;
        let span_of = |case: &CaseResult, a: &Availability| {
            let origin = origin_ms(case) / 1e3;
            (-origin, a.grants.len() as f64 * a.bin_ms / 1e3 - origin)
        };
        let x_range = cases
            .iter()
            .map(|(_, c, a)| span_of(c, a))
            .fold((0.0f64, 0.1f64), |(lo, hi), (l, h)| (lo.min(l), hi.max(h)));
        // Worst first, so the lanes read as a ranking of what differs; a stable sort keeps the
        // report's order among equals.
        cases.sort_by(|(_, _, a), (_, _, b)| unavailable_ms(b).total_cmp(&unavailable_ms(a)));
        let lanes = cases
            .iter()
            .map(|(id, case, a)| {
                let origin = origin_ms(case);
                Lane {
                    strategy: (*id).to_owned(),
                    label: unavailability(a, origin)
                        .unwrap_or_else(|| "nothing measured".to_owned()),
                    style: palette.style(id),
                    faults: fault_windows(case, x_range.1),
                    granted: granted(a, origin),
                    unavailable: a
                        .unavailable()
                        .map(|g| ((g.from_ms - origin) / 1e3, (g.to_ms - origin) / 1e3)),
                    blocked: a.longest_blocked.is_some(),
                }
            })
            .collect();
        Some(AvailabilityChart {
            title: format!("Lock availability over time — {}", row.label),
            x_range,
            bin_ms,
            lanes,
        })
    }

    /// The key under the plot: what a bar, a tick and the shading mean, in the words the lanes'
    /// figures call for.
    fn key(&self) -> Vec<(Swatch, String)> {
        let mut key = Vec::new();
        if self.lanes.iter().any(|l| l.blocked) {
            key.push((
                Swatch::Bar,
                "bar, its length at the right: the longest stretch in which a client waited and \
                 no client held the lock"
                    .to_owned(),
            ));
        }
        if self.lanes.iter().any(|l| !l.blocked) {
            key.push((
                Swatch::Bar,
                "bar, its length at the right: the longest stretch in which no lock was granted"
                    .to_owned(),
            ));
        }
        key.push((
            Swatch::Tick,
            format!(
                "tick: a {} bin in which a lock was granted",
                span(self.bin_ms)
            ),
        ));
        key.push((Swatch::Shade, "shaded: the fault".to_owned()));
        key
    }

    /// The key's lines, wrapped to the chart's width, each with its sample on its first line.
    fn key_lines(&self, width: i32) -> Vec<(Option<Swatch>, String)> {
        let mut lines = Vec::new();
        for (swatch, words) in self.key() {
            for (i, line) in wrap(&words, LABEL_SIZE, width - KEY_TEXT - 12)
                .into_iter()
                .enumerate()
            {
                lines.push(((i == 0).then_some(swatch), line));
            }
        }
        lines
    }

    fn name_width(&self) -> i32 {
        widest(self.lanes.iter().map(|l| &l.strategy), LABEL_SIZE) + 20
    }

    fn length_width(&self) -> i32 {
        widest(self.lanes.iter().map(Lane::length), LABEL_SIZE) + 24
    }

    fn width(&self) -> i32 {
        24 + self.name_width() + PLOT_WIDTH + self.length_width()
    }

    fn key_height(&self) -> i32 {
        KEY_ROW * self.key_lines(self.width()).len() as i32 + 12
    }
}

impl Lane {
    /// Written right of the lane: the bar's length, what differs between the lanes (`–` when the
    /// window was empty).
    pub fn length(&self) -> String {
        self.unavailable
            .map_or_else(|| "–".to_owned(), |(from, to)| span((to - from) * 1e3))
    }
}

/// A key entry's sample.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Swatch {
    /// A lane's bar.
    Bar,
    /// A grant tick.
    Tick,
    /// The fault's shading.
    Shade,
}

/// Pixels per lane.
const LANE: i32 = 44;
/// The plot's own width, between the names and the lengths.
const PLOT_WIDTH: i32 = 400;
/// Height of one key line.
const KEY_ROW: i32 = 24;
/// Where the key's words start, right of its samples.
const KEY_TEXT: i32 = 66;
/// The fault's shading: opaque, so the windows of several trials that overlap read as one.
const SHADE: RGBColor = RGBColor(0xe6, 0xe6, 0xe6);
/// The key's sample colour (lanes have their own).
const KEY_INK: RGBColor = RGBColor(0x42, 0x42, 0x42);
/// A lane's bar, in lane heights from its top: (top, bottom).
const BAR: (f64, f64) = (0.16, 0.66);
/// A lane's grant ticks, in lane heights from its top: (top, bottom).
const TICKS: (f64, f64) = (0.76, 0.9);

type LaneChart<'a, DB> = ChartContext<'a, DB, Cartesian2d<RangedCoordf64, RangedCoordf64>>;

impl Plot for AvailabilityChart {
    fn size(&self) -> (u32, u32) {
        let height = 60 + LANE * self.lanes.len().max(1) as i32 + 60 + self.key_height();
        (self.width() as u32, height as u32)
    }

    fn draw<DB: DrawingBackend>(&self, area: &DrawingArea<DB, Shift>) -> Result<(), String> {
        let (width, height) = area.dim_in_pixel();
        let (upper, foot) = area.split_vertically(height as i32 - self.key_height());
        let n = self.lanes.len().max(1) as f64;
        let (x_lo, x_hi) = self.x_range;
        let mut chart = ChartBuilder::on(&upper)
            .caption(&self.title, text(TITLE_SIZE))
            .margin(12)
            .margin_left(4)
            .margin_right(0)
            .x_label_area_size(52)
            .y_label_area_size(self.name_width())
            .right_y_label_area_size(self.length_width())
            .build_cartesian_2d(x_lo..x_hi, 0.0..n)
            .map_err(err)?;
        chart
            .configure_mesh()
            .disable_y_mesh()
            .disable_y_axis()
            .x_desc("time from the fault's start (s)")
            .axis_desc_style(text(AXIS_SIZE))
            .label_style(text(LABEL_SIZE))
            .bold_line_style(LIGHT)
            .light_line_style(WHITE)
            .x_labels(8)
            .x_label_formatter(&|x| super::tick(*x))
            .draw()
            .map_err(err)?;
        self.draw_lanes(&mut chart)?;
        for (i, lane) in self.lanes.iter().enumerate() {
            let middle = lane_top(n, i) - (BAR.0 + BAR.1) / 2.0;
            let (left, y) = chart.backend_coord(&(x_lo, middle));
            let (right, _) = chart.backend_coord(&(x_hi, middle));
            for (label, x, side) in [
                (lane.strategy.clone(), left - 10, HPos::Right),
                (lane.length(), right + 12, HPos::Left),
            ] {
                upper
                    .draw(&Text::new(
                        label,
                        (x, y),
                        text(LABEL_SIZE).pos(Pos::new(side, VPos::Center)),
                    ))
                    .map_err(err)?;
            }
        }
        self.draw_key(&foot, width as i32)
    }
}

/// The y value of the top of lane `i` (0 is the top lane) of `n`.
fn lane_top(n: f64, i: usize) -> f64 {
    n - i as f64
}

impl AvailabilityChart {
    /// Each lane: its faults shaded, a line under it, its grant ticks and its bar.
    fn draw_lanes<DB: DrawingBackend>(&self, chart: &mut LaneChart<'_, DB>) -> Result<(), String> {
        let n = self.lanes.len().max(1) as f64;
        let (x_lo, x_hi) = self.x_range;
        // Three pixels' worth of seconds: a bar of a few ms still shows.
        let least = (x_hi - x_lo) / PLOT_WIDTH as f64 * 3.0;
        let clip = |x: f64| x.clamp(x_lo, x_hi);
        for (i, lane) in self.lanes.iter().enumerate() {
            let top = lane_top(n, i);
            let rect = |from: f64, to: f64, (upper, lower): (f64, f64), style: ShapeStyle| {
                Rectangle::new([(clip(from), top - upper), (clip(to), top - lower)], style)
            };
            chart
                .draw_series(
                    lane.faults
                        .iter()
                        .map(|&(from, to)| rect(from, to, (0.0, 1.0), SHADE.filled())),
                )
                .map_err(err)?;
            chart
                .draw_series(std::iter::once(PathElement::new(
                    vec![(x_lo, top - 1.0), (x_hi, top - 1.0)],
                    LIGHT.stroke_width(1),
                )))
                .map_err(err)?;
            let tick = lane.style.color.filled();
            chart
                .draw_series(
                    lane.granted
                        .iter()
                        .map(|&(from, to)| rect(from, to, TICKS, tick)),
                )
                .map_err(err)?;
            if let Some((from, to)) = lane.unavailable.filter(|(from, to)| to > from) {
                let to = to.max(from + least);
                chart
                    .draw_series([
                        rect(from, to, BAR, lane.style.color.filled()),
                        rect(from, to, BAR, BLACK.mix(0.45).stroke_width(1)),
                    ])
                    .map_err(err)?;
            }
        }
        Ok(())
    }

    /// The key, one entry a line (wrapped to `width`): a sample, then what it means.
    fn draw_key<DB: DrawingBackend>(
        &self,
        foot: &DrawingArea<DB, Shift>,
        width: i32,
    ) -> Result<(), String> {
        for (i, (swatch, words)) in self.key_lines(width).into_iter().enumerate() {
            let y = KEY_ROW / 2 + i as i32 * KEY_ROW;
            let (x0, x1) = (24, KEY_TEXT - 10);
            let sample = match swatch {
                Some(Swatch::Bar) => {
                    Some(Rectangle::new([(x0, y - 7), (x1, y + 7)], KEY_INK.filled()))
                }
                Some(Swatch::Tick) => Some(Rectangle::new(
                    [(x0 + 8, y - 3), (x0 + 24, y + 3)],
                    KEY_INK.filled(),
                )),
                Some(Swatch::Shade) => {
                    Some(Rectangle::new([(x0, y - 10), (x1, y + 10)], SHADE.filled()))
                }
                None => None,
            };
            if let Some(sample) = sample {
                foot.draw(&sample).map_err(err)?;
            }
            foot.draw(&Text::new(
                words,
                (KEY_TEXT, y),
                text(LABEL_SIZE).pos(Pos::new(HPos::Left, VPos::Center)),
            ))
            .map_err(err)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::comparison::Comparison;
    use crate::model::Gap;

    #[test]
    fn the_lanes_rank_the_strategies_by_their_longest_stretch_without_a_grant() {
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
        let gaps: Vec<f64> = chart.lanes.iter().map(|l| gap(&l.strategy)).collect();
        assert_eq!(&gaps[..3], &[500.0, 300.0, 100.0], "{:?}", chart.lanes);
        let first = &chart.lanes[0];
        assert!(first.label.contains("no grant for 500 ms"), "{first:?}");
        assert_eq!(first.unavailable, Some((0.05, 0.55)), "{first:?}");
        assert!(!first.blocked);
    }

    #[test]
    fn bins_with_grants_make_ticks_and_the_gap_is_worded() {
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
        let runs = granted(&a, 50.0);
        let expected = [(-0.05, 0.05), (0.25, 0.45)];
        assert_eq!(runs.len(), expected.len(), "{runs:?}");
        for ((from, to), (want_from, want_to)) in runs.iter().zip(expected) {
            assert!(
                (from - want_from).abs() < 1e-9 && (to - want_to).abs() < 1e-9,
                "{runs:?}"
            );
        }
        assert_eq!(
            unavailability(&a, 90.0).as_deref(),
            Some("no grant for 260 ms (+0.00 to +0.26 s)")
        );
    }
}
