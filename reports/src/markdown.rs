//! The Markdown report, for pasting into a design review: verdict matrix, "which strategy when",
//! headline numbers per scenario, changes against a baseline file, then the charts as PNG links
//! (relative to the report, `charts/NAME.png`).

use std::fmt::Write as _;

use crate::comparison::Comparison;
use crate::content::{self, DELTA_COLUMNS, HEADLINE_COLUMNS, MatrixCell};
use crate::delta::Deltas;
use crate::grid::{Grid, slug};
use crate::many_locks;
use crate::pairing::{self, ModelRows};
use crate::report::{Report, Section};
use crate::rules::Finding;
use crate::scorecard::Scorecard;
use crate::sections::{self, Layout};
use crate::topics::{self, CostTable, Fault, Pair};

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
    sections::lay_out(report, &Markdown { charts_dir })
}

/// One section of the report as Markdown (see [`sections::lay_out_part`]); `None` when the report has
/// no data for it.
pub fn section(report: &Report<'_>, part: sections::Part) -> Option<String> {
    sections::lay_out_part(
        report,
        &Markdown {
            charts_dir: "charts",
        },
        part,
    )
}

/// The Markdown layout.
struct Markdown<'a> {
    /// Where the PNGs are, relative to the report.
    charts_dir: &'a str,
}

/// A line that ends the paragraph's line without ending the paragraph.
fn line_break(out: &mut String, line: &str) {
    let _ = writeln!(out, "{line}  ");
}

