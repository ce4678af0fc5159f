//! "Which strategy when": conclusions derived from the measured numbers by stated rules. Each
//! [`Finding`] carries its rule, its conclusion and the figures that produced it, so a reader can check
//! the reasoning; nothing here is written ahead of the measurement.
//!
//! Terms the rules use:
//! - a *candidate* is a distributed strategy (its lock state lives in Redis, etcd or ZooKeeper);
//!   in-process references and controls are measured but never recommended;
//! - only a candidate with watchdog leases (its capabilities declare `auto_renew`, and its lock is not
//!   the holder's connection, [`StrategyInfo::connection_lock`]) is judged *safe* or picked below: a
//!   lock without a lease has no watchdog to judge;
//! - a strategy is *safe* when every one of its watchdog-lease cases, in every *discriminating*
//!   scenario, had no overlap, no lost update and no accepted stale write. Fixed-lease cases are judged
//!   per scenario (a fixed lease is a setting the user chooses, not a property of the strategy), and a
//!   row is discriminating when at least one candidate held there: a fault that every strategy
//!   violates (a pause longer than any lease) is a limit of leases, reported as such, not a reason to
//!   rule one strategy out;
//! - the *headline* row is the `baseline` scenario's watchdog row (else the first watchdog row): the
//!   everyday workload the speed rules read;
//! - a throughput whose 95 % interval ([`RateInterval`]) overlaps the best's is a tie; where either
//!   case has a single trial (no interval), and for latencies, figures within [`TIE_PCT`] of the best
//!   are a tie on a noisy machine.

use crate::comparison::StrategyInfo;
use crate::format::{ms, rate};
use crate::grid::{Grid, Row, Violations, ran};
use crate::model::{CaseResult, Verdict};
use crate::rate_interval::RateInterval;

/// Differences smaller than this (percent of the best) are reported as ties.
pub const TIE_PCT: f64 = 10.0;

/// A renewal that lands with less than this fraction of the TTL left is flagged: a pause of that
/// length would have lost the lock.
pub const THIN_MARGIN: f64 = 1.0 / 3.0;

/// One derived conclusion.
#[derive(Debug, Clone, PartialEq)]
pub struct Finding {
    /// Short name: what question it answers.
    pub title: String,
    /// How the conclusion follows from the numbers.
    pub rule: String,
    /// The conclusion.
    pub conclusion: String,
    /// The figures behind it, one line each.
    pub evidence: Vec<String>,
}

/// Every finding the grid supports, most important first.
pub fn derive(grid: &Grid<'_>) -> Vec<Finding> {
    let candidates: Vec<&StrategyInfo> = grid
        .strategies
        .iter()
        .filter(|s| is_candidate(grid, s))
        .collect();
    // Only a strategy with watchdog leases is judged by the watchdog-lease rule and picked by the
    // rules that read its verdict.
    let (leased, unleased): (Vec<&StrategyInfo>, Vec<&StrategyInfo>) = candidates
        .iter()
        .copied()
        .partition(|s| has_watchdog_lease(grid, s));
    let safe: Vec<&StrategyInfo> = leased
        .iter()
        .copied()
        .filter(|s| unsafe_watchdog_rows(grid, &s.id).is_empty())
        .collect();
    let mut findings = Vec::new();
    findings.extend(violations_by_row(grid));
    findings.extend(safety_overall(grid, &leased, &safe, &unleased));
    if let Some(headline) = headline_row(grid) {
        // The speed and cost rules read the safe strategies; when no strategy is safe in every
        // scenario that told strategies apart (a fuller suite breaks each somewhere), they read those
        // that held under the headline row, and say so.
        let mut safe_ids: Vec<&str> = safe.iter().map(|s| s.id.as_str()).collect();
        let mut among = "among the safe distributed strategies".to_owned();
        if safe_ids.is_empty() {
            // Those that broke in the fewest scenarios that told strategies apart, and held here.
            let broken = |id: &str| unsafe_watchdog_rows(grid, id).len();
            let held_here = |id: &str| {
                headline
                    .case(id)
                    .is_some_and(|c| ran(c) && c.safety.verdict == Verdict::Safe)
            };
            let fewest = leased
                .iter()
                .filter(|s| held_here(&s.id))
                .map(|s| broken(&s.id))
                .min()
                .unwrap_or(0);
            safe_ids = leased
                .iter()
                .filter(|s| held_here(&s.id) && broken(&s.id) == fewest)
                .map(|s| s.id.as_str())
                .collect();
            among = format!(
                "among the distributed strategies that held under {} and broke in the fewest scenarios that told strategies apart ({fewest} each: none held in all of them, see the breaking points)",
                headline.label
            );
        }
        findings.extend(fastest(headline, &safe_ids, &among));
        findings.extend(lowest(
            headline,
            &safe_ids,
            &among,
            "Shortest acquire tail",
            "acquire p99",
            |c| c.latency.acquire.p99_ms,
        ));
        findings.extend(lowest(
            headline,
            &safe_ids,
            &among,
            "Fastest hand-off",
            "hand-off p50 (release → next waiting holder acquires)",
            |c| c.latency.handoff.p50_ms,
        ));
        findings.extend(cheapest_on_server(headline, &safe_ids, &among));
    }
    findings.extend(renewal_margins(grid, &candidates));
    findings.extend(late_loss_signals(grid));
    findings.extend(fencing_saves(grid));
    findings.extend(references(grid));
    findings
}

