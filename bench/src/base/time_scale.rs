//! `--time-scale`: how much faster than real time a workload runs, kept exactly as the decimal the
//! user wrote (in thousandths), so `2.25` divides every duration by 2.25 and prints as `2.25`, never
//! as a float's `2.2499999999999996`.

use std::fmt;
use std::ops::Div;
use std::time::Duration;

/// Thousandths in one.
const MILLI: u64 = 1000;
/// The slowest scale taken: ten times real time.
const LEAST: u64 = 100;
/// The fastest scale taken: every duration a thousandth of itself.
const MOST: u64 = 1000 * MILLI;

/// A time scale: every duration is divided by it (1 = real time, 10 = ten times faster).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TimeScale {
    /// The scale in thousandths (1000 = real time).
    milli: u64,
}

impl TimeScale {
    /// Real time.
    pub(crate) const REAL: TimeScale = TimeScale { milli: MILLI };
    /// The fastest scale taken.
    pub(crate) const FASTEST: TimeScale = TimeScale { milli: MOST };

    /// `text` as a time scale: a decimal number from 0.1 to 1000 with at most three decimals. The
    /// error says what is wrong, without the flag's name.
    pub(crate) fn parse(text: &str) -> Result<Self, String> {
        let trimmed = text.trim();
        let range = "a number from 0.1 to 1000 (1 = real time, 10 = ten times faster)";
        let bad = || format!("expected {range}, got {text:?}");
        let (whole, fraction) = trimmed.split_once('.').unwrap_or((trimmed, ""));
        let digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
        if (whole.is_empty() && fraction.is_empty()) || !digits(whole) || !digits(fraction) {
            return Err(bad());
        }
        if fraction.len() > 3 {
            return Err(format!("at most three decimals, got {text:?}"));
        }
        let whole: u64 = if whole.is_empty() {
            0
        } else {
            whole
                .parse()
                .map_err(|_| format!("must be {range}, got {text:?}"))?
        };
        let fraction: u64 = format!("{fraction:0<3}").parse().map_err(|_| bad())?;
        let milli = whole
            .checked_mul(MILLI)
            .and_then(|w| w.checked_add(fraction))
            .filter(|m| (LEAST..=MOST).contains(m))
            .ok_or_else(|| format!("must be {range}, got {text:?}"))?;
        Ok(TimeScale { milli })
    }

    /// `k` times this scale (saturating at the largest scale there is).
    pub(crate) fn times(self, k: u32) -> Self {
        TimeScale {
            milli: self.milli.saturating_mul(u64::from(k)),
        }
    }
}

impl Default for TimeScale {
    fn default() -> Self {
        Self::REAL
    }
}

/// `10`, `2.25`, `0.5`: the shortest decimal, exactly.
impl fmt::Display for TimeScale {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (whole, fraction) = (self.milli / MILLI, self.milli % MILLI);
        if fraction == 0 {
            return write!(f, "{whole}");
        }
        let decimals = format!("{fraction:03}");
        write!(f, "{whole}.{}", decimals.trim_end_matches('0'))
    }
}

/// The duration at this scale, rounded to the nearest millisecond from 10 ms up and to the nearest
/// microsecond from 10 µs up: a 30s TTL at 2.25 runs as 13.333s, which a server that counts TTLs in
/// milliseconds can hold (13333333333ns it could not), and prints as such.
impl Div<TimeScale> for Duration {
    type Output = Duration;

    fn div(self, scale: TimeScale) -> Duration {
        let milli = u128::from(scale.milli.max(1));
        let exact = (self.as_nanos() * u128::from(MILLI) + milli / 2) / milli;
        let unit = match exact {
            10_000_000.. => 1_000_000,
            10_000.. => 1_000,
            _ => 1,
        };
        let rounded = (exact + unit / 2) / unit * unit;
        Duration::from_nanos(u64::try_from(rounded).unwrap_or(u64::MAX))
    }
}

/// The scale as a factor (rates are multiplied by it; the results file records it).
impl From<TimeScale> for f64 {
    fn from(scale: TimeScale) -> f64 {
        // Two exact integers: the quotient is the double nearest the decimal, printed as written.
        scale.milli as f64 / MILLI as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimals_parse_exactly_and_print_as_written() {
        for (text, shown, factor) in [
            ("1", "1", 1.0),
            ("10", "10", 10.0),
            ("0.5", "0.5", 0.5),
            ("1.5", "1.5", 1.5),
            ("2.25", "2.25", 2.25),
            ("0.3", "0.3", 0.3),
            (".5", "0.5", 0.5),
            ("3.", "3", 3.0),
            ("2.500", "2.5", 2.5),
            ("1000", "1000", 1000.0),
            ("0.1", "0.1", 0.1),
        ] {
            let scale = TimeScale::parse(text).unwrap_or_else(|e| panic!("{text}: {e}"));
            assert_eq!(scale.to_string(), shown, "{text}");
            assert_eq!(f64::from(scale).to_string(), shown, "{text}");
            assert_eq!(f64::from(scale), factor, "{text}");
        }
        assert_eq!(
            TimeScale::parse("1.1").map(|s| s.times(3).to_string()),
            Ok("3.3".into())
        );
    }

    #[test]
    fn bad_scales_say_why() {
        for bad in [
            "0",
            "0.0",
            "-1",
            "-0.5",
            "NaN",
            "nan",
            "inf",
            "-inf",
            "infinity",
            "abc",
            "",
            " ",
            ".",
            "1e3",
            "1,5",
            "0.05",
            "1000.001",
            "1001",
            "99999999999999999999999",
            "2.2501",
            "+2",
        ] {
            let err = TimeScale::parse(bad).expect_err(bad);
            assert!(!err.contains('\n'), "{err}");
            assert!(err.contains(&format!("{bad:?}")), "{bad}: {err}");
        }
    }

    #[test]
    fn durations_divide_exactly() {
        let scale = |t| TimeScale::parse(t).unwrap_or_default();
        assert_eq!(
            Duration::from_secs(30) / scale("10"),
            Duration::from_secs(3)
        );
        assert_eq!(
            Duration::from_secs(9) / scale("2.25"),
            Duration::from_secs(4)
        );
        assert_eq!(
            Duration::from_secs(1) / scale("0.5"),
            Duration::from_secs(2)
        );
        assert_eq!(
            Duration::from_secs(1) / TimeScale::REAL,
            Duration::from_secs(1)
        );
        assert_eq!(
            Duration::from_secs(30) / scale("2.25"),
            Duration::from_millis(13_333)
        );
        assert_eq!(
            Duration::from_secs(10) / scale("3"),
            Duration::from_millis(3_333)
        );
        assert_eq!(
            Duration::from_millis(10) / scale("2.25"),
            Duration::from_micros(4_444)
        );
        assert_eq!(
            Duration::from_nanos(7) / scale("2"),
            Duration::from_nanos(4)
        );
        assert_eq!(Duration::from_nanos(1) / scale("1000"), Duration::ZERO);
    }
}
