//! An adapter's manifest: the TOML file beside an adapter that says what it is (id, library, version),
//! how to start it, the server it needs, the native row it is read beside, what it claims, and the
//! settings it takes in `hello` per watchdog TTL. Read into a [`PeerSpec`]; anything wrong is one line
//! naming the file, the field and what it expected. adapters/README.md documents every field.

use std::path::{Path, PathBuf};
use std::time::Duration;

use toml::{Table, Value};

use crate::kind::ServerKind;
use crate::locker::Capabilities;
use crate::redis::ScaledTimeouts;
use crate::settings::Renewal;

/// The command that installs every peer's runtime.
pub const INSTALL: &str = "bash docker/install-deps.sh --with-peers";

/// What runs an adapter (a manifest's `start.runtime`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Runtime {
    /// `python3`: the system's, standard library only.
    SystemPython,
    /// `python-venv`: the virtual environment `.venv` beside the manifest (`adapters/python/.venv`).
    Venv,
    /// `node`, with `node_modules` beside the manifest.
    Node,
    /// `java`, the entry being its argument file (`java @entry`; the JVM rows' `run.args`).
    Jvm,
    /// `exec`: the entry is the program itself (the Go rows' binaries).
    Exec,
}

/// One adapter, as its manifest declares it (adapters/README.md, "Manifests").
#[derive(Debug, Clone)]
pub struct PeerSpec {
    /// The peer id.
    pub id: String,
    /// The library it drives.
    pub library: String,
    /// The version of it the adapter must report having loaded (as the library's own metadata
    /// spells it; the pins in requirements.txt, package-lock.json, pom.xml and go.sum).
    pub version: String,
    /// One line for lockbench's strategy listing: what the peer is.
    pub description: String,
    /// The server it needs.
    pub backend: Option<ServerKind>,
    /// The native strategy that models it (the report's pairing; the manifest's `read_beside`).
    pub counterpart: String,
    /// What the adapter declares in `hello` (known without starting it; the tests check they agree).
    pub capabilities: Capabilities,
    /// What a same-owner re-acquire does (the manifest's `capabilities.reentrant`); `reentrant` in
    /// [`Self::capabilities`] is true for [`Reentry::Counted`] only.
    pub reentry: Reentry,
    pub(crate) runtime: Runtime,
    /// The adapter's entry (a script, an argument file or a program), resolved against `folder`.
    pub(crate) entry: PathBuf,
    /// The manifest's folder, where a runtime's environment (`.venv`, `node_modules`) is looked for.
    pub(crate) folder: PathBuf,
    /// The adapter settings passed in `hello`, per watchdog TTL.
    pub(crate) hello: Vec<HelloSetting>,
    /// Whether the adapter takes the primary's replicas (`replicas`: Redisson's master/slave mode, which
    /// `WAIT`s for them after each lock write, as the Redisson models do with replicas).
    pub(crate) takes_replicas: bool,
    /// Whether one adapter process serves many clients (each its own library client; `multi_client`
    /// in adapters/PROTOCOL.md), so a case's clients share one process as the models' share lockbench's.
    /// False: one process per client.
    pub serves_many_clients: bool,
    /// Whether the adapter can block the threads its library renews on (`starve` in
    /// adapters/PROTOCOL.md, declared in its `hello`), so that a CPU starvation of the client reaches the
    /// library and not only the worker's runtime. False: the starvation does not apply to the peer.
    pub starve_library: bool,
    /// The warm-up its runtime needs before a case measures it (4 s for the JVM rows: `catalog::JIT_WARM_UP`).
    pub(crate) warm_up: Duration,
    /// The command that installs what it needs, named when its runtime or entry is missing.
    pub install: String,
    /// What the library needs on a server of its kind that lockbench starts, never on a user's (the
    /// manifest's `server_setup`: SQL statements, e.g. the lock table its documentation tells users
    /// to create); on a user's server the adapter says what is missing.
    pub server_setup: Option<String>,
    /// The smallest watchdog TTL the library takes, when above [`Capabilities::min_ttl`] (the
    /// manifest's `min_watchdog_ttl_ms`: ShedLock's KeepAliveLockProvider refuses a lockAtMostFor
    /// under 30 s); a case with a shorter watchdog TTL does not apply to it.
    pub min_watchdog_ttl: Duration,
    /// Whether a release of a lock no longer held answers `not_held` (the manifest's
    /// `tells_stale_release`, true unless it says false: a library whose unlock returns nothing, as
    /// ShedLock's, cannot tell).
    pub tells_stale_release: bool,
    /// The registry artifact whose version an `id@version` row replaces (the manifest's
    /// `[versions]`); `None`: the row runs only the pinned version.
    pub registry: Option<Registry>,
    /// The manifest it was read from.
    pub manifest: PathBuf,
    /// Whether it is one of lockbench's own adapters (read from the adapters folder) rather than one a
    /// user added (`--adapter`).
    pub shipped: bool,
}