fn is_candidate(grid: &Grid<'_>, strategy: &StrategyInfo) -> bool {
    if grid.is_yardstick(&strategy.id) {
        return false;
    }
    if strategy.is_distributed() {
        return true;
    }
    // A single run's file does not say where a strategy keeps its state: one with a server measured
    // has one.
    strategy.server.is_empty()
        && grid
            .cases()
            .any(|(_, c)| c.strategy == strategy.id && c.server_cost.is_some())
}

/// Whether `strategy` has watchdog leases: a case of it declares `auto_renew`, and its lock is not
/// the holder's connection ([`StrategyInfo::connection_lock`]).
fn has_watchdog_lease(grid: &Grid<'_>, strategy: &StrategyInfo) -> bool {
    !strategy.connection_lock
        && grid.cases().any(|(_, c)| {
            c.strategy == strategy.id && c.capabilities.as_ref().is_some_and(|k| k.auto_renew)
        })
}

/// Why a candidate is not judged by the watchdog-lease rule.
fn why_no_watchdog_lease(strategy: &StrategyInfo) -> &'static str {
    if strategy.connection_lock {
        "its lock is its holder's connection, not a lease: no watchdog to judge"
    } else {
        "it declares no watchdog lease (auto_renew)"
    }
}

/// Whether some candidate held in `row` (so the row tells strategies apart).
fn discriminating(grid: &Grid<'_>, row: &Row<'_>) -> bool {
    grid.strategies
        .iter()
        .filter(|s| is_candidate(grid, s))
        .filter_map(|s| row.case(&s.id))
        .any(|c| c.safety.verdict == Verdict::Safe)
}

/// The labels of the discriminating watchdog rows where `strategy` violated.
fn unsafe_watchdog_rows(grid: &Grid<'_>, strategy: &str) -> Vec<String> {
    grid.rows
        .iter()
        .filter(|row| !row.is_fixed() && discriminating(grid, row))
        .filter(|row| {
            row.case(strategy)
                .is_some_and(|c| c.safety.verdict == Verdict::Violated)
        })
        .map(|row| row.label.clone())
        .collect()
}

pub(crate) fn headline_row<'g, 'a>(grid: &'g Grid<'a>) -> Option<&'g Row<'a>> {
    grid.rows
        .iter()
        .find(|r| r.scenario() == "baseline" && !r.is_fixed())
        .or_else(|| grid.rows.iter().find(|r| !r.is_fixed()))
}

/// A case that held, with what its trials can say: `zookeeper (0 of 3 trials, rate ≤ 56 %)`, the
/// bound being the upper end of the 95 % Wilson interval; a single run says `1 run`.
fn held_words(case: &CaseResult) -> String {
    let (k, n) = crate::grid::violated_of(case);
    let (_, high) = crate::rate_interval::wilson(k, n);
    format!(
        "{} ({k} of {n} trial{}, rate ≤ {:.0} %)",
        case.strategy,
        if n == 1 { "" } else { "s" },
        high * 100.0
    )
}

