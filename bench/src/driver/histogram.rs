//! Latency histograms: HdrHistograms in nanoseconds (3 significant digits), their summaries for the
//! results, and their base64 V2-deflate encoding (the HdrHistogram log format, the codec of
//! [`lockbench_reports::histogram`]), also used to ship them from worker processes.

use hdrhistogram::Histogram;
use lockbench_reports::histogram;
use lockbench_reports::model::Summary;

/// A latency histogram in nanoseconds. `u32` counts keep per-worker histograms small.
pub(crate) type Hist = Histogram<u32>;

/// A new histogram: 100 ns to 10 s at 3 significant digits, growing past 10 s when needed.
pub(crate) fn new_hist() -> Hist {
    let mut hist =
        Histogram::new_with_bounds(100, 10_000_000_000, 3).expect("constant bounds are valid");
    hist.auto(true);
    // Write every count now: the zeroed allocation is mapped lazily, and its page faults would
    // otherwise land on the first records inside the measured window.
    hist.clear();
    hist
}

/// Records `ns`, growing the histogram's range when needed (saturating if even that fails).
#[inline]
pub(crate) fn record(hist: &mut Hist, ns: u64) {
    let ns = ns.max(1);
    if hist.record(ns).is_err() {
        hist.saturating_record(ns);
    }
}

/// Adds `from` into `into` (both from [`new_hist`], so the add cannot fail).
pub(crate) fn merge(into: &mut Hist, from: &Hist) {
    let _ = into.add(from);
}

/// p50/p90/p99/p99.9/max of a histogram, in milliseconds (the reports' summary).
pub(crate) fn summary(hist: &Hist) -> Summary {
    histogram::summary(hist)
}

/// Base64 of the V2-deflate serialization (the reports' codec).
pub(crate) fn encode(hist: &Hist) -> String {
    histogram::encode(hist)
}

/// Decodes [`encode`]'s output, ready to grow.
pub(crate) fn decode(text: &str) -> Result<Hist, String> {
    let mut hist: Hist = histogram::decode_as(text)?;
    hist.auto(true);
    Ok(hist)
}

/// Serde adapter: a histogram as its base64 V2-deflate string.
pub(crate) mod as_base64 {
    use super::{Hist, decode, encode};
    use serde::{Deserialize, Deserializer, Serializer};

    /// Serializes as a string.
    pub(crate) fn serialize<S: Serializer>(hist: &Hist, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&encode(hist))
    }

    /// Deserializes from a string.
    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Hist, D::Error> {
        let text = String::deserialize(d)?;
        decode(&text).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summaries_are_in_milliseconds_and_encoding_round_trips() {
        let mut hist = new_hist();
        for us in 1..=1000u64 {
            record(&mut hist, us * 1000);
        }
        record(&mut hist, 30_000_000_000);
        let s = summary(&hist);
        assert_eq!(s.count, 1001);
        let p50 = s.p50_ms.expect("p50");
        assert!((p50 - 0.5).abs() < 0.005, "{p50}");
        assert!(s.max_ms.expect("max") > 29_000.0);
        let back = decode(&encode(&hist)).expect("decodes");
        assert_eq!(back.len(), hist.len());
        assert_eq!(back.value_at_quantile(0.9), hist.value_at_quantile(0.9));
        let empty = summary(&new_hist());
        assert_eq!((empty.count, empty.p99_ms), (0, None));
        assert!(decode("not base64!").is_err());
    }
}
