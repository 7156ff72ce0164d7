"""Worker SIGKILL, agent SIGKILL/SIGSTOP, node joining, a node's link down mid-training: muster --recovery in-place vs a restart from a checkpoint.

usage: recovery_inplace.py [--fault worker-kill|agent-kill|agent-stop|node-join|link-down]
                           [--runs N] [--nproc P] [--kill-step K] [--checkpoint-every C]
                           [--steps S] [--step-sleep-ms MS] [--torchrun 1.13|none] [--keep DIR]

--fault worker-kill (the default) is described first; the elastic faults
(agent-kill, agent-stop, node-join, link-down) after it.

One node, P workers (default 4), CPU/Gloo. Three variants, alternated, --runs
each (default 5):

  in-place  muster --recovery in-place running muster-train
  restart   muster --recovery restart running muster-train with --checkpoint-dir
            and --checkpoint-every C (default 20)
  torchrun  the reference: torchrun 1.13 (torchrun_compat.py, --monitor_interval
            0.1, --max_restarts 1) running a torch DDP trainer (written by this
            script, same MLP shape as muster-train's defaults) that saves a
            checkpoint every C steps and resumes from it

Every launcher gets --max-restarts 1; muster-train and the torch trainer both
run with --log-every 1 and a --step-sleep-ms (default 20) so that one step
takes a few tens of ms and the kill lands mid-run. Rank 0 prints
"step=N ..." after each step (a step ends with an allreduce over all ranks, so
rank 0 printing step N means every rank finished it), and "recovered in place
at step S ..." or "resumed from step S ..." when the job goes on after a
failure. The bench reads the launcher's stdout unbuffered and stamps each line
as it arrives.

Once rank 0 has printed step K (default 30, not a multiple of C, so that the
restart path redoes steps), the bench finds the workers (the launcher's
children, /proc/PID/task/*/children, rank from RANK in /proc/PID/environ) and
SIGKILLs rank 1 itself. Measured per run:

  stepping again   kill -> rank 0 prints the first step after the
                   recovered/resumed line (every rank stepping again)
  steps redone     last step rank 0 printed before that line (normally K)
                   minus the step the job went on from
  past the killed step again
                   kill -> rank 0 prints the first step beyond the last one it
                   printed before the kill (the lost progress regained)
  restarted        ranks whose worker pid changed between just before the kill
                   and the first step after recovery
  survivors kept   (in-place) every rank but 1 has the pid it had before

Also: muster's own event=in_place_recovered total_ms (stderr), and for in-place
and restart that the final weights (--out) equal, byte for byte, those of a
fault-free muster-train run with the same flags, run once at the start.

Target for in-place: every rank stepping again <= 150 ms (p50), steps redone
<= 1, one process restarted (every run).

Elastic faults (--fault agent-kill|agent-stop|node-join|link-down): two
muster agents on loopback (link-down: see below) form one job (--nnodes 1:2,
P workers each, default 2, c10d rendezvous on a free port below the ephemeral
range, served by the first agent, --max-restarts 3). Two variants,
alternated, --runs each: in-place and restart (with checkpoints every C
steps); torchrun is not measured here (see
docs/benchmarks.md#detection-and-recovery). Rank 0 runs on the first agent,
which also writes --out. The reference is a fault-free run of one agent with
P workers and the same training flags (muster-train's weights do not depend
on the world size); both variants must end with its weights byte for byte.

  agent-kill  the second agent starts once the first has joined its own
              rendezvous, so that one generation of world size 2P forms; once
              rank 0 printed step K or later at world size 2P (the second
              agent's workers running), the bench SIGKILLs the second agent
              (its workers die with it: PR_SET_PDEATHSIG).
  agent-stop  the same with SIGSTOP (the daemon declares the node dead after
              heartbeat_timeout, 1.25 s of silence; meanwhile the stopped
              agent's workers may go on stepping); SIGCONT once rank 0 stepped
              after the recovery; the second agent may then exit by itself
              within 30 s after the first, or is killed.
  link-down   as agent-kill, but the second agent (and so its workers) runs in
              a network namespace of its own, joined to the root namespace by
              one veth pair (a private 10.98.x.0/24 no address or route here
              uses; namespace and interfaces named after the bench's pid); the
              first agent, its rendezvous and workers stay in the root
              namespace on the root end's address (both agents get
              --local-addr). The fault is `ip -n NS link set VETH down` on the
              second node's end: its processes lose every connection silently
              (no RST), and the first node's workers hang in an allreduce
              until the daemon declares the silent node dead (heartbeat_timeout,
              1.25 s). The time is stamped when `ip` returns. The cut agent
              cannot learn that the job ended: it is not waited for; once the
              first agent exited, every process inside the namespace is
              SIGKILLed by pid, then the veth and the namespace are deleted
              (also when the run fails; at exit the bench fails if one is
              still there). Needs root (and ip, nsenter): otherwise it exits
              saying so.
  node-join   the first agent trains alone; once rank 0 printed step K the
              second agent starts; the daemon admits it after its last call
              (2 s): the first agent's stderr shows event=draining and then
              event=generation ... why="admitting new nodes" (stamped as read).

Measured per run: the time from the fault (the signal; for link-down, `ip`
returning; for node-join, the admitting generation's line) to rank 0's first
step after "recovered in place at step S ... world size W)" or "resumed from
step S" (or, with no such line, the job starting over); for node-join also
from the drain's start and from the joiner's start to its admission; for
agent faults and link-down also the daemon's event=node_dead line (and, for
agent-kill and link-down, whether the second node's workers are gone when the
first agent exits: they die with their agent, or the cut agent fences them);
steps redone (the last step rank 0 printed before that line minus S);
processes restarted on the first node (its worker pids before the fault vs at
the first step after); whether they all kept their pids.
Targets for in-place: agent SIGKILL every rank stepping again <= 300 ms
(p50), steps redone <= 1, survivors' processes unchanged; agent SIGSTOP and
link down: steps redone <= 1, survivors' processes unchanged; node joining:
joiner stepping <= 500 ms after its round closes (p50), first node's
processes unchanged.
Each agent runs in its own session with TMPDIR in the run's directory; every
process whose working directory is that directory is killed at the run's end,
and the bench fails if one is still running when it exits.

Exit status: 0; 1 when a run failed (launcher exit status, timeout, no recovery
seen, weights differ from the fault-free run) or the in-place target is missed;
130 when interrupted. Every process started is killed (process groups
included; muster's workers run in their own sessions) in `finally`.
"""
import argparse
import os
import random
import re
import select
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

from bench_procs import Interrupted, alive, interrupt_on_signals, log
from torch_refs import COMPAT

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
BIN = os.environ.get("MUSTER_BIN_DIR", os.path.join(ROOT, "build", "bin"))
MUSTER = os.path.join(BIN, "muster")
TRAIN = os.path.join(BIN, "muster-train")
PYTHON = "/usr/bin/python3"  # Debian's interpreter, the one with torch
VICTIM = 1  # the rank the bench kills
RUN_TIMEOUT = 45.0  # seconds for one run, start to exit
TARGET_MS, TARGET_REDONE, TARGET_RESTARTED = 150.0, 1, 1
RUN_DIRS = []  # every run's directory: no process may be left running in one