fn violations_by_row(grid: &Grid<'_>) -> Vec<Finding> {
    let mut findings = Vec::new();
    for row in &grid.rows {
        let cases: Vec<&CaseResult> = grid
            .in_columns(row)
            .into_iter()
            .filter(|c| ran(c))
            .collect();
        let violated: Vec<&&CaseResult> = cases
            .iter()
            .filter(|c| c.safety.verdict == Verdict::Violated)
            .collect();
        if violated.is_empty() {
            continue;
        }
        let held: Vec<String> = cases
            .iter()
            .filter(|c| c.safety.verdict == Verdict::Safe)
            .map(|c| held_words(c))
            .collect();
        let lesson = row.run.if_violated.clone().unwrap_or_else(|| {
            "a strategy that violates here is not a lock under this scenario".into()
        });
        let names: Vec<&str> = violated.iter().map(|c| c.strategy.as_str()).collect();
        let mut conclusion = format!(
            "Violated under {}: {} ({} of {} that ran).",
            row.label,
            names.join(", "),
            violated.len(),
            cases.len()
        );
        if !held.is_empty() {
            conclusion.push_str(&format!(
                " No violation seen: {} (a rate up to the bound is not ruled out).",
                held.join(", ")
            ));
        }
        if !discriminating(grid, row) {
            conclusion.push_str(
                " No distributed strategy held: a limit of leases under this fault, not of one strategy.",
            );
        }
        findings.push(Finding {
            title: format!("Unsafe under {}", row.label),
            rule: format!(
                "any overlap, lost update or accepted stale write under {} ⇒ {lesson}",
                row.label
            ),
            conclusion,
            evidence: violated
                .iter()
                .map(|c| {
                    format!(
                        "{}: {}{}",
                        c.strategy,
                        Violations::of(c).describe(),
                        crate::grid::trials_line(c)
                            .map(|t| format!("; {t}"))
                            .unwrap_or_default()
                    )
                })
                .collect(),
        });
    }
    findings
}

fn safety_overall(
    grid: &Grid<'_>,
    candidates: &[&StrategyInfo],
    safe: &[&StrategyInfo],
    unleased: &[&StrategyInfo],
) -> Option<Finding> {
    if candidates.is_empty() {
        return None;
    }
    let watchdog_rows: Vec<&str> = grid
        .rows
        .iter()
        .filter(|r| !r.is_fixed() && discriminating(grid, r))
        .map(|r| r.label.as_str())
        .collect();
    let universal: Vec<&str> = grid
        .rows
        .iter()
        .filter(|r| !r.is_fixed() && !discriminating(grid, r))
        .map(|r| r.label.as_str())
        .collect();
    let mut evidence = Vec::new();
    for s in candidates {
        let bad = unsafe_watchdog_rows(grid, &s.id);
        let judged: Vec<&CaseResult> = grid
            .cases()
            .filter(|(row, c)| {
                !row.is_fixed() && discriminating(grid, row) && c.strategy == s.id && ran(c)
            })
            .map(|(_, c)| c)
            .collect();
        let cases = judged.len();
        let trials: u32 = judged.iter().map(|c| crate::grid::violated_of(c).1).sum();
        if bad.is_empty() {
            evidence.push(format!(
                "{}: 0 violations in {cases} watchdog cases ({trials} trials)",
                s.id
            ));
        } else {
            evidence.push(format!("{}: violated under {}", s.id, bad.join(", ")));
        }
    }
    for s in unleased {
        evidence.push(format!(
            "{}: not judged here: {}",
            s.id,
            why_no_watchdog_lease(s)
        ));
    }
    let names: Vec<&str> = safe.iter().map(|s| s.id.as_str()).collect();
    let conclusion = if names.is_empty() {
        "No distributed strategy held in every watchdog case.".to_owned()
    } else {
        format!(
            "No violation in any trial of the scenarios that told strategies apart: {} (each cell rests on its trials, listed above; a rare break is not ruled out).",
            names.join(", ")
        )
    };
    let excluded = if universal.is_empty() {
        String::new()
    } else {
        format!(
            " ({} left out: no distributed strategy held there)",
            universal.join(", ")
        )
    };
    Some(Finding {
        title: "Safe with watchdog leases".into(),
        rule: format!(
            "a strategy with watchdog leases (auto_renew; a lock that is its holder's connection has none) is safe when all its watchdog-lease cases ({}){excluded} had, in every trial, 0 overlaps, 0 lost updates, 0 accepted stale writes and no token that went backwards or repeated; only safe strategies are picked below",
            watchdog_rows.join(", ")
        ),
        conclusion,
        evidence,
    })
}

