#!/usr/bin/env python3
"""What a compiler flag costs: the same translation units compiled under
several flag sets, one unit at a time, alternated, and timed.

Usage: scripts/bench/flag_costs.py BUILD_DIR [--match REGEX] [--limit N]
           [--variant NAME=FLAGS]...

Reads BUILD_DIR/compile_commands.json, keeps the .cc files matching REGEX (at
most N, spread over the list), and compiles each once per variant into a
temporary folder, variants alternated unit by unit so that a busy machine
stretches all of them alike. A variant's FLAGS replace the unit's own
optimisation and debug flags (-O*, -g*); FLAGS starting with "+" are added
to them instead. Prints each variant's total and its ratio to the first.

Example (the sanitizer builds' choices, docs/testing.md):
  scripts/bench/flag_costs.py build-asan --limit 12 \
    --variant 'O2 -g=-O2 -g' --variant 'O1 -g=-O1 -g' --variant 'O1 -g1=-O1 -g1'
"""
import argparse
import os
import re
import shlex
import subprocess
import sys
import tempfile
import time

import compile_db


def with_variant(argv, flags):
    extra = shlex.split(flags.lstrip("+"))
    if flags.startswith("+"):
        return argv + extra
    kept = [a for a in argv if not re.fullmatch(r"-O[0-3sgz]?|-g[0-3]?|-ggdb[0-3]?", a)]
    return kept[:1] + extra + kept[1:]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("build_dir")
    parser.add_argument("--match", default=".")
    parser.add_argument("--limit", type=int, default=12)
    parser.add_argument("--variant", action="append", required=True, help="NAME=FLAGS")
    args = parser.parse_args()
    variants = []
    for spec in args.variant:
        name, sep, flags = spec.partition("=")
        if not sep:
            sys.exit(f"flag_costs: --variant {spec!r} is not NAME=FLAGS")
        variants.append((name, flags))
    entries = compile_db.units(args.build_dir, args.match, args.limit)
    totals = {name: 0.0 for name, _ in variants}
    with tempfile.TemporaryDirectory() as out_dir:
        for entry in entries:
            row = []
            for name, flags in variants:
                argv = with_variant(compile_db.compile_argv(entry), flags) + ["-o", os.path.join(out_dir, "unit.o")]
                start = time.monotonic()
                result = subprocess.run(argv, cwd=entry["directory"], capture_output=True, text=True)
                seconds = time.monotonic() - start
                if result.returncode != 0:
                    sys.exit(f"flag_costs: {name} failed on {entry['file']}:\n{result.stderr[-2000:]}")
                totals[name] += seconds
                row.append(f"{name} {seconds:5.1f}")
            print(f"  {os.path.relpath(entry['file'])}: " + ", ".join(row), flush=True)
    first = variants[0][0]
    print(f"{len(entries)} units")
    for name, _ in variants:
        print(f"  {name:24s} {totals[name]:7.1f} s  {totals[name] / totals[first]:5.2f}x")


if __name__ == "__main__":
    main()
