#!/usr/bin/env python3
"""What each third-party header costs the translation units that include it.

Usage: scripts/bench/header_costs.py BUILD_DIR [--match REGEX] [--limit N]

Compiles the build's translation units again (from BUILD_DIR's
compile_commands.json, those whose file matches REGEX; at most N of them)
with clang++ -ftime-trace into a temporary folder, and sums the trace of
each: the front end (parsing and template instantiation) against the back
end (optimisation and code generation), and the parse time of each
third-party library's headers where a project file includes them (nested
includes count for the outermost library). clang stands in for g++ here:
the build itself uses g++, whose -ftime-report has no per-header figure.
Used for docs/testing.md ("Where a cold build's time goes").
"""
import argparse
import collections
import json
import os
import re
import subprocess
import sys
import tempfile

import compile_db

LIBRARIES = [
    ("boost/asio+beast", re.compile(r"/boost/(asio|beast)")),
    ("boost (other)", re.compile(r"/boost/")),
    ("spdlog", re.compile(r"/spdlog/")),
    ("fmt", re.compile(r"/fmt/")),
    ("nlohmann/json", re.compile(r"/nlohmann/")),
    ("catch2", re.compile(r"/catch2/")),
    ("CLI11", re.compile(r"/CLI/")),
    ("gloo", re.compile(r"/gloo/")),
    ("openssl", re.compile(r"/openssl/")),
    ("std library", re.compile(r"/c\+\+/|/usr/include/[^/]+\.h$|/usr/include/(x86_64-linux-gnu|linux|asm|sys|bits)")),
]


def library_of(path):
    for name, pattern in LIBRARIES:
        if pattern.search(path):
            return name
    return None


def clang_command(entry, out_dir, index):
    flags = [arg for arg in compile_db.compile_argv(entry)[1:] if not arg.startswith("-Wno-tsan")]
    return ["clang++", *flags, "-Wno-unknown-warning-option", "-ftime-trace",
            "-ftime-trace-granularity=100", "-o", os.path.join(out_dir, f"tu{index}.o")]


def trace_costs(path):
    with open(path) as trace:
        events = [e for e in json.load(trace)["traceEvents"] if e.get("ph") == "X"]
    totals = {e["name"]: e["dur"] / 1e6 for e in events if e["name"].startswith("Total ")}
    sources = sorted((e for e in events if e["name"] == "Source"), key=lambda e: (e["ts"], -e["dur"]))
    by_library = collections.Counter()
    stack = []  # (end, library) of the enclosing Source events
    for event in sources:
        while stack and stack[-1][0] <= event["ts"]:
            stack.pop()
        library = library_of(event["args"]["detail"])
        if library and not any(lib for _, lib in stack):
            by_library[library] += event["dur"] / 1e6
        stack.append((event["ts"] + event["dur"], library))
    return totals, by_library


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("build_dir")
    parser.add_argument("--match", default=".", help="regex on the source path")
    parser.add_argument("--limit", type=int, default=1000)
    args = parser.parse_args()
    entries = compile_db.units(args.build_dir, args.match, args.limit)
    whole = collections.Counter()
    libraries = collections.Counter()
    per_unit = []
    with tempfile.TemporaryDirectory() as out_dir:
        for index, entry in enumerate(entries):
            result = subprocess.run(clang_command(entry, out_dir, index), cwd=entry["directory"],
                                    capture_output=True, text=True)
            if result.returncode != 0:
                print(f"header_costs: clang++ failed on {entry['file']}:\n{result.stderr[-2000:]}", file=sys.stderr)
                continue
            totals, by_library = trace_costs(os.path.join(out_dir, f"tu{index}.json"))
            whole.update(totals)
            libraries.update(by_library)
            per_unit.append((totals.get("Total ExecuteCompiler", 0), entry["file"], by_library))
    compile_s = whole.get("Total ExecuteCompiler", 0)
    print(f"{len(per_unit)} translation units, {compile_s:.1f} s under clang++")
    for phase in ("Total Frontend", "Total Source", "Total InstantiateFunction", "Total InstantiateClass",
                  "Total Backend", "Total CodeGen Function", "Total OptFunction"):
        if phase in whole:
            print(f"  {phase[6:]:22s} {whole[phase]:8.1f} s  {100 * whole[phase] / compile_s:5.1f} %")
    print("parse time of third-party headers (outermost library):")
    for library, seconds in libraries.most_common():
        print(f"  {library:22s} {seconds:8.1f} s  {100 * seconds / compile_s:5.1f} %")
    print("slowest units:")
    for seconds, path, by_library in sorted(per_unit, reverse=True)[:10]:
        top = ", ".join(f"{lib} {s:.1f}" for lib, s in by_library.most_common(3))
        print(f"  {seconds:6.1f} s  {os.path.relpath(path)}  ({top})")


if __name__ == "__main__":
    main()
