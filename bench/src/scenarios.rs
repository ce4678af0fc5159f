//! The named scenario presets, embedded in the binary (the files live in `bench/scenarios/`), and
//! loading a scenario by preset name or file path.

use std::path::Path;

use crate::base::suggest;
use crate::workload::ScenarioFile;

/// A preset: its name and its TOML text.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Preset {
    /// The name `--scenario` takes.
    pub name: &'static str,
    /// The TOML text.
    pub toml: &'static str,
}

/// Every preset, in the order `lockbench scenarios` lists them.
pub(crate) const PRESETS: &[Preset] = &[
    Preset {
        name: "baseline",
        toml: include_str!("../scenarios/baseline.toml"),
    },
    Preset {
        name: "long-tail",
        toml: include_str!("../scenarios/long-tail.toml"),
    },
    Preset {
        name: "lease-too-short",
        toml: include_str!("../scenarios/lease-too-short.toml"),
    },
    Preset {
        name: "overhead",
        toml: include_str!("../scenarios/overhead.toml"),
    },
    // Fault scenarios (docs/design.md §6), each injecting one fault (see `crate::faults`).
    Preset {
        name: "process-pause",
        toml: include_str!("../scenarios/process-pause.toml"),
    },
    Preset {
        name: "client-crash",
        toml: include_str!("../scenarios/client-crash.toml"),
    },
    Preset {
        name: "cpu-starvation",
        toml: include_str!("../scenarios/cpu-starvation.toml"),
    },
    Preset {
        name: "cpu-quota",
        toml: include_str!("../scenarios/cpu-quota.toml"),
    },
    Preset {
        name: "cpu-hog",
        toml: include_str!("../scenarios/cpu-hog.toml"),
    },
    Preset {
        name: "network-delay",
        toml: include_str!("../scenarios/network-delay.toml"),
    },
    Preset {
        name: "network-partition",
        toml: include_str!("../scenarios/network-partition.toml"),
    },
    Preset {
        name: "server-freeze",
        toml: include_str!("../scenarios/server-freeze.toml"),
    },
    Preset {
        name: "redis-client-pause",
        toml: include_str!("../scenarios/redis-client-pause.toml"),
    },
    Preset {
        name: "pubsub-drop",
        toml: include_str!("../scenarios/pubsub-drop.toml"),
    },
    Preset {
        name: "redis-failover",
        toml: include_str!("../scenarios/redis-failover.toml"),
    },
    Preset {
        name: "redis-sentinel-failover",
        toml: include_str!("../scenarios/redis-sentinel-failover.toml"),
    },
    Preset {
        name: "redis-cluster-master-kill",
        toml: include_str!("../scenarios/redis-cluster-master-kill.toml"),
    },
    Preset {
        name: "redis-cluster-failover",
        toml: include_str!("../scenarios/redis-cluster-failover.toml"),
    },
    Preset {
        name: "postgres-failover",
        toml: include_str!("../scenarios/postgres-failover.toml"),
    },
    Preset {
        name: "postgres-session-kill",
        toml: include_str!("../scenarios/postgres-session-kill.toml"),
    },
    Preset {
        name: "postgres-keepalive-partition",
        toml: include_str!("../scenarios/postgres-keepalive-partition.toml"),
    },
    Preset {
        name: "mysql-failover",
        toml: include_str!("../scenarios/mysql-failover.toml"),
    },
    Preset {
        name: "mysql-session-kill",
        toml: include_str!("../scenarios/mysql-session-kill.toml"),
    },
    Preset {
        name: "mysql-keepalive-partition",
        toml: include_str!("../scenarios/mysql-keepalive-partition.toml"),
    },
    Preset {
        name: "leader-loss",
        toml: include_str!("../scenarios/leader-loss.toml"),
    },
    // Redlock and clocks: faults on Redlock's independent nodes; durable fencing.
    Preset {
        name: "redlock-kill-minority",
        toml: include_str!("../scenarios/redlock-kill-minority.toml"),
    },
    Preset {
        name: "redlock-restart-no-delay",
        toml: include_str!("../scenarios/redlock-restart-no-delay.toml"),
    },
    Preset {
        name: "redlock-restart-delayed",
        toml: include_str!("../scenarios/redlock-restart-delayed.toml"),
    },
    Preset {
        name: "redlock-clock-jump",
        toml: include_str!("../scenarios/redlock-clock-jump.toml"),
    },
    Preset {
        name: "server-restart",
        toml: include_str!("../scenarios/server-restart.toml"),
    },
    Preset {
        name: "server-restart-fsync",
        toml: include_str!("../scenarios/server-restart-fsync.toml"),
    },
    // Failures Redisson users reported (each file cites the issues).
    Preset {
        name: "renewal-error",
        toml: include_str!("../scenarios/renewal-error.toml"),
    },
    Preset {
        name: "busy-server",
        toml: include_str!("../scenarios/busy-server.toml"),
    },
    Preset {
        name: "orphaned-holder",
        toml: include_str!("../scenarios/orphaned-holder.toml"),
    },
    Preset {
        name: "renewal-after-unlock",
        toml: include_str!("../scenarios/renewal-after-unlock.toml"),
    },
    Preset {
        name: "renewal-chains",
        toml: include_str!("../scenarios/renewal-chains.toml"),
    },
];

