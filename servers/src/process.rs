//! Owns one server child process: spawns it in its own process group with output going to a
//! log file in its temp dir, signals it (pause, resume, kill), and kills and reaps it on drop.
//!
//! Every live child is also recorded in a fixed, lock-free table so [`kill_all_servers`] can
//! kill them all from a signal handler or a Ctrl-C task before the program exits without
//! running destructors. As a last resort the kernel kills a child whose parent process died
//! (`PR_SET_PDEATHSIG`), and temp dirs of dead owners are removed by the next process that
//! creates one.

use std::fs::{File, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::{Mutex, MutexGuard, OnceLock, mpsc};
use std::time::{Duration, Instant};

use tempfile::TempDir;

use crate::{Result, ServerError};

/// Environment variable naming the directory temp dirs are created in (overrides `/dev/shm`).
pub const DATA_DIR_ENV: &str = "LOCKBENCH_DATA_DIR";

const SHM: &str = "/dev/shm";

/// How many live children [`kill_all_servers`] can track. More children still work; the extra
/// ones are just not reachable from `kill_all_servers`.
const REGISTRY_SLOTS: usize = 1024;

static LIVE_PIDS: [AtomicI32; REGISTRY_SLOTS] = [const { AtomicI32::new(0) }; REGISTRY_SLOTS];

fn register(pid: i32) -> Option<usize> {
    LIVE_PIDS.iter().position(|slot| {
        slot.compare_exchange(0, pid, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
    })
}

fn unregister(slot: Option<usize>, pid: i32) {
    if let Some(slot) = slot.and_then(|i| LIVE_PIDS.get(i)) {
        let _ = slot.compare_exchange(pid, 0, Ordering::AcqRel, Ordering::Acquire);
    }
}

/// Sends `SIGKILL` to the process group of every server child still alive in this process and
/// returns how many were signalled.
///
/// It only reads atomics and calls `kill(2)`, so it is async-signal-safe and may be called from
/// a signal handler. The children are not reaped here: call it just before the process exits
/// (e.g. in a Ctrl-C handler), or let the handles' `Drop` reap them afterwards.
pub fn kill_all_servers() -> usize {
    let mut signalled = 0;
    for slot in &LIVE_PIDS {
        let pid = slot.load(Ordering::Acquire);
        if pid > 0 {
            // SAFETY: kill(2) has no memory-safety preconditions. The pid is still registered,
            // so the child has not been reaped and its process group id cannot have been reused.
            unsafe { libc::kill(-pid, libc::SIGKILL) };
            signalled += 1;
        }
    }
    signalled
}

type SpawnRequest = (Command, mpsc::Sender<io::Result<Child>>);

/// Spawns `command` so that the child gets `SIGKILL` if this process dies without running
/// destructors (Ctrl-C's default action, `SIGKILL`, an abort), on Linux.
///
/// The child asks for that with `PR_SET_PDEATHSIG`, which fires when the *thread* that forked
/// it exits, so every child is forked by one long-lived spawner thread rather than by the
/// (possibly short-lived) caller's thread. Elsewhere, or if that thread cannot be started, the
/// child is spawned directly.
fn spawn_tied_to_this_process(command: Command) -> io::Result<Child> {
    static SPAWNER: OnceLock<Option<Mutex<mpsc::Sender<SpawnRequest>>>> = OnceLock::new();
    let spawner = SPAWNER.get_or_init(|| {
        let (tx, rx) = mpsc::channel::<SpawnRequest>();
        std::thread::Builder::new()
            .name("lockbench-spawner".into())
            .spawn(move || {
                for (mut command, reply) in rx {
                    die_with_parent(&mut command);
                    let _ = reply.send(command.spawn());
                }
            })
            .ok()
            .map(|_| Mutex::new(tx))
    });
    let Some(spawner) = spawner else {
        let mut command = command;
        return command.spawn();
    };
    let (reply_tx, reply_rx) = mpsc::channel();
    spawner
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
        .send((command, reply_tx))
        .map_err(|_| io::Error::other("the lockbench spawner thread is gone"))?;
    reply_rx
        .recv()
        .map_err(|_| io::Error::other("the lockbench spawner thread did not answer"))?
}

#[cfg(target_os = "linux")]
fn die_with_parent(command: &mut Command) {
    let parent = std::process::id();
    // SAFETY: the closure runs in the forked child before exec and only makes the
    // async-signal-safe system calls prctl(2), getppid(2) and _exit(2).
    unsafe {
        command.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0) != 0 {
                return Err(io::Error::last_os_error());
            }
            // The parent may have died before prctl took effect.
            if u32::try_from(libc::getppid()).ok() != Some(parent) {
                libc::_exit(1);
            }
            Ok(())
        })
    };
}

