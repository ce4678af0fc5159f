//! The Markdown report, for pasting into a design review: verdict matrix, "which strategy when",
//! headline numbers per scenario, changes against a baseline file, then the charts as PNG links
//! (relative to the report, `charts/NAME.png`).

use std::fmt::Write as _;

use crate::content::{self, DELTA_COLUMNS, HEADLINE_COLUMNS};
use crate::report::{Report, Section};
use crate::rules::TIE_PCT;
use crate::{pairing, scorecard, topics};

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
    let workload = content::user_workload_lines(c);
    if !workload.is_empty() {
        for line in workload {
            let _ = writeln!(out, "{line}  ");
        }
        out.push('\n');
    }
    if let Some(card) = scorecard::of(grid, report.input.cost) {
        table(&mut out, &card.columns, &card.rows);
        for (label, text) in &card.headlines {
            let _ = writeln!(out, "**{label}:** {text}  ");
        }
        out.push('\n');
        let _ = writeln!(
            out,
            "Scorecard: speed, latency and cost under {}; breaks and data over every scenario. {}\n",
            card.under,
            scorecard::NOTE
        );
    }
    let faults = topics::redlock_faults(grid);
    let pairs = topics::peer_pairs(grid);
    let mut also = Vec::new();
    if topics::worth_a_link(&faults) {
        also.push("[Redlock and clocks](#redlock-and-clocks)");
    }
    if !pairs.is_empty() {
        also.push("[Peers beside their counterparts](#peers-beside-their-counterparts)");
    }
    let models = pairing::models_against_libraries(grid);
    if !models.is_empty() {
        also.push("[Models against their libraries](#models-against-their-libraries)");
    }
    if !also.is_empty() {
        let _ = writeln!(out, "**Also:** {}  ", also.join(" · "));
    }
    out.push('\n');
    for line in content::environment_lines(c) {
        let _ = writeln!(out, "{line}  ");
    }
    out.push('\n');

    let _ = writeln!(out, "## Breaking points: verdicts\n");
    let mut header = vec!["strategy"];
    header.extend(grid.rows.iter().map(|r| r.label.as_str()));
    let cost = report.input.cost;
    if !cost.is_empty() {
        header.push("many-locks");
    }
    let rows: Vec<Vec<String>> = grid
        .strategies
        .iter()
        .map(|s| {
            let mut cells = vec![s.id.clone()];
            cells.extend(grid.rows.iter().map(|row| {
                let cell = content::matrix_cell(row, &s.id);
                // Surprises in bold; violations theory predicted in italics, marked.
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
            }));
            if !cost.is_empty() {
                let (text, lost) = scorecard::many_locks_cell(cost, &s.id);
                cells.push(if lost { format!("**{text}**") } else { text });
            }
            cells
        })
        .collect();
    table(&mut out, &header, &rows);
    out.push_str(
        "Each cell: violated trials / trials and the 95 % Wilson interval for the violation rate when every trial ran; \"broke at trial k\": the case stopped at its first violation, so it has no rate (`--thorough` gives one); a violated cell says whether the data was harmed (a lost update or a stale write accepted) or stayed intact (fenced: fencing rejected the stale writes); \"fault not applied\": the fault did not take effect, so no verdict (listed below); ≠ = the measurement disagrees with theory (below); *italic (predicted)*: a violation theory predicted for this strategy under this scenario; **bold**: a violation theory did not predict; – = the scenario does not apply; many-locks: the many-locks pass (`lockbench scale`), flagged when a strategy lost leases or failed renewals while holding many locks. Violated = overlapping holders, lost updates, stale writes accepted, tokens that went backwards or duplicate tokens.\n\n",
    );
    let against = content::against_theory(grid);
    if !against.is_empty() {
        out.push_str("Where the measurement disagrees with theory:\n\n");
        for line in against {
            let _ = writeln!(out, "- {line}");
        }
        out.push('\n');
    }
    let mechanisms = content::mechanisms(c);
    if !mechanisms.is_empty() {
        out.push_str("What each scenario does to a lock:\n\n");
        for (name, sentence) in mechanisms {
            let _ = writeln!(out, "- **{name}**: {sentence}");
        }
        out.push('\n');
    }
    let missing = content::not_measured(grid);
    if !missing.is_empty() {
        let _ = writeln!(
            out,
            "<details><summary>Not measured or with notes ({})</summary>\n",
            missing.len()
        );
        for line in missing {
            let _ = writeln!(out, "- {line}");
        }
        out.push_str("\n</details>\n\n");
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

    if !faults.is_empty() {
        let _ = writeln!(out, "## Redlock and clocks\n");
        out.push_str("Each fault: violated trials of the trials run, per strategy that ran it, and the mechanism (from the scenario file).\n\n");
        for fault in &faults {
            let _ = writeln!(out, "### {}\n", fault.label);
            if let Some(m) = &fault.mechanism {
                let _ = writeln!(out, "{m}\n");
            }
            table(&mut out, &fault.columns, &fault.rows);
        }
    }
    if !pairs.is_empty() {
        let _ = writeln!(out, "## Peers beside their counterparts\n");
        out.push_str("Each peer (the real library, through its adapter) beside the lockbench strategy that models it: baseline figures, then the scenarios where their verdicts differ (violated trials / trials).\n\n");
        for pair in &pairs {
            let _ = writeln!(out, "### {} beside {}\n", pair.peer, pair.counterpart);
            let rows: Vec<Vec<String>> = pair.rows.iter().map(|r| r.to_vec()).collect();
            table(&mut out, &topics::pair_columns(pair), &rows);
        }
    }
    if !models.is_empty() {
        let _ = writeln!(out, "## Models against their libraries\n");
        let _ = writeln!(out, "{}\n", pairing::INTRO);
        for model in &models {
            let _ = writeln!(out, "### {} against its libraries\n", model.model);
            let columns: Vec<&str> = model.columns.iter().map(String::as_str).collect();
            table(&mut out, &columns, &model.rows);
        }
    }

    if let Some(cost) = topics::cost_table(grid) {
        let _ = writeln!(out, "## Cost under baseline\n");
        table(&mut out, &topics::COST_COLUMNS, &cost.rows);
        let _ = writeln!(
            out,
            "{} Client CPU scope here: {}.\n",
            topics::COST_NOTE,
            cost.scope
        );
    }

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
        let rows: Vec<Vec<String>> = deltas.changed().map(content::delta_cells).collect();
        if deltas.matched.is_empty() {
            out.push_str("No case of this run matches a case of the baseline file.\n\n");
        } else {
            let _ = writeln!(
                out,
                "**{}.** {}\n",
                deltas.summary(),
                content::delta_note(deltas)
            );
            if !rows.is_empty() {
                table(&mut out, &DELTA_COLUMNS, &rows);
            }
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
