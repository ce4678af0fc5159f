//! The pairs of a `lockbench scale --peers` run: each of lockbench's rows beside the real libraries read
//! with it (a peer names them in [`ScaleSeries::beside`]), at each step both reached, with the ratios the
//! targets are stated in (docs/design.md §8): client CPU per renewal owed, client memory per held lock,
//! and the renew calls and server CPU that holding cost. From several runs of the same command, each
//! figure is the median of the runs that measured it.
//!
//! Every figure is read from outside the client: a library's CPU, memory and threads are its adapter
//! process's (`/proc`), renew calls are what the server counted, and "held on server" is the server's own
//! count at the end of the window, so a row that lost locks without saying so cannot look cheap.

use std::fmt::Write as _;

use crate::format::{figure, fixed};
use crate::repeats::median_by;
use crate::scale::{ScalePoint, ScaleResults, ScaleSeries};

/// One row beside one library at one step, each figure the median over the runs that measured it.
#[derive(Debug, Clone, PartialEq)]
pub struct Pair {
    /// lockbench's row.
    pub row: String,
    /// The peer's id.
    pub peer: String,
    /// The library and version the peer's process loaded.
    pub library: Option<String>,
    /// Locks held.
    pub held: u64,
    /// How many runs measured both at this step.
    pub runs: usize,
    /// Client CPU per renewal owed (µs): CPU time over the window ÷ (held × window ÷ renewal period),
    /// lockbench's row then the library.
    pub cpu_us_per_renewal: [f64; 2],
    /// Client memory per held lock (bytes): resident-set growth since connecting ÷ held; `None` in
    /// files that did not record the start.
    pub bytes_per_lock: [Option<f64>; 2],
    /// Renew calls per second the server counted.
    pub renew_calls_per_s: [Option<f64>; 2],
    /// Server CPU per second of holding (ms).
    pub server_cpu_ms_per_s: [Option<f64>; 2],
    /// Locks the server held at the end of the window.
    pub server_held: [Option<f64>; 2],
    /// Leases lost (the client's view).
    pub lost: [f64; 2],
}

impl Pair {
    /// Whether both sides kept every lock they believed they held, by the server's count and their own
    /// (none lost): only then did they do the same work, and their costs compare.
    pub fn comparable(&self) -> bool {
        self.kept(0) && self.kept(1)
    }

    /// Whether side `i` (0: lockbench's row, 1: the library) kept every lock it believed it held, by
    /// the server's count and its own.
    pub fn kept(&self, i: usize) -> bool {
        self.server_held[i].is_none_or(|n| n >= self.held as f64) && self.lost[i] == 0.0
    }

    /// lockbench's row's CPU per renewal over the library's; `None` when not
    /// [comparable](Self::comparable).
    pub fn cpu_ratio(&self) -> Option<f64> {
        let (ours, theirs) = (self.cpu_us_per_renewal[0], self.cpu_us_per_renewal[1]);
        ratio(Some(ours), Some(theirs)).filter(|_| self.comparable())
    }

    /// lockbench's row's memory per lock over the library's; `None` when not
    /// [comparable](Self::comparable).
    pub fn memory_ratio(&self) -> Option<f64> {
        ratio(self.bytes_per_lock[0], self.bytes_per_lock[1]).filter(|_| self.comparable())
    }
}

fn ratio(ours: Option<f64>, theirs: Option<f64>) -> Option<f64> {
    let (ours, theirs) = (ours?, theirs?);
    (theirs > 0.0 && ours.is_finite()).then(|| ours / theirs)
}

/// Client CPU per renewal owed at `point` (µs), with a renewal `period_ms` long.
fn cpu_us_per_renewal(point: &ScalePoint, period_ms: f64) -> f64 {
    let window_s = point.window_ms / 1e3;
    let owed = point.held_locks as f64 * point.window_ms / period_ms.max(1e-9);
    point.client_cpu_percent / 100.0 * window_s * 1e6 / owed.max(1e-9)
}

/// Resident-set growth per held lock at `point` (bytes).
fn bytes_per_lock(series: &ScaleSeries, point: &ScalePoint) -> Option<f64> {
    let start = series.client_rss_at_start_bytes?;
    Some(point.client_rss_bytes.saturating_sub(start) as f64 / point.held_locks.max(1) as f64)
}

/// The median of what is there (the lower middle of an even count, a value some run measured);
/// `None` when nothing is.
fn median(values: impl IntoIterator<Item = Option<f64>>) -> Option<f64> {
    let values: Vec<f64> = values.into_iter().flatten().collect();
    median_by(&values, |v| *v).copied()
}

