//! Standard output, the one way the commands print to it ([`out!`] and [`outln!`]): a reader that went
//! away (`lockbench scenarios | head -1`) ends the printing quietly instead of panicking, and the
//! command goes on to its end, so a run still writes its results file and exits with its own code.
//! The processes-mode worker child talks to its driver over stdout on its own and does not use this.

use std::fmt;
use std::io::{self, Write as _};
use std::sync::atomic::{AtomicBool, Ordering};

/// Set once a write to stdout failed: nothing more is printed.
static CLOSED: AtomicBool = AtomicBool::new(false);

/// Writes `args` to stdout and flushes. A closed pipe drops this and every later output silently;
/// another error (a full disk behind a redirect) is named once on stderr, then output stops too.
pub(crate) fn write(args: fmt::Arguments<'_>) {
    if CLOSED.load(Ordering::Relaxed) {
        return;
    }
    let mut stdout = io::stdout().lock();
    if let Err(e) = stdout.write_fmt(args).and_then(|()| stdout.flush())
        && !CLOSED.swap(true, Ordering::Relaxed)
        && e.kind() != io::ErrorKind::BrokenPipe
    {
        eprintln!("lockbench: writing to stdout: {e}");
    }
}

/// `print!` through [`write`]: a closed stdout is not a panic.
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::base::stdout::write(format_args!($($arg)*))
    };
}

/// `println!` through [`write`]: a closed stdout is not a panic.
macro_rules! outln {
    () => {
        $crate::base::stdout::write(format_args!("\n"))
    };
    ($($arg:tt)*) => {
        $crate::base::stdout::write(format_args!("{}\n", format_args!($($arg)*)))
    };
}

pub(crate) use {out, outln};
