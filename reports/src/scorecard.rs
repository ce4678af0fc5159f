//! The first screen: one scorecard row per strategy (throughput with its trials' spread, acquire p99,
//! client requests per critical section against the fewest on the same server kind, where it broke —
//! predicted or not —, fencing, what became of the data) and the headline lines drawn from those
//! cells, each naming the cells it rests on; ties within [`TIE_PCT`] are named as ties.

use crate::format::{ms, rate};
use crate::grid::{Grid, Row, ran, verdict_word, violated_of};
use crate::model::{CaseResult, CaseStatus, DataState, Expectation, Verdict, Violation};
use crate::rules::{TIE_PCT, headline_row};
use crate::scale::CostSeries;

/// Scorecard columns.
pub const COLUMNS: [&str; 8] = [
    "strategy",
    "CS/s (trials min–max)",
    "acquire p99 ms",
    "client requests per CS",
    "breaks under (predicted)",
    "breaks under (unexpected)",
    "fencing",
    "data",
];

/// The column added with a many-locks (`lockbench scale`) pass.
pub const MANY_LOCKS: &str = "many locks";

/// The many-locks cell of `strategy` and whether it lost leases or failed renewals: `held 10000`,
/// `LOST 3005 of 10000 held locks, ...`, `-` (not in the scale data).
pub fn many_locks_cell(cost: &[CostSeries], strategy: &str) -> (String, bool) {
    match cost.iter().find(|c| c.strategy == strategy) {
        None => ("-".to_owned(), false),
        Some(series) => match series.losses() {
            Some(losses) => (format!("LOSES LOCKS: {losses}"), true),
            None => (
                format!("held {} without a loss", series.held_cleanly()),
                false,
            ),
        },
    }
}

/// Under the scorecard: how to read it.
pub const NOTE: &str = "CS/s: completed critical sections per second, pooled over the trials, with the slowest and fastest trial; client requests per CS are compared only with strategies on the same server kind; a break is predicted when the scenario's theory says this strategy may violate there; data: harmed when an update was lost or a stale write accepted in any scenario (the scenarios are those it broke under), intact otherwise.";

/// The scorecard: the row it measures speed and cost under, and one row of cells per strategy.
#[derive(Debug, Clone, PartialEq)]
pub struct Scorecard {
    /// The label of the row the figures come from (`baseline`).
    pub under: String,
    /// The columns: [`COLUMNS`], then [`MANY_LOCKS`] when there is scale data.
    pub columns: Vec<&'static str>,
    /// One row per strategy, cells in `columns` order.
    pub rows: Vec<Vec<String>>,
    /// Per row, whether the strategy broke where theory did not predict it.
    pub unexpected: Vec<bool>,
    /// The headline lines: (label, text with the cells it rests on).
    pub headlines: Vec<(String, String)>,
}

/// Critical sections per second of each trial: the pooled rate shared out by each trial's count
/// (the trials' measured windows are equally long); `None` without at least two trials.
pub fn trial_rates(case: &CaseResult) -> Option<(f64, f64)> {
    let each = &case.trials.as_ref()?.each;
    if each.len() < 2 {
        return None;
    }
    let mean = each.iter().map(|t| t.completed as f64).sum::<f64>() / each.len() as f64;
    if mean <= 0.0 {
        return None;
    }
    let per_s = |n: u64| case.throughput.completed_per_s * n as f64 / mean;
    let low = each.iter().map(|t| t.completed).min()?;
    let high = each.iter().map(|t| t.completed).max()?;
    Some((per_s(low), per_s(high)))
}

/// `770 (745–795)` or `770`.
fn rate_cell(case: &CaseResult) -> String {
    match trial_rates(case) {
        Some((low, high)) => format!(
            "{} ({}–{})",
            rate(case.throughput.completed_per_s),
            rate(low),
            rate(high)
        ),
        None => rate(case.throughput.completed_per_s),
    }
}

/// Client requests over the whole case per critical section completed, with the server kind.
fn requests_per_cs(case: &CaseResult) -> Option<(String, f64)> {
    let cost = case.server_cost.as_ref()?;
    let per = case.per_critical_section(cost.client_requests? as f64)?;
    per.is_finite().then(|| (cost.kind.clone(), per))
}

