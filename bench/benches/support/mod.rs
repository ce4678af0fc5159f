//! What the bench binaries share beyond `lockbench::base::measure`: the criterion settings that keep
//! `cargo bench` short, the tokio runtime, and starting an optional server with a clear skip message.

#![allow(dead_code)]

use std::time::Duration;

use criterion::Criterion;

/// Criterion with short warm-up and measurement and few samples: the whole `cargo bench` stays within
/// minutes on a 2-core machine. Command-line flags (`--measurement-time`, a filter, `--test`) still win.
pub(crate) fn criterion() -> Criterion {
    Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2))
        .sample_size(10)
        .configure_from_args()
}

/// The multi-threaded runtime every bench runs its clients on.
pub(crate) fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime")
}

/// Runs `start` (a server start or a client connect); on failure prints why `what` is skipped and gives
/// `None`, so one missing server does not cost the other measurements.
pub(crate) fn or_skip<T, E: std::fmt::Display>(what: &str, started: Result<T, E>) -> Option<T> {
    match started {
        Ok(value) => Some(value),
        Err(e) => {
            println!("{what}: skipped ({e})");
            None
        }
    }
}

/// The machine's load average, for the header of every table (and a warning on a smoke pass, whose
/// figures are single iterations, not measurements).
pub(crate) fn load_line() -> String {
    if !lockbench::base::measure::full_bench_run() {
        return "smoke pass (cargo test --benches or --test): one iteration each, the figures and verdicts below mean nothing".into();
    }
    match lockbench::base::measure::load_average() {
        Some(load) => format!(
            "load average {load:.2} on {} cores{}",
            machine_cores(),
            if load > 1.0 {
                " (others are using the machine: figures are noisier)"
            } else {
                ""
            }
        ),
        None => "load average unknown".into(),
    }
}

/// The `redis-watchdog` and `redis-guard-thread` Lua scripts exactly as `lockers` sends them: the shared
/// `lib.lua`, then the body. `lockers` keeps its script objects private, so the benches build the same
/// text from the same files to call the scripts directly, without the strategy's client around them.
pub(crate) mod sql_raw;

pub(crate) mod watchdog_scripts {
    use lockers::redis::Commands;

    const LIB: &str = include_str!("../../../lockers/src/redis/scripts/lib.lua");
    /// The TTL every raw call asks for.
    const TTL_MS: u64 = 30_000;

    fn with_lib(body: &str) -> redis::Script {
        redis::Script::new(&format!("{LIB}\n{body}"))
    }

    /// The helpers alone, then `return 1`: what defining them costs per call.
    pub(crate) fn lib_only() -> redis::Script {
        with_lib("return 1")
    }

    /// Renewal of one lock: `KEYS` lock; `ARGV` ttl ms, owner field → 0 or the PTTL found.
    pub(crate) fn renew() -> redis::Script {
        with_lib(include_str!(
            "../../../lockers/src/redis/scripts/watchdog_renew.lua"
        ))
    }

    /// Renewal of N locks: `KEYS` locks; `ARGV` ttl ms, then one owner field per lock → N answers.
    pub(crate) fn renew_batch() -> redis::Script {
        with_lib(include_str!(
            "../../../lockers/src/redis/scripts/watchdog_renew_batch.lua"
        ))
    }

    /// Which strategy's calls a [`RawCycle`] sends.
    #[derive(Debug, Clone, Copy)]
    pub(crate) enum Calls {
        /// redis-watchdog: acquire (`KEYS` lock, fence; `ARGV` ttl, owner, no other waiter), then
        /// release with the granted token (`ARGV` ttl, owner, channel, message, token).
        Watchdog,
        /// redis-guard-thread: `SET NX PX` + fencing `INCR` (`KEYS` lock, fence; `ARGV` ttl, value), then
        /// check-and-delete (`KEYS` lock; `ARGV` value).
        String,
    }

