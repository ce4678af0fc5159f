//! Moved: the `redis-watchdog` measurements now live in the `lockbench` crate, which owns every
//! measurement harness (shared helpers in `lockbench::measure`):
//! `cargo bench -p lockbench --bench acquire` (uncontended acquire+release against 2 × EVALSHA, with the
//! other strategies) and `cargo bench -p lockbench --bench redis_throughput` (throughput on independent
//! keys against EVALSHA ÷ 2, and where the server's time goes). This target stays only until its
//! `[[bench]]` entry leaves `lockers/Cargo.toml`.

fn main() {
    println!(
        "moved: run `cargo bench -p lockbench --bench acquire` and `cargo bench -p lockbench --bench redis_throughput`"
    );
}