#[cfg(not(target_os = "linux"))]
fn die_with_parent(_command: &mut Command) {}

/// The directory server temp dirs are created in: `$LOCKBENCH_DATA_DIR` if set, else `/dev/shm`
/// (a tmpfs, so etcd's and ZooKeeper's fsyncs are cheap) if it exists and is writable, else the
/// system temp dir.
pub fn data_parent() -> PathBuf {
    if let Some(dir) = std::env::var_os(DATA_DIR_ENV).filter(|v| !v.is_empty()) {
        return PathBuf::from(dir);
    }
    if shm_usable() {
        PathBuf::from(SHM)
    } else {
        std::env::temp_dir()
    }
}

fn shm_usable() -> bool {
    static USABLE: OnceLock<bool> = OnceLock::new();
    *USABLE.get_or_init(|| {
        Path::new(SHM).is_dir()
            && tempfile::Builder::new()
                .prefix("lockbench-probe-")
                .tempdir_in(SHM)
                .is_ok()
    })
}

/// Creates a fresh temp dir for one server under [`data_parent`], marked with this process's
/// identity so a later process can remove it if this one dies without cleaning up.
pub(crate) fn make_temp_dir(prefix: &str) -> io::Result<TempDir> {
    let parent = data_parent();
    std::fs::create_dir_all(&parent)?;
    static SWEPT: OnceLock<()> = OnceLock::new();
    SWEPT.get_or_init(|| remove_abandoned_dirs(&parent));
    let dir = tempfile::Builder::new()
        .prefix(&format!("lockbench-{prefix}-"))
        .tempdir_in(&parent)?;
    if let Some(owner) = process_identity(std::process::id()) {
        std::fs::write(dir.path().join(OWNER_FILE), owner)?;
    }
    Ok(dir)
}

/// The file in each server temp dir naming the process that created it.
const OWNER_FILE: &str = ".lockbench-owner";

/// `"PID STARTTIME"` for a live process (the start time tells a reused pid apart), from
/// `/proc/PID/stat`; `None` if there is no such process or no `/proc`.
pub(crate) fn process_identity(pid: u32) -> Option<String> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the parenthesised command name start with field 3 (state); the start time
    // is field 22.
    let start_time = stat.rsplit_once(')')?.1.split_whitespace().nth(19)?;
    Some(format!("{pid} {start_time}"))
}

/// Whether `owner` (a [`process_identity`]: pid and start time) is a process still running: the pid
/// alone could have been reused.
pub(crate) fn owner_alive(owner: &str) -> bool {
    owner
        .split_whitespace()
        .next()
        .and_then(|pid| pid.parse().ok())
        .and_then(process_identity)
        .is_some_and(|identity| identity == owner)
}

/// Removes server temp dirs under `parent` left behind by processes that no longer exist
/// (killed before their destructors ran). Only dirs carrying an owner file are touched. An
/// abandoned etcd member dir alone holds ~120 MB of preallocated WAL, which on tmpfs is RAM.
fn remove_abandoned_dirs(parent: &Path) {
    let Ok(entries) = std::fs::read_dir(parent) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let is_ours = entry
            .file_name()
            .to_str()
            .is_some_and(|name| name.starts_with("lockbench-"));
        if !is_ours || !path.is_dir() {
            continue;
        }
        let Ok(owner) = std::fs::read_to_string(path.join(OWNER_FILE)) else {
            continue;
        };
        if !owner_alive(owner.trim()) {
            let _ = std::fs::remove_dir_all(&path);
        }
    }
}

#[derive(Debug)]
struct ChildState {
    child: Child,
    status: Option<ExitStatus>,
}

