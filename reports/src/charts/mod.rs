//! The charts (plotters), each drawn once per backend: SVG (inlined in the HTML report) and PNG (for
//! Markdown and the README). Text is laid out and, in PNGs, rasterized with the embedded DejaVu Sans
//! (registered through plotters' `ab_glyph` feature), so charts render the same on machines without
//! fontconfig or any installed font.
//!
//! | module | chart |
//! |---|---|
//! | [`throughput`] | throughput per strategy, one chart per row |
//! | [`latency`] | acquire-latency percentile curves, log scales |
//! | [`availability`] | lock availability over time in fault scenarios: a lane per strategy, the fault shaded, grants as ticks, the longest unavailability as a bar |
//! | [`margin`] | renewal margin distribution (TTL left when renewals land) |
//! | [`timeline`] | holder timeline of one key per case, overlaps and fault windows marked |
//! | [`cost`] | cost at each held-lock step, a row per strategy with its values written, rows without a figure named (drawn only when such data is given) |
//! | [`palette`] | one colour and line style per strategy, the same in every chart of a report |
//!
//! Line charts put their legend right of the plot (`draw_legend`); lane and row charts name each row at
//! its left instead. Log axes are labelled at 1, 2, 5 (or fewer) per decade with no minor grid
//! (`log_ticks`).

pub mod availability;
pub mod cost;
pub mod latency;
pub mod margin;
pub mod palette;
pub mod throughput;
pub mod timeline;

use std::sync::OnceLock;

use plotters::coord::Shift;
use plotters::coord::combinators::WithKeyPoints;
use plotters::element::DashedPathElement;
use plotters::prelude::*;
use plotters::style::FontStyle;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use self::palette::{Dash, SeriesStyle};

/// DejaVu Sans (Bitstream Vera license, see `reports/assets/DejaVuSans-LICENSE.txt`).
pub const FONT: &[u8] = include_bytes!("../../assets/DejaVuSans.ttf");

/// The font family every chart uses (registered to [`FONT`]).
pub const FAMILY: &str = "sans-serif";

/// Title size in pixels (plotters' size; SVG text is this ÷ 1.24 in CSS pixels).
pub const TITLE_SIZE: u32 = 24;
/// Axis-title size.
pub const AXIS_SIZE: u32 = 18;
/// Tick and legend label size.
pub const LABEL_SIZE: u32 = 16;
/// Small annotation size.
pub const NOTE_SIZE: u32 = 14;

/// A rendered chart.
#[derive(Clone)]
pub struct Chart {
    /// File stem, unique in a report: `throughput-baseline`.
    pub name: String,
    /// What it shows, one line (alt text and caption).
    pub title: String,
    /// Width in pixels.
    pub width: u32,
    /// Height in pixels.
    pub height: u32,
    /// The SVG document.
    pub svg: String,
    /// The PNG file.
    pub png: Vec<u8>,
}

impl std::fmt::Debug for Chart {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Chart")
            .field("name", &self.name)
            .field("title", &self.title)
            .field("size", &(self.width, self.height))
            .field("svg_bytes", &self.svg.len())
            .field("png_bytes", &self.png.len())
            .finish()
    }
}

/// Why a chart could not be drawn (one line).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("chart {chart}: {message}")]
pub struct ChartError {
    /// The chart's name.
    pub chart: String,
    /// What went wrong.
    pub message: String,
}

/// Something that draws itself on any plotters backend.
pub trait Plot {
    /// Size in pixels.
    fn size(&self) -> (u32, u32);
    /// Draws on `area` (already filled white).
    fn draw<DB: DrawingBackend>(&self, area: &DrawingArea<DB, Shift>) -> Result<(), String>;
}

/// Converts a plotters error to its message.
pub(crate) fn err<E: std::fmt::Display>(e: E) -> String {
    e.to_string()
}

