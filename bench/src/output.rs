//! The output directory: checked (created and probed for writing) before a run starts so no
//! measurement is wasted, and written atomically (temp file + rename) so a reader never sees half a
//! results file.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::error::BenchError;

/// The results file's name inside the output directory.
pub(crate) const RESULTS_FILE: &str = "results.json";

/// The default output directory of a command started at `started_at` (RFC 3339):
/// `results/NAME-<the timestamp's letters and digits>`.
pub(crate) fn default_dir(name: &str, started_at: &str) -> PathBuf {
    let stamp: String = started_at
        .chars()
        .filter(|c| c.is_ascii_alphanumeric())
        .collect();
    PathBuf::from("results").join(format!("{name}-{stamp}"))
}

/// Creates `dir` if needed and proves it writable; a usage error otherwise.
pub(crate) fn prepare_dir(dir: &Path) -> Result<PathBuf, BenchError> {
    let bad = |why: String| BenchError::usage(format!("output directory {}: {why}", dir.display()));
    if dir.exists() && !dir.is_dir() {
        return Err(bad("exists and is not a directory".into()));
    }
    fs::create_dir_all(dir).map_err(|e| bad(e.to_string()))?;
    let probe = dir.join(format!(".lockbench-probe-{}", std::process::id()));
    fs::write(&probe, b"probe").map_err(|e| bad(format!("not writable: {e}")))?;
    let _ = fs::remove_file(&probe);
    Ok(dir.to_path_buf())
}

/// Writes `contents` to `dir/name` through a temp file in the same directory and a rename.
pub(crate) fn write_atomic(dir: &Path, name: &str, contents: &str) -> Result<PathBuf, BenchError> {
    let target = dir.join(name);
    let temp = dir.join(format!(".{name}.{}.tmp", std::process::id()));
    let failed =
        |e: std::io::Error| BenchError::failed(format!("writing {}: {e}", target.display()));
    let mut file = fs::File::create(&temp).map_err(failed)?;
    file.write_all(contents.as_bytes()).map_err(failed)?;
    file.sync_all().map_err(failed)?;
    drop(file);
    fs::rename(&temp, &target).map_err(|e| {
        let _ = fs::remove_file(&temp);
        failed(e)
    })?;
    Ok(target)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unwritable_places_are_usage_errors() {
        let err = prepare_dir(Path::new("/proc/lockbench-no")).expect_err("proc");
        assert!(matches!(err, BenchError::Usage(_)), "{err}");
        let dir = tempfile::tempdir().expect("temp");
        let file = dir.path().join("a-file");
        fs::write(&file, "x").expect("write");
        let err = prepare_dir(&file).expect_err("file");
        assert!(err.to_string().contains("not a directory"), "{err}");
    }

    #[test]
    fn writes_replace_whole_files() {
        let dir = tempfile::tempdir().expect("temp");
        let out = prepare_dir(&dir.path().join("new/nested")).expect("creates");
        write_atomic(&out, RESULTS_FILE, "one").expect("first");
        let path = write_atomic(&out, RESULTS_FILE, "two").expect("second");
        assert_eq!(fs::read_to_string(path).expect("read"), "two");
        let leftovers = fs::read_dir(&out).expect("list").count();
        assert_eq!(leftovers, 1, "no temp files left");
    }
}
