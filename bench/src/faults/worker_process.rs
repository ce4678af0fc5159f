//! Faults on one client process (processes mode), spec and injection: SIGSTOP/SIGCONT
//! (`pause_worker`), SIGKILL (`crash_worker`), a starved runtime (`starve_worker`), busy threads
//! (`cpu_hog`) and a cgroup CPU quota (`cgroup_quota`). They strike the holder or `client:N`, need
//! the clients in worker processes (not a lock in the driver's own process), and the CPU faults
//! take their threads, quota and period.

use std::time::Duration;

use lockers::Capabilities;

use super::cgroup::CpuQuota;
use super::env::{
    FaultEnv, Record, Victim, check_struck_hold, describe_victim, group_seen_killed,
    group_seen_stopped, hold_for, lasts_until, measure_victim, pick_client,
};
use super::kind::{Aftermath, Needs, Targets, WorkerFault};
use super::spec::{FaultFile, Profile, Setting, Spec, positive, timing};
use super::workers::{
    Crash, HOG_THREAD, HeldSeen, LibrarySeen, LibraryStarve, STARVED_THREAD, WorkerCommand,
    WorkerControl, runtime_threads, starve_evidence,
};
use crate::base::clock::duration_ns;
use crate::base::duration::{Units, format_duration};
use crate::base::time_scale::TimeScale;
use crate::strategies::Strategy;

/// What the family says of `kind`.
pub(super) fn profile(kind: WorkerFault) -> Profile {
    let worker = Profile {
        allowed: &["duration"],
        required: &["duration"],
        targets: Targets::Clients,
        needs: Needs::WorkerProcesses,
        ..Profile::PLAIN
    };
    match kind {
        WorkerFault::Pause => worker,
        WorkerFault::Crash => Profile {
            allowed: &[],
            required: &[],
            ..worker
        },
        WorkerFault::Starve => Profile {
            of_the_strategy: starvation_reaches,
            ..worker
        },
        WorkerFault::CpuHog => Profile {
            allowed: &["duration", "threads"],
            aftermath: Aftermath::SlowsDown,
            ..worker
        },
        WorkerFault::CgroupQuota => Profile {
            allowed: &["duration", "quota", "period"],
            ..worker
        },
    }
}

/// A worker fault's kind with the settings of its own: a CPU hog's threads, a cgroup's CPU quota
/// per period.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WorkerSpec {
    /// `pause_worker`.
    Pause,
    /// `crash_worker`.
    Crash,
    /// `starve_worker`.
    Starve,
    /// `cpu_hog`, with this many busy threads.
    CpuHog {
        /// Busy threads.
        threads: u32,
    },
    /// `cgroup_quota`: `quota` of CPU time allowed per `period`.
    CgroupQuota {
        /// CPU time allowed per period.
        quota: Duration,
        /// The quota's period.
        period: Duration,
    },
}

impl WorkerSpec {
    /// Reads and checks the settings of a worker fault of `kind` as written, defaults filled in.
    pub(crate) fn read(kind: WorkerFault, file: &FaultFile, units: Units) -> Result<Self, String> {
        Ok(match kind {
            WorkerFault::Pause => WorkerSpec::Pause,
            WorkerFault::Crash => WorkerSpec::Crash,
            WorkerFault::Starve => WorkerSpec::Starve,
            WorkerFault::CpuHog => WorkerSpec::CpuHog {
                threads: read_threads(file)?,
            },
            WorkerFault::CgroupQuota => {
                let (quota, period) = read_quota(file, units)?;
                WorkerSpec::CgroupQuota { quota, period }
            }
        })
    }

    /// Its settings, for the `--fault` text and the results.
    pub(crate) fn settings(&self) -> Vec<Setting> {
        match *self {
            WorkerSpec::Pause | WorkerSpec::Crash | WorkerSpec::Starve => Vec::new(),
            WorkerSpec::CpuHog { threads } => vec![Setting::Count("threads", threads)],
            WorkerSpec::CgroupQuota { quota, period } => vec![
                Setting::Timing("quota", quota),
                Setting::Timing("period", period),
            ],
        }
    }

    /// The same with its timings divided by `factor` (`--time-scale`).
    pub(crate) fn scaled(&self, factor: TimeScale) -> Self {
        match *self {
            WorkerSpec::CgroupQuota { quota, period } => WorkerSpec::CgroupQuota {
                quota: quota / factor,
                period: period / factor,
            },
            other => other,
        }
    }
}

