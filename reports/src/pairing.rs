//! The "Models against their libraries" section: each lockbench model row beside every real library
//! it models (the peers naming it as their counterpart), scenario by scenario, with what the server
//! saw of each — the verdict, renewal calls per held lock per second, client requests per critical
//! section, and on Redis whether the rows ran the same scripts (SHA1s of their text, from `MONITOR`) —
//! and whether each library agrees with the model ([`agreement`]). Plain text cells, so Markdown and
//! HTML differ only in layout.

use std::collections::BTreeSet;

use crate::agreement::{self, LEGEND};
use crate::format::rate;
use crate::grid::{Grid, ran, verdict_word, violated_of};
use crate::model::CaseResult;

/// The section's one-paragraph introduction: its figures, then how to read "against the model"
/// ([`LEGEND`]).
pub fn intro() -> String {
    format!("{INTRO} {LEGEND}")
}

/// The section's figures, as [`intro`] introduces them before the legend.
const INTRO: &str = "Each model row beside the real libraries it models (through their adapters), per scenario \
     it and they ran: violated trials / trials, and whether each library agrees with the model; renewal calls the server saw per held lock per second \
     (calls ÷ (critical sections × mean hold): etcd keep-alive messages, Redis renewal scripts seen by \
     MONITOR); client requests the server counted per critical section; and, on Redis, the scripts the \
     server ran by SHA1 of their text (the first 7 hex digits; \"same\" when a library ran exactly the \
     model's).";

/// One model and its libraries.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelRows {
    /// The model row's id.
    pub model: String,
    /// The table's columns: `scenario`, `figure`, the model, then each library.
    pub columns: Vec<String>,
    /// Rows of cells, as `columns`.
    pub rows: Vec<Vec<String>>,
}

/// Every model with at least one library in the comparison; empty when it has no peers.
pub fn models_against_libraries(grid: &Grid<'_>) -> Vec<ModelRows> {
    let mut models: Vec<(String, Vec<String>)> = Vec::new();
    for s in &grid.strategies {
        let Some(model) = &s.counterpart else {
            continue;
        };
        match models.iter_mut().find(|(m, _)| m == model) {
            Some((_, libraries)) => libraries.push(s.id.clone()),
            None => models.push((model.clone(), vec![s.id.clone()])),
        }
    }
    models
        .into_iter()
        .map(|(model, libraries)| {
            let ids: Vec<&str> = std::iter::once(model.as_str())
                .chain(libraries.iter().map(String::as_str))
                .collect();
            let mut rows = Vec::new();
            for row in &grid.rows {
                let cases: Vec<Option<&CaseResult>> = ids.iter().map(|id| row.case(id)).collect();
                // A scenario only one side ran holds nothing against anything.
                if cases.iter().filter(|c| c.is_some_and(ran)).count() < 2 {
                    continue;
                }
                let figures = |figure: &str, cell: &dyn Fn(Option<&CaseResult>) -> String| {
                    let mut cells = vec![row.label.clone(), figure.to_owned()];
                    cells.extend(cases.iter().map(|c| cell(*c)));
                    cells
                };
                rows.push(figures("violated / trials", &verdict));
                let mut against = vec![
                    row.label.clone(),
                    "against the model".to_owned(),
                    "–".to_owned(),
                ];
                for (library, case) in ids.iter().zip(&cases).skip(1) {
                    against.push(match agreement::in_row(row, &model, library) {
                        Some(a) => a.words(),
                        None if case.is_some_and(ran) => {
                            format!("model {}", verdict_word(cases[0]))
                        }
                        None => verdict_word(*case).to_owned(),
                    });
                }
                rows.push(against);
                rows.push(figures("renewal calls / held lock / s", &|c| {
                    figure(c, renewals_per_held_lock_second)
                }));
                rows.push(figures("client requests / CS", &|c| {
                    figure(c, client_requests_per_cs)
                }));
                let model_scripts = cases[0].map(scripts).unwrap_or_default();
                if cases
                    .iter()
                    .any(|c| c.is_some_and(|c| !scripts(c).is_empty()))
                {
                    let mut cells = vec![row.label.clone(), "scripts (SHA1)".to_owned()];
                    for (i, case) in cases.iter().enumerate() {
                        cells.push(match case.filter(|c| ran(c)) {
                            None => verdict_word(*case).to_owned(),
                            Some(c) => script_cell(&scripts(c), (i > 0).then_some(&model_scripts)),
                        });
                    }
                    rows.push(cells);
                }
            }
            ModelRows {
                columns: ["scenario", "figure"]
                    .into_iter()
                    .map(str::to_owned)
                    .chain(ids.iter().map(|id| (*id).to_owned()))
                    .collect(),
                model,
                rows,
            }
        })
        .collect()
}

/// `1/3`, or the verdict word of a case that did not run.
fn verdict(case: Option<&CaseResult>) -> String {
    match case.filter(|c| ran(c)) {
        Some(c) => {
            let (k, n) = violated_of(c);
            format!("{k}/{n}")
        }
        None => verdict_word(case).to_owned(),
    }
}

/// A figure of a case that ran (`n/a` when the server did not tell), else the verdict word.
fn figure(case: Option<&CaseResult>, f: fn(&CaseResult) -> Option<f64>) -> String {
    match case.filter(|c| ran(c)) {
        Some(c) => f(c).map_or_else(|| "n/a".to_owned(), rate),
        None => verdict_word(case).to_owned(),
    }
}

/// Renewal calls the server saw ÷ the lock-seconds held (critical sections × mean hold).
pub fn renewals_per_held_lock_second(case: &CaseResult) -> Option<f64> {
    let calls = case.server_cost.as_ref()?.renew_calls?;
    let held_s =
        case.safety.lost_updates.completed_writes as f64 * case.latency.hold.mean_ms? / 1e3;
    (held_s > 0.0).then(|| calls as f64 / held_s)
}

/// Client requests the server counted, per critical section.
pub fn client_requests_per_cs(case: &CaseResult) -> Option<f64> {
    let sent = case.server_cost.as_ref()?.client_requests?;
    case.per_critical_section(sent as f64)
}

/// The SHA1s of the scripts the server ran for the case.
fn scripts(case: &CaseResult) -> BTreeSet<String> {
    case.server_cost
        .as_ref()
        .map(|s| s.scripts.keys().cloned().collect())
        .unwrap_or_default()
}

/// The scripts' short SHA1s; for a library, `same` when they are exactly the model's, else the
/// short SHA1s with how many the model also ran.
fn script_cell(shas: &BTreeSet<String>, model: Option<&BTreeSet<String>>) -> String {
    if shas.is_empty() {
        return "none".to_owned();
    }
    if model.is_some_and(|m| m == shas) {
        return "same".to_owned();
    }
    let short: Vec<&str> = shas.iter().map(|s| &s[..s.len().min(7)]).collect();
    match model {
        Some(m) => format!(
            "{} ({} of {} the model's)",
            short.join(" "),
            shas.intersection(m).count(),
            shas.len()
        ),
        None => short.join(" "),
    }
}
