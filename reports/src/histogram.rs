//! The raw HdrHistograms a results file keeps (`CaseResult::histograms`: nanoseconds, base64 of the
//! V2-deflate serialization, the HdrHistogram log encoding): the one codec ([`encode`], [`decode`]),
//! and what the charts that need more than the summaries read from them: percentile curves and
//! distributions.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use hdrhistogram::serialization::{Deserializer, Serializer as _, V2DeflateSerializer};
use hdrhistogram::{Counter, Histogram};

use crate::model::CaseResult;

/// A decoded histogram (values in nanoseconds).
pub type Hist = Histogram<u64>;

/// Decodes one base64 V2-deflate histogram.
pub fn decode(text: &str) -> Result<Hist, String> {
    decode_as(text)
}

/// Decodes one base64 V2-deflate histogram into counts of type `T` (the writer's choice: `u32`
/// keeps per-worker histograms small).
pub fn decode_as<T: Counter>(text: &str) -> Result<Histogram<T>, String> {
    let bytes = STANDARD
        .decode(text)
        .map_err(|e| format!("histogram is not base64: {e}"))?;
    Deserializer::new()
        .deserialize(&mut bytes.as_slice())
        .map_err(|e| format!("histogram does not decode: {e:?}"))
}

/// The form [`decode`] reads: base64 of the V2-deflate serialization (empty if serializing fails).
pub fn encode<T: Counter>(hist: &Histogram<T>) -> String {
    let mut bytes = Vec::new();
    match V2DeflateSerializer::new().serialize(hist, &mut bytes) {
        Ok(_) => STANDARD.encode(bytes),
        Err(_) => String::new(),
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
