//! The sections a comparison gets only when it holds their data — "Redlock and clocks" (the Redlock
//! faults and the server restarts, with fencing token regressions) and "Peers beside their
//! counterparts" (each real library against the lockbench strategy that models it) — as plain text
//! cells, so Markdown and HTML differ only in layout.

use crate::agreement::{self, Agreement};
use crate::comparison::StrategyInfo;
use crate::format::{ms, rate};
use crate::grid::{Grid, ran, rate_interval, verdict_word, violated_of};
use crate::model::CaseResult;

/// The server kind of Redlock's independent Redis nodes.
const REDIS_NODES: &str = "redis-nodes";

/// The scenarios of the "Redlock and clocks" section, in the order the section lists them.
pub const REDLOCK_SCENARIOS: [&str; 7] = [
    "redlock-kill-minority",
    "redlock-restart-no-delay",
    "redlock-restart-delayed",
    "redlock-clock-jump",
    "process-pause",
    "server-restart",
    "server-restart-fsync",
];

/// Scenarios whose restarts show as fencing token regressions.
const RESTARTS: [&str; 2] = ["server-restart", "server-restart-fsync"];

/// One fault of the "Redlock and clocks" section.
#[derive(Debug, Clone, PartialEq)]
pub struct Fault {
    /// The row's label (scenario, with its lease mode when it runs several).
    pub label: String,
    /// The mechanism, one sentence from the scenario file; None when the file says nothing.
    pub mechanism: Option<String>,
    /// The table's columns.
    pub columns: Vec<&'static str>,
    /// One row per strategy that ran it.
    pub rows: Vec<Vec<String>>,
}

/// Whether "Redlock and clocks" holds enough for a link from the first screen: more than one
/// strategy × fault row (one row reads better in the verdict matrix).
pub fn worth_a_link(faults: &[Fault]) -> bool {
    faults.iter().map(|f| f.rows.len()).sum::<usize>() > 1
}

/// The faults of "Redlock and clocks" the comparison holds; empty when it holds none. The process
/// pause counts only for Redlock (the strategy, or a peer implementing it): the rows on independent
/// Redis nodes.
pub fn redlock_faults(grid: &Grid<'_>) -> Vec<Fault> {
    let mut faults = Vec::new();
    for name in REDLOCK_SCENARIOS {
        for row in grid.rows.iter().filter(|r| r.scenario() == name) {
            let restarts = RESTARTS.contains(&name);
            let mut columns = vec!["strategy", "violated trials", "95 % interval"];
            if restarts {
                columns.push("token regressions");
            }
            let rows: Vec<Vec<String>> = grid
                .strategies
                .iter()
                .filter_map(|s| Some((s, row.case(&s.id).filter(|c| ran(c))?)))
                .filter(|(s, case)| name != "process-pause" || on_redis_nodes(s, case))
                .map(|(_, case)| {
                    let mut cells = vec![
                        case.strategy.clone(),
                        k_of_n(case),
                        rate_interval(case).unwrap_or_else(|| "-".to_owned()),
                    ];
                    if restarts {
                        cells.push(
                            case.safety
                                .fencing
                                .token_regressions
                                .map_or_else(|| "no fencing".to_owned(), |n| n.to_string()),
                        );
                    }
                    cells
                })
                .collect();
            if rows.is_empty() {
                continue;
            }
            faults.push(Fault {
                label: row.label.clone(),
                mechanism: row.run.results.scenario.theory.clone(),
                columns,
                rows,
            });
        }
    }
    faults
}

/// Whether strategy `s` keeps its locks on independent Redis nodes, as the comparison's strategy list
/// says or, for a single run (whose list does not know the servers), as its case's server cost does.
fn on_redis_nodes(s: &StrategyInfo, case: &CaseResult) -> bool {
    s.server == REDIS_NODES
        || case
            .server_cost
            .as_ref()
            .is_some_and(|cost| cost.kind == REDIS_NODES)
}

/// `2 of 3` violated trials (a single run: `1 of 1` or `0 of 1`).
fn k_of_n(case: &CaseResult) -> String {
    let (k, n) = violated_of(case);
    format!("{k} of {n}")
}

/// `2/3` (`0/1 (0 CS)` when no critical section completed, so "safe" rests on nothing), or the
/// verdict word when the case did not run.
fn k_slash_n(case: Option<&CaseResult>) -> String {
    match case.filter(|c| ran(c)) {
        Some(c) => {
            let (k, n) = violated_of(c);
            if c.operations.completed == 0 {
                format!("{k}/{n} (0 CS)")
            } else {
                format!("{k}/{n}")
            }
        }
        None => verdict_word(case).to_owned(),
    }
}

/// One peer beside its counterpart.
#[derive(Debug, Clone, PartialEq)]
pub struct Pair {
    /// The peer's id.
    pub peer: String,
    /// The lockbench strategy that models it.
    pub counterpart: String,
    /// Rows of `figure | peer | counterpart`.
    pub rows: Vec<[String; 3]>,
}

/// Columns of a [`Pair`] table.
pub fn pair_columns(pair: &Pair) -> [&str; 3] {
    ["figure", &pair.peer, &pair.counterpart]
}