    /// One strategy's acquire and release scripts, built once (their SHA is computed here, not per
    /// call), sent raw: the baseline a strategy's cycle is a ratio of.
    #[derive(Debug)]
    pub(crate) struct RawCycle {
        calls: Calls,
        acquire: redis::Script,
        release: redis::Script,
    }

    impl RawCycle {
        /// The scripts of `calls`.
        pub(crate) fn new(calls: Calls) -> Self {
            let (acquire, release) = match calls {
                Calls::Watchdog => (
                    include_str!("../../../lockers/src/redis/scripts/watchdog_acquire.lua"),
                    include_str!("../../../lockers/src/redis/scripts/watchdog_release.lua"),
                ),
                Calls::String => (
                    include_str!("../../../lockers/src/redis/scripts/string_acquire.lua"),
                    include_str!("../../../lockers/src/redis/scripts/string_release.lua"),
                ),
            };
            RawCycle {
                calls,
                acquire: with_lib(acquire),
                release: with_lib(release),
            }
        }

        /// Takes `lock` for `owner` and releases it, as the strategy would; panics unless both succeed.
        pub(crate) async fn run(&self, connection: &mut Commands, lock: &str, owner: &str) {
            let fence = format!("{lock}:fence");
            let mut acquire = self.acquire.key(lock);
            acquire.key(&fence).arg(TTL_MS).arg(owner);
            if let Calls::Watchdog = self.calls {
                acquire.arg("0");
            }
            let (granted, token): (i64, i64) = acquire.invoke_async(connection).await.unwrap();
            let mut release = self.release.key(lock);
            match self.calls {
                Calls::Watchdog => release
                    .key(&fence)
                    .arg(TTL_MS)
                    .arg(owner)
                    .arg(format!("{lock}:unlock"))
                    .arg("0")
                    .arg(token),
                Calls::String => release.arg(owner),
            };
            let freed: i64 = release.invoke_async(connection).await.unwrap();
            assert_eq!((granted, freed), (1, 1), "raw cycle on {lock}");
        }
    }
}

