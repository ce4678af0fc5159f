//! Number formatting shared by the Markdown and HTML reports, chart labels and the terminal tables,
//! so all show the same figures the same way; and the one RFC 3339 timestamp results files carry.

use std::time::{SystemTime, UNIX_EPOCH};

/// Milliseconds with sensible precision: `0.046`, `4.21`, `52.2`, `4200`; `-` when absent.
pub fn ms(value: Option<f64>) -> String {
    value.map_or_else(|| "-".to_owned(), figure)
}

/// A figure of any unit with sensible precision: `0.046`, `4.21`, `52.2`, `4200`; `-` when not finite.
pub fn figure(v: f64) -> String {
    match v {
        v if !v.is_finite() => "-".to_owned(),
        v if v.abs() < 1.0 => format!("{v:.3}"),
        v if v.abs() < 10.0 => format!("{v:.2}"),
        v if v.abs() < 1000.0 => format!("{v:.1}"),
        v => format!("{v:.0}"),
    }
}

/// A figure to a fixed number of decimals; `-` when absent.
pub fn fixed(value: Option<f64>, decimals: usize) -> String {
    value.map_or_else(|| "-".to_owned(), |v| format!("{v:.decimals$}"))
}

/// A moment in RFC 3339 UTC to the second, `2026-11-23T20:18:35Z`: the form of every `started_at` and
/// `finished_at`. Total: a time before 1970 or past 9999 still formats (with a sign or more digits).
pub fn rfc3339(time: SystemTime) -> String {
    let seconds = match time.duration_since(UNIX_EPOCH) {
        Ok(after) => i64::try_from(after.as_secs()).unwrap_or(i64::MAX),
        // Round towards the past: 0.5 s before the epoch is 23:59:59 of the day before.
        Err(before) => {
            let before = before.duration();
            let whole = before.as_secs() + u64::from(before.subsec_nanos() > 0);
            i64::try_from(whole).map_or(-i64::MAX, |s| -s)
        }
    };
    let (year, month, day) = civil_from_days(seconds.div_euclid(86_400));
    let second_of_day = seconds.rem_euclid(86_400);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        second_of_day / 3600,
        second_of_day / 60 % 60,
        second_of_day % 60
    )
}

/// The current time as [`rfc3339`].
pub fn now_rfc3339() -> String {
    rfc3339(SystemTime::now())
}

/// The proleptic Gregorian date of a day counted from 1970-01-01, by eras of 400 years (146 097
/// days), each counted from March 1 so the leap day ends the year.
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let from_0000_03_01 = days + 719_468;
    let era = from_0000_03_01.div_euclid(146_097);
    let day_of_era = from_0000_03_01.rem_euclid(146_097);
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_from_march = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * month_from_march + 2) / 5 + 1;
    let month = if month_from_march < 10 {
        month_from_march + 3
    } else {
        month_from_march - 9
    };
    let year = era * 400 + year_of_era + i64::from(month <= 2);
    // Both fit: month is 1..=12, day 1..=31.
    (year, month as u32, day as u32)
}

/// A length for people: `0 s`, `500 ms`, `1.5 s`, `10 s`.
pub fn duration_ms(ms: f64) -> String {
    if !ms.is_finite() {
        "-".to_owned()
    } else if ms == 0.0 {
        "0 s".to_owned()
    } else if ms < 1000.0 {
        let t = format!("{ms:.1}");
        format!("{} ms", t.trim_end_matches(".0"))
    } else {
        let s = format!("{:.3}", ms / 1000.0);
        format!("{} s", s.trim_end_matches('0').trim_end_matches('.'))
    }
}

/// A rate or other positive figure: `0.42`, `4.7`, `52`, `12 345`.
pub fn rate(value: f64) -> String {
    if !value.is_finite() {
        return "-".to_owned();
    }
    if value.abs() < 1.0 {
        format!("{value:.2}")
    } else if value.abs() < 10.0 {
        format!("{value:.1}")
    } else {
        group(value.round() as i64)
    }
}

