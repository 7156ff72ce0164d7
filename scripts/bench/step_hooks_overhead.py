#!/usr/bin/env python3
"""What muster's step hooks (launcher/process/warm/step_hooks.py) cost per
step of a real PyTorch script: an unmodified DDP loop over gloo whose step
computes for about 20 ms, run under muster three ways, alternated:

    hooked   warm workers (the default): the hooks report every step
    off      warm workers with MUSTER_STEP_HOOKS=off: the same fork, no hooks
    cold     --no-warm-workers: a fresh interpreter, no hooks

Each run times its own steps (time.perf_counter around step 21..N, after a
warm-up) and prints the mean; the ratio hooked/off and hooked/cold is the
hooks' cost. Usage:

    scripts/bench/step_hooks_overhead.py [--muster build/bin/muster]
        [--python /usr/bin/python3] [--rounds 5] [--steps 220] [--nproc 2]

The rank-0 mean per run and the per-mode medians are printed; docs/benchmarks.md
keeps the figures. --micro instead times the hooks' own work per step in
process (a step report with its compute time, written to a pipe that is
drained), the part the whole-run ratio cannot resolve on a noisy machine.
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.abspath(os.path.join(HERE, "..", ".."))

# The script: no muster code. A matmul chain sized to about 20 ms per step on
# one core, DDP's all-reduce, an SGD step.
SCRIPT = r'''
import os, sys, time
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

steps, width = int(sys.argv[1]), int(sys.argv[2])
torch.set_num_threads(1)
dist.init_process_group("gloo")
torch.manual_seed(0)
model = DistributedDataParallel(torch.nn.Sequential(
    *[torch.nn.Linear(width, width) for _ in range(4)]))
opt = torch.optim.SGD(model.parameters(), lr=1e-4)
x = torch.randn(64, width)
times = []
for step in range(1, steps + 1):
    began = time.perf_counter()
    opt.zero_grad()
    model(x).square().mean().backward()
    opt.step()
    times.append(time.perf_counter() - began)
measured = times[20:]
if dist.get_rank() == 0:
    print(f"STEP_MS {1000 * sum(measured) / len(measured):.4f}", flush=True)
dist.destroy_process_group()
'''


def run(mode, args, script):
    env = dict(os.environ, MUSTER_PYTHON=args.python)
    cmd = [args.muster, "--standalone", "--nproc-per-node", str(args.nproc)]
    if mode == "cold":
        cmd.append("--no-warm-workers")
    if mode == "off":
        env["MUSTER_STEP_HOOKS"] = "off"
    cmd += [script, str(args.steps), str(args.width)]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    found = re.search(r"STEP_MS (\S+)", proc.stdout)
    if proc.returncode != 0 or not found:
        sys.exit(f"{mode}: muster exit {proc.returncode}\n{proc.stdout}\n{proc.stderr}")
    return float(found.group(1))


def micro(python):
    """The hooks' cost per step, in process: on_optimizer_step with a pipe."""
    code = r'''
import importlib.util, os, sys, threading, time
spec = importlib.util.spec_from_file_location("step_hooks", sys.argv[1])
hooks_module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(hooks_module)
r, w = os.pipe()
threading.Thread(target=lambda: [os.read(r, 1 << 16) for _ in iter(int, 1)], daemon=True).start()
hooks = hooks_module.StepHooks(hooks_module.ProgressPipe(w))
class Optimizer: pass
opt = Optimizer()
n = 200000
began = time.perf_counter()
for _ in range(n):
    hooks.on_grads_ready()
    hooks.on_optimizer_step(opt)
took = time.perf_counter() - began
print(f"{1e6 * took / n:.2f} us per step (report, compute time, pipe write)")
'''
    source = os.path.join(SOURCE, "launcher", "process", "warm", "step_hooks.py")
    subprocess.run([python, "-c", code, source], check=True)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--muster", default=os.path.join(SOURCE, "build", "bin", "muster"))
    parser.add_argument("--python", default="/usr/bin/python3")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=220)
    parser.add_argument("--width", type=int, default=512)
    parser.add_argument("--nproc", type=int, default=2)
    parser.add_argument("--micro", action="store_true")
    args = parser.parse_args()
    if args.micro:
        micro(args.python)
        return
    with tempfile.TemporaryDirectory() as tmp:
        script = os.path.join(tmp, "ddp_unmodified.py")
        with open(script, "w") as f:
            f.write(SCRIPT)
        results = {"hooked": [], "off": [], "cold": []}
        for round_ in range(args.rounds):
            for mode in ("hooked", "off", "cold") if round_ % 2 == 0 else ("cold", "off", "hooked"):
                ms = run(mode, args, script)
                results[mode].append(ms)
                print(f"round {round_ + 1} {mode:6s} {ms:8.3f} ms/step", flush=True)
    medians = {mode: statistics.median(values) for mode, values in results.items()}
    print("\nmedian ms/step: " + ", ".join(f"{m} {v:.3f}" for m, v in medians.items()))
    print(f"hooked/off  {medians['hooked'] / medians['off']:.4f}")
    print(f"hooked/cold {medians['hooked'] / medians['cold']:.4f}")
    # Per-run pairs, alternated: the ratio of each round's hooked to its off.
    pairs = [h / o for h, o in zip(results["hooked"], results["off"])]
    print("per-round hooked/off: " + " ".join(f"{p:.4f}" for p in pairs))


if __name__ == "__main__":
    main()
