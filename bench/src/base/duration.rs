//! Durations as text: humantime in (`500ms`, `20s`, `1m 30s`; never negative) and the exact form out
//! (`1500ms`, `3s`, `250us`), the same in scenario files, flags, results and messages. A fault's
//! timing or a case's length may instead be relative ([`parse_timing`]): `2ttl` is twice the case's
//! watchdog TTL, `1/3ttl` a third of it, `0.5task` half its median task, so a scenario keeps its
//! meaning at any TTL.

use std::time::Duration;

/// The lengths relative timings refer to: the case's watchdog TTL and its median task.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Units {
    /// What `1ttl` is.
    pub ttl: Duration,
    /// What `1task` is.
    pub task: Duration,
}

/// The longest duration lockbench takes anywhere (a case, a warm-up, a task, a fault's timing): 30
/// days. A case's window is kept in nanoseconds of a `u64` (about 584 years), so a bound far below
/// that keeps every sum of a warm-up, a window and a fault's offset exact.
pub(crate) const MAX_DURATION: Duration = Duration::from_secs(30 * 24 * 3600);

/// Refuses a duration longer than [`MAX_DURATION`], naming the limit.
fn bounded(text: &str, d: Duration) -> Result<Duration, String> {
    if d > MAX_DURATION {
        return Err(format!(
            "{text:?} is longer than lockbench's limit of 30 days for any duration"
        ));
    }
    Ok(d)
}

/// The relative units, by name.
const RELATIVE_UNITS: [&str; 2] = ["ttl", "task"];

/// Splits `2.5ttl` into `(2.5, "ttl")` when the text ends with a relative unit.
fn relative(text: &str) -> Option<(&str, &'static str)> {
    RELATIVE_UNITS
        .into_iter()
        .find_map(|unit| Some((text.strip_suffix(unit)?.trim(), unit)))
}

/// Parses a non-negative humantime duration (`0` allowed). A relative unit (`2ttl`) is refused: a
/// workload field has no TTL to refer to.
pub(crate) fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    if text.starts_with('-') {
        return Err(format!("duration must not be negative, got {text:?}"));
    }
    if let Some((_, unit)) = relative(text) {
        return Err(format!(
            "{text:?} is relative to a case's {}, which a workload field does not have: give an \
             absolute duration like 500ms (only fault timings and case lengths take ttl or task)",
            if unit == "ttl" { "TTL" } else { "tasks" }
        ));
    }
    if text == "0" {
        return Ok(Duration::ZERO);
    }
    let d = humantime::parse_duration(text)
        .map_err(|e| format!("expected a duration like 500ms or 20s, got {text:?} ({e})"))?;
    bounded(text, d)
}

/// Parses a fault timing or a case length: an absolute duration, or a non-negative multiple of the
/// case's TTL (`2ttl`, `0.5 ttl`, `1/3ttl`) or median task (`0.5task`), rounded to the microsecond.
pub(crate) fn parse_timing(text: &str, units: Units) -> Result<Duration, String> {
    let text = text.trim();
    let Some((factor, unit)) = relative(text) else {
        return parse_duration(text);
    };
    let factor = parse_factor(factor).ok_or_else(|| {
        format!("expected a duration like 500ms, 1/3ttl, 2ttl or 0.5task, got {text:?}")
    })?;
    if !(factor >= 0.0 && factor.is_finite()) {
        return Err(format!("duration must not be negative, got {text:?}"));
    }
    let base = if unit == "ttl" { units.ttl } else { units.task };
    let micros = (base.as_secs_f64() * factor * 1e6).round();
    if micros > MAX_DURATION.as_micros() as f64 {
        return Err(format!(
            "{text:?} is longer than lockbench's limit of 30 days for any duration"
        ));
    }
    Ok(Duration::from_micros(micros as u64))
}

/// A relative timing's factor: a number (`2`, `0.5`) or a fraction (`1/3`, a third of the TTL: one
/// renewal period, exact where a decimal is not); `None` when it is neither.
fn parse_factor(text: &str) -> Option<f64> {
    match text.split_once('/') {
        Some((over, under)) => {
            let under: f64 = under.trim().parse().ok()?;
            (under > 0.0).then_some(over.trim().parse::<f64>().ok()? / under)
        }
        None => text.parse().ok(),
    }
}

/// Formats a duration in the largest unit that keeps it exact (`1500ms`, `3s`, `250us`).
pub(crate) fn format_duration(d: Duration) -> String {
    let ns = d.as_nanos();
    for (unit, size) in [
        ("h", 3_600_000_000_000u128),
        ("m", 60_000_000_000),
        ("s", 1_000_000_000),
    ] {
        if ns > 0 && ns.is_multiple_of(size) {
            return format!("{}{unit}", ns / size);
        }
    }
    for (unit, size) in [("ms", 1_000_000u128), ("us", 1_000)] {
        if ns > 0 && ns.is_multiple_of(size) {
            return format!("{}{unit}", ns / size);
        }
    }
    format!("{ns}ns")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_parse_and_format_exactly() {
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("1m 30s"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_duration("0"), Ok(Duration::ZERO));
        assert!(
            parse_duration("-5s")
                .expect_err("negative")
                .contains("negative")
        );
        assert!(
            parse_duration("soon")
                .expect_err("unparsable")
                .contains("500ms")
        );
        for (d, text) in [
            (Duration::from_millis(1500), "1500ms"),
            (Duration::from_secs(3), "3s"),
            (Duration::from_secs(120), "2m"),
            (Duration::from_micros(250), "250us"),
            (Duration::from_nanos(7), "7ns"),
            (Duration::ZERO, "0ns"),
        ] {
            assert_eq!(format_duration(d), text);
            assert_eq!(parse_duration(text), Ok(d));
        }
    }

    #[test]
    fn timings_take_ttl_and_task_units() {
        let units = Units {
            ttl: Duration::from_millis(1500),
            task: Duration::from_millis(40),
        };
        for (text, ms) in [
            ("2ttl", 3000),
            ("0.5 ttl", 750),
            ("0.1ttl", 150),
            ("1.75ttl", 2625),
            ("0ttl", 0),
            ("0.5task", 20),
            ("3task", 120),
            ("1/3ttl", 500),
            ("7/30 ttl", 350),
            ("8/3ttl", 4000),
            ("250ms", 250),
        ] {
            assert_eq!(
                parse_timing(text, units),
                Ok(Duration::from_millis(ms)),
                "{text}"
            );
        }
        for (text, needle) in [
            ("-2ttl", "negative"),
            ("fewttl", "2ttl or 0.5task"),
            ("1/0ttl", "1/3ttl"),
            ("1/ttl", "1/3ttl"),
            ("-1/3ttl", "negative"),
            ("soon", "500ms"),
        ] {
            let err = parse_timing(text, units).expect_err(text);
            assert!(err.contains(needle), "{text}: {err}");
        }
        // A workload field has no TTL to refer to.
        for text in ["2ttl", "0.5task"] {
            let err = parse_duration(text).expect_err(text);
            assert!(err.contains("absolute duration"), "{text}: {err}");
        }
    }
}