/// What the holding owner's second acquire of the same lock does (a manifest's
/// `capabilities.reentrant`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reentry {
    /// `false`: it waits like anyone else's (a try once is refused).
    Waits,
    /// `true`: granted as the same hold, counted; each acquire needs its own release.
    Counted,
    /// `"shared"`: granted at once as the same hold, uncounted, so one release frees it (etcd's
    /// `concurrency.Mutex`, keyed by its Session's lease, sees its own key as the owner).
    Shared,
}

impl Reentry {
    /// Its value in a manifest.
    pub fn manifest_value(self) -> &'static str {
        match self {
            Reentry::Waits => "false",
            Reentry::Counted => "true",
            Reentry::Shared => "\"shared\"",
        }
    }
}

/// The server names a manifest's `server` takes: lockbench's server kinds ([`ServerKind::name`]) whose
/// lock lives on a server, and `in-process` for an adapter that needs none.
fn server_named(name: &str) -> Option<Option<ServerKind>> {
    if name == ServerKind::InProcess.name() {
        return Some(None);
    }
    ServerKind::named(name)
        .filter(|k| !matches!(k, ServerKind::InProcess | ServerKind::PerClient))
        .map(Some)
}

/// The names [`server_named`] takes, for the error of one it does not.
fn server_names() -> impl Iterator<Item = &'static str> + Clone {
    ServerKind::ALL
        .into_iter()
        .filter(|k| *k != ServerKind::PerClient)
        .map(ServerKind::name)
}

/// The runtimes `start.runtime` takes.
const RUNTIMES: &[(&str, Runtime)] = &[
    ("python3", Runtime::SystemPython),
    ("python-venv", Runtime::Venv),
    ("node", Runtime::Node),
    ("java", Runtime::Jvm),
    ("exec", Runtime::Exec),
];

impl Runtime {
    /// Its name in a manifest's `start.runtime`.
    pub(crate) fn name(self) -> &'static str {
        RUNTIMES
            .iter()
            .find(|(_, r)| *r == self)
            .map_or("exec", |(name, _)| name)
    }
}

/// The placeholders a `[hello]` value may hold.
const PLACEHOLDERS: &[&str] = &[
    "{ttl_ms}",
    "{scaled_timeout_ms}",
    "{scaled_retry_interval_ms}",
];

const TOP_FIELDS: &[&str] = &[
    "id",
    "library",
    "version",
    "description",
    "server",
    "read_beside",
    "lease_modes",
    "takes_replicas",
    "serves_many_clients",
    "starve_library",
    "warm_up_ms",
    "install",
    "server_setup",
    "min_watchdog_ttl_ms",
    "tells_stale_release",
    "start",
    "capabilities",
    "hello",
    "versions",
];

const CAPABILITY_FIELDS: &[&str] = &[
    "reentrant",
    "fencing",
    "wait_notify",
    "lost_signal",
    "hold_identity",
    "min_ttl_ms",
    "ttl_granularity_ms",
];

/// The registry artifact a manifest's `[versions]` names: what `id@version` installs at that version
/// (adapters/README.md, "Another version of a library").
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Registry {
    /// `maven = "group:artifact"`: the dependency of the row's profile in `pom.xml` whose version
    /// is replaced (Maven Central).
    Maven {
        /// The artifact's group id.
        group: String,
        /// The artifact id.
        artifact: String,
    },
    /// `pypi = "name"`: the package installed as `name==version` (PyPI).
    PyPi(String),
}

impl Registry {
    /// The registry's name, for messages.
    pub fn name(&self) -> &'static str {
        match self {
            Registry::Maven { .. } => "Maven Central",
            Registry::PyPi(_) => "PyPI",
        }
    }

    /// The artifact at `version`, as its registry spells it (`group:artifact:version`, `name==version`).
    pub fn coordinates(&self, version: &str) -> String {
        match self {
            Registry::Maven { group, artifact } => format!("{group}:{artifact}:{version}"),
            Registry::PyPi(name) => format!("{name}=={version}"),
        }
    }
}

