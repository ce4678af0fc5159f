//! Helpers shared by the integration tests.
#![allow(dead_code, unreachable_pub, missing_docs)]

use std::io;

/// Asserts that no process with `pid` exists any more (not even a zombie).
pub fn assert_gone(pid: u32) {
    let pid = i32::try_from(pid).expect("pid fits i32");
    // SAFETY: signal 0 only checks whether the process exists.
    let rc = unsafe { libc::kill(pid, 0) };
    let errno = io::Error::last_os_error().raw_os_error();
    assert!(
        rc == -1 && errno == Some(libc::ESRCH),
        "process {pid} still exists (kill(pid, 0) = {rc}, errno {errno:?})"
    );
}

/// Asserts that the process with `pid` exists.
pub fn assert_alive(pid: u32) {
    let pid = i32::try_from(pid).expect("pid fits i32");
    // SAFETY: signal 0 only checks whether the process exists.
    let rc = unsafe { libc::kill(pid, 0) };
    assert_eq!(rc, 0, "process {pid} does not exist");
}

/// A multi-threaded tokio runtime for the async clients.
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio runtime")
}
