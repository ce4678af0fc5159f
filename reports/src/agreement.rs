//! Whether a model and one of its libraries agree under one scenario: their violated trials compared
//! by a two-sided Fisher's exact test at 5 %, and, where they differ, the mechanism the scenario file
//! states for it (or "unexplained" when it states none).

use crate::grid::{Row, ran, violated_of};
use crate::model::{Expectation, Scenario};

/// The significance level of the test: a difference with p below it is called a difference.
pub const ALPHA: f64 = 0.05;

/// The legend both sections quote.
pub const LEGEND: &str = "Against the model: \"agree\" = the same verdict (both safe in every trial, or both violated in some) \
     and violation rates the test cannot separate; \"differ\" = a two-sided Fisher's exact test on violated trials / trials \
     separates the two rates at 5 % (p < 0.05), with the mechanism the scenario file states for it (its theory where it \
     predicts different verdicts for the two, or its `either` mechanism), \"unexplained\" when it states none; \
     \"not told apart by N trials\" = one side violated and the other did not, but that many trials cannot separate the \
     rates (0/3 against 3/3 gives p = 0.1; 0/5 against 5/5 gives p = 0.008). A case stopped at its first violation \
     counts the trials it ran.";

/// How a library compares with its model under one scenario.
#[derive(Debug, Clone, PartialEq)]
pub enum Agreement {
    /// The same verdict, and rates the test cannot separate.
    Agree,
    /// Different verdicts, but too few trials to separate the rates.
    NotToldApart {
        /// The model's trials.
        model_trials: u32,
        /// The library's trials.
        library_trials: u32,
    },
    /// The test separates the rates.
    Differ {
        /// The mechanism the scenario file states for the difference; `None`: unexplained.
        mechanism: Option<String>,
    },
}

impl Agreement {
    /// The cell text: `agree`, `not told apart by 3 trials`, `differ: <mechanism>`,
    /// `differ, unexplained`.
    pub fn words(&self) -> String {
        match self {
            Agreement::Agree => "agree".to_owned(),
            Agreement::NotToldApart {
                model_trials,
                library_trials,
            } if model_trials == library_trials => format!(
                "not told apart by {model_trials} trial{}",
                if *model_trials == 1 { "" } else { "s" }
            ),
            Agreement::NotToldApart {
                model_trials,
                library_trials,
            } => format!("not told apart by {model_trials} and {library_trials} trials"),
            Agreement::Differ {
                mechanism: Some(why),
            } => format!("differ: {why}"),
            Agreement::Differ { mechanism: None } => "differ, unexplained".to_owned(),
        }
    }
}

/// How `library` compares with `model` in `row`; `None` when either did not run there.
pub fn in_row(row: &Row<'_>, model: &str, library: &str) -> Option<Agreement> {
    let m = violated_of(row.case(model).filter(|c| ran(c))?);
    let l = violated_of(row.case(library).filter(|c| ran(c))?);
    Some(compare(m, l, || {
        mechanism(&row.run.results.scenario, model, library, &row.lease, m, l)
    }))
}

/// Compares (violated trials, trials) of a model and a library; `mechanism` is asked only for a
/// difference.
pub fn compare(
    model: (u32, u32),
    library: (u32, u32),
    mechanism: impl FnOnce() -> Option<String>,
) -> Agreement {
    if fisher_two_sided(model, library) < ALPHA {
        Agreement::Differ {
            mechanism: mechanism(),
        }
    } else if (model.0 > 0) == (library.0 > 0) {
        Agreement::Agree
    } else {
        Agreement::NotToldApart {
            model_trials: model.1,
            library_trials: library.1,
        }
    }
}

/// What the scenario states for a difference between `model` and `library` under `lease`, whose
/// (violated, trials) are `m` and `l`: the `either` mechanism of each side theory leaves open; else,
/// when theory predicts violated for the side that violated more and safe for the other, the
/// scenario's theory; else nothing (the difference is unexplained).
fn mechanism(
    scenario: &Scenario,
    model: &str,
    library: &str,
    lease: &str,
    m: (u32, u32),
    l: (u32, u32),
) -> Option<String> {
    let mut eithers: Vec<&str> = [model, library]
        .into_iter()
        .filter_map(|id| scenario.either_mechanism(id, lease))
        .collect();
    eithers.dedup();
    if !eithers.is_empty() {
        return Some(eithers.join(" "));
    }
    let (more, less) = if rate(m) > rate(l) {
        (model, library)
    } else {
        (library, model)
    };
    let predicted = scenario.expected(more, lease) == Some(Expectation::Violated)
        && scenario.expected(less, lease) == Some(Expectation::Safe);
    predicted.then(|| scenario.theory.clone()).flatten()
}

