"""Worker SIGKILL mid-training: muster --recovery in-place vs a restart from a checkpoint.

usage: recovery_inplace.py [--runs N] [--nproc P] [--kill-step K] [--checkpoint-every C]
                           [--steps S] [--step-sleep-ms MS] [--torchrun 1.13|none] [--keep DIR]

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

Exit status: 0; 1 when a run failed (launcher exit status, timeout, no recovery
seen, weights differ from the fault-free run) or the in-place target is missed;
130 when interrupted. Every process started is killed (process groups
included; muster's workers run in their own sessions) in `finally`.
"""
import argparse
import os
import re
import select
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

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


class Interrupted(Exception):
    pass


def _on_signal(signum, _frame):
    raise Interrupted(f"signal {signum}")


def log(msg):
    print(msg, file=sys.stderr, flush=True)


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


def alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
        return state not in ("Z", "X")
    except (OSError, IndexError):
        return False


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
    return env


def one_run(variant, args, reference_weights=None, tag=""):
    """Runs one job; SIGKILLs rank 1 after rank 0 printed step --kill-step unless variant is
    "fault-free". Returns a dict of measurements (and "weights" for the fault-free run)."""
    run_dir = tempfile.mkdtemp(prefix=f"muster-bench-inplace-{variant}-")
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


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog=__doc__.split("\n\n", 2)[2])
    parser.add_argument("--runs", type=int, default=5, help="alternated runs per variant (default 5)")
    parser.add_argument("--nproc", type=int, default=4, help="workers on the node (default 4)")
    parser.add_argument("--kill-step", type=int, default=30,
                        help="SIGKILL rank 1 once rank 0 printed this step (default 30)")
    parser.add_argument("--checkpoint-every", type=int, default=20,
                        help="steps between checkpoints of the restart variants (default 20)")
    parser.add_argument("--steps", type=int, default=70, help="training steps (default 70)")
    parser.add_argument("--step-sleep-ms", type=int, default=20,
                        help="muster-train/trainer --step-sleep-ms (default 20)")
    parser.add_argument("--torchrun", default="1.13", choices=("1.13", "none"),
                        help="the reference: torchrun 1.13, or none (default 1.13)")
    parser.add_argument("--keep", metavar="DIR", default="",
                        help="keep each run's directory under DIR: the launcher's stderr "
                             "(launcher.err) and stdout with arrival times from the kill (stdout.txt)")
    args = parser.parse_args()
    if args.nproc < 2:
        parser.error("--nproc must be at least 2 (rank 1 is killed)")
    if not 0 < args.kill_step < args.steps - 5:
        parser.error("--kill-step must lie inside the run, at least 5 steps before its end")
    if args.checkpoint_every <= 0 or args.checkpoint_every > args.kill_step:
        parser.error("--checkpoint-every must be positive and at most --kill-step")
    for path in (MUSTER, TRAIN):
        if not os.access(path, os.X_OK):
            sys.exit(f"recovery_inplace.py: {path} is missing; build first")
    for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(s, _on_signal)

    variants = ["in-place", "restart"] + (["torchrun"] if args.torchrun != "none" else [])
    results = {v: [] for v in variants}
    failures = []
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
        for i in range(args.runs):
            for v in variants:
                try:
                    r = one_run(v, args, ref["weights"], tag=f"run{i + 1}-")
                except RunFailed as e:
                    failures.append(str(e))
                    log(f"run {i + 1} {LABELS[v]}: FAILED: {e}")
                    continue
                results[v].append(r)
                extra = ""
                if r["agent_total_ms"] is not None:
                    extra = f", muster total_ms={r['agent_total_ms']:.0f}"
                caught = "-" if r["caught_up_ms"] is None else f"{r['caught_up_ms']:.0f}"
                log(f"run {i + 1} {LABELS[v]}: stepping again after {r['ms']:.0f} ms, past step "
                    f"{r['last_before_kill']} after {caught} ms; last step "
                    f"before kill {r['last_before_kill']}, went on from {r['went_on_from']} "
                    f"(redone {r['redone']}), first step after {r['first_step_after']}; "
                    f"restarted {r['restarted']}, survivors kept pids {r['survivors_kept']}"
                    f"{extra}; weights equal {r['weights_equal']}")
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


if __name__ == "__main__":
    sys.exit(main())