/// One `hello` setting: its name and its value, a template over [`PLACEHOLDERS`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct HelloSetting {
    pub(crate) name: String,
    pub(crate) template: String,
}

impl HelloSetting {
    /// The value for a run with `renewal`, or `None` when the setting is left out: one that uses a
    /// scaled Redisson timeout is given only when those differ from Redisson's defaults (a 30 s TTL),
    /// so the library runs its own defaults there.
    pub(crate) fn value(&self, renewal: Renewal) -> Option<String> {
        let scaled = ScaledTimeouts::for_ttl(renewal.ttl);
        let uses_scaled = self.template.contains("{scaled_");
        if uses_scaled && scaled.are_defaults() {
            return None;
        }
        let ms = |d: Duration| d.as_millis().to_string();
        Some(
            self.template
                .replace("{ttl_ms}", &ms(renewal.ttl))
                .replace("{scaled_timeout_ms}", &ms(scaled.response_timeout))
                .replace("{scaled_retry_interval_ms}", &ms(scaled.retry_interval)),
        )
    }
}

/// Reads the manifest at `path`; `shipped` says it came from the adapters folder (its install hint is
/// then lockbench's install command).
pub fn read(path: &Path, shipped: bool) -> Result<PeerSpec, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("adapter manifest {}: cannot read it ({e})", path.display()))?;
    parse(&text, path, shipped)
}

/// Parses a manifest's `text`, read from `path`.
pub fn parse(text: &str, path: &Path, shipped: bool) -> Result<PeerSpec, String> {
    let fail = |field: &str, expected: &str| {
        format!(
            "adapter manifest {}: {field}: expected {expected}",
            path.display()
        )
    };
    let table: Table = text.parse().map_err(|e: toml::de::Error| {
        let line = e
            .span()
            .map(|s| text[..s.start.min(text.len())].lines().count().max(1));
        format!(
            "adapter manifest {}: not TOML{} ({})",
            path.display(),
            line.map(|l| format!(" at line {l}")).unwrap_or_default(),
            e.message()
        )
    })?;
    let fields = Fields {
        table: &table,
        prefix: "",
        fail: &fail,
    };
    fields.only(TOP_FIELDS)?;
    let id = fields.text("id")?;
    if !is_kebab_id(&id) {
        return Err(fail(
            "id",
            "a kebab-case id (lowercase letters, digits, '-' and '.'), e.g. \"py-my-lock\"",
        ));
    }
    let server = fields.text("server")?;
    let backend = server_named(&server).ok_or_else(|| fail("server", &one_of(server_names())))?;
    let (auto_renew, fixed_lease) = lease_modes(&fields)?;
    let start = fields.table("start")?;
    let start = Fields {
        table: start,
        prefix: "start.",
        fail: &fail,
    };
    start.only(&["runtime", "entry"])?;
    let runtime_name = start.text("runtime")?;
    let runtime = RUNTIMES
        .iter()
        .find(|(name, _)| *name == runtime_name)
        .map(|(_, r)| *r)
        .ok_or_else(|| fail("start.runtime", &one_of(RUNTIMES.iter().map(|r| r.0))))?;
    let entry = PathBuf::from(start.text("entry")?);
    let folder = path
        .parent()
        .map_or_else(|| PathBuf::from("."), Path::to_path_buf);
    let (capabilities, reentry) = capabilities(&fields, auto_renew, fixed_lease, &fail)?;
    let hello = hello_settings(&table, &fail)?;
    let registry = registry(&table, runtime, &fail)?;
    let warm_up_ms = fields.optional_u64("warm_up_ms")?.unwrap_or(0);
    Ok(PeerSpec {
        library: fields.text("library")?,
        version: fields.text("version")?,
        description: fields.text("description")?,
        backend,
        counterpart: fields.text("read_beside")?,
        capabilities,
        reentry,
        runtime,
        entry: folder.join(entry),
        folder,
        hello,
        takes_replicas: fields.optional_bool("takes_replicas")?.unwrap_or(false),
        serves_many_clients: fields
            .optional_bool("serves_many_clients")?
            .unwrap_or(false),
        starve_library: fields.optional_bool("starve_library")?.unwrap_or(false),
        warm_up: Duration::from_millis(warm_up_ms),
        install: match fields.optional_text("install")? {
            Some(install) => install,
            None if shipped => INSTALL.to_owned(),
            None => format!("see the [start] table of {}", path.display()),
        },
        server_setup: fields.optional_text("server_setup")?,
        min_watchdog_ttl: Duration::from_millis(
            fields.optional_u64("min_watchdog_ttl_ms")?.unwrap_or(0),
        ),
        tells_stale_release: fields.optional_bool("tells_stale_release")?.unwrap_or(true),
        registry,
        manifest: path.to_path_buf(),
        shipped,
        id,
    })
}

