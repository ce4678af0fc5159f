//! The `lockbench` binary: parse, run, exit code. Everything else lives in the library.

// Functions of at most 100 lines (clippy.toml) in this crate's code; its inline tests are exempt.
#![cfg_attr(not(test), warn(clippy::too_many_lines))]

fn main() {
    std::process::exit(lockbench::cli_main(std::env::args_os()));
}
