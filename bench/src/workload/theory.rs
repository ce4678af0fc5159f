//! A scenario's theory as its file writes it: the `[expect]` table, where each entry is `"safe"`,
//! `"violated"` or `{ either = "the mechanism that decides, one sentence" }`, checked into the
//! expectations and the mechanisms the results file records. An `either` that names no mechanism is
//! a load error: the report quotes the mechanism wherever a model and its library differ.

use std::collections::BTreeMap;

use lockbench_reports::model::Expectation;
use serde::Deserialize;

/// One entry of an `[expect]` table as written.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(untagged)]
pub enum ExpectEntry {
    /// `"safe"` or `"violated"` (a bare `"either"` is rejected by [`checked`]).
    Word(String),
    /// `{ either = "..." }`: theory allows either verdict, for the reason given.
    Either(EitherBecause),
}

/// The `{ either = "..." }` form of an [`ExpectEntry`].
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EitherBecause {
    /// The mechanism that decides between safe and violated, one sentence.
    pub either: String,
}

/// The expectations and the mechanism of each `either`, as the results file records them
/// (`scenario.expect`, `scenario.either_mechanisms`).
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Theory {
    /// What theory predicts, by strategy id, lease kind or `default`.
    pub(crate) expect: BTreeMap<String, Expectation>,
    /// The mechanism of each `either` entry, by the same key.
    pub(crate) either_mechanisms: BTreeMap<String, String>,
}

/// Checks an `[expect]` table; the error is one line naming the entry.
pub(crate) fn checked(table: BTreeMap<String, ExpectEntry>) -> Result<Theory, String> {
    let mut theory = Theory::default();
    for (key, entry) in table {
        let expectation = match entry {
            ExpectEntry::Word(word) => match word.as_str() {
                "safe" => Expectation::Safe,
                "violated" => Expectation::Violated,
                "either" => {
                    return Err(format!(
                        "expect.{key}: `either` must name the mechanism that decides, as \
                         {key} = {{ either = \"one sentence\" }}"
                    ));
                }
                other => {
                    return Err(format!(
                        "expect.{key}: `{other}` is not safe, violated or {{ either = \"...\" }}"
                    ));
                }
            },
            ExpectEntry::Either(EitherBecause { either }) => {
                let mechanism = either.trim();
                if mechanism.is_empty() {
                    return Err(format!(
                        "expect.{key}: `either` must name the mechanism that decides (it is empty)"
                    ));
                }
                theory
                    .either_mechanisms
                    .insert(key.clone(), mechanism.to_owned());
                Expectation::Either
            }
        };
        theory.expect.insert(key, expectation);
    }
    Ok(theory)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(toml: &str) -> Result<Theory, String> {
        #[derive(Deserialize)]
        struct File {
            expect: BTreeMap<String, ExpectEntry>,
        }
        let file: File = toml::from_str(toml).map_err(|e| e.to_string())?;
        checked(file.expect)
    }

    #[test]
    fn an_either_names_its_mechanism_and_keeps_it() {
        let theory = check(
            "[expect]\ndefault = \"safe\"\nfixed = \"violated\"\nnaive = { either = \"a race with expiry\" }",
        )
        .expect("valid");
        assert_eq!(theory.expect["default"], Expectation::Safe);
        assert_eq!(theory.expect["fixed"], Expectation::Violated);
        assert_eq!(theory.expect["naive"], Expectation::Either);
        assert_eq!(theory.either_mechanisms.len(), 1);
        assert_eq!(theory.either_mechanisms["naive"], "a race with expiry");
    }

    #[test]
    fn an_either_without_a_mechanism_is_an_error() {
        for (toml, needle) in [
            (
                "[expect]\nnaive = \"either\"",
                "expect.naive: `either` must name the mechanism",
            ),
            (
                "[expect]\nnaive = { either = \" \" }",
                "expect.naive: `either` must name the mechanism that decides (it is empty)",
            ),
            (
                "[expect]\nnaive = \"sometimes\"",
                "expect.naive: `sometimes` is not",
            ),
        ] {
            let err = check(toml).expect_err(toml);
            assert!(err.contains(needle), "{toml}: {err}");
            assert!(!err.contains('\n'), "{toml}: one line: {err}");
        }
    }
}
