//! The user's own workload for `lockbench compare`: a TOML file of workload fields (`--workload`,
//! [`WorkloadFile`]) under the same flags as `run` (`--clients`, `--task`, ...; flags over file),
//! checked before anything runs, then laid over every scenario of the suite except the fields a
//! scenario keeps (its `own_workload`), with `--time-scale` compressing time.

use std::path::Path;

use serde::Deserialize;

use super::{DEFAULTS, ScenarioFile, TimeScale, WORKLOAD_FIELDS, Workload, parse_toml};
use crate::base::duration::format_duration;

/// A workload file as written: the workload fields of a scenario file, every one optional, anything
/// else rejected (a scenario's length, workers and faults are the suite's).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct WorkloadFile {
    /// What the workload is, a few words (the report names it).
    pub(crate) description: Option<String>,
    /// Concurrent clients.
    pub(crate) clients: Option<u32>,
    /// Distinct lock keys.
    pub(crate) keys: Option<u32>,
    /// Task duration distribution.
    pub(crate) task: Option<String>,
    /// Lease modes.
    pub(crate) leases: Option<Vec<String>>,
    /// Watchdog lease TTL.
    pub(crate) watchdog_timeout: Option<String>,
    /// How long an acquire waits.
    pub(crate) acquire_wait: Option<String>,
    /// Pause between release and the next acquire.
    pub(crate) think: Option<String>,
    /// Open-loop cycles per second per client.
    pub(crate) rate: Option<f64>,
    /// `abort` or `ignore`.
    pub(crate) on_lost: Option<String>,
}

impl WorkloadFile {
    /// Its fields as a scenario's overrides.
    fn into_scenario(self) -> ScenarioFile {
        ScenarioFile {
            clients: self.clients,
            keys: self.keys,
            task: self.task,
            leases: self.leases,
            watchdog_timeout: self.watchdog_timeout,
            acquire_wait: self.acquire_wait,
            think: self.think,
            rate: self.rate,
            on_lost: self.on_lost,
            ..ScenarioFile::default()
        }
    }
}

/// Whether `file` sets the workload field `name` (one of [`WORKLOAD_FIELDS`]).
fn sets(file: &ScenarioFile, name: &str) -> bool {
    match name {
        "clients" => file.clients.is_some(),
        "keys" => file.keys.is_some(),
        "task" => file.task.is_some(),
        "leases" => file.leases.is_some(),
        "watchdog_timeout" => file.watchdog_timeout.is_some(),
        "acquire_wait" => file.acquire_wait.is_some(),
        "think" => file.think.is_some(),
        "rate" => file.rate.is_some(),
        "on_lost" => file.on_lost.is_some(),
        _ => false,
    }
}

/// Clears the workload field `name` of `file`.
fn clear(file: &mut ScenarioFile, name: &str) {
    match name {
        "clients" => file.clients = None,
        "keys" => file.keys = None,
        "task" => file.task = None,
        "leases" => file.leases = None,
        "watchdog_timeout" => file.watchdog_timeout = None,
        "acquire_wait" => file.acquire_wait = None,
        "think" => file.think = None,
        "rate" => file.rate = None,
        "on_lost" => file.on_lost = None,
        _ => {}
    }
}

/// Each case's measured window is at least this many mean tasks under the user's workload, so every
/// client completes a few (the suite's windows are sized for millisecond tasks).
pub(crate) const MIN_WINDOW_TASKS: u32 = 5;

/// The user's workload, checked.
#[derive(Debug, Clone)]
pub(crate) struct UserWorkload {
    /// The file's path, if one was given.
    pub file: Option<String>,
    /// The file's description.
    pub description: Option<String>,
    /// The workload fields set (file, then flags over it); the others stay each scenario's own.
    pub fields: ScenarioFile,
    /// `--time-scale`: every duration divided by it (1 = real time).
    pub time_scale: TimeScale,
}

impl UserWorkload {
    /// Reads `file` (if any), lays `flags` over it and checks the result; `None` when nothing was
    /// given (the suite's own workloads at real time). The error is one line naming the field.
    pub(crate) fn new(
        file: Option<&Path>,
        flags: ScenarioFile,
        time_scale: Option<&str>,
    ) -> Result<Option<Self>, String> {
        let time_scale = time_scale
            .map(TimeScale::parse)
            .transpose()
            .map_err(|e| format!("--time-scale: {e}"))?;
        let (mut fields, description) = match file {
            Some(path) => {
                let shown = path.display();
                let text = std::fs::read_to_string(path)
                    .map_err(|e| format!("--workload {shown}: {e}"))?;
                let parsed: WorkloadFile =
                    parse_toml(&text).map_err(|e| format!("--workload {shown}: {e}"))?;
                let description = parsed.description.clone();
                let fields = parsed.into_scenario();
                check(&fields).map_err(|e| format!("--workload {shown}: {e}"))?;
                (fields, description)
            }
            None => (ScenarioFile::default(), None),
        };
        let flags = only_workload(flags);
        check(&flags)?;
        fields.overlay(flags);
        check(&fields)?;
        let given = WORKLOAD_FIELDS.iter().any(|f| sets(&fields, f));
        if file.is_none() && !given && time_scale.is_none() {
            return Ok(None);
        }
        Ok(Some(UserWorkload {
            file: file.map(|p| p.display().to_string()),
            description,
            fields,
            time_scale: time_scale.unwrap_or(TimeScale::REAL),
        }))
    }