# The torchrun reference: DDP over gloo, muster-train's default shape (64 features,
# 2 hidden layers of 256, 10 classes, global batch 256, SGD lr 0.05 momentum 0.9).
# Rank 0 saves model + optimizer every --checkpoint-every steps (after the step's
# allreduce), every rank loads the checkpoint at start. Prints like muster-train.
REF_TRAINER = r'''
import argparse, os, time
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, required=True)
p.add_argument("--checkpoint-dir", required=True)
p.add_argument("--checkpoint-every", type=int, required=True)
p.add_argument("--step-sleep-ms", type=int, default=0)
p.add_argument("--features", type=int, default=64)
p.add_argument("--hidden", type=int, default=256)
p.add_argument("--depth", type=int, default=2)
p.add_argument("--classes", type=int, default=10)
p.add_argument("--global-batch", type=int, default=256)
p.add_argument("--seed", type=int, default=1)
a = p.parse_args()

dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()
torch.manual_seed(a.seed)
layers, width = [], a.features
for _ in range(a.depth):
    layers += [torch.nn.Linear(width, a.hidden), torch.nn.ReLU()]
    width = a.hidden
model = torch.nn.Sequential(*layers, torch.nn.Linear(width, a.classes))
opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
path = os.path.join(a.checkpoint_dir, "ckpt.pt")
start = 0
if os.path.exists(path):
    state = torch.load(path)
    model.load_state_dict(state["model"])
    opt.load_state_dict(state["opt"])
    start = state["step"]
    if rank == 0:
        print(f"resumed from step {start} of {a.steps} (checkpoint written at world size {world})",
              flush=True)
ddp = DistributedDataParallel(model)
teacher = torch.randn(a.features, a.classes, generator=torch.Generator().manual_seed(a.seed))
per = a.global_batch // world
for step in range(start + 1, a.steps + 1):
    x = torch.randn(a.global_batch, a.features,
                    generator=torch.Generator().manual_seed(a.seed * 1000003 + step))
    y = (x @ teacher).argmax(dim=1)
    xb, yb = x[rank * per:(rank + 1) * per], y[rank * per:(rank + 1) * per]
    out = ddp(xb)
    loss = torch.nn.functional.cross_entropy(out, yb)
    opt.zero_grad()
    loss.backward()
    opt.step()
    stats = torch.stack([loss.detach() * len(yb), (out.argmax(1) == yb).sum().float(),
                         torch.tensor(float(len(yb)))])
    dist.all_reduce(stats)
    if rank == 0:
        print(f"step={step} loss={float(stats[0] / stats[2]):.6f} "
              f"accuracy={float(stats[1] / stats[2]):.4f}", flush=True)
        if a.checkpoint_every and step % a.checkpoint_every == 0:
            torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "step": step},
                       path + ".tmp")
            os.replace(path + ".tmp", path)
    if a.step_sleep_ms:
        time.sleep(a.step_sleep_ms / 1000)
dist.destroy_process_group()
'''

STEP_RE = re.compile(r"^step=(\d+) ")
RECOVERED_RE = re.compile(r"^recovered in place at step (\d+) of \d+")
RESUMED_RE = re.compile(r"^resumed from step (\d+) of \d+")
PREFIX_RE = re.compile(r"^\[rank(\d+)\]: ")
TOTAL_MS_RE = re.compile(r"event=in_place_recovered .*total_ms=([0-9.]+)")
JOIN_RE = re.compile(r"event=in_place_join .*restarted=(\d+)")

LABELS = {"in-place": "muster --recovery in-place", "restart": "muster --recovery restart (ckpt)",
          "torchrun": "torchrun 1.13 (ckpt)"}


class RunFailed(Exception):
    pass


# ---- processes --------------------------------------------------------------------------

def children(pid):
    found = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return found
    for task in tasks:
        try:
            with open(f"/proc/{pid}/task/{task}/children") as f:
                found += [int(c) for c in f.read().split()]
        except OSError:
            pass
    return found


def descendants(pid):
    result, todo = [], [pid]
    while todo:
        for c in children(todo.pop()):
            if c not in result:
                result.append(c)
                todo.append(c)
    return result


def env_rank(pid):
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            for item in f.read().split(b"\0"):
                if item.startswith(b"RANK="):
                    return int(item[5:])
    except (OSError, ValueError):
        pass
    return None


def workers(launcher_pid, nproc, timeout=2.0):
    """{rank: pid} of the launcher's live worker children; waits until all nproc are there."""
    deadline = time.monotonic() + timeout
    while True:
        found = {}
        for c in children(launcher_pid):
            rank = env_rank(c)
            if rank is not None and alive(c):
                found[rank] = c
        if len(found) == nproc or time.monotonic() > deadline:
            return found
        time.sleep(0.001)


def kill_pid_and_group(pid):
    for fn in (lambda: os.killpg(pid, signal.SIGKILL), lambda: os.kill(pid, signal.SIGKILL)):
        try:
            fn()
        except (ProcessLookupError, PermissionError):
            pass


