"""The chaos suite's torch trainer (chaos.py --trainer torch): a real PyTorch DDP
script, examples/torch/ddp_in_place.py with the muster Python package, run by
muster (torch 1.13, the host's /usr/bin/python3) and recovering in place.

- worker_command(): what each agent runs: chaos_torch_worker.py (which writes
  chaos_worker.py's record and runs the script in the same process) with the
  script's own command line `--steps N --log FILE --sleep S`, unchanged.
- plan_steps(): the job's length, fixed before it starts. A survivor that
  recovers in place keeps the --steps it started with, so the open-ended
  length of the muster-train job (fixed at a wind-down that restarts every
  worker) cannot apply: the length comes from --duration and the step sleep,
  at most MAX_STEPS (a longer window sleeps longer per step instead).
- StepLog: the `STEP <rank> <step> <pid> <unix time>` lines every rank
  appends to FILE after each optimizer step, read incrementally.
- run_reference(): the fault-free run (one host running the whole world's
  workers, the same number of steps, no sleep); read_weights()/
  max_abs_difference(): rank 0's FILE.weights (raw float32 little-endian,
  parameters() order).

The weights of a run with faults equal the fault-free run's within float
rounding, compared with an absolute tolerance of 1e-5: the data of step s
depends only on s, but a world-size change or DDP's new bucket layout after
each recovery sums the same gradients in another order. That rounding
grows with the steps: fault-free runs of world sizes 2 and 6 differed by
1.2e-6 after 300 steps, 2.3e-6 after 700, 8e-6 after 1400 and 1.0e-5 after
2800 (torch 1.13 here); runs with faults ended 3.6e-6 to 6.8e-6 from the
reference after 900 to 1900 steps, and 7e-7 to 1.2e-6 after 400 (the ctest's
length): hence MAX_STEPS, a step sleep of 100 ms by default (fewer steps for
the same window) and a reference of the job's full world size.
"""
import math
import os
import struct
import time

import chaos_cluster as cluster
from chaos_checks import InvariantError

EXAMPLE = os.path.join(cluster.SOURCE_DIR, "examples", "torch", "ddp_in_place.py")
PACKAGE = os.path.join(cluster.SOURCE_DIR, "python")
WRAPPER = os.path.join(cluster.HERE, "chaos_torch_worker.py")
PYTHON = cluster.PYTHON  # Debian's python3 with torch 1.13
TOLERANCE = 1e-5  # absolute, on every weight

# A step's cost besides its sleep: 6 ranks' forward, backward and gloo
# allreduce on 2 shared cores, in network namespaces (about 2 ms alone;
# 15 ms measured with the driver's polling and the machine's other work).
STEP_OVERHEAD_S = 0.015
# The share of the fault window the job spends stepping: the rest goes to
# detecting, recovering and undoing faults (57% measured with every kind
# that applies drawn, seed 1, 50 s).
STEPPING_SHARE = 0.6
# Seconds of stepping the job keeps past the fault window, so the last fault
# recovers and is undone before the job ends.
TAIL_S = 10.0
# The most steps a job runs: float rounding grows with them (module doc).
MAX_STEPS = 1000

# A job that has not stepped for this long while the driver waits is stalled
# beyond any recovery seen here (a hang is killed after 3 s): every worker
# prints its Python stacks (chaos.py's dump_if_stalled).
STALL_S = 6.0

# Fault kinds that have nothing to act on with this trainer.
NOT_APPLICABLE = {
    "ckpt_kill": "the torch trainer runs without checkpoints (in place, a process started "
                 "into a generation takes its state from a peer)",
    "disk_full": "the torch trainer writes no checkpoint to fill the disk under",
}


def env_vars():
    """What the agents and the reference run need besides the driver's env."""
    return {"PYTHONPATH": os.pathsep.join(p for p in (PACKAGE, os.environ.get("PYTHONPATH"))
                                          if p),
            "MUSTER_PYTHON": PYTHON}


def plan_steps(duration_s, sleep_s):
    """(steps, sleep per step, estimated seconds per step): enough steps to keep
    the job stepping through a fault window of duration_s (STEPPING_SHARE of
    it) plus TAIL_S at the estimated rate, at most MAX_STEPS (then each step
    sleeps longer)."""
    span = duration_s * STEPPING_SHARE + TAIL_S
    steps = int(math.ceil(span / (sleep_s + STEP_OVERHEAD_S)))
    if steps > MAX_STEPS:
        steps = MAX_STEPS
        sleep_s = span / steps - STEP_OVERHEAD_S
    return steps, sleep_s, sleep_s + STEP_OVERHEAD_S


def worker_command(records, steps, log, sleep_s):
    """The agent's SCRIPT and its arguments (muster runs it with --python)."""
    return [WRAPPER, records, EXAMPLE, "--steps", str(steps), "--log", log,
            "--sleep", f"{sleep_s:g}"]


class StepLog:
    """The script's step log, read as it grows: new() returns the whole lines
    appended since the last call as (unix time, rank, step, pid)."""

    def __init__(self, path):
        self.path = path
        self._offset = 0
        self._partial = b""

    def new(self):
        try:
            with open(self.path, "rb") as f:
                f.seek(self._offset)
                data = f.read()
        except FileNotFoundError:
            return []
        self._offset += len(data)
        data = self._partial + data
        lines = data.split(b"\n")
        self._partial = lines.pop()  # b"" after a whole line
        found = []
        for line in lines:
            parts = line.split()
            if len(parts) != 5 or parts[0] != b"STEP":
                raise InvariantError("the step log holds only step lines",
                                     f"{self.path}: {line!r}")
            found.append((float(parts[4]), int(parts[1]), int(parts[2]), int(parts[3])))
        return found


def read_weights(path):
    with open(path, "rb") as f:
        data = f.read()
    return struct.unpack(f"<{len(data) // 4}f", data)


def max_abs_difference(a, b):
    """The largest |a_i - b_i|; infinite for weight lists of different lengths."""
    if len(a) != len(b):
        return float("inf")
    return max((abs(x - y) for x, y in zip(a, b)), default=0.0)


def run_reference(muster, out_dir, nproc, steps, log, registry, env):
    """The fault-free run: one host (--standalone), nproc workers (the chaos
    job's full world, so that only the recoveries change the summation order),
    `steps` steps, no sleep. Returns (weights, seconds)."""
    path = os.path.join(out_dir, "reference.log")
    args = [muster, "--standalone", "--nproc-per-node", str(nproc), "--python", PYTHON,
            EXAMPLE, "--steps", str(steps), "--log", path]
    started = time.monotonic()
    proc = cluster.Proc(args, "reference", log, registry, env=env)
    code = proc.wait(120)
    if code is None:
        proc.kill(group=True)
        raise InvariantError("the fault-free reference run finishes",
                             f"still running after 120 s:\n{log.tail('reference')}")
    weights = path + ".weights"
    if code != 0 or not os.path.exists(weights):
        raise InvariantError("the fault-free reference run finishes",
                             f"exit {code}:\n{log.tail('reference')}")
    return read_weights(weights), time.monotonic() - started


def survivors_kept(before, after, lost_pids):
    """(kept, survivors): of generation `before`'s workers ({rank: record}) not in
    lost_pids, how many are the same process in generation `after`."""
    now = {(rec["pid"], rec["ticks"]) for rec in after.values()}
    survivors = [rec for rec in before.values() if rec["pid"] not in lost_pids]
    kept = [rec for rec in survivors if (rec["pid"], rec["ticks"]) in now]
    return len(kept), len(survivors)
