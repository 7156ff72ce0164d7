"""muster-train in an elastic job under musterd, on loopback: a node is
SIGKILLed mid-run, the survivors re-form with fewer ranks, resume from the
newest checkpoint (written at the larger world size) and finish with the
weights of a fault-free single-process run, within 1e-6 relative.

- 6 -> 4 ranks: 3 agents x 2 workers (--nnodes 2:3), one non-master agent killed;
- 4 -> 3 ranks: 4 agents x 1 worker (--nnodes 3:4), one non-master agent killed.

The global batch (64) and the dataset (1000) are multiples of neither 3 nor 6:
the split is uneven and steps cross epoch ends. Rank 0's lines say which
world sizes trained ("world size 6, global batch 64: ...") and what resumed
("resumed from step N of 60 (checkpoint written at world size 6)").
"""
import glob
import os
import signal
import time

from elastic_harness import start_musterd, wait_exit
from harness import MUSTER, base_env, check, run, run_tests, start, tempdir, test, wait_for
import train_harness
from train_harness import TRAIN, max_relative_difference, read_floats
from testlib import procs  # on the path through harness

RDZV_CONF = "last_call_timeout=0.5"
STEPS = 60
TRAIN_ARGS = train_harness.model(dataset_size=1000) + [
    "--backend", "gloo", "--steps", str(STEPS), "--checkpoint-every", "5", "--log-every", "5",
    "--collective-timeout", "20"]


def fault_free_weights(work):
    """The reference: one process, no launcher, the same flags."""
    path = os.path.join(work, "reference.bin")
    code, out, err = run([TRAIN] + TRAIN_ARGS + ["--out", path], timeout=60)
    check(code == 0, f"the fault-free run exited {code}", out, err)
    return read_floats(path)


def rank_of(pid):
    """RANK of a muster-train worker, or None for another process."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            if not f.read().split(b"\0")[0].endswith(b"muster-train"):
                return None
        with open(f"/proc/{pid}/environ", "rb") as f:
            env = dict(v.split(b"=", 1) for v in f.read().split(b"\0") if b"=" in v)
        return int(env[b"RANK"])
    except (FileNotFoundError, ProcessLookupError, PermissionError, KeyError, ValueError):
        return None


def worker_ranks(agent):
    """The ranks of the agent's running muster-train workers."""
    ranks = []
    for p in os.listdir("/proc"):
        if not p.isdigit():
            continue
        if procs.state(p)[1] == agent.pid:
            rank = rank_of(int(p))
            if rank is not None:
                ranks.append(rank)
    return sorted(ranks)


def read(path):
    with open(path) as f:
        return f.read()


def shrink(nprocs, nnodes, before, after):
    """Runs one agent per entry of `nprocs` (its --nproc-per-node), kills one
    that does not hold rank 0 once two checkpoints of `before` ranks exist,
    and checks the job finishes at `after` ranks with the fault-free weights."""
    work = tempdir()
    reference = fault_free_weights(work)
    daemon, port = start_musterd(extra=["--rdzv-conf", RDZV_CONF])
    ckpt = os.path.join(work, "ckpt")
    result = os.path.join(work, "result.bin")
    agents, logs = [], []
    for i, nproc in enumerate(nprocs):
        logs.append((os.path.join(work, f"agent{i}.out"), os.path.join(work, f"agent{i}.err")))
        with open(logs[-1][0], "w") as out, open(logs[-1][1], "w") as err:
            agents.append(start(
                [MUSTER, "--nnodes", nnodes, "--nproc-per-node", str(nproc), "--rdzv-backend",
                 "muster", "--rdzv-endpoint", f"127.0.0.1:{port}", "--rdzv-id", "train",
                 "--rdzv-conf", RDZV_CONF, "--local-addr", "127.0.0.1", "--max-restarts", "3",
                 # The checkpoint path is the one under test (recovery_in_place
                 # covers the in-place one).
                 "--recovery", "restart", "--no-python", TRAIN] + TRAIN_ARGS
                + ["--checkpoint-dir", ckpt, "--out", result, "--step-sleep-ms", "60"],
                env=base_env(), stdout=out, stderr=err))
    started = time.monotonic()

    def everything():
        return "".join(read(o) + read(e) for o, e in logs)

    check(wait_for(lambda: f"world size {before}, global batch 64" in everything(), 30),
          f"no generation of {before} ranks started", everything())
    check(wait_for(lambda: len(glob.glob(os.path.join(ckpt, "ckpt-*"))) >= 2, 30),
          "no checkpoints appeared", everything())
    holders = {i: worker_ranks(a) for i, a in enumerate(agents)}
    check(sum(len(r) for r in holders.values()) == before, f"workers by agent: {holders}")
    victim = max(i for i, ranks in holders.items() if 0 not in ranks)
    master = next(i for i, ranks in holders.items() if 0 in ranks)
    os.kill(agents[victim].pid, signal.SIGKILL)
    killed_at = time.monotonic() - started

    for i, agent in enumerate(agents):
        if i == victim:
            continue
        wait_exit(agent, 60)
        check(agent.returncode == 0, f"agent {i} exited {agent.returncode}", everything())
    out = read(logs[master][0])
    resumed = [line for line in out.splitlines() if "resumed from step" in line]
    check(resumed and f"(checkpoint written at world size {before})" in resumed[-1],
          f"the {after} ranks did not resume the {before} ranks' checkpoint", out)
    check(out.rfind(f"world size {after}, global batch 64") > out.find(f"world size {before},"),
          f"no generation of {after} ranks trained after the kill", out)
    diff = max_relative_difference(reference, read_floats(result))
    print(f"{before} -> {after} ranks: killed at {killed_at:.1f}s, {resumed[-1].split(': ', 1)[-1]}, "
          f"done at {time.monotonic() - started:.1f}s, largest relative difference from the "
          f"fault-free run {diff:.2e}")
    check(diff <= 1e-6, f"{before} -> {after} ranks differ from the fault-free run by {diff:.2e}")


@test
def six_ranks_shrinking_to_four_finish_with_the_fault_free_weights():
    shrink([2, 2, 2], "2:3", before=6, after=4)


@test
def four_ranks_shrinking_to_three_finish_with_the_fault_free_weights():
    shrink([1, 1, 1, 1], "3:4", before=4, after=3)


if __name__ == "__main__":
    run_tests()