/// `lease_modes`: which of `watchdog` and `fixed` the adapter takes (auto_renew, fixed_lease).
fn lease_modes(fields: &Fields<'_>) -> Result<(bool, bool), String> {
    let expected = "a non-empty list of \"watchdog\" and \"fixed\", e.g. [\"watchdog\", \"fixed\"]";
    let Some(Value::Array(modes)) = fields.table.get("lease_modes") else {
        return Err((fields.fail)("lease_modes", expected));
    };
    let (mut watchdog, mut fixed) = (false, false);
    for mode in modes {
        match mode.as_str() {
            Some("watchdog") if !watchdog => watchdog = true,
            Some("fixed") if !fixed => fixed = true,
            _ => return Err((fields.fail)("lease_modes", expected)),
        }
    }
    if !(watchdog || fixed) {
        return Err((fields.fail)("lease_modes", expected));
    }
    Ok((watchdog, fixed))
}

fn capabilities(
    fields: &Fields<'_>,
    auto_renew: bool,
    fixed_lease: bool,
    fail: &dyn Fn(&str, &str) -> String,
) -> Result<(Capabilities, Reentry), String> {
    let caps = Fields {
        table: fields.table("capabilities")?,
        prefix: "capabilities.",
        fail,
    };
    caps.only(CAPABILITY_FIELDS)?;
    let ms = |name: &str| -> Result<Duration, String> {
        match caps.optional_u64(name)? {
            Some(0) => Err(fail(
                &format!("capabilities.{name}"),
                "a whole number of ms > 0",
            )),
            Some(ms) => Ok(Duration::from_millis(ms)),
            None => Ok(Duration::from_millis(1)),
        }
    };
    let reentry = match caps.table.get("reentrant") {
        Some(Value::Boolean(false)) => Reentry::Waits,
        Some(Value::Boolean(true)) => Reentry::Counted,
        Some(Value::String(s)) if s == "shared" => Reentry::Shared,
        _ => {
            return Err(fail(
                "capabilities.reentrant",
                "true, false or \"shared\" (it is required)",
            ));
        }
    };
    let capabilities = Capabilities {
        reentrant: reentry == Reentry::Counted,
        fencing: caps.bool("fencing")?,
        auto_renew,
        fixed_lease,
        wait_notify: caps.bool("wait_notify")?,
        lost_signal: caps.bool("lost_signal")?,
        hold_identity: caps.bool("hold_identity")?,
        min_ttl: ms("min_ttl_ms")?,
        ttl_granularity: ms("ttl_granularity_ms")?,
    };
    Ok((capabilities, reentry))
}

/// The `[hello]` table: setting names to string templates over [`PLACEHOLDERS`].
fn hello_settings(
    table: &Table,
    fail: &dyn Fn(&str, &str) -> String,
) -> Result<Vec<HelloSetting>, String> {
    let Some(hello) = table.get("hello") else {
        return Ok(Vec::new());
    };
    let Value::Table(hello) = hello else {
        return Err(fail(
            "hello",
            "a table of settings, e.g. [hello] ttl_ms = \"{ttl_ms}\"",
        ));
    };
    let expected = format!(
        "a string, with at most the placeholders {}",
        PLACEHOLDERS.join(", ")
    );
    hello
        .iter()
        .map(|(name, value)| {
            let field = format!("hello.{name}");
            let template = value.as_str().ok_or_else(|| fail(&field, &expected))?;
            let mut rest = template.to_owned();
            for placeholder in PLACEHOLDERS {
                rest = rest.replace(placeholder, "");
            }
            if rest.contains(['{', '}']) || name == "servers" {
                return Err(fail(&field, &expected));
            }
            Ok(HelloSetting {
                name: name.clone(),
                template: template.to_owned(),
            })
        })
        .collect()
}