/// One running server child process with its temp dir and log file.
///
/// The child runs in its own process group (so a terminal's Ctrl-C does not reach it directly;
/// the owner decides when it dies). Signals go to the whole group. Dropping the value kills the
/// group with `SIGKILL`, reaps the child and then deletes the temp dir.
#[derive(Debug)]
pub struct ServerProcess {
    name: String,
    pid: u32,
    state: Mutex<ChildState>,
    log: PathBuf,
    slot: Option<usize>,
    dir: TempDir,
}

impl ServerProcess {
    /// Spawns `command` with stdin from `/dev/null` and stdout and stderr appended to
    /// `dir/log_file`, in a new process group. `name` is used in messages ("redis-server",
    /// "etcd member 1").
    pub fn spawn(
        name: impl Into<String>,
        mut command: Command,
        dir: TempDir,
        log_file: &str,
    ) -> Result<Self> {
        let log = dir.path().join(log_file);
        let out = OpenOptions::new().create(true).append(true).open(&log)?;
        let err = out.try_clone()?;
        command
            .stdin(Stdio::null())
            .stdout(Stdio::from(out))
            .stderr(Stdio::from(err))
            .process_group(0);
        let child = spawn_tied_to_this_process(command)?;
        let pid = child.id();
        let slot = i32::try_from(pid).ok().and_then(register);
        Ok(Self {
            name: name.into(),
            pid,
            state: Mutex::new(ChildState {
                child,
                status: None,
            }),
            log,
            slot,
            dir,
        })
    }

    /// What this process is, as used in messages.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The child's process id (also its process group id).
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// The temp dir holding the server's data and log.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// The log file the server's stdout and stderr (and its own log) go to.
    pub fn log_path(&self) -> &Path {
        &self.log
    }

    /// The last `n` lines of the log file (empty if it cannot be read).
    pub fn log_tail(&self, n: usize) -> String {
        read_tail(&self.log, n)
    }

    /// How many bytes the log file holds now (0 if it cannot be read): a mark for
    /// [`log_since`](Self::log_since).
    pub fn log_len(&self) -> u64 {
        std::fs::metadata(&self.log).map(|m| m.len()).unwrap_or(0)
    }

    /// What the log file gained after byte `mark` (at most its last 1 MiB; empty if it cannot be
    /// read).
    pub fn log_since(&self, mark: u64) -> String {
        read_since(&self.log, mark)
    }

    fn lock(&self) -> MutexGuard<'_, ChildState> {
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Sends `signal` to the process group, unless the child has been reaped already.
    fn signal(&self, signal: libc::c_int) -> io::Result<()> {
        let state = self.lock();
        if let Some(status) = state.status {
            return Err(io::Error::other(format!(
                "{} has already exited ({status})",
                self.name
            )));
        }
        let pgid = i32::try_from(self.pid).map_err(io::Error::other)?;
        // SAFETY: kill(2) has no memory-safety preconditions; holding the lock guarantees the
        // child has not been reaped, so the group id still belongs to it.
        if unsafe { libc::kill(-pgid, signal) } == 0 {
            Ok(())
        } else {
            Err(io::Error::last_os_error())
        }
    }

    /// Freezes the server with `SIGSTOP` (it keeps its sockets but answers nothing).
    pub fn pause(&self) -> io::Result<()> {
        self.signal(libc::SIGSTOP)
    }

    /// Lets a paused server continue with `SIGCONT`.
    pub fn resume(&self) -> io::Result<()> {
        self.signal(libc::SIGCONT)
    }

    /// Kills the server with `SIGKILL` and reaps it. Does nothing if it is gone already.
    pub fn kill(&self) -> io::Result<()> {
        let mut state = self.lock();
        if state.status.is_none() {
            let pgid = i32::try_from(self.pid).map_err(io::Error::other)?;
            // SAFETY: as in `signal`: the child is not reaped yet, the group id is its own.
            if unsafe { libc::kill(-pgid, libc::SIGKILL) } != 0 {
                // No such group (should not happen): kill the child itself before waiting.
                state.child.kill()?;
            }
            let status = state.child.wait()?;
            state.status = Some(status);
            unregister(self.slot, pgid);
        }
        Ok(())
    }

    /// Whether the child is still alive (a paused child counts as alive). Reaps it if it has
    /// exited.
    pub fn is_running(&self) -> bool {
        self.exit_status().is_none()
    }