/// Candidates of `row` in `safe`, with a figure, best first by `better`.
fn ranked<'a>(
    row: &Row<'a>,
    safe: &[&str],
    figure: impl Fn(&CaseResult) -> Option<f64>,
    higher_is_better: bool,
) -> Vec<(&'a CaseResult, f64)> {
    let mut list: Vec<(&CaseResult, f64)> = safe
        .iter()
        .filter_map(|id| row.case(id))
        .filter(|c| ran(c))
        .filter_map(|c| figure(c).filter(|v| v.is_finite()).map(|v| (c, v)))
        .collect();
    list.sort_by(|a, b| {
        let order = a.1.total_cmp(&b.1);
        if higher_is_better {
            order.reverse()
        } else {
            order
        }
    });
    list
}

/// The ranking's evidence lines and the names tied with the best.
fn ranking_lines(
    list: &[(&CaseResult, f64)],
    show: impl Fn(f64) -> String,
) -> (Vec<String>, Vec<String>) {
    let Some(&(_, best)) = list.first() else {
        return (Vec::new(), Vec::new());
    };
    let mut lines = Vec::new();
    let mut ties = Vec::new();
    for (i, (case, value)) in list.iter().enumerate() {
        let diff = if best != 0.0 {
            (value - best) / best * 100.0
        } else {
            0.0
        };
        if i > 0 && diff.abs() < TIE_PCT {
            ties.push(case.strategy.clone());
        }
        let note = if i == 0 {
            String::new()
        } else {
            format!(" ({diff:+.0}% vs the best)")
        };
        lines.push(format!("{}: {}{note}", case.strategy, show(*value)));
    }
    (lines, ties)
}

fn tie_sentence(ties: &[String]) -> String {
    if ties.is_empty() {
        String::new()
    } else {
        format!(
            " Within {TIE_PCT:.0}% (a tie on this machine): {}.",
            ties.join(", ")
        )
    }
}

fn fastest(row: &Row<'_>, safe: &[&str], among: &str) -> Option<Finding> {
    let list = ranked(row, safe, |c| Some(c.throughput.completed_per_s), true);
    let (best, value) = *list.first()?;
    let (evidence, _) = ranking_lines(&list, |v| format!("{} CS/s", rate(v)));
    // A tie by the 95 % intervals where both have one (two or more trials), else by TIE_PCT.
    let best_interval = RateInterval::of_case(best);
    let (mut overlapping, mut close) = (Vec::new(), Vec::new());
    for (case, v) in &list[1..] {
        let interval = RateInterval::of_case(case);
        if interval.bounds.is_some() && best_interval.bounds.is_some() {
            if !interval.apart(&best_interval) {
                overlapping.push(case.strategy.clone());
            }
        } else if value != 0.0 && ((v - value) / value * 100.0).abs() < TIE_PCT {
            close.push(case.strategy.clone());
        }
    }
    let mut ties = String::new();
    if !overlapping.is_empty() {
        ties.push_str(&format!(
            " Not told apart from it (95 % intervals overlap): {}.",
            overlapping.join(", ")
        ));
    }
    ties.push_str(&tie_sentence(&close));
    let shown = best_interval.bounds.map_or_else(String::new, |(lo, hi)| {
        format!(" (95 % interval {}–{})", rate(lo), rate(hi))
    });
    Some(Finding {
        title: format!("Fastest safe strategy under {}", row.label),
        rule: format!(
            "highest throughput (completed critical sections per second) under {} {among}; a \
             strategy whose 95 % interval overlaps the best's is not told apart from it",
            row.label
        ),
        conclusion: format!("{}: {} CS/s{}.{ties}", best.strategy, rate(value), shown),
        evidence,
    })
}

