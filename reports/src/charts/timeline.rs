//! The holder timeline of one case: the sampled key's believed-held intervals as bars, one lane per
//! client; the parts where two clients believed they held the key at once in red; fault windows shaded
//! behind; the end of the warm-up marked.

use std::ops::Range;

use plotters::coord::Shift;
use plotters::coord::ranged1d::SegmentedCoord;
use plotters::coord::types::{RangedCoordf64, RangedCoordi32};
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::{AXIS_SIZE, LABEL_SIZE, MUTED, NOTE_SIZE, Plot, TITLE_SIZE, VIOLATED, err, text};
use crate::model::{CaseResult, HeldInterval, HolderSample};

/// A fault window as the timeline shades it (ms since the case start).
#[derive(Debug, Clone, PartialEq)]
pub struct Shade {
    /// Start.
    pub start_ms: f64,
    /// End (the end of the view when the fault is permanent).
    pub stop_ms: Option<f64>,
    /// Label: `kind target`.
    pub label: String,
}

/// The chart.
#[derive(Debug, Clone, PartialEq)]
pub struct TimelineChart {
    /// Title.
    pub title: String,
    /// The sample.
    pub sample: HolderSample,
    /// Fault windows of the case.
    pub faults: Vec<Shade>,
    /// End of the warm-up (ms since the case start).
    pub warmup_ms: f64,
}

impl TimelineChart {
    /// The timeline of `case` in the row labelled `row`; None when the case has no sample.
    pub fn of_case(case: &CaseResult, row: &str) -> Option<Self> {
        let sample = case.holder_sample.clone()?;
        if sample.intervals.is_empty() {
            return None;
        }
        let anchor = match sample.anchor.as_str() {
            "first_overlap" => "around the first overlap",
            _ => "from the start",
        };
        Some(TimelineChart {
            title: format!(
                "{} · {row} — key {}, {} holds {anchor}",
                case.strategy,
                sample.key,
                sample.intervals.len()
            ),
            faults: case
                .faults
                .iter()
                .map(|f| Shade {
                    start_ms: f.start_ms,
                    stop_ms: f.stop_ms,
                    label: match f.recovery_ms {
                        Some(r) => format!("{} {} · lock back after {r:.0} ms", f.kind, f.target),
                        None => format!("{} {}", f.kind, f.target),
                    },
                })
                .collect(),
            warmup_ms: case.window.warmup_ms,
            sample,
        })
    }

    fn lanes(&self) -> Vec<u32> {
        let mut clients: Vec<u32> = self.sample.intervals.iter().map(|i| i.client).collect();
        clients.sort_unstable();
        clients.dedup();
        clients
    }

    fn span(&self) -> (f64, f64) {
        let start = self
            .sample
            .intervals
            .iter()
            .map(|i| i.start_ms)
            .fold(f64::INFINITY, f64::min);
        let end = self
            .sample
            .intervals
            .iter()
            .map(|i| i.end_ms)
            .fold(0.0f64, f64::max);
        let pad = ((end - start) * 0.03).max(1.0);
        ((start - pad).max(0.0), end + pad)
    }
}

/// The intersections of intervals of different clients: (lane client, start, end) for both sides.
fn overlaps(intervals: &[HeldInterval]) -> Vec<(u32, f64, f64)> {
    let mut out = Vec::new();
    for (i, a) in intervals.iter().enumerate() {
        for b in &intervals[i + 1..] {
            if a.client == b.client {
                continue;
            }
            let (s, e) = (a.start_ms.max(b.start_ms), a.end_ms.min(b.end_ms));
            if e > s {
                out.push((a.client, s, e));
                out.push((b.client, s, e));
            }
        }
    }
    out
}

/// The plot's coordinates: ms across, one segment per lane (and the fault labels' slot) up.
type LaneChart<'a, DB> =
    ChartContext<'a, DB, Cartesian2d<RangedCoordf64, SegmentedCoord<RangedCoordi32>>>;

// Fixed colours (not the strategy's): the legend must mean the same in every timeline.
/// A hold that ended in a release.
const HELD: RGBColor = RGBColor(0x4e, 0x79, 0xa7);
/// A hold that ended with `lost()`.
const LOST: RGBColor = RGBColor(0xf2, 0x8e, 0x2b);
/// A fault window or moment.
const FAULT: RGBColor = RGBColor(0xff, 0xd5, 0x4f);

/// The part of the timeline in view: ms across, and the lanes' full height.
struct View {
    x0: f64,
    x1: f64,
    bottom: SegmentValue<i32>,
    top: SegmentValue<i32>,
}

impl Plot for TimelineChart {
    fn size(&self) -> (u32, u32) {
        (960, 200 + 30 * self.lanes().len().max(1) as u32)
    }