impl Layout for Markdown<'_> {
    fn head(&self, out: &mut String, c: &Comparison) {
        let _ = writeln!(out, "# {}\n", content::title(c));
        let workload = content::user_workload_lines(c);
        if !workload.is_empty() {
            for line in workload {
                line_break(out, &line);
            }
            out.push('\n');
        }
    }

    fn scorecard(&self, out: &mut String, card: &Scorecard) {
        table(out, &card.columns, &card.rows);
        for (label, text) in &card.headlines {
            line_break(out, &format!("**{label}:** {text}"));
        }
        out.push('\n');
        let _ = writeln!(out, "{}\n", sections::scorecard_note(&card.under));
    }

    fn also(&self, out: &mut String, links: &[(&str, &str)]) {
        let links: Vec<String> = links
            .iter()
            .map(|(heading, _)| format!("[{heading}](#{})", slug(heading)))
            .collect();
        if !links.is_empty() {
            line_break(out, &format!("**Also:** {}", links.join(" · ")));
        }
        out.push('\n');
    }

    fn environment(&self, out: &mut String, c: &Comparison) {
        for line in content::environment_lines(c) {
            line_break(out, &line);
        }
        out.push('\n');
    }

    fn verdicts(&self, out: &mut String, report: &Report<'_>) {
        let grid = &report.grid;
        let cost = report.input.cost;
        let _ = writeln!(out, "## {}\n", sections::VERDICTS);
        let mut header = vec!["strategy"];
        header.extend(grid.rows.iter().map(|r| r.label.as_str()));
        if !cost.is_empty() {
            header.push("many-locks");
        }
        let rows: Vec<Vec<String>> = grid
            .strategies
            .iter()
            .map(|s| {
                let mut cells = vec![content::matrix_strategy(grid, s)];
                cells.extend(
                    grid.rows
                        .iter()
                        .map(|row| matrix_cell(content::matrix_cell(row, &s.id))),
                );
                if !cost.is_empty() {
                    let cell = many_locks::cell(cost, s);
                    cells.push(if cell.flagged {
                        format!("**{}**", cell.text)
                    } else {
                        cell.text
                    });
                }
                cells
            })
            .collect();
        table(out, &header, &rows);
        let _ = write!(
            out,
            "Each cell: violated trials / trials and the 95 % Wilson interval for the violation rate when every trial ran; \"broke at trial k\": the case stopped at its first violation, so it has no rate (`--thorough` gives one); a violated cell says whether the data was harmed (a lost update or a stale write accepted) or stayed intact (fenced: fencing rejected the stale writes), or that the rightful holder was refused because its token went backwards; {}; {}, listed below; ≠ = the measurement disagrees with theory (below); *italic (predicted)*: a violation theory predicted for this strategy under this scenario; **bold**: a violation theory did not predict; – = the scenario does not apply; many-locks: the many-locks pass (`lockbench scale`), flagged when a strategy lost leases or failed renewals while holding many locks in at least two of its passes (a loss in one pass reads “sometimes”; each cell says how many passes it rests on). Violated = overlapping holders, lost updates, stale writes accepted, tokens that went backwards or duplicate tokens.\n\n",
            content::NO_FENCING_LEGEND,
            crate::grid::no_verdict_legend()
        );
    }

    fn against_theory(&self, out: &mut String, lines: Vec<String>) {
        let _ = writeln!(out, "{}:\n", sections::AGAINST_THEORY);
        for line in lines {
            let _ = writeln!(out, "- {line}");
        }
        out.push('\n');
    }

    fn mechanisms(&self, out: &mut String, mechanisms: Vec<(String, String)>) {
        let _ = writeln!(out, "{}:\n", sections::MECHANISMS);
        for (name, sentence) in mechanisms {
            let _ = writeln!(out, "- **{name}**: {sentence}");
        }
        out.push('\n');
    }

    fn not_measured(&self, out: &mut String, lines: Vec<String>) {
        let _ = writeln!(
            out,
            "<details><summary>{}</summary>\n",
            sections::not_measured_heading(lines.len())
        );
        for line in lines {
            let _ = writeln!(out, "- {line}");
        }
        out.push_str("\n</details>\n\n");
    }

    fn which_strategy_when(&self, out: &mut String, findings: &[Finding]) {
        let _ = writeln!(out, "## {}\n", sections::WHICH);
        let _ = writeln!(out, "{}\n", sections::which_intro());
        for (i, f) in findings.iter().enumerate() {
            let _ = writeln!(out, "{}. **{}.** {}", i + 1, f.title, f.conclusion);
            let _ = writeln!(out, "   - Rule: {}", f.rule);
            for line in &f.evidence {
                let _ = writeln!(out, "   - {line}");
            }
        }
        out.push('\n');
    }

    fn redlock_and_clocks(&self, out: &mut String, faults: &[Fault]) {
        let _ = writeln!(out, "## {}\n", sections::REDLOCK);
        let _ = writeln!(out, "{}\n", sections::REDLOCK_INTRO);
        for fault in faults {
            let _ = writeln!(out, "### {}\n", fault.label);
            if let Some(m) = &fault.mechanism {
                let _ = writeln!(out, "{m}\n");
            }
            table(out, &fault.columns, &fault.rows);
        }
    }

    fn peers(&self, out: &mut String, pairs: &[Pair]) {
        let _ = writeln!(out, "## {}\n", sections::PEERS);
        let _ = writeln!(out, "{}\n", sections::PEERS_INTRO);
        for pair in pairs {
            let _ = writeln!(out, "### {} beside {}\n", pair.peer, pair.counterpart);
            let rows: Vec<Vec<String>> = pair.rows.iter().map(|r| r.to_vec()).collect();
            table(out, &topics::pair_columns(pair), &rows);
        }
    }

    fn models(&self, out: &mut String, models: &[ModelRows]) {
        let _ = writeln!(out, "## {}\n", sections::MODELS);
        let _ = writeln!(out, "{}\n", pairing::intro());
        for model in models {
            let _ = writeln!(out, "### {} against its libraries\n", model.model);
            let columns: Vec<&str> = model.columns.iter().map(String::as_str).collect();
            table(out, &columns, &model.rows);
        }
    }

    fn cost(&self, out: &mut String, cost: &CostTable) {
        let _ = writeln!(out, "## {}\n", sections::COST);
        table(out, &topics::COST_COLUMNS, &cost.rows);
        let _ = writeln!(out, "{}\n", sections::cost_note(&cost.scope));
    }

    fn headline_numbers(&self, out: &mut String, grid: &Grid<'_>) {
        let _ = writeln!(out, "## {}\n", sections::HEADLINES);
        let _ = writeln!(out, "{}\n", sections::HEADLINES_INTRO);
        for (results, cases) in content::cases_by_run(grid) {
            let _ = writeln!(
                out,
                "### {} — {}\n",
                results.scenario.name, results.scenario.description
            );
            let _ = writeln!(out, "{}\n", content::workload_line(results));
            let rows: Vec<Vec<String>> = cases.iter().map(|c| content::headline_cells(c)).collect();
            table(out, &HEADLINE_COLUMNS, &rows);
        }
    }

    fn changes(&self, out: &mut String, deltas: &Deltas, name: &str) {
        let _ = writeln!(out, "## Changes against {name}\n");
        let rows: Vec<Vec<String>> = deltas.changed().map(content::delta_cells).collect();
        if deltas.matched.is_empty() {
            let _ = writeln!(out, "{}\n", sections::NO_MATCH);
        } else {
            let _ = writeln!(
                out,
                "**{}.** {}\n",
                deltas.summary(),
                content::delta_note(deltas)
            );
            if !rows.is_empty() {
                table(out, &DELTA_COLUMNS, &rows);
            }
        }
        for line in sections::one_sided(deltas) {
            let _ = writeln!(out, "{line}\n");
        }
    }

    fn charts(&self, out: &mut String, report: &Report<'_>) {
        let charts_dir = self.charts_dir;
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
    }
}

/// One verdict cell: surprises in bold; violations theory predicted in italics, marked.
fn matrix_cell(cell: MatrixCell) -> String {
    let mut text = match (cell.class, cell.predicted) {
        ("violated", true) => format!("*{} (predicted)*", cell.text),
        ("violated", false) => format!("**{}**", cell.text),
        _ => cell.text,
    };
    if !cell.detail.is_empty() {
        text = format!("{text} ({})", cell.detail);
    }
    if cell.against_theory {
        text.push_str(" ≠");
    }
    text
}
