//! The raw HdrHistograms a results file keeps (`CaseResult::histograms`: nanoseconds, base64 of the
//! V2-deflate serialization, the HdrHistogram log encoding): the one codec for them ([`encode`],
//! [`decode`], [`decode_as`], the serde adapter [`as_base64`]), the [`Summary`] the results show
//! ([`summary`]), and what the charts need beyond the summaries: percentile curves and spreads.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use hdrhistogram::serialization::{Deserializer, Serializer as _, V2DeflateSerializer};
use hdrhistogram::{Counter, Histogram};

use crate::model::{CaseResult, Summary};

/// A decoded histogram (values in nanoseconds).
pub type Hist = Histogram<u64>;

/// Base64 of the V2-deflate serialization of `hist`, the form results files keep. Empty only if
/// serialization fails, which it does not for counts below `i64::MAX` (and [`decode`] rejects it).
pub fn encode<T: Counter>(hist: &Histogram<T>) -> String {
    let mut bytes = Vec::new();
    match V2DeflateSerializer::new().serialize(hist, &mut bytes) {
        Ok(_) => STANDARD.encode(bytes),
        Err(_) => String::new(),
    }
}

/// Decodes one base64 V2-deflate histogram (as [`decode_as`] with `u64` counts).
pub fn decode(text: &str) -> Result<Hist, String> {
    decode_as(text)
}

/// Decodes one base64 V2-deflate histogram with counts of type `T` (`u32` keeps per-worker histograms
/// small). The result grows its range on demand, so larger values can be recorded or added into it.
pub fn decode_as<T: Counter>(text: &str) -> Result<Histogram<T>, String> {
    let bytes = STANDARD
        .decode(text)
        .map_err(|e| format!("histogram is not base64: {e}"))?;
    let mut hist: Histogram<T> = Deserializer::new()
        .deserialize(&mut bytes.as_slice())
        .map_err(|e| format!("histogram does not decode: {e:?}"))?;
    hist.auto(true);
    Ok(hist)
}

/// Serde adapter (`#[serde(with = "lockbench_reports::histogram::as_base64")]`): a histogram as its
/// base64 V2-deflate string ([`encode`] / [`decode_as`]).
pub mod as_base64 {
    use hdrhistogram::{Counter, Histogram};
    use serde::{Deserialize, Deserializer, Serializer};

    /// Serializes as a string.
    pub fn serialize<T: Counter, S: Serializer>(
        hist: &Histogram<T>,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        s.serialize_str(&super::encode(hist))
    }

    /// Deserializes from a string.
    pub fn deserialize<'de, T: Counter, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Histogram<T>, D::Error> {
        let text = String::deserialize(d)?;
        super::decode_as(&text).map_err(serde::de::Error::custom)
    }
}

/// The results' view of a histogram of nanoseconds: count, min, mean, p50/p90/p99/p99.9 and max in
/// milliseconds, all but the count null when it is empty.
pub fn summary<T: Counter>(hist: &Histogram<T>) -> Summary {
    let count = hist.len();
    let ms = |ns: u64| (count > 0).then(|| ns as f64 / 1e6);
    Summary {
        count,
        min_ms: ms(hist.min()),
        mean_ms: (count > 0).then(|| hist.mean() / 1e6),
        p50_ms: ms(hist.value_at_quantile(0.5)),
        p90_ms: ms(hist.value_at_quantile(0.9)),
        p99_ms: ms(hist.value_at_quantile(0.99)),
        p999_ms: ms(hist.value_at_quantile(0.999)),
        max_ms: ms(hist.max()),
    }
}

/// The histogram `name` of a case (`acquire`, `renew_margin`, ...), when present, not empty and
/// readable.
pub fn of_case(case: &CaseResult, name: &str) -> Option<Hist> {
    let hist = decode(case.histograms.get(name)?).ok()?;
    (!hist.is_empty()).then_some(hist)
}

/// One point of a percentile curve.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PercentilePoint {
    /// The percentile, 0..=100.
    pub percentile: f64,
    /// The value at it, in milliseconds.
    pub value_ms: f64,
}

/// The percentiles a curve is drawn through (those a histogram has enough samples for), then the max.
pub const CURVE_PERCENTILES: [f64; 12] = [
    0.0, 25.0, 50.0, 75.0, 90.0, 95.0, 99.0, 99.5, 99.9, 99.95, 99.99, 99.999,
];

