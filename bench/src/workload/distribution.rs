//! Task duration distributions: how long a holder works inside its critical section.
//!
//! Syntax (TOML `task = "..."` or `--task "..."`):
//!
//! | text | distribution |
//! |---|---|
//! | `50ms` or `constant 50ms` | always 50 ms |
//! | `uniform 10ms..100ms` | uniform between the bounds |
//! | `exp 50ms` | exponential with mean 50 ms |
//! | `lognormal 50ms 0.5` | log-normal with median 50 ms and shape σ = 0.5 |
//! | `95% 50ms, 5% uniform 3s..5s` | a mix: each part chosen with its weight (weights sum to 100) |
//!
//! Samples are capped at one hour so an unbounded tail cannot stall a run.

use std::fmt;
use std::time::Duration;

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use rand_distr::{Distribution, Exp, LogNormal};

use crate::base::duration::{format_duration, parse_duration};
use crate::workload::TimeScale;

const SAMPLE_CAP_NS: f64 = 3_600e9;

/// One shape of task duration.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Shape {
    /// Always the same.
    Constant(Duration),
    /// Uniform in `[low, high]`.
    Uniform(Duration, Duration),
    /// Exponential with this mean.
    Exponential(Duration),
    /// Log-normal with this median and shape σ.
    LogNormal(Duration, f64),
}

/// A task duration distribution: one shape, or weighted shapes.
#[derive(Debug, Clone)]
pub(crate) struct TaskDistribution {
    /// `(weight in percent, shape)`; one part with weight 100 for a single shape.
    parts: Vec<(f64, Shape)>,
    /// Cumulative weights in [0, 1], for sampling.
    cumulative: Vec<f64>,
    samplers: Vec<Sampler>,
}

#[derive(Debug, Clone)]
enum Sampler {
    Constant(u64),
    Uniform(u64, u64),
    Exponential(Exp<f64>),
    LogNormal(LogNormal<f64>),
}

impl PartialEq for TaskDistribution {
    fn eq(&self, other: &Self) -> bool {
        self.parts == other.parts
    }
}

impl TaskDistribution {
    /// Parses the scenario syntax; the error says what is wrong, in one line.
    pub(crate) fn parse(text: &str) -> Result<Self, String> {
        let text = text.trim();
        if text.is_empty() {
            return Err("empty task distribution".into());
        }
        let parts = if text.contains('%') {
            let mut parts = Vec::new();
            for piece in text.split(',') {
                let piece = piece.trim();
                let (weight, shape) = piece
                    .split_once('%')
                    .ok_or_else(|| format!("mix part {piece:?} needs a weight, like \"5% 3s\""))?;
                let weight: f64 = weight
                    .trim()
                    .parse()
                    .map_err(|_| format!("bad weight {:?} in {piece:?}", weight.trim()))?;
                if !(weight > 0.0 && weight <= 100.0) {
                    return Err(format!("weight {weight}% in {piece:?} must be in (0, 100]"));
                }
                parts.push((weight, parse_shape(shape)?));
            }
            let total: f64 = parts.iter().map(|(w, _)| w).sum();
            if (total - 100.0).abs() > 1e-6 {
                return Err(format!("mix weights add up to {total}%, not 100%"));
            }
            parts
        } else {
            vec![(100.0, parse_shape(text)?)]
        };
        Self::from_parts(parts)
    }

    fn from_parts(parts: Vec<(f64, Shape)>) -> Result<Self, String> {
        let mut cumulative = Vec::with_capacity(parts.len());
        let mut samplers = Vec::with_capacity(parts.len());
        let mut acc = 0.0;
        for (weight, shape) in &parts {
            acc += weight / 100.0;
            cumulative.push(acc);
            samplers.push(sampler(shape)?);
        }
        if let Some(last) = cumulative.last_mut() {
            *last = 1.0;
        }
        Ok(TaskDistribution {
            parts,
            cumulative,
            samplers,
        })
    }

    /// Draws one task duration.
    #[inline]
    pub(crate) fn sample(&self, rng: &mut impl Rng) -> Duration {
        let index = if self.samplers.len() == 1 {
            0
        } else {
            let u: f64 = rng.random();
            self.cumulative
                .iter()
                .position(|c| u < *c)
                .unwrap_or(self.samplers.len() - 1)
        };
        let ns = match &self.samplers[index] {
            Sampler::Constant(ns) => *ns,
            Sampler::Uniform(low, high) => rng.random_range(*low..=*high),
            Sampler::Exponential(exp) => exp.sample(rng).min(SAMPLE_CAP_NS) as u64,
            Sampler::LogNormal(log) => log.sample(rng).min(SAMPLE_CAP_NS) as u64,
        };
        Duration::from_nanos(ns)
    }

    /// The distribution's mean.
    pub(crate) fn mean(&self) -> Duration {
        let ns: f64 = self
            .parts
            .iter()
            .map(|(weight, shape)| weight / 100.0 * shape_mean_ns(shape))
            .sum();
        Duration::from_nanos(ns.min(SAMPLE_CAP_NS) as u64)
    }

