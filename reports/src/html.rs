//! The HTML report: one self-contained file — inline CSS, inline SVG charts, no script, no fetch of
//! anything (fonts, styles or images) — with the same content as the Markdown report.

use std::fmt::Write as _;

use crate::comparison::{Comparison, StrategyInfo};
use crate::content::{self, DELTA_COLUMNS, HEADLINE_COLUMNS, MatrixCell};
use crate::delta::Deltas;
use crate::grid::Grid;
use crate::many_locks;
use crate::pairing::{self, ModelRows};
use crate::report::{Report, Section};
use crate::rules::Finding;
use crate::scale::CostSeries;
use crate::scorecard::{self, Scorecard};
use crate::sections::{self, Layout};
use crate::topics::{self, CostTable, Fault, Pair};

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
td.violated.predicted { background: #fff3e0; color: #8d4b00; font-weight: normal; }
details.violated summary { color: #b71c1c; } .predicted-key { background: #fff3e0; color: #8d4b00; }
td.other { background: #f5f5f5; color: #616161; text-align: center; }
.env { color: #424242; font-size: 0.92rem; } .incomplete { color: #b71c1c; font-weight: bold; }
ol.findings li { margin-bottom: 0.8rem; } .rule { color: #555; font-style: italic; }
figure { margin: 1rem 0 2rem; } figure svg { width: 100%; height: auto; border: 1px solid #eee; }
/* --w is the chart's drawn width: a narrow chart grows to at most 1.25 times it. */
figure svg { max-width: calc(var(--w, 2000px) * 1.25); display: block; }
figcaption { color: #555; font-size: 0.85rem; } details summary { cursor: pointer; margin: 0.4rem 0; }
.scroll { overflow-x: auto; }
nav.toc { position: sticky; top: 0; z-index: 1; background: #fff; border-bottom: 1px solid #ddd;
          padding: 0.35rem 0; font-size: 0.85rem; }
@media (max-width: 700px) { nav.toc { white-space: nowrap; overflow-x: auto; } }
nav.toc a { color: #0d47a1; text-decoration: none; margin-right: 0.9rem; }
h2, section { scroll-margin-top: 2.5rem; }
nav.answers { border-left: 4px solid #1565c0; padding: 0.2rem 0.9rem; margin: 1rem 0 1.5rem; }
nav.answers p { margin: 0.35rem 0; } nav.answers a { color: #0d47a1; text-decoration: none; }
table.matrix { table-layout: fixed; width: 100%; font-size: 0.72rem; }
table.matrix th, table.matrix td { padding: 0.2rem 0.15rem; text-align: center; }
table.matrix td { overflow-wrap: anywhere; } table.matrix th { overflow-wrap: normal; word-break: normal; hyphens: none; }
table.matrix th.who { width: 9.5rem; text-align: left; } table.matrix td small { font-size: 0.62rem; }
td.na { background: #fafafa; color: #9e9e9e; text-align: center; }
td.predicted { background: #fff3e0; color: #8d4b00; }
table.card tr.yardstick td { border-top: 2px solid #bdbdbd; color: #616161; font-style: italic; }
table.card td, table.card th { text-align: left; } table.card td:first-child { white-space: nowrap; } table.card { font-size: 0.85rem; }
.mark { color: #e65100; font-weight: bold; margin-left: 0.15rem; }
/* Phones last, so they override the rules above. */
@media (max-width: 700px) {
  body { margin: 0.6rem auto; padding: 0 0.6rem; } h1 { font-size: 1.25rem; }
  table.card { font-size: 0.75rem; } table.card td { white-space: nowrap; } table.card th, table.card td { padding: 0.2rem 0.3rem; }
  table.matrix { table-layout: auto; width: auto; font-size: 0.8rem; }
  table.matrix th.who { width: auto; }
  /* A chart shrinks to the phone's width down to half its drawn width (text at 8 px or more); a
     wider one scrolls in its own box. */
  figure { overflow-x: auto; } figure svg { min-width: min(640px, calc(var(--w, 640px) * 0.5)); }
}
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
    let mut page = sections::lay_out(report, &Html);
    page.push_str("</body>\n</html>\n");
    with_contents(page)
}

/// The HTML layout.
struct Html;

impl Layout for Html {
    fn head(&self, out: &mut String, c: &Comparison) {
        let title = content::title(c);
        let _ = write!(
            out,
            "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
             <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
             <title>{}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n<h1>{}</h1>\n",
            escape(&title),
            escape(&title)
        );
        for line in content::user_workload_lines(c) {
            let _ = writeln!(out, "<p class=\"workload\">{}</p>", escape(&line));
        }
    }

    fn scorecard(&self, out: &mut String, card: &Scorecard) {
        out.push_str("<section id=\"scorecard\">");
        out.push_str("<div class=\"scroll\"><table id=\"card\" class=\"card\"><thead><tr>");
        for h in &card.columns {
            let _ = write!(out, "<th>{}</th>", escape(h));
        }
        out.push_str("</tr></thead><tbody>\n");
        for ((row, surprise), yardstick) in
            card.rows.iter().zip(&card.unexpected).zip(&card.yardstick)
        {
            out.push_str(if *yardstick {
                "<tr class=\"yardstick\">"
            } else {
                "<tr>"
            });
            for (column, cell) in card.columns.iter().zip(row) {
                let class = match *column {
                    "breaks under (predicted)" if cell != "none" => " class=\"predicted\"",
                    "breaks under (unexpected)" if *surprise => " class=\"violated\"",
                    scorecard::DATA if cell.starts_with(crate::grid::NO_FENCING_DATA) => {
                        " class=\"other\""
                    }
                    scorecard::DATA if cell != "intact" && cell != "-" => " class=\"violated\"",
                    scorecard::MANY_LOCKS if cell.starts_with(many_locks::FLAG) => {
                        " class=\"violated\""
                    }
                    _ => "",
                };
                let _ = write!(out, "<td{class}>{}</td>", escape(cell));
            }
            out.push_str("</tr>\n");
        }
        out.push_str("</tbody></table></div>\n<nav class=\"answers\">\n");
        for (label, text) in &card.headlines {
            let _ = writeln!(
                out,
                "<p><strong>{}:</strong> {}</p>",
                escape(label),
                escape(text)
            );
        }
        out.push_str("</nav>\n");
        let _ = writeln!(
            out,
            "<p class=\"env\">{}</p>",
            escape(&sections::scorecard_note(&card.under))
        );
        out.push_str("</section>\n");
    }

    fn also(&self, out: &mut String, links: &[(&str, &str)]) {
        let links: Vec<String> = links
            .iter()
            .map(|(heading, id)| format!("<a href=\"#{id}\">{heading}</a>"))
            .collect();
        if !links.is_empty() {
            let _ = writeln!(out, "<p><strong>Also:</strong> {}</p>", links.join(" · "));
        }
    }

    fn environment(&self, out: &mut String, c: &Comparison) {
        for line in &content::environment_lines(c) {
            let class = if line.starts_with("INCOMPLETE") {
                "env incomplete"
            } else {
                "env"
            };
            let _ = writeln!(out, "<p class=\"{class}\">{}</p>", escape(line));
        }
    }

    fn verdicts(&self, out: &mut String, report: &Report<'_>) {
        let grid = &report.grid;
        let cost = report.input.cost;
        let _ = write!(
            out,
            "<h2 id=\"breaking\">{}</h2>\n<p class=\"env\">Each cell: violated trials / trials, and the 95 % Wilson interval for the violation rate when every trial ran; \u{201c}broke at trial k\u{201d}: the case stopped at its first violation, so it has no rate (<code>--thorough</code> gives one); a violated cell says whether the data was harmed (a lost update or a stale write accepted) or stayed intact (fenced: fencing rejected the stale writes), or that the rightful holder was refused because its token went backwards; {}; {}; <span class=\"mark\">≠</span> marks a measurement that disagrees with what the scenario says theory predicts (explained below); <span class=\"predicted-key\">orange</span>: a violation theory predicted for this strategy under this scenario; red: a violation theory did not predict; – = the scenario does not apply; many-locks: the many-locks pass (<code>lockbench scale</code>), flagged when a strategy lost leases or failed renewals while holding many locks in at least two of its passes (a loss in one pass reads “sometimes”; each cell says how many passes it rests on).</p>\n<div class=\"scroll\"><table id=\"verdicts\" class=\"matrix\"><thead><tr><th class=\"who\">strategy</th>",
            sections::VERDICTS,
            escape(content::NO_FENCING_LEGEND),
            escape(&crate::grid::no_verdict_legend())
        );
        for row in &grid.rows {
            let _ = write!(
                out,
                "<th title=\"{}\">{}</th>",
                escape(&row.label),
                escape(&row.label)
                    .replace('-', "-<wbr>")
                    .replace(" · ", " <wbr>· ")
            );
        }
        if !cost.is_empty() {
            out.push_str("<th title=\"many-locks: lockbench scale\">many-<wbr>locks</th>");
        }
        out.push_str("</tr></thead><tbody>\n");
        for s in &grid.strategies {
            let _ = write!(
                out,
                "<tr><th class=\"who\">{}</th>",
                escape(&content::matrix_strategy(grid, s)).replace('-', "-<wbr>")
            );
            for row in &grid.rows {
                matrix_cell(out, &content::matrix_cell(row, &s.id));
            }
            if !cost.is_empty() {
                many_locks_cell(out, cost, s);
            }
            out.push_str("</tr>\n");
        }
        out.push_str("</tbody></table></div>\n<p class=\"env\">violated = overlapping holders, lost updates, stale writes accepted, tokens that went backwards or duplicate tokens (hover a cell for which, per trial pooled).</p>\n");
    }

    fn against_theory(&self, out: &mut String, lines: Vec<String>) {
        let _ = writeln!(out, "<h3>{}</h3>\n<ul>", sections::AGAINST_THEORY);
        for line in lines {
            let _ = writeln!(out, "<li>{}</li>", escape(&line));
        }
        out.push_str("</ul>\n");
    }

    fn mechanisms(&self, out: &mut String, mechanisms: Vec<(String, String)>) {
        let _ = writeln!(out, "<h3>{}</h3>\n<ul>", sections::MECHANISMS);
        for (name, sentence) in mechanisms {
            let _ = writeln!(
                out,
                "<li><strong>{}</strong>: {}</li>",
                escape(&name),
                escape(&sentence)
            );
        }
        out.push_str("</ul>\n");
    }

    fn not_measured(&self, out: &mut String, lines: Vec<String>) {
        let _ = writeln!(
            out,
            "<details><summary>{}</summary><ul>",
            sections::not_measured_heading(lines.len())
        );
        for line in lines {
            let _ = writeln!(out, "<li>{}</li>", escape(&line));
        }
        out.push_str("</ul></details>\n");
    }

    fn which_strategy_when(&self, out: &mut String, findings: &[Finding]) {
        let _ = write!(
            out,
            "<h2 id=\"which\">{}</h2>\n<p>{}</p>\n<ol class=\"findings\">\n",
            sections::WHICH,
            sections::which_intro()
        );
        for f in findings {
            let _ = write!(
                out,
                "<li><strong>{}.</strong> {}<br><span class=\"rule\">Rule: {}</span>",
                escape(&f.title),
                escape(&f.conclusion),
                escape(&f.rule)
            );
            // The conclusion names the strategies; the figures behind it are a click away.
            if !f.evidence.is_empty() {
                let _ = write!(
                    out,
                    "<details><summary>the figures it rests on ({})</summary><ul>",
                    f.evidence.len()
                );
                for line in &f.evidence {
                    let _ = write!(out, "<li>{}</li>", escape(line));
                }
                out.push_str("</ul></details>");
            }
            out.push_str("</li>\n");
        }
        out.push_str("</ol>\n");
    }

    fn redlock_and_clocks(&self, out: &mut String, faults: &[Fault]) {
        let _ = writeln!(
            out,
            "<h2 id=\"redlock\">{}</h2>\n<p>{}</p>",
            sections::REDLOCK,
            sections::REDLOCK_INTRO
        );
        for fault in faults {
            let _ = writeln!(out, "<h3>{}</h3>", escape(&fault.label));
            if let Some(m) = &fault.mechanism {
                let _ = writeln!(out, "<p>{}</p>", escape(m));
            }
            table(out, None, &fault.columns, &fault.rows);
        }
    }

    fn peers(&self, out: &mut String, pairs: &[Pair]) {
        let _ = writeln!(
            out,
            "<h2 id=\"peers\">{}</h2>\n<p>{}</p>",
            sections::PEERS,
            sections::PEERS_INTRO
        );
        for pair in pairs {
            let _ = writeln!(
                out,
                "<h3>{} beside {}</h3>",
                escape(&pair.peer),
                escape(&pair.counterpart)
            );
            let rows: Vec<Vec<String>> = pair.rows.iter().map(|r| r.to_vec()).collect();
            table(out, None, &topics::pair_columns(pair), &rows);
        }
    }

    fn models(&self, out: &mut String, models: &[ModelRows]) {
        let _ = writeln!(
            out,
            "<h2 id=\"models\">{}</h2>\n<p>{}</p>",
            sections::MODELS,
            escape(&pairing::intro())
        );
        for model in models {
            let _ = writeln!(
                out,
                "<h3>{} against its libraries</h3>",
                escape(&model.model)
            );
            let columns: Vec<&str> = model.columns.iter().map(String::as_str).collect();
            table(out, None, &columns, &model.rows);
        }
    }

    fn cost(&self, out: &mut String, cost: &CostTable) {
        let _ = writeln!(out, "<h2 id=\"cost\">{}</h2>", sections::COST);
        table(out, None, &topics::COST_COLUMNS, &cost.rows);
        let _ = writeln!(
            out,
            "<p class=\"env\">{}</p>",
            escape(&sections::cost_note(&cost.scope))
        );
    }

    fn headline_numbers(&self, out: &mut String, grid: &Grid<'_>) {
        let _ = writeln!(
            out,
            "<h2 id=\"fastest\">{}</h2>\n<p>{}</p>",
            sections::HEADLINES,
            sections::HEADLINES_INTRO
        );
        for (results, cases) in content::cases_by_run(grid) {
            let _ = writeln!(
                out,
                "<h3>{} — {}</h3>\n<p class=\"env\">{}</p>",
                escape(&results.scenario.name),
                escape(&results.scenario.description),
                escape(&content::workload_line(results))
            );
            let rows: Vec<Vec<String>> = cases.iter().map(|c| content::headline_cells(c)).collect();
            table(out, None, &HEADLINE_COLUMNS, &rows);
        }
    }

    fn changes(&self, out: &mut String, deltas: &Deltas, name: &str) {
        let _ = writeln!(
            out,
            "<h2 id=\"changes\">Changes against {}</h2>",
            escape(name)
        );
        let rows: Vec<Vec<String>> = deltas.changed().map(content::delta_cells).collect();
        if deltas.matched.is_empty() {
            let _ = writeln!(out, "<p>{}</p>", sections::NO_MATCH);
        } else {
            let _ = writeln!(
                out,
                "<p><strong>{}.</strong> {}</p>",
                escape(&deltas.summary()),
                escape(&content::delta_note(deltas))
            );
            if !rows.is_empty() {
                table(out, Some("changes"), &DELTA_COLUMNS, &rows);
            }
        }
        for line in sections::one_sided(deltas) {
            let _ = writeln!(out, "<p>{}</p>", escape(&line));
        }
    }

    fn charts(&self, out: &mut String, report: &Report<'_>) {
        for section in report.sections() {
            let _ = writeln!(
                out,
                "<h2 id=\"{}\">{}</h2>",
                crate::grid::slug(section.heading()),
                escape(section.heading())
            );
            for placed in report.charts_in(section) {
                let figure = format!(
                    "<figure id=\"{}\" style=\"--w:{}px\">{}<figcaption>{}</figcaption></figure>\n",
                    escape(&placed.chart.name),
                    placed.chart.width,
                    inline_svg(&placed.chart.svg),
                    escape(&placed.chart.title)
                );
                if section == Section::Timeline {
                    let _ = writeln!(
                        out,
                        "<details{}><summary>{}</summary>{figure}</details>",
                        if placed.violated {
                            " class=\"violated\""
                        } else {
                            ""
                        },
                        escape(&placed.chart.title)
                    );
                } else {
                    out.push_str(&figure);
                }
            }
        }
    }
}

/// One verdict cell: coloured by its class, its note on hover, marked when it disagrees with theory.
fn matrix_cell(out: &mut String, cell: &MatrixCell) {
    let _ = write!(
        out,
        "<td class=\"{}{}\" title=\"{}\">{}",
        cell.class,
        if cell.predicted { " predicted" } else { "" },
        escape(&cell.note),
        escape(&cell.text)
    );
    if cell.against_theory {
        out.push_str("<span class=\"mark\">≠</span>");
    }
    if !cell.detail.is_empty() {
        let _ = write!(out, "<br><small>{}</small>", escape(&cell.detail));
    }
    out.push_str("</td>");
}

/// The many-locks cell of `strategy`: red when a loss repeated, grey when one did not.
fn many_locks_cell(out: &mut String, cost: &[CostSeries], strategy: &StrategyInfo) {
    let cell = many_locks::cell(cost, strategy);
    let class = if cell.flagged {
        "violated"
    } else if !cell.measured {
        "na"
    } else if cell.unrepeated_loss {
        "other"
    } else {
        "safe"
    };
    let _ = write!(out, "<td class=\"{class}\">{}</td>", escape(&cell.text));
}

/// `page` with a sticky table of contents after its title: one link per `<h2 id>`, in page order.
fn with_contents(page: String) -> String {
    let mut links = Vec::new();
    let mut rest = page.as_str();
    while let Some(at) = rest.find("<h2 id=\"") {
        rest = &rest[at + 8..];
        let Some((id, after)) = rest.split_once("\">") else {
            break;
        };
        let Some((heading, _)) = after.split_once("</h2>") else {
            break;
        };
        links.push(format!("<a href=\"#{id}\">{heading}</a>"));
        rest = after;
    }
    let nav = format!(
        "<nav class=\"toc\"><a href=\"#scorecard\">Scorecard</a>{}</nav>\n",
        links.concat()
    );
    match page.find("</h1>\n") {
        Some(at) => format!("{}{nav}{}", &page[..at + 6], &page[at + 6..]),
        None => page,
    }
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
