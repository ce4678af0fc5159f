//! When a case's trials stop: the sequential rule `run` applies after each trial. A case runs its
//! planned trials; a break theory predicts every time settles it at its first violated trial (when
//! asked to settle early); trials that disagree, or a race (theory: either way) that broke in every
//! trial, get extra trials until the 95 % Wilson interval of the violation rate is narrow enough to
//! name, the cap on trials is reached, or the time allowed for extra trials is spent.

use lockbench_reports::model::{Expectation, TrialStop, Verdict};
use lockbench_reports::rate_interval::wilson;

/// The widest 95 % interval (in rate points, 0–1) that ends a case's extra trials: narrow enough to
/// name the rate as "about a third" or "about half".
pub(crate) const NARROW_ENOUGH: f64 = 0.5;

/// How a case's trials may be spent.
#[derive(Debug, Clone, Copy)]
pub(crate) struct TrialRule {
    /// Trials every case runs (unless a theory break settles it first).
    pub(crate) planned: u32,
    /// The most trials a case may run, extra ones included (`planned` or more).
    pub(crate) cap: u32,
    /// Stop at the first violated trial where theory predicts a break every time.
    pub(crate) settle_early: bool,
}

/// What theory says of one case.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Theory {
    /// It breaks every time.
    Breaks,
    /// Whether it breaks is a race.
    Race,
    /// It holds, or theory says nothing.
    Holds,
}

impl Theory {
    /// From the scenario's expectation for the case.
    pub(crate) fn of(expected: Option<Expectation>) -> Self {
        match expected {
            Some(Expectation::Violated) => Theory::Breaks,
            Some(Expectation::Either) => Theory::Race,
            Some(Expectation::Safe) | None => Theory::Holds,
        }
    }
}

/// After a trial: run another, or stop for this reason.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Next {
    /// Run a planned trial.
    Planned,
    /// Run an extra trial, if the time allowed for extra trials has room for one.
    Extra,
    /// Stop.
    Stop(TrialStop),
}

/// What to do after the trials with `verdicts` so far (one per trial run, in order; `Unknown` for a
/// trial without a verdict) of a case theory says `theory` of.
pub(crate) fn next(rule: TrialRule, theory: Theory, verdicts: &[Verdict]) -> Next {
    let ran = verdicts.len() as u32;
    let last_broke = verdicts.last() == Some(&Verdict::Violated);
    if rule.settle_early && theory == Theory::Breaks && last_broke {
        return Next::Stop(TrialStop::TheoryBreak);
    }
    if ran < rule.planned {
        return Next::Planned;
    }
    let judged = verdicts.iter().filter(|v| **v != Verdict::Unknown).count() as u32;
    let broke = verdicts.iter().filter(|v| **v == Verdict::Violated).count() as u32;
    let disagree = broke > 0 && broke < judged;
    // A race that broke every time has not shown that it is one: more trials say how often.
    let race_unshown = theory == Theory::Race && judged > 0 && broke == judged;
    if !(disagree || race_unshown) {
        return Next::Stop(TrialStop::Planned);
    }
    let (low, high) = wilson(broke, judged);
    if high - low <= NARROW_ENOUGH {
        Next::Stop(TrialStop::Narrow)
    } else if ran >= rule.cap {
        Next::Stop(TrialStop::Cap)
    } else {
        Next::Extra
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use Verdict::{Safe as S, Unknown as U, Violated as V};

    const RULE: TrialRule = TrialRule {
        planned: 3,
        cap: 12,
        settle_early: true,
    };

    #[test]
    fn a_break_theory_predicts_settles_at_once_and_only_where_asked() {
        assert_eq!(
            next(RULE, Theory::Breaks, &[V]),
            Next::Stop(TrialStop::TheoryBreak)
        );
        assert_eq!(next(RULE, Theory::Breaks, &[S]), Next::Planned);
        let thorough = TrialRule {
            settle_early: false,
            ..RULE
        };
        assert_eq!(next(thorough, Theory::Breaks, &[V]), Next::Planned);
        // A race never settles at its first break.
        assert_eq!(next(RULE, Theory::Race, &[V]), Next::Planned);
    }

    #[test]
    fn agreeing_trials_stop_when_planned() {
        assert_eq!(
            next(RULE, Theory::Holds, &[S, S, S]),
            Next::Stop(TrialStop::Planned)
        );
        assert_eq!(
            next(RULE, Theory::Holds, &[V, V, V]),
            Next::Stop(TrialStop::Planned)
        );
        assert_eq!(
            next(RULE, Theory::Race, &[S, S, S]),
            Next::Stop(TrialStop::Planned)
        );
        // Trials without a verdict neither agree nor disagree.
        assert_eq!(
            next(RULE, Theory::Holds, &[S, U, S]),
            Next::Stop(TrialStop::Planned)
        );
    }

    #[test]
    fn disagreeing_trials_and_a_race_that_always_broke_get_extra_trials_up_to_the_cap() {
        assert_eq!(next(RULE, Theory::Holds, &[S, V, S]), Next::Extra);
        assert_eq!(next(RULE, Theory::Race, &[V, V, V]), Next::Extra);
        let rule = TrialRule { cap: 6, ..RULE };
        let mut verdicts = vec![S, V, S];
        while let Next::Extra = next(rule, Theory::Race, &verdicts) {
            verdicts.push(if verdicts.len() % 3 == 0 { V } else { S });
        }
        // 2 of 6 broke: 95 % 10-70 %, still wide.
        assert_eq!(verdicts.len(), 6, "{verdicts:?}");
        assert_eq!(
            next(rule, Theory::Race, &verdicts),
            Next::Stop(TrialStop::Cap)
        );
    }

    #[test]
    fn extra_trials_stop_once_the_interval_is_narrow() {
        let rule = TrialRule { cap: 100, ..RULE };
        let mut verdicts = vec![V, S, S];
        while let Next::Extra = next(rule, Theory::Holds, &verdicts) {
            verdicts.push(if verdicts.len() % 2 == 0 { V } else { S });
        }
        assert_eq!(
            next(rule, Theory::Holds, &verdicts),
            Next::Stop(TrialStop::Narrow)
        );
        let broke = verdicts.iter().filter(|v| **v == V).count() as u32;
        let (low, high) = wilson(broke, verdicts.len() as u32);
        assert!(high - low <= NARROW_ENOUGH, "{verdicts:?}");
        assert!(verdicts.len() < 20, "{verdicts:?}");
    }
}
