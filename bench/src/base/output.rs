//! The output directory: checked (created and probed for writing) before a run starts so no
//! measurement is wasted, removed again if the command ends with it still empty, and written
//! atomically (temp file + rename) so a reader never sees half a results file; and a results file
//! read back, gunzipped when it is kept compressed.

use std::fs;
use std::io::{Read as _, Write};
use std::path::{Path, PathBuf};

use crate::base::error::BenchError;

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

/// An output directory made ready for writing. Dropped while still empty (the command measured
/// nothing, e.g. a server was unreachable), it removes the directories [`prepare_dir`] created for it;
/// a directory holding anything, or one that existed before, is left alone.
#[derive(Debug)]
pub(crate) struct OutputDir {
    path: PathBuf,
    /// The directories `prepare_dir` created, deepest first.
    created: Vec<PathBuf>,
    /// The claim marker [`claim_dir`] created, removed on drop.
    marker: Option<PathBuf>,
}

impl std::ops::Deref for OutputDir {
    type Target = Path;

    fn deref(&self) -> &Path {
        &self.path
    }
}

impl AsRef<Path> for OutputDir {
    fn as_ref(&self) -> &Path {
        &self.path
    }
}

impl Drop for OutputDir {
    fn drop(&mut self) {
        if let Some(marker) = &self.marker {
            let _ = fs::remove_file(marker);
        }
        // `remove_dir` removes empty directories only, so results are never touched.
        for dir in &self.created {
            if fs::remove_dir(dir).is_err() {
                break;
            }
        }
    }
}

/// Creates `dir` if needed and proves it writable; a usage error otherwise.
pub(crate) fn prepare_dir(dir: &Path) -> Result<OutputDir, BenchError> {
    let bad = |why: String| BenchError::usage(format!("output directory {}: {why}", dir.display()));
    if dir.exists() && !dir.is_dir() {
        return Err(bad("exists and is not a directory".into()));
    }
    let created: Vec<PathBuf> = dir
        .ancestors()
        .take_while(|d| !d.as_os_str().is_empty() && !d.exists())
        .map(Path::to_path_buf)
        .collect();
    let prepared = OutputDir {
        path: dir.to_path_buf(),
        created,
        marker: None,
    };
    fs::create_dir_all(dir).map_err(|e| bad(e.to_string()))?;
    let probe = dir.join(format!(".lockbench-probe-{}", std::process::id()));
    fs::write(&probe, b"probe").map_err(|e| bad(format!("not writable: {e}")))?;
    let _ = fs::remove_file(&probe);
    Ok(prepared)
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

/// A results file's text, gunzipped when its name ends in `.gz` (results kept in a repository).
pub fn read_text(path: &Path) -> std::io::Result<String> {
    let bytes = fs::read(path)?;
    if path.extension().is_none_or(|e| e != "gz") {
        return String::from_utf8(bytes).map_err(std::io::Error::other);
    }
    gunzip_text(&bytes)
}

/// The text of gzip'd bytes (a results file kept in a repository, or built into the binary).
pub fn gunzip_text(gzip: &[u8]) -> std::io::Result<String> {
    let mut text = String::new();
    flate2::read::GzDecoder::new(gzip).read_to_string(&mut text)?;
    Ok(text)
}

/// The marker a command that writes results keeps in its output directory while it runs: its pid.
const CLAIM_MARKER: &str = ".lockbench-running";

/// Claims `dir` for one command's results, `file`: prepared as by [`prepare_dir`], and refused with a
/// usage error when it already holds `file` (an earlier run's results are never overwritten) or when
/// another lockbench command still running is writing into it (its marker, created exclusively and
/// removed when the claim is dropped; a marker whose process is gone is taken over).
pub(crate) fn claim_dir(dir: &Path, file: &str) -> Result<OutputDir, BenchError> {
    let bad = |why: String| BenchError::usage(format!("output directory {}: {why}", dir.display()));
    if dir.join(file).exists() {
        return Err(bad(format!(
            "already holds {file} from an earlier run; choose another --out (results are never overwritten)"
        )));
    }
    let mut prepared = prepare_dir(dir)?;
    let marker = dir.join(CLAIM_MARKER);
    let create = || {
        fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&marker)
    };
    let mut claimed = create();
    if claimed.is_err() {
        let holder = fs::read_to_string(&marker).ok();
        match holder
            .as_deref()
            .map(str::trim)
            .and_then(|p| p.parse::<i32>().ok())
        {
            Some(pid) if process_alive(pid) => {
                return Err(bad(format!(
                    "another lockbench command (pid {pid}) is writing into it; choose another --out"
                )));
            }
            // Left by a command that is gone: take it over.
            _ => {
                let _ = fs::remove_file(&marker);
                claimed = create();
            }
        }
    }
    let mut claimed = claimed.map_err(|e| bad(format!("cannot claim it: {e}")))?;
    claimed
        .write_all(std::process::id().to_string().as_bytes())
        .map_err(|e| bad(format!("cannot claim it: {e}")))?;
    prepared.marker = Some(marker);
    Ok(prepared)
}

/// Whether a process with this pid exists.
fn process_alive(pid: i32) -> bool {
    // SAFETY: signal 0 only checks that the process exists and may be signalled.
    pid > 0
        && (unsafe { libc::kill(pid, 0) } == 0
            || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM))
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

    #[test]
    fn an_empty_directory_it_created_goes_and_results_stay() {
        let dir = tempfile::tempdir().expect("temp");
        let nested = dir.path().join("results/run-1");
        drop(prepare_dir(&nested).expect("creates"));
        assert!(
            !dir.path().join("results").exists(),
            "empty directories left"
        );
        let kept = prepare_dir(&nested).expect("creates");
        write_atomic(&kept, RESULTS_FILE, "{}").expect("writes");
        drop(kept);
        assert!(nested.join(RESULTS_FILE).exists());
        let existing = prepare_dir(dir.path()).expect("exists");
        drop(existing);
        assert!(dir.path().exists(), "a directory that existed stays");
    }
}
