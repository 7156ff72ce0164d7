#!/usr/bin/env python3
"""Where a build's time went, from ninja's own log (BUILD_DIR/.ninja_log).

Usage: scripts/bench/build_times.py BUILD_DIR [--top N]

Prints the build's wall time (first start to last end), the summed compile
and link time (CPU-ish: ninja runs jobs in parallel, so the sum exceeds the
wall time), the time per target (the CMake target whose X.dir holds the
object) and the N slowest outputs. Reads only the newest run of each output
(ninja appends a line per build), so run it after one clean build of the
directory to see that build, e.g. after
  rm -rf B && scripts/build.sh B ... && scripts/bench/build_times.py B
Used for docs/testing.md ("Where a cold build's time goes").
"""
import argparse
import collections
import os
import re
import signal
import sys


def read_log(path):
    entries = {}
    with open(path) as log:
        header = log.readline()
        if not header.startswith("# ninja log v"):
            sys.exit(f"build_times: {path} is not a ninja log (first line {header!r})")
        for line in log:
            fields = line.rstrip("\n").split("\t")
            if len(fields) != 5:
                continue
            start, end, _, output, _ = fields
            entries[output] = (int(start), int(end))  # the newest line wins
    return entries


def target_of(output):
    match = re.search(r"CMakeFiles/([^/]+)\.dir/", output)
    if match:
        return match.group(1)
    return "(link and other)"


def kind_of(output):
    if output.endswith((".o", ".obj")):
        return "compile"
    if output.endswith(".gch") or ".pch" in output:
        return "precompiled header"
    return "link and other"


def main():
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # quiet when piped to head
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("build_dir")
    parser.add_argument("--top", type=int, default=15)
    args = parser.parse_args()
    log_path = os.path.join(args.build_dir, ".ninja_log")
    if not os.path.isfile(log_path):
        sys.exit(f"build_times: no ninja log at {log_path} (build with Ninja first)")
    entries = read_log(log_path)
    if not entries:
        sys.exit(f"build_times: {log_path} records no build step")
    wall = (max(e for _, e in entries.values()) - min(s for s, _ in entries.values())) / 1000
    by_kind = collections.Counter()
    by_target = collections.Counter()
    count_by_target = collections.Counter()
    for output, (start, end) in entries.items():
        seconds = (end - start) / 1000
        by_kind[kind_of(output)] += seconds
        by_target[target_of(output)] += seconds
        count_by_target[target_of(output)] += 1
    total = sum(by_kind.values())
    print(f"{args.build_dir}: {len(entries)} steps, wall {wall:.0f} s, summed {total:.0f} s")
    for kind, seconds in by_kind.most_common():
        print(f"  {kind:20s} {seconds:8.1f} s  {100 * seconds / total:5.1f} %")
    print(f"\nper target (summed seconds, steps), top {args.top}:")
    for target, seconds in by_target.most_common(args.top):
        print(f"  {seconds:8.1f} s  {count_by_target[target]:4d}  {target}")
    print(f"\nslowest steps, top {args.top}:")
    slowest = sorted(entries.items(), key=lambda item: item[1][0] - item[1][1])[: args.top]
    for output, (start, end) in slowest:
        print(f"  {(end - start) / 1000:8.1f} s  {output}")


if __name__ == "__main__":
    main()
