//! The Markdown report, for pasting into a design review: verdict matrix, "which strategy when",
//! headline numbers per scenario, changes against a baseline file, then the charts as PNG links
//! (relative to the report, `charts/NAME.png`).

use std::fmt::Write as _;

use crate::content::{self, DELTA_COLUMNS, HEADLINE_COLUMNS};
use crate::report::{Report, Section};
use crate::rules::TIE_PCT;

/// A Markdown table cell: pipes escaped, line breaks flattened.
fn cell(text: &str) -> String {
    text.replace('|', "\\|").replace('\n', " ")
}

fn table(out: &mut String, header: &[&str], rows: &[Vec<String>]) {
    let _ = writeln!(
        out,
        "| {} |",
        header
            .iter()
            .map(|h| cell(h))
            .collect::<Vec<_>>()
            .join(" | ")
    );
    let _ = writeln!(out, "|{}", "---|".repeat(header.len()));
    for row in rows {
        let _ = writeln!(
            out,
            "| {} |",
            row.iter().map(|c| cell(c)).collect::<Vec<_>>().join(" | ")
        );
    }
    out.push('\n');
}

/// The report as Markdown; `charts_dir` is where the PNGs are, relative to the report.
pub fn render(report: &Report<'_>, charts_dir: &str) -> String {
    let c = report.input.current;
    let grid = &report.grid;
    let mut out = String::new();
    let _ = writeln!(out, "# {}\n", content::title(c));
    for line in content::environment_lines(c) {
        let _ = writeln!(out, "{line}  ");
    }
    out.push('\n');

    let _ = writeln!(out, "## Verdicts\n");
    let mut header = vec!["scenario"];
    header.extend(grid.strategies.iter().map(|s| s.id.as_str()));
    let rows: Vec<Vec<String>> = grid
        .rows
        .iter()
        .map(|row| {
            let mut cells = vec![row.label.clone()];
            cells.extend(grid.strategies.iter().map(|s| {
                let text = content::verdict_cell(row.case(&s.id));
                if text.starts_with("VIOLATED") {
                    format!("**{text}**")
                } else {
                    text
                }
            }));
            cells
        })
        .collect();
    table(&mut out, &header, &rows);
    out.push_str(
        "safe = no overlapping holders, no lost update, no stale write accepted; ovl = overlapping holder pairs, lost = lost updates, stale = stale writes accepted although the strategy has fencing tokens.\n\n",
    );
    let missing = content::not_measured(grid);
    if !missing.is_empty() {
        out.push_str("Not measured or with notes:\n\n");
        for line in missing {
            let _ = writeln!(out, "- {line}");
        }
        out.push('\n');
    }

    let _ = writeln!(out, "## Which strategy when\n");
    let _ = writeln!(
        out,
        "Derived from the measured numbers by the stated rules (figures within {TIE_PCT:.0}% of the best are ties on a noisy machine).\n"
    );
    for (i, f) in report.findings.iter().enumerate() {
        let _ = writeln!(out, "{}. **{}.** {}", i + 1, f.title, f.conclusion);
        let _ = writeln!(out, "   - Rule: {}", f.rule);
        for line in &f.evidence {
            let _ = writeln!(out, "   - {line}");
        }
    }
    out.push('\n');

    let _ = writeln!(out, "## Headline numbers\n");
    out.push_str("Latencies in ms; margin = TTL left when a renewal landed.\n\n");
    for (results, cases) in content::cases_by_run(grid) {
        let _ = writeln!(
            out,
            "### {} — {}\n",
            results.scenario.name, results.scenario.description
        );
        let _ = writeln!(out, "{}\n", content::workload_line(results));
        let rows: Vec<Vec<String>> = cases.iter().map(|c| content::headline_cells(c)).collect();
        table(&mut out, &HEADLINE_COLUMNS, &rows);
    }

    if let Some((deltas, name)) = &report.deltas {
        let _ = writeln!(out, "## Changes against {name}\n");
        let rows: Vec<Vec<String>> = deltas.matched.iter().map(content::delta_cells).collect();
        if rows.is_empty() {
            out.push_str("No case of this run matches a case of the baseline file.\n\n");
        } else {
            table(&mut out, &DELTA_COLUMNS, &rows);
        }
        for (what, list) in [
            ("Only in this run", &deltas.only_new),
            ("Only in the baseline file", &deltas.only_old),
        ] {
            if !list.is_empty() {
                let _ = writeln!(out, "{what}: {}.\n", list.join(", "));
            }
        }
    }

    let _ = writeln!(out, "## Charts\n");
    for section in report.sections() {
        let _ = writeln!(out, "### {}\n", section.heading());
        let charts: Vec<_> = report.charts_in(section).collect();
        let (shown, listed): (Vec<_>, Vec<_>) = charts
            .into_iter()
            .partition(|p| section != Section::Timeline || p.violated);
        for placed in shown {
            let _ = writeln!(
                out,
                "![{}]({charts_dir}/{}.png)\n",
                placed.chart.title, placed.chart.name
            );
        }
        if !listed.is_empty() {
            out.push_str("Timelines of the cases that held:\n\n");
            for placed in listed {
                let _ = writeln!(
                    out,
                    "- [{}]({charts_dir}/{}.png)",
                    placed.chart.title, placed.chart.name
                );
            }
            out.push('\n');
        }
    }
    out
}