    /// How the child ended, or `None` while it runs.
    pub fn exit_status(&self) -> Option<ExitStatus> {
        let mut state = self.lock();
        if state.status.is_none()
            && let Ok(Some(status)) = state.child.try_wait()
        {
            state.status = Some(status);
            if let Ok(pid) = i32::try_from(self.pid) {
                unregister(self.slot, pid);
            }
        }
        state.status
    }

    /// Whether this child (not some other process) has a listening TCP socket on `port`, from
    /// `/proc/PID/net/tcp{,6}` (the child's own network namespace, which may not be ours) and
    /// `/proc/PID/fd`. Start-up checks this so that a server which lost its port to another one is
    /// not mistaken for ready because the other one answers. Where `/proc` is unavailable it returns
    /// true.
    pub fn listens_on(&self, port: u16) -> bool {
        let mut inodes = Vec::new();
        let mut have_proc = false;
        for table in ["tcp", "tcp6"] {
            if let Ok(text) = std::fs::read_to_string(format!("/proc/{}/net/{table}", self.pid)) {
                have_proc = true;
                inodes.extend(listening_inodes(&text, port));
            }
        }
        if !have_proc {
            // No `/proc` at all: cannot tell. A child that is gone has no table: not listening.
            return !Path::new("/proc/self/net").exists();
        }
        let Ok(fds) = std::fs::read_dir(format!("/proc/{}/fd", self.pid)) else {
            return false;
        };
        fds.filter_map(|fd| std::fs::read_link(fd.ok()?.path()).ok())
            .filter_map(|target| {
                let target = target.to_str()?;
                target
                    .strip_prefix("socket:[")?
                    .strip_suffix(']')?
                    .parse::<u64>()
                    .ok()
            })
            .any(|inode| inodes.contains(&inode))
    }

    /// Whether the log says the server could not bind its port.
    pub(crate) fn log_says_address_in_use(&self) -> bool {
        let mut text = String::new();
        let _ = File::open(&self.log).and_then(|mut f| f.read_to_string(&mut text));
        let text = text.to_ascii_lowercase();
        text.contains("address already in use") || text.contains("address in use")
    }

    /// Polls `ready` every `interval` until it returns true. Fails with [`ServerError::Start`]
    /// when the child exits, when its log reports a port already in use, or after `timeout`.
    pub(crate) fn wait_ready(
        &self,
        timeout: Duration,
        interval: Duration,
        mut ready: impl FnMut() -> bool,
    ) -> Result<()> {
        wait_all_ready(&[self], timeout, interval, |_| ready())
    }

    /// A [`ServerError::Start`] for this process with the tail of its log.
    pub(crate) fn start_error(&self, reason: String) -> ServerError {
        ServerError::Start {
            server: self.name.clone(),
            reason,
            log_tail: self.log_tail(20),
        }
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        let _ = self.kill();
    }
}

/// Adds the usual process accessors to a server handle with a `process: ServerProcess` field.
macro_rules! process_accessors {
    () => {
        /// The server's process id (also its process group id).
        pub fn pid(&self) -> u32 {
            self.process.pid()
        }

        /// Freezes the server with `SIGSTOP`: connections stay open, nothing is answered.
        pub fn pause(&self) -> std::io::Result<()> {
            self.process.pause()
        }

        /// Lets a paused server continue with `SIGCONT`.
        pub fn resume(&self) -> std::io::Result<()> {
            self.process.resume()
        }

        /// Kills the server with `SIGKILL` and reaps it (idempotent).
        pub fn kill(&self) -> std::io::Result<()> {
            self.process.kill()
        }

        /// Whether the server process is still alive (paused counts as alive).
        pub fn is_running(&self) -> bool {
            self.process.is_running()
        }

        /// The server's temp dir (data and log); see [`data_parent`](crate::data_parent) for
        /// where it is placed.
        pub fn data_dir(&self) -> &std::path::Path {
            self.process.dir()
        }

        /// The last `n` lines of the server's log.
        pub fn log_tail(&self, n: usize) -> String {
            self.process.log_tail(n)
        }

        /// How many bytes the server's log holds now: a mark for `log_since`.
        pub fn log_len(&self) -> u64 {
            self.process.log_len()
        }

        /// What the server's log gained after byte `mark` (at most its last 1 MiB).
        pub fn log_since(&self, mark: u64) -> String {
            self.process.log_since(mark)
        }

        /// How long `start` took until the server was ready.
        pub fn startup(&self) -> std::time::Duration {
            self.startup
        }

        /// The underlying process handle.
        pub fn process(&self) -> &crate::ServerProcess {
            &self.process
        }
    };
}
pub(crate) use process_accessors;

