//! The charts (plotters), each drawn once per backend: SVG (inlined in the HTML report) and PNG (for
//! Markdown and the README). Text is laid out and, in PNGs, rasterized with the embedded DejaVu Sans
//! (registered through plotters' `ab_glyph` feature), so charts render the same on machines without
//! fontconfig or any installed font.
//!
//! | module | chart |
//! |---|---|
//! | [`verdicts`] | verdict matrix: scenario rows × strategy columns |
//! | [`throughput`] | throughput per strategy, one chart per row |
//! | [`latency`] | acquire-latency percentile curves, log scales |
//! | [`margin`] | renewal margin distribution (TTL left when renewals land) |
//! | [`timeline`] | holder timeline of one key per case, overlaps and fault windows marked |
//! | [`cost`] | cost against held locks (drawn only when such data is given) |

pub mod cost;
pub mod latency;
pub mod margin;
pub mod throughput;
pub mod timeline;
pub mod verdicts;

use std::sync::OnceLock;

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::FontStyle;
use plotters::style::text_anchor::{HPos, Pos, VPos};

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

/// Colours of strategies, by column index (no red: red marks violations).
const PALETTE: [RGBColor; 10] = [
    RGBColor(0x4e, 0x79, 0xa7),
    RGBColor(0xf2, 0x8e, 0x2b),
    RGBColor(0x76, 0xb7, 0xb2),
    RGBColor(0x59, 0xa1, 0x4f),
    RGBColor(0xb0, 0x7a, 0xa1),
    RGBColor(0x9c, 0x75, 0x5f),
    RGBColor(0xed, 0xc9, 0x48),
    RGBColor(0x17, 0x3f, 0x5f),
    RGBColor(0xba, 0xb0, 0xac),
    RGBColor(0x6b, 0x8e, 0x23),
];

/// The colour of the strategy in column `index`.
pub fn strategy_color(index: usize) -> RGBColor {
    PALETTE[index % PALETTE.len()]
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

/// An axis tick: whole numbers without decimals (thousands grouped), others with up to three
/// significant decimals and no trailing zeros.
pub(crate) fn tick(v: f64) -> String {
    if v.fract().abs() < 1e-9 {
        return crate::format::group(v.round() as i64);
    }
    let text = format!("{v:.3}");
    text.trim_end_matches('0').trim_end_matches('.').to_owned()
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