/// Every peer with a counterpart, beside it; empty when the comparison has no peers.
pub fn peer_pairs(grid: &Grid<'_>) -> Vec<Pair> {
    let baseline = grid.rows.iter().find(|r| r.scenario() == "baseline");
    grid.strategies
        .iter()
        .filter_map(|s| Some((s.id.clone(), s.counterpart.clone()?)))
        .map(|(peer, counterpart)| {
            let (p, c) = (
                baseline.and_then(|r| r.case(&peer)),
                baseline.and_then(|r| r.case(&counterpart)),
            );
            let figure = |case: Option<&CaseResult>, f: &dyn Fn(&CaseResult) -> String| {
                case.filter(|c| ran(c))
                    .map_or_else(|| verdict_word(case).to_owned(), f)
            };
            // Client requests when the server counts them for both, else all requests for both.
            let client = [p, c].iter().all(|case| {
                case.and_then(|c| c.server_cost.as_ref())
                    .is_some_and(|s| s.client_requests.is_some())
            });
            let per_cs = |case: &CaseResult| {
                let n = case.server_cost.as_ref().map(|s| match s.client_requests {
                    Some(sent) if client => sent,
                    _ => s.requests,
                });
                n.and_then(|n| case.per_critical_section(n as f64))
                    .map_or_else(|| "n/a".to_owned(), rate)
            };
            let mut rows = vec![
                [
                    "baseline CS/s".to_owned(),
                    figure(p, &|c| rate(c.throughput.completed_per_s)),
                    figure(c, &|c| rate(c.throughput.completed_per_s)),
                ],
                [
                    "baseline acquire p99 (ms)".to_owned(),
                    figure(p, &|c| ms(c.latency.acquire.p99_ms)),
                    figure(c, &|c| ms(c.latency.acquire.p99_ms)),
                ],
                [
                    "baseline hand-off p50 (ms)".to_owned(),
                    figure(p, &|c| ms(c.latency.handoff.p50_ms)),
                    figure(c, &|c| ms(c.latency.handoff.p50_ms)),
                ],
                [
                    format!(
                        "baseline server {} per CS",
                        if client {
                            "client requests"
                        } else {
                            "requests"
                        }
                    ),
                    figure(p, &per_cs),
                    figure(c, &per_cs),
                ],
                [
                    "adapter protocol round trip (ms; about 2 per cycle)".to_owned(),
                    figure(p, &|c| ms(c.protocol_round_trip_ms)),
                    "none (in process)".to_owned(),
                ],
            ];
            for row in &grid.rows {
                match agreement::in_row(row, &counterpart, &peer) {
                    None | Some(Agreement::Agree) => {}
                    Some(other) => rows.push([
                        format!("violated under {} ({})", row.label, other.words()),
                        k_slash_n(row.case(&peer)),
                        k_slash_n(row.case(&counterpart)),
                    ]),
                }
            }
            Pair {
                peer,
                counterpart,
                rows,
            }
        })
        .collect()
}

/// What each strategy cost under baseline, per critical section completed: the "Cost" question's
/// table. Empty when the comparison has no baseline.
#[derive(Debug, Clone, PartialEq)]
pub struct CostTable {
    /// What the client CPU covers (tasks mode: the whole lockbench process, driver and protected
    /// resource included, and a peer's adapter processes; processes mode: the worker processes).
    pub scope: String,
    /// One row per strategy that ran baseline, cells as [`COST_COLUMNS`].
    pub rows: Vec<Vec<String>>,
}

/// The columns of a [`CostTable`].
pub const COST_COLUMNS: [&str; 9] = [
    "strategy",
    "CS/s",
    "client CPU ms / CS",
    "threads",
    "RSS MiB",
    "client requests / CS",
    "server calls / CS",
    "server CPU ms / CS",
    "server kind",
];

/// The cost table of the baseline row, if there is one.
pub fn cost_table(grid: &Grid<'_>) -> Option<CostTable> {
    let row = grid.rows.iter().find(|r| r.scenario() == "baseline")?;
    let mut scope = String::new();
    let rows: Vec<Vec<String>> = grid
        .strategies
        .iter()
        .filter_map(|s| row.case(&s.id).filter(|c| ran(c)))
        .map(|c| {
            scope.clone_from(&c.client_cost.scope);
            let done = c.operations.completed.max(1) as f64;
            let server = c.server_cost.as_ref();
            vec![
                c.strategy.clone(),
                rate(c.throughput.completed_per_s),
                ms(Some(c.client_cost.cpu_seconds * 1e3 / done)),
                c.client_cost.threads_max.to_string(),
                format!(
                    "{:.0}",
                    c.client_cost.rss_max_bytes as f64 / (1024.0 * 1024.0)
                ),
                server
                    .and_then(|s| c.per_critical_section(s.client_requests? as f64))
                    .map_or_else(|| "n/a".to_owned(), |n| format!("{n:.1}")),
                server
                    .and_then(|s| c.per_critical_section(s.requests as f64))
                    .map_or_else(|| "n/a".to_owned(), |n| format!("{n:.1}")),
                server
                    .and_then(|s| c.per_critical_section(s.cpu_seconds? * 1e3))
                    .map_or_else(|| "n/a".to_owned(), |cpu_ms| ms(Some(cpu_ms))),
                server.map_or_else(|| "in-process".to_owned(), |s| s.kind.clone()),
            ]
        })
        .collect();
    (!rows.is_empty()).then_some(CostTable { scope, rows })
}

/// The sentence under the cost table.
pub const COST_NOTE: &str = "Per critical section completed under baseline (every trial pooled): client figures over the measured window, server figures over the whole case (warm-up included), each divided by the critical sections of its own span. Client CPU covers the whole lockbench process in tasks mode (driver and protected resource included, the same for every row; for a peer, also the adapter processes its library runs in) and the worker processes (with their adapters) in processes mode. Client requests: what the clients sent as the server saw it (Redis: commands, a script call once; etcd: gRPC messages, keep-alives included; ZooKeeper: packets); server calls: the work the server counted (Redis: the commands inside scripts included). Compare requests within one server kind. Cost against held locks is charted below (Charts).";