    fn draw<DB: DrawingBackend>(&self, area: &DrawingArea<DB, Shift>) -> Result<(), String> {
        let lanes = self.lanes();
        let (x0, x1) = self.span();
        // A free slot on top for the fault labels when a fault shows.
        let shown = self
            .faults
            .iter()
            .any(|f| f.start_ms <= x1 && f.stop_ms.is_none_or(|stop| stop >= x0));
        let range = super::slots(lanes.len().max(1) as i32 + i32::from(shown));
        let (body, legend) = area.split_vertically(area.dim_in_pixel().1 - 40);
        let mut chart = self.axes(&body, &lanes, x0..x1, range.clone())?;
        let view = View {
            x0,
            x1,
            bottom: SegmentValue::Exact(0),
            top: SegmentValue::Exact(range.end + 1),
        };
        for fault in &self.faults {
            draw_fault(&mut chart, fault, &view)?;
        }
        self.draw_warmup(&mut chart, &view)?;
        self.draw_holds(&mut chart, &lanes, &view)?;
        draw_key(&legend)
    }
}

impl TimelineChart {
    /// The title, the ms axis and one named lane per client.
    fn axes<'a, DB: DrawingBackend>(
        &self,
        body: &'a DrawingArea<DB, Shift>,
        lanes: &[u32],
        x: Range<f64>,
        slots: Range<i32>,
    ) -> Result<LaneChart<'a, DB>, String> {
        let x0 = x.start;
        let mut chart = ChartBuilder::on(body)
            .caption(&self.title, text(TITLE_SIZE - 4))
            .margin(12)
            .margin_right(24)
            .x_label_area_size(52)
            .y_label_area_size(96)
            .build_cartesian_2d(x, slots.into_segmented())
            .map_err(err)?;
        chart
            .configure_mesh()
            .disable_y_mesh()
            .disable_y_axis()
            .light_line_style(WHITE)
            .x_desc("ms since the case started")
            .axis_desc_style(text(AXIS_SIZE))
            .label_style(text(LABEL_SIZE))
            .x_label_formatter(&|v| format!("{v:.0}"))
            .draw()
            .map_err(err)?;
        let names: Vec<String> = lanes.iter().map(|c| format!("client {c}")).collect();
        super::category_labels(body, &names, |slot| {
            chart.backend_coord(&(x0, SegmentValue::CenterOf(slot)))
        })?;
        Ok(chart)
    }

    /// The end of the warm-up, when it is in view: a muted line, marked "measured →".
    fn draw_warmup<DB: DrawingBackend>(
        &self,
        chart: &mut LaneChart<'_, DB>,
        view: &View,
    ) -> Result<(), String> {
        if self.warmup_ms <= view.x0 || self.warmup_ms >= view.x1 {
            return Ok(());
        }
        chart
            .draw_series(std::iter::once(PathElement::new(
                vec![
                    (self.warmup_ms, view.bottom.clone()),
                    (self.warmup_ms, view.top.clone()),
                ],
                MUTED.stroke_width(1),
            )))
            .map_err(err)?;
        chart
            .draw_series(std::iter::once(Text::new(
                " measured →",
                (self.warmup_ms, view.bottom.clone()),
                text(NOTE_SIZE)
                    .color(&MUTED)
                    .pos(Pos::new(HPos::Left, VPos::Bottom)),
            )))
            .map_err(err)?;
        Ok(())
    }

    /// Each hold as a bar in its client's lane, coloured by how it ended; over them, in red, the
    /// parts where two clients held at once.
    fn draw_holds<DB: DrawingBackend>(
        &self,
        chart: &mut LaneChart<'_, DB>,
        lanes: &[u32],
        view: &View,
    ) -> Result<(), String> {
        let n = lanes.len().max(1) as i32;
        let slot = |client: u32| {
            let k = lanes.iter().position(|c| *c == client).unwrap_or(0) as i32;
            n - 1 - k
        };
        let min_width = (view.x1 - view.x0) * 0.002;
        for i in &self.sample.intervals {
            let color = match i.ended_by.as_str() {
                "lost" => LOST,
                "stopped" => MUTED,
                _ => HELD,
            };
            let end = i.end_ms.max(i.start_ms + min_width);
            let rect = bar(slot(i.client), i.start_ms, end, color, 7);
            chart.draw_series(std::iter::once(rect)).map_err(err)?;
        }
        for (client, s, e) in overlaps(&self.sample.intervals) {
            let rect = bar(slot(client), s, e.max(s + min_width), VIOLATED, 3);
            chart.draw_series(std::iter::once(rect)).map_err(err)?;
        }
        Ok(())
    }
}

