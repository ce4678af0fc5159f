//! Moved: the Redis variants' measurements now live in the `lockbench` crate, which owns every
//! measurement harness (shared helpers in `lockbench::measure`): uncontended latency of every strategy
//! in `cargo bench -p lockbench --bench acquire`, the cost of held locks (threads, RSS, connections) in
//! `lockbench scale` and `cargo bench -p lockbench --bench renewal`, the expiry-event delay in
//! `cargo bench -p lockbench --bench keyspace_expiry`. This target stays only until its `[[bench]]` entry
//! leaves `lockers/Cargo.toml`.

fn main() {
    println!(
        "moved: run `cargo bench -p lockbench --bench acquire`, `--bench renewal` and `--bench keyspace_expiry`, and `lockbench scale`"
    );
}