/// Starvation blocks the worker's async runtime threads; a peer's library renews on its own
/// threads in the adapter process, which that does not reach: the adapter must block them itself
/// (`starve`, declared in its catalog entry). A CPU hog does reach them: its threads run in the
/// worker, beside the adapter in the same process group and cgroup, and compete with the library's
/// threads for the CPU as they would with a native row's runtime.
fn starvation_reaches(strategy: &Strategy, _: &Capabilities) -> Result<(), String> {
    if strategy
        .peer_spec()
        .is_some_and(|peer| !peer.starve_library)
    {
        return Err("its library renews on its own threads in the adapter's own process, which the worker's runtime starvation does not reach, and its adapter cannot block them (no `starve` in adapters/PROTOCOL.md; process-pause stops them all)".to_owned());
    }
    Ok(())
}

const MAX_HOG_THREADS: u32 = 256;

/// The CPU hog's threads (4 by default), within bounds.
fn read_threads(file: &FaultFile) -> Result<u32, String> {
    let threads = file.threads.unwrap_or(4);
    if threads == 0 || threads > MAX_HOG_THREADS {
        return Err(format!(
            "threads: must be 1..={MAX_HOG_THREADS}, got {threads}"
        ));
    }
    Ok(threads)
}

/// The cgroup's CPU quota and period (5 ms per 100 ms by default), within the kernel's bounds.
fn read_quota(file: &FaultFile, units: Units) -> Result<(Duration, Duration), String> {
    let period = positive("period", timing("period", &file.period, units)?)?
        .unwrap_or(Duration::from_millis(100));
    if period < Duration::from_millis(1) || period > Duration::from_secs(1) {
        return Err(format!(
            "period: must be 1ms..=1s (the kernel's bounds), got {}",
            format_duration(period)
        ));
    }
    let quota = positive("quota", timing("quota", &file.quota, units)?)?
        .unwrap_or(Duration::from_millis(5));
    if quota < Duration::from_millis(1) {
        return Err(format!(
            "quota: must be at least 1ms (the kernel's bound), got {}",
            format_duration(quota)
        ));
    }
    Ok((quota, period))
}

/// A worker fault as its family sees it.
type WorkerFaultSpec<'a> = Spec<&'a WorkerSpec>;

/// Applies a worker fault, lifts it, and measures what followed.
pub(super) async fn inject(spec: &WorkerFaultSpec<'_>, env: &FaultEnv, rec: &mut Record) {
    let Some(workers) = env.workers.clone() else {
        rec.not_applied("needs workers = processes");
        return;
    };
    let Some(victim) = pick_client(env, spec.target, rec.start).await else {
        rec.not_applied("no client acquired a lock before the case ended");
        return;
    };
    rec.target = describe_victim(&victim);
    rec.param("client", victim.client);
    if let Some((key, _)) = victim.held {
        rec.param("key", key);
    }
    let cursor = env.board.cursor();
    let t0 = env.clock.now();
    rec.start = t0;
    let strike = Strike {
        workers: &workers,
        client: victim.client,
        t0,
    };
    let struck = match *spec.family {
        WorkerSpec::Pause => pause(spec, env, strike, rec).await,
        WorkerSpec::Crash => crash(env, strike, &victim, rec).await,
        WorkerSpec::Starve => starve_or_hog(spec, env, strike, rec, None).await,
        WorkerSpec::CpuHog { threads } => {
            starve_or_hog(spec, env, strike, rec, Some(threads)).await
        }
        WorkerSpec::CgroupQuota { quota, period } => {
            cgroup_quota(spec, env, strike, rec, (quota, period)).await
        }
    };
    if !struck {
        return;
    }
    measure_victim(env, victim, cursor, t0, rec).await;
    check_struck_hold(env, spec.target, &victim, t0, rec).await;
}

/// The worker process a fault strikes, and when.
#[derive(Debug, Clone, Copy)]
struct Strike<'a> {
    /// The case's worker processes.
    workers: &'a WorkerControl,
    /// The client whose process it strikes.
    client: u32,
    /// When the fault began.
    t0: u64,
}

/// `pause_worker`: stops the worker process (SIGSTOP) for the fault's duration, then lets it go on
/// (SIGCONT). False when it could not be stopped: then there is nothing to measure.
async fn pause(
    spec: &WorkerFaultSpec<'_>,
    env: &FaultEnv,
    strike: Strike<'_>,
    rec: &mut Record,
) -> bool {
    let Strike {
        workers, client, ..
    } = strike;
    if let Err(e) = workers.signal(client, libc::SIGSTOP) {
        rec.not_applied(e);
        return false;
    }
    if let Some(pid) = workers.pid(client) {
        rec.evidence(group_seen_stopped(pid).await);
    }
    hold_for(env, spec.duration, rec).await;
    // Read before the signal: the worker may run again the moment it is sent.
    let resumed = env.clock.now();
    if let Err(e) = workers.signal(client, libc::SIGCONT) {
        rec.note(e);
    }
    rec.stop = Some(resumed);
    true
}