impl Preset {
    /// The preset's one-line description.
    pub(crate) fn description(&self) -> String {
        ScenarioFile::from_toml(self.toml)
            .ok()
            .and_then(|f| f.description)
            .unwrap_or_default()
    }
}

/// A scenario as loaded: name, source and file contents.
#[derive(Debug, Clone)]
pub(crate) struct LoadedScenario {
    /// Preset name or file stem.
    pub name: String,
    /// `preset` or the path.
    pub source: String,
    /// The parsed file.
    pub file: ScenarioFile,
}

/// Loads a preset by name, or a TOML file by path. The error is one line.
pub(crate) fn load(name_or_path: &str) -> Result<LoadedScenario, String> {
    if let Some(preset) = PRESETS.iter().find(|p| p.name == name_or_path) {
        let file = ScenarioFile::from_toml(preset.toml)
            .map_err(|e| format!("preset {}: {e}", preset.name))?;
        return Ok(LoadedScenario {
            name: preset.name.to_owned(),
            source: "preset".to_owned(),
            file,
        });
    }
    let path = Path::new(name_or_path);
    if !path.exists() {
        let names = PRESETS.iter().map(|p| p.name);
        return Err(match suggest::did_you_mean(name_or_path, names.clone()) {
            Some(hint) => {
                format!(
                    "unknown scenario '{name_or_path}': not a preset nor an existing file{hint}"
                )
            }
            None => format!(
                "unknown scenario '{name_or_path}': not a preset ({}) nor an existing file",
                names.collect::<Vec<_>>().join(", ")
            ),
        });
    }
    let text =
        std::fs::read_to_string(path).map_err(|e| format!("scenario file {name_or_path}: {e}"))?;
    if is_blank_toml(&text) {
        return Err(format!(
            "scenario file {name_or_path}: empty (no settings; name a preset, or see `lockbench scenarios`)"
        ));
    }
    let file =
        ScenarioFile::from_toml(&text).map_err(|e| format!("scenario file {name_or_path}: {e}"))?;
    let name = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| name_or_path.to_owned());
    Ok(LoadedScenario {
        name,
        source: name_or_path.to_owned(),
        file,
    })
}

/// Whether TOML text sets nothing: only blank lines and comments.
fn is_blank_toml(text: &str) -> bool {
    text.lines()
        .map(str::trim)
        .all(|line| line.is_empty() || line.starts_with('#'))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::Workload;

    #[test]
    fn every_preset_resolves_and_describes_itself() {
        for preset in PRESETS {
            let loaded = load(preset.name).expect("loads");
            Workload::resolve(&loaded.name, &loaded.source, loaded.file)
                .and_then(|w| w.faults_fit())
                .unwrap_or_else(|e| panic!("{}: {e}", preset.name));
            assert!(!preset.description().is_empty(), "{}", preset.name);
        }
    }

    #[test]
    fn unknown_names_list_the_presets() {
        let err = load("no-such-thing").expect_err("unknown");
        assert!(err.contains("baseline, long-tail"), "{err}");
        let err = load("proces-pause").expect_err("misspelled");
        assert!(err.ends_with("did you mean 'process-pause'?"), "{err}");
    }

    #[test]
    fn an_empty_file_is_an_error() {
        let dir = tempfile::tempdir().expect("temp");
        let file = dir.path().join("empty.toml");
        for text in ["", "\n  \n", "# nothing yet\n"] {
            std::fs::write(&file, text).expect("write");
            let err = load(&file.to_string_lossy()).expect_err("empty");
            assert!(err.contains("empty"), "{text:?}: {err}");
        }
    }

    /// A preset, resolved.
    fn preset(name: &str) -> Workload {
        let loaded = load(name).expect("preset");
        Workload::resolve(&loaded.name, &loaded.source, loaded.file).expect("resolves")
    }

    #[test]
    fn a_failover_scenario_applies_to_the_server_kind_it_is_about() {
        use crate::faults::applicability::applies_to;
        use crate::strategies::{StrategySettings, find};
        let settings = StrategySettings::new(std::time::Duration::from_secs(1));
        let applies = |scenario: &Workload, id: &str| {
            let s = find(id).expect("registered");
            applies_to(scenario, s, &s.capabilities(&settings).expect("caps"))
        };
        // One fault serves both kinds; each scenario takes only the kind its theory is about.
        let (redis, postgres) = (preset("redis-failover"), preset("postgres-failover"));
        let lease = find("postgres-lease").expect("registered");
        let caps = lease.capabilities(&settings).expect("caps");
        assert!(applies_to(&postgres, lease, &caps).is_ok());
        for id in ["redis-watchdog", "redisson", "jvm-spring-redis"] {
            assert_eq!(applies(&redis, id), Ok(()), "{id}");
            let why = applies(&postgres, id).expect_err(id);
            assert_eq!(
                why,
                format!(
                    "postgres-failover does not apply to {id}: the scenario is about postgres \
                     servers, and {id} runs on redis"
                )
            );
        }
        for id in ["postgres-advisory", "postgres-lease", "jvm-spring-jdbc"] {
            assert_eq!(applies(&postgres, id), Ok(()), "{id}");
            let why = applies(&redis, id).expect_err(id);
            assert!(why.contains("about redis and valkey servers"), "{why}");
        }
        // A kind the scenario is about still meets its faults' own rules.
        let why = applies(&redis, "redlock").expect_err("redlock");
        assert!(why.contains("runs on redis-nodes"), "{why}");
    }
}
