#!/usr/bin/env bash
# Writes docs/results/bench.json anew from three runs of the ratio benches (`acquire` and
# `redis_throughput`, each with its pinned pass), then regenerates the table
# docs/findings/performance.md quotes from it. Takes about 10 minutes after the release build; run
# it on an otherwise idle machine. `RUNS=N` changes the count; an argument names another file.
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-docs/results/bench.json}"
case "$out" in /*) ;; *) out="$(pwd)/$out" ;; esac
runs="${RUNS:-3}"
rm -f "$out"
for _ in $(seq "$runs"); do
    for bench in acquire redis_throughput; do
        LOCKBENCH_PIN=1 LOCKBENCH_BENCH_RESULTS="$out" cargo bench --locked -p lockbench --bench "$bench"
    done
done
LOCKBENCH_UPDATE_DOCS=1 cargo test --locked -p lockbench --test doc_tables
