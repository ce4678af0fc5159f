//! One look per strategy, the same in every chart of a report: a colour from a palette of
//! [`COLORS`] hues chosen to stay distinct for colour-blind readers (no red, which marks violations;
//! no grey, which marks cases that did not run) and, for strategies beyond it, the colours again
//! with dashed, then dotted lines. The look follows the strategy's place in the report's strategy
//! list, never its place in one chart.

use plotters::prelude::*;

/// The palette, in assignment order: Okabe and Ito's colours for readers with a colour-vision
/// deficiency (their vermillion left out, too near the violation red), then Paul Tol's muted
/// scheme's darker and lighter hues that stay apart from them, then black.
pub const COLORS: [RGBColor; 12] = [
    RGBColor(0x00, 0x72, 0xb2), // blue
    RGBColor(0xe6, 0x9f, 0x00), // orange
    RGBColor(0x00, 0x9e, 0x73), // bluish green
    RGBColor(0xcc, 0x79, 0xa7), // reddish purple
    RGBColor(0x56, 0xb4, 0xe9), // sky blue
    RGBColor(0x33, 0x22, 0x88), // indigo
    RGBColor(0x99, 0x99, 0x33), // olive
    RGBColor(0x44, 0xaa, 0x99), // teal
    RGBColor(0xdd, 0xcc, 0x77), // sand
    RGBColor(0x11, 0x77, 0x33), // green
    RGBColor(0xaa, 0x44, 0x99), // purple
    RGBColor(0x00, 0x00, 0x00), // black
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
