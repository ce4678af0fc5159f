#!/usr/bin/env bash
# Runs one in-process harness measurement (adapters/HARNESS.md) and prints baseline's figures.
#   adapters/harness/run.sh ROW MODE [library flags...]
# ROW: jvm-redisson-3.43 | jvm-redisson | jvm-redisson-4 | jvm-curator | go-etcd-mutex.
# MODE: shared (16 clients as threads on one library client), per-thread (16 threads, a library client
# each, one process) or processes (16 processes of one client each, like the adapter rows).
# The server: SERVER (redis://127.0.0.1:PORT, 127.0.0.1:PORT for ZooKeeper, http://127.0.0.1:PORT for
# etcd). The workload is baseline's at `lockbench run -s baseline`: 16 clients, 4 keys, 1-5 ms tasks,
# 10 s watchdog TTL, 10 s acquire wait; WARMUP_MS (4000, the JVM rows' warm-up) and DURATION_MS (1000)
# set the window. Library flags go to the harness as they are (see RedissonHarness.java,
# CuratorHarness.java, adapters/go/cmd/harness).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
row="$1" mode="$2"
shift 2
warmup="${WARMUP_MS:-4000}" duration="${DURATION_MS:-1000}" clients=16
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# one_process FIRST_CLIENT CLIENTS INSTANCES GO_AT OUT: the harness for some of the clients, whose load
# begins at GO_AT (epoch ms; 0: once connected) and is measured from WARMUP_MS later.
one_process() {
  local first="$1" n="$2" instances="$3" go="$4" out="$5"
  shift 5
  local jvm_window=(--warmup-ms "$warmup") go_window=(-warmup "${warmup}ms")
  if [ "$go" != 0 ]; then
    jvm_window=(--go-at "$go" --start-at $((go + warmup)))
    go_window=(-go-at "$go" -start-at $((go + warmup)))
  fi
  case "$row" in
    go-etcd-mutex)
      [ "$instances" = per-thread ] && instances=per-goroutine
      "$here/build/go-etcd-mutex-harness" -endpoints "$SERVER" -ttl 10 -clients "$n" \
        -first-client "$first" -instances "$instances" "${go_window[@]}" \
        -duration "${duration}ms" -out "$out" "$@" ;;
    jvm-curator)
      java @"$here/build/$row/run.args" --connect "$SERVER" --session-ms 10000 --clients "$n" \
        --first-client "$first" --instances "$instances" "${jvm_window[@]}" \
        --duration-ms "$duration" --out "$out" "$@" ;;
    jvm-redisson*)
      java @"$here/build/$row/run.args" --address "$SERVER" --watchdog-ms 10000 --clients "$n" \
        --first-client "$first" --instances "$instances" "${jvm_window[@]}" \
        --duration-ms "$duration" --out "$out" "$@" ;;
    *) echo "run.sh: unknown row $row" >&2; exit 2 ;;
  esac
}

case "$mode" in
  shared | per-thread)
    one_process 0 "$clients" "$mode" 0 "$work/0" "$@" 2>"$work/log" \
      || { cat "$work/log" >&2; exit 1; } ;;
  processes)
    # Every process connects before the load begins: 16 JVMs starting at once on 2 cores take seconds.
    go=$(( $(date +%s%3N) + ${CONNECT_MS:-30000} ))
    pids=()
    for i in $(seq 0 $((clients - 1))); do
      one_process "$i" 1 shared "$go" "$work/$i" "$@" 2>>"$work/log" &
      pids+=($!)
    done
    for pid in "${pids[@]}"; do
      wait "$pid" || { cat "$work/log" >&2; exit 1; }
    done ;;
  *) echo "run.sh: MODE is shared, per-thread or processes, not $mode" >&2; exit 2 ;;
esac
if grep -h "after -*go-at" "$work/log" >&2; then
  echo "run.sh: a process connected after the load began (raise CONNECT_MS)" >&2
fi
python3 "$here/summarize.py" "$work"/[0-9]*