def belongs_to(pid, run_dir):
    """pid still runs a command of this run (its command line names run_dir): not a reused pid."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return run_dir.encode() in f.read()
    except OSError:
        return False


def cleanup(proc, known_pids, run_dir):
    """SIGKILLs the launcher, its descendants, their process groups, and every worker pid
    this run saw that still runs one of its commands."""
    if proc is None:
        return
    doomed = descendants(proc.pid)
    kill_pid_and_group(proc.pid)
    for pid in doomed:
        kill_pid_and_group(pid)
    for pid in known_pids:
        if belongs_to(pid, run_dir):
            kill_pid_and_group(pid)
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        pass


# ---- one run ------------------------------------------------------------------------------

def command(variant, args, run_dir, out_file, inject_free=True):
    train_flags = ["--backend", "gloo", "--steps", str(args.steps), "--step-sleep-ms",
                   str(args.step_sleep_ms), "--log-every", "1", "--out", out_file]
    if variant in ("in-place", "restart", "fault-free"):
        recovery = "in-place" if variant == "in-place" else "restart"
        cmd = [MUSTER, "--nproc-per-node", str(args.nproc), "--max-restarts", "1",
               "--recovery", recovery, "--no-python", TRAIN] + train_flags
        if variant == "restart":
            cmd += ["--checkpoint-dir", os.path.join(run_dir, "ckpt"),
                    "--checkpoint-every", str(args.checkpoint_every)]
        return cmd
    trainer = os.path.join(run_dir, "ref_trainer.py")
    with open(trainer, "w") as f:
        f.write(REF_TRAINER)
    os.makedirs(os.path.join(run_dir, "ckpt"))
    return [PYTHON, COMPAT, "--standalone", "--nproc_per_node", str(args.nproc),
            "--max_restarts", "1", "--monitor_interval", "0.1", trainer,
            "--steps", str(args.steps), "--step-sleep-ms", str(args.step_sleep_ms),
            "--checkpoint-dir", os.path.join(run_dir, "ckpt"),
            "--checkpoint-every", str(args.checkpoint_every)]


def base_env():
    env = dict(os.environ)
    for key in list(env):
        if key.startswith("PET_") or key in ("MUSTER_INJECT", "MUSTER_INJECT_SEED",
                                             "CUDA_VISIBLE_DEVICES", "OMP_NUM_THREADS"):
            del env[key]
    env["MUSTER_PYTHON"] = PYTHON
    env.setdefault("MUSTER_LOG_LEVEL", "info")  # the agents' event lines are read
    return env


def one_run(variant, args, reference_weights=None, tag=""):
    """Runs one job; SIGKILLs rank 1 after rank 0 printed step --kill-step unless variant is
    "fault-free". Returns a dict of measurements (and "weights" for the fault-free run)."""
    run_dir = tempfile.mkdtemp(prefix=f"muster-bench-inplace-{variant}-")
    RUN_DIRS.append(run_dir)
    kill_t = None
    out_file = os.path.join(run_dir, "weights.bin")
    err_path = os.path.join(run_dir, "launcher.err")
    proc, known = None, set()
    lines = []  # (t, rank or None, text), every stdout line
    try:
        cmd = command(variant, args, run_dir, out_file)
        try:
            with open(err_path, "w") as err:
                proc = subprocess.Popen(cmd, env=base_env(), cwd=run_dir, stdin=subprocess.DEVNULL,
                                        stdout=subprocess.PIPE, stderr=err, bufsize=0,
                                        start_new_session=True)
        except OSError as e:
            raise RunFailed(f"cannot start {cmd[0]}: {e}")
        fd = proc.stdout.fileno()
        fault = variant != "fault-free"
        before = after = None  # {rank: pid}
        boundary = None  # (t, step the job went on from) once the recovered/resumed line came
        first_after = None  # (t, step)
        caught_up = None  # t of the first step past last_before_kill after the recovery
        last_before_kill = 0  # highest step rank 0 printed before the kill
        last_before_recovery = 0  # ... before the recovered/resumed line
        last_step = 0  # the last step rank 0 printed
        steps_before = []  # arrival times of step lines before the kill
        buf = b""
        deadline = time.monotonic() + RUN_TIMEOUT
        eof = False
        while not eof:
            left = deadline - time.monotonic()
            if left <= 0:
                raise RunFailed(f"no exit within {RUN_TIMEOUT:.0f} s")
            ready, _, _ = select.select([fd], [], [], min(left, 1.0))
            if not ready:
                continue
            chunk = os.read(fd, 65536)
            t = time.monotonic()
            if not chunk:
                eof = True
                chunk = b"\n" if buf else b""
            buf += chunk
            *complete, buf = buf.split(b"\n")
            for raw in complete:
                text = raw.decode(errors="replace")
                m = PREFIX_RE.match(text)
                rank = int(m.group(1)) if m else None
                if m:
                    text = text[m.end():]
                lines.append((t, rank, text))
                if rank not in (None, 0):
                    continue
                sm = STEP_RE.match(text)
                rm = RECOVERED_RE.match(text) or RESUMED_RE.match(text)
                if kill_t is not None and boundary is None:
                    if rm:
                        boundary = (t, int(rm.group(1)))
                        continue
                    if sm and int(sm.group(1)) <= last_before_recovery:
                        # started over without a recovered/resumed line: from step 0
                        boundary = (t, int(sm.group(1)) - 1)
                if not sm:
                    continue
                step = int(sm.group(1))
                last_step = step
                if kill_t is None:
                    last_before_kill = max(last_before_kill, step)
                    steps_before.append(t)
                if boundary is None:
                    last_before_recovery = max(last_before_recovery, step)
                else:
                    if first_after is None:
                        first_after = (t, step)
                        after = workers(proc.pid, args.nproc)
                        known.update(after.values())
                    if caught_up is None and step > last_before_kill:
                        caught_up = t
                if fault and kill_t is None and step == args.kill_step:
                    before = workers(proc.pid, args.nproc)
                    known.update(before.values())
                    if len(before) != args.nproc or VICTIM not in before:
                        raise RunFailed(f"found workers {before}, expected ranks 0..{args.nproc - 1}")
                    kill_t = time.monotonic()
                    os.kill(before[VICTIM], signal.SIGKILL)
        try:
            rc = proc.wait(timeout=max(1.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            raise RunFailed(f"stdout closed but the launcher did not exit within {RUN_TIMEOUT:.0f} s")
        if rc != 0:
            raise RunFailed(f"launcher exited with status {rc}")
        if last_step != args.steps:
            raise RunFailed(f"rank 0's last step was {last_step}, not {args.steps}")
        weights = None
        if variant != "torchrun":
            try:
                with open(out_file, "rb") as f:
                    weights = f.read()
            except OSError as e:
                raise RunFailed(f"no weights file: {e}")
        gaps = [b - a for a, b in zip(steps_before, steps_before[1:])]
        result = {"step_ms": statistics.median(gaps) * 1000 if gaps else None, "weights": weights}
        if not fault:
            return result
        if kill_t is None:
            raise RunFailed(f"rank 0 never printed step {args.kill_step}")
        if boundary is None or first_after is None:
            raise RunFailed("no step after a recovered/resumed line")
        with open(err_path, errors="replace") as f:
            err_text = f.read()
        total = [float(x) for x in TOTAL_MS_RE.findall(err_text)]
        joined = [int(x) for x in JOIN_RE.findall(err_text)]
        ranks = sorted(set(before) | set(after))
        changed = [r for r in ranks if before.get(r) != after.get(r)]
        old_alive = [r for r in changed if r in before and alive(before[r])]
        result.update({
            "ms": (first_after[0] - kill_t) * 1000,
            "caught_up_ms": None if caught_up is None else (caught_up - kill_t) * 1000,
            "redone": last_before_recovery - boundary[1],
            "last_before_kill": last_before_kill,
            "went_on_from": boundary[1],
            "first_step_after": first_after[1],
            "restarted": len(changed),
            "survivors_kept": all(before[r] == after.get(r) for r in before if r != VICTIM),
            "old_pids_alive": old_alive,
            "agent_total_ms": total[0] if total else None,
            "agent_restarted": joined[0] if joined else None,
            "weights_equal": None if weights is None else weights == reference_weights,
        })
        if variant != "torchrun" and not result["weights_equal"]:
            raise RunFailed(f"final weights differ from the fault-free run's "
                            f"({len(weights)} vs {len(reference_weights)} bytes)")
        return result
    except RunFailed as e:
        tail = "\n".join(f"    [rank{r}]: {x}" if r is not None else f"    {x}" for _, r, x in lines[-15:])
        try:
            with open(err_path, errors="replace") as f:
                err_tail = "".join("    " + x for x in f.readlines()[-15:])
        except OSError:
            err_tail = ""
        raise RunFailed(f"{LABELS.get(variant, variant)}: {e}\n  stdout tail:\n{tail}\n"
                        f"  stderr tail:\n{err_tail}") from None
    finally:
        cleanup(proc, known, run_dir)
        if proc is not None and proc.stdout:
            proc.stdout.close()
        if args.keep:
            # stdout with arrival times relative to the kill (or to the first line)
            zero = kill_t if kill_t is not None else (lines[0][0] if lines else 0.0)
            with open(os.path.join(run_dir, "stdout.txt"), "w") as f:
                for t, r, x in lines:
                    f.write(f"{(t - zero) * 1000:+10.1f} ms " + (f"[rank{r}]: " if r is not None else "")
                            + x + "\n")
            os.makedirs(args.keep, exist_ok=True)
            shutil.move(run_dir, os.path.join(args.keep, f"{tag}{variant}"))
        else:
            shutil.rmtree(run_dir, ignore_errors=True)


# ---- elastic faults: two agents on loopback forming one job --------------------------------

ELASTIC_FAULTS = ("agent-kill", "agent-stop", "node-join", "link-down")
ELASTIC_TIMEOUT = 120.0  # seconds for one elastic run, start to the first agent's exit
SECOND_AGENT_EXIT = 30.0  # seconds the second agent may take to exit after the first did
ELASTIC_TARGET_MS = {"agent-kill": 300.0, "node-join": 500.0}
TORCHRUN_ELASTIC = ("torchrun: not measured for elastic faults; "
                    "see docs/benchmarks.md#detection-and-recovery")

WORLD_RE = re.compile(r"^world size (\d+), global batch")
RECOVERED_WS_RE = re.compile(r"^recovered in place at step (\d+) of \d+ "
                             r"\(state from rank (-?\d+), world size (\d+)\)")
AGENT_JOIN_RE = re.compile(r"event=join node=")
NODE_DEAD_RE = re.compile(r"event=node_dead ")
GENERATION_RE = re.compile(r"event=generation gen=(\d+) nodes=\d+ world_size=(\d+)")  # the daemon's
ADMIT_DRAIN_RE = re.compile(r'event=draining .*why="admitting new nodes"')
ADMIT_GEN_RE = re.compile(r'event=generation gen=(\d+) nodes=\d+ world_size=(\d+).*'
                          r'why="admitting new nodes"')
FAULT_TEXT = {"agent-kill": "SIGKILL of the second agent", "agent-stop": "SIGSTOP of the second agent",
              "node-join": "a second agent joining",
              "link-down": "the second node's link set down (its own network namespace)"}
FAULT_SHORT = {"agent-kill": "SIGKILL", "agent-stop": "SIGSTOP", "link-down": "link down"}

_ports_handed_out = set()


def free_port():
    """A port free now, below the kernel's ephemeral range (a port handed out for bind(0)
    or a connect could take it before muster binds it), never the same twice."""
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            low = int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        low = 32768
    for _ in range(1000):
        port = random.randrange(20000, low) if low > 20000 else random.randrange(1024, low)
        if port in _ports_handed_out:
            continue
        with socket.socket() as s:
            try:
                s.bind(("0.0.0.0", port))
            except OSError:
                continue
        _ports_handed_out.add(port)
        return port
    raise RunFailed(f"no free port below the ephemeral range (from {low})")


def in_dir(pid, run_dir):
    """pid's working directory is run_dir (or below): a process a run of this bench started
    (the agents run there, their workers inherit it)."""
    try:
        cwd = os.readlink(f"/proc/{pid}/cwd")
    except OSError:
        return False
    if cwd.endswith(" (deleted)"):
        cwd = cwd[:-len(" (deleted)")]
    return cwd == run_dir or cwd.startswith(run_dir + "/")


def sweep(run_dir):
    """SIGKILLs every process (and its group) running in run_dir; returns their pids."""
    found = []
    for name in os.listdir("/proc"):
        if name.isdigit() and int(name) != os.getpid() and in_dir(int(name), run_dir):
            found.append(int(name))
    for pid in found:
        kill_pid_and_group(pid)
    return found


def leftovers(run_dirs):
    """Live processes whose working directory is one of run_dirs."""
    left = []
    for name in os.listdir("/proc"):
        if name.isdigit() and any(in_dir(int(name), d) for d in run_dirs) and alive(int(name)):
            left.append(int(name))
    return left


class LineReader:
    """Reads pipes unbuffered; stamps each complete line with the time it was read."""

    def __init__(self, named_fds):
        self.names = dict(named_fds)  # fd -> name
        self.bufs = {fd: b"" for fd in self.names}

    @property
    def done(self):
        return not self.names

    def poll(self, timeout):
        """[(t, name, text)] of the lines that arrived within timeout."""
        if not self.names:
            return []
        ready, _, _ = select.select(list(self.names), [], [], max(0.0, timeout))
        got = []
        for fd in ready:
            chunk = os.read(fd, 65536)
            t = time.monotonic()
            name = self.names[fd]
            if not chunk:
                del self.names[fd]
                chunk = b"\n" if self.bufs[fd] else b""
            data = self.bufs[fd] + chunk
            *complete, self.bufs[fd] = data.split(b"\n")
            got += [(t, name, raw.decode(errors="replace")) for raw in complete]
        return got


# ---- link-down: the second node in a network namespace of its own ------------------------

IP = shutil.which("ip") or "/usr/sbin/ip"  # PATH may lack /usr/sbin outside a login shell
NSENTER = shutil.which("nsenter") or "/usr/bin/nsenter"
LINKS = []  # every NodeLink set up: none may be left behind when the bench exits


def link_down_unavailable():
    """Why --fault link-down cannot run here (a namespace and a veth need root), or None."""
    if os.geteuid() != 0:
        return "needs root (it creates a network namespace and a veth pair)"
    for tool in (IP, NSENTER):
        if not os.access(tool, os.X_OK):
            return f"needs {os.path.basename(tool)} ({tool} not found)"
    return None


def ip(*args):
    """Runs `ip ARGS`; RunFailed with its stderr when it fails."""
    try:
        res = subprocess.run([IP] + list(args), capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise RunFailed(f"ip {' '.join(args)}: {e}")
    if res.returncode != 0:
        raise RunFailed(f"ip {' '.join(args)}: {res.stderr.strip()}")
    return res.stdout


class NodeLink:
    """The second node's network: namespace NS joined to the root namespace by one veth
    pair, NS-a (root end, SUBNET.1) and NS-b (inside, SUBNET.2); no bridge, no routing.
    The first agent, its rendezvous and workers stay in the root namespace and reach
    SUBNET.1 locally, so cutting the link leaves them their own address. The names carry
    the bench's pid and a counter, so that concurrent runs never share one; the /24 is one
    no address or route here uses yet."""

    _made = 0

    def __init__(self):
        NodeLink._made += 1
        self.ns = f"mb{os.getpid()}x{NodeLink._made}"  # interface names: at most 15 characters
        self.outer, self.inner = f"{self.ns}a", f"{self.ns}b"
        self.created = []  # ("ns"|"link", name), in creation order
        LINKS.append(self)
        subnet = self._pick_subnet()
        self.first_addr, self.second_addr = f"{subnet}.1", f"{subnet}.2"

    @staticmethod
    def _pick_subnet():
        used = ip("-4", "-o", "addr") + ip("-4", "route", "show", "table", "all")
        for i in range(250):
            subnet = f"10.98.{(os.getpid() + NodeLink._made + i) % 250 + 1}"
            if f"{subnet}." not in used:
                return subnet
        raise RunFailed("no free 10.98.x.0/24 for the second node's link")

    def up(self):
        """Creates the namespace and the veth pair, sets both ends up and waits until the
        namespace reaches the root end's address."""
        ip("netns", "add", self.ns)
        self.created.append(("ns", self.ns))
        ip("link", "add", self.outer, "type", "veth", "peer", "name", self.inner, "netns", self.ns)
        self.created.append(("link", self.outer))
        ip("addr", "add", f"{self.first_addr}/24", "dev", self.outer)
        ip("link", "set", self.outer, "up")
        ip("-n", self.ns, "link", "set", "lo", "up")
        ip("-n", self.ns, "addr", "add", f"{self.second_addr}/24", "dev", self.inner)
        ip("-n", self.ns, "link", "set", self.inner, "up")
        self._wait_reachable()

    def _wait_reachable(self, timeout=10.0):
        """Until a TCP connect from inside the namespace to the root end's address succeeds."""
        with socket.socket() as listener:
            listener.bind((self.first_addr, 0))
            listener.listen(1)
            target = (self.first_addr, listener.getsockname()[1])
            probe = ("import socket, sys, time\n"
                     f"end = time.monotonic() + {timeout}\n"
                     "while time.monotonic() < end:\n"
                     "    try:\n"
                     f"        socket.create_connection({target!r}, 0.2).close(); sys.exit(0)\n"
                     "    except OSError: time.sleep(0.02)\n"
                     "sys.exit(1)\n")
            try:
                res = subprocess.run(self.wrap([PYTHON, "-c", probe]), capture_output=True,
                                     text=True, timeout=timeout + 5)
            except (OSError, subprocess.TimeoutExpired) as e:
                raise RunFailed(f"probing {self.first_addr} from {self.ns}: {e}")
            if res.returncode != 0:
                raise RunFailed(f"{self.ns} cannot reach {self.first_addr}: {res.stderr.strip()}")

    def wrap(self, cmd):
        """cmd run inside the namespace; nsenter execs it, so the pid is cmd's own (and,
        unlike `ip netns exec`, the mount namespace stays the bench's)."""
        return [NSENTER, f"--net=/run/netns/{self.ns}", "--"] + list(cmd)

    def cut(self):
        """The fault: the namespace's end set down. Its processes lose every connection
        silently (no RST); the root end only loses its carrier, so the first node keeps its
        address (local traffic does not use the link)."""
        ip("-n", self.ns, "link", "set", self.inner, "down")

    def pids(self):
        """Processes inside the namespace."""
        try:
            return [int(p) for p in ip("netns", "pids", self.ns).split()]
        except (RunFailed, ValueError):
            return []

    def teardown(self):
        """SIGKILLs, by pid, every process left inside the namespace, then deletes the veth
        pair and the namespace. Returns what could not be removed (empty when all is gone)."""
        problems = []
        if any(kind == "ns" for kind, _ in self.created):
            deadline = time.monotonic() + 5
            while True:
                left = [p for p in self.pids() if alive(p)]
                if not left:
                    break
                if time.monotonic() > deadline:
                    problems.append(f"processes still inside {self.ns}: {left}")
                    break
                for pid in left:
                    kill_pid_and_group(pid)
                time.sleep(0.02)
        # the veth first (deleting one end deletes its peer), then the namespace; what
        # could not be deleted shows in leftovers()
        for kind, name in reversed(self.created):
            try:
                subprocess.run([IP, "link", "del", name] if kind == "link" else
                               [IP, "netns", "del", name], capture_output=True, timeout=10)
            except (OSError, subprocess.TimeoutExpired):
                pass
        self.created = []
        return problems + self.leftovers()

    def leftovers(self):
        """This link's namespace or interfaces still present."""
        try:
            names = ip("netns", "list") + ip("-o", "link")
        except RunFailed as e:
            return [str(e)]
        return [x.strip() for x in names.splitlines() if re.search(rf"\b{self.ns}[ab]?\b", x)]


