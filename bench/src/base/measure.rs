//! Measurement helpers shared by `cargo bench` (`bench/benches/*`) and `lockbench scale`, so each exists
//! once: latency histograms and their percentiles, this process's CPU time, Redis's per-command server
//! time (`INFO commandstats`), and checks of a measured ratio against its docs/design.md §8 target.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::net::SocketAddr;
use std::time::Duration;

use hdrhistogram::Histogram;
use lockbench_reports::bench::BenchCheck;
pub use lockbench_reports::bench::Bound;
use lockbench_reports::format;
use lockbench_servers::probe;
pub use lockbench_servers::redis::CommandStat;
use lockbench_servers::redis::commandstats;

/// Latencies of one operation: an HdrHistogram of nanoseconds (1 ns to 60 s, 3 significant digits).
#[derive(Debug, Clone)]
pub struct Latency {
    histogram: Histogram<u64>,
}

impl Default for Latency {
    fn default() -> Self {
        Self::new()
    }
}

impl Latency {
    /// An empty histogram.
    pub fn new() -> Self {
        let histogram = Histogram::new_with_bounds(1, 60_000_000_000, 3)
            .expect("constant histogram bounds are valid");
        Latency { histogram }
    }

    /// Records one latency (values past 60 s count as 60 s).
    pub fn record(&mut self, took: Duration) {
        let nanos = u64::try_from(took.as_nanos()).unwrap_or(u64::MAX).max(1);
        self.histogram.saturating_record(nanos);
    }

    /// Forgets every recorded value.
    pub fn clear(&mut self) {
        self.histogram.reset();
    }

    /// How many latencies were recorded.
    pub fn count(&self) -> u64 {
        self.histogram.len()
    }

    /// The latency at quantile `q` in [0, 1] (zero when empty).
    pub fn quantile(&self, q: f64) -> Duration {
        Duration::from_nanos(self.histogram.value_at_quantile(q))
    }

    /// The median.
    pub fn p50(&self) -> Duration {
        self.quantile(0.5)
    }

    /// The 99th percentile.
    pub fn p99(&self) -> Duration {
        self.quantile(0.99)
    }

    /// The largest value.
    pub fn max(&self) -> Duration {
        Duration::from_nanos(self.histogram.max())
    }
}

/// Microseconds as a float, for tables.
pub fn micros(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

/// Redis `INFO commandstats` at one moment, by lower-case command name (`evalsha`, `set`, …). The
/// `info` command itself is left out, so reading the counters does not change them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RedisCommandStats {
    /// Counters by command.
    pub by_command: BTreeMap<String, CommandStat>,
}

impl RedisCommandStats {
    /// Asks the server at `addr` (blocking, a few milliseconds).
    pub fn read(addr: SocketAddr) -> Result<Self, String> {
        let info = probe::resp_command(addr, &["INFO", "commandstats"], Duration::from_secs(2))
            .map_err(|e| format!("INFO commandstats from {addr}: {e}"))?;
        Ok(Self::parse(&info))
    }

    /// Parses `cmdstat_<name>:calls=N,usec=N,…` lines (`info` left out).
    pub fn parse(info: &str) -> Self {
        let mut by_command = commandstats(info);
        by_command.remove("info");
        RedisCommandStats { by_command }
    }

    /// What happened since `earlier`: per-command differences, commands without new calls left out.
    pub fn since(&self, earlier: &RedisCommandStats) -> RedisCommandStats {
        let by_command = self
            .by_command
            .iter()
            .filter_map(|(name, now)| {
                let before = earlier.by_command.get(name).copied().unwrap_or_default();
                let calls = now.calls.saturating_sub(before.calls);
                (calls > 0).then(|| {
                    let usec = now.usec.saturating_sub(before.usec);
                    (name.clone(), CommandStat { calls, usec })
                })
            })
            .collect();
        RedisCommandStats { by_command }
    }

    /// One command's counters (zero when absent).
    pub fn get(&self, command: &str) -> CommandStat {
        self.by_command.get(command).copied().unwrap_or_default()
    }

    /// Calls and time of the renewals while a client only holds: `command`'s, where a renewal is that
    /// command and no script (`set` for `valkey-ifeq`), or else the [`scripts`](Self::scripts).
    pub fn renewals(&self, command: Option<&str>) -> CommandStat {
        command.map_or_else(|| self.scripts(), |command| self.get(command))
    }

    /// Calls and time of the script commands (`EVAL`, `EVALSHA`, `FCALL` and their `_RO` forms). Redis
    /// counts every `redis.call` a script makes again under that command's own name, inside the script's
    /// time: when only scripts are sent, this — not [`total`](Self::total) — is the server's time in
    /// commands.
    pub fn scripts(&self) -> CommandStat {
        [
            "eval",
            "evalsha",
            "eval_ro",
            "evalsha_ro",
            "fcall",
            "fcall_ro",
        ]
        .iter()
        .map(|name| self.get(name))
        .fold(CommandStat::default(), |sum, s| CommandStat {
            calls: sum.calls + s.calls,
            usec: sum.usec + s.usec,
        })
    }

    /// Calls and time summed over every command (commands run by scripts are counted twice: once under
    /// their own name and once inside the script's time).
    pub fn total(&self) -> CommandStat {
        self.by_command
            .values()
            .fold(CommandStat::default(), |sum, s| CommandStat {
                calls: sum.calls + s.calls,
                usec: sum.usec + s.usec,
            })
    }
}

