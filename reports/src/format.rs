//! Number formatting shared by the Markdown and HTML reports (and chart labels), so both show the
//! same figures the same way.

/// Milliseconds with sensible precision: `0.046`, `4.21`, `52.2`, `4200`; `-` when absent.
pub fn ms(value: Option<f64>) -> String {
    match value {
        None => "-".to_owned(),
        Some(v) if !v.is_finite() => "-".to_owned(),
        Some(v) if v.abs() < 1.0 => format!("{v:.3}"),
        Some(v) if v.abs() < 10.0 => format!("{v:.2}"),
        Some(v) if v.abs() < 1000.0 => format!("{v:.1}"),
        Some(v) => format!("{v:.0}"),
    }
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
}