/// `crash_worker`: kills the worker process (SIGKILL) and records the crash, with the lock `victim`
/// held, for the driver. False when it could not be killed: then there is nothing to measure.
async fn crash(env: &FaultEnv, strike: Strike<'_>, victim: &Victim, rec: &mut Record) -> bool {
    let Strike {
        workers,
        client,
        t0,
    } = strike;
    if let Err(e) = workers.signal(client, libc::SIGKILL) {
        rec.not_applied(e);
        return false;
    }
    if let Some(pid) = workers.pid(client) {
        rec.evidence(group_seen_killed(pid).await);
    }
    env.board.forget(client);
    workers.record_crash(Crash {
        client,
        held: victim.held,
        at_ns: t0,
    });
    true
}

/// `starve_worker` and `cpu_hog` (`hog`: its threads): tells the worker to starve its own runtime,
/// or to run busy threads, until the fault's end, and gathers the evidence that it did. False when
/// the worker is gone.
async fn starve_or_hog(
    spec: &WorkerFaultSpec<'_>,
    env: &FaultEnv,
    strike: Strike<'_>,
    rec: &mut Record,
    hog: Option<u32>,
) -> bool {
    let Strike {
        workers,
        client,
        t0,
    } = strike;
    let until_ns = t0 + spec.duration.map(duration_ns).unwrap_or(0);
    let command = match hog {
        Some(threads) => WorkerCommand::Hog { threads, until_ns },
        None => WorkerCommand::Starve { until_ns },
    };
    let hog = hog.is_some();
    // A report left from an earlier starvation is not this one's.
    let _ = workers.take_library_starve(client);
    if !workers.send(client, command) {
        rec.not_applied("the worker is gone");
        return false;
    }
    if let Some(pid) = workers.pid(client) {
        rec.evidence(if hog {
            hog_threads_seen(env, pid, until_ns).await
        } else {
            starved_threads_seen(env, workers, client, pid, (until_ns, until_ns - t0)).await
        });
    }
    if hog
        && rec.applied == Some(true)
        && let Some(pid) = workers.pid(client)
    {
        let used = hog_cpu_until(env, pid, until_ns).await;
        let seen = rec.evidence.take();
        rec.evidence(hog_evidence(seen, used, until_ns - t0));
    }
    // The worker ends it by itself at `until_ns`, also if the case ends first (then it was cut
    // short).
    lasts_until(env, t0, until_ns, rec).await;
    rec.stop = Some(until_ns.min(env.clock.now()));
    true
}

/// `cgroup_quota`: puts the worker process under a cgroup CPU `quota` per `period` for the fault's
/// duration, and takes how long the cgroup throttled it as the evidence. False when the quota could
/// not be set.
async fn cgroup_quota(
    spec: &WorkerFaultSpec<'_>,
    env: &FaultEnv,
    strike: Strike<'_>,
    rec: &mut Record,
    (quota, period): (Duration, Duration),
) -> bool {
    let Some(pid) = strike.workers.pid(strike.client) else {
        rec.not_applied("no worker process");
        return false;
    };
    let applied = match CpuQuota::apply(pid, quota, period) {
        Ok(q) => q,
        Err(e) => {
            rec.not_applied(format!("cgroup CPU quota unavailable here: {e}"));
            return false;
        }
    };
    hold_for(env, spec.duration, rec).await;
    let window = Duration::from_nanos(env.clock.now() - strike.t0);
    match applied.throttled() {
        Ok(throttled) => rec.evidence(quota_evidence(throttled, window, quota, period)),
        Err(e) => rec.not_applied(e),
    }
    drop(applied);
    rec.stop = Some(env.clock.now());
    true
}