def elastic_agent_cmd(variant, args, port, run_id, run_dir, out_file, host="127.0.0.1",
                      local_addr=None):
    """One agent of the elastic job; the rendezvous at host:port (served by the agent that
    holds host), advertising local_addr when given (link-down: each node its own address)."""
    recovery = "in-place" if variant == "in-place" else "restart"
    cmd = [MUSTER, "--nnodes", "1:2", "--nproc-per-node", str(args.nproc), "--rdzv-backend", "c10d",
           "--rdzv-endpoint", f"{host}:{port}", "--rdzv-id", run_id, "--max-restarts", "3",
           "--recovery", recovery]
    if local_addr:
        cmd += ["--local-addr", local_addr]
    cmd += ["--no-python", TRAIN, "--backend", "gloo", "--steps", str(args.steps),
            "--step-sleep-ms", str(args.step_sleep_ms), "--log-every", "1"]
    if out_file:
        cmd += ["--out", out_file]
    if variant == "restart":
        cmd += ["--checkpoint-dir", os.path.join(run_dir, "ckpt"),
                "--checkpoint-every", str(args.checkpoint_every)]
    return cmd


def elastic_fault_free(args):
    """One agent, --nproc workers, the same training flags: the reference weights."""
    run_dir = tempfile.mkdtemp(prefix="muster-bench-elastic-fault-free-")
    RUN_DIRS.append(run_dir)
    out_file = os.path.join(run_dir, "weights.bin")
    proc = None
    try:
        cmd = [MUSTER, "--nproc-per-node", str(args.nproc), "--no-python", TRAIN, "--backend", "gloo",
               "--steps", str(args.steps), "--step-sleep-ms", str(args.step_sleep_ms),
               "--log-every", "1", "--out", out_file]
        env = base_env()
        env["TMPDIR"] = run_dir
        with open(os.path.join(run_dir, "launcher.out"), "w") as out, \
                open(os.path.join(run_dir, "launcher.err"), "w") as err:
            proc = subprocess.Popen(cmd, env=env, cwd=run_dir, stdin=subprocess.DEVNULL, stdout=out,
                                    stderr=err, start_new_session=True)
        try:
            rc = proc.wait(timeout=ELASTIC_TIMEOUT)
        except subprocess.TimeoutExpired:
            raise RunFailed(f"no exit within {ELASTIC_TIMEOUT:.0f} s")
        if rc != 0:
            with open(os.path.join(run_dir, "launcher.err"), errors="replace") as f:
                raise RunFailed(f"exit status {rc}:\n" + "".join(f.readlines()[-15:]))
        with open(os.path.join(run_dir, "launcher.out"), errors="replace") as f:
            times = [float(m.group(1)) for m in
                     re.finditer(r"step time median ([0-9.]+) ms", f.read())]
        try:
            with open(out_file, "rb") as f:
                return {"weights": f.read(), "step_ms": times[0] if times else None}
        except OSError as e:
            raise RunFailed(f"no weights file: {e}")
    finally:
        if proc is not None:
            kill_pid_and_group(proc.pid)
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
        sweep(run_dir)
        if args.keep:
            os.makedirs(args.keep, exist_ok=True)
            shutil.move(run_dir, os.path.join(args.keep, "fault-free"))
        else:
            shutil.rmtree(run_dir, ignore_errors=True)


