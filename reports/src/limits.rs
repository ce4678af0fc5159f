//! Absolute limits for CI (`--fail-on "p99>200ms"`): a bound on one figure of every complete case, or
//! of one scenario's cases, and the cases of a results file that cross it.
//!
//! Spelling: `[SCENARIO:]METRIC OP VALUE`, where METRIC is an acquire-latency percentile (`p50`,
//! `p90`, `p99`, `p999`, `max`), `cs/s` (completed critical sections per second) or `unavailable`
//! (the longest stretch a client waited for a key nobody held); OP is `>` or `<`; VALUE is a
//! duration (`200ms`, `1.5s`, `250us`) for the times and a number for `cs/s`.

use std::fmt;

use crate::Comparison;
use crate::model::{CaseResult, CaseStatus, Summary};

/// The figure a limit bounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Metric {
    /// A percentile of the acquire latency, or its largest sample.
    Acquire(Percentile),
    /// Completed critical sections per second.
    Throughput,
    /// The longest stretch in which a client waited for a key that no client held.
    Unavailable,
}

/// A point of a latency distribution.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Percentile {
    /// The median.
    P50,
    /// The 90th percentile.
    P90,
    /// The 99th percentile.
    P99,
    /// The 99.9th percentile.
    P999,
    /// The largest sample.
    Max,
}

impl Percentile {
    const ALL: [(&'static str, Percentile); 5] = [
        ("p50", Percentile::P50),
        ("p90", Percentile::P90),
        ("p99", Percentile::P99),
        ("p999", Percentile::P999),
        ("max", Percentile::Max),
    ];

    fn of(self, s: &Summary) -> Option<f64> {
        match self {
            Percentile::P50 => s.p50_ms,
            Percentile::P90 => s.p90_ms,
            Percentile::P99 => s.p99_ms,
            Percentile::P999 => s.p999_ms,
            Percentile::Max => s.max_ms,
        }
    }
}

impl Metric {
    fn name(self) -> &'static str {
        match self {
            Metric::Acquire(p) => Percentile::ALL
                .iter()
                .find(|(_, q)| *q == p)
                .map_or("p99", |(name, _)| name),
            Metric::Throughput => "cs/s",
            Metric::Unavailable => "unavailable",
        }
    }

    /// The case's figure: ms for the times, critical sections per second for throughput; none
    /// when the case has no such figure (no acquire, an availability not measured).
    fn of(self, case: &CaseResult) -> Option<f64> {
        match self {
            Metric::Acquire(p) => p.of(&case.latency.acquire),
            Metric::Throughput => Some(case.throughput.completed_per_s),
            Metric::Unavailable => case
                .availability
                .as_ref()
                .and_then(|a| a.unavailable())
                .map(|gap| gap.to_ms - gap.from_ms),
        }
    }

    fn is_time(self) -> bool {
        self != Metric::Throughput
    }
}

/// A bound on one figure: `p99>200ms` fails every case whose p99 is above 200 ms.
#[derive(Debug, Clone, PartialEq)]
pub struct Limit {
    /// Only this scenario's cases; every scenario's when none.
    pub scenario: Option<String>,
    /// The figure bounded.
    pub metric: Metric,
    /// True for `>` (the figure may not exceed the value), false for `<`.
    pub above: bool,
    /// The bound: ms for the times, critical sections per second for `cs/s`.
    pub value: f64,
    /// The text it was parsed from, for messages.
    text: String,
}

/// A case that crossed a limit.
#[derive(Debug, Clone, PartialEq)]
pub struct Breach {
    /// `scenario · strategy · lease`.
    pub case: String,
    /// The case's figure, with its unit.
    pub figure: String,
}

impl fmt::Display for Limit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl Limit {
    /// Parses `[SCENARIO:]METRIC>VALUE` or `[SCENARIO:]METRIC<VALUE`; the error names what was
    /// expected.
    pub fn parse(text: &str) -> Result<Limit, String> {
        let spelled = text.trim();
        let (scenario, rest) = match spelled.split_once(':') {
            Some((s, rest)) if !s.trim().is_empty() => (Some(s.trim().to_owned()), rest),
            Some(_) => return Err(format!("{spelled:?}: a scenario name before ':'")),
            None => (None, spelled),
        };
        let (at, above) = match (rest.find('>'), rest.find('<')) {
            (Some(i), None) => (i, true),
            (None, Some(i)) => (i, false),
            _ => {
                return Err(format!(
                    "{spelled:?}: expected METRIC>VALUE or METRIC<VALUE (e.g. p99>200ms, cs/s<500)"
                ));
            }
        };
        let (name, value) = (rest[..at].trim(), rest[at + 1..].trim());
        let metric = metric_named(name).ok_or_else(|| {
            format!("{spelled:?}: unknown metric {name:?}; one of p50, p90, p99, p999, max, cs/s, unavailable")
        })?;
        let value = if metric.is_time() {
            millis(value).ok_or_else(|| {
                format!("{spelled:?}: {value:?} is not a duration (200ms, 1.5s, 250us)")
            })?
        } else {
            value
                .parse::<f64>()
                .ok()
                .filter(|v| v.is_finite() && *v >= 0.0)
                .ok_or_else(|| format!("{spelled:?}: {value:?} is not a rate (500, 1200.5)"))?
        };
        Ok(Limit {
            scenario,
            metric,
            above,
            value,
            text: spelled.to_owned(),
        })
    }