fn register_font() -> Result<(), String> {
    static REGISTERED: OnceLock<bool> = OnceLock::new();
    let ok = *REGISTERED.get_or_init(|| {
        plotters::style::register_font(FAMILY, FontStyle::Normal, FONT).is_ok()
            && plotters::style::register_font(FAMILY, FontStyle::Bold, FONT).is_ok()
    });
    if ok {
        Ok(())
    } else {
        Err("the embedded font does not load".to_owned())
    }
}

/// Draws `plot` as SVG and PNG.
pub fn render(name: &str, title: &str, plot: &impl Plot) -> Result<Chart, ChartError> {
    let fail = |message: String| ChartError {
        chart: name.to_owned(),
        message,
    };
    register_font().map_err(fail)?;
    let (width, height) = plot.size();
    let mut svg = String::new();
    {
        let area = SVGBackend::with_string(&mut svg, (width, height)).into_drawing_area();
        area.fill(&WHITE).map_err(|e| fail(err(e)))?;
        plot.draw(&area).map_err(fail)?;
        area.present().map_err(|e| fail(err(e)))?;
    }
    let mut pixels = vec![255u8; width as usize * height as usize * 3];
    {
        let area = BitMapBackend::with_buffer(&mut pixels, (width, height)).into_drawing_area();
        plot.draw(&area).map_err(fail)?;
        area.present().map_err(|e| fail(err(e)))?;
    }
    let png = encode_png(&pixels, width, height).map_err(fail)?;
    Ok(Chart {
        name: name.to_owned(),
        title: title.to_owned(),
        width,
        height,
        svg,
        png,
    })
}

fn encode_png(rgb: &[u8], width: u32, height: u32) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    let mut encoder = png::Encoder::new(&mut out, width, height);
    encoder.set_color(png::ColorType::Rgb);
    encoder.set_depth(png::BitDepth::Eight);
    encoder.set_compression(png::Compression::Balanced);
    let mut writer = encoder.write_header().map_err(err)?;
    writer.write_image_data(rgb).map_err(err)?;
    writer.finish().map_err(err)?;
    Ok(out)
}

/// A text style of the chart font.
pub(crate) fn text(size: u32) -> TextStyle<'static> {
    (FAMILY, size).into_font().color(&BLACK)
}

/// Violations.
pub const VIOLATED: RGBColor = RGBColor(0xc6, 0x28, 0x28);
/// Safe.
pub const SAFE: RGBColor = RGBColor(0x2e, 0x7d, 0x32);
/// Not run.
pub const MUTED: RGBColor = RGBColor(0x75, 0x75, 0x75);
/// Grid lines and light fills.
pub const LIGHT: RGBColor = RGBColor(0xe0, 0xe0, 0xe0);

/// The width of `s` in pixels at `size` in the chart font (an estimate of 0.6 em per character when
/// the font cannot lay it out).
pub(crate) fn text_width(s: &str, size: u32) -> i32 {
    (FAMILY, size)
        .into_font()
        .box_size(s)
        .map(|(w, _)| w as i32)
        .unwrap_or((s.chars().count() as f64 * size as f64 * 0.6) as i32)
}

/// The widest of `labels` at `size` in the chart font, in pixels (0 without any).
pub(crate) fn widest<S: AsRef<str>>(labels: impl IntoIterator<Item = S>, size: u32) -> i32 {
    labels
        .into_iter()
        .map(|l| text_width(l.as_ref(), size))
        .max()
        .unwrap_or(0)
}

/// `words` broken into lines at most `width` pixels wide at `size` (a word wider than that keeps a
/// line of its own).
pub(crate) fn wrap(words: &str, size: u32, width: i32) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    let mut line = String::new();
    for word in words.split(' ') {
        let longer = if line.is_empty() {
            word.to_owned()
        } else {
            format!("{line} {word}")
        };
        if !line.is_empty() && text_width(&longer, size) > width {
            lines.push(std::mem::replace(&mut line, word.to_owned()));
        } else {
            line = longer;
        }
    }
    if !line.is_empty() {
        lines.push(line);
    }
    lines
}