/// Every pair in `runs` (runs of one command), in the order of the first run's peers, each figure the
/// median over the runs in which both series reached the step.
pub fn pairs(runs: &[ScaleResults]) -> Vec<Pair> {
    let Some(first) = runs.first() else {
        return Vec::new();
    };
    let mut pairs = Vec::new();
    for peer in first.strategies.iter().filter(|s| !s.beside.is_empty()) {
        for row in &peer.beside {
            for step in &first.settings.steps {
                if let Some(pair) = pair_at(runs, row, &peer.strategy, *step) {
                    pairs.push(pair);
                }
            }
        }
    }
    pairs
}

/// `row` beside `peer` at `held` locks over `runs`; `None` when no run has both there.
fn pair_at(runs: &[ScaleResults], row: &str, peer: &str, held: u64) -> Option<Pair> {
    let mut both = Vec::new();
    for run in runs {
        let find = |id: &str| {
            let series = run.strategies.iter().find(|s| s.strategy == id)?;
            let point = series.points.iter().find(|p| p.held_locks == held)?;
            Some((series, point))
        };
        if let (Some(ours), Some(theirs)) = (find(row), find(peer)) {
            both.push((run.settings.renew_period_ms, ours, theirs));
        }
    }
    let library = both.iter().find_map(|(_, _, (s, _))| s.library.clone());
    if both.is_empty() {
        return None;
    }
    let each = |f: &dyn Fn(f64, &ScaleSeries, &ScalePoint) -> Option<f64>| {
        [0, 1].map(|side| {
            median(both.iter().map(|(period, ours, theirs)| {
                let (series, point) = if side == 0 { ours } else { theirs };
                f(*period, series, point)
            }))
        })
    };
    let cpu = each(&|period, _, p| Some(cpu_us_per_renewal(p, period)));
    let lost = each(&|_, _, p| Some(p.lost as f64));
    Some(Pair {
        row: row.to_owned(),
        peer: peer.to_owned(),
        library,
        held,
        runs: both.len(),
        cpu_us_per_renewal: cpu.map(|v| v.unwrap_or(f64::NAN)),
        bytes_per_lock: each(&|_, s, p| bytes_per_lock(s, p)),
        renew_calls_per_s: each(&|_, _, p| p.renew_calls_per_s),
        server_cpu_ms_per_s: each(&|_, _, p| p.server_cpu_ms_per_s),
        server_held: each(&|_, _, p| p.server_held.map(|n| n as f64)),
        lost: lost.map(|v| v.unwrap_or(0.0)),
    })
}

/// The first 200 characters of `reason` (a library's exception can run to a page).
fn shortened(reason: &str) -> String {
    match reason.char_indices().nth(200) {
        Some((at, _)) => format!("{}…", &reason[..at]),
        None => reason.to_owned(),
    }
}

fn two(values: [Option<f64>; 2], decimals: usize) -> String {
    two_with(values, |v| fixed(v, decimals))
}

/// Row · library, each as `show` writes it.
fn two_with(values: [Option<f64>; 2], show: impl Fn(Option<f64>) -> String) -> String {
    format!("{} · {}", show(values[0]), show(values[1]))
}