    /// The overrides for a scenario that keeps `own` of its workload fields: the user's fields but
    /// those.
    pub(crate) fn overrides_for(&self, own: &[String]) -> ScenarioFile {
        let mut fields = self.fields.clone();
        for name in own {
            clear(&mut fields, name);
        }
        fields
    }

    /// The time scale for a scenario keeping `own`: one that keeps its own TTL keeps its own time.
    pub(crate) fn time_scale_for(&self, own: &[String]) -> TimeScale {
        if own.iter().any(|f| f == "watchdog_timeout") {
            TimeScale::REAL
        } else {
            self.time_scale
        }
    }

    /// The workload in one line: what it is, then clients, keys, task, leases, TTL (unset fields:
    /// each scenario's own).
    pub(crate) fn summary(&self) -> String {
        let f = &self.fields;
        let own = "each scenario's own";
        let name = match (&self.file, &self.description) {
            (Some(path), Some(d)) => format!("{path} ({d})"),
            (Some(path), None) => path.clone(),
            (None, _) if WORKLOAD_FIELDS.iter().any(|n| sets(f, n)) => "the flags".to_owned(),
            (None, _) => "the suite's own workloads".to_owned(),
        };
        let or_own = |v: Option<String>| v.unwrap_or_else(|| own.to_owned());
        let mut line = format!(
            "Workload: {name}: {} clients on {} keys, task {}, leases {}, TTL {}",
            or_own(f.clients.map(|c| c.to_string())),
            or_own(f.keys.map(|k| k.to_string())),
            or_own(f.task.clone()),
            or_own(f.leases.as_ref().map(|l| l.join(", "))),
            or_own(f.watchdog_timeout.clone()),
        );
        if let Some(rate) = f.rate {
            line.push_str(&format!(", open loop {rate}/s per client"));
        } else if let Some(think) = &f.think {
            line.push_str(&format!(", think {think}"));
        }
        if let Some(on_lost) = &f.on_lost {
            line.push_str(&format!(", on lost() {on_lost}"));
        }
        line.push('.');
        line
    }

    /// The time compression in words, if any: `your workload at 1/10 time: a 30 s TTL run as 3 s`.
    pub(crate) fn scale_line(&self) -> Option<String> {
        if self.time_scale == TimeScale::REAL {
            return None;
        }
        let n = self.time_scale;
        let ttl = self
            .resolved()
            .ok()
            .filter(|_| self.fields.watchdog_timeout.is_some())
            .map(|w| {
                format!(
                    ": a {} TTL run as {}, a {} task as {}",
                    format_duration(w.watchdog_timeout),
                    format_duration(w.watchdog_timeout / n),
                    w.task,
                    w.task.scaled(n)
                )
            })
            .unwrap_or_default();
        Some(format!(
            "Your workload at 1/{n} time{ttl}. Every duration of the workload, the faults and the \
             cases is divided by {n} (open-loop rates multiplied by it). Network round trips, server \
             latency, GC, process and server start-up, elections and failover detection do not scale: \
             each case where they break the ratio to the compressed TTL is flagged here."
        ))
    }

    /// The user's fields over the built-in defaults, unscaled.
    pub(crate) fn resolved(&self) -> Result<Workload, String> {
        let mut file = ScenarioFile::from_toml(DEFAULTS)?;
        file.overlay(self.fields.clone());
        Workload::resolve("workload", "user", file)
    }
}

/// Only the workload fields of `file`.
fn only_workload(file: ScenarioFile) -> ScenarioFile {
    ScenarioFile {
        clients: file.clients,
        keys: file.keys,
        task: file.task,
        leases: file.leases,
        watchdog_timeout: file.watchdog_timeout,
        acquire_wait: file.acquire_wait,
        think: file.think,
        rate: file.rate,
        on_lost: file.on_lost,
        ..ScenarioFile::default()
    }
}

