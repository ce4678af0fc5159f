#!/usr/bin/env bash
# Builds the in-process harnesses (adapters/HARNESS.md) into adapters/harness/build/: the JVM one once
# per JVM row, against the jars adapters/jvm/build.sh copied for that row (build/<row>/lib; set
# JVM_BUILD to another adapters/jvm/build folder), and the Go one against adapters/go's go.mod. Prints
# nothing but errors. Run adapters/jvm/build.sh (or docker/install-deps.sh --with-peers) first.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
adapters="$(dirname "$here")"
jvm_build="${JVM_BUILD:-$adapters/jvm/build}"
out="$here/build"
mkdir -p "$out"
for spec in "jvm-redisson-3.43 RedissonHarness" "jvm-redisson RedissonHarness" \
    "jvm-redisson-4 RedissonHarness" "jvm-curator CuratorHarness"; do
  read -r row main <<<"$spec"
  lib="$jvm_build/$row/lib"
  [ -d "$lib" ] || { echo "harness: no $lib (run adapters/jvm/build.sh)" >&2; exit 1; }
  mkdir -p "$out/$row"
  javac -nowarn -d "$out/$row" -cp "$lib/*" "$adapters/jvm/harness/Harness.java" \
    "$adapters/jvm/harness/$main.java"
  printf -- '-Dorg.slf4j.simpleLogger.defaultLogLevel=warn\n-cp\n%s\n%s\n' "$out/$row:$lib/*" "$main" \
    > "$out/$row/run.args"
done
(cd "$adapters/go" && go build -o "$out/go-etcd-mutex-harness" ./cmd/harness)
