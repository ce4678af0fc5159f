//! The adapters: the shipped ones, read from their manifests in `adapters/` (each `<runtime>/<id>.toml`,
//! see [`manifest`]), and a user's, read from the manifest it names; what each is, how to start it and
//! the settings it takes. A runtime that is not installed is a `Config` error naming the install
//! command, never a silent skip.

use std::path::{Path, PathBuf};
use std::sync::{LazyLock, RwLock};
use std::time::Duration;

use crate::error::LockError;
use crate::kind::ServerKind;
use crate::peer::manifest;
use crate::peer::{PeerCommand, PeerConfig};
use crate::settings::Renewal;

use crate::peer::manifest::Runtime;
pub use crate::peer::manifest::{INSTALL, PeerSpec, Reentry, Registry};

/// The environment variable that points at the `adapters/` folder (default: the source tree's).
pub const ADAPTERS_ENV: &str = "LOCKBENCH_ADAPTERS";

/// How long a JIT-compiled adapter (the JVM's) runs its lock calls before its figures mean something:
/// with 300 ms of warm-up the Redisson and Curator rows completed 3–10 critical sections per second,
/// with 4 s 59–232 (adapters/README.md, "Warm-up").
pub const JIT_WARM_UP: Duration = Duration::from_secs(4);

/// SQL for the `INT_LOCK.LOCK_KEY` of lock `key` (quoted as a literal): `UUIDConverter` turns a key
/// that is not a UUID into Java's `UUID.nameUUIDFromBytes` of its UTF-8 bytes, an MD5 with the
/// version-3 and variant bits set.
pub fn spring_int_lock_key(key: &str) -> String {
    format!(
        "(SELECT encode(set_byte(set_byte(b, 6, (get_byte(b, 6) & 15) | 48), 8, \
         (get_byte(b, 8) & 63) | 128), 'hex')::uuid::text \
         FROM (SELECT decode(md5('{}'), 'hex') AS b) AS h)",
        key.replace('\'', "''")
    )
}

/// A query of the server processes of the `jvm-spring-jdbc` client whose live `INT_LOCK` row holds
/// lock `key`: the adapter names each client's connections `lockbench <client id>`
/// (`application_name`), the client id its repository writes into its rows (the random UUID the
/// library's own constructor would pick). Every connection of that client's pool is its session:
/// the registry runs each statement on whichever one the pool lends. Run as a superuser,
/// `SELECT pg_terminate_backend(pid) FROM (…) s` ends them; `key` is quoted as a literal.
pub fn spring_jdbc_holder_sessions(key: &str) -> String {
    format!(
        "SELECT a.pid FROM pg_stat_activity a JOIN INT_LOCK l \
         ON a.application_name = 'lockbench ' || l.CLIENT_ID \
         WHERE l.REGION = 'DEFAULT' AND l.LOCK_KEY = {} \
         AND l.EXPIRED_AFTER >= (now() AT TIME ZONE 'UTC')",
        spring_int_lock_key(key)
    )
}

/// Every manifest of the adapters folder ([`adapters_dir`]: each `*.toml` in one of its subfolders),
/// read once; in the order of the subfolders' names, then of the files' names. A bad manifest or a repeated id is the error.
static SHIPPED: LazyLock<Result<Vec<PeerSpec>, String>> =
    LazyLock::new(|| read_folder(&adapters_dir()));

/// Every adapter of the adapters folder, in the order of their manifests' folders and names; none when a manifest
/// there is bad ([`load_error`] says which).
pub fn peers() -> &'static [PeerSpec] {
    SHIPPED.as_deref().unwrap_or_default()
}

/// The setups ([`PeerSpec::server_setup`]) of every shipped adapter on `kind` and of every adapter a
/// user added ([`add_server_setup`]), in that order: what lockbench runs on a server of that kind it
/// starts, never on a user's.
pub fn server_setups(kind: ServerKind) -> Vec<String> {
    let added = ADDED_SETUPS.read().unwrap_or_else(|e| e.into_inner());
    peers()
        .iter()
        .filter(|p| p.backend == Some(kind))
        .filter_map(|p| p.server_setup.clone())
        .chain(
            added
                .iter()
                .filter(|(k, _)| *k == kind)
                .map(|(_, sql)| sql.clone()),
        )
        .collect()
}

