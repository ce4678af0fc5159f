//! Which rows a peer library is read beside when holding many locks: its model, and for the
//! libraries the `redisson` model stands for, also lockbench's batched watchdog (lockbench's answer
//! to the same renewal problem).

use super::{STRATEGIES, Strategy};

/// The model of Redisson 3.44+'s watchdog, whose libraries are also read beside lockbench's batched
/// watchdog.
const REDISSON_MODEL: &str = "redisson";
/// lockbench's batched watchdog.
const BATCHED_WATCHDOG: &str = "redis-watchdog-batched";

/// lockbench's rows a peer is read beside in the pairs table: its model, and for the libraries the
/// `redisson` model stands for, also `redis-watchdog-batched`. Empty for lockbench's own rows.
pub fn rows_beside(strategy: &Strategy) -> Vec<String> {
    let Some(model) = strategy.counterpart else {
        return Vec::new();
    };
    let mut rows = vec![model.to_owned()];
    if model == REDISSON_MODEL {
        rows.push(BATCHED_WATCHDOG.to_owned());
    }
    rows
}

/// The peers read beside lockbench's row `native` ([`rows_beside`] names it), in catalog order.
pub fn libraries_beside(native: &Strategy) -> Vec<&'static Strategy> {
    STRATEGIES
        .iter()
        .filter(|s| rows_beside(s).iter().any(|row| row == native.id))
        .collect()
}

/// `chosen` with each row's libraries after it (each once, where it first fits).
pub fn with_libraries(chosen: Vec<&'static Strategy>) -> Vec<&'static Strategy> {
    let mut all: Vec<&'static Strategy> = Vec::new();
    for strategy in &chosen {
        for s in std::iter::once(*strategy).chain(libraries_beside(strategy)) {
            if !all.iter().any(|known| known.id == s.id) {
                all.push(s);
            }
        }
    }
    all
}