    /// The complete cases of `results` that cross this limit, in run order. A case without the
    /// figure crosses no limit but `cs/s<…` cannot miss it (every complete case has a throughput).
    pub fn breaches(&self, results: &Comparison) -> Vec<Breach> {
        results
            .runs
            .iter()
            .map(|r| &r.results)
            .filter(|r| self.scenario.as_ref().is_none_or(|s| *s == r.scenario.name))
            .flat_map(|r| r.cases.iter().map(move |c| (&r.scenario.name, c)))
            .filter(|(_, c)| c.status == CaseStatus::Complete)
            .filter_map(|(scenario, c)| {
                let figure = self.metric.of(c)?;
                let crossed = if self.above {
                    figure > self.value
                } else {
                    figure < self.value
                };
                crossed.then(|| Breach {
                    case: case_label(scenario, c),
                    figure: self.shown(figure),
                })
            })
            .collect()
    }

    /// Whether the results hold the scenario this limit names (a limit on a scenario that did not
    /// run checks nothing, which a gate must not take for a pass).
    pub fn applies_to(&self, results: &Comparison) -> bool {
        self.scenario
            .as_ref()
            .is_none_or(|s| results.runs.iter().any(|r| r.results.scenario.name == *s))
    }

    fn shown(&self, figure: f64) -> String {
        if self.metric.is_time() {
            format!("{} {figure:.1} ms", self.metric.name())
        } else {
            format!("{figure:.1} cs/s")
        }
    }
}

/// `scenario · strategy · lease`: a case as the gates name it.
pub fn case_label(scenario: &str, case: &CaseResult) -> String {
    format!("{scenario} · {} · {}", case.strategy, case.lease)
}

fn metric_named(name: &str) -> Option<Metric> {
    let name = name.to_ascii_lowercase();
    match name.as_str() {
        "cs/s" => Some(Metric::Throughput),
        "unavailable" => Some(Metric::Unavailable),
        _ => Percentile::ALL
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, p)| Metric::Acquire(*p)),
    }
}

/// `200ms`, `1.5s`, `250us` as milliseconds.
fn millis(text: &str) -> Option<f64> {
    let split = text.find(|c: char| c.is_ascii_alphabetic())?;
    let (number, unit) = text.split_at(split);
    let number: f64 = number.trim().parse().ok()?;
    let scale = match unit.trim() {
        "us" | "µs" => 0.001,
        "ms" => 1.0,
        "s" => 1000.0,
        "m" | "min" => 60_000.0,
        "h" => 3_600_000.0,
        _ => return None,
    };
    (number.is_finite() && number >= 0.0).then_some(number * scale)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_parse_with_their_units_and_bad_ones_say_what_was_expected() {
        let l = Limit::parse("p99>200ms").expect("parses");
        assert_eq!(
            (l.scenario.as_deref(), l.metric, l.above, l.value),
            (None, Metric::Acquire(Percentile::P99), true, 200.0)
        );
        let l = Limit::parse("baseline:cs/s<500").expect("parses");
        assert_eq!(
            (l.scenario.as_deref(), l.metric, l.above, l.value),
            (Some("baseline"), Metric::Throughput, false, 500.0)
        );
        assert_eq!(
            Limit::parse("unavailable>1.5s").expect("parses").value,
            1500.0
        );
        assert_eq!(Limit::parse("max>250us").expect("parses").value, 0.25);
        for (bad, says) in [
            ("p98>1s", "unknown metric"),
            ("p99>fast", "not a duration"),
            ("p99=1s", "expected METRIC>VALUE"),
            ("cs/s<many", "not a rate"),
            (":p99>1s", "a scenario name"),
        ] {
            let e = Limit::parse(bad).expect_err("refused");
            assert!(e.contains(says), "{bad}: {e}");
        }
    }
}
