"""Worker that writes down when its generation ran: for the two-generations check.

usage: generation_ticks.py OUTDIR [--every SECONDS]

Appends to OUTDIR/ticks-<pid>.log one line "start GEN RANK PID PPID T" when it starts
and then "tick GEN RANK PID PPID T" every --every seconds (default 0.02) until it is stopped,
each line flushed at once. GEN is TORCHELASTIC_RESTART_COUNT (muster counts it per
generation), PPID its agent's pid, T is time.monotonic(): every network namespace shares the machine's
clock, so times written on different "hosts" compare. The last line a worker wrote
bounds when it last ran; a line only appears while the worker is alive.
"""
import os
import sys
import time

out_dir = sys.argv[1]
args = sys.argv[2:]
every = float(args[args.index("--every") + 1]) if "--every" in args else 0.02
gen = int(os.environ["TORCHELASTIC_RESTART_COUNT"])
rank = int(os.environ["RANK"])
pid = os.getpid()
ppid = os.getppid()

with open(os.path.join(out_dir, f"ticks-{pid}.log"), "a", buffering=1) as log:
    kind = "start"
    while True:
        log.write(f"{kind} {gen} {rank} {pid} {ppid} {time.monotonic():.6f}\n")
        kind = "tick"
        time.sleep(every)