/// A measured value against a baseline measured by the same client in the same run, and its target.
#[derive(Debug, Clone, PartialEq)]
pub struct Check {
    /// What is compared, one line.
    pub what: String,
    /// The measured value.
    pub value: f64,
    /// The baseline it is divided by.
    pub baseline: f64,
    /// Unit of value and baseline, for the table (`µs`, `/s`).
    pub unit: &'static str,
    /// The target, if docs/design.md §8 sets one.
    pub target: Option<Bound>,
}

impl Check {
    /// value ÷ baseline (infinite for a zero baseline).
    pub fn ratio(&self) -> f64 {
        self.value / self.baseline
    }

    /// Whether the target is met (`None` without a target).
    pub fn met(&self) -> Option<bool> {
        self.target.map(|bound| bound.met(self.ratio()))
    }

    /// This check as the bench results file keeps it.
    pub fn recorded(&self) -> BenchCheck {
        BenchCheck {
            what: self.what.clone(),
            value: self.value,
            baseline: self.baseline,
            unit: self.unit.to_owned(),
            target: self.target,
        }
    }
}

/// A table of checks: value, baseline, ratio, target and verdict (`met`, `MISSED`, `-`).
pub fn render_checks(title: &str, checks: &[Check]) -> String {
    let width = checks
        .iter()
        .map(|c| c.what.chars().count())
        .max()
        .unwrap_or(8);
    let mut out = format!("{title}\n");
    let _ = writeln!(
        out,
        "  {:width$}  {:>12}  {:>12}  {:>6}  {:>7}  result",
        "measure", "value", "baseline", "ratio", "target"
    );
    for check in checks {
        let target = check
            .target
            .map_or_else(|| "-".to_owned(), |bound| bound.to_string());
        let verdict = match check.met() {
            Some(true) => "met",
            Some(false) => "MISSED",
            None => "-",
        };
        let _ = writeln!(
            out,
            "  {:width$}  {:>9} {:<2}  {:>9} {:<2}  {:>6.2}  {:>7}  {verdict}",
            check.what,
            format::figure(check.value),
            check.unit,
            format::figure(check.baseline),
            check.unit,
            check.ratio(),
            target
        );
    }
    out
}

/// The machine's 1-minute load average (from `/proc/loadavg`), printed next to figures so a reader
/// knows whether other work shared the cores.
pub fn load_average() -> Option<f64> {
    std::fs::read_to_string("/proc/loadavg")
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// True when a bench binary was started by `cargo bench` (which passes `--bench`) without `--test`;
/// under `cargo test --benches` or `cargo bench -- --test` the benches run a short smoke pass instead.
pub fn full_bench_run() -> bool {
    let args: Vec<String> = std::env::args().collect();
    args.iter().any(|a| a == "--bench") && !args.iter().any(|a| a == "--test")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn latency_percentiles() {
        let mut latency = Latency::new();
        for micros in 1..=100u64 {
            latency.record(Duration::from_micros(micros));
        }
        assert_eq!(latency.count(), 100);
        let p50 = super::micros(latency.p50());
        assert!((49.0..=51.0).contains(&p50), "{p50}");
        assert!(latency.p99() <= latency.max());
        latency.record(Duration::from_secs(3600));
        assert!(latency.max() >= Duration::from_secs(59));
        latency.clear();
        assert_eq!(latency.count(), 0);
    }

    #[test]
    fn commandstats_parse_and_difference() {
        let before = RedisCommandStats::parse(
            "# Commandstats\r\ncmdstat_evalsha:calls=10,usec=50,usec_per_call=5.00,rejected_calls=0\r\ncmdstat_info:calls=3,usec=1\r\n",
        );
        assert_eq!(before.by_command.len(), 1);
        let after = RedisCommandStats::parse(
            "cmdstat_evalsha:calls=30,usec=150,usec_per_call=5.00\r\ncmdstat_set:calls=4,usec=8\r\ncmdstat_get:calls=0,usec=0\r\n",
        );
        let delta = after.since(&before);
        assert_eq!(
            delta.get("evalsha"),
            CommandStat {
                calls: 20,
                usec: 100
            }
        );
        assert_eq!(delta.get("evalsha").usec_per_call(), 5.0);
        assert_eq!(
            delta.total(),
            CommandStat {
                calls: 24,
                usec: 108
            }
        );
        assert_eq!(delta.get("get"), CommandStat::default());
    }

    #[test]
    fn checks_and_their_table() {
        let lock = Check {
            what: "redis-watchdog p50 / 2 × EVALSHA p50".into(),
            value: 130.0,
            baseline: 100.0,
            unit: "µs",
            target: Some(Bound::AtMost(1.3)),
        };
        assert_eq!(lock.met(), Some(true));
        let rate = Check {
            what: "throughput / EVALSHA rate ÷ 2".into(),
            value: 50.0,
            baseline: 100.0,
            unit: "/s",
            target: Some(Bound::AtLeast(0.7)),
        };
        assert_eq!(rate.met(), Some(false));
        let info = Check {
            target: None,
            ..rate.clone()
        };
        assert_eq!(info.met(), None);
        let table = render_checks("targets", &[lock, rate, info]);
        assert!(table.contains("met") && table.contains("MISSED"), "{table}");
        assert!(table.contains("1.30") && table.contains("0.50"), "{table}");
    }
}
