//! A CPU quota for one process, through a cgroup: the process is moved into a fresh cgroup whose CPU
//! bandwidth is `quota` per `period` (what a container CPU limit does), and moved back when the
//! [`CpuQuota`] is dropped. cgroup v1 (`cpu.cfs_quota_us`) and v2 (`cpu.max`) are both handled; where
//! neither can be written (no root, a read-only `/sys/fs/cgroup`), [`CpuQuota::apply`] says why in
//! one line and nothing is changed. [`CpuQuota::throttled`] reads from `cpu.stat` how long the quota held
//! the process back: the evidence that it bit.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

const ROOT: &str = "/sys/fs/cgroup";

/// How the kernel exposes CPU bandwidth here.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Layout {
    /// cgroup v1: the `cpu` controller mounted at this directory.
    V1(PathBuf),
    /// cgroup v2 with the `cpu` controller at the unified root.
    V2(PathBuf),
}

fn layout() -> Result<Layout, String> {
    let v2 = Path::new(ROOT);
    if std::fs::read_to_string(v2.join("cgroup.controllers"))
        .is_ok_and(|c| c.split_whitespace().any(|c| c == "cpu"))
    {
        return Ok(Layout::V2(v2.to_path_buf()));
    }
    for dir in ["cpu", "cpu,cpuacct", "cpuacct,cpu"] {
        let v1 = v2.join(dir);
        if v1.join("cpu.cfs_quota_us").exists() {
            return Ok(Layout::V1(v1));
        }
    }
    Err(format!(
        "no cgroup CPU controller under {ROOT} (neither v2 cpu.max nor v1 cpu.cfs_quota_us)"
    ))
}

/// The cgroup path of `pid` for the cpu controller (`/` when unknown).
fn cgroup_of(pid: u32, layout: &Layout) -> String {
    let text = std::fs::read_to_string(format!("/proc/{pid}/cgroup")).unwrap_or_default();
    text.lines()
        .find_map(|line| {
            let mut parts = line.splitn(3, ':');
            let (_, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
            let wanted = match layout {
                Layout::V2(_) => controllers.is_empty(),
                Layout::V1(_) => controllers.split(',').any(|c| c == "cpu"),
            };
            wanted.then(|| path.to_owned())
        })
        .unwrap_or_else(|| "/".to_owned())
}

/// A process group held under a CPU quota until dropped.
#[derive(Debug)]
pub(crate) struct CpuQuota {
    pids: Vec<u32>,
    dir: PathBuf,
    home: PathBuf,
}

static NEXT: AtomicU32 = AtomicU32::new(0);

fn write(path: &Path, text: &str) -> Result<(), String> {
    std::fs::write(path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))
}

impl CpuQuota {
    /// Moves process group `pid` (a worker and the peer adapter processes it started) into a new
    /// cgroup allowed `quota` of CPU time per `period`.
    pub(crate) fn apply(pid: u32, quota: Duration, period: Duration) -> Result<Self, String> {
        let layout = layout()?;
        let root = match &layout {
            Layout::V1(p) | Layout::V2(p) => p.clone(),
        };
        let home = root.join(cgroup_of(pid, &layout).trim_start_matches('/'));
        let name = format!(
            "lockbench-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        let dir = root.join(name);
        std::fs::create_dir(&dir)
            .map_err(|e| format!("cannot create cgroup {}: {e}", dir.display()))?;
        let guard = CpuQuota {
            pids: crate::base::proc_stat::group_members(pid),
            dir: dir.clone(),
            home,
        };
        let (quota_us, period_us) = (quota.as_micros(), period.as_micros());
        match &layout {
            Layout::V1(_) => {
                write(&dir.join("cpu.cfs_period_us"), &period_us.to_string())?;
                write(&dir.join("cpu.cfs_quota_us"), &quota_us.to_string())?;
            }
            Layout::V2(_) => write(&dir.join("cpu.max"), &format!("{quota_us} {period_us}"))?,
        }
        for member in &guard.pids {
            write(&dir.join("cgroup.procs"), &member.to_string())?;
        }
        Ok(guard)
    }
}

impl CpuQuota {
    /// How long the kernel has throttled the cgroup so far (`cpu.stat`: v2 `throttled_usec`, v1
    /// `throttled_time` in ns): the evidence that the quota bit.
    pub(crate) fn throttled(&self) -> Result<Duration, String> {
        let path = self.dir.join("cpu.stat");
        let text = std::fs::read_to_string(&path)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        throttled_in(&text).ok_or_else(|| format!("no throttled time in {}", path.display()))
    }
}

/// The throttled time in a `cpu.stat` text.
fn throttled_in(text: &str) -> Option<Duration> {
    text.lines().find_map(|line| {
        let (name, value) = line.split_once(' ')?;
        let value: u64 = value.trim().parse().ok()?;
        match name {
            "throttled_usec" => Some(Duration::from_micros(value)),
            "throttled_time" => Some(Duration::from_nanos(value)),
            _ => None,
        }
    })
}

impl Drop for CpuQuota {
    fn drop(&mut self) {
        // Back home first (a cgroup with a process in it cannot be removed); if the process is gone
        // the write fails and the cgroup is empty anyway.
        for pid in &self.pids {
            let _ = std::fs::write(self.home.join("cgroup.procs"), pid.to_string());
        }
        let _ = std::fs::remove_dir(&self.dir);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn throttled_time_is_read_from_either_layout() {
        let v2 = "usage_usec 100\nnr_periods 4\nnr_throttled 2\nthrottled_usec 1500\n";
        assert_eq!(throttled_in(v2), Some(Duration::from_micros(1500)));
        let v1 = "nr_periods 4\nnr_throttled 0\nthrottled_time 0\n";
        assert_eq!(throttled_in(v1), Some(Duration::ZERO));
        assert_eq!(throttled_in("usage_usec 1\n"), None);
    }

    #[test]
    fn own_cgroup_is_read() {
        if let Ok(layout) = layout() {
            assert!(cgroup_of(std::process::id(), &layout).starts_with('/'));
        }
    }
}
