//! Durations as text: humantime in (`500ms`, `20s`, `1m 30s`; never negative) and the exact form out
//! (`1500ms`, `3s`, `250us`), the same in scenario files, flags, results and messages.

use std::time::Duration;

/// Parses a non-negative humantime duration (`0` allowed).
pub(crate) fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    if text.starts_with('-') {
        return Err(format!("duration must not be negative, got {text:?}"));
    }
    if text == "0" {
        return Ok(Duration::ZERO);
    }
    humantime::parse_duration(text)
        .map_err(|e| format!("expected a duration like 500ms or 20s, got {text:?} ({e})"))
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
}
