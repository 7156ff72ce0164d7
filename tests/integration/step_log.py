"""The step log the torch examples write (examples/torch/*_in_place.py:
`STEP rank step pid time` per optimizer step, weights in LOG.weights) and
what the in-place tests read from it."""
import os
import struct

from harness import check, kill_tree


def read_steps(log):
    """{rank: [(step, pid), ...]} in the order the rank wrote them."""
    found = {}
    with open(log) as f:
        for line in f:
            tag, rank, step, pid, _ = line.split()
            check(tag == "STEP", f"a step log line {line!r}")
            found.setdefault(int(rank), []).append((int(step), int(pid)))
    return found


def read_weights(path):
    with open(path, "rb") as f:
        data = f.read()
    return struct.unpack(f"<{len(data) // 4}f", data)


def check_every_step_done(steps_by_rank, world, steps):
    for rank in range(world):
        done = [s for s, _ in steps_by_rank.get(rank, [])]
        check(done and done[-1] == steps, f"rank {rank} ended at step {done[-1:]} of {steps}")


def redone_steps(steps_by_rank):
    """The most steps any rank wrote twice (a step redone after a fault)."""
    worst = 0
    for entries in steps_by_rank.values():
        done = [s for s, _ in entries]
        worst = max(worst, len(done) - len(set(done)))
    return worst


def pids_of(steps_by_rank, rank):
    return list(dict.fromkeys(pid for _, pid in steps_by_rank[rank]))


def wait_done(procs, timeout):
    results = []
    for proc in procs:
        try:
            out, err = proc.communicate(timeout=timeout)
        except Exception:
            kill_tree(proc.pid)
            out, err = proc.communicate()
        results.append((proc.returncode, out, err))
    return results


def steps_logged(log, at_least):
    if not os.path.exists(log):
        return False
    with open(log) as f:
        return sum(1 for _ in f) >= at_least
