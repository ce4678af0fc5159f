//! One row of `lockbench check-adapter`'s table: a check, what the manifest claims, what was observed,
//! and the verdict (a claim that could not be tested says so, never "pass").

/// How a check came out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Observed as claimed.
    Pass,
    /// Not as claimed: the command exits 1.
    Fail,
    /// Claimed, but this check could not test it here.
    NotTested,
    /// Not claimed, so not tested.
    NotClaimed,
}

impl Verdict {
    /// The table's word for it.
    pub(crate) fn word(self) -> &'static str {
        match self {
            Verdict::Pass => "pass",
            Verdict::Fail => "FAIL",
            Verdict::NotTested => "not tested",
            Verdict::NotClaimed => "-",
        }
    }
}

/// One row of the table.
#[derive(Debug, Clone)]
pub(crate) struct Row {
    pub(crate) check: &'static str,
    pub(crate) claimed: String,
    pub(crate) observed: String,
    pub(crate) verdict: Verdict,
}

impl Row {
    /// A row whose verdict is pass when `passed`, else fail.
    pub(crate) fn judged(
        check: &'static str,
        claimed: impl Into<String>,
        observed: impl Into<String>,
        passed: bool,
    ) -> Self {
        Row {
            check,
            claimed: claimed.into(),
            observed: observed.into(),
            verdict: if passed { Verdict::Pass } else { Verdict::Fail },
        }
    }

    /// A row of a claim not made.
    pub(crate) fn not_claimed(check: &'static str) -> Self {
        Row {
            check,
            claimed: "no".into(),
            observed: "not tested: not claimed".into(),
            verdict: Verdict::NotClaimed,
        }
    }

    /// A row of a claim this check cannot test, and why.
    pub(crate) fn not_tested(check: &'static str, claimed: &str, why: impl Into<String>) -> Self {
        Row {
            check,
            claimed: claimed.into(),
            observed: format!("not tested: {}", why.into()),
            verdict: Verdict::NotTested,
        }
    }
}
