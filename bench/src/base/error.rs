//! `BenchError`: what ends a command early, and the exit code each kind maps to.

use std::fmt;

/// Exit code of a successful command.
pub const EXIT_OK: i32 = 0;
/// Exit code of a command that failed while running (a server would not start, a write failed).
pub const EXIT_FAILED: i32 = 1;
/// Exit code of bad input: unknown names, bad values, unreachable servers, unwritable output.
pub const EXIT_USAGE: i32 = 2;
/// Exit code of a run stopped by Ctrl-C (after writing what it measured).
pub const EXIT_INTERRUPTED: i32 = 130;

/// Why a command stopped. Its `Display` is one line, printed as `lockbench: <line>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BenchError {
    /// Bad input, found before anything was measured: exit code 2.
    Usage(String),
    /// The command failed while running: exit code 1.
    Failed(String),
}

impl BenchError {
    /// A usage error.
    pub fn usage(message: impl Into<String>) -> Self {
        BenchError::Usage(message.into())
    }

    /// A failure.
    pub fn failed(message: impl Into<String>) -> Self {
        BenchError::Failed(message.into())
    }

    /// The process exit code for this error.
    pub fn exit_code(&self) -> i32 {
        match self {
            BenchError::Usage(_) => EXIT_USAGE,
            BenchError::Failed(_) => EXIT_FAILED,
        }
    }
}

impl fmt::Display for BenchError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (BenchError::Usage(message) | BenchError::Failed(message)) = self;
        // One line, whatever the source said.
        let mut parts = message.lines().map(str::trim).filter(|l| !l.is_empty());
        if let Some(first) = parts.next() {
            f.write_str(first)?;
        }
        for rest in parts {
            write!(f, "; {rest}")?;
        }
        Ok(())
    }
}

impl std::error::Error for BenchError {}
