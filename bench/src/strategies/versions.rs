//! Another version of a shipped library: the row `<id>@<version>` runs the adapter of row `<id>`
//! against that version, installed from the registry its manifest's `[versions]` names (Maven Central,
//! PyPI) at first use into a folder of its own, [`versions_dir`]`/<id>@<version>/`, with a
//! `resolved.toml` saying what was resolved and when. A version the registry does not have, or one the
//! adapter cannot be built against or import, is one line before anything runs.

mod maven;
mod pypi;

use std::path::{Path, PathBuf};
use std::process::Output;

use lockers::peer::catalog::{PeerSpec, Registry};

/// The environment variable naming the folder the versions are installed in (default: the user's
/// cache, `$XDG_CACHE_HOME/lockbench/adapters` or `~/.cache/lockbench/adapters`).
pub const VERSIONS_DIR_ENV: &str = "LOCKBENCH_VERSIONS_DIR";

/// What an install writes last, when everything it names is in place: its presence is the install.
pub const RESOLVED: &str = "resolved.toml";

/// `id@version` split into the row's id and the version; `None` for an id without `@`.
pub fn split(id: &str) -> Option<(&str, &str)> {
    id.split_once('@')
}

/// The folder every version is installed in ([`VERSIONS_DIR_ENV`]).
pub fn versions_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os(VERSIONS_DIR_ENV) {
        return PathBuf::from(dir);
    }
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| Path::new(&home).join(".cache")))
        .unwrap_or_else(std::env::temp_dir);
    cache.join("lockbench").join("adapters")
}

/// `base`'s row at `version`, its library installed first when it is not yet and `install` is true.
/// An error is one line: a version with characters no registry uses, a runtime lockbench cannot
/// install another version for, a manifest without `[versions]`, a version the registry does not
/// have, or one the adapter cannot be built against.
pub fn spec_at(base: &PeerSpec, version: &str, install: bool) -> Result<PeerSpec, String> {
    let id = format!("{}@{version}", base.id);
    let version_chars = |c: char| c.is_ascii_alphanumeric() || "._+-".contains(c);
    if version.is_empty() || !version.chars().all(version_chars) || version.starts_with('.') {
        return Err(format!(
            "{id}: expected a version of letters, digits, '.', '-', '_' and '+' after '@'"
        ));
    }
    let Some(registry) = &base.registry else {
        return Err(match base.runtime_name() {
            "java" | "python-venv" => format!(
                "{id}: {} names no registry artifact ([versions]), so {} runs only {} {}",
                base.manifest.display(),
                base.id,
                base.library,
                base.version
            ),
            runtime => format!(
                "{id}: another version of a library is not supported yet for {runtime} adapters \
                 (java and python-venv only)"
            ),
        });
    };
    let dir = versions_dir().join(&id);
    if !dir.join(RESOLVED).is_file() {
        if !install {
            return Err(format!("{id}: not installed in {}", dir.display()));
        }
        install_into(base, registry, version, &dir).map_err(|e| format!("{id}: {e}"))?;
    }
    Ok(base.at_version(version, &dir))
}

/// Installs `registry`'s artifact at `version` for `base` into `dir`: built in a folder of this
/// process's own beside it, then renamed, so that two processes installing the same version at once
/// both end with one whole install.
fn install_into(
    base: &PeerSpec,
    registry: &Registry,
    version: &str,
    dir: &Path,
) -> Result<(), String> {
    let parent = dir.parent().unwrap_or(dir);
    let name = dir.file_name().unwrap_or_default().to_string_lossy();
    let building = parent.join(format!(".{name}.{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&building);
    std::fs::create_dir_all(&building)
        .map_err(|e| format!("cannot create {} ({e})", building.display()))?;
    let coordinates = registry.coordinates(version);
    eprintln!(
        "lockbench: installing {coordinates} from {} for {}@{version} into {} (first use)",
        registry.name(),
        base.id,
        dir.display()
    );
    let installed = match registry {
        Registry::Maven { group, artifact } => {
            maven::install(base, (group, artifact), version, &building, dir)
        }
        Registry::PyPi(package) => pypi::install(base, package, version, &building),
    };
    let installed = match installed {
        Ok(installed) => installed,
        Err(e) => {
            let _ = std::fs::remove_dir_all(&building);
            return Err(e);
        }
    };
    let record = resolved_record(base, registry, version, installed);
    std::fs::write(building.join(RESOLVED), record)
        .map_err(|e| format!("cannot write {} ({e})", building.display()))?;
    if let Err(e) = std::fs::rename(&building, dir) {
        let _ = std::fs::remove_dir_all(&building);
        if !dir.join(RESOLVED).is_file() {
            return Err(format!(
                "cannot move the install to {} ({e})",
                dir.display()
            ));
        }
    }
    Ok(())
}

/// `resolved.toml`: the row, its manifest, the registry and coordinates asked for, when, and what
/// the install holds (the jars, or the venv's packages).
fn resolved_record(
    base: &PeerSpec,
    registry: &Registry,
    version: &str,
    installed: Vec<String>,
) -> String {
    let mut table = toml::Table::new();
    let mut put = |key: &str, value: toml::Value| {
        table.insert(key.to_owned(), value);
    };
    put("id", format!("{}@{version}", base.id).into());
    put("adapter", base.id.clone().into());
    let manifest = std::fs::canonicalize(&base.manifest).unwrap_or_else(|_| base.manifest.clone());
    put("manifest", manifest.display().to_string().into());
    put("registry", registry.name().into());
    put("coordinates", registry.coordinates(version).into());
    put(
        "resolved_at",
        lockbench_reports::format::now_rfc3339().into(),
    );
    put(
        "installed",
        toml::Value::Array(installed.into_iter().map(toml::Value::from).collect()),
    );
    format!(
        "# What lockbench installed for this row at its first use (adapters/README.md).\n{}",
        toml::to_string(&table).unwrap_or_default()
    )
}

/// The first line of a failed command's output that holds one of `markers` (tried in order; else
/// its last line), cleaned of colour codes and cut to one short line for an error message, and the
/// line after it when that holds `then` (javac's `symbol:` line).
fn telling_line(output: &Output, markers: &[&str], then: &str) -> String {
    let text = format!(
        "{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    let lines: Vec<String> = text
        .lines()
        .map(|l| without_colour(l).trim().to_owned())
        .filter(|l| !l.is_empty())
        .collect();
    let at = markers
        .iter()
        .find_map(|m| lines.iter().position(|l| l.contains(m)))
        .unwrap_or(lines.len().saturating_sub(1));
    let mut line = lines.get(at).cloned().unwrap_or_else(|| "no output".into());
    if let Some(next) = lines
        .get(at + 1)
        .filter(|l| !then.is_empty() && l.contains(then))
    {
        line = format!("{line}; {next}");
    }
    if line.chars().count() > 240 {
        line = line.chars().take(240).collect::<String>() + "…";
    }
    line
}

/// `line` without terminal colour codes (`ESC [ … m`).
fn without_colour(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            for c in chars.by_ref() {
                if c.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_id_at_a_version_splits_at_the_at_sign() {
        assert_eq!(
            split("jvm-redisson@3.27.1"),
            Some(("jvm-redisson", "3.27.1"))
        );
        assert_eq!(split("jvm-redisson"), None);
    }
}
