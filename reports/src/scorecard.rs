//! The first screen: one scorecard row per strategy (throughput with its 95 % interval, acquire p99,
//! client requests per critical section against the fewest on the same server kind, where it broke —
//! predicted or not —, fencing, what became of the data, how long a fault left the lock unavailable)
//! and the headline lines drawn from those cells, each naming the cells it rests on. "Fastest" names
//! one strategy only when its 95 % interval lies above every other's, else the tie; requests per CS
//! within [`TIE_PCT`] are named as ties. The driver's yardstick (a lock in its own process, no
//! server) has its row last, labelled, and its own line: it is never ranked.

use crate::format::{ms, rate};
use crate::grid::{
    Grid, NO_FENCING_DATA, Row, ran, stale_writes_undetectable, verdict_word, violated_of,
};
use crate::many_locks;
use crate::model::{CaseResult, CaseStatus, DataState, Expectation, Verdict, Violation};
use crate::rate_interval::RateInterval;
use crate::rules::{TIE_PCT, headline_row};
use crate::scale::CostSeries;

/// The data column ([`COLUMNS`]).
pub const DATA: &str = "data";

/// The liveness column ([`COLUMNS`]): the longest a fault left the lock unavailable.
pub const UNAVAILABLE: &str = "unavailable";

/// Scorecard columns.
pub const COLUMNS: [&str; 9] = [
    "strategy",
    "CS/s (95 % interval)",
    "acquire p99 ms",
    "client requests per CS",
    "breaks under (predicted)",
    "breaks under (unexpected)",
    "fencing",
    DATA,
    UNAVAILABLE,
];

/// The column added with a many-locks (`lockbench scale`) pass.
pub const MANY_LOCKS: &str = "many locks";

/// The yardstick's strategy cell: its id and this.
pub const YARDSTICK: &str = "yardstick";

/// Under the scorecard: how to read it.
pub const NOTE: &str = "CS/s: completed critical sections per second, the mean of the trials' own rates with its 95 % interval (Student's t; the trials of all strategies ran interleaved, so a drift of the machine falls on each; none with a single trial); a strategy is named fastest only when its interval lies above every other's, else the strategies whose intervals overlap the fastest's are a tie; client requests per CS are compared only with strategies on the same server kind; a break is predicted when the scenario's theory says this strategy may violate there, and each scenario it broke under says how often: always (theory predicts a break every time, and every trial with a verdict broke or the first settled it), every trial: k of n, or sometimes: k of n, with the 95 % Wilson interval of the rate when every planned trial ran; data: harmed when an update was lost or a stale write accepted in any scenario (the scenarios are those it broke under), “no fencing: stale writes not detectable” for a strategy without fencing tokens (the resource cannot tell a stale write from a rightful one, so none was counted; a lost update still reads harmed), intact otherwise; unavailable: the longest stretch of a fault scenario's measured window in which a client waited for a key that no client held (a crashed or cut-off holder's lease running out, a failover), from the oracle's own intervals, the worst over the fault scenarios and their trials' pooled first trial, with the scenario (≥: no lock was granted again before the case ended; files from before it was measured give the longest stretch without any grant instead; a scenario marked “committed run of DATE” was not run by this command: the default suite leaves it out for time and shows it from its committed results file in docs/results/); the yardstick row (a lock in the driver's own process, no server) shows what the driver itself can do and is never ranked.";

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
    /// Per row, whether it is the driver's yardstick ([`Grid::is_yardstick`]): shown last and
    /// labelled, never ranked.
    pub yardstick: Vec<bool>,
    /// The headline lines: (label, text with the cells it rests on).
    pub headlines: Vec<(String, String)>,
}

/// `770 (95 % 745–795)`, or `770` without an interval (fewer than two trials).
pub fn rate_figure(estimate: &RateInterval) -> String {
    match estimate.bounds {
        Some((low, high)) => format!(
            "{} (95 % {}–{})",
            rate(estimate.mean),
            rate(low),
            rate(high)
        ),
        None => rate(estimate.mean),
    }
}

/// The CS/s cell of `case` ([`rate_figure`] of its [`RateInterval`]).
fn rate_cell(case: &CaseResult) -> String {
    rate_figure(&RateInterval::of_case(case))
}

