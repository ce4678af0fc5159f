//! The HTML report: one self-contained file — inline CSS, inline SVG charts, no script, no fetch of
//! anything (fonts, styles or images) — with the same content as the Markdown report.

use std::fmt::Write as _;

use crate::content::{self, DELTA_COLUMNS, HEADLINE_COLUMNS};
use crate::grid::{Violations, verdict_word};
use crate::report::{Report, Section};
use crate::rules::TIE_PCT;

const STYLE: &str = "
body { font-family: 'DejaVu Sans', Verdana, Arial, sans-serif; margin: 2rem auto; max-width: 1200px;
       padding: 0 1rem; color: #212121; line-height: 1.45; }
h1 { font-size: 1.7rem; } h2 { margin-top: 2.2rem; border-bottom: 1px solid #ddd; }
table { border-collapse: collapse; margin: 0.8rem 0 1.2rem; font-size: 0.9rem; }
th, td { border: 1px solid #ccc; padding: 0.3rem 0.55rem; text-align: right; vertical-align: top; }
th { background: #f3f3f3; } td:first-child, th:first-child { text-align: left; }
td.safe { background: #e8f5e9; color: #1b5e20; text-align: center; }
td.violated { background: #ffebee; color: #b71c1c; font-weight: bold; text-align: center; }
td.violated small { font-weight: normal; white-space: nowrap; }
td.other { background: #f5f5f5; color: #616161; text-align: center; }
.env { color: #424242; font-size: 0.92rem; } .incomplete { color: #b71c1c; font-weight: bold; }
ol.findings li { margin-bottom: 0.8rem; } .rule { color: #555; font-style: italic; }
figure { margin: 1rem 0 2rem; } figure svg { width: 100%; height: auto; border: 1px solid #eee; }
figcaption { color: #555; font-size: 0.85rem; } details summary { cursor: pointer; margin: 0.4rem 0; }
.scroll { overflow-x: auto; }
";

/// Escapes text for HTML content and attribute values.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

fn table(out: &mut String, id: Option<&str>, header: &[&str], rows: &[Vec<String>]) {
    out.push_str("<div class=\"scroll\"><table");
    if let Some(id) = id {
        let _ = write!(out, " id=\"{id}\"");
    }
    out.push_str("><thead><tr>");
    for h in header {
        let _ = write!(out, "<th>{}</th>", escape(h));
    }
    out.push_str("</tr></thead><tbody>\n");
    for row in rows {
        out.push_str("<tr>");
        for cell in row {
            let _ = write!(out, "<td>{}</td>", escape(cell));
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</tbody></table></div>\n");
}

/// The SVG document without its XML prolog, ready to inline.
fn inline_svg(svg: &str) -> &str {
    match svg.find("<svg") {
        Some(i) => &svg[i..],
        None => svg,
    }
}

/// The report as one HTML document.
pub fn render(report: &Report<'_>) -> String {
    let c = report.input.current;
    let grid = &report.grid;
    let title = content::title(c);
    let mut out = String::new();
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>{}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n<h1>{}</h1>\n",
        escape(&title),
        escape(&title)
    );
    for line in content::environment_lines(c) {
        let class = if line.starts_with("INCOMPLETE") {
            "env incomplete"
        } else {
            "env"
        };
        let _ = writeln!(out, "<p class=\"{class}\">{}</p>", escape(&line));
    }

    out.push_str("<h2 id=\"verdicts-heading\">Verdicts</h2>\n<div class=\"scroll\"><table id=\"verdicts\"><thead><tr><th>scenario</th>");
    for s in &grid.strategies {
        let _ = write!(out, "<th>{}</th>", escape(&s.id));
    }
    out.push_str("</tr></thead><tbody>\n");
    for row in &grid.rows {
        let _ = write!(out, "<tr><td>{}</td>", escape(&row.label));
        for s in &grid.strategies {
            let case = row.case(&s.id);
            let word = verdict_word(case);
            let (class, details) = match case {
                Some(c) if word == "VIOLATED" => ("violated", Violations::of(c).short()),
                _ if word == "safe" => ("safe", String::new()),
                _ => ("other", String::new()),
            };
            let _ = write!(out, "<td class=\"{class}\">{}", escape(word));
            if !details.is_empty() {
                let _ = write!(out, "<br><small>{}</small>", escape(&details));
            }
            out.push_str("</td>");
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</tbody></table></div>\n<p class=\"env\">safe = no overlapping holders, no lost update, no stale write accepted; ovl = overlapping holder pairs, lost = lost updates, stale = stale writes accepted although the strategy has fencing tokens.</p>\n");
    let missing = content::not_measured(grid);
    if !missing.is_empty() {
        out.push_str("<p>Not measured or with notes:</p><ul>\n");
        for line in missing {
            let _ = writeln!(out, "<li>{}</li>", escape(&line));
        }
        out.push_str("</ul>\n");
    }

    let _ = write!(
        out,
        "<h2>Which strategy when</h2>\n<p>Derived from the measured numbers by the stated rules (figures within {TIE_PCT:.0}% of the best are ties on a noisy machine).</p>\n<ol class=\"findings\">\n"
    );
    for f in &report.findings {
        let _ = write!(
            out,
            "<li><strong>{}.</strong> {}<br><span class=\"rule\">Rule: {}</span>",
            escape(&f.title),
            escape(&f.conclusion),
            escape(&f.rule)
        );
        if !f.evidence.is_empty() {
            out.push_str("<ul>");
            for line in &f.evidence {
                let _ = write!(out, "<li>{}</li>", escape(line));
            }
            out.push_str("</ul>");
        }
        out.push_str("</li>\n");
    }
    out.push_str("</ol>\n");

    out.push_str("<h2>Headline numbers</h2>\n<p>Latencies in ms; margin = TTL left when a renewal landed.</p>\n");
    for (results, cases) in content::cases_by_run(grid) {
        let _ = writeln!(
            out,
            "<h3>{} — {}</h3>\n<p class=\"env\">{}</p>",
            escape(&results.scenario.name),
            escape(&results.scenario.description),
            escape(&content::workload_line(results))
        );
        let rows: Vec<Vec<String>> = cases.iter().map(|c| content::headline_cells(c)).collect();
        table(&mut out, None, &HEADLINE_COLUMNS, &rows);
    }

    if let Some((deltas, name)) = &report.deltas {
        let _ = writeln!(out, "<h2>Changes against {}</h2>", escape(name));
        let rows: Vec<Vec<String>> = deltas.matched.iter().map(content::delta_cells).collect();
        if rows.is_empty() {
            out.push_str("<p>No case of this run matches a case of the baseline file.</p>\n");
        } else {
            table(&mut out, Some("changes"), &DELTA_COLUMNS, &rows);
        }
        for (what, list) in [
            ("Only in this run", &deltas.only_new),
            ("Only in the baseline file", &deltas.only_old),
        ] {
            if !list.is_empty() {
                let _ = writeln!(out, "<p>{what}: {}.</p>", escape(&list.join(", ")));
            }
        }
    }

    for section in report.sections() {
        let _ = writeln!(out, "<h2>{}</h2>", escape(section.heading()));
        for placed in report.charts_in(section) {
            let figure = format!(
                "<figure id=\"{}\">{}<figcaption>{}</figcaption></figure>\n",
                escape(&placed.chart.name),
                inline_svg(&placed.chart.svg),
                escape(&placed.chart.title)
            );
            if section == Section::Timeline {
                let _ = writeln!(
                    out,
                    "<details{}><summary>{}</summary>{figure}</details>",
                    if placed.violated { " open" } else { "" },
                    escape(&placed.chart.title)
                );
            } else {
                out.push_str(&figure);
            }
        }
    }
    out.push_str("</body>\n</html>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_escaped() {
        assert_eq!(
            escape("a<b & \"c\" 'd'>"),
            "a&lt;b &amp; &quot;c&quot; &#39;d&#39;&gt;"
        );
    }
}