/// The `[versions]` table: the one registry artifact whose version `id@version` replaces, named for
/// the adapter's runtime (`maven` for `java`, `pypi` for `python-venv`).
fn registry(
    table: &Table,
    runtime: Runtime,
    fail: &dyn Fn(&str, &str) -> String,
) -> Result<Option<Registry>, String> {
    let Some(versions) = table.get("versions") else {
        return Ok(None);
    };
    let expected = match runtime {
        Runtime::Jvm => {
            "a table with maven = \"group:artifact\" (a dependency of the row's pom.xml profile)"
        }
        Runtime::Venv => "a table with pypi = \"package\" (a package of the venv)",
        _ => {
            "no [versions] table: another version of a library is supported for java and python-venv adapters only"
        }
    };
    let Value::Table(versions) = versions else {
        return Err(fail("versions", expected));
    };
    let one = |name: &str| -> Result<String, String> {
        let field = format!("versions.{name}");
        match (versions.len(), versions.get(name)) {
            (1, Some(Value::String(s))) if !s.trim().is_empty() => Ok(s.clone()),
            _ => Err(fail(&field, expected)),
        }
    };
    match runtime {
        Runtime::Jvm => {
            let coordinates = one("maven")?;
            match coordinates.split(':').collect::<Vec<_>>()[..] {
                [group, artifact] if !group.is_empty() && !artifact.is_empty() => {
                    Ok(Some(Registry::Maven {
                        group: group.to_owned(),
                        artifact: artifact.to_owned(),
                    }))
                }
                _ => Err(fail("versions.maven", expected)),
            }
        }
        Runtime::Venv => Ok(Some(Registry::PyPi(one("pypi")?))),
        _ => Err(fail("versions", expected)),
    }
}

fn is_kebab_id(id: &str) -> bool {
    id.starts_with(|c: char| c.is_ascii_lowercase() || c.is_ascii_digit())
        && id
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '.')
}

fn one_of<'a>(names: impl Iterator<Item = &'a str>) -> String {
    let names: Vec<String> = names.map(|n| format!("\"{n}\"")).collect();
    format!("one of {}", names.join(", "))
}

/// The fields of one table of a manifest, read with errors that name them.
struct Fields<'a> {
    table: &'a Table,
    prefix: &'a str,
    fail: &'a dyn Fn(&str, &str) -> String,
}

