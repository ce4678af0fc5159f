//! Repeated trials of one case: each trial's verdict and the rule that ended them.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::safety::{Verdict, Violation};

// Named in doc links only.
#[cfg(doc)]
use super::{CaseResult, Safety};

/// Repeated trials of one case and how often they violated.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Trials {
    /// Trials run that have a verdict (they produced figures and their fault took effect).
    pub runs: u32,
    /// Of those, how many were violated.
    pub violated: u32,
    /// Lower end of the 95 % Wilson score interval for the violation rate; null when the trials
    /// stopped early (`stopped_early`: the interval assumes a fixed number of trials) or when no
    /// trial has a verdict (`runs` 0: there is no rate to bound).
    #[serde(default)]
    pub rate_low: Option<f64>,
    /// Upper end of the 95 % Wilson score interval for the violation rate; null when the trials
    /// stopped early or none has a verdict.
    #[serde(default)]
    pub rate_high: Option<f64>,
    /// The case stopped at its first violated trial, before all its planned trials ran (the
    /// violation theory predicted settles it; `compare` without `--thorough`). That is sequential
    /// sampling, so it says when the case broke, not how often: no rate interval. False in files
    /// written before it was recorded.
    #[serde(default)]
    pub stopped_early: bool,
    /// Trials that ran but have no verdict because their fault did not take effect
    /// ([`CaseResult::fault_not_applied`]); they count in no rate. 0 in older files.
    #[serde(default)]
    pub fault_not_applied: u32,
    /// Trials that ran but have no verdict, for any reason ([`Safety::no_verdict`]; those counted in
    /// `fault_not_applied` included); they count in no rate. 0 in older files.
    #[serde(default)]
    pub unknown: u32,
    /// Each trial, in run order.
    pub each: Vec<Trial>,
    /// Which rule ended the trials ([`TrialStop`]); null in files written before it was recorded.
    #[serde(default)]
    pub stopped_by: Option<TrialStop>,
}

/// Which rule ended a case's trials. A case runs its planned trials; one whose trials disagree (or,
/// where theory calls the break a race, broke in every one) may get extra trials until its 95 %
/// interval is narrow enough to name, up to a cap and within the suite's budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TrialStop {
    /// Every planned trial ran and no rule asked for more (they agreed, or extra trials were off).
    Planned,
    /// A violated trial where theory predicts the break every time settled the case (no rate).
    TheoryBreak,
    /// Extra trials ran until the Wilson interval of the violation rate was narrow enough to name.
    Narrow,
    /// The cap on trials per case was reached without a narrow interval (with no extra trials when
    /// the cap is the planned count, as under `--quick`).
    Cap,
    /// The suite's time for extra trials was spent before the interval was narrow.
    Budget,
    /// Ctrl-C (or SIGTERM) stopped the trials.
    Interrupted,
}

impl TrialStop {
    /// The rule in a few words, for the reports.
    pub fn describe(self) -> &'static str {
        match self {
            TrialStop::Planned => "its planned trials",
            TrialStop::TheoryBreak => "stopped at a break theory predicts",
            TrialStop::Narrow => "extra trials until its interval was narrow",
            TrialStop::Cap => "stopped at the cap on trials, interval still wide",
            TrialStop::Budget => "extra trials until the suite's time ran out",
            TrialStop::Interrupted => "interrupted",
        }
    }
}

impl Trials {
    /// The 95 % interval of the violation rate, when the trials give one (all of them ran).
    pub fn interval(&self) -> Option<(f64, f64)> {
        if self.stopped_early || self.runs == 0 {
            return None;
        }
        Some((self.rate_low?, self.rate_high?))
    }

    /// Every trial that ran, with a verdict or without (`runs` + `unknown`): the trial a case that
    /// stopped early broke at.
    pub fn ran(&self) -> u32 {
        self.runs + self.unknown
    }
}

/// One trial of a case.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Trial {
    /// Its seed.
    pub seed: u64,
    /// Its verdict.
    pub verdict: Verdict,
    /// What made it violated (empty when safe).
    pub reasons: Vec<Violation>,
    /// Critical sections completed in its measured window.
    pub completed: u64,
    /// Its measured window (ms), so its own rate is `completed` over it; null in older files.
    #[serde(default)]
    pub measured_ms: Option<f64>,
}