/// An axis tick: whole numbers without decimals (thousands grouped), others with up to three
/// decimals — more below 0.001, down to the value's first significant digit — and no trailing zeros.
pub(crate) fn tick(v: f64) -> String {
    if v.fract().abs() < 1e-9 {
        return crate::format::group(v.round() as i64);
    }
    let decimals = if v.abs() < 0.001 {
        (-v.abs().log10()).ceil() as usize + 1
    } else {
        3
    };
    let text = format!("{v:.decimals$}");
    text.trim_end_matches('0').trim_end_matches('.').to_owned()
}

/// The labelled values of a log axis over `lo..hi`: 1, 1.5, 2, 3, 5 and 7 times each power of ten
/// within one decade, 1, 2 and 5 within a couple, 1 and 3 over up to five, powers of ten beyond (every other one past ten
/// decades), so labels never crowd.
pub(crate) fn log_ticks(lo: f64, hi: f64) -> Vec<f64> {
    if !(lo > 0.0 && hi > lo && lo.is_finite() && hi.is_finite()) {
        return Vec::new();
    }
    let decades = (hi / lo).log10();
    let (mantissas, step): (&[f64], i32) = if decades <= 1.0 {
        (&[1.0, 1.5, 2.0, 3.0, 5.0, 7.0], 1)
    } else if decades <= 2.5 {
        (&[1.0, 2.0, 5.0], 1)
    } else if decades <= 5.0 {
        (&[1.0, 3.0], 1)
    } else if decades <= 10.0 {
        (&[1.0], 1)
    } else {
        (&[1.0], 2)
    };
    let first = lo.log10().floor() as i32;
    let last = hi.log10().ceil() as i32;
    let mut ticks = Vec::new();
    for exponent in (first..=last).step_by(step as usize) {
        for m in mantissas {
            // Rounded so 0.1 × 3 prints as 0.3, not 0.30000000000000004.
            let value = format!("{:.2e}", m * 10f64.powi(exponent))
                .parse::<f64>()
                .unwrap_or(0.0);
            if value >= lo && value <= hi {
                ticks.push(value);
            }
        }
    }
    ticks
}

/// A log axis over `lo..hi` whose labels and grid lines are [`log_ticks`] only.
pub(crate) fn log_axis(lo: f64, hi: f64) -> WithKeyPoints<LogCoord<f64>> {
    (lo..hi).log_scale().with_key_points(log_ticks(lo, hi))
}

/// Draws one strategy's line in its style (`width` pixels wide).
pub(crate) fn draw_line<DB, X, Y>(
    chart: &mut ChartContext<'_, DB, Cartesian2d<X, Y>>,
    data: Vec<(X::ValueType, Y::ValueType)>,
    style: SeriesStyle,
    width: u32,
) -> Result<(), String>
where
    DB: DrawingBackend,
    X: Ranged,
    Y: Ranged,
    X::ValueType: Clone + 'static,
    Y::ValueType: Clone + 'static,
{
    let shape = style.color.stroke_width(width);
    match dash_pattern(style.dash) {
        None => chart
            .draw_series(LineSeries::new(data, shape))
            .map(|_| ())
            .map_err(err),
        Some((dash, gap)) => chart
            .draw_series(DashedLineSeries::new(data, dash, gap, shape))
            .map(|_| ())
            .map_err(err),
    }
}

/// Dash and gap lengths in pixels; `None` for a solid line.
fn dash_pattern(dash: Dash) -> Option<(u32, u32)> {
    match dash {
        Dash::Solid => None,
        Dash::Dashed => Some((12, 6)),
        Dash::Dotted => Some((3, 5)),
    }
}

/// Gap between the plot and its legend, and around a legend entry's line sample.
const LEGEND_PAD: i32 = 16;
/// Length of a legend entry's line sample.
const LEGEND_SAMPLE: i32 = 30;
/// Height of one legend entry.
pub(crate) const LEGEND_ROW: i32 = 24;