/// The setups of the adapters a user added, by the server kind they need.
static ADDED_SETUPS: RwLock<Vec<(ServerKind, String)>> = RwLock::new(Vec::new());

/// Adds the setup of an adapter a user added (`--adapter`) to what [`server_setups`] gives.
pub fn add_server_setup(spec: &PeerSpec) {
    if let (Some(kind), Some(sql)) = (spec.backend, &spec.server_setup) {
        let mut added = ADDED_SETUPS.write().unwrap_or_else(|e| e.into_inner());
        if !added.iter().any(|(k, s)| *k == kind && s == sql) {
            added.push((kind, sql.clone()));
        }
    }
}

/// Why the adapters folder's manifests could not be read (one line naming the file and the field).
pub fn load_error() -> Option<&'static str> {
    SHIPPED.as_ref().err().map(String::as_str)
}

/// The shipped adapter `id`.
pub fn find(id: &str) -> Option<&'static PeerSpec> {
    peers().iter().find(|p| p.id == id)
}

/// The adapter a user declared in the manifest at `path` (`--adapter`): its entry is resolved against
/// the manifest's folder. An error is one line naming the file and the field.
pub fn read_manifest(path: &Path) -> Result<PeerSpec, String> {
    manifest::read(path, false)
}

/// Reads every `<folder>/<subfolder>/*.toml` as a manifest of a shipped adapter.
fn read_folder(folder: &Path) -> Result<Vec<PeerSpec>, String> {
    let list = |dir: &Path| -> Result<Vec<PathBuf>, String> {
        let entries = std::fs::read_dir(dir)
            .map_err(|e| format!("adapters folder {}: {e}", dir.display()))?;
        let mut paths: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
        // By name without the extension: `jvm-redisson` before `jvm-redisson-4`.
        paths.sort_by(|a, b| a.file_stem().cmp(&b.file_stem()));
        Ok(paths)
    };
    let mut specs: Vec<PeerSpec> = Vec::new();
    for sub in list(folder)?.into_iter().filter(|p| p.is_dir()) {
        for path in list(&sub)? {
            if path.extension().is_some_and(|e| e == "toml") && path.is_file() {
                let spec = manifest::read(&path, true)?;
                if let Some(other) = specs.iter().find(|s| s.id == spec.id) {
                    return Err(format!(
                        "adapter manifest {}: id: expected an id of its own, {} has {:?} too",
                        path.display(),
                        other.manifest.display(),
                        spec.id
                    ));
                }
                specs.push(spec);
            }
        }
    }
    Ok(specs)
}

/// The `adapters/` folder: `$LOCKBENCH_ADAPTERS`, else the one in this source tree.
pub fn adapters_dir() -> PathBuf {
    std::env::var_os(ADAPTERS_ENV).map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join("../adapters"),
        PathBuf::from,
    )
}

impl PeerSpec {
    /// The warm-up its runtime needs before a case measures it: [`JIT_WARM_UP`] for the JVM rows,
    /// nothing for the others (the manifest's `warm_up_ms`).
    pub fn warm_up(&self) -> Duration {
        self.warm_up
    }

    /// A client config for this adapter, talking to `servers`, with `renewal.ttl` as its watchdog TTL
    /// and the settings its manifest derives from it (for ZooKeeper peers the session timeout asked
    /// for, since the session is their lease; for Redisson its watchdog and timeouts). `replicas` are
    /// the URLs of the primary's replicas, given to an adapter that takes them.
    pub fn config(
        &self,
        servers: Vec<String>,
        replicas: &[String],
        renewal: Renewal,
    ) -> Result<PeerConfig, LockError> {
        let mut config = PeerConfig::new(self.id.clone(), self.command()?, servers);
        config.renewal = renewal;
        config.settings = self.hello_settings(replicas, renewal);
        config.pinned_version = Some(self.version.clone());
        config.serves_many_clients = self.serves_many_clients;
        Ok(config)
    }