/// The pairs as a Markdown table (row · library in each two-valued cell), with the rows that stopped
/// short listed under it and a line saying how each figure was read; empty when there is no pair.
pub fn render_markdown(runs: &[ScaleResults]) -> String {
    let pairs = pairs(runs);
    if pairs.is_empty() {
        return String::new();
    }
    let mut out = String::from(
        "| held | lockbench row · library | runs | client CPU µs per renewal | ratio | client bytes per lock | ratio | renew calls/s | server CPU ms/s | held on server | lost |\n\
         |---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    for p in &pairs {
        let library = match &p.library {
            Some(name) => format!("{name} ({})", p.peer),
            None => p.peer.clone(),
        };
        let _ = writeln!(
            out,
            "| {} | {} · {library} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            p.held,
            p.row,
            p.runs,
            // Three significant digits: at 100k locks a renewal costs hundredths of a µs.
            two_with(p.cpu_us_per_renewal.map(Some), |v| {
                v.map_or_else(|| "-".to_owned(), figure)
            }),
            fixed(p.cpu_ratio(), 2),
            two(p.bytes_per_lock, 0),
            fixed(p.memory_ratio(), 2),
            two(p.renew_calls_per_s, 1),
            two(p.server_cpu_ms_per_s, 1),
            two(p.server_held, 0),
            two(p.lost.map(Some), 0),
        );
    }
    for (number, run) in runs.iter().enumerate() {
        for series in run.strategies.iter().filter(|s| !s.beside.is_empty()) {
            if let Some(stop) = &series.stopped {
                let run = if runs.len() > 1 {
                    format!(" (run {})", number + 1)
                } else {
                    String::new()
                };
                let _ = writeln!(
                    out,
                    "\n{}{run} {}",
                    series.strategy,
                    stop.describe(&shortened(&stop.reason))
                );
            }
        }
    }
    let _ = writeln!(
        out,
        "\nEach cell: lockbench's row · the library{}. A ratio is left out (-) where a side's server held \
         fewer locks than it believed, or it lost any: it did less work than the other. Client CPU per \
         renewal owed: CPU time over the window ÷ \
         (held ÷ renewal period × window), from the client's process (a library's is its adapter process, \
         read from /proc); bytes per lock: resident-set growth since connecting ÷ held; ratio: row ÷ \
         library; renew calls/s and server CPU as the server counted them; held on server: the server's own \
         count at the end of the window (Redis lock keys, ZooKeeper ephemeral nodes, etcd keys, PostgreSQL advisory locks and unexpired lease rows).",
        if runs.len() > 1 {
            format!(", each the median of {} runs", runs.len())
        } else {
            String::new()
        }
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scale::{ScaleSeries, ScaleSettings};

    fn point(held: u64, cpu_percent: f64, rss: u64) -> ScalePoint {
        ScalePoint {
            held_locks: held,
            held_at_end: held,
            window_ms: 1000.0,
            client_cpu_percent: cpu_percent,
            client_rss_bytes: rss,
            server_held: Some(held),
            ..ScalePoint::default()
        }
    }

    fn run(ours_cpu: f64, theirs_cpu: f64) -> ScaleResults {
        let mut results = crate::scale::tests::sample();
        results.settings = ScaleSettings {
            steps: vec![1000],
            renew_period_ms: 1000.0,
            ..results.settings
        };
        results.strategies = vec![
            ScaleSeries {
                strategy: "redisson".into(),
                points: vec![point(1000, ours_cpu, 3_000_000)],
                client_rss_at_start_bytes: Some(1_000_000),
                ..ScaleSeries::default()
            },
            ScaleSeries {
                strategy: "jvm-redisson".into(),
                library: Some("Redisson RLock 3.52.0".into()),
                beside: vec!["redisson".into(), "redis-watchdog-batched".into()],
                in_adapter_process: true,
                points: vec![point(1000, theirs_cpu, 9_000_000)],
                client_rss_at_start_bytes: Some(5_000_000),
                ..ScaleSeries::default()
            },
        ];
        results
    }

    #[test]
    fn a_pair_takes_the_median_of_its_runs_and_skips_a_row_not_run() {
        let runs = [run(1.0, 4.0), run(3.0, 4.0), run(2.0, 8.0)];
        let pairs = pairs(&runs);
        // redis-watchdog-batched was not in the runs: only the model's pair.
        assert_eq!(pairs.len(), 1);
        let p = &pairs[0];
        assert_eq!(
            (p.row.as_str(), p.peer.as_str(), p.runs),
            ("redisson", "jvm-redisson", 3)
        );
        // 2 % of a core over 1 s for 1000 renewals owed: 20 µs each; the library 40 µs.
        assert!((p.cpu_us_per_renewal[0] - 20.0).abs() < 1e-9, "{p:?}");
        assert!((p.cpu_us_per_renewal[1] - 40.0).abs() < 1e-9, "{p:?}");
        assert_eq!(p.cpu_ratio(), Some(0.5));
        // 2 MB over 1000 locks beside 4 MB.
        assert_eq!(p.bytes_per_lock, [Some(2000.0), Some(4000.0)]);
        let table = render_markdown(&runs);
        assert!(table.contains("| 1000 | redisson · Redisson RLock 3.52.0 (jvm-redisson) | 3 | 20.0 · 40.0 | 0.50 | 2000 · 4000 | 0.50 |"), "{table}");
        assert!(table.contains("the median of 3 runs"), "{table}");

        // A library whose server kept fewer locks than it believed did less work: no ratio.
        let mut lossy = run(1.0, 4.0);
        lossy.strategies[1].points[0].server_held = Some(400);
        let p = &super::pairs(&[lossy])[0];
        assert!(!p.comparable());
        assert_eq!((p.cpu_ratio(), p.memory_ratio()), (None, None));
    }
}