impl Fields<'_> {
    fn error(&self, name: &str, expected: &str) -> String {
        (self.fail)(&format!("{}{name}", self.prefix), expected)
    }

    /// Only `known` fields are present.
    fn only(&self, known: &[&str]) -> Result<(), String> {
        match self.table.keys().find(|k| !known.contains(&k.as_str())) {
            Some(unknown) => Err(self.error(
                unknown,
                &format!("no such field (known: {})", known.join(", ")),
            )),
            None => Ok(()),
        }
    }

    fn text(&self, name: &str) -> Result<String, String> {
        self.optional_text(name)?
            .ok_or_else(|| self.error(name, "a string (it is required)"))
    }

    fn optional_text(&self, name: &str) -> Result<Option<String>, String> {
        match self.table.get(name) {
            None => Ok(None),
            Some(Value::String(s)) if !s.trim().is_empty() && !s.contains('\n') => {
                Ok(Some(s.clone()))
            }
            Some(_) => Err(self.error(name, "a non-empty one-line string")),
        }
    }

    fn bool(&self, name: &str) -> Result<bool, String> {
        self.optional_bool(name)?
            .ok_or_else(|| self.error(name, "true or false (it is required)"))
    }

    fn optional_bool(&self, name: &str) -> Result<Option<bool>, String> {
        match self.table.get(name) {
            None => Ok(None),
            Some(Value::Boolean(b)) => Ok(Some(*b)),
            Some(_) => Err(self.error(name, "true or false")),
        }
    }

    fn optional_u64(&self, name: &str) -> Result<Option<u64>, String> {
        match self.table.get(name) {
            None => Ok(None),
            Some(Value::Integer(n)) => u64::try_from(*n)
                .map(Some)
                .map_err(|_| self.error(name, "a whole number of ms, not negative")),
            Some(_) => Err(self.error(name, "a whole number of ms")),
        }
    }

    fn table(&self, name: &str) -> Result<&Table, String> {
        match self.table.get(name) {
            Some(Value::Table(t)) => Ok(t),
            _ => Err(self.error(name, "a table (it is required)")),
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    const GOOD: &str = r#"
id = "py-my-lock"
library = "my lock"
version = "1.0"
description = "a lock"
server = "redis"
read_beside = "redis-guard-thread"
lease_modes = ["watchdog", "fixed"]

[start]
runtime = "python3"
entry = "my_lock.py"

[capabilities]
reentrant = false
fencing = false
wait_notify = false
lost_signal = false
hold_identity = true

[hello]
ttl_ms = "{ttl_ms}"
"#;

    fn parsed(text: &str) -> Result<PeerSpec, String> {
        parse(text, Path::new("/x/my-lock.toml"), false)
    }

    #[test]
    fn a_good_manifest_reads_with_its_entry_beside_it() {
        let spec = parsed(GOOD).unwrap();
        assert_eq!(spec.id, "py-my-lock");
        assert_eq!(spec.entry, Path::new("/x/my_lock.py"));
        assert!(spec.capabilities.auto_renew && spec.capabilities.fixed_lease);
        assert_eq!(spec.registry, None);
        assert_eq!(spec.reentry, Reentry::Waits);
        for (value, reentry, counted) in [
            ("true", Reentry::Counted, true),
            ("\"shared\"", Reentry::Shared, false),
        ] {
            let text = GOOD.replace("reentrant = false", &format!("reentrant = {value}"));
            let spec = parsed(&text).unwrap();
            assert_eq!(
                (spec.reentry, spec.capabilities.reentrant),
                (reentry, counted)
            );
            assert_eq!(reentry.manifest_value(), value);
        }
        let venv =
            GOOD.replace("\"python3\"", "\"python-venv\"") + "[versions]\npypi = \"my-lock\"\n";
        let spec = parsed(&venv).unwrap();
        assert_eq!(spec.registry, Some(Registry::PyPi("my-lock".into())));
        assert_eq!(spec.registry.unwrap().coordinates("0.9"), "my-lock==0.9");
        assert_eq!(spec.capabilities.min_ttl, Duration::from_millis(1));
        let renewal = Renewal::new(Duration::from_secs(2));
        assert_eq!(spec.hello[0].value(renewal).as_deref(), Some("2000"));
    }

    #[test]
    fn a_bad_manifest_is_one_line_naming_the_file_the_field_and_what_it_expected() {
        for (change, field, expected) in [
            (
                ("server = \"redis\"", "server = \"oracle\""),
                "server",
                "one of",
            ),
            (
                (
                    "lease_modes = [\"watchdog\", \"fixed\"]",
                    "lease_modes = []",
                ),
                "lease_modes",
                "non-empty",
            ),
            (
                ("fencing = false", "fencing = \"no\""),
                "capabilities.fencing",
                "true or false",
            ),
            (
                ("fencing = false\n", ""),
                "capabilities.fencing",
                "required",
            ),
            (
                ("reentrant = false", "reentrant = \"sometimes\""),
                "capabilities.reentrant",
                "true, false or \"shared\"",
            ),
            (
                ("runtime = \"python3\"", "runtime = \"ruby\""),
                "start.runtime",
                "one of",
            ),
            (
                ("\"{ttl_ms}\"", "\"{ttl_s}\""),
                "hello.ttl_ms",
                "placeholders",
            ),
            (
                ("id = \"py-my-lock\"", "id = \"My Lock\""),
                "id",
                "kebab-case",
            ),
            (
                ("version = \"1.0\"", "verison = \"1.0\""),
                "verison",
                "no such field",
            ),
        ] {
            let text = GOOD.replace(change.0, change.1);
            let err = parsed(&text).unwrap_err();
            assert!(
                err.starts_with("adapter manifest /x/my-lock.toml: ")
                    && err.contains(&format!(" {field}: expected"))
                    && err.contains(expected)
                    && !err.contains('\n'),
                "{err}"
            );
        }
        for (versions, expected) in [
            (
                "[versions]\npypi = \"my-lock\"\n",
                "versions: expected no [versions] table",
            ),
            (
                "[versions]\nmaven = \"org.x\"\n",
                "versions.maven: expected a table with maven",
            ),
        ] {
            let runtime = if versions.contains("maven") {
                "java"
            } else {
                "python3"
            };
            let text = GOOD.replace("\"python3\"", &format!("{runtime:?}")) + versions;
            let err = parsed(&text).unwrap_err();
            assert!(err.contains(expected) && !err.contains('\n'), "{err}");
        }
        let err = parsed("id = ").unwrap_err();
        assert!(
            err.contains("not TOML at line 1") && !err.contains('\n'),
            "{err}"
        );
    }
}