fn lowest(
    row: &Row<'_>,
    safe: &[&str],
    among: &str,
    title: &str,
    what: &str,
    figure: impl Fn(&CaseResult) -> Option<f64>,
) -> Option<Finding> {
    let list = ranked(row, safe, figure, false);
    let (best, value) = *list.first()?;
    let (evidence, ties) = ranking_lines(&list, |v| format!("{} ms", ms(Some(v))));
    Some(Finding {
        title: format!("{title} under {}", row.label),
        rule: format!("lowest {what} under {} {among}", row.label),
        conclusion: format!(
            "{}: {} ms.{}",
            best.strategy,
            ms(Some(value)),
            tie_sentence(&ties)
        ),
        evidence,
    })
}

fn cheapest_on_server(row: &Row<'_>, safe: &[&str], among: &str) -> Option<Finding> {
    // Client requests over the whole case (every trial) per critical section completed in it.
    let per_cs =
        |c: &CaseResult| c.per_critical_section(c.server_cost.as_ref()?.client_requests? as f64);
    let list = ranked(row, safe, per_cs, false);
    let (best, value) = *list.first()?;
    let (evidence, _) = ranking_lines(&list, |v| {
        format!("{v:.1} client requests per critical section")
    });
    let kind = best
        .server_cost
        .as_ref()
        .map(|s| s.kind.clone())
        .unwrap_or_default();
    Some(Finding {
        title: format!("Least server work under {}", row.label),
        rule: format!(
            "fewest requests the clients sent per completed critical section under {} {among}, as the server counted them (etcd: gRPC messages received, keep-alive stream messages included; ZooKeeper: packets received; Redis: the commands lockers' clients sent, a script call counting once, as MONITOR sees them, since Redis 7.0's own counters include the commands inside scripts; compare within one server kind). Peers on Redis are left out: their commands are not countable from outside their process",
            row.label
        ),
        conclusion: format!(
            "{} ({kind}): {value:.1} client requests per critical section.",
            best.strategy
        ),
        evidence,
    })
}

fn renewal_margins(grid: &Grid<'_>, candidates: &[&StrategyInfo]) -> Option<Finding> {
    // (strategy, margin ms, ttl ms, row label) of the thinnest margin per strategy.
    let mut thinnest: Vec<(String, f64, f64, String)> = Vec::new();
    for s in candidates {
        let mut worst: Option<(f64, f64, String)> = None;
        for (row, case) in grid.cases() {
            if case.strategy != s.id || row.is_fixed() || case.renewal.renewals == 0 {
                continue;
            }
            let ttl = row.run.results.scenario.workload.watchdog_timeout_ms;
            let Some(margin) = case.renewal.margin.min_ms else {
                continue;
            };
            if ttl > 0.0 && worst.as_ref().is_none_or(|(m, t, _)| margin / ttl < m / t) {
                worst = Some((margin, ttl, row.label.clone()));
            }
        }
        if let Some((m, t, label)) = worst {
            thinnest.push((s.id.clone(), m, t, label));
        }
    }
    if thinnest.is_empty() {
        return None;
    }
    let silent: Vec<&str> = candidates
        .iter()
        .filter(|s| !thinnest.iter().any(|(id, ..)| *id == s.id))
        .map(|s| s.id.as_str())
        .collect();
    thinnest.sort_by(|a, b| (a.1 / a.2).total_cmp(&(b.1 / b.2)));
    let thin: Vec<&str> = thinnest
        .iter()
        .filter(|(_, m, t, _)| m / t < THIN_MARGIN)
        .map(|(id, ..)| id.as_str())
        .collect();
    let conclusion = if thin.is_empty() {
        format!(
            "Every renewal landed with at least a third of the TTL left; thinnest: {} with {} of {} ms.",
            thinnest[0].0,
            ms(Some(thinnest[0].1)),
            ms(Some(thinnest[0].2))
        )
    } else {
        format!(
            "Renewals landed late for {}: a pause as long as their thinnest margin would have lost the lock.",
            thin.join(", ")
        )
    };
    Some(Finding {
        title: "Renewal margin".into(),
        rule: "the smallest TTL left on the server when a renewal landed (watchdog cases); below a third of the TTL the renewal was late (they are due at two thirds left)".into(),
        conclusion,
        evidence: thinnest
            .iter()
            .map(|(id, m, t, label)| {
                format!(
                    "{id}: {} of {} ms ({:.0}%) under {label}",
                    ms(Some(*m)),
                    ms(Some(*t)),
                    m / t * 100.0
                )
            })
            .chain((!silent.is_empty()).then(|| {
                format!(
                    "no margin reported (the server does not say how much TTL was left): {}",
                    silent.join(", ")
                )
            }))
            .collect(),
    })
}