/// Whether a violation of `case` in `row` was predicted (theory says violated or either).
fn predicted(row: &Row<'_>, case: &CaseResult) -> bool {
    matches!(
        row.run
            .results
            .scenario
            .expected(&case.strategy, &case.lease),
        Some(Expectation::Violated | Expectation::Either)
    )
}

/// Names within [`TIE_PCT`] of the best of `list` (higher better when `higher`), best first.
fn tied(list: &[(&str, f64)], higher: bool) -> Vec<(String, f64)> {
    let best = list.iter().map(|(_, v)| *v).fold(
        if higher {
            f64::NEG_INFINITY
        } else {
            f64::INFINITY
        },
        |a, b| if higher { a.max(b) } else { a.min(b) },
    );
    let mut ties: Vec<(String, f64)> = list
        .iter()
        .filter(|(_, v)| best != 0.0 && ((v - best) / best * 100.0).abs() < TIE_PCT || *v == best)
        .map(|(id, v)| ((*id).to_owned(), *v))
        .collect();
    ties.sort_by(|a, b| {
        let o = a.1.total_cmp(&b.1);
        if higher { o.reverse() } else { o }
    });
    ties
}

/// The scorecard of `grid`; `None` without a row to measure under.
pub fn of(grid: &Grid<'_>, cost: &[CostSeries]) -> Option<Scorecard> {
    let head = headline_row(grid)?;
    let under = head.label.clone();
    let fewest = fewest_requests(grid, head);
    let mut rows = Vec::new();
    let mut unexpected = Vec::new();
    let mut tally = Tally::default();
    let mut losers: Vec<String> = Vec::new();
    for s in &grid.strategies {
        let breaks = Breaks::of(grid, &s.id);
        let (scale, lost) = many_locks_cell(cost, &s.id);
        if lost {
            losers.push(s.id.clone());
        }
        unexpected.push(!breaks.unexpected.is_empty());
        let case = head.case(&s.id).filter(|c| ran(c));
        let mut cells = strategy_cells(&s.id, case, &breaks, &fewest);
        if !cost.is_empty() {
            cells.push(scale);
        }
        rows.push(cells);
        tally.add(&s.id, breaks);
    }
    let mut headlines = vec![
        ("Fastest".to_owned(), fastest(grid, head, &under)),
        (
            "Fewest client requests per CS, within each server kind".to_owned(),
            fewest_requests_line(grid, head, &fewest, &under),
        ),
        ("Breaking points".to_owned(), tally.line()),
    ];
    if !losers.is_empty() {
        headlines.push(("Losses at scale".to_owned(), losses_line(&losers)));
    }
    let mut columns = COLUMNS.to_vec();
    if !cost.is_empty() {
        columns.push(MANY_LOCKS);
    }
    Some(Scorecard {
        under,
        columns,
        rows,
        unexpected,
        headlines,
    })
}

/// Fewest client requests per CS on each server kind, among the cases of `head` that held.
fn fewest_requests(grid: &Grid<'_>, head: &Row<'_>) -> Vec<(String, f64)> {
    let mut fewest: Vec<(String, f64)> = Vec::new();
    for s in &grid.strategies {
        let Some(c) = head.case(&s.id).filter(|c| ran(c)) else {
            continue;
        };
        if let Some((kind, per)) = requests_per_cs(c) {
            match fewest.iter_mut().find(|(k, _)| *k == kind) {
                Some((_, best)) => *best = best.min(per),
                None => fewest.push((kind, per)),
            }
        }
    }
    fewest
}

/// Where one strategy broke, over every row of the grid.
#[derive(Debug, Default)]
struct Breaks {
    /// Cases that ran.
    ran: usize,
    /// Cases that ran without a verdict, by reason (`no contention`, `failed`, ...): neither safe
    /// nor violated.
    unknown: Vec<&'static str>,
    /// Labels of the rows where it broke as theory predicted.
    predicted: Vec<String>,
    /// Labels of the rows where it broke and theory did not predict it.
    unexpected: Vec<String>,
    /// Rows where it harmed the data.
    harmed: usize,
    /// Rows where its tokens went backwards, so fencing refused the rightful holder.
    refused: usize,
    /// Whether fencing was enforced in any case.
    fencing: bool,
}