const ADDRESS_IN_USE: &str = "address already in use";

/// Polls `ready(i)` for every process `i` not ready yet, every `interval`, until all are ready.
/// Fails with [`ServerError::Start`] as soon as any of them exits or logs that its port is in
/// use, or after `timeout`.
pub(crate) fn wait_all_ready(
    processes: &[&ServerProcess],
    timeout: Duration,
    interval: Duration,
    mut ready: impl FnMut(usize) -> bool,
) -> Result<()> {
    let started = Instant::now();
    let mut last_log_check = started;
    let mut pending: Vec<usize> = (0..processes.len()).collect();
    loop {
        pending.retain(|&i| !ready(i));
        if pending.is_empty() {
            return Ok(());
        }
        let check_logs = last_log_check.elapsed() >= Duration::from_millis(250);
        if check_logs {
            last_log_check = Instant::now();
        }
        for process in processes {
            if let Some(status) = process.exit_status() {
                let reason = if process.log_says_address_in_use() {
                    format!("{ADDRESS_IN_USE} (exited with {status})")
                } else {
                    format!("exited early with {status}")
                };
                return Err(process.start_error(reason));
            }
            if check_logs && process.log_says_address_in_use() {
                return Err(process.start_error(ADDRESS_IN_USE.to_owned()));
            }
        }
        if started.elapsed() >= timeout {
            let process = processes[pending[0]];
            return Err(process.start_error(format!("not ready after {timeout:?}")));
        }
        std::thread::sleep(interval);
    }
}

/// Runs `attempt` up to 3 times while it fails because a port was taken between picking it and
/// the server binding it.
pub(crate) fn retry_on_port_race<T>(mut attempt: impl FnMut() -> Result<T>) -> Result<T> {
    let mut tries = 0;
    loop {
        tries += 1;
        match attempt() {
            Err(ServerError::Start { reason, .. })
                if reason.contains(ADDRESS_IN_USE) && tries < 3 =>
            {
                continue;
            }
            other => return other,
        }
    }
}

/// Inodes of the sockets listening on `port` in a `/proc/net/tcp`-format table.
fn listening_inodes(table: &str, port: u16) -> Vec<u64> {
    const LISTEN: &str = "0A";
    table
        .lines()
        .skip(1)
        .filter_map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let local_port = fields.get(1)?.rsplit(':').next()?;
            let local_port = u16::from_str_radix(local_port, 16).ok()?;
            (local_port == port && *fields.get(3)? == LISTEN)
                .then(|| fields.get(9)?.parse().ok())
                .flatten()
        })
        .collect()
}

