//! What repeated runs of one command share: the median of a figure over the runs, taken as a run
//! that happened (the lower middle for an even count), so a table can quote that run's other figures.

/// The item whose `key` is the median of `items` (the lower middle of an even count); `None` when
/// there are none. Items whose key is NaN sort last.
pub fn median_by<T>(items: &[T], key: impl Fn(&T) -> f64) -> Option<&T> {
    let mut order: Vec<&T> = items.iter().collect();
    order.sort_by(|a, b| key(a).total_cmp(&key(b)));
    order.get(items.len().checked_sub(1)? / 2).copied()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_middle_or_the_lower_middle() {
        assert_eq!(median_by(&[3.0, 1.0, 2.0], |v| *v), Some(&2.0));
        assert_eq!(median_by(&[4.0, 1.0, 3.0, 2.0], |v| *v), Some(&2.0));
        assert_eq!(median_by(&[5.0], |v| *v), Some(&5.0));
        assert_eq!(median_by(&[] as &[f64], |v| *v), None);
    }
}