/// The width a legend of `labels` needs right of the plot.
pub(crate) fn legend_width<'a>(labels: impl IntoIterator<Item = &'a str>) -> i32 {
    let widest = labels
        .into_iter()
        .map(|l| text_width(l, LABEL_SIZE))
        .max()
        .unwrap_or(0);
    LEGEND_PAD + LEGEND_SAMPLE + 8 + widest + LEGEND_PAD
}

/// Draws a legend in `area` (the strip right of the plot): one row per entry, a line sample in the
/// entry's style and its label, from `top` down.
pub(crate) fn draw_legend<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    entries: &[(String, SeriesStyle)],
    top: i32,
) -> Result<(), String> {
    for (i, (label, style)) in entries.iter().enumerate() {
        let y = top + LEGEND_ROW / 2 + i as i32 * LEGEND_ROW;
        let (x0, x1) = (LEGEND_PAD, LEGEND_PAD + LEGEND_SAMPLE);
        let shape = style.color.stroke_width(3);
        match dash_pattern(style.dash) {
            None => area.draw(&PathElement::new(vec![(x0, y), (x1, y)], shape)),
            Some((dash, gap)) => area.draw(&DashedPathElement::new(
                vec![(x0, y), (x1, y)],
                dash,
                gap,
                shape,
            )),
        }
        .map_err(err)?;
        area.draw(&Text::new(
            label.clone(),
            (x1 + 8, y),
            text(LABEL_SIZE).pos(Pos::new(HPos::Left, VPos::Center)),
        ))
        .map_err(err)?;
    }
    Ok(())
}

/// Writes the names of a chart's categories (bars, lanes) left of the plot, top to bottom, centred
/// on their slots (slot 0 is the bottom one); `at` gives a slot's pixel position at the plot's left
/// edge.
pub(crate) fn category_labels<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    names: &[String],
    at: impl Fn(i32) -> (i32, i32),
) -> Result<(), String> {
    let n = names.len() as i32;
    for (i, name) in names.iter().enumerate() {
        let (x, y) = at(n - 1 - i as i32);
        area.draw(&Text::new(
            name.clone(),
            (x - 10, y),
            text(LABEL_SIZE).pos(Pos::new(HPos::Right, VPos::Center)),
        ))
        .map_err(err)?;
    }
    Ok(())
}

/// The segmented range of a chart with `n` category slots (at least two: plotters draws a range of
/// one value with no height, so a single category gets an empty slot above it).
pub(crate) fn slots(n: i32) -> std::ops::Range<i32> {
    0..(n - 1).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_ticks_stay_sparse_and_readable() {
        // The cost charts' held-locks axis: 1k..10k, once labelled every thousand.
        let held = log_ticks(1000.0 / 1.5, 10_000.0 * 1.5);
        assert_eq!(held, [1000.0, 2000.0, 5000.0, 10_000.0]);
        let labels: Vec<String> = held.iter().map(|v| tick(*v)).collect();
        assert_eq!(
            labels,
            [
                "1\u{2009}000",
                "2\u{2009}000",
                "5\u{2009}000",
                "10\u{2009}000"
            ]
        );
        assert_eq!(
            log_ticks(0.05, 800.0),
            [0.1, 0.3, 1.0, 3.0, 10.0, 30.0, 100.0, 300.0]
        );
        assert_eq!(log_ticks(1.0, 1e12).len(), 7, "every other power of ten");
        assert_eq!(tick(0.0002), "0.0002");
        let wide = text_width("alpha beta", LABEL_SIZE).max(text_width("gamma delta", LABEL_SIZE));
        assert_eq!(
            wrap("alpha beta gamma delta", LABEL_SIZE, wide),
            ["alpha beta", "gamma delta"]
        );
        assert_eq!(tick(0.3), "0.3");
    }
}
