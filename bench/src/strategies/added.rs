//! The rows added at run time: the adapters a user adds with `--adapter FILE` (each manifest read once
//! into a peer row of its own) and the rows `id@version` (an adapter at another version of its library,
//! [`versions`](super::versions)), after lockbench's rows, for the rest of the process; where the
//! user's adapters' stderr logs go (under the run's output); and the manifests a worker process must
//! be given to know the same rows.

use std::path::{Path, PathBuf};
use std::sync::RwLock;

use lockers::peer::catalog;

use super::{STRATEGIES, Strategy, versions};

/// The rows added so far, in the order they were added.
static ADDED: RwLock<Vec<&'static Strategy>> = RwLock::new(Vec::new());

/// Where the added adapters' stderr logs go (`None`: the default temporary folder).
static LOG_DIR: RwLock<Option<PathBuf>> = RwLock::new(None);

/// Reads the manifest at `path` and adds its adapter as a peer row; the same manifest twice is added
/// once. An error is one line naming the file and the field: a bad manifest, an id lockbench already
/// has, a server a run cannot start for it, or a `read_beside` that is not one of lockbench's rows.
pub fn add_adapter(path: &Path) -> Result<&'static Strategy, String> {
    let path = &std::fs::canonicalize(path)
        .map_err(|e| format!("adapter manifest {}: cannot read it ({e})", path.display()))?;
    let spec = catalog::read_manifest(path)?;
    let fail = |field: &str, expected: String| {
        format!(
            "adapter manifest {}: {field}: expected {expected}",
            path.display()
        )
    };
    let mut added = ADDED.write().unwrap_or_else(|e| e.into_inner());
    if let Some(same) = added.iter().find(|s| s.id == spec.id) {
        return match same.peer_spec() {
            Some(other) if other.manifest == spec.manifest => Ok(same),
            _ => Err(fail(
                "id",
                format!("an id of its own, {:?} is added twice", spec.id),
            )),
        };
    }
    if STRATEGIES.iter().any(|s| s.id == spec.id) {
        return Err(fail(
            "id",
            format!("an id of its own, {:?} is one of lockbench's rows", spec.id),
        ));
    }
    let natives: Vec<&str> = STRATEGIES
        .iter()
        .filter(|s| !s.is_peer())
        .map(|s| s.id)
        .collect();
    if !natives.contains(&spec.counterpart.as_str()) {
        return Err(fail(
            "read_beside",
            format!("one of lockbench's own rows ({})", natives.join(", ")),
        ));
    }
    catalog::add_server_setup(&spec);
    let spec: &'static catalog::PeerSpec = Box::leak(Box::new(spec));
    let row = Strategy::peer(spec).ok_or_else(|| {
        fail(
            "server",
            "a server a run starts (redis, redis-nodes, etcd, zookeeper, postgres, mysql); `in-process` is \
             for `lockbench check-adapter` only"
                .into(),
        )
    })?;
    let row: &'static Strategy = Box::leak(Box::new(row));
    added.push(row);
    Ok(row)
}

/// Adds the row `id@version`: the adapter of row `id` (lockbench's or one added before) at that
/// version of its library, installed first if it is not yet. An error is one line.
pub fn add_version(id: &str) -> Result<&'static Strategy, String> {
    add_version_row(id, true)
}

/// The row `id@version` when that version is installed (a worker process: its parent installed it).
pub(super) fn installed_version(id: &str) -> Option<&'static Strategy> {
    add_version_row(id, false).ok()
}

fn add_version_row(id: &str, install: bool) -> Result<&'static Strategy, String> {
    let (base_id, version) = versions::split(id).ok_or_else(|| format!("{id}: no '@version'"))?;
    let base = STRATEGIES
        .iter()
        .chain(added())
        .find(|s| s.id == base_id)
        .and_then(Strategy::peer_spec)
        .ok_or_else(|| {
            format!("unknown strategy '{id}': {base_id} is not an adapter's row (`lockbench strategies --peers`)")
        })?;
    let spec = versions::spec_at(base, version, install)?;
    let mut added = ADDED.write().unwrap_or_else(|e| e.into_inner());
    if let Some(same) = added.iter().find(|s| s.id == spec.id) {
        return Ok(same);
    }
    let spec: &'static catalog::PeerSpec = Box::leak(Box::new(spec));
    let row = Strategy::peer(spec).ok_or_else(|| format!("{id}: its adapter needs no server"))?;
    let row: &'static Strategy = Box::leak(Box::new(row));
    added.push(row);
    Ok(row)
}

/// The rows added so far.
pub fn added() -> Vec<&'static Strategy> {
    ADDED.read().unwrap_or_else(|e| e.into_inner()).clone()
}

/// The manifests of the rows added so far (what a worker process is given, `--adapter` each).
fn added_manifests() -> Vec<PathBuf> {
    added()
        .iter()
        .filter(|s| versions::split(s.id).is_none())
        .filter_map(|s| s.peer_spec())
        .map(|spec| spec.manifest.clone())
        .collect()
}

/// Sends the added adapters' stderr logs to `dir` from now on (the run's output), never into a report.
pub fn log_added_adapters_under(dir: &Path) {
    *LOG_DIR.write().unwrap_or_else(|e| e.into_inner()) = Some(dir.to_path_buf());
}

/// The folder of a run's output the added adapters' logs go to.
pub const ADDED_ADAPTER_LOGS: &str = "adapter-logs";

/// Where the added adapters' logs go.
pub fn added_log_dir() -> Option<PathBuf> {
    LOG_DIR.read().unwrap_or_else(|e| e.into_inner()).clone()
}

/// The arguments that give a worker process of this run the same added adapters and log folder
/// (`--adapter FILE` each, `--adapter-logs DIR`).
pub fn added_adapter_args() -> Vec<String> {
    let mut args = Vec::new();
    for manifest in added_manifests() {
        args.extend(["--adapter".to_owned(), manifest.display().to_string()]);
    }
    if let (false, Some(dir)) = (args.is_empty(), added_log_dir()) {
        args.extend(["--adapter-logs".to_owned(), dir.display().to_string()]);
    }
    args
}
