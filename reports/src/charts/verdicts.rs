//! The verdict matrix: one row per scenario (and lease mode), one column per strategy; each cell says
//! safe or VIOLATED, in how many of its trials (`VIOLATED 1/3`), with the counts of the three measures,
//! in words and colour.

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::{
    LABEL_SIZE, LIGHT, MUTED, NOTE_SIZE, Plot, SAFE, TITLE_SIZE, VIOLATED, err, text, text_width,
};
use crate::grid::{Grid, Violations, data_words, ran, verdict_word, violated_of};

/// One cell.
#[derive(Debug, Clone, PartialEq)]
pub struct Cell {
    /// `safe`, `VIOLATED`, `skipped`, `failed`, `not run`.
    pub verdict: &'static str,
    /// Violated trials / trials (`1/3`) when the case ran, else empty.
    pub trials: String,
    /// Lines under the verdict (violation counts).
    pub details: Vec<String>,
}

/// The matrix.
#[derive(Debug, Clone, PartialEq)]
pub struct VerdictMatrix {
    /// Column headers (strategy ids).
    pub columns: Vec<String>,
    /// Row labels.
    pub rows: Vec<String>,
    /// Cells, row-major.
    pub cells: Vec<Vec<Cell>>,
}

const CELL_W: i32 = 168;
const CELL_H: i32 = 74;
const HEADER_H: i32 = 64;
const TOP: i32 = 56;
const PAD: i32 = 14;

impl VerdictMatrix {
    /// The matrix of `grid`.
    pub fn of(grid: &Grid<'_>) -> Self {
        let columns = grid.strategies.iter().map(|s| s.id.clone()).collect();
        let rows = grid.rows.iter().map(|r| r.label.clone()).collect();
        let cells = grid
            .rows
            .iter()
            .map(|row| {
                grid.strategies
                    .iter()
                    .map(|s| {
                        let case = row.case(&s.id);
                        let verdict = verdict_word(case);
                        let details = match case {
                            Some(c) if verdict == "VIOLATED" => {
                                let v = Violations::of(c);
                                let mut lines = vec![format!(
                                    "{} overlap{}",
                                    v.overlaps,
                                    if v.overlaps == 1 { "" } else { "s" }
                                )];
                                lines[0].push_str(&format!(" · {} lost upd.", v.lost_updates));
                                let mut second = data_words(c).unwrap_or_default();
                                if let Some(n) = v.stale_accepted.filter(|n| *n > 0) {
                                    second.push_str(&format!(" · {n} stale"));
                                }
                                lines.push(second);
                                lines
                            }
                            _ => Vec::new(),
                        };
                        let trials = case
                            .filter(|c| ran(c))
                            .map(|c| match &c.trials {
                                Some(t) if t.stopped_early => format!("at trial {}", t.runs),
                                _ => {
                                    let (violated, runs) = violated_of(c);
                                    format!("{violated}/{runs}")
                                }
                            })
                            .unwrap_or_default();
                        Cell {
                            verdict,
                            trials,
                            details,
                        }
                    })
                    .collect()
            })
            .collect();
        VerdictMatrix {
            columns,
            rows,
            cells,
        }
    }

    fn label_width(&self) -> i32 {
        let longest = self
            .rows
            .iter()
            .map(|r| text_width(r, LABEL_SIZE))
            .max()
            .unwrap_or(80);
        longest + 2 * PAD
    }
}

/// Splits a long id at its last dash so it fits a column: `redis-watchdog-` / `batched`.
fn header_lines(id: &str) -> Vec<String> {
    if id.chars().count() <= 16 {
        return vec![id.to_owned()];
    }
    match id.rfind('-') {
        Some(i) => vec![id[..=i].to_owned(), id[i + 1..].to_owned()],
        None => vec![id.to_owned()],
    }
}

impl Plot for VerdictMatrix {
    fn size(&self) -> (u32, u32) {
        let w = self.label_width() + CELL_W * self.columns.len().max(1) as i32 + PAD;
        let h = TOP + HEADER_H + CELL_H * self.rows.len().max(1) as i32 + 40;
        (w as u32, h as u32)
    }

    fn draw<DB: DrawingBackend>(&self, area: &DrawingArea<DB, Shift>) -> Result<(), String> {
        let left = self.label_width();
        let centered = |size: u32| text(size).pos(Pos::new(HPos::Center, VPos::Center));
        area.draw(&Text::new(
            "Verdicts — scenario × strategy",
            (PAD, 14),
            text(TITLE_SIZE),
        ))
        .map_err(err)?;
        for (j, column) in self.columns.iter().enumerate() {
            let x = left + CELL_W * j as i32 + CELL_W / 2;
            let lines = header_lines(column);
            let first_y = TOP + HEADER_H / 2 - (lines.len() as i32 - 1) * 10;
            for (k, line) in lines.iter().enumerate() {
                area.draw(&Text::new(
                    line.clone(),
                    (x, first_y + 20 * k as i32),
                    centered(LABEL_SIZE),
                ))
                .map_err(err)?;
            }
        }
        for (i, (label, cells)) in self.rows.iter().zip(&self.cells).enumerate() {
            let y0 = TOP + HEADER_H + CELL_H * i as i32;
            area.draw(&Text::new(
                label.clone(),
                (PAD, y0 + CELL_H / 2),
                text(LABEL_SIZE).pos(Pos::new(HPos::Left, VPos::Center)),
            ))
            .map_err(err)?;
            for (j, cell) in cells.iter().enumerate() {
                let x0 = left + CELL_W * j as i32;
                let (fill, ink) = match cell.verdict {
                    "safe" => (RGBColor(0xe8, 0xf5, 0xe9), SAFE),
                    "VIOLATED" => (RGBColor(0xff, 0xeb, 0xee), VIOLATED),
                    _ => (RGBColor(0xf5, 0xf5, 0xf5), MUTED),
                };
                let corners = [(x0 + 3, y0 + 3), (x0 + CELL_W - 3, y0 + CELL_H - 3)];
                area.draw(&Rectangle::new(corners, fill.filled()))
                    .map_err(err)?;
                area.draw(&Rectangle::new(corners, ink.stroke_width(1)))
                    .map_err(err)?;
                let lines = 1 + cell.details.len() as i32;
                let mut y = y0 + CELL_H / 2 - (lines - 1) * 9;
                let x = x0 + CELL_W / 2;
                area.draw(&Text::new(
                    format!("{} {}", cell.verdict, cell.trials)
                        .trim_end()
                        .to_owned(),
                    (x, y),
                    centered(LABEL_SIZE).color(&ink),
                ))
                .map_err(err)?;
                for detail in &cell.details {
                    y += 19;
                    area.draw(&Text::new(
                        detail.clone(),
                        (x, y),
                        centered(NOTE_SIZE).color(&ink),
                    ))
                    .map_err(err)?;
                }
            }
            area.draw(&PathElement::new(
                vec![
                    (PAD, y0 + CELL_H),
                    (left + CELL_W * self.columns.len() as i32, y0 + CELL_H),
                ],
                LIGHT.stroke_width(1),
            ))
            .map_err(err)?;
        }
        let (_, h) = self.size();
        area.draw(&Text::new(
            "k/n = violated trials / trials · overlaps = overlapping holder pairs (all trials) · lost upd. = lost updates · stale = stale writes accepted despite fencing",
            (PAD, h as i32 - 22),
            text(NOTE_SIZE).color(&MUTED),
        ))
        .map_err(err)?;
        Ok(())
    }
}
