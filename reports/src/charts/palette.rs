//! One look per strategy, the same in every chart of a report: a colour from a palette of
//! [`COLORS`] distinct hues (no red, which marks violations; no grey, which marks cases that did not
//! run) and, for strategies beyond it, the colours again with dashed, then dotted lines. The look
//! follows the strategy's place in the report's strategy list, never its place in one chart.

use plotters::prelude::*;

/// The palette, in assignment order: strong hues first, then darker and lighter ones that stay
/// apart from them.
pub const COLORS: [RGBColor; 14] = [
    RGBColor(0x1f, 0x77, 0xb4), // blue
    RGBColor(0xff, 0x7f, 0x0e), // orange
    RGBColor(0x2c, 0xa0, 0x2c), // green
    RGBColor(0x94, 0x67, 0xbd), // purple
    RGBColor(0x8c, 0x56, 0x4b), // brown
    RGBColor(0xe3, 0x77, 0xc2), // pink
    RGBColor(0xbc, 0xbd, 0x22), // olive
    RGBColor(0x17, 0xbe, 0xcf), // cyan
    RGBColor(0x0b, 0x2e, 0x6f), // navy
    RGBColor(0x98, 0xdf, 0x8a), // light green
    RGBColor(0x00, 0x6d, 0x5b), // dark teal
    RGBColor(0xae, 0xc7, 0xe8), // light blue
    RGBColor(0xff, 0xbb, 0x78), // light orange
    RGBColor(0x4a, 0x14, 0x8c), // indigo
];

/// How a strategy's line is drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dash {
    /// A solid line (the first [`COLORS`] strategies).
    Solid,
    /// Long dashes (the next ones).
    Dashed,
    /// Short dots (after those).
    Dotted,
}

/// A strategy's look: its colour and line style.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SeriesStyle {
    /// Line, bar and marker colour.
    pub color: RGBColor,
    /// Line style.
    pub dash: Dash,
}

/// The look of the strategy at `index` of a report's strategy list.
pub fn style_at(index: usize) -> SeriesStyle {
    let dashes = [Dash::Solid, Dash::Dashed, Dash::Dotted];
    SeriesStyle {
        color: COLORS[index % COLORS.len()],
        dash: dashes[(index / COLORS.len()) % dashes.len()],
    }
}

/// The strategies of one report, in order, each with its look.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Palette {
    ids: Vec<String>,
}

impl Palette {
    /// A palette over `ids` in order (repeats ignored).
    pub fn new<'a>(ids: impl IntoIterator<Item = &'a str>) -> Self {
        let mut palette = Palette::default();
        for id in ids {
            if !palette.ids.iter().any(|known| known == id) {
                palette.ids.push(id.to_owned());
            }
        }
        palette
    }

    /// The look of `id`: by its place in the list (an id not in it gets the look after the
    /// list's last, so it is at least told apart from every listed one up to the palette's size).
    pub fn style(&self, id: &str) -> SeriesStyle {
        style_at(
            self.ids
                .iter()
                .position(|known| known == id)
                .unwrap_or(self.ids.len()),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_strategy_of_a_large_report_looks_different() {
        let ids: Vec<String> = (0..3 * COLORS.len()).map(|i| format!("s{i}")).collect();
        let palette = Palette::new(ids.iter().map(String::as_str));
        let styles: Vec<SeriesStyle> = ids.iter().map(|id| palette.style(id)).collect();
        for (i, a) in styles.iter().enumerate() {
            for b in &styles[i + 1..] {
                assert_ne!(a, b);
            }
        }
        assert_eq!(palette.style("s0").dash, Dash::Solid);
        assert_eq!(
            palette.style(&format!("s{}", COLORS.len())).dash,
            Dash::Dashed
        );
    }

    #[test]
    fn the_palette_has_no_violation_red_and_no_not_run_grey() {
        for (i, a) in COLORS.iter().enumerate() {
            assert_ne!(*a, super::super::VIOLATED);
            assert_ne!(*a, super::super::MUTED);
            for b in &COLORS[i + 1..] {
                let distance = [
                    a.0 as i32 - b.0 as i32,
                    a.1 as i32 - b.1 as i32,
                    a.2 as i32 - b.2 as i32,
                ]
                .iter()
                .map(|d| d * d)
                .sum::<i32>();
                assert!(distance > 60 * 60, "{a:?} and {b:?} are too alike");
            }
        }
    }
}