/// Client requests over the whole case per critical section completed, with the server kind.
fn requests_per_cs(case: &CaseResult) -> Option<(String, f64)> {
    let cost = case.server_cost.as_ref()?;
    let per = case.per_critical_section(cost.client_requests? as f64)?;
    per.is_finite().then(|| (cost.kind.clone(), per))
}

/// How often `case`, violated, broke in `row`: `always` where theory predicts a break every time and
/// every trial that has a verdict broke (or the first settled it); otherwise `every trial: 3 of 3` or
/// `sometimes: 2 of 9, 95 % 8–56 %`, so a race reads as one.
pub(crate) fn how_often(row: &Row<'_>, case: &CaseResult) -> String {
    let (k, n) = violated_of(case);
    let theory = row
        .run
        .results
        .scenario
        .expected(&case.strategy, &case.lease);
    let settled = case.trials.as_ref().is_some_and(|t| t.stopped_early);
    if settled || (k == n && theory == Some(Expectation::Violated)) {
        return "always".to_owned();
    }
    let interval = case
        .trials
        .as_ref()
        .and_then(|t| t.interval())
        .map(|(low, high)| format!(", 95 % {}", crate::grid::interval(low, high)))
        .unwrap_or_default();
    if k == n {
        format!("every trial: {k} of {n}{interval}")
    } else {
        format!("sometimes: {k} of {n}{interval}")
    }
}