    /// The distribution's median (what `1task` means in a fault's timing): exact for one shape,
    /// from 10,001 seeded samples for a mix.
    pub(crate) fn median(&self) -> Duration {
        if let [(_, shape)] = self.parts.as_slice() {
            return match shape {
                Shape::Constant(d) => *d,
                Shape::Uniform(low, high) => (*low + *high) / 2,
                Shape::Exponential(mean) => mean.mul_f64(std::f64::consts::LN_2),
                Shape::LogNormal(median, _) => *median,
            };
        }
        let mut rng = SmallRng::seed_from_u64(1);
        let mut samples: Vec<Duration> = (0..10_001).map(|_| self.sample(&mut rng)).collect();
        samples.sort_unstable();
        samples[samples.len() / 2]
    }

    /// The longest task it draws, near enough: the largest bound of a constant or uniform part, the
    /// 99.9th percentile of an exponential or log-normal one (they have no bound).
    pub(crate) fn longest(&self) -> Duration {
        self.parts
            .iter()
            .map(|(_, shape)| match shape {
                Shape::Constant(d) => *d,
                Shape::Uniform(_, high) => *high,
                Shape::Exponential(mean) => mean.mul_f64(1000f64.ln()),
                Shape::LogNormal(median, sigma) => median.mul_f64((3.09 * sigma).exp()),
            })
            .max()
            .unwrap_or_default()
    }

    /// The same distribution with every duration divided by `factor` (σ and weights kept).
    pub(crate) fn scaled(&self, factor: TimeScale) -> Self {
        let parts = self
            .parts
            .iter()
            .map(|(weight, shape)| {
                let shape = match shape {
                    Shape::Constant(d) => Shape::Constant(*d / factor),
                    Shape::Uniform(low, high) => Shape::Uniform(*low / factor, *high / factor),
                    Shape::Exponential(mean) => Shape::Exponential(*mean / factor),
                    Shape::LogNormal(median, sigma) => Shape::LogNormal(*median / factor, *sigma),
                };
                (*weight, shape)
            })
            .collect();
        // The shapes were valid and stay so: only a zero mean or median could fail, and
        // `Duration / factor` of a positive duration is positive until 1 ns over `factor`.
        Self::from_parts(parts).unwrap_or_else(|_| self.clone())
    }
}

fn shape_mean_ns(shape: &Shape) -> f64 {
    match shape {
        Shape::Constant(d) => d.as_nanos() as f64,
        Shape::Uniform(low, high) => (low.as_nanos() as f64 + high.as_nanos() as f64) / 2.0,
        Shape::Exponential(mean) => mean.as_nanos() as f64,
        Shape::LogNormal(median, sigma) => median.as_nanos() as f64 * (sigma * sigma / 2.0).exp(),
    }
}

fn as_ns(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

fn sampler(shape: &Shape) -> Result<Sampler, String> {
    Ok(match shape {
        Shape::Constant(d) => Sampler::Constant(as_ns(*d)),
        Shape::Uniform(low, high) => Sampler::Uniform(as_ns(*low), as_ns(*high)),
        Shape::Exponential(mean) => Sampler::Exponential(
            Exp::new(1.0 / mean.as_nanos() as f64)
                .map_err(|e| format!("exp {}: {e}", format_duration(*mean)))?,
        ),
        Shape::LogNormal(median, sigma) => Sampler::LogNormal(
            LogNormal::new((median.as_nanos() as f64).ln(), *sigma)
                .map_err(|e| format!("lognormal {}: {e}", format_duration(*median)))?,
        ),
    })
}

fn parse_shape(text: &str) -> Result<Shape, String> {
    let text = text.trim();
    let (word, rest) = text.split_once(char::is_whitespace).unwrap_or((text, ""));
    let rest = rest.trim();
    match word {
        "constant" => Ok(Shape::Constant(parse_duration(rest)?)),
        "uniform" => {
            let (low, high) = rest
                .split_once("..")
                .ok_or_else(|| format!("uniform needs LOW..HIGH, got {rest:?}"))?;
            let (low, high) = (parse_duration(low)?, parse_duration(high)?);
            if low > high {
                return Err(format!("uniform bounds reversed: {rest:?}"));
            }
            Ok(Shape::Uniform(low, high))
        }
        "exp" => {
            let mean = parse_duration(rest)?;
            if mean.is_zero() {
                return Err("exp mean must be > 0".into());
            }
            Ok(Shape::Exponential(mean))
        }
        "lognormal" => {
            let (median, sigma) = rest
                .rsplit_once(char::is_whitespace)
                .ok_or_else(|| format!("lognormal needs MEDIAN SIGMA, got {rest:?}"))?;
            let median = parse_duration(median)?;
            let sigma: f64 = sigma
                .parse()
                .map_err(|_| format!("bad lognormal sigma {sigma:?}"))?;
            if median.is_zero() || !(sigma > 0.0 && sigma.is_finite()) {
                return Err("lognormal needs a median > 0 and a sigma > 0".into());
            }
            Ok(Shape::LogNormal(median, sigma))
        }
        _ => Ok(Shape::Constant(parse_duration(text)?)),
    }
}

impl fmt::Display for Shape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Shape::Constant(d) => f.write_str(&format_duration(*d)),
            Shape::Uniform(low, high) => write!(
                f,
                "uniform {}..{}",
                format_duration(*low),
                format_duration(*high)
            ),
            Shape::Exponential(mean) => write!(f, "exp {}", format_duration(*mean)),
            Shape::LogNormal(median, sigma) => {
                write!(f, "lognormal {} {sigma}", format_duration(*median))
            }
        }
    }
}

