//! The report's two tables as CSV (RFC 4180: fields quoted when they hold a comma, a quote or a line
//! break, quotes doubled, records ended by CRLF), for spreadsheets: `scorecard.csv`, the scorecard's
//! columns and rows as the reports show them, and `verdicts.csv`, the verdict matrix with one row per
//! strategy and, per scenario row, the violated trials, the trials, the 95 % interval of the
//! violation rate and the verdict word. Both come from the data the Markdown and HTML tables are
//! drawn from ([`scorecard::of`], [`content::matrix_cell`]'s facts), never from their text.

use std::path::{Path, PathBuf};

use crate::grid::{Grid, ran, rate_interval, verdict_word, violated_of};
use crate::many_locks;
use crate::report::ReportInput;
use crate::scale::CostSeries;
use crate::scorecard;
use crate::write::{WriteError, write_file};

#[cfg(doc)]
use crate::content;

/// The scorecard's file name.
pub const SCORECARD_FILE: &str = "scorecard.csv";
/// The verdict matrix's file name.
pub const VERDICTS_FILE: &str = "verdicts.csv";

/// One field: as is, or quoted (quotes doubled) when it holds a comma, a quote or a line break.
pub fn field(text: &str) -> String {
    if text.contains([',', '"', '\r', '\n']) {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text.to_owned()
    }
}

/// `records` as CSV text: the fields of each joined by commas, each record ended by CRLF.
pub fn records<R: AsRef<[String]>>(records: &[R]) -> String {
    let mut out = String::new();
    for record in records {
        let fields: Vec<String> = record.as_ref().iter().map(|f| field(f)).collect();
        out.push_str(&fields.join(","));
        out.push_str("\r\n");
    }
    out
}

/// `scorecard.csv`: the header row, then one row per strategy; only the header when the results
/// have no row to measure under.
pub fn scorecard(grid: &Grid<'_>, cost: &[CostSeries]) -> String {
    let (columns, rows) = match scorecard::of(grid, cost) {
        Some(card) => (card.columns, card.rows),
        None => (scorecard::COLUMNS.to_vec(), Vec::new()),
    };
    let mut all = vec![columns.iter().map(|c| (*c).to_owned()).collect::<Vec<_>>()];
    all.extend(rows);
    records(&all)
}

/// `verdicts.csv`: a header row, then one row per strategy; per scenario row (`label` as the report
/// names it) four columns: `label: violated` and `label: trials` (empty for a case without a verdict),
/// `label: 95% interval` (empty without one) and `label: verdict` (`safe`, `VIOLATED`, `skipped`,
/// `not run`, ...); then `many-locks` when there is scale data.
pub fn verdicts(grid: &Grid<'_>, cost: &[CostSeries]) -> String {
    let mut header = vec!["strategy".to_owned()];
    for row in &grid.rows {
        for what in ["violated", "trials", "95% interval", "verdict"] {
            header.push(format!("{}: {what}", row.label));
        }
    }
    if !cost.is_empty() {
        header.push(scorecard::MANY_LOCKS.to_owned());
    }
    let mut all = vec![header];
    for s in &grid.strategies {
        let mut cells = vec![s.id.clone()];
        for row in &grid.rows {
            let case = row.case(&s.id);
            let (violated, trials) = match case.filter(|c| ran(c)).map(violated_of) {
                Some((k, n)) => (k.to_string(), n.to_string()),
                None => (String::new(), String::new()),
            };
            cells.extend([
                violated,
                trials,
                case.and_then(rate_interval).unwrap_or_default(),
                verdict_word(case).to_owned(),
            ]);
        }
        if !cost.is_empty() {
            cells.push(many_locks::cell(cost, s).text);
        }
        all.push(cells);
    }
    records(&all)
}

/// Writes `scorecard.csv` and `verdicts.csv` of `input` into `dir` (which must exist); returns their
/// paths.
pub fn write_csv(dir: &Path, input: ReportInput<'_>) -> Result<Vec<PathBuf>, WriteError> {
    let grid = Grid::new(input.current);
    let mut written = Vec::new();
    for (name, text) in [
        (SCORECARD_FILE, scorecard(&grid, input.cost)),
        (VERDICTS_FILE, verdicts(&grid, input.cost)),
    ] {
        let path = dir.join(name);
        write_file(&path, text.as_bytes())?;
        written.push(path);
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_are_quoted_as_rfc_4180_says() {
        assert_eq!(field("770 (745–795)"), "770 (745–795)");
        assert_eq!(field("a, b"), "\"a, b\"");
        assert_eq!(field("say \"hi\""), "\"say \"\"hi\"\"\"");
        assert_eq!(field("two\nlines"), "\"two\nlines\"");
        assert_eq!(
            records(&[vec!["x".to_owned(), "y,z".to_owned()]]),
            "x,\"y,z\"\r\n"
        );
    }
}