/// The percentile curve of `hist`: the values at [`CURVE_PERCENTILES`] that the sample count
/// resolves (a percentile p needs at least 1 / (1 − p) samples), then the max as the percentile of
/// the last sample, `100 × (1 − 1/count)`, so the curve ends where the data ends.
pub fn percentile_curve(hist: &Hist) -> Vec<PercentilePoint> {
    let count = hist.len() as f64;
    if count == 0.0 {
        return Vec::new();
    }
    let last = 100.0 * (1.0 - 1.0 / count);
    let mut points: Vec<PercentilePoint> = CURVE_PERCENTILES
        .iter()
        .copied()
        .filter(|p| *p < last)
        .map(|p| PercentilePoint {
            percentile: p,
            value_ms: hist.value_at_percentile(p) as f64 / 1e6,
        })
        .collect();
    points.push(PercentilePoint {
        percentile: last.max(points.last().map_or(0.0, |p| p.percentile)),
        value_ms: hist.max() as f64 / 1e6,
    });
    points
}

/// Min, the given percentiles and max of `hist`, in milliseconds.
pub fn spread_ms(hist: &Hist, percentiles: &[f64]) -> (f64, Vec<f64>, f64) {
    let ms = |ns: u64| ns as f64 / 1e6;
    (
        ms(hist.min()),
        percentiles
            .iter()
            .map(|p| ms(hist.value_at_percentile(*p)))
            .collect(),
        ms(hist.max()),
    )
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn encoded(values_us: impl Iterator<Item = u64>) -> String {
        let mut hist = Histogram::<u64>::new_with_bounds(100, 10_000_000_000, 3).unwrap();
        for us in values_us {
            hist.record(us * 1000).unwrap();
        }
        encode(&hist)
    }

    #[test]
    fn the_codec_round_trips_either_count_type_and_summarises_in_ms() {
        let mut small = Histogram::<u32>::new_with_bounds(100, 10_000_000_000, 3).unwrap();
        for us in 1..=1000u64 {
            small.record(us * 1000).unwrap();
        }
        let text = encode(&small);
        let back: Histogram<u32> = decode_as(&text).unwrap();
        assert_eq!(back, small);
        let wide = decode(&text).unwrap();
        assert_eq!(wide.len(), 1000);
        let mut grown = back;
        grown.record(30_000_000_000).unwrap();
        let s = summary(&grown);
        assert_eq!(s.count, 1001);
        assert!((s.p50_ms.unwrap() - 0.5).abs() < 0.005, "{s:?}");
        assert!(s.max_ms.unwrap() > 29_000.0, "{s:?}");
        let empty = summary(&Histogram::<u32>::new(3).unwrap());
        assert_eq!((empty.count, empty.p99_ms, empty.mean_ms), (0, None, None));

        #[derive(serde::Serialize, serde::Deserialize)]
        struct Holder {
            #[serde(with = "as_base64")]
            hist: Histogram<u32>,
        }
        let json = serde_json::to_string(&Holder {
            hist: small.clone(),
        })
        .unwrap();
        assert_eq!(json, format!("{{\"hist\":\"{text}\"}}"));
        let holder: Holder = serde_json::from_str(&json).unwrap();
        assert_eq!(holder.hist, small);
        assert!(serde_json::from_str::<Holder>(r#"{"hist":"%%"}"#).is_err());
    }

    #[test]
    fn curves_stop_where_the_samples_do() {
        let hist = decode(&encoded(1..=1000)).unwrap();
        let curve = percentile_curve(&hist);
        let percentiles: Vec<f64> = curve.iter().map(|p| p.percentile).collect();
        // 1000 samples resolve up to 99.5; the max closes the curve at 99.9 (the last sample).
        assert_eq!(
            percentiles[..8],
            [0.0, 25.0, 50.0, 75.0, 90.0, 95.0, 99.0, 99.5]
        );
        let last = *curve.last().unwrap();
        assert!((last.percentile - 99.9).abs() < 1e-9, "{last:?}");
        assert!((last.value_ms - 1.0).abs() < 0.01, "{last:?}");
        assert!((curve[2].value_ms - 0.5).abs() < 0.01, "{:?}", curve[2]);
        assert!(decode("%%").is_err());
        assert!(decode("AAAA").is_err());
    }
}
