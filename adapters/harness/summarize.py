#!/usr/bin/env python3
"""Baseline's figures from the in-process harness's sections (adapters/HARNESS.md).

Reads one or more files written by adapters/jvm/harness (Harness.java) or adapters/go/cmd/harness: a
header `window FROM TO overlaps N failures N cpu_ns N` (the process's CPU time in the window), then one line per critical section `client key asked
start end` (CLOCK_MONOTONIC ns). Several files (one per process, same window) are pooled. Prints one
line: completed sections whose acquire began in the window, CS/s, acquire p50/p99 (ms) of those, and
hand-off p50/p99 (ms) as lockbench's oracle defines it: a section whose acquire began before the
key's previous section ended, starting after every earlier section of the key ended, counts its start
minus that end. Overlaps are sections of different clients on one key that intersect.
"""

import sys


def percentile(values, q):
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main(paths):
    window = None
    failures = 0
    cpu_ns = 0
    sections = []
    for path in paths:
        with open(path, encoding="utf-8") as f:
            head = f.readline().split()
            if len(head) != 9 or head[0] != "window":
                sys.exit(f"summarize: {path} has no window header")
            window = window or (int(head[1]), int(head[2]))
            failures += int(head[6])
            cpu_ns += int(head[8])
            for line in f:
                client, key, asked, start, end = (int(x) for x in line.split())
                sections.append((key, start, end, asked, client))
    lo, hi = window
    measured = [s for s in sections if lo <= s[3] < hi]
    acquire = [(s[1] - s[3]) / 1e6 for s in measured]
    handoff, overlaps = [], 0
    by_key = {}
    for s in sorted(sections):
        by_key.setdefault(s[0], []).append(s)
    for runs in by_key.values():
        max_end = 0
        for i, (_, start, end, asked, client) in enumerate(runs):
            for other in runs[max(0, i - 32):i]:
                if other[4] != client and other[2] > start:
                    overlaps += 1
            if 0 < max_end <= start and asked < max_end and start >= lo and asked < hi:
                handoff.append((start - max_end) / 1e6)
            max_end = max(max_end, end)
    seconds = (hi - lo) / 1e9
    print(
        f"cs={len(measured)} window_s={seconds:.2f} cs_per_s={len(measured) / seconds:.0f} "
        f"acquire_p50_ms={percentile(acquire, 0.5):.2f} acquire_p99_ms={percentile(acquire, 0.99):.2f} "
        f"handoff_p50_ms={percentile(handoff, 0.5):.2f} handoff_p99_ms={percentile(handoff, 0.99):.2f} "
        f"cpu_ms_per_cs={cpu_ns / 1e6 / max(1, len(measured)):.2f} cores_busy={cpu_ns / (hi - lo):.2f} "
        f"overlaps={overlaps} failures={failures}"
    )


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit("usage: summarize.py SECTIONS_FILE...")
    main(sys.argv[1:])