/// The most CPU time the hog's threads in worker `pid` were seen to have used, sampled every 50 ms
/// until `until_ns` (the threads end then, and their time with them) or the case ends.
async fn hog_cpu_until(env: &FaultEnv, pid: u32, until_ns: u64) -> Duration {
    let mut most = Duration::ZERO;
    while env.clock.now() < until_ns && !env.stop.is_set() {
        most = most.max(crate::base::proc_stat::threads_cpu(pid, HOG_THREAD));
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    most
}

/// The hog's evidence (`seen`: its threads ran) with the CPU time they used in the `window_ns` it
/// lasted: a hog that used none did not compete for the cores.
fn hog_evidence(seen: Option<String>, used: Duration, window_ns: u64) -> Result<String, String> {
    let seen = seen.unwrap_or_default();
    let (used_ms, window_ms) = (used.as_secs_f64() * 1e3, window_ns as f64 / 1e6);
    if used.is_zero() {
        return Err(format!("{seen}, but they used no CPU time"));
    }
    Ok(format!(
        "{seen}, using {used_ms:.0} ms of CPU in its {window_ms:.0} ms window ({:.2} cores)",
        used_ms / window_ms.max(1.0)
    ))
}

/// The share of what a quota asks that its throttling must reach to count as applied: the first
/// period starts part-way through and the worker's demand for CPU comes and goes, so not all of it;
/// but a quota that stalled the worker for under half of what it asks did not do what the fault says.
const QUOTA_TOLERANCE: f64 = 0.5;

/// The cgroup's evidence: how long it throttled the worker, as a share of the `window` the quota was
/// on, against the share a quota of `quota` per `period` asks of a process that wants the CPU
/// (`1 − quota/period`). Applied when the throttled share is at least [`QUOTA_TOLERANCE`] of that;
/// otherwise not applied, saying what was measured against what was asked. The kernel sums throttled
/// time over the run queues of every CPU the cgroup ran on, so a worker busy on several cores can
/// show more than the window (this is no upper bound, only more stall than one thread would see).
fn quota_evidence(
    throttled: Duration,
    window: Duration,
    quota: Duration,
    period: Duration,
) -> Result<String, String> {
    let share = throttled.as_secs_f64() / window.as_secs_f64().max(1e-9) * 100.0;
    let asked = (1.0 - quota.as_secs_f64() / period.as_secs_f64().max(1e-9)).max(0.0) * 100.0;
    let measured = format!(
        "the cgroup throttled the worker for {:.0} ms of its {:.0} ms window ({share:.0} %",
        throttled.as_secs_f64() * 1e3,
        window.as_secs_f64() * 1e3,
    );
    let asks = format!(
        "a quota of {} per {} asks {asked:.0} % of a process that wants the CPU",
        format_duration(quota),
        format_duration(period)
    );
    let floor = asked * QUOTA_TOLERANCE;
    if throttled.is_zero() || share < floor {
        return Err(format!(
            "{measured}), under the {floor:.0} % (half) of what {asks} (cpu.stat): the worker was \
             not held back as asked"
        ));
    }
    let summed = if share > 100.0 {
        ", summed over the run queues of the CPUs it ran on"
    } else {
        ""
    };
    Ok(format!(
        "{measured}{summed}; {asks}, applied from half of it) (cpu.stat)"
    ))
}

/// Waits (until the hog ends, at most 1.5 s: a worker under a CPU quota may wait most of a period
/// to run) for the worker's hog threads to show in `/proc`: the evidence that the hog ran.
async fn hog_threads_seen(env: &FaultEnv, pid: u32, until_ns: u64) -> Result<String, String> {
    let deadline = std::time::Instant::now() + Duration::from_millis(1500);
    loop {
        let running = crate::base::proc_stat::threads_named(pid, HOG_THREAD);
        if running > 0 {
            return Ok(format!(
                "{running} busy threads ran in worker process {pid} (/proc/{pid}/task)"
            ));
        }
        if std::time::Instant::now() >= deadline || env.clock.now() >= until_ns {
            return Err(format!(
                "no busy thread showed in worker process {pid} (/proc/{pid}/task)"
            ));
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// How long after the starvation the driver waits for a peer worker's report of its library's
/// threads (sent before it starved its runtime, it may be written only once the runtime runs again).
const LIBRARY_REPORT_WAIT: Duration = Duration::from_secs(1);

/// Watches the threads of a starved worker until the starvation ends: its runtime threads (renamed
/// [`STARVED_THREAD`] while held) and, for a peer, its adapter processes' (the rest of its process
/// group) library threads (renamed the same by the adapter's `starve`), as `/proc` showed them every
/// 5 ms; then reads the worker's report of its library's starvation. The evidence that the client
/// was starved: every runtime thread held at once and, for a peer, every thread its library renews on.
async fn starved_threads_seen(
    env: &FaultEnv,
    workers: &WorkerControl,
    client: u32,
    pid: u32,
    (until_ns, planned_ns): (u64, u64),
) -> Result<String, String> {
    let adapters: Vec<u32> = if workers.peer_adapters() {
        crate::base::proc_stat::group_members(pid)
            .into_iter()
            .filter(|p| *p != pid)
            .collect()
    } else {
        Vec::new()
    };
    let (mut runtime, mut library) = (Watch::default(), Watch::default());
    // The worker lets go at `until_ns` by itself; a little after it, it must have.
    let watch_until = until_ns + duration_ns(Duration::from_millis(200));
    while env.clock.now() < watch_until {
        let now = env.clock.now();
        let in_runtime = crate::base::proc_stat::threads_named(pid, STARVED_THREAD);
        let in_library: u32 = adapters
            .iter()
            .map(|a| crate::base::proc_stat::threads_named(*a, STARVED_THREAD))
            .sum();
        runtime.saw(in_runtime as usize, now);
        library.saw(in_library as usize, now);
        if in_runtime + in_library == 0 && (runtime.first.is_some() || env.stop.is_set()) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let library = if workers.peer_adapters() {
        let report_by = env.clock.now() + duration_ns(LIBRARY_REPORT_WAIT);
        let mut report = workers.take_library_starve(client);
        while report.is_none() && env.clock.now() < report_by {
            tokio::time::sleep(Duration::from_millis(10)).await;
            report = workers.take_library_starve(client);
        }
        if let Some(LibraryStarve::Held { pid: adapter, .. }) = &report
            && !adapters.contains(adapter)
        {
            return Err(format!(
                "the worker reported its library's threads held in process {adapter}, which is not \
                 one of the adapter processes watched ({adapters:?}, worker {pid}'s process group)"
            ));
        }
        Some(LibrarySeen {
            report,
            seen: library.seen(),
        })
    } else {
        None
    };
    let planned_ms = planned_ns as f64 / 1e6;
    starve_evidence(
        runtime.seen(),
        runtime_threads(),
        pid,
        library.as_ref(),
        planned_ms,
    )
}

/// Sightings of held threads: the most at once, and the first and the last time that many were (ns).
#[derive(Debug, Default)]
struct Watch {
    most: usize,
    first: Option<u64>,
    last: u64,
}

impl Watch {
    fn saw(&mut self, held: usize, now: u64) {
        if held > self.most {
            self.most = held;
            self.first = Some(now);
        }
        if held > 0 && held == self.most {
            self.last = now;
        }
    }

    fn seen(&self) -> HeldSeen {
        HeldSeen {
            most: self.most,
            held_ms: self.first.map(|first| (self.last - first) as f64 / 1e6),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_quota_applies_only_when_it_throttled_about_what_it_asked() {
        let ms = Duration::from_millis;
        assert_eq!(
            quota_evidence(ms(2700), ms(3000), ms(100), ms(1000)),
            Ok(
                "the cgroup throttled the worker for 2700 ms of its 3000 ms window (90 %; a quota \
                 of 100ms per 1s asks 90 % of a process that wants the CPU, applied from half of \
                 it) (cpu.stat)"
                    .to_owned()
            )
        );
        // Two busy cores: the kernel's sum over both run queues exceeds the window (a real run here).
        let two_cores = quota_evidence(ms(4310), ms(3013), ms(100), ms(1000));
        assert!(
            two_cores.as_ref().is_ok_and(|e| e.contains(
                "(143 %, summed over the run queues of the CPUs it ran on; a quota of 100ms per 1s \
                 asks 90 %"
            )),
            "{two_cores:?}"
        );
        // Just at half of what was asked still counts; a third of it (once "applied" with a note)
        // and a millisecond do not.
        assert!(quota_evidence(ms(1350), ms(3000), ms(100), ms(1000)).is_ok());
        assert_eq!(
            quota_evidence(ms(1000), ms(3000), ms(100), ms(1000)),
            Err(
                "the cgroup throttled the worker for 1000 ms of its 3000 ms window (33 %), under \
                 the 45 % (half) of what a quota of 100ms per 1s asks 90 % of a process that wants \
                 the CPU (cpu.stat): the worker was not held back as asked"
                    .to_owned()
            )
        );
        assert!(quota_evidence(ms(1), ms(3000), ms(100), ms(1000)).is_err());
        assert!(quota_evidence(ms(0), ms(3000), ms(100), ms(1000)).is_err());
    }

    #[test]
    fn a_hog_says_how_much_cpu_it_used() {
        let seen = Some("8 busy threads ran in worker process 7 (/proc/7/task)".to_owned());
        assert_eq!(
            hog_evidence(seen.clone(), Duration::from_millis(3600), 2_000_000_000),
            Ok("8 busy threads ran in worker process 7 (/proc/7/task), using 3600 ms of CPU in its \
                2000 ms window (1.80 cores)"
                .to_owned())
        );
        // Threads that existed but never ran did not compete for anything.
        assert!(hog_evidence(seen, Duration::ZERO, 2_000_000_000).is_err());
    }
}