fn read_tail(path: &Path, n: usize) -> String {
    let text = read_from(path, 0, 64 * 1024);
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

fn read_since(path: &Path, mark: u64) -> String {
    read_from(path, mark, 1024 * 1024)
}

/// The file's bytes after `mark`, at most its last `max_bytes`, as text (empty if unreadable).
fn read_from(path: &Path, mark: u64, max_bytes: u64) -> String {
    let Ok(mut file) = File::open(path) else {
        return String::new();
    };
    let len = file.metadata().map(|m| m.len()).unwrap_or(0);
    let start = len.saturating_sub(max_bytes).max(mark);
    if start >= len || file.seek(SeekFrom::Start(start)).is_err() {
        return String::new();
    }
    let mut bytes = Vec::new();
    if file.read_to_end(&mut bytes).is_err() {
        return String::new();
    }
    String::from_utf8_lossy(&bytes).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sleeper() -> ServerProcess {
        let dir = make_temp_dir("test").expect("temp dir");
        let mut cmd = Command::new("sh");
        cmd.args(["-c", "echo one; echo two >&2; echo three; exec sleep 30"]);
        ServerProcess::spawn("sleeper", cmd, dir, "out.log").expect("spawn")
    }

    fn gone(pid: u32) -> bool {
        // SAFETY: signal 0 only checks for existence.
        let rc = unsafe { libc::kill(pid as i32, 0) };
        rc == -1 && io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH)
    }

    #[test]
    fn finds_listening_sockets_of_a_port() {
        let table = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n\
   0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1061 1 0 100 0 0 10 0\n\
   1: 0100007F:1F90 0100007F:8BEA 01 00000000:00000000 03:00000FC8 00000000     0        0 2000 3 0\n\
   2: 0100007F:1F91 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 3000 1 0\n";
        assert_eq!(listening_inodes(table, 8080), vec![1061]);
        assert_eq!(listening_inodes(table, 8081), vec![3000]);
        assert!(listening_inodes(table, 1).is_empty());
    }

    #[test]
    fn abandoned_dirs_are_removed_and_live_ones_kept() {
        let parent = tempfile::tempdir().expect("parent");
        let make = |name: &str, owner: Option<String>| {
            let dir = parent.path().join(name);
            std::fs::create_dir(&dir).expect("dir");
            if let Some(owner) = owner {
                std::fs::write(dir.join(OWNER_FILE), owner).expect("owner");
            }
            dir
        };
        let me = process_identity(std::process::id()).expect("own identity");
        let mine = make("lockbench-redis-live", Some(me.clone()));
        let dead = make("lockbench-etcd-dead", Some("999999999 1".to_owned()));
        let reused_pid = make(
            "lockbench-zk-reused",
            Some(format!("{} 1", std::process::id())),
        );
        let unmarked = make("lockbench-unmarked", None);
        let foreign = make("other-dir", Some("999999999 1".to_owned()));
        remove_abandoned_dirs(parent.path());
        assert!(mine.exists());
        assert!(!dead.exists());
        assert!(!reused_pid.exists());
        assert!(unmarked.exists());
        assert!(foreign.exists());
    }

    #[test]
    fn the_log_since_a_mark_is_what_was_written_after_it() {
        use std::io::Write;
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("server.log");
        assert_eq!(read_since(&path, 0), "", "no file yet");
        std::fs::write(&path, "before\n").expect("write");
        let mark = std::fs::metadata(&path).expect("len").len();
        assert_eq!(read_since(&path, mark), "");
        let mut file = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .expect("open");
        file.write_all(b"after\n").expect("append");
        assert_eq!(read_since(&path, mark), "after\n");
        assert_eq!(read_since(&path, 0), "before\nafter\n");
    }

    #[test]
    fn drop_kills_and_reaps_and_removes_the_dir() {
        let process = sleeper();
        let pid = process.pid();
        let dir = process.dir().to_path_buf();
        assert!(process.is_running());
        process
            .wait_ready(Duration::from_secs(5), Duration::from_millis(5), || {
                process.log_tail(10).contains("three")
            })
            .expect("output reaches the log");
        assert_eq!(process.log_tail(2), "two\nthree");
        drop(process);
        assert!(gone(pid));
        assert!(!dir.exists());
    }

    #[test]
    fn early_exit_is_a_start_error_with_the_log() {
        let dir = make_temp_dir("test").expect("temp dir");
        let mut cmd = Command::new("sh");
        cmd.args(["-c", "echo bind: Address already in use >&2; exit 3"]);
        let process = ServerProcess::spawn("failing", cmd, dir, "out.log").expect("spawn");
        let err = process
            .wait_ready(Duration::from_secs(5), Duration::from_millis(5), || false)
            .expect_err("must fail");
        let text = err.to_string();
        assert!(text.contains(ADDRESS_IN_USE), "{text}");
        assert!(text.contains("bind: Address already in use"), "{text}");
    }

    #[test]
    fn retries_only_port_races() {
        let mut calls = 0;
        let result: Result<()> = retry_on_port_race(|| {
            calls += 1;
            Err(ServerError::Start {
                server: "x".into(),
                reason: ADDRESS_IN_USE.into(),
                log_tail: String::new(),
            })
        });
        assert!(result.is_err());
        assert_eq!(calls, 3);
        let mut calls = 0;
        let _ = retry_on_port_race(|| -> Result<()> {
            calls += 1;
            Err(ServerError::Io(io::Error::other("boom")))
        });
        assert_eq!(calls, 1);
    }
}
