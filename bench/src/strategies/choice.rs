//! The strategies a command runs, parsed once from a list (`--strategies`, or a scenario file's
//! `strategies`) into registry entries: `all` expands to every entry with `in_all`, order is kept and
//! repeats dropped, and the ids named one by one are remembered (a scenario that does not apply to a
//! named strategy keeps it and skips its cases with why; `all` leaves it out).

use super::{STRATEGIES, Strategy, add_version, every, find, versions};
use crate::base::suggest;

/// A parsed strategy list: the registry entries in order, and what the list named.
#[derive(Debug, Clone, Default)]
pub struct StrategyChoice {
    /// The entries, in list order, each once.
    entries: Vec<&'static Strategy>,
    /// Every name of the list as written (`all` included), and the ids added by name since.
    named: Vec<String>,
}

impl StrategyChoice {
    /// Parses one comma-separated list (`--strategies`). An unknown id is an error suggesting the
    /// closest known id, or else naming them all; an empty list is an error too.
    pub fn parse(list: &str) -> Result<StrategyChoice, String> {
        Self::from_lists(std::slice::from_ref(&list))
    }

    /// Parses several lists, each comma-separated (a scenario file's `strategies`), as one.
    pub fn from_lists(lists: &[impl AsRef<str>]) -> Result<StrategyChoice, String> {
        let mut choice = StrategyChoice::default();
        for id in lists
            .iter()
            .flat_map(|s| s.as_ref().split(','))
            .map(str::trim)
            .filter(|s| !s.is_empty())
        {
            choice.named.push(id.to_owned());
            let entries: Vec<&'static Strategy> = if id == "all" {
                STRATEGIES.iter().filter(|s| s.in_all).collect()
            } else if versions::split(id).is_some() {
                vec![add_version(id)?]
            } else {
                vec![find(id).ok_or_else(|| unknown(id))?]
            };
            for entry in entries {
                choice.push(entry);
            }
        }
        if choice.entries.is_empty() {
            return Err("no strategy selected".into());
        }
        Ok(choice)
    }

    /// Every strategy `all` stands for.
    pub fn all() -> StrategyChoice {
        StrategyChoice {
            entries: STRATEGIES.iter().filter(|s| s.in_all).collect(),
            named: vec!["all".to_owned()],
        }
    }

    /// The same with `strategy` added by name (as if the list ended with its id).
    pub fn with_named(mut self, strategy: &'static Strategy) -> StrategyChoice {
        self.named.push(strategy.id.to_owned());
        self.push(strategy);
        self
    }

    /// The same with `strategy` added but not by name (a scenario that does not apply to it leaves
    /// it out).
    pub fn with_unnamed(mut self, strategy: &'static Strategy) -> StrategyChoice {
        self.push(strategy);
        self
    }

    /// The entries, in list order.
    pub fn entries(&self) -> &[&'static Strategy] {
        &self.entries
    }

    /// The entries, in list order, taken.
    pub fn into_entries(self) -> Vec<&'static Strategy> {
        self.entries
    }

    /// Whether the list named `id` one by one (not only through `all`).
    pub fn is_named(&self, id: &str) -> bool {
        self.named.iter().any(|n| n == id)
    }

    /// Whether the list had `all` in it.
    pub fn names_all(&self) -> bool {
        self.is_named("all")
    }

    fn push(&mut self, entry: &'static Strategy) {
        if !self.entries.iter().any(|c| c.id == entry.id) {
            self.entries.push(entry);
        }
    }
}

/// The error of an id the registry does not know: the closest known id, or else every one.
fn unknown(id: &str) -> String {
    let known = every().map(|s| s.id).chain(["all"]);
    match suggest::did_you_mean(id, known.clone()) {
        Some(hint) => format!("unknown strategy '{id}'{hint}"),
        None => format!(
            "unknown strategy '{id}'; known: {}",
            known.collect::<Vec<_>>().join(", ")
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_list_is_parsed_into_entries_in_order_without_repeats() {
        let choice = StrategyChoice::parse(" memory , redis-watchdog,memory").expect("parses");
        let ids: Vec<&str> = choice.entries().iter().map(|s| s.id).collect();
        assert_eq!(ids, ["memory", "redis-watchdog"]);
        assert!(choice.is_named("redis-watchdog") && !choice.names_all());
        let all = StrategyChoice::parse("all,mysql-lease").expect("parses");
        assert!(all.names_all() && all.is_named("mysql-lease") && !all.is_named("memory"));
        assert_eq!(
            all.entries().len(),
            StrategyChoice::all().entries().len() + 1
        );
    }

    #[test]
    fn a_bad_list_is_one_line() {
        assert_eq!(
            StrategyChoice::parse("").map(|_| ()),
            Err("no strategy selected".to_owned())
        );
        let e = StrategyChoice::parse("memory,redis-watchdg").expect_err("unknown");
        assert_eq!(
            e,
            "unknown strategy 'redis-watchdg'; did you mean 'redis-watchdog'?"
        );
        assert!(!e.contains('\n'));
    }
}
