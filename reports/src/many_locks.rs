//! The many-locks cell of a strategy: what its passes of holding many locks (`compare`'s many-locks
//! entry, a `lockbench scale` run) came to. Every pass is a fresh client holding the same locks again;
//! the cell is flagged ([`FLAG`]) only when a loss or failed renewal repeats in at least
//! [`REPEATED`] passes, reads `sometimes` for a one-off, and always says how many passes it rests on.
//! A strategy the pass leaves out says why.

use crate::comparison::StrategyInfo;
use crate::scale::{CostSeries, PassLosses};

/// How a flagged cell begins.
pub const FLAG: &str = "LOSES LOCKS";

/// Passes with a loss (or failed renewal) that make it a repeated one, flagged.
pub const REPEATED: usize = 2;

/// The cell of a strategy whose lock is its holder's connection ([`StrategyInfo::connection_lock`]):
/// the pass leaves it out, and the cell says why.
pub const CONNECTION_LOCK_AT_SCALE: &str = "one connection per held lock: not measured at scale";

/// The cell of a strategy whose lock lives in the driver's own process: there is no server to hold
/// many locks on.
pub const NO_SERVER_AT_SCALE: &str = "no lock server: not measured at scale";

/// The cell of a strategy the scale data does not have, for no reason the results file gives (a file
/// written before the reasons were recorded, or a strategy the pass was not asked to run).
pub const NOT_IN_THE_PASS: &str = "not in the many-locks pass";

/// A strategy's many-locks cell.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cell {
    /// What it says.
    pub text: String,
    /// Whether it is the red flag: a loss that repeated.
    pub flagged: bool,
    /// Whether any pass measured it (false: the text says why not).
    pub measured: bool,
    /// Whether a pass lost a lease or failed a renewal without it repeating (`sometimes`, or a single
    /// pass): not the flag, and not clean either.
    pub unrepeated_loss: bool,
}

impl Cell {
    fn not_measured(text: impl Into<String>) -> Self {
        Cell {
            text: text.into(),
            flagged: false,
            measured: false,
            unrepeated_loss: false,
        }
    }
}

/// The many-locks cell of `strategy` from the scale data `cost`.
pub fn cell(cost: &[CostSeries], strategy: &StrategyInfo) -> Cell {
    match cost.iter().find(|c| c.strategy == strategy.id) {
        Some(series) => of_passes(&series.passes()),
        None => Cell::not_measured(why_left_out(strategy)),
    }
}

/// Why the pass has no figure of `strategy`: the reason its results file gives, else what its facts
/// say.
pub fn why_left_out(strategy: &StrategyInfo) -> &str {
    if let Some(why) = &strategy.not_at_scale {
        return why;
    }
    if strategy.connection_lock {
        CONNECTION_LOCK_AT_SCALE
    } else if strategy.is_in_process() {
        NO_SERVER_AT_SCALE
    } else {
        NOT_IN_THE_PASS
    }
}

/// The cell of one strategy's passes (the first first).
pub fn of_passes(passes: &[PassLosses]) -> Cell {
    let measured: Vec<&PassLosses> = passes.iter().filter(|p| p.steps > 0).collect();
    let n = measured.len();
    if n == 0 {
        let why = passes
            .iter()
            .find_map(|p| p.stopped.as_deref())
            .unwrap_or("no step reached");
        return Cell::not_measured(format!("not measured: {why}"));
    }
    let troubled: Vec<&PassLosses> = measured.iter().copied().filter(|p| p.troubled()).collect();
    let text = match troubled.len() {
        0 => {
            // Holding a step cleanly holds the smaller ones too: the least of the passes held in all.
            let held = measured.iter().map(|p| p.held_cleanly).min().unwrap_or(0);
            format!("held {held} in {n} of {}", passes_word(n))
        }
        1 => {
            let pass = troubled[0];
            let what = one_pass_losses(pass);
            if n == 1 {
                format!("1 pass only, not repeated: {what}")
            } else {
                format!("sometimes: 1 of {} {what}", passes_word(n))
            }
        }
        _ => format!("{FLAG}: {}", repeated_losses(&measured)),
    };
    Cell {
        text,
        flagged: troubled.len() >= REPEATED,
        measured: true,
        unrepeated_loss: troubled.len() == 1,
    }
}

/// `pass` or `passes`.
fn passes_word(n: usize) -> String {
    format!("{} {}", n, if n == 1 { "pass" } else { "passes" })
}

