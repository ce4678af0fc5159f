//! The environment a run records: lockbench's version and commit, the machine (OS, kernel, CPU model,
//! cores, memory) and the servers.

use lockbench_reports::model::{Environment, ServerInfo};

/// Reads the machine's facts (Linux `/proc` and `/etc/os-release`; unknown fields say `unknown`).
pub fn collect(servers: Vec<ServerInfo>) -> Environment {
    let read = |path: &str| std::fs::read_to_string(path).unwrap_or_default();
    let cpuinfo = read("/proc/cpuinfo");
    let cpu_model = cpuinfo
        .lines()
        .find_map(|l| {
            l.strip_prefix("model name")
                .and_then(|r| r.split_once(':'))
                .map(|(_, v)| v.trim().to_owned())
        })
        .unwrap_or_else(|| "unknown".to_owned());
    let os = read("/etc/os-release")
        .lines()
        .find_map(|l| {
            l.strip_prefix("PRETTY_NAME=")
                .map(|v| v.trim_matches('"').to_owned())
        })
        .unwrap_or_else(|| std::env::consts::OS.to_owned());
    let kernel = read("/proc/sys/kernel/osrelease").trim().to_owned();
    let memory_bytes = read("/proc/meminfo")
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map_or(0, |kb| kb * 1024);
    Environment {
        lockbench_version: env!("CARGO_PKG_VERSION").to_owned(),
        git_commit: option_env!("LOCKBENCH_GIT_COMMIT").map(str::to_owned),
        os,
        kernel: if kernel.is_empty() {
            "unknown".to_owned()
        } else {
            kernel
        },
        cpu_model,
        cores: std::thread::available_parallelism().map_or(1, |n| n.get() as u32),
        memory_bytes,
        servers,
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn describes_this_machine() {
        let env = super::collect(Vec::new());
        assert!(env.cores >= 1);
        assert!(env.memory_bytes > 0);
        assert_ne!(env.kernel, "unknown");
    }
}