/// Whether a violation of `case` in `row` was predicted (theory says violated or either).
pub(crate) fn predicted(row: &Row<'_>, case: &CaseResult) -> bool {
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
    let mut yardstick = Vec::new();
    let mut tally = Tally::default();
    let mut losers: Vec<String> = Vec::new();
    let mut yardsticks: Vec<String> = Vec::new();
    // The grid lists the yardsticks last: their rows close the table.
    for s in &grid.strategies {
        let breaks = Breaks::of(grid, &s.id);
        let scale = many_locks::cell(cost, s);
        if scale.flagged {
            losers.push(s.id.clone());
        }
        unexpected.push(!breaks.unexpected.is_empty());
        let case = head.case(&s.id).filter(|c| ran(c));
        let is_yardstick = grid.is_yardstick(&s.id);
        yardstick.push(is_yardstick);
        let name = if is_yardstick {
            if let Some(c) = case {
                yardsticks.push(format!(
                    "{} {} CS/s",
                    s.id,
                    rate(c.throughput.completed_per_s)
                ));
            }
            format!("{} ({YARDSTICK})", s.id)
        } else {
            s.id.clone()
        };
        let mut cells = strategy_cells(name, case, &breaks, &fewest);
        cells.push(unavailable_cell(grid, &s.id));
        if !cost.is_empty() {
            cells.push(scale.text);
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
    if !yardsticks.is_empty() {
        headlines.push((
            "Yardstick, not ranked".to_owned(),
            yardstick_line(&yardsticks, &under),
        ));
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
        yardstick,
        headlines,
    })
}

/// The worst unavailability a fault caused `strategy`: the longest measured stretch without a grant
/// ([`crate::model::Availability::unavailable`]) over its cases that ran with one, in ms, with the
/// row's label and whether no lock was granted again before the case ended; `None` when no case of
/// it measured one (no fault scenario ran it).
pub fn worst_unavailable(grid: &Grid<'_>, strategy: &str) -> Option<(f64, String, bool)> {
    let mut worst: Option<(f64, String, bool)> = None;
    for row in &grid.rows {
        let Some(c) = row.case(strategy).filter(|c| ran(c)) else {
            continue;
        };
        let Some(a) = &c.availability else {
            continue;
        };
        let Some(gap) = a.unavailable() else {
            continue;
        };
        let length = gap.to_ms - gap.from_ms;
        if worst.as_ref().is_some_and(|(w, ..)| *w >= length) {
            continue;
        }
        // No grant in any bin after the gap's first one: it ran to the end of the case.
        let open = a.bin_ms > 0.0
            && a.grants
                .iter()
                .skip((gap.from_ms / a.bin_ms).floor() as usize + 1)
                .all(|g| *g == 0);
        worst = Some((length, row.label.clone(), open));
    }
    worst
}

/// `2126 ms (network-partition)`, `≥ 2598 ms (network-delay)` (no grant again before the case
/// ended), `-` (no fault scenario measured it).
fn unavailable_cell(grid: &Grid<'_>, strategy: &str) -> String {
    match worst_unavailable(grid, strategy) {
        Some((length, label, open)) => format!(
            "{}{} ms ({label})",
            if open { "≥ " } else { "" },
            ms(Some(length))
        ),
        None => "-".to_owned(),
    }
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
    /// Whether any case that ran could not see a stale write (no fencing tokens).
    undetectable: bool,
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
            breaks.undetectable |= stale_writes_undetectable(c);
            if violated_of(c).0 == 0 {
                continue;
            }
            let entry = format!("{} ({})", row.label, how_often(row, c));
            if predicted(row, c) {
                breaks.predicted.push(entry);
            } else {
                breaks.unexpected.push(entry);
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

/// The scorecard's cells of `strategy` ([`COLUMNS`] up to the data), `case` being its case in the
/// headline row.
fn strategy_cells(
    strategy: String,
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
    // Without fencing tokens a stale write goes unseen: the data cannot be called intact.
    if breaks.undetectable {
        data.push(NO_FENCING_DATA.to_owned());
    }
    let data = if breaks.ran == 0 {
        "-".to_owned()
    } else if data.is_empty() {
        "intact".to_owned()
    } else {
        data.join("; ")
    };
    vec![
        strategy,
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

/// `redis-watchdog 770 (95 % 745–795)`.
fn named_figure(id: &str, estimate: &RateInterval) -> String {
    format!("{id} {}", rate_figure(estimate))
}

/// The "Fastest" headline: distributed strategies that held under the headline row. One is named
/// alone only when its 95 % interval lies above every other's; otherwise every strategy whose
/// interval overlaps the fastest's, or that has none (a single trial), is named in a tie.
fn fastest(grid: &Grid<'_>, head: &Row<'_>, under: &str) -> String {
    let mut held: Vec<(&str, RateInterval)> = grid
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
        .map(|c| (c.strategy.as_str(), RateInterval::of_case(c)))
        .collect();
    held.sort_by(|a, b| b.1.mean.total_cmp(&a.1.mean));
    let Some(&(best_id, best)) = held.first() else {
        if !grid.strategies.iter().any(|s| s.is_distributed()) {
            // A single run's file does not record where each strategy's lock lives.
            return "not ranked: this results file does not say which strategies are distributed."
                .to_owned();
        }
        return format!("no distributed strategy held under {under}.");
    };
    if held.len() == 1 {
        return format!(
            "under {under}, {best_id}: {}, the only distributed strategy that held there. Cells: {under} × {best_id}.",
            cs_per_s(&best)
        );
    }
    // Sorted fastest first, and the fastest's own interval decides who ties with it.
    let others: Vec<&(&str, RateInterval)> = held[1..]
        .iter()
        .filter(|(_, e)| e.bounds.is_none() || best.bounds.is_none() || !best.apart(e))
        .collect();
    let list = |of: &[&(&str, RateInterval)]| {
        of.iter()
            .map(|(id, e)| named_figure(id, e))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let cells = std::iter::once(best_id)
        .chain(others.iter().map(|(id, _)| *id))
        .collect::<Vec<_>>()
        .join(", ");
    if others.is_empty() {
        let (next_id, next) = &held[1];
        format!(
            "under {under}, {best_id}: {}; its 95 % interval lies above every other's (the next, {}). Cells: {under} × {best_id} and the other CS/s cells of the scorecard.",
            cs_per_s(&best),
            named_figure(next_id, next)
        )
    } else if best.bounds.is_none() && others.iter().all(|(_, e)| e.bounds.is_none()) {
        format!(
            "not ranked under {under}: a single trial gives no 95 % interval to rank on ({}, {}). Cells: the scorecard's CS/s column, {under} × {cells}.",
            named_figure(best_id, &best),
            list(&others)
        )
    } else {
        let one = others.len() == 1;
        let missing = best.bounds.is_none() || others.iter().any(|(_, e)| e.bounds.is_none());
        format!(
            "a tie under {under}: the fastest, {}, and {} whose 95 % interval{}{} ({}), too close to rank on this machine. Cells: the scorecard's CS/s column, {under} × {cells}.",
            named_figure(best_id, &best),
            others.len(),
            if one { " overlaps it" } else { "s overlap it" },
            match (missing, one) {
                (false, _) => "",
                (true, true) => " or is missing (a single trial)",
                (true, false) => " or are missing (a single trial)",
            },
            list(&others)
        )
    }
}

/// `770 CS/s (95 % 745–795)`, or `770 CS/s` without an interval.
pub fn cs_per_s(estimate: &RateInterval) -> String {
    match estimate.bounds {
        Some((low, high)) => format!(
            "{} CS/s (95 % {}–{})",
            rate(estimate.mean),
            rate(low),
            rate(high)
        ),
        None => format!("{} CS/s", rate(estimate.mean)),
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

/// The headline on the yardsticks: what the driver itself does with a lock in its own process.
fn yardstick_line(yardsticks: &[String], under: &str) -> String {
    format!(
        "under {under}, {}: a lock in the driver's own process with no server, so what the driver itself can do (the ceiling of every figure above), not a contender: it is never ranked. Cells: the scorecard's {YARDSTICK} row.",
        yardsticks.join(", ")
    )
}

/// The headline on the strategies that lost leases or failed renewals holding many locks.
fn losses_line(losers: &[String]) -> String {
    format!(
        "holding many locks, {} lost leases or failed renewals in {} or more passes: a lock that drops leases under load is not safe there. Cells: many locks × {}.",
        losers.join(", "),
        many_locks::REPEATED,
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

    use crate::comparison::Comparison;
    use crate::model::{Availability, Gap};

    fn fixture() -> Comparison {
        Comparison::read(include_str!("../tests/fixtures/compare-quick.json")).expect("fixture")
    }

    /// The scorecard row of `strategy` (its first cell starts with the id).
    fn row<'c>(card: &'c Scorecard, strategy: &str) -> &'c [String] {
        card.rows
            .iter()
            .find(|r| r[0] == strategy || r[0].starts_with(&format!("{strategy} (")))
            .unwrap_or_else(|| panic!("no row {strategy}"))
    }

    fn cell<'c>(card: &'c Scorecard, strategy: &str, column: &str) -> &'c str {
        let at = card
            .columns
            .iter()
            .position(|c| *c == column)
            .unwrap_or_else(|| panic!("no column {column}"));
        &row(card, strategy)[at]
    }

    /// Every case of `strategy` in `c`.
    fn cases_of<'c>(
        c: &'c mut Comparison,
        strategy: &'c str,
    ) -> impl Iterator<Item = &'c mut CaseResult> {
        c.runs
            .iter_mut()
            .flat_map(|r| r.results.cases.iter_mut())
            .filter(move |case| case.strategy == strategy)
    }

    /// Gives `strategy`'s baseline case trials of `completed` critical sections in 1 s each, their
    /// pooled rate and window.
    fn with_baseline_trials(c: &mut Comparison, strategy: &str, completed: &[u64]) {
        use crate::model::{Trial, Trials};
        let n = completed.len();
        for run in &mut c.runs {
            if run.results.scenario.name != "baseline" {
                continue;
            }
            for case in &mut run.results.cases {
                if case.strategy != strategy {
                    continue;
                }
                case.throughput.completed_per_s = completed.iter().sum::<u64>() as f64 / n as f64;
                case.window.measured_ms = 1000.0 * n as f64;
                case.trials = Some(Trials {
                    runs: n as u32,
                    violated: 0,
                    rate_low: None,
                    rate_high: None,
                    stopped_early: false,
                    fault_not_applied: 0,
                    unknown: 0,
                    stopped_by: None,
                    each: completed
                        .iter()
                        .enumerate()
                        .map(|(i, &completed)| Trial {
                            seed: i as u64,
                            verdict: Verdict::Safe,
                            reasons: Vec::new(),
                            completed,
                            measured_ms: Some(1000.0),
                        })
                        .collect(),
                });
            }
        }
    }

    #[test]
    fn the_fastest_is_named_alone_only_when_its_interval_is_above_every_other() {
        let mut c = fixture();
        // 734 ± 4.303 · 4 / √3 = 724–744 against 587 ± 17 = 570–604 and 422 ± 5 = 417–427.
        with_baseline_trials(&mut c, "redis-watchdog", &[730, 734, 738]);
        with_baseline_trials(&mut c, "redis-keyspace-naive", &[580, 587, 594]);
        with_baseline_trials(&mut c, "zookeeper", &[420, 422, 424]);
        let card = of(&Grid::new(&c), &[]).expect("a scorecard");
        assert_eq!(
            card.headlines[0].1,
            "under baseline, redis-watchdog: 734 CS/s (95 % 724–744); its 95 % interval lies above every other's (the next, redis-keyspace-naive 587 (95 % 570–604)). Cells: baseline × redis-watchdog and the other CS/s cells of the scorecard."
        );
        assert_eq!(
            cell(&card, "redis-watchdog", COLUMNS[1]),
            "734 (95 % 724–744)"
        );
        // Wider spread: 700 ± 4.303 · 60 / √3 = 551–849 reaches 734's interval; 422's does not
        // reach either.
        with_baseline_trials(&mut c, "redis-keyspace-naive", &[640, 700, 760]);
        let card = of(&Grid::new(&c), &[]).expect("a scorecard");
        assert_eq!(
            card.headlines[0].1,
            "a tie under baseline: the fastest, redis-watchdog 734 (95 % 724–744), and 1 whose 95 % interval overlaps it (redis-keyspace-naive 700 (95 % 551–849)), too close to rank on this machine. Cells: the scorecard's CS/s column, baseline × redis-watchdog, redis-keyspace-naive."
        );
        // A higher mean with a wide interval ties with a narrow one below it.
        with_baseline_trials(&mut c, "redis-keyspace-naive", &[720, 760, 800]);
        let fastest = &card_line(&c);
        assert!(
            fastest.starts_with("a tie under baseline: the fastest, redis-keyspace-naive 760 (95 % 661–859), and 1 whose 95 % interval overlaps it (redis-watchdog 734 (95 % 724–744))"),
            "{fastest}"
        );
        // A strategy with a single trial has no interval: it cannot be ranked out.
        with_baseline_trials(&mut c, "redis-keyspace-naive", &[580, 587, 594]);
        with_baseline_trials(&mut c, "zookeeper", &[422]);
        let fastest = &card_line(&c);
        assert!(
            fastest.contains("and 1 whose 95 % interval overlaps it or is missing (a single trial) (zookeeper 422)"),
            "{fastest}"
        );
        // The only one that held is named as such.
        for case in cases_of(&mut c, "redis-keyspace-naive") {
            case.safety.verdict = Verdict::Violated;
        }
        for case in cases_of(&mut c, "zookeeper") {
            case.status = CaseStatus::Interrupted;
        }
        assert_eq!(
            card_line(&c),
            "under baseline, redis-watchdog: 734 CS/s (95 % 724–744), the only distributed strategy that held there. Cells: baseline × redis-watchdog."
        );
    }

    /// The "Fastest" line of `c`.
    fn card_line(c: &Comparison) -> String {
        of(&Grid::new(c), &[]).expect("a scorecard").headlines[0]
            .1
            .clone()
    }

    #[test]
    fn without_fencing_the_data_column_never_claims_intact() {
        let mut c = fixture();
        // redis-keyspace-naive broke in lease-too-short without losing an update; as a strategy
        // without fencing tokens its stale writes would have gone unseen.
        for case in cases_of(&mut c, "redis-keyspace-naive") {
            if let Some(caps) = case.capabilities.as_mut() {
                caps.fencing = false;
            }
            let f = &mut case.safety.fencing;
            (f.enforced, f.stale_rejected, f.stale_accepted) = (false, None, None);
            (f.duplicate_tokens, f.token_regressions) = (None, None);
            case.safety.data = None;
        }
        let grid = Grid::new(&c);
        let card = of(&grid, &[]).expect("a scorecard");
        assert_eq!(cell(&card, "redis-keyspace-naive", DATA), NO_FENCING_DATA);
        assert_eq!(cell(&card, "redis-keyspace-naive", "fencing"), "no");
        assert_eq!(cell(&card, "zookeeper", DATA), "intact");
        // A lost update is seen without tokens: harmed, and still no claim about stale writes.
        for case in cases_of(&mut c, "redis-keyspace-naive") {
            if case.safety.verdict == Verdict::Violated {
                case.safety.lost_updates.lost = 2;
            }
        }
        let grid = Grid::new(&c);
        let card = of(&grid, &[]).expect("a scorecard");
        assert_eq!(
            cell(&card, "redis-keyspace-naive", DATA),
            format!("harmed in 2 scenarios; {NO_FENCING_DATA}")
        );
    }

    #[test]
    fn the_in_process_yardstick_is_set_apart_and_never_ranked() {
        let mut c = fixture();
        // Make the yardstick and one server strategy the two fastest, within the tie rule.
        for case in cases_of(&mut c, "memory") {
            case.throughput.completed_per_s = 800.0;
        }
        let grid = Grid::new(&c);
        assert!(grid.is_yardstick("memory"), "the registry says in-process");
        assert!(!grid.is_yardstick("redis-watchdog"));
        let card = of(&grid, &[]).expect("a scorecard");
        // Its row comes last, labelled; no other row is.
        let last = card.rows.last().expect("rows");
        assert_eq!(last[0], "memory (yardstick)");
        assert_eq!(card.yardstick, [false, false, false, true]);
        assert_eq!(card.rows[0][0], "redis-watchdog");
        // Not in "Fastest", not in a tie; on its own line.
        let fastest = &card.headlines[0].1;
        assert!(!fastest.contains("memory"), "{fastest}");
        assert!(
            fastest.starts_with("not ranked under baseline: a single trial gives no 95 % interval to rank on (redis-watchdog 734, redis-keyspace-naive 587, zookeeper 422)"),
            "{fastest}"
        );
        // Trials give intervals; memory's, far above, still ranks nothing.
        with_baseline_trials(&mut c, "memory", &[800, 800, 800]);
        with_baseline_trials(&mut c, "redis-watchdog", &[730, 734, 738]);
        with_baseline_trials(&mut c, "redis-keyspace-naive", &[580, 587, 594]);
        with_baseline_trials(&mut c, "zookeeper", &[420, 422, 424]);
        let card = of(&Grid::new(&c), &[]).expect("a scorecard");
        let fastest = &card.headlines[0].1;
        assert!(!fastest.contains("memory"), "{fastest}");
        assert!(
            fastest.starts_with("under baseline, redis-watchdog: 734 CS/s (95 % 724–744)"),
            "{fastest}"
        );
        let (label, line) = card
            .headlines
            .iter()
            .find(|(label, _)| label.starts_with("Yardstick"))
            .expect("a yardstick line");
        assert_eq!(label, "Yardstick, not ranked");
        assert!(line.contains("memory 800 CS/s"), "{line}");
        assert!(line.contains("what the driver itself can do"), "{line}");
        // Known from the model, not the id: a server strategy named like it is ranked.
        c.strategies[0].server = "redis".into();
        c.strategies[0].distributed = true;
        assert!(!Grid::new(&c).is_yardstick("memory"));
    }

    #[test]
    fn a_single_run_knows_its_yardstick_by_the_server_it_did_not_ask() {
        let c = fixture();
        let mut run = c.runs[0].results.clone();
        run.scenario.workload.strategies = run.cases.iter().map(|c| c.strategy.clone()).collect();
        let single = Comparison::of_run(run);
        let grid = Grid::new(&single);
        assert!(grid.is_yardstick("memory"));
        assert!(!grid.is_yardstick("zookeeper"));
        assert_eq!(
            grid.strategies.last().map(|s| s.id.as_str()),
            Some("memory")
        );
    }

    #[test]
    fn unavailability_is_the_worst_fault_with_its_scenario() {
        let mut c = fixture();
        let gap = |from_ms, to_ms, grants: Vec<u32>| Availability {
            bin_ms: 100.0,
            max_wait_ms: vec![None; grants.len()],
            grants,
            longest_gap: Some(Gap { from_ms, to_ms }),
            longest_blocked: None,
        };
        for run in &mut c.runs {
            let name = run.results.scenario.name.clone();
            for case in &mut run.results.cases {
                case.availability = match (name.as_str(), case.strategy.as_str()) {
                    // 1200 ms, closed by a grant at 1700 ms.
                    ("long-tail", "redis-watchdog") => Some(gap(
                        500.0,
                        1700.0,
                        vec![1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1],
                    )),
                    // 900 ms: shorter, not the worst.
                    ("baseline", "redis-watchdog") => {
                        Some(gap(100.0, 1000.0, vec![1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 1]))
                    }
                    // No grant again until the case ended.
                    ("long-tail", "zookeeper") => Some(gap(250.0, 3000.0, vec![1, 1, 1, 0, 0, 0])),
                    _ => None,
                };
            }
        }
        let grid = Grid::new(&c);
        let card = of(&grid, &[]).expect("a scorecard");
        assert_eq!(
            cell(&card, "redis-watchdog", UNAVAILABLE),
            "1200 ms (long-tail)"
        );
        assert_eq!(
            cell(&card, "zookeeper", UNAVAILABLE),
            "≥ 2750 ms (long-tail)"
        );
        assert_eq!(cell(&card, "memory", UNAVAILABLE), "-");
    }

    #[test]
    fn a_lock_that_is_a_connection_says_why_it_has_no_many_locks_figure() {
        let mut c = fixture();
        c.strategies[3].connection_lock = true; // zookeeper, standing in for postgres-advisory
        let cost = vec![CostSeries {
            strategy: "redis-watchdog".into(),
            stopped: None,
            points: Vec::new(),
            repeats: Vec::new(),
        }];
        let grid = Grid::new(&c);
        let card = of(&grid, &cost).expect("a scorecard");
        assert_eq!(
            cell(&card, "zookeeper", MANY_LOCKS),
            many_locks::CONNECTION_LOCK_AT_SCALE
        );
        assert_eq!(
            cell(&card, "redis-keyspace-naive", MANY_LOCKS),
            many_locks::NOT_IN_THE_PASS
        );
    }

    #[test]
    fn only_a_repeated_loss_at_scale_makes_a_headline() {
        let c = fixture();
        let point = |lost| crate::scale::CostPoint {
            held_locks: 10_000,
            renew_calls_per_s: None,
            server_cpu_ms_per_s: None,
            client_cpu_percent: 1.0,
            rss_mb: 10.0,
            threads: 3,
            lost,
            renew_failures: 0,
            thinnest_margin_ms: None,
        };
        let series = |strategy: &str, lost: [u64; 3]| CostSeries {
            strategy: strategy.into(),
            stopped: None,
            points: vec![point(lost[0])],
            repeats: lost[1..]
                .iter()
                .map(|&l| crate::scale::CostPass {
                    stopped: None,
                    points: vec![point(l)],
                })
                .collect(),
        };
        let cost = vec![
            series("redis-watchdog", [34, 120, 386]),
            series("zookeeper", [0, 368, 0]),
        ];
        let grid = Grid::new(&c);
        let card = of(&grid, &cost).expect("a scorecard");
        assert_eq!(
            cell(&card, "redis-watchdog", MANY_LOCKS),
            "LOSES LOCKS: lost locks in 3 of 3 passes: 34, 120, 386 of 10000"
        );
        assert_eq!(
            cell(&card, "zookeeper", MANY_LOCKS),
            "sometimes: 1 of 3 passes lost 368 of 10000"
        );
        let losses: Vec<&String> = card
            .headlines
            .iter()
            .filter(|(label, _)| label == "Losses at scale")
            .map(|(_, text)| text)
            .collect();
        assert_eq!(losses.len(), 1);
        assert!(
            losses[0].contains("holding many locks, redis-watchdog lost"),
            "{}",
            losses[0]
        );
        assert!(!losses[0].contains("zookeeper"), "{}", losses[0]);
    }
}