/// `lost 368 of 10000 (2380 failed renewals)` or `failed 1013 renewals at 10000 locks`, with the
/// thinnest margin when known.
fn one_pass_losses(pass: &PassLosses) -> String {
    let Some(worst) = pass.worst else {
        return String::new();
    };
    let mut text = if worst.lost > 0 {
        let mut text = format!("lost {} of {}", worst.lost, worst.held_locks);
        if worst.renew_failures > 0 {
            text.push_str(&format!(" ({})", failed_renewals(worst.renew_failures)));
        }
        text
    } else {
        format!(
            "failed {} renewal{} at {} locks",
            worst.renew_failures,
            plural(worst.renew_failures),
            worst.held_locks
        )
    };
    if let Some(m) = worst.thinnest_margin_ms {
        text.push_str(&format!(", thinnest margin {m:.0} ms"));
    }
    text
}

/// `2380 failed renewals`.
fn failed_renewals(n: u64) -> String {
    format!("{n} failed renewal{}", plural(n))
}

fn plural(n: u64) -> &'static str {
    if n == 1 { "" } else { "s" }
}

/// `lost locks in 3 of 3 passes: 34, 120, 386 of 10000; failed renewals in 2 of 3 passes: 0, 17, 9
/// (thinnest margin 19 ms)`: each measured pass's figure in run order.
fn repeated_losses(measured: &[&PassLosses]) -> String {
    let n = measured.len();
    let mut parts = Vec::new();
    let lost: Vec<u64> = measured.iter().map(|p| p.lost()).collect();
    let with_lost = lost.iter().filter(|l| **l > 0).count();
    if with_lost > 0 {
        parts.push(format!(
            "lost locks in {with_lost} of {}: {}",
            passes_word(n),
            counts_of_held(measured, PassLosses::lost)
        ));
    }
    let failures = measured.iter().filter(|p| p.renew_failures() > 0).count();
    if failures > 0 {
        let each: Vec<String> = measured
            .iter()
            .map(|p| p.renew_failures().to_string())
            .collect();
        let at = match held_of(measured) {
            Some(held) if with_lost == 0 => format!(" at {held} locks"),
            _ => String::new(),
        };
        parts.push(format!(
            "failed renewals in {failures} of {}: {}{at}",
            passes_word(n),
            each.join(", ")
        ));
    }
    let margin = measured
        .iter()
        .filter_map(|p| p.worst.and_then(|w| w.thinnest_margin_ms))
        .min_by(f64::total_cmp)
        .map(|m| format!(" (thinnest margin {m:.0} ms)"))
        .unwrap_or_default();
    format!("{}{margin}", parts.join("; "))
}

/// The held count of the troubled passes' worst steps when they share one (`10000`), else `None`.
fn held_of(measured: &[&PassLosses]) -> Option<String> {
    let mut held = measured
        .iter()
        .filter_map(|p| p.worst.map(|w| w.held_locks));
    let first = held.next()?;
    held.all(|h| h == first).then(|| first.to_string())
}

