#!/usr/bin/env bash
# The whole lockbench test suite on a Debian/Ubuntu machine with Rust: installs what is missing (servers,
# protoc, Chromium), then checks formatting, lints and docs and runs every test. Tests start their own
# redis-server, etcd, ZooKeeper and PostgreSQL on loopback; a missing server fails the run with the install command.
set -euo pipefail
cd "$(dirname "$0")/.."

step() { # step <name> <command...>: runs a step and prints how long it took
  local name=$1 start=$SECONDS
  shift
  echo "==> $name"
  "$@"
  echo "==> $name: $((SECONDS - start)) s"
}

step "install dependencies" bash docker/install-deps.sh --with-browser --with-peers
if command -v rustup >/dev/null 2>&1; then
  rustup component add clippy rustfmt >/dev/null 2>&1 || true
fi
step "fmt" cargo fmt --all -- --check
step "clippy" cargo clippy --workspace --all-targets --locked -- -D warnings
step "doc" env RUSTDOCFLAGS=-Dwarnings cargo doc --workspace --no-deps --locked
step "test" cargo test --workspace --locked --no-fail-fast
step "history checker" env GOTOOLCHAIN=local GOFLAGS=-mod=readonly bash -c 'cd bench/tests/checker && go test ./...'
echo "==> all checks passed in $SECONDS s"