/// Checks workload fields the way a scenario does (over the defaults); the error names the field.
fn check(fields: &ScenarioFile) -> Result<(), String> {
    let mut file = ScenarioFile::from_toml(DEFAULTS)?;
    file.overlay(fields.clone());
    Workload::resolve("workload", "user", file).map(|_| ())
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    /// Writes `text` to `name` in `dir`, a directory removed when the test drops it.
    fn write(dir: &tempfile::TempDir, name: &str, text: &str) -> std::path::PathBuf {
        let path = dir.path().join(name);
        std::fs::write(&path, text).expect("write");
        path
    }

    #[test]
    fn flags_override_the_file_and_unset_fields_stay_the_scenarios() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = write(
            &dir,
            "order.toml",
            "description = \"orders\"\nclients = 16\nkeys = 4\ntask = \"uniform 1ms..5ms\"\nwatchdog_timeout = \"10s\"",
        );
        let flags = ScenarioFile {
            clients: Some(5),
            watchdog_timeout: Some("1500ms".into()),
            // Not a workload field: a flag for it is not the workload's.
            duration: Some("1s".into()),
            ..ScenarioFile::default()
        };
        let user = UserWorkload::new(Some(&path), flags, None)
            .expect("valid")
            .expect("given");
        assert_eq!(user.fields.clients, Some(5));
        assert_eq!(user.fields.keys, Some(4));
        assert_eq!(user.fields.watchdog_timeout.as_deref(), Some("1500ms"));
        assert_eq!(user.fields.duration, None);
        let own = vec!["task".to_owned(), "watchdog_timeout".to_owned()];
        let o = user.overrides_for(&own);
        assert_eq!(
            (o.clients, o.task, o.watchdog_timeout),
            (Some(5), None, None)
        );
        assert_eq!(user.time_scale_for(&own), TimeScale::REAL);
        assert!(
            user.summary().contains("5 clients on 4 keys"),
            "{}",
            user.summary()
        );
        assert!(user.summary().contains("(orders)"), "{}", user.summary());
        assert_eq!(
            UserWorkload::new(None, ScenarioFile::default(), None).map(|u| u.is_none()),
            Ok(true)
        );
    }

    #[test]
    fn the_starting_points_load() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("workloads");
        for name in [
            "scheduled-job.toml",
            "queue-consumer.toml",
            "order-processing.toml",
        ] {
            let user = UserWorkload::new(Some(&dir.join(name)), ScenarioFile::default(), None)
                .unwrap_or_else(|e| panic!("{name}: {e}"))
                .expect("given");
            assert!(user.description.is_some(), "{name}");
            user.resolved().unwrap_or_else(|e| panic!("{name}: {e}"));
        }
    }

    #[test]
    fn the_scale_line_says_it_in_words() {
        let flags = ScenarioFile {
            watchdog_timeout: Some("30s".into()),
            task: Some("uniform 2s..20s".into()),
            ..ScenarioFile::default()
        };
        let user = UserWorkload::new(None, flags, Some("10"))
            .expect("valid")
            .expect("given");
        let line = user.scale_line().expect("scaled");
        assert!(
            line.starts_with(
                "Your workload at 1/10 time: a 30s TTL run as 3s, a uniform 2s..20s task as uniform 200ms..2s."
            ),
            "{line}"
        );
        assert_eq!(
            user.resolved().map(|w| w
                .scaled(TimeScale::parse("10").expect("scale"))
                .watchdog_timeout),
            Ok(Duration::from_secs(3))
        );
    }

    #[test]
    fn each_bad_input_is_one_line_naming_the_field() {
        let dir = tempfile::tempdir().expect("temp dir");
        for (toml, needle) in [
            ("colour = \"blue\"", "unknown field `colour`"),
            ("duration = \"10s\"", "unknown field `duration`"),
            ("think = \"soon\"", "think: expected a duration"),
            (
                "acquire_wait = \"-1s\"",
                "acquire_wait: duration must not be negative",
            ),
            (
                "watchdog_timeout = \"2ttl\"",
                "watchdog_timeout: \"2ttl\" is relative",
            ),
            ("task = \"0.5task\"", "task: \"0.5task\" is relative"),
            ("clients = 0", "clients:"),
        ] {
            let path = write(&dir, "bad.toml", toml);
            let err =
                UserWorkload::new(Some(&path), ScenarioFile::default(), None).expect_err(toml);
            assert!(
                err.contains("--workload ") && err.contains(needle),
                "{toml}: {err}"
            );
            assert!(!err.contains('\n'), "{toml}: one line: {err}");
        }
        let err = UserWorkload::new(None, ScenarioFile::default(), Some("0")).expect_err("scale 0");
        assert!(err.starts_with("--time-scale:"), "{err}");
        let flags = ScenarioFile {
            watchdog_timeout: Some("2ttl".into()),
            ..ScenarioFile::default()
        };
        let err = UserWorkload::new(None, flags, None).expect_err("ttl flag");
        assert!(err.starts_with("watchdog_timeout: "), "{err}");
        let err = UserWorkload::new(
            Some(Path::new("/no/such.toml")),
            ScenarioFile::default(),
            None,
        )
        .expect_err("missing");
        assert!(err.starts_with("--workload /no/such.toml: "), "{err}");
    }
}