/// k / n, 0 for no trials.
fn rate((k, n): (u32, u32)) -> f64 {
    if n == 0 {
        0.0
    } else {
        f64::from(k) / f64::from(n)
    }
}

/// The two-sided p-value of Fisher's exact test on the 2 × 2 table of (violated, trials) `a` against
/// `b`: the probability, with the margins fixed, of a table at most as likely as the one observed.
pub fn fisher_two_sided(a: (u32, u32), b: (u32, u32)) -> f64 {
    let (k1, n1) = (a.0.min(a.1), a.1);
    let (k2, n2) = (b.0.min(b.1), b.1);
    let (k, n) = (k1 + k2, n1 + n2);
    let ln_total = ln_choose(n, k);
    // P(the first side has x of the k violated trials).
    let p = |x: u32| (ln_choose(n1, x) + ln_choose(n2, k - x) - ln_total).exp();
    let observed = p(k1);
    let sum: f64 = (k.saturating_sub(n2)..=k.min(n1))
        .map(p)
        .filter(|&q| q <= observed * (1.0 + 1e-7))
        .sum();
    sum.min(1.0)
}

/// ln of n choose k.
fn ln_choose(n: u32, k: u32) -> f64 {
    let k = k.min(n - k);
    (1..=k)
        .map(|i| (f64::from(n - k + i) / f64::from(i)).ln())
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-6 * b.max(1e-12)
    }

    #[test]
    fn fisher_matches_known_p_values() {
        // Exact values: 2 / C(20, 10); 2 / C(6, 3); 2 × (1 + 100 + 2025) / C(20, 10) for 2/10 against 8/10.
        assert!(close(fisher_two_sided((0, 10), (10, 10)), 2.0 / 184_756.0));
        assert!(close(fisher_two_sided((0, 3), (3, 3)), 0.1));
        assert!(close(
            fisher_two_sided((2, 10), (8, 10)),
            4252.0 / 184_756.0
        ));
        assert!(close(fisher_two_sided((0, 3), (1, 3)), 1.0));
        assert!(close(fisher_two_sided((4, 7), (4, 7)), 1.0));
        assert!(close(fisher_two_sided((0, 1), (1, 1)), 1.0));
    }

    fn judge(s: &Scenario, m: (u32, u32), l: (u32, u32)) -> String {
        compare(m, l, || mechanism(s, "model", "lib", "watchdog", m, l)).words()
    }

    #[test]
    fn every_pair_is_agree_differ_or_not_told_apart() {
        let plain = Scenario::for_tests(&[("default", Expectation::Safe)], &[]);
        assert_eq!(judge(&plain, (0, 3), (0, 3)), "agree");
        assert_eq!(judge(&plain, (1, 3), (3, 3)), "agree");
        assert_eq!(judge(&plain, (0, 3), (1, 3)), "not told apart by 3 trials");
        assert_eq!(judge(&plain, (0, 3), (3, 3)), "not told apart by 3 trials");
        assert_eq!(judge(&plain, (0, 1), (1, 1)), "not told apart by 1 trial");
        assert_eq!(
            judge(&plain, (0, 10), (1, 3)),
            "not told apart by 10 and 3 trials"
        );
        // Both predicted safe: theory gives no reason for the difference.
        assert_eq!(judge(&plain, (0, 10), (10, 10)), "differ, unexplained");
        assert_eq!(judge(&plain, (2, 10), (8, 10)), "differ, unexplained");
    }

    #[test]
    fn a_difference_quotes_the_mechanism_the_scenario_states() {
        let either = Scenario::for_tests(
            &[("default", Expectation::Safe), ("lib", Expectation::Either)],
            &[("lib", "a race with the expiry")],
        );
        assert_eq!(
            judge(&either, (0, 10), (10, 10)),
            "differ: a race with the expiry"
        );
        let predicted = Scenario::for_tests(
            &[
                ("default", Expectation::Safe),
                ("lib", Expectation::Violated),
            ],
            &[],
        );
        assert_eq!(judge(&predicted, (0, 10), (10, 10)), "differ: the theory");
        // The other way round from what theory predicts: unexplained.
        assert_eq!(judge(&predicted, (10, 10), (0, 10)), "differ, unexplained");
    }
}