fn late_loss_signals(grid: &Grid<'_>) -> Option<Finding> {
    let late: Vec<String> = grid
        .cases()
        .filter(|(_, c)| c.safety.lost_signal.too_late > 0)
        .map(|(row, c)| {
            format!(
                "{} under {}: {} of {} lost() signals came after another holder had acquired (p50 {} ms late)",
                c.strategy,
                row.label,
                c.safety.lost_signal.too_late,
                c.safety.lost_signal.fired,
                ms(c.safety.lost_signal.lateness.p50_ms)
            )
        })
        .collect();
    if late.is_empty() {
        return None;
    }
    Some(Finding {
        title: "lost() is not a fence".into(),
        rule: "a lost() signal that arrives after another holder acquired ⇒ stopping work on lost() does not protect the data; the protected resource must check fencing tokens".into(),
        conclusion: format!("Late loss signals in {} case(s).", late.len()),
        evidence: late,
    })
}

fn fencing_saves(grid: &Grid<'_>) -> Option<Finding> {
    let saves: Vec<String> = grid
        .cases()
        .filter_map(|(row, c)| {
            let rejected = c.safety.fencing.stale_rejected.filter(|n| *n > 0)?;
            Some(format!(
                "{} under {}: {rejected} stale write(s) rejected, {} accepted",
                c.strategy,
                row.label,
                c.safety.fencing.stale_accepted.unwrap_or(0)
            ))
        })
        .collect();
    if saves.is_empty() {
        return None;
    }
    Some(Finding {
        title: "Fencing tokens saved writes".into(),
        rule: "stale writes rejected by the resource's token check ⇒ the lease had already failed; only a resource that checks tokens kept the data intact".into(),
        conclusion: format!("Fencing rejected stale writes in {} case(s).", saves.len()),
        evidence: saves,
    })
}

