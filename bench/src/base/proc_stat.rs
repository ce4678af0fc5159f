//! The process-CPU reader: a process's CPU time, resident set and thread count from `/proc/<pid>/stat`
//! (any process, clock-tick resolution), for client and server cost; and this process's CPU time from
//! `getrusage` ([`process_cpu_time`], microsecond resolution), for the client's own cost; and the
//! members of a process group ([`group_members`]); and the evidence that a fault took effect: a
//! process's scheduler state ([`state`], stopped after a pause) and its threads by name
//! ([`threads_named`], [`threads_cpu`]: a CPU hog's busy threads and the CPU they used).

use std::sync::OnceLock;
use std::time::Duration;

/// One reading of a process.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ProcSample {
    /// User + system CPU time so far.
    pub cpu_seconds: f64,
    /// Resident set.
    pub rss_bytes: u64,
    /// Threads.
    pub threads: u64,
}

/// Reads `/proc/<pid>/stat` (`None` for the current process). `None` if the process is gone.
pub fn sample(pid: Option<u32>) -> Option<ProcSample> {
    let path = match pid {
        Some(pid) => format!("/proc/{pid}/stat"),
        None => "/proc/self/stat".to_owned(),
    };
    parse_stat(&std::fs::read_to_string(path).ok()?)
}

/// CPU time (user + system) this process has used so far, from `getrusage` (microsecond resolution,
/// unlike `/proc/self/stat`'s clock ticks).
pub fn process_cpu_time() -> Duration {
    // SAFETY: getrusage writes only the struct it is given, which is plain old data.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: a valid `who` and a valid pointer; failure leaves the zeroed struct.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) };
    let time = |t: libc::timeval| {
        Duration::from_secs(u64::try_from(t.tv_sec).unwrap_or(0))
            + Duration::from_micros(u64::try_from(t.tv_usec).unwrap_or(0))
    };
    time(usage.ru_utime) + time(usage.ru_stime)
}

/// CPU time `pid` has run so far, to the nanosecond: the sum of its live threads' scheduler run times
/// (`/proc/<pid>/task/*/schedstat`), finer than `/proc/<pid>/stat`'s clock ticks, which read a light
/// client's few milliseconds over a window as zero. Threads that already ended are not counted, so read
/// it across a window of long-lived threads (a library's runtime). `None` if `pid` is gone.
pub fn threads_cpu_time(pid: u32) -> Option<Duration> {
    let tasks = std::fs::read_dir(format!("/proc/{pid}/task")).ok()?;
    let ns: u64 = tasks
        .filter_map(|task| {
            let text = std::fs::read_to_string(task.ok()?.path().join("schedstat")).ok()?;
            text.split_whitespace().next()?.parse::<u64>().ok()
        })
        .sum();
    Some(Duration::from_nanos(ns))
}

/// Every process in process group `pgid` (its leader included): a worker process and the peer adapter
/// processes it started, which share its group.
pub fn group_members(pgid: u32) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return vec![pgid];
    };
    let mut members: Vec<u32> = entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .ok()
                .and_then(|text| {
                    // After ')': state (field 3), ppid (4), pgrp (5).
                    let after = &text[text.rfind(')')? + 1..];
                    after.split_whitespace().nth(2)?.parse::<u32>().ok()
                })
                == Some(pgid)
        })
        .collect();
    if !members.contains(&pgid) {
        members.push(pgid);
    }
    members
}

/// CPU seconds of a server that serves each session from a child process (PostgreSQL): `pid`'s own,
/// its reaped children's (`cutime` + `cstime`) and its live children's. `None` if `pid` is gone.
pub fn tree_cpu_seconds(pid: u32) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = after.split_whitespace().collect();
    // After ')' the first field is field 3: utime 14, stime 15, cutime 16, cstime 17.
    let ticks: u64 = (14..=17)
        .map(|n| fields.get(n - 3).and_then(|f| f.parse::<u64>().ok()))
        .sum::<Option<u64>>()?;
    let own = ticks as f64 / clock_ticks() as f64;
    let children: f64 = std::fs::read_dir("/proc")
        .ok()?
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(|child| {
            let text = std::fs::read_to_string(format!("/proc/{child}/stat")).ok()?;
            let after = &text[text.rfind(')')? + 1..];
            let ppid: u32 = after.split_whitespace().nth(1)?.parse().ok()?;
            (ppid == pid).then(|| parse_stat(&text).map(|s| s.cpu_seconds))?
        })
        .sum();
    Some(own + children)
}

/// The scheduler state of `pid` (`/proc/<pid>/stat` field 3: `R`, `S`, `T` stopped, `Z` zombie, …);
/// `None` when the process is gone.
pub fn state(pid: u32) -> Option<char> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    text[text.rfind(')')? + 1..]
        .split_whitespace()
        .next()?
        .chars()
        .next()
}