impl Breaks {
    fn of(grid: &Grid<'_>, strategy: &str) -> Self {
        let mut breaks = Breaks::default();
        for row in &grid.rows {
            let Some(c) = row.case(strategy) else {
                continue;
            };
            if !ran(c) {
                if c.status != CaseStatus::Skipped {
                    breaks.unknown.push(verdict_word(Some(c)));
                }
                continue;
            }
            breaks.ran += 1;
            breaks.fencing |= c.safety.fencing.enforced;
            if violated_of(c).0 == 0 {
                continue;
            }
            if predicted(row, c) {
                breaks.predicted.push(row.label.clone());
            } else {
                breaks.unexpected.push(row.label.clone());
            }
            if c.safety.data_state() == Some(DataState::Harmed) {
                breaks.harmed += 1;
            } else if c.safety.reasons.contains(&Violation::TokenRegressions) {
                breaks.refused += 1;
            }
        }
        breaks
    }
}

/// The scorecard's cells of `strategy` ([`COLUMNS`]), `case` being its case in the headline row.
fn strategy_cells(
    strategy: &str,
    case: Option<&CaseResult>,
    breaks: &Breaks,
    fewest: &[(String, f64)],
) -> Vec<String> {
    let dash = || "-".to_owned();
    let list = |v: &[String]| {
        if v.is_empty() {
            "none".to_owned()
        } else {
            v.join(", ")
        }
    };
    let scenarios = |n: usize| format!("{n} scenario{}", if n == 1 { "" } else { "s" });
    let mut data = Vec::new();
    if breaks.harmed > 0 {
        data.push(format!("harmed in {}", scenarios(breaks.harmed)));
    }
    if breaks.refused > 0 {
        data.push(format!(
            "rightful holder refused (token went backwards) in {}",
            scenarios(breaks.refused)
        ));
    }
    let data = if data.is_empty() {
        "intact".to_owned()
    } else {
        data.join("; ")
    };
    vec![
        strategy.to_owned(),
        case.map_or_else(dash, rate_cell),
        case.map_or_else(dash, |c| ms(c.latency.acquire.p99_ms)),
        case.and_then(requests_per_cs)
            .map_or_else(dash, |(kind, per)| requests_cell(&kind, per, fewest)),
        list(&breaks.predicted),
        list(&breaks.unexpected),
        if breaks.fencing { "yes" } else { "no" }.to_owned(),
        data,
    ]
}

/// `3.0 (redis: fewest)` or `4.5 (redis: 1.5× the fewest)`.
fn requests_cell(kind: &str, per: f64, fewest: &[(String, f64)]) -> String {
    let best = fewest
        .iter()
        .find(|(k, _)| *k == kind)
        .map_or(per, |(_, b)| *b);
    if best > 0.0 && (per - best) / best * 100.0 >= TIE_PCT {
        format!("{per:.1} ({kind}: {:.1}× the fewest)", per / best)
    } else {
        format!("{per:.1} ({kind}: fewest)")
    }
}

/// The strategy × scenario cells over the whole matrix: how many ran, and which broke.
#[derive(Debug, Default)]
struct Tally {
    /// Cells that ran.
    ran: usize,
    /// Cells that ran without a verdict, by reason.
    unknown: Vec<&'static str>,
    /// Cells that broke as theory predicted: `row × strategy`.
    predicted: Vec<String>,
    /// Cells that broke and theory did not predict it.
    unexpected: Vec<String>,
}

impl Tally {
    fn add(&mut self, strategy: &str, breaks: Breaks) {
        self.ran += breaks.ran;
        self.unknown.extend(breaks.unknown);
        let cell = |row: String| format!("{row} × {strategy}");
        self.predicted
            .extend(breaks.predicted.into_iter().map(cell));
        self.unexpected
            .extend(breaks.unexpected.into_iter().map(cell));
    }

    /// The "Breaking points" headline; a few cells are named, more are left to the matrix.
    fn line(&self) -> String {
        let cite = |cells: &[String]| {
            if cells.is_empty() {
                String::new()
            } else {
                format!(" ({})", cells.join(", "))
            }
        };
        format!(
            "{} of {} strategy × scenario cells violated in at least one trial: {} predicted by theory{}, {} unexpected{}.{} Cells: the verdict matrix.",
            self.predicted.len() + self.unexpected.len(),
            self.ran,
            self.predicted.len(),
            if self.predicted.len() <= 4 {
                cite(&self.predicted)
            } else {
                String::new()
            },
            self.unexpected.len(),
            if self.unexpected.len() <= 4 {
                cite(&self.unexpected)
            } else {
                " (marked in the matrix)".to_owned()
            },
            self.unknown_words()
        )
    }

