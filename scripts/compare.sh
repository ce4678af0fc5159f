#!/usr/bin/env bash
# The main comparison on a Debian/Ubuntu machine with Rust: installs what is missing, builds lockbench in
# release mode and runs `lockbench compare` (servers start automatically on loopback). Extra arguments go
# to `lockbench compare`, e.g. `scripts/compare.sh --quick --out /tmp/lockbench`.
set -euo pipefail
cd "$(dirname "$0")/.."
bash docker/install-deps.sh
exec cargo run --release --locked -p lockbench -- compare "$@"