    /// This adapter running `version` of its library, installed in `dir` (a folder of its own): the
    /// row `<id>@<version>`, whose process must report `version`. A JVM row starts from the install's
    /// own `run.args`; a Python row runs the shipped script with the install's `.venv`.
    pub fn at_version(&self, version: &str, dir: &Path) -> PeerSpec {
        let entry = match self.runtime {
            Runtime::Jvm => dir.join("run.args"),
            _ => self.entry.clone(),
        };
        PeerSpec {
            id: format!("{}@{version}", self.id),
            version: version.to_owned(),
            description: format!(
                "peer: {} {version}, through {}'s adapter (another version of its library)",
                self.library, self.id
            ),
            entry,
            folder: dir.to_path_buf(),
            install: format!(
                "rm -rf '{}' (lockbench installs it again at its next use)",
                dir.display()
            ),
            ..self.clone()
        }
    }

    /// The folder of its manifest (where its runtime's environment and build files are).
    pub fn folder(&self) -> &Path {
        &self.folder
    }

    /// Its entry (a script, an argument file or a program), as its manifest resolves it.
    pub fn entry_file(&self) -> &Path {
        &self.entry
    }

    /// Its runtime as its manifest's `start.runtime` names it (`java`, `python-venv`, …).
    pub fn runtime_name(&self) -> &'static str {
        self.runtime.name()
    }

    /// The settings [`config`](Self::config) passes in `hello`.
    pub fn hello_settings(&self, replicas: &[String], renewal: Renewal) -> Vec<(String, String)> {
        let mut settings: Vec<(String, String)> = self
            .hello
            .iter()
            .filter_map(|s| Some((s.name.clone(), s.value(renewal)?)))
            .collect();
        if self.takes_replicas && !replicas.is_empty() {
            settings.push(("replicas".into(), replicas.join(",")));
        }
        settings
    }

    /// How to start this adapter. A missing runtime or adapter file is a `Config` error naming the
    /// install command.
    pub fn command(&self) -> Result<PeerCommand, LockError> {
        self.command_in(&self.folder)
    }

    /// How to start this adapter if its manifest were in `folder` (its entry resolved against it).
    pub fn command_in(&self, folder: &Path) -> Result<PeerCommand, LockError> {
        let relative = self.entry.strip_prefix(&self.folder).unwrap_or(&self.entry);
        let entry = folder.join(relative);
        let missing = |what: &Path| {
            LockError::Config(format!(
                "peer {} is not installed ({} missing); install it with: {}",
                self.id,
                what.display(),
                self.install
            ))
        };
        if !entry.exists() {
            return Err(missing(&entry));
        }
        let (program, args) = match self.runtime {
            Runtime::SystemPython => (PathBuf::from("python3"), vec![path_arg(&entry)]),
            Runtime::Venv => {
                let python = folder.join(".venv/bin/python");
                if !python.exists() {
                    return Err(missing(&python));
                }
                (python, vec![path_arg(&entry)])
            }
            Runtime::Node => {
                let modules = folder.join("node_modules");
                if !modules.exists() {
                    return Err(missing(&modules));
                }
                (PathBuf::from("node"), vec![path_arg(&entry)])
            }
            Runtime::Jvm => (PathBuf::from("java"), vec![format!("@{}", entry.display())]),
            Runtime::Exec => (entry, Vec::new()),
        };
        Ok(PeerCommand {
            program,
            args,
            install_hint: self.install.clone(),
        })
    }
}