/// The machine's cores (not this process's affinity, which pinning narrows), from `/proc/cpuinfo`.
pub(crate) fn machine_cores() -> usize {
    std::fs::read_to_string("/proc/cpuinfo")
        .map(|info| info.lines().filter(|l| l.starts_with("processor")).count())
        .ok()
        .filter(|n| *n > 0)
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

/// Whether `LOCKBENCH_PIN=1` asks for a second, pinned measurement.
pub(crate) fn pin_requested() -> bool {
    std::env::var("LOCKBENCH_PIN").is_ok_and(|v| v == "1")
}

/// The servers pinned to core 0 and this process (every thread) to core 1, with `taskset`, until
/// dropped (then every core again), so server and client no longer take turns on one core.
pub(crate) struct Pinned {
    pids: Vec<u32>,
}

fn taskset(cores: &str, pid: u32) -> Result<(), String> {
    let out = std::process::Command::new("taskset")
        .args(["-a", "-p", "-c", cores, &pid.to_string()])
        .output()
        .map_err(|e| format!("taskset (util-linux) is not available: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "taskset -a -p -c {cores} {pid}: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

impl Pinned {
    /// Pins `server_pids` to core 0 and this process to core 1; needs two cores and `taskset`.
    pub(crate) fn new(server_pids: &[u32]) -> Result<Self, String> {
        let cores = machine_cores();
        if cores < 2 {
            return Err(format!("pinning needs 2 cores, this machine has {cores}"));
        }
        let pinned = Pinned {
            pids: server_pids
                .iter()
                .copied()
                .chain([std::process::id()])
                .collect(),
        };
        for pid in server_pids {
            taskset("0", *pid)?;
        }
        taskset("1", std::process::id())?;
        Ok(pinned)
    }
}

impl Drop for Pinned {
    fn drop(&mut self) {
        let all = format!("0-{}", machine_cores() - 1);
        for pid in &self.pids {
            let _ = taskset(&all, *pid);
        }
    }
}

/// The file `LOCKBENCH_BENCH_RESULTS` names: each full bench run appends its checks there
/// ([`lockbench_reports::bench`]), the file `docs/results/bench.json` is made of.
pub(crate) const RESULTS_FILE: &str = "LOCKBENCH_BENCH_RESULTS";

/// One bench run's checks, pass by pass, appended to [`RESULTS_FILE`] when it is set.
pub(crate) struct Recorder {
    run: lockbench_reports::bench::BenchRun,
}

impl Recorder {
    /// Starts recording run of `bench` (load average and time taken now); `settings` says how long it
    /// measures.
    pub(crate) fn start(bench: &str, settings: String) -> Self {
        let args: Vec<String> = std::env::args()
            .skip(1)
            .filter(|a| a != "--bench")
            .collect();
        let command = format!(
            "{}cargo bench -p lockbench --bench {bench}{}{}",
            if pin_requested() {
                "LOCKBENCH_PIN=1 "
            } else {
                ""
            },
            if args.is_empty() { "" } else { " -- " },
            args.join(" ")
        );
        Recorder {
            run: lockbench_reports::bench::BenchRun {
                bench: bench.to_owned(),
                command,
                settings,
                started_at: lockbench_reports::format::now_rfc3339(),
                finished_at: String::new(),
                load_average: lockbench::base::measure::load_average(),
                environment: lockbench::base::environment::collect(Vec::new()),
                passes: Vec::new(),
            },
        }
    }

    /// Records one pass's checks.
    pub(crate) fn pass(&mut self, name: &str, checks: &[lockbench::base::measure::Check]) {
        self.run.passes.push(lockbench_reports::bench::BenchPass {
            name: name.to_owned(),
            checks: checks.iter().map(|c| c.recorded()).collect(),
        });
    }

    /// Appends the run to [`RESULTS_FILE`] when it is set and this is a full bench run (a smoke pass's
    /// figures mean nothing); a file that is not a bench file stops the bench with one line.
    pub(crate) fn finish(mut self) {
        let Some(path) = std::env::var_os(RESULTS_FILE) else {
            return;
        };
        if !lockbench::base::measure::full_bench_run() {
            return;
        }
        let path = std::path::PathBuf::from(path);
        let fail = |why: String| -> ! {
            eprintln!("{RESULTS_FILE}={}: {why}", path.display());
            std::process::exit(2)
        };
        let mut results = match std::fs::read_to_string(&path) {
            Ok(text) => lockbench_reports::bench::BenchResults::from_json(&text)
                .unwrap_or_else(|e| fail(e.to_string())),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                lockbench_reports::bench::BenchResults::new()
            }
            Err(e) => fail(e.to_string()),
        };
        self.run.finished_at = lockbench_reports::format::now_rfc3339();
        results.runs.push(self.run);
        if let Err(e) = std::fs::write(&path, results.to_json() + "\n") {
            fail(e.to_string());
        }
        println!("\nchecks appended to {}", path.display());
    }
}

/// `valkey-ifeq`'s own commands sent raw, no script: the baseline its cycle is a ratio of.
pub(crate) mod ifeq_commands {
    use lockers::redis::Commands;

    /// Takes `lock` with `value` as `valkey-ifeq` does (one `MULTI` / `SET NX PX` / `INCR` fence /
    /// `EXEC` round trip), then releases it (`DELIFEQ`); panics unless both succeed.
    pub(crate) async fn run(connection: &mut Commands, lock: &str, value: &str) {
        let (set, _token): (Option<String>, u64) = redis::pipe()
            .atomic()
            .cmd("SET")
            .arg(lock)
            .arg(value)
            .arg("NX")
            .arg("PX")
            .arg(30_000)
            .cmd("INCR")
            .arg(format!("{lock}:fence"))
            .query_async(connection)
            .await
            .unwrap();
        assert!(set.is_some(), "the raw SET NX found {lock} taken");
        let deleted: i64 = redis::cmd("DELIFEQ")
            .arg(lock)
            .arg(value)
            .query_async(connection)
            .await
            .unwrap();
        assert_eq!(deleted, 1);
    }
}