/// An integer with thin spaces between thousands: `12 345`.
pub fn group(n: i64) -> String {
    let digits = n.unsigned_abs().to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push('\u{2009}');
        }
        out.push(c);
    }
    if n < 0 { format!("-{out}") } else { out }
}

/// Relative change from `old` to `new` in percent, when both exist and `old` is not zero.
pub fn change_pct(old: Option<f64>, new: Option<f64>) -> Option<f64> {
    match (old, new) {
        (Some(o), Some(n)) if o != 0.0 && o.is_finite() && n.is_finite() => {
            Some((n - o) / o * 100.0)
        }
        _ => None,
    }
}

/// A signed percentage: `+12%`, `-3.5%`, `±0%`; `-` when absent.
pub fn signed_pct(pct: Option<f64>) -> String {
    match pct {
        None => "-".to_owned(),
        Some(p) if p.abs() < 0.05 => "±0%".to_owned(),
        Some(p) if p.abs() < 10.0 => format!("{p:+.1}%"),
        Some(p) => format!("{p:+.0}%"),
    }
}

/// A signed count change: `+3`, `-1`, `±0`.
pub fn signed_count(old: u64, new: u64) -> String {
    match new.cmp(&old) {
        std::cmp::Ordering::Equal => "±0".to_owned(),
        std::cmp::Ordering::Greater => format!("+{}", new - old),
        std::cmp::Ordering::Less => format!("-{}", old - new),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn figures_read_well() {
        assert_eq!(ms(None), "-");
        assert_eq!(ms(Some(0.04567)), "0.046");
        assert_eq!(ms(Some(4.213)), "4.21");
        assert_eq!(ms(Some(52.25)), "52.2");
        assert_eq!(ms(Some(4200.4)), "4200");
        assert_eq!(rate(12345.4), "12\u{2009}345");
        assert_eq!(rate(4.66), "4.7");
        assert_eq!(group(-1000), "-1\u{2009}000");
        assert_eq!(signed_pct(change_pct(Some(200.0), Some(150.0))), "-25%");
        assert_eq!(signed_pct(change_pct(Some(100.0), Some(103.0))), "+3.0%");
        assert_eq!(signed_pct(change_pct(Some(0.0), Some(1.0))), "-");
        assert_eq!(signed_count(3, 1), "-2");
        assert_eq!(duration_ms(0.0), "0 s");
        assert_eq!(duration_ms(500.0), "500 ms");
        assert_eq!(duration_ms(2.5), "2.5 ms");
        assert_eq!(duration_ms(1500.0), "1.5 s");
        assert_eq!(duration_ms(10_000.0), "10 s");
    }

    #[test]
    fn timestamps_are_rfc3339_utc() {
        use std::time::Duration;
        let at = |s: i64| {
            let offset = Duration::from_secs(s.unsigned_abs());
            rfc3339(if s < 0 {
                UNIX_EPOCH - offset
            } else {
                UNIX_EPOCH + offset
            })
        };
        // Expected values from `date -u -d @N +%Y-%m-%dT%H:%M:%SZ`.
        assert_eq!(at(0), "1970-01-01T00:00:00Z");
        assert_eq!(at(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(at(1_795_464_000), "2026-11-23T20:00:00Z");
        assert_eq!(at(4_102_444_800), "2100-01-01T00:00:00Z");
        assert_eq!(at(253_402_300_799), "9999-12-31T23:59:59Z");
        assert_eq!(at(-86_401), "1969-12-30T23:59:59Z");
        assert_eq!(
            rfc3339(UNIX_EPOCH - Duration::from_millis(500)),
            "1969-12-31T23:59:59Z"
        );
        assert_eq!(
            rfc3339(UNIX_EPOCH + Duration::from_millis(1500)),
            "1970-01-01T00:00:01Z"
        );
        assert_eq!(now_rfc3339().len(), "2026-11-23T20:18:35Z".len());
        assert_eq!(at(1 << 40), "36812-02-20T00:36:16Z");
    }
}