/// `34, 0, 386 of 10000` when the worst steps held as many locks, else `34 of 1000, 0, 386 of 10000`.
fn counts_of_held(measured: &[&PassLosses], figure: fn(&PassLosses) -> u64) -> String {
    match held_of(measured) {
        Some(held) => {
            let each: Vec<String> = measured.iter().map(|p| figure(p).to_string()).collect();
            format!("{} of {held}", each.join(", "))
        }
        None => {
            let each: Vec<String> = measured
                .iter()
                .map(|p| match p.worst {
                    Some(w) if figure(p) > 0 => format!("{} of {}", figure(p), w.held_locks),
                    _ => figure(p).to_string(),
                })
                .collect();
            each.join(", ")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::comparison::IN_PROCESS;
    use crate::scale::{CostPass, CostPoint};

    fn point(held_locks: u64, lost: u64, renew_failures: u64) -> CostPoint {
        CostPoint {
            held_locks,
            renew_calls_per_s: None,
            server_cpu_ms_per_s: None,
            client_cpu_percent: 1.0,
            rss_mb: 10.0,
            threads: 3,
            lost,
            renew_failures,
            thinnest_margin_ms: None,
        }
    }

    /// A series of one pass per entry of `passes`: (lost, failed renewals) at 10000 held locks, after
    /// a clean step of 1000.
    fn series(passes: &[(u64, u64)]) -> CostSeries {
        let points =
            |&(lost, failed): &(u64, u64)| vec![point(1000, 0, 0), point(10_000, lost, failed)];
        CostSeries {
            strategy: "redis-guard-thread".into(),
            stopped: None,
            points: points(&passes[0]),
            repeats: passes[1..]
                .iter()
                .map(|p| CostPass {
                    stopped: None,
                    points: points(p),
                })
                .collect(),
        }
    }

    fn info(id: &str) -> StrategyInfo {
        StrategyInfo {
            id: id.into(),
            server: "redis".into(),
            distributed: true,
            description: String::new(),
            counterpart: None,
            connection_lock: false,
            not_at_scale: None,
        }
    }

    fn cell_of(passes: &[(u64, u64)]) -> Cell {
        cell(&[series(passes)], &info("redis-guard-thread"))
    }

    #[test]
    fn a_loss_in_every_pass_is_flagged_with_each_pass_count() {
        let c = cell_of(&[(34, 0), (120, 0), (386, 0)]);
        assert!(c.flagged && c.measured);
        assert_eq!(
            c.text,
            "LOSES LOCKS: lost locks in 3 of 3 passes: 34, 120, 386 of 10000"
        );
    }

    #[test]
    fn a_loss_in_two_of_three_passes_repeats_and_is_flagged() {
        let c = cell_of(&[(368, 2380), (0, 0), (12, 40)]);
        assert!(c.flagged);
        assert_eq!(
            c.text,
            "LOSES LOCKS: lost locks in 2 of 3 passes: 368, 0, 12 of 10000; failed renewals in 2 \
             of 3 passes: 2380, 0, 40"
        );
        // Failed renewals alone, repeated, flag too (a lease at risk), and say at how many locks.
        let c = cell_of(&[(0, 1013), (0, 870), (0, 0)]);
        assert!(c.flagged);
        assert_eq!(
            c.text,
            "LOSES LOCKS: failed renewals in 2 of 3 passes: 1013, 870, 0 at 10000 locks"
        );
    }

    #[test]
    fn a_loss_in_one_of_three_passes_is_sometimes_not_the_red_flag() {
        let c = cell_of(&[(0, 0), (368, 2380), (0, 0)]);
        assert!(!c.flagged && c.unrepeated_loss, "{c:?}");
        assert_eq!(
            c.text,
            "sometimes: 1 of 3 passes lost 368 of 10000 (2380 failed renewals)"
        );
        let c = cell_of(&[(0, 1), (0, 0), (0, 0)]);
        assert!(!c.flagged);
        assert_eq!(
            c.text,
            "sometimes: 1 of 3 passes failed 1 renewal at 10000 locks"
        );
    }

    #[test]
    fn a_cell_that_held_in_every_pass_says_how_many() {
        let c = cell_of(&[(0, 0), (0, 0), (0, 0)]);
        assert!(!c.flagged && c.measured && !c.unrepeated_loss);
        assert_eq!(c.text, "held 10000 in 3 of 3 passes");
    }

    #[test]
    fn one_pass_is_never_the_red_flag_and_says_so() {
        // A file written before passes: its one pass cannot show a loss repeats.
        let c = cell_of(&[(368, 2380)]);
        assert!(!c.flagged);
        assert_eq!(
            c.text,
            "1 pass only, not repeated: lost 368 of 10000 (2380 failed renewals)"
        );
        assert_eq!(cell_of(&[(0, 0)]).text, "held 10000 in 1 of 1 pass");
    }

    #[test]
    fn passes_that_held_nothing_are_not_counted_and_none_at_all_says_why() {
        let mut s = series(&[(0, 0), (0, 0)]);
        s.repeats.push(CostPass {
            stopped: Some("stopped at 0: could not connect".into()),
            points: Vec::new(),
        });
        let c = cell(&[s], &info("redis-guard-thread"));
        assert_eq!(c.text, "held 10000 in 2 of 2 passes");
        let s = CostSeries {
            strategy: "py-redis-py".into(),
            stopped: Some("stopped at 0: its library renews no lease by itself".into()),
            points: Vec::new(),
            repeats: Vec::new(),
        };
        let c = cell(&[s], &info("py-redis-py"));
        assert!(!c.measured && !c.flagged);
        assert_eq!(
            c.text,
            "not measured: stopped at 0: its library renews no lease by itself"
        );
    }

    #[test]
    fn a_strategy_left_out_says_why() {
        let cost = [series(&[(0, 0)])];
        // The reason the results file records.
        let mut naive = info("redis-keyspace-naive");
        naive.not_at_scale =
            Some("its locks are lost and re-taken at every expiry by design".into());
        let c = cell(&cost, &naive);
        assert!(!c.measured && !c.flagged);
        assert_eq!(
            c.text,
            "its locks are lost and re-taken at every expiry by design"
        );
        // Older files: what the facts say.
        let mut advisory = info("postgres-advisory");
        advisory.connection_lock = true;
        assert_eq!(cell(&cost, &advisory).text, CONNECTION_LOCK_AT_SCALE);
        let mut memory = info("memory");
        memory.server = IN_PROCESS.into();
        assert_eq!(cell(&cost, &memory).text, NO_SERVER_AT_SCALE);
        assert_eq!(cell(&cost, &info("zookeeper")).text, NOT_IN_THE_PASS);
    }

    #[test]
    fn worst_steps_of_different_sizes_name_each_size() {
        let mut s = series(&[(5, 0), (7, 0)]);
        s.points = vec![point(1000, 5, 0)];
        let c = cell(&[s], &info("redis-guard-thread"));
        assert_eq!(
            c.text,
            "LOSES LOCKS: lost locks in 2 of 2 passes: 5 of 1000, 7 of 10000"
        );
    }
}
