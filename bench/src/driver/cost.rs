//! Client cost over the measured window: CPU time, the most threads and the largest resident set,
//! sampled every 200 ms from `/proc` — of the lockbench process itself and the peer adapter processes
//! its clients run their libraries in (tasks mode: clients, driver and resource together) or summed over
//! the worker processes and the peer adapter processes they started (each worker's process group).

use std::collections::HashMap;
use std::time::Duration;

use lockbench_reports::model::ClientCost;

use crate::base::clock::MonoClock;
use crate::base::proc_stat::{self, ProcSample};
use crate::base::stop::StopSignal;

const PERIOD: Duration = Duration::from_millis(200);

/// Whose cost is sampled.
#[derive(Debug, Clone)]
pub(crate) enum CostScope {
    /// The lockbench process, and the peer adapter processes (pids) its clients' libraries run in.
    DriverProcess(Vec<u32>),
    /// These worker processes.
    Workers(Vec<u32>),
}

impl CostScope {
    fn pids(&self) -> Vec<Option<u32>> {
        match self {
            CostScope::DriverProcess(adapters) => std::iter::once(None)
                .chain(adapters.iter().copied().map(Some))
                .collect(),
            // Each worker leads a process group that holds the peer adapter processes it started.
            CostScope::Workers(pids) => pids
                .iter()
                .flat_map(|pid| crate::base::proc_stat::group_members(*pid))
                .map(Some)
                .collect(),
        }
    }

    fn name(&self) -> &'static str {
        match self {
            CostScope::DriverProcess(_) => "driver_process",
            CostScope::Workers(_) => "worker_processes",
        }
    }
}

/// Samples `scope` from `measure_from` until `stop`; returns the cost over that window.
pub(crate) async fn sample(
    scope: CostScope,
    clock: MonoClock,
    measure_from: u64,
    stop: StopSignal,
) -> ClientCost {
    let pids = scope.pids();
    let mut cost = ClientCost {
        scope: scope.name().to_owned(),
        threads_max: 0,
        rss_max_bytes: 0,
        cpu_seconds: 0.0,
        cpu_cores: 0.0,
    };
    tokio::select! {
        _ = stop.wait() => return cost,
        _ = tokio::time::sleep_until(clock.instant(measure_from).into()) => {}
    }
    let mut last: HashMap<Option<u32>, ProcSample> = HashMap::new();
    let take = |last: &mut HashMap<Option<u32>, ProcSample>, cost: &mut ClientCost| {
        let (mut threads, mut rss) = (0, 0);
        for pid in &pids {
            if let Some(s) = proc_stat::sample(*pid) {
                last.insert(*pid, s);
                threads += s.threads;
                rss += s.rss_bytes;
            }
        }
        cost.threads_max = cost.threads_max.max(threads);
        cost.rss_max_bytes = cost.rss_max_bytes.max(rss);
    };
    take(&mut last, &mut cost);
    let cpu_start: f64 = last.values().map(|s| s.cpu_seconds).sum();
    let started = clock.now();
    loop {
        tokio::select! {
            _ = stop.wait() => break,
            _ = tokio::time::sleep(PERIOD) => take(&mut last, &mut cost),
        }
    }
    take(&mut last, &mut cost);
    let cpu_end: f64 = last.values().map(|s| s.cpu_seconds).sum();
    let seconds = (clock.now() - started) as f64 / 1e9;
    cost.cpu_seconds = (cpu_end - cpu_start).max(0.0);
    cost.cpu_cores = if seconds > 0.0 {
        cost.cpu_seconds / seconds
    } else {
        0.0
    };
    cost
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn measures_this_process() {
        let clock = MonoClock::new();
        let stop = StopSignal::new();
        let sampler = tokio::spawn(sample(
            CostScope::DriverProcess(Vec::new()),
            clock,
            clock.now(),
            stop.clone(),
        ));
        tokio::time::sleep(Duration::from_millis(50)).await;
        let spin_until = std::time::Instant::now() + Duration::from_millis(300);
        while std::time::Instant::now() < spin_until {
            std::hint::black_box(0u64);
        }
        stop.set();
        let cost = sampler.await.expect("joined");
        assert!(cost.threads_max >= 1);
        assert!(cost.rss_max_bytes > 0);
        assert!(cost.cpu_seconds > 0.05, "{cost:?}");
        assert!(cost.cpu_cores > 0.0);
    }
}