fn references(grid: &Grid<'_>) -> Option<Finding> {
    let refs: Vec<String> = grid
        .strategies
        .iter()
        .filter(|s| !s.server.is_empty() && !s.is_distributed())
        .map(|s| format!("{} ({})", s.id, s.server))
        .collect();
    if refs.is_empty() {
        return None;
    }
    Some(Finding {
        title: "References".into(),
        rule: "a strategy whose lock state lives in the lockbench process is a yardstick for the driver and the oracle, not a lock across machines".into(),
        conclusion: format!("Measured but never picked: {}.", refs.join(", ")),
        evidence: Vec::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::comparison::Comparison;

    fn fixture() -> Comparison {
        Comparison::read(include_str!("../tests/fixtures/compare-quick.json")).expect("fixture")
    }

    fn finding<'f>(findings: &'f [Finding], title: &str) -> &'f Finding {
        findings
            .iter()
            .find(|f| f.title == title)
            .unwrap_or_else(|| panic!("no finding {title}"))
    }

    #[test]
    fn a_strategy_that_held_says_how_many_trials_that_rests_on() {
        let c = fixture();
        let findings = derive(&Grid::new(&c));
        let unsafe_rows: Vec<&Finding> = findings
            .iter()
            .filter(|f| f.title.starts_with("Unsafe under"))
            .collect();
        assert!(!unsafe_rows.is_empty(), "{findings:?}");
        let held = unsafe_rows
            .iter()
            .find(|f| f.conclusion.contains("No violation seen"))
            .expect("a row where some strategy held");
        assert!(
            held.conclusion
                .contains("redis-watchdog (0 of 1 trial, rate ≤ 79 %)"),
            "{held:?}"
        );
        assert!(
            unsafe_rows
                .iter()
                .all(|f| !f.conclusion.contains(" Held: "))
        );
        let safe = finding(&findings, "Safe with watchdog leases");
        assert!(
            safe.conclusion.contains("a rare break is not ruled out"),
            "{safe:?}"
        );
    }

    #[test]
    fn only_strategies_with_watchdog_leases_are_judged_safe_with_them() {
        let c = fixture();
        let findings = derive(&Grid::new(&c));
        let safe = finding(&findings, "Safe with watchdog leases");
        assert!(safe.conclusion.contains("zookeeper"), "{safe:?}");
        // A lock that is its holder's connection has no lease: not judged, not picked, and said so.
        let mut c = fixture();
        c.strategies[3].connection_lock = true; // zookeeper, standing in for postgres-advisory
        let findings = derive(&Grid::new(&c));
        let safe = finding(&findings, "Safe with watchdog leases");
        assert!(!safe.conclusion.contains("zookeeper"), "{safe:?}");
        assert!(
            safe.evidence.contains(
                &"zookeeper: not judged here: its lock is its holder's connection, not a lease: no watchdog to judge"
                    .to_owned()
            ),
            "{safe:?}"
        );
        let fastest = finding(&findings, "Fastest safe strategy under baseline");
        assert!(
            !fastest.evidence.iter().any(|l| l.starts_with("zookeeper")),
            "{fastest:?}"
        );
        // Likewise a strategy whose capabilities declare no watchdog lease.
        let mut c = fixture();
        for run in &mut c.runs {
            for case in &mut run.results.cases {
                if case.strategy == "zookeeper"
                    && let Some(caps) = case.capabilities.as_mut()
                {
                    caps.auto_renew = false;
                }
            }
        }
        let findings = derive(&Grid::new(&c));
        let safe = finding(&findings, "Safe with watchdog leases");
        assert!(!safe.conclusion.contains("zookeeper"), "{safe:?}");
        assert!(
            safe.evidence.contains(
                &"zookeeper: not judged here: it declares no watchdog lease (auto_renew)"
                    .to_owned()
            ),
            "{safe:?}"
        );
    }

    /// Gives every baseline case of `c` three trials of 1 s at these rates, by strategy.
    fn with_rates(c: &mut Comparison, rates: &[(&str, [u64; 3])]) {
        let run = c
            .runs
            .iter_mut()
            .find(|r| r.results.scenario.name == "baseline")
            .expect("fixture");
        for case in &mut run.results.cases {
            let Some((_, r)) = rates.iter().find(|(s, _)| *s == case.strategy) else {
                continue;
            };
            let each: Vec<serde_json::Value> = r
                .iter()
                .enumerate()
                .map(|(seed, completed)| {
                    serde_json::json!({"seed": seed, "verdict": "safe", "reasons": [],
                        "completed": completed, "measured_ms": 1000.0})
                })
                .collect();
            case.trials = Some(
                serde_json::from_value(serde_json::json!({"runs": 3, "violated": 0, "each": each}))
                    .expect("fixture"),
            );
            case.throughput.completed_per_s = r.iter().sum::<u64>() as f64 / 3.0;
        }
    }

    /// "Fastest" ties by the 95 % intervals, not by a fixed 10 %: 15 % apart with noisy trials is
    /// not told apart; 5 % apart with steady trials is.
    #[test]
    fn the_fastest_is_told_apart_by_its_interval_not_by_ten_percent() {
        let mut c = fixture();
        let fastest_of = |c: &Comparison| {
            finding(
                &derive(&Grid::new(c)),
                "Fastest safe strategy under baseline",
            )
            .clone()
        };
        with_rates(
            &mut c,
            &[
                ("redis-watchdog", [1000, 1300, 1150]),
                ("zookeeper", [900, 1100, 1000]),
                ("etcd-lease", [500, 510, 505]),
            ],
        );
        let f = fastest_of(&c);
        assert!(
            f.conclusion
                .starts_with("redis-watchdog: 1\u{2009}150 CS/s (95 % interval"),
            "{f:?}"
        );
        assert!(
            f.conclusion
                .contains("Not told apart from it (95 % intervals overlap): zookeeper."),
            "{f:?}"
        );
        with_rates(
            &mut c,
            &[
                ("redis-watchdog", [1050, 1051, 1052]),
                ("zookeeper", [1000, 1001, 1002]),
            ],
        );
        let f = fastest_of(&c);
        assert!(
            !f.conclusion.contains("zookeeper"),
            "5 % apart, intervals apart: {f:?}"
        );
        assert!(!f.conclusion.contains("Within 10%"), "{f:?}");
    }
}
