//! The small value types of a workload and their text forms: lease modes (`watchdog`,
//! `fixed:300ms`), worker modes and the reaction to `lost()` (durations: [`crate::base::duration`]).

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::base::duration::{format_duration, parse_duration};

/// A lease mode as a workload names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LeaseSpec {
    /// Renewed until released, with the workload's watchdog timeout as TTL.
    Watchdog,
    /// Expires after the given time, never renewed.
    Fixed(Duration),
}

impl LeaseSpec {
    /// The contract's lease mode.
    pub(crate) fn mode(self) -> lockers::LeaseMode {
        match self {
            LeaseSpec::Watchdog => lockers::LeaseMode::Watchdog,
            LeaseSpec::Fixed(d) => lockers::LeaseMode::Fixed(d),
        }
    }
}

impl FromStr for LeaseSpec {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        let text = text.trim();
        if text == "watchdog" {
            return Ok(LeaseSpec::Watchdog);
        }
        let ttl = text
            .strip_prefix("fixed:")
            .or_else(|| text.strip_prefix("fixed "))
            .ok_or_else(|| format!("expected watchdog or fixed:<duration>, got {text:?}"))?;
        let ttl = parse_duration(ttl)?;
        if ttl.is_zero() {
            return Err("a fixed lease must be longer than 0".into());
        }
        Ok(LeaseSpec::Fixed(ttl))
    }
}

impl fmt::Display for LeaseSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LeaseSpec::Watchdog => f.write_str("watchdog"),
            LeaseSpec::Fixed(d) => write!(f, "fixed:{}", format_duration(*d)),
        }
    }
}

impl Serialize for LeaseSpec {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for LeaseSpec {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

/// Where the clients run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum WorkerMode {
    /// One tokio task per client, all in the lockbench process.
    Tasks,
    /// One child process (`lockbench worker`) per client, so a client can be paused or killed.
    Processes,
    /// One `lockbench worker --connect` process per client, on this or other machines, connected to the
    /// driver over TCP (see `driver::remote`).
    Remote,
}

impl FromStr for WorkerMode {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        match text.trim() {
            "tasks" => Ok(WorkerMode::Tasks),
            "processes" => Ok(WorkerMode::Processes),
            "remote" => Ok(WorkerMode::Remote),
            other => Err(format!(
                "expected tasks, processes or remote, got {other:?}"
            )),
        }
    }
}

impl fmt::Display for WorkerMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            WorkerMode::Tasks => "tasks",
            WorkerMode::Processes => "processes",
            WorkerMode::Remote => "remote",
        })
    }
}

/// What a holder does when `lost()` fires during its task.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum OnLost {
    /// The careful user: stop the task at once, skip the write (and check `is_held()` before
    /// writing). Violations then come only from loss signals that arrive too late. Rows without a
    /// lost-lease signal (`Capabilities::lost_signal` false, e.g. Redisson) run on as with `Ignore`:
    /// their users learn nothing, and lockbench's local deadline must not save them.
    Abort,
    /// A task that cannot be interrupted (or code that never looks at the lease, as with Redisson's
    /// `lock(leaseTime)`): it runs to the end and writes. Its interval lasts until the release call.
    Ignore,
}

impl FromStr for OnLost {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        match text.trim() {
            "abort" => Ok(OnLost::Abort),
            "ignore" => Ok(OnLost::Ignore),
            other => Err(format!("expected abort or ignore, got {other:?}")),
        }
    }
}

impl fmt::Display for OnLost {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            OnLost::Abort => "abort",
            OnLost::Ignore => "ignore",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lease_specs() {
        assert_eq!("watchdog".parse(), Ok(LeaseSpec::Watchdog));
        let fixed = LeaseSpec::Fixed(Duration::from_millis(300));
        assert_eq!("fixed:300ms".parse(), Ok(fixed));
        assert_eq!("fixed 300ms".parse(), Ok(fixed));
        assert_eq!(fixed.to_string(), "fixed:300ms");
        assert!("fixed:0s".parse::<LeaseSpec>().is_err());
        assert!("forever".parse::<LeaseSpec>().is_err());
    }
}