/// Prints the scenario syntax back; it parses to the same distribution.
impl fmt::Display for TaskDistribution {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let [(_, shape)] = self.parts.as_slice() {
            return shape.fmt(f);
        }
        for (i, (weight, shape)) in self.parts.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{weight}% {shape}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn parses_every_shape_and_prints_it_back() {
        for text in [
            "50ms",
            "uniform 10ms..100ms",
            "exp 50ms",
            "lognormal 50ms 0.5",
            "95% 50ms, 5% uniform 3s..5s",
            "0ns",
        ] {
            let dist = TaskDistribution::parse(text).unwrap_or_else(|e| panic!("{text}: {e}"));
            let again = TaskDistribution::parse(&dist.to_string()).expect("round trip");
            assert_eq!(dist, again, "{text}");
        }
        assert_eq!(
            TaskDistribution::parse("constant 2s").expect("constant"),
            TaskDistribution::parse("2s").expect("plain duration")
        );
    }

    #[test]
    fn rejects_bad_input_with_a_reason() {
        for (text, needle) in [
            ("", "empty"),
            ("90% 50ms, 5% 3s", "add up to 95"),
            ("uniform 5s..1s", "reversed"),
            ("uniform 5s", "LOW..HIGH"),
            ("lognormal 50ms", "MEDIAN SIGMA"),
            ("lognormal 50ms -1", "sigma > 0"),
            ("exp 0s", "> 0"),
            ("-5ms", "negative"),
            ("fast", "duration"),
            ("x% 5ms", "bad weight"),
        ] {
            let err = TaskDistribution::parse(text).expect_err(text);
            assert!(err.contains(needle), "{text}: {err}");
        }
    }

    #[test]
    fn samples_follow_the_mix() {
        let dist = TaskDistribution::parse("90% 10ms, 10% uniform 1s..2s").expect("mix");
        let mut rng = SmallRng::seed_from_u64(7);
        let samples: Vec<Duration> = (0..10_000).map(|_| dist.sample(&mut rng)).collect();
        let long = samples.iter().filter(|d| **d >= ms(1000)).count();
        assert!((800..1200).contains(&long), "{long} long tasks of 10000");
        assert!(
            samples
                .iter()
                .all(|d| *d == ms(10) || (ms(1000)..=ms(2000)).contains(d))
        );
        let mean_ms = dist.mean().as_secs_f64() * 1e3;
        assert!((mean_ms - 159.0).abs() < 0.01, "{mean_ms}");
    }

    #[test]
    fn medians_and_scaling() {
        for (text, median) in [
            ("50ms", ms(50)),
            ("uniform 20ms..60ms", ms(40)),
            ("lognormal 30ms 0.4", ms(30)),
            ("95% 50ms, 5% uniform 3s..5s", ms(50)),
        ] {
            let dist = TaskDistribution::parse(text).expect(text);
            assert_eq!(dist.median(), median, "{text}");
        }
        let dist = TaskDistribution::parse("95% 2s, 5% uniform 20s..40s").expect("mix");
        assert_eq!(
            dist.scaled(TimeScale::parse("10").expect("scale"))
                .to_string(),
            "95% 200ms, 5% uniform 2s..4s"
        );
        assert_eq!(
            TaskDistribution::parse("lognormal 30ms 0.4")
                .expect("lognormal")
                .scaled(TimeScale::parse("3").expect("scale"))
                .to_string(),
            "lognormal 10ms 0.4"
        );
    }

    #[test]
    fn exponential_and_lognormal_have_the_asked_centre() {
        let mut rng = SmallRng::seed_from_u64(1);
        let exp = TaskDistribution::parse("exp 20ms").expect("exp");
        let mean = (0..20_000)
            .map(|_| exp.sample(&mut rng).as_secs_f64())
            .sum::<f64>()
            / 20_000.0;
        assert!((mean - 0.020).abs() < 0.002, "exp mean {mean}");
        let log = TaskDistribution::parse("lognormal 30ms 0.4").expect("lognormal");
        let mut samples: Vec<Duration> = (0..20_001).map(|_| log.sample(&mut rng)).collect();
        samples.sort();
        let median = samples[10_000].as_secs_f64();
        assert!((median - 0.030).abs() < 0.002, "lognormal median {median}");
    }
}