fn path_arg(p: &Path) -> String {
    p.display().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
        let mut pairs: Vec<(String, String)> = list
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        pairs.sort();
        pairs
    }

    fn settings(id: &str, ttl: Duration) -> Vec<(String, String)> {
        let spec = find(id).unwrap_or_else(|| panic!("no manifest for {id}"));
        let mut settings = spec.hello_settings(&[], Renewal::new(ttl));
        settings.sort();
        settings
    }

    #[test]
    fn every_shipped_manifest_reads() {
        assert_eq!(load_error(), None);
        let ids: Vec<&str> = peers().iter().map(|p| p.id.as_str()).collect();
        for id in [
            "py-memory",
            "py-redis-py",
            "py-redis-lock",
            "py-kazoo",
            "py-etcd3",
            "node-redlock",
            "jvm-curator",
            "jvm-redisson-3.43",
            "jvm-redisson",
            "jvm-redisson-4",
            "jvm-spring-jdbc",
            "jvm-spring-redis",
            "go-etcd-mutex",
            "go-redsync",
        ] {
            assert!(ids.contains(&id), "{id} missing from {ids:?}");
        }
        for spec in peers() {
            let jvm = spec.runtime == Runtime::Jvm;
            assert_eq!(
                spec.warm_up(),
                if jvm { JIT_WARM_UP } else { Duration::ZERO }
            );
            assert_eq!(spec.install, INSTALL);
            // Every library row takes `@version` but the Node and Go ones (not supported yet).
            let library =
                spec.id != "py-memory" && matches!(spec.runtime, Runtime::Jvm | Runtime::Venv);
            assert_eq!(spec.registry.is_some(), library, "{}", spec.id);
        }
    }

    #[test]
    fn a_row_at_another_version_is_the_shipped_row_with_its_own_id_version_and_install() {
        let dir = Path::new("/versions/jvm-redisson@3.27.1");
        let shipped = find("jvm-redisson").unwrap_or_else(|| panic!("jvm-redisson"));
        let row = shipped.at_version("3.27.1", dir);
        assert_eq!(
            (row.id.as_str(), row.version.as_str()),
            ("jvm-redisson@3.27.1", "3.27.1")
        );
        assert_eq!(row.entry, dir.join("run.args"));
        assert_eq!(row.capabilities, shipped.capabilities);
        assert_eq!(row.hello, shipped.hello);
        let config = row.hello_settings(&[], Renewal::new(Duration::from_secs(3)));
        assert_eq!(
            config,
            shipped.hello_settings(&[], Renewal::new(Duration::from_secs(3)))
        );
        let python = find("py-kazoo").unwrap_or_else(|| panic!("py-kazoo"));
        let row = python.at_version("2.9.0", Path::new("/versions/py-kazoo@2.9.0"));
        assert_eq!(
            row.entry, python.entry,
            "the shipped script, in the install's venv"
        );
    }

    #[test]
    fn the_redisson_peers_and_only_they_take_the_replicas() {
        let replicas = ["redis://127.0.0.1:7001/".to_owned()];
        let renewal = Renewal::new(Duration::from_secs(1));
        for spec in peers() {
            let given = spec
                .hello_settings(&replicas, renewal)
                .into_iter()
                .any(|(k, v)| k == "replicas" && v == replicas[0]);
            assert_eq!(given, spec.id.starts_with("jvm-redisson"), "{}", spec.id);
            let none = spec.hello_settings(&[], renewal);
            assert!(none.iter().all(|(k, _)| k != "replicas"), "{}", spec.id);
        }
    }

    #[test]
    fn redisson_peers_run_redissons_defaults_at_30_s_and_scale_them_elsewhere() {
        for id in ["jvm-redisson-3.43", "jvm-redisson", "jvm-redisson-4"] {
            assert_eq!(
                settings(id, Duration::from_secs(30)),
                pairs(&[("lock_watchdog_timeout_ms", "30000")])
            );
            assert_eq!(
                settings(id, Duration::from_secs(3)),
                pairs(&[
                    ("lock_watchdog_timeout_ms", "3000"),
                    ("timeout_ms", "300"),
                    ("retry_interval_ms", "150"),
                ])
            );
        }
    }

    #[test]
    fn the_other_peers_take_the_ttl_as_their_manifests_say() {
        let ttl = Duration::from_millis(1500);
        for id in ["py-kazoo", "jvm-curator"] {
            assert_eq!(settings(id, ttl), pairs(&[("session_timeout_ms", "1500")]));
        }
        for id in ["jvm-spring-jdbc", "jvm-spring-redis"] {
            assert_eq!(settings(id, ttl), pairs(&[("ttl_ms", "1500")]));
        }
        for id in [
            "py-memory",
            "py-redis-py",
            "py-redis-lock",
            "py-etcd3",
            "node-redlock",
            "go-etcd-mutex",
            "go-redsync",
        ] {
            assert_eq!(settings(id, ttl), pairs(&[]), "{id}");
        }
    }
}
