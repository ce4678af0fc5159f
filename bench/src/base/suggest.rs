//! "Did you mean …?": the known name closest to a misspelled one, by edit distance, for the errors
//! that name an unknown strategy, scenario or suite entry.

/// The name in `known` closest to `given`, if it is close enough to be a likely misspelling: at most
/// a third of `given`'s characters (and at least one) inserted, removed or replaced.
pub(crate) fn closest<'a>(
    given: &str,
    known: impl IntoIterator<Item = &'a str>,
) -> Option<&'a str> {
    let limit = (given.chars().count() / 3).max(1);
    known
        .into_iter()
        .map(|name| (edit_distance(given, name), name))
        .filter(|(distance, _)| *distance <= limit)
        .min_by_key(|(distance, _)| *distance)
        .map(|(_, name)| name)
}

/// `; did you mean 'NAME'?` when a known name is close to `given`, else `None`.
pub(crate) fn did_you_mean<'a>(
    given: &str,
    known: impl IntoIterator<Item = &'a str>,
) -> Option<String> {
    closest(given, known).map(|name| format!("; did you mean '{name}'?"))
}

/// Levenshtein distance: the fewest single-character insertions, removals and replacements that
/// turn `a` into `b`.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut previous: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut current = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            let replace = previous[j] + usize::from(ca != *cb);
            current[j + 1] = replace.min(previous[j + 1] + 1).min(current[j] + 1);
        }
        previous = current;
    }
    previous[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn near_names_are_suggested_and_far_ones_are_not() {
        let known = ["redis-watchdog", "redis-fixed", "etcd-lease", "memory"];
        assert_eq!(closest("redis-watchdg", known), Some("redis-watchdog"));
        assert_eq!(closest("etcd-leas", known), Some("etcd-lease"));
        assert_eq!(closest("memroy", known), Some("memory"));
        assert_eq!(closest("redis-nope", known), None);
        assert_eq!(closest("zk", known), None);
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        assert_eq!(edit_distance("", "abc"), 3);
    }
}