/// A bar in `lane` from `start` to `end` ms, `inset` pixels in from the lane's top and bottom.
fn bar(
    lane: i32,
    start: f64,
    end: f64,
    color: RGBColor,
    inset: u32,
) -> Rectangle<(f64, SegmentValue<i32>)> {
    let mut rect = Rectangle::new(
        [
            (start, SegmentValue::Exact(lane)),
            (end, SegmentValue::Exact(lane + 1)),
        ],
        color.filled(),
    );
    rect.set_margin(inset, inset, 0, 0);
    rect
}

/// A fault in view: a window shaded, a moment (a kill, a dropped connection) as a line; labelled
/// at the top.
fn draw_fault<DB: DrawingBackend>(
    chart: &mut LaneChart<'_, DB>,
    fault: &Shade,
    view: &View,
) -> Result<(), String> {
    let (x0, x1) = (view.x0, view.x1);
    if fault.start_ms > x1 || fault.stop_ms.is_some_and(|stop| stop < x0) {
        return Ok(());
    }
    let start = fault.start_ms.max(x0);
    let (bottom, top) = (view.bottom.clone(), view.top.clone());
    match fault.stop_ms {
        Some(stop) => chart
            .draw_series(std::iter::once(Rectangle::new(
                [(start, bottom), (stop.min(x1), top.clone())],
                FAULT.mix(0.35).filled(),
            )))
            .map_err(err)?,
        None => chart
            .draw_series(std::iter::once(PathElement::new(
                vec![(start, bottom), (start, top.clone())],
                FAULT.stroke_width(4),
            )))
            .map_err(err)?,
    };
    // A fault in the right half of the view is labelled leftwards from its start, so the note is
    // not cut off at the chart's right edge.
    let leftwards = start > x0 + (x1 - x0) / 2.0;
    chart
        .draw_series(std::iter::once(Text::new(
            fault.label.clone(),
            (start, top),
            text(NOTE_SIZE).pos(Pos::new(
                if leftwards { HPos::Right } else { HPos::Left },
                VPos::Top,
            )),
        )))
        .map_err(err)?;
    Ok(())
}

/// The key under the plot: what each colour means.
fn draw_key<DB: DrawingBackend>(legend: &DrawingArea<DB, Shift>) -> Result<(), String> {
    let mut x = 24;
    for (color, label) in [
        (HELD, "held, then released"),
        (LOST, "held until lost()"),
        (MUTED, "held at case end"),
        (VIOLATED, "two holders at once"),
        (FAULT, "fault"),
    ] {
        legend
            .draw(&Rectangle::new([(x, 10), (x + 18, 26)], color.filled()))
            .map_err(err)?;
        legend
            .draw(&Text::new(
                label,
                (x + 24, 18),
                text(NOTE_SIZE).pos(Pos::new(HPos::Left, VPos::Center)),
            ))
            .map_err(err)?;
        x += 34 + super::text_width(label, NOTE_SIZE);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn held(client: u32, start_ms: f64, end_ms: f64) -> HeldInterval {
        HeldInterval {
            client,
            start_ms,
            end_ms,
            ended_by: "released".into(),
        }
    }

    #[test]
    fn overlaps_are_marked_on_both_lanes() {
        let found = overlaps(&[held(0, 0.0, 10.0), held(1, 5.0, 20.0), held(0, 12.0, 15.0)]);
        assert_eq!(
            found,
            vec![
                (0, 5.0, 10.0),
                (1, 5.0, 10.0),
                (1, 12.0, 15.0),
                (0, 12.0, 15.0)
            ]
        );
    }

    /// A fault late in the view is labelled leftwards (once its note ran off the right edge).
    #[test]
    fn a_late_fault_is_labelled_leftwards() {
        let chart = TimelineChart {
            title: "t".into(),
            sample: HolderSample {
                key: 0,
                anchor: "from_start".into(),
                intervals: vec![held(0, 0.0, 400.0), held(1, 400.0, 1000.0)],
            },
            faults: vec![
                Shade {
                    start_ms: 100.0,
                    stop_ms: Some(200.0),
                    label: "early-fault".into(),
                },
                Shade {
                    start_ms: 950.0,
                    stop_ms: None,
                    label: "late-fault redis-0".into(),
                },
            ],
            warmup_ms: 0.0,
        };
        let svg = super::super::render("t", &chart.title, &chart)
            .expect("the chart draws")
            .svg;
        let tag_of = |label: &str| {
            let at = svg.find(label).expect("the label is drawn");
            let open = svg[..at].rfind("<text").expect("in a text element");
            svg[open..at].to_owned()
        };
        assert!(
            tag_of("late-fault").contains("text-anchor=\"end\""),
            "{svg}"
        );
        assert!(!tag_of("early-fault").contains("text-anchor=\"end\""));
    }
}