def elastic_run(variant, args, reference_weights, tag=""):
    """One two-agent job under args.fault (see the module's doc). Returns the measurements."""
    fault = args.fault
    run_dir = tempfile.mkdtemp(prefix=f"muster-bench-{fault}-{variant}-")
    RUN_DIRS.append(run_dir)
    out_file = os.path.join(run_dir, "weights.bin")
    err_path = os.path.join(run_dir, "agent1.err")
    port = free_port()
    run_id = f"bench-{os.getpid()}-{tag}{variant}".rstrip("-")
    env = base_env()
    env["TMPDIR"] = run_dir  # the agents' run directories, a killed one's included
    a1 = a2 = None
    a2_files = []
    err_file = None
    known = set()
    link = None  # link-down: the second node's network
    lines = []  # (t, "out"/"err", rank or None, text): the first agent's output
    zero = None
    fault_t = None
    stopped = False
    try:
        def start(cmd, stdout, stderr):
            try:
                return subprocess.Popen(cmd, env=env, cwd=run_dir, stdin=subprocess.DEVNULL,
                                        stdout=stdout, stderr=stderr, bufsize=0,
                                        start_new_session=True)
            except OSError as e:
                raise RunFailed(f"cannot start {cmd[0]}: {e}")

        if fault == "link-down":
            link = NodeLink()
            link.up()
        # link-down: the rendezvous on the root end's address, the second node behind the link
        host = link.first_addr if link else "127.0.0.1"

        def start_second():
            out = open(os.path.join(run_dir, "agent2.out"), "w")
            err = open(os.path.join(run_dir, "agent2.err"), "w")
            a2_files.extend([out, err])
            if link is None:
                return start(elastic_agent_cmd(variant, args, port, run_id, run_dir, None), out, err)
            return start(link.wrap(elastic_agent_cmd(variant, args, port, run_id, run_dir, None,
                                                     host, link.second_addr)), out, err)

        a1 = start(elastic_agent_cmd(variant, args, port, run_id, run_dir, out_file, host,
                                     link.first_addr if link else None),
                   subprocess.PIPE, subprocess.PIPE)
        reader = LineReader({a1.stdout.fileno(): "out", a1.stderr.fileno(): "err"})
        err_file = open(err_path, "w")
        a2_started = None  # t
        world = None  # world size of rank 0's current generation
        before = after = None  # {rank: pid} on the first node
        second_workers = {}  # {rank: pid} on the second node before the fault
        boundary = None  # (t, step the job went on from)
        boundary_world = None
        live_source = None
        first_after = None  # (t, step)
        detected = None  # t of the daemon's node_dead line (agent faults)
        generation_after = None  # t of the first event=generation line after the fault
        admit_drain = admit = None  # t (node-join)
        admit_world = None
        cont_t = None
        generations_after = 0  # event=generation lines after the fault (or the joiner's start)
        last_before_fault = 0
        last_before_recovery = 0
        last_step = 0
        steps_before = []
        deadline = time.monotonic() + ELASTIC_TIMEOUT
        while not reader.done:
            left = deadline - time.monotonic()
            if left <= 0:
                raise RunFailed(f"the first agent did not exit within {ELASTIC_TIMEOUT:.0f} s")
            for t, src, raw in reader.poll(min(left, 1.0)):
                if zero is None:
                    zero = t
                if src == "err":
                    err_file.write(raw + "\n")
                    lines.append((t, src, None, raw))
                    if a2 is None and fault != "node-join" and AGENT_JOIN_RE.search(raw):
                        # The first agent serves the rendezvous and joined it: the second
                        # joins now, and the round closes at MAX (2) nodes, one generation.
                        a2 = start_second()
                        a2_started = t
                    if GENERATION_RE.search(raw) and (fault_t is not None or
                                                      (fault == "node-join" and a2 is not None)):
                        generations_after += 1
                    if fault_t is not None and fault != "node-join":
                        if detected is None and NODE_DEAD_RE.search(raw):
                            detected = t
                        if generation_after is None and GENERATION_RE.search(raw):
                            generation_after = t
                    if fault == "node-join" and a2 is not None:
                        if admit_drain is None and ADMIT_DRAIN_RE.search(raw):
                            admit_drain = t
                        m = ADMIT_GEN_RE.search(raw)
                        if admit is None and m:
                            admit, admit_world = t, int(m.group(2))
                            if admit_drain is None:
                                admit_drain = t  # nothing was running to drain
                    continue
                m = PREFIX_RE.match(raw)
                rank = int(m.group(1)) if m else None
                text = raw[m.end():] if m else raw
                lines.append((t, src, rank, text))
                if rank not in (None, 0):
                    continue
                wm = WORLD_RE.match(text)
                rm = RECOVERED_WS_RE.match(text)
                if wm:
                    world = int(wm.group(1))
                if rm:
                    world = int(rm.group(3))
                sm = STEP_RE.match(text)
                started_fault = fault_t is not None if fault != "node-join" else a2 is not None
                if started_fault and boundary is None:
                    rs = RESUMED_RE.match(text)
                    if rm or rs:
                        boundary = (t, int((rm or rs).group(1)))
                        boundary_world = world
                        live_source = int(rm.group(2)) if rm else None
                        continue
                    if sm and int(sm.group(1)) <= last_before_recovery:
                        # started over without a recovered/resumed line: from step 0
                        boundary = (t, int(sm.group(1)) - 1)
                        boundary_world = world
                if not sm:
                    continue
                step = int(sm.group(1))
                last_step = step
                if not started_fault:
                    last_before_fault = max(last_before_fault, step)
                    steps_before.append(t)
                if boundary is None:
                    last_before_recovery = max(last_before_recovery, step)
                elif first_after is None:
                    first_after = (t, step)
                    after = workers(a1.pid, args.nproc)
                    known.update(after.values())
                    if fault == "agent-stop" and stopped:
                        os.kill(a2.pid, signal.SIGCONT)
                        stopped = False
                        cont_t = time.monotonic()
                if started_fault or step < args.kill_step:
                    continue
                if fault == "node-join":
                    before = workers(a1.pid, args.nproc)
                    known.update(before.values())
                    if len(before) != args.nproc:
                        raise RunFailed(f"found the first node's workers {before}, "
                                        f"expected {args.nproc}")
                    a2 = start_second()
                    a2_started = time.monotonic()
                elif a2 is not None and world == 2 * args.nproc:
                    second_workers = workers(a2.pid, args.nproc, timeout=0.5)
                    if len(second_workers) != args.nproc:
                        continue  # not yet: the next step
                    before = workers(a1.pid, args.nproc)
                    known.update(before.values())
                    known.update(second_workers.values())
                    if len(before) != args.nproc:
                        raise RunFailed(f"found the first node's workers {before}, "
                                        f"expected {args.nproc}")
                    if fault == "link-down":
                        link.cut()
                        fault_t = time.monotonic()  # `ip` returns right after the link is down
                    else:
                        fault_t = time.monotonic()
                        if fault == "agent-kill":
                            os.kill(a2.pid, signal.SIGKILL)
                        else:
                            os.kill(a2.pid, signal.SIGSTOP)
                            stopped = True
        try:
            rc = a1.wait(timeout=max(1.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            raise RunFailed("the first agent's output closed but it did not exit")
        a2_rc = None
        if a2 is not None:
            if stopped:  # never recovered: let it go on so that it can be reaped
                os.kill(a2.pid, signal.SIGCONT)
                stopped = False
            try:
                # Cut off, the second agent cannot learn that the job ended: not waited for.
                a2_rc = a2.wait(timeout=0 if fault == "link-down" else SECOND_AGENT_EXIT)
            except subprocess.TimeoutExpired:
                a2_rc = "still running (killed)"
        if rc != 0:
            raise RunFailed(f"the first agent exited with status {rc}")
        if fault == "node-join" and a2_rc != 0:
            raise RunFailed(f"the second agent exited with status {a2_rc}")
        if last_step != args.steps:
            raise RunFailed(f"rank 0's last step was {last_step}, not {args.steps}")
        try:
            with open(out_file, "rb") as f:
                weights = f.read()
        except OSError as e:
            raise RunFailed(f"no weights file: {e}")
        if fault == "node-join":
            if a2 is None:
                raise RunFailed(f"rank 0 never printed step {args.kill_step}")
            if admit is None:
                raise RunFailed("no generation 'admitting new nodes' before the end "
                                "(raise --steps)")
        elif fault_t is None:
            raise RunFailed(f"no step >= {args.kill_step} at world size {2 * args.nproc} "
                            f"with the second node's workers running")
        if boundary is None or first_after is None:
            raise RunFailed("no step after a recovered/resumed line")
        want_world = 2 * args.nproc if fault == "node-join" else args.nproc
        if boundary_world != want_world:
            raise RunFailed(f"the job went on at world size {boundary_world}, not {want_world}")
        err_text = "\n".join(x for _, s, _, x in lines if s == "err")
        total = [float(x) for x in TOTAL_MS_RE.findall(err_text)]
        joined = [int(x) for x in JOIN_RE.findall(err_text)]
        start = admit if fault == "node-join" else fault_t
        gaps = [b - a for a, b in zip(steps_before, steps_before[1:])]
        result = {
            "step_ms": statistics.median(gaps) * 1000 if gaps else None,
            "ms": (first_after[0] - start) * 1000,
            "redone": last_before_recovery - boundary[1],
            "last_before_fault": last_before_fault,
            "last_before_recovery": last_before_recovery,
            "went_on_from": boundary[1],
            "first_step_after": first_after[1],
            "live_source": live_source,
            "restarted": len(set(after.values()) - set(before.values())),
            "survivors_kept": len(after) == args.nproc and set(after.values()) == set(before.values()),
            "agent_total_ms": total[0] if total else None,
            "agent_restarted": joined[0] if joined else None,
            "weights_equal": weights == reference_weights,
            "second_rc": a2_rc,
            "generations_after": generations_after,
        }
        if fault == "node-join":
            result.update({
                "from_drain_ms": (first_after[0] - admit_drain) * 1000,
                "admitted_after_ms": (admit - a2_started) * 1000,
                "admit_world": admit_world,
            })
        else:
            result.update({
                "detected_ms": None if detected is None else (detected - fault_t) * 1000,
                "generation_ms": None if generation_after is None else (generation_after - fault_t) * 1000,
                # agent-kill: they die with their agent (PR_SET_PDEATHSIG); link-down: the cut
                # agent fences them by itself; by the first agent's exit here
                "second_workers_gone": (None if fault == "agent-stop" else
                                        not any(alive(p) for p in second_workers.values())),
                "cont_after_ms": None if cont_t is None else (cont_t - fault_t) * 1000,
            })
        if not result["weights_equal"]:
            raise RunFailed(f"final weights differ from the fault-free run's "
                            f"({len(weights)} vs {len(reference_weights)} bytes)")
        return result
    except RunFailed as e:
        tail = "\n".join(f"    [rank{r}]: {x}" if r is not None else f"    {x}"
                         for _, s, r, x in [l for l in lines if l[1] == "out"][-15:])
        err_tail = "\n".join(f"    {x}" for _, s, _, x in [l for l in lines if l[1] == "err"][-15:])
        tail2 = ""
        for name in ("agent2.out", "agent2.err"):
            try:
                with open(os.path.join(run_dir, name), errors="replace") as f:
                    tail2 += f"  {name} tail:\n" + "".join("    " + x for x in f.readlines()[-8:])
            except OSError:
                pass
        raise RunFailed(f"{LABELS.get(variant, variant)}: {e}\n  first agent's stdout tail:\n{tail}\n"
                        f"  first agent's stderr tail:\n{err_tail}\n{tail2}") from None
    finally:
        for p in (a2, a1):
            if p is not None:
                try:
                    os.kill(p.pid, signal.SIGCONT)  # a stopped agent cannot be reaped otherwise
                except (ProcessLookupError, PermissionError):
                    pass
        for p in (a2, a1):
            # Only an agent not yet reaped is signalled by pid (a reaped one's pid may be
            # another process's by now); what it left behind runs in run_dir: swept.
            if p is not None and p.poll() is None:
                doomed = descendants(p.pid)
                kill_pid_and_group(p.pid)
                for pid in doomed:
                    if in_dir(pid, run_dir):
                        kill_pid_and_group(pid)
                try:
                    p.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    pass
        for pid in known:
            if in_dir(pid, run_dir) or belongs_to(pid, run_dir):
                kill_pid_and_group(pid)
        sweep(run_dir)
        if link is not None:
            # the lost node: whatever still runs inside its namespace, the veth, the namespace
            for problem in link.teardown():
                log(f"warning: {fault} cleanup: {problem}")
        for p in (a1,):
            if p is not None:
                for s in (p.stdout, p.stderr):
                    if s:
                        s.close()
        for f in a2_files + ([err_file] if err_file else []):
            f.close()
        if args.keep:
            # the first agent's output with arrival times relative to the fault
            base = fault_t if fault_t is not None else (zero or 0.0)
            with open(os.path.join(run_dir, "agent1.txt"), "w") as f:
                for t, s, r, x in lines:
                    f.write(f"{(t - base) * 1000:+10.1f} ms {s} " +
                            (f"[rank{r}]: " if r is not None else "") + x + "\n")
            os.makedirs(args.keep, exist_ok=True)
            shutil.move(run_dir, os.path.join(args.keep, f"{tag}{variant}"))
        else:
            shutil.rmtree(run_dir, ignore_errors=True)


# ---- report -------------------------------------------------------------------------------

def startup_ms(runs=5):
    """Median wall time of `muster-train --help`: exec, loading its libraries, exit. A worker
    started again pays at least this before it can join."""
    times = []
    for _ in range(runs):
        t = time.monotonic()
        try:
            subprocess.run([TRAIN, "--help"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                           check=True, timeout=30)
        except (OSError, subprocess.SubprocessError):
            return None
        times.append((time.monotonic() - t) * 1000)
    return statistics.median(times)


def med_range(values, fmt="{:.0f}", unit=""):
    if not values:
        return "-", "-"
    return (fmt.format(statistics.median(values)) + unit,
            f"{fmt.format(min(values))}-{fmt.format(max(values))}{unit}")


def run_alternated(args, variants, run, describe):
    """Runs every variant args.runs times, alternated: run(variant, tag) returns
    a run's result or raises RunFailed; describe(result) is its log line.
    Returns ({variant: [result]}, [failure message])."""
    results = {v: [] for v in variants}
    failures = []
    for i in range(args.runs):
        for v in variants:
            try:
                r = run(v, f"run{i + 1}-")
            except RunFailed as e:
                failures.append(str(e))
                log(f"run {i + 1} {LABELS[v]}: FAILED: {e}")
                continue
            results[v].append(r)
            log(f"run {i + 1} {LABELS[v]}: {describe(r)}")
    return results, failures


def elastic_main(args):
    """--fault agent-kill, agent-stop, node-join or link-down: in-place vs restart, alternated."""
    fault = args.fault
    variants = ["in-place", "restart"]
    t0 = time.monotonic()
    try:
        try:
            ref = elastic_fault_free(args)
        except RunFailed as e:
            log(f"fault-free run failed: {e}")
            return 1
        step = "-" if ref["step_ms"] is None else f"{ref['step_ms']:.1f} ms"
        log(f"fault-free run (one agent, {args.nproc} workers): {args.steps} steps, step time median "
            f"{step}, {len(ref['weights'])} bytes of weights")
        def describe(r):
            extra = ""
            if r["agent_total_ms"] is not None:
                extra += f", muster total_ms={r['agent_total_ms']:.0f}"
            if r["agent_restarted"] is not None:
                extra += f", in_place_join restarted={r['agent_restarted']}"
            src = "" if r["live_source"] is None else f" (state from rank {r['live_source']})"
            if fault == "node-join":
                return (f"joiner started -> admitted {r['admitted_after_ms']:.0f} ms; "
                    f"world size {2 * args.nproc} stepping {r['ms']:.0f} ms after the admission "
                    f"({r['from_drain_ms']:.0f} ms after the drain began); last step before "
                    f"{r['last_before_recovery']}, went on from {r['went_on_from']}{src} "
                    f"(redone {r['redone']}), first step after {r['first_step_after']}; first "
                    f"node's processes restarted {r['restarted']}, kept pids {r['survivors_kept']}; "
                    f"generations after the join {r['generations_after']}; second agent exit "
                    f"{r['second_rc']}{extra}; weights equal {r['weights_equal']}")
            else:
                det = "-" if r["detected_ms"] is None else f"{r['detected_ms']:.0f}"
                gen = "-" if r["generation_ms"] is None else f"{r['generation_ms']:.0f}"
                gone = ("" if r["second_workers_gone"] is None
                        else f", its workers gone {r['second_workers_gone']}")
                cont = ("" if r["cont_after_ms"] is None
                        else f", SIGCONT at {r['cont_after_ms']:.0f} ms")
                return (f"node_dead after {det} ms, new generation after "
                    f"{gen} ms, stepping again after {r['ms']:.0f} ms; last step before the "
                    f"fault {r['last_before_fault']}, before the recovery "
                    f"{r['last_before_recovery']}, went on from {r['went_on_from']}{src} "
                    f"(redone {r['redone']}), first step after {r['first_step_after']}; "
                    f"survivors' processes restarted {r['restarted']}, kept pids "
                    f"{r['survivors_kept']}; generations after the fault "
                    f"{r['generations_after']}; second agent exit {r['second_rc']}{gone}{cont}"
                    f"{extra}; weights equal {r['weights_equal']}")

        results, failures = run_alternated(
            args, variants, lambda v, tag: elastic_run(v, args, ref["weights"], tag=tag), describe)
    except Interrupted as e:
        log(f"interrupted ({e})")
        return 130

    world = 2 * args.nproc
    step = "-" if ref["step_ms"] is None else f"{ref['step_ms']:.1f} ms"
    if fault == "node-join":
        what = (f"a second agent joining (started once rank 0 printed step {args.kill_step}; the "
                f"daemon admits it after its last call)")
    else:
        what = (f"{FAULT_TEXT[fault]} once rank 0 printed step {args.kill_step} or later at world "
                f"size {world}")
    where = ("two agents, the second in its own network namespace behind a veth pair"
             if fault == "link-down" else "two agents on loopback")
    print(f"{what}, {args.steps} steps; {where}, one job (--nnodes 1:2, {args.nproc} "
          f"workers each, c10d rendezvous served by the first agent, --max-restarts 3), CPU/Gloo, step "
          f"sleep {args.step_sleep_ms} ms (fault-free step time, one agent: {step}), checkpoint every "
          f"{args.checkpoint_every} steps (restart variant), {args.runs} alternated runs, "
          f"{time.monotonic() - t0:.0f} s")
    if fault == "node-join":
        print(f"| variant | joiner stepping (admission -> rank 0's first step at world size {world}): "
              f"median | min-max | vs in-place | from the drain's start: median (min-max) | joiner "
              f"started -> admitted: median (min-max) | steps redone: median (min-max) | first node's "
              f"processes restarted: median (min-max) | first node kept pids | final weights == "
              f"fault-free |")
        print("|---|---:|---:|---:|---:|---:|---:|---:|---|---|")
    else:
        print(f"| variant | every rank stepping again ({FAULT_SHORT[fault]} "
              f"-> rank 0's first step after the recovery): median | min-max | vs in-place | node "
              f"declared dead (daemon's node_dead line): median (min-max) | steps redone: median "
              f"(min-max) | surviving node's processes restarted: median (min-max) | survivors kept "
              f"pids | final weights == fault-free |")
        print("|---|---:|---:|---:|---:|---:|---:|---|---|")
    base = statistics.median([r["ms"] for r in results["in-place"]]) if results["in-place"] else None
    for v in variants:
        rs = results[v]
        n_failed = args.runs - len(rs)
        if not rs:
            print(f"| {LABELS[v]} | all {args.runs} runs failed |" + " |" * (8 if fault == "node-join" else 7))
            continue
        ms = [r["ms"] for r in rs]
        med, rng = med_range(ms, unit=" ms")
        ratio = f"{statistics.median(ms) / base:.1f}x" if base else "-"
        rd_med, rd_rng = med_range([r["redone"] for r in rs])
        rs_med, rs_rng = med_range([r["restarted"] for r in rs])
        kept = (f"{sum(r['survivors_kept'] for r in rs)}/{len(rs)}" if v == "in-place"
                else f"{sum(r['survivors_kept'] for r in rs)}/{len(rs)} (not expected)")
        weights = f"{sum(bool(r['weights_equal']) for r in rs)}/{len(rs)}"
        failed = f" ({n_failed} failed)" if n_failed else ""
        if fault == "node-join":
            dr_med, dr_rng = med_range([r["from_drain_ms"] for r in rs], unit=" ms")
            ad_med, ad_rng = med_range([r["admitted_after_ms"] for r in rs], unit=" ms")
            print(f"| {LABELS[v]}{failed} | {med} | {rng} | {ratio} | {dr_med} ({dr_rng}) | "
                  f"{ad_med} ({ad_rng}) | {rd_med} ({rd_rng}) | {rs_med} ({rs_rng}) | {kept} | {weights} |")
        else:
            dt_med, dt_rng = med_range([r["detected_ms"] for r in rs if r["detected_ms"] is not None],
                                       unit=" ms")
            print(f"| {LABELS[v]}{failed} | {med} | {rng} | {ratio} | {dt_med} ({dt_rng}) | "
                  f"{rd_med} ({rd_rng}) | {rs_med} ({rs_rng}) | {kept} | {weights} |")
    agent = [r["agent_total_ms"] for r in results["in-place"] if r["agent_total_ms"] is not None]
    if agent:
        med, rng = med_range(agent, unit=" ms")
        print(f"muster's own event=in_place_recovered total_ms on the first agent (from its pausing "
              f"the workers to every worker joined; without the detection and the first step): "
              f"median {med} ({rng})")
    print(TORCHRUN_ELASTIC)
    rs = results["in-place"]
    missed = []
    target_ms = ELASTIC_TARGET_MS.get(fault)
    if fault == "agent-kill":
        print(f"target: agent SIGKILL every rank stepping again <= {target_ms:.0f} ms (p50); steps "
              f"redone <= {TARGET_REDONE}; survivors' processes unchanged")
    elif fault in ("agent-stop", "link-down"):
        print(f"target: {'agent SIGSTOP' if fault == 'agent-stop' else 'link down'} steps redone <= "
              f"{TARGET_REDONE}; survivors' processes unchanged (no time target: the daemon "
              f"declares a silent node dead only after its heartbeat_timeout, 1.25 s)")
    else:
        print(f"target: node joining: joiner stepping <= {target_ms:.0f} ms after its round closes "
              f"(p50); first node's processes unchanged")
    if len(rs) < args.runs:
        missed.append(f"{args.runs - len(rs)} of {args.runs} runs failed")
    if rs:
        p50 = statistics.median([r["ms"] for r in rs])
        if target_ms is not None and p50 > target_ms:
            missed.append(f"stepping p50 {p50:.0f} ms > {target_ms:.0f} ms")
        if fault != "node-join" and any(r["redone"] > TARGET_REDONE for r in rs):
            missed.append(f"steps redone up to {max(r['redone'] for r in rs)}")
        if any(r["restarted"] != 0 for r in rs):
            missed.append("processes restarted " + ",".join(str(r["restarted"]) for r in rs))
        if not all(r["survivors_kept"] for r in rs):
            missed.append("a survivor's pid changed")
    ok = not missed
    print(f"in-place: {'PASS' if ok else 'FAIL (' + '; '.join(missed) + ')'}")
    for f in failures:
        print(f"FAILED RUN: {f}")
    return 0 if ok and not failures else 1


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog=__doc__.split("\n\n", 2)[2])
    parser.add_argument("--fault", default="worker-kill", choices=("worker-kill",) + ELASTIC_FAULTS,
                        help="worker-kill (default): SIGKILL rank 1 on one node; agent-kill, "
                             "agent-stop, node-join, link-down: two agents forming one elastic job "
                             "(link-down: the second in its own network namespace; needs root)")
    parser.add_argument("--runs", type=int, default=5, help="alternated runs per variant (default 5)")
    parser.add_argument("--nproc", type=int, default=None,
                        help="workers on the node (default 4); with an elastic --fault, workers "
                             "per agent (default 2)")
    parser.add_argument("--kill-step", type=int, default=30,
                        help="SIGKILL rank 1 once rank 0 printed this step (default 30); elastic "
                             "faults: the first step at which the second agent is killed/stopped "
                             "or its link set down (at world size 2 x --nproc) or started "
                             "(node-join)")
    parser.add_argument("--checkpoint-every", type=int, default=20,
                        help="steps between checkpoints of the restart variants (default 20)")
    parser.add_argument("--steps", type=int, default=None,
                        help="training steps (default 70; 120 for agent-stop, whose stopped "
                             "agent's workers may step on until the node is declared dead; 250 for "
                             "node-join, whose newcomer is admitted about 2 s after it starts)")
    parser.add_argument("--step-sleep-ms", type=int, default=20,
                        help="muster-train/trainer --step-sleep-ms (default 20)")
    parser.add_argument("--torchrun", default="1.13", choices=("1.13", "none"),
                        help="the reference: torchrun 1.13, or none (default 1.13)")
    parser.add_argument("--keep", metavar="DIR", default="",
                        help="keep each run's directory under DIR: the launcher's stderr "
                             "(launcher.err) and stdout with arrival times from the kill (stdout.txt)")
    args = parser.parse_args()
    elastic = args.fault in ELASTIC_FAULTS
    if args.nproc is None:
        args.nproc = 2 if elastic else 4
    if args.steps is None:
        args.steps = {"node-join": 250, "agent-stop": 120}.get(args.fault, 70)
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    if not 0 < args.kill_step < args.steps - 5:
        parser.error("--kill-step must lie inside the run, at least 5 steps before its end")
    if args.nproc < (1 if elastic else 2):
        parser.error("--nproc must be at least 1" if elastic
                     else "--nproc must be at least 2 (rank 1 is killed)")
    if args.checkpoint_every <= 0 or (not elastic and args.checkpoint_every > args.kill_step):
        parser.error("--checkpoint-every must be positive" +
                     ("" if elastic else " and at most --kill-step"))
    for path in (MUSTER, TRAIN):
        if not os.access(path, os.X_OK):
            sys.exit(f"recovery_inplace.py: {path} is missing; build first")
    if args.fault == "link-down" and link_down_unavailable():
        sys.exit(f"recovery_inplace.py: --fault link-down {link_down_unavailable()}")
    interrupt_on_signals()
    if elastic:
        return elastic_main(args)

    variants = ["in-place", "restart"] + (["torchrun"] if args.torchrun != "none" else [])
    t0 = time.monotonic()
    try:
        start_ms = startup_ms()
        try:
            ref = one_run("fault-free", args)
        except RunFailed as e:
            log(f"fault-free run failed: {e}")
            return 1
        log(f"fault-free run: {args.steps} steps, step interval median {ref['step_ms']:.1f} ms, "
            f"{len(ref['weights'])} bytes of weights")
        def describe(r):
            extra = ""
            if r["agent_total_ms"] is not None:
                extra = f", muster total_ms={r['agent_total_ms']:.0f}"
            caught = "-" if r["caught_up_ms"] is None else f"{r['caught_up_ms']:.0f}"
            return (f"stepping again after {r['ms']:.0f} ms, past step "
                    f"{r['last_before_kill']} after {caught} ms; last step "
                    f"before kill {r['last_before_kill']}, went on from {r['went_on_from']} "
                    f"(redone {r['redone']}), first step after {r['first_step_after']}; "
                    f"restarted {r['restarted']}, survivors kept pids {r['survivors_kept']}"
                    f"{extra}; weights equal {r['weights_equal']}")

        results, failures = run_alternated(
            args, variants, lambda v, tag: one_run(v, args, ref["weights"], tag=tag), describe)
    except Interrupted as e:
        log(f"interrupted ({e})")
        return 130

    print(f"worker SIGKILL of rank 1 at step {args.kill_step} of {args.steps}, {args.nproc} workers on "
          f"one node, CPU/Gloo, step sleep {args.step_sleep_ms} ms (fault-free step interval "
          f"{ref['step_ms']:.1f} ms), checkpoint every {args.checkpoint_every} steps (restart variants), "
          f"{args.runs} alternated runs, {time.monotonic() - t0:.0f} s")
    print("| variant | every rank stepping again: median | min-max | vs in-place | steps redone: "
          "median (min-max) | past the killed step again: median (min-max, vs in-place) | processes restarted: "
          "median (min-max) | survivors kept pids | final weights == fault-free |")
    print("|---|---:|---:|---:|---:|---:|---:|---|---|")
    base = statistics.median([r["ms"] for r in results["in-place"]]) if results["in-place"] else None
    base_cu = [r["caught_up_ms"] for r in results["in-place"] if r["caught_up_ms"] is not None]
    base_cu = statistics.median(base_cu) if base_cu else None
    for v in variants:
        rs = results[v]
        n_failed = args.runs - len(rs)
        if not rs:
            print(f"| {LABELS[v]} | all {args.runs} runs failed | | | | | | | |")
            continue
        ms = [r["ms"] for r in rs]
        med, rng = med_range(ms, unit=" ms")
        ratio = f"{statistics.median(ms) / base:.1f}x" if base else "-"
        rd_med, rd_rng = med_range([r["redone"] for r in rs])
        rs_med, rs_rng = med_range([r["restarted"] for r in rs])
        cu = [r["caught_up_ms"] for r in rs if r["caught_up_ms"] is not None]
        cu_med, cu_rng = med_range(cu, unit=" ms")
        if cu and base_cu:
            cu_rng += f", {statistics.median(cu) / base_cu:.1f}x"
        kept = (f"{sum(r['survivors_kept'] for r in rs)}/{len(rs)}" if v == "in-place"
                else f"{sum(r['survivors_kept'] for r in rs)}/{len(rs)} (not expected)")
        weights = ("n/a (torch trainer)" if v == "torchrun"
                   else f"{sum(bool(r['weights_equal']) for r in rs)}/{len(rs)}")
        failed = f" ({n_failed} failed)" if n_failed else ""
        print(f"| {LABELS[v]}{failed} | {med} | {rng} | {ratio} | {rd_med} ({rd_rng}) | "
              f"{cu_med} ({cu_rng}) | {rs_med} ({rs_rng}) | {kept} | {weights} |")
    agent = [r["agent_total_ms"] for r in results["in-place"] if r["agent_total_ms"] is not None]
    if agent:
        med, rng = med_range(agent, unit=" ms")
        print(f"muster's own event=in_place_recovered total_ms (from its noticing the exit to every "
              f"worker joined; without the detection and the first step): median {med} ({rng})")
    if start_ms is not None:
        print(f"muster-train start-up alone (`muster-train --help`, exec to exit; the restarted "
              f"worker pays it before it can join): median {start_ms:.0f} ms")
    print(f"target: worker SIGKILL every rank stepping again <= {TARGET_MS:.0f} ms (p50); "
          f"steps redone <= {TARGET_REDONE}; one process restarted")
    rs = results["in-place"]
    missed = []
    if len(rs) < args.runs:
        missed.append(f"{args.runs - len(rs)} of {args.runs} runs failed")
    if rs:
        p50 = statistics.median([r["ms"] for r in rs])
        if p50 > TARGET_MS:
            missed.append(f"stepping again p50 {p50:.0f} ms > {TARGET_MS:.0f} ms")
        if any(r["redone"] > TARGET_REDONE for r in rs):
            missed.append(f"steps redone up to {max(r['redone'] for r in rs)}")
        if any(r["restarted"] != TARGET_RESTARTED for r in rs):
            missed.append("processes restarted " + ",".join(str(r["restarted"]) for r in rs))
        if not all(r["survivors_kept"] for r in rs):
            missed.append("a survivor's pid changed")
    ok = not missed
    print(f"in-place: {'PASS' if ok else 'FAIL (' + '; '.join(missed) + ')'}")
    for f in failures:
        print(f"FAILED RUN: {f}")
    return 0 if ok and not failures else 1


def check_leftovers():
    """0, or 1 (with a line saying which) when a process this bench started still runs, or
    a namespace or veth of --fault link-down is still there (then removed)."""
    left = leftovers(RUN_DIRS)
    links = [(link, x) for link in LINKS for x in link.leftovers()]
    for link, x in links:
        print(f"LEFT BEHIND: {x}")
    for link in {id(l): l for l, _ in links}.values():
        link.created = [("ns", link.ns), ("link", link.outer)]  # whatever is there: removed
        for problem in link.teardown():
            print(f"CANNOT REMOVE: {problem}")
    if not left:
        return 1 if links else 0
    for pid in left:
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            cmd = "?"
        print(f"LEFT RUNNING: pid {pid}: {cmd[:200]}")
        kill_pid_and_group(pid)
    return 1


if __name__ == "__main__":
    status = 1
    try:
        status = main()
    finally:
        if check_leftovers() and status == 0:
            status = 1
    sys.exit(status)
