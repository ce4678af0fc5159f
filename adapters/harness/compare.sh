#!/usr/bin/env bash
# The interleaved comparison of adapters/HARNESS.md: for each round and each row, the adapter row
# beside its model (`lockbench run -s baseline -d 1s`), then the in-process harness in each mode, one
# after another, so that every figure of a round comes from the same few minutes of machine load.
#   adapters/harness/compare.sh ROUNDS ROW... > results.txt
# Needs LOCKBENCH (the lockbench binary, run from the folder holding adapters/ it should use), and
# REDIS, ZK, ETCD: servers on loopback (redis://127.0.0.1:P, 127.0.0.1:P, http://127.0.0.1:P) that
# both sides use. MODES (default "shared per-thread processes") picks the harness modes.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
rounds="$1"
shift
modes="${MODES:-shared per-thread processes}"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT

for round in $(seq 1 "$rounds"); do
  for row in "$@"; do
    case "$row" in
      jvm-redisson-3.43) model=redisson-classic server=(--redis "$REDIS") SERVER="$REDIS"
        flags=(--timeout-ms 500 --retry-interval-ms 166) ;;
      jvm-redisson | jvm-redisson-4) model=redisson server=(--redis "$REDIS") SERVER="$REDIS"
        flags=(--timeout-ms 500 --retry-interval-ms 166) ;;
      jvm-curator) model=zookeeper server=(--zk "$ZK") SERVER="$ZK" flags=() ;;
      go-etcd-mutex) model=etcd-lease server=(--etcd "$ETCD") SERVER="$ETCD" flags=() ;;
      *) echo "compare.sh: unknown row $row" >&2; exit 2 ;;
    esac
    export SERVER
    "$LOCKBENCH" run -s baseline --strategies "$row,$model" -d 1s "${server[@]}" --no-progress \
      -o "$out/run" >"$out/table" 2>&1 || { cat "$out/table" >&2; exit 1; }
    for strategy in "$row" "$model"; do
      # strategy lease status CS/s acq-p50 acq-p99 handoff ...
      awk -v s="$strategy" -v r="$round" -v t="$(date -u +%H:%M:%S)" '$1 == s && $2 == "watchdog" {
        printf "%s round=%s %s via=lockbench cs_per_s=%s acquire_p50_ms=%s acquire_p99_ms=%s handoff_p50_ms=%s\n",
          t, r, s, $4, $5, $6, $7 }' "$out/table"
    done
    for mode in $modes; do
      line="$("$here/run.sh" "$row" "$mode" "${flags[@]}" 2>"$out/log")" || { cat "$out/log" >&2; exit 1; }
      grep -h "after -*go-at" "$out/log" >&2 || true
      echo "$(date -u +%H:%M:%S) round=$round $row via=harness-$mode $line"
    done
  done
done
