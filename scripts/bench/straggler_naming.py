#!/usr/bin/env python3
"""The slow-rank rule on real runs (rendezvous/state/compute_stragglers.h):
how soon a slow rank of 4 is named, and that a fault-free run of the same
length names none. An unmodified DDP loop (tests/torch/ddp_steps.py, 50 ms
steps) under muster --standalone, warm workers, one run per case:

    fault-free   no fault, for --minutes
    slow-fault   --inject slow,rank=2,factor=2
    slow-input   rank 1's input twice as slow (a sleep before its forward)

Usage: scripts/bench/straggler_naming.py [--muster build/bin/muster]
           [--python /usr/bin/python3] [--minutes 2]

For each case: the straggler lines, and the seconds from rank 0's first step
to the first of them. docs/operations.md keeps the figures.
"""
import argparse
import os
import re
import subprocess
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.abspath(os.path.join(HERE, "..", ".."))
STEPS = os.path.join(SOURCE, "tests", "torch", "ddp_steps.py")


def run(args, muster_args, script_args, steps):
    env = dict(os.environ, MUSTER_PYTHON=args.python)
    proc = subprocess.Popen([args.muster, "--standalone", "--nproc-per-node", "4"] + muster_args +
                            [STEPS, "--steps", str(steps), "--step-seconds", "0.05",
                             "--print-first-step"] + script_args,
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    seen = {"first": None, "named": None, "lines": []}

    def read_out():
        for line in proc.stdout:
            if "FIRST_STEP" in line and seen["first"] is None:
                seen["first"] = time.monotonic()

    def read_err():
        for line in proc.stderr:
            if "event=straggler " in line:
                seen["lines"].append(line.strip())
                if seen["named"] is None:
                    seen["named"] = time.monotonic()

    threads = [threading.Thread(target=read_out), threading.Thread(target=read_err)]
    for t in threads:
        t.start()
    code = proc.wait()
    for t in threads:
        t.join()
    took = seen["named"] - seen["first"] if seen["named"] and seen["first"] else None
    return code, took, seen["lines"]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--muster", default=os.path.join(SOURCE, "build", "bin", "muster"))
    parser.add_argument("--python", default="/usr/bin/python3")
    parser.add_argument("--minutes", type=float, default=2)
    args = parser.parse_args()
    cases = [("fault-free", [], [], int(args.minutes * 60 / 0.05)),
             ("slow-fault", ["--inject", "slow,rank=2,factor=2"], [], 400),
             ("slow-input", [], ["--slow-input-rank", "1", "--slow-input-factor", "2"], 350)]
    for name, muster_args, script_args, steps in cases:
        code, took, lines = run(args, muster_args, script_args, steps)
        when = f"{took:.1f} s after the first step" if took is not None else "never"
        print(f"{name:11s} exit {code}, {len(lines)} straggler line(s), first {when}", flush=True)
        for line in lines:
            print(f"    {line}")


if __name__ == "__main__":
    main()