/// How many threads of `pid` are named `name` (their `comm`, at most 15 bytes) right now.
pub fn threads_named(pid: u32, name: &str) -> u32 {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return 0;
    };
    tasks
        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("comm")).ok())
        .filter(|comm| comm.trim_end() == name)
        .count() as u32
}

/// The CPU time (user + system) the threads of `pid` named `name` have used so far (threads that
/// ended no longer count).
pub fn threads_cpu(pid: u32, name: &str) -> Duration {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return Duration::ZERO;
    };
    let seconds: f64 = tasks
        .filter_map(|t| {
            let dir = t.ok()?.path();
            let comm = std::fs::read_to_string(dir.join("comm")).ok()?;
            (comm.trim_end() == name).then_some(())?;
            parse_stat(&std::fs::read_to_string(dir.join("stat")).ok()?)
        })
        .map(|s| s.cpu_seconds)
        .sum();
    Duration::from_secs_f64(seconds)
}

fn parse_stat(text: &str) -> Option<ProcSample> {
    // The command name (field 2) may hold spaces and parentheses: fields are counted after the last ')'.
    let after = &text[text.rfind(')')? + 1..];
    let fields: Vec<&str> = after.split_whitespace().collect();
    // After ')' the first field is field 3 (state); utime = 14, stime = 15, num_threads = 20, rss = 24.
    let field = |n: usize| fields.get(n - 3).and_then(|f| f.parse::<u64>().ok());
    let ticks = field(14)? + field(15)?;
    Some(ProcSample {
        cpu_seconds: ticks as f64 / clock_ticks() as f64,
        rss_bytes: field(24)?.saturating_mul(page_size()),
        threads: field(20)?,
    })
}

fn clock_ticks() -> u64 {
    static TICKS: OnceLock<u64> = OnceLock::new();
    // SAFETY: sysconf has no preconditions.
    *TICKS.get_or_init(|| {
        u64::try_from(unsafe { libc::sysconf(libc::_SC_CLK_TCK) })
            .unwrap_or(100)
            .max(1)
    })
}

fn page_size() -> u64 {
    static PAGE: OnceLock<u64> = OnceLock::new();
    // SAFETY: sysconf has no preconditions.
    *PAGE
        .get_or_init(|| u64::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).unwrap_or(4096))
}

#[cfg(test)]
mod tests {

    #[test]
    fn a_process_group_has_its_members() {
        // SAFETY: getpgrp has no preconditions.
        let group = u32::try_from(unsafe { libc::getpgrp() }).expect("a group");
        let members = group_members(group);
        assert!(members.contains(&std::process::id()), "{members:?}");
        assert!(members.contains(&group), "{members:?}");
    }

    use super::*;

    #[test]
    fn threads_are_counted_by_name() {
        let pid = std::process::id();
        assert_eq!(threads_named(pid, "lb-test-named"), 0);
        let (tx, rx) = std::sync::mpsc::channel::<()>();
        let (started_tx, started) = std::sync::mpsc::channel::<()>();
        let thread = std::thread::Builder::new()
            .name("lb-test-named".into())
            .spawn(move || {
                // The new thread names itself as it starts: say so only once it runs.
                let _ = started_tx.send(());
                let _ = rx.recv();
            })
            .expect("spawns");
        started.recv().expect("the thread started");
        assert_eq!(threads_named(pid, "lb-test-named"), 1);
        drop(tx);
        thread.join().expect("joins");
        assert_eq!(threads_named(u32::MAX - 1, "lb-test-named"), 0);
    }

    #[test]
    fn reads_this_process() {
        assert!(matches!(state(std::process::id()), Some('R' | 'S')));
        assert_eq!(state(u32::MAX - 1), None);
        let me = sample(None).expect("/proc/self/stat");
        assert!(me.threads >= 1);
        assert!(me.rss_bytes > 1 << 20, "{me:?}");
        assert!(sample(Some(u32::MAX - 1)).is_none());
    }

    #[test]
    fn cpu_time_grows_with_work() {
        // Busy work until the process has been charged 20 ms (two clock ticks); on a loaded machine
        // that takes longer than 20 ms of wall time, so the bound is generous and only a counter that
        // never grows fails it.
        let before = process_cpu_time();
        let give_up = std::time::Instant::now() + Duration::from_secs(20);
        while process_cpu_time() - before < Duration::from_millis(20) {
            assert!(
                std::time::Instant::now() < give_up,
                "20 s of busy work charged under 20 ms of CPU"
            );
            for i in 0..100_000u64 {
                std::hint::black_box(i);
            }
        }
    }

    #[test]
    fn command_names_with_spaces_and_parens() {
        let line = "42 (a b) c) S 1 2 3 4 5 6 7 8 9 10 250 50 0 0 20 0 7 0 100 1000 10";
        let s = parse_stat(line).expect("parses");
        assert_eq!(s.threads, 7);
        assert_eq!(s.rss_bytes, 10 * page_size());
        assert!((s.cpu_seconds - 300.0 / clock_ticks() as f64).abs() < 1e-9);
    }
}