    /// ` 3 more cells have no verdict, counted neither safe nor violated: no contention 2, worker
    /// died 1.`; empty when every cell that ran has a verdict.
    fn unknown_words(&self) -> String {
        if self.unknown.is_empty() {
            return String::new();
        }
        let mut counts: Vec<(&str, usize)> = Vec::new();
        for why in &self.unknown {
            match counts.iter_mut().find(|(w, _)| w == why) {
                Some((_, n)) => *n += 1,
                None => counts.push((why, 1)),
            }
        }
        let each: Vec<String> = counts.iter().map(|(w, n)| format!("{w} {n}")).collect();
        let n = self.unknown.len();
        format!(
            " {n} more cell{} {} no verdict, counted neither safe nor violated: {}.",
            if n == 1 { "" } else { "s" },
            if n == 1 { "has" } else { "have" },
            each.join(", ")
        )
    }
}

/// The "Fastest" headline: distributed strategies that held under the headline row; every one
/// within the tie rule.
fn fastest(grid: &Grid<'_>, head: &Row<'_>, under: &str) -> String {
    let held: Vec<(&str, f64)> = grid
        .strategies
        .iter()
        .filter(|s| s.is_distributed())
        .filter_map(|s| head.case(&s.id).filter(|c| ran(c)))
        // Ranked on a complete, measured window only: an interrupted or empty one has no rate.
        .filter(|c| {
            c.safety.verdict == Verdict::Safe
                && c.status == CaseStatus::Complete
                && c.window.measured_ms > 0.0
        })
        .map(|c| (c.strategy.as_str(), c.throughput.completed_per_s))
        .collect();
    match tied(&held, true).as_slice() {
        [] => format!("no distributed strategy held under {under}."),
        [(id, v)] => format!(
            "under {under}, {id}: {} CS/s; the next is more than {TIE_PCT:.0} % slower. Cells: {under} × {id} and the other CS/s cells of the scorecard.",
            rate(*v)
        ),
        many => format!(
            "a tie under {under}: {} are within {TIE_PCT:.0} % of each other ({}), too close to rank on this machine. Cells: the scorecard's CS/s column, {under} × {}.",
            many.len(),
            many.iter()
                .map(|(id, v)| format!("{id} {}", rate(*v)))
                .collect::<Vec<_>>()
                .join(", "),
            many.iter()
                .map(|(id, _)| id.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// The server-work headline: the fewest client requests per CS per server kind, never across kinds.
fn fewest_requests_line(
    grid: &Grid<'_>,
    head: &Row<'_>,
    fewest: &[(String, f64)],
    under: &str,
) -> String {
    let mut per_kind = Vec::new();
    for (kind, _) in fewest {
        let list: Vec<(&str, f64)> = grid
            .strategies
            .iter()
            .filter_map(|s| head.case(&s.id).filter(|c| ran(c)))
            .filter_map(|c| {
                let (k, per) = requests_per_cs(c)?;
                (k == *kind).then_some((c.strategy.as_str(), per))
            })
            .collect();
        let names: Vec<String> = tied(&list, false)
            .iter()
            .map(|(id, v)| format!("{id} {v:.1}"))
            .collect();
        per_kind.push(format!(
            "{kind}: {}{}",
            names.join(", "),
            if names.len() > 1 { " (tie)" } else { "" }
        ));
    }
    if per_kind.is_empty() {
        "no server counted its requests.".to_owned()
    } else {
        format!(
            "{}. Not comparable across kinds (a Redis command, an etcd gRPC message and a ZooKeeper packet are different work). Cells: the scorecard's requests column, {under}.",
            per_kind.join("; ")
        )
    }
}

/// The headline on the strategies that lost leases or failed renewals holding many locks.
fn losses_line(losers: &[String]) -> String {
    format!(
        "holding many locks, {} lost leases or failed renewals: a lock that drops leases under load is not safe there. Cells: many locks × {}.",
        losers.join(", "),
        losers.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ties_within_the_rule_are_all_named() {
        let list = [("a", 770.0), ("b", 767.0), ("c", 600.0), ("d", 700.0)];
        let names: Vec<String> = tied(&list, true).into_iter().map(|(id, _)| id).collect();
        assert_eq!(names, ["a", "b", "d"]);
        let names: Vec<String> = tied(&list, false).into_iter().map(|(id, _)| id).collect();
        assert_eq!(names, ["c"]);
    }
}
