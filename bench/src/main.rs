//! The `lockbench` binary: parse, run, exit code. Everything else lives in the library.

fn main() {
    std::process::exit(lockbench::cli_main(std::env::args_os()));
}
