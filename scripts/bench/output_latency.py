"""How late a worker's progress-bar updates reach the console: muster vs
torchrun 1.13 and 2.14, in the same run, alternated.

usage: output_latency.py [--runs N] [--updates U] [--interval S] [--nproc P] [--torch]
                         [--torchrun 1.13,2.14] [--torch-chroot DIR]

Each launcher runs P workers on one node (--standalone). Every worker draws
a tqdm-style bar on stderr: U updates, each "\\r" + the bar with no newline
until the end, S seconds apart, and after writing each one (flushed) notes
time.monotonic() in a file (CLOCK_MONOTONIC is the kernel's, the same inside
the chroot). The bench reads the launcher's stderr through a pipe and notes
when each update arrives; an update's latency is its arrival less its write.
Printed per launcher: the median, 95th percentile and maximum latency over
every update of every run, and how many updates arrived before their bar
ended (a launcher that holds partial lines shows them all at the end).

torchrun passes its workers' stderr through untouched (no --tee): its figure
is the pipe's own latency, the floor. muster prefixes each segment and holds a
partial line at most 50 ms for its end (docs/usage.md, "Output and logs").
torchrun 1.13 is this host's, through torchrun_compat.py; 2.14 is Debian
sid's, through tests/torch/chroot_python.sh (root). Workers do not import
torch unless --torch: then each is a torch job (torch 1.13 for muster and
torchrun 1.13; use --torchrun 1.13, since torch 2.x in the chroot needs
tests/torch/no_libuv.py around the script) that joins a gloo process group
through the launcher's store and runs an allreduce before each update.
"""
import argparse
import os
import re
import select
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from testlib.torch_refs import (CHROOT_PYTHON, COMPAT, MUSTER, PYTHON, add_reference_args,
                                chroot_unavailable_reason, selected_versions)


WORKER = r"""
import os, sys, time
updates, interval, out, mode = int(sys.argv[1]), float(sys.argv[2]), sys.argv[3], sys.argv[4]
rank = os.environ["RANK"]
stamps = open(os.path.join(out, rank + ".stamps"), "w")
if mode == "torch":
    # A real torch job: the process group over the launcher's store, and an
    # allreduce (a gradient's worth of floats) before each bar update.
    import torch
    import torch.distributed as dist
    dist.init_process_group("gloo")
    grad = torch.ones(1 << 16)
for i in range(updates + 1):
    if mode == "torch" and i > 0:
        dist.all_reduce(grad)
    sys.stderr.write("\rrank%s %3d%%|%-10s| %d/%d" % (rank, 100 * i // updates,
                                                      "#" * (10 * i // updates), i, updates))
    sys.stderr.flush()
    stamps.write("%d %.6f\n" % (i, time.monotonic()))
    stamps.flush()
    if i < updates:
        time.sleep(interval)
sys.stderr.write("\n")
"""

UPDATE_RE = re.compile(r"rank(\d+) +\d+%\|[# ]*\| (\d+)/(\d+)")


def one_run(launcher, nproc, updates, interval, chroot, torch_job):
    """The latencies (seconds) of every update, and how many arrived early."""
    work = tempfile.mkdtemp(prefix="muster-bench-output-")
    script = os.path.join(work, "bar.py")
    with open(script, "w") as f:
        f.write(WORKER)
    common = ["--standalone", "--nproc_per_node", str(nproc)]
    worker = [script, str(updates), str(interval), work, "torch" if torch_job else "plain"]
    env = dict(os.environ)
    env.pop("MUSTER_LOG_LEVEL", None)
    if launcher == "muster":
        args = [MUSTER] + common + worker
        env["MUSTER_PYTHON"] = PYTHON
    elif launcher == "1.13":
        args = [PYTHON, COMPAT] + common + ["--monitor_interval", "0.1"] + worker
    else:
        args = ([CHROOT_PYTHON, COMPAT] + common
                + ["--monitor_interval", "0.1", "--local_addr", "127.0.0.1"] + worker)
        env["MUSTER_TORCH_CHROOT"] = chroot
    proc = subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            start_new_session=True)
    arrivals = {}  # (rank, update) -> first arrival
    text = ""
    try:
        fd = proc.stderr.fileno()
        while True:
            ready, _, _ = select.select([fd], [], [], 60)
            if not ready:
                raise RuntimeError(f"{launcher}: no output for 60 s")
            chunk = os.read(fd, 65536)
            now = time.monotonic()
            if not chunk:
                break
            text += chunk.decode(errors="replace")
            for match in UPDATE_RE.finditer(text):
                arrivals.setdefault((int(match.group(1)), int(match.group(2))), now)
            # Keep only the unfinished tail: earlier segments are counted.
            cut = max(text.rfind("\r"), text.rfind("\n"))
            text = text[cut:] if cut > 0 else text
        proc.wait(timeout=30)
        latencies, early = [], 0
        for rank in range(nproc):
            with open(os.path.join(work, f"{rank}.stamps")) as f:
                written = {int(i): float(t) for i, t in (line.split() for line in f)}
            last_write = max(written.values())
            for update, at in written.items():
                arrived = arrivals.get((rank, update))
                if arrived is None:
                    raise RuntimeError(f"{launcher}: update {update} of rank {rank} never shown")
                latencies.append(arrived - at)
                early += arrived < last_write
        return latencies, early
    finally:
        try:
            os.killpg(proc.pid, 9)
        except ProcessLookupError:
            pass
        proc.wait()
        shutil.rmtree(work, ignore_errors=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--updates", type=int, default=20)
    parser.add_argument("--interval", type=float, default=0.1)
    parser.add_argument("--nproc", type=int, default=2)
    parser.add_argument("--torch", action="store_true",
                        help="workers are a torch job: init_process_group('gloo') through the "
                             "launcher's store and an allreduce before each update")
    add_reference_args(parser)
    args = parser.parse_args()
    versions = selected_versions(parser, args)
    if "2.14" in versions and (reason := chroot_unavailable_reason(args.torch_chroot)):
        print(f"torchrun 2.14: skipped ({reason})")
        versions.remove("2.14")
    launchers = ["muster"] + versions
    labels = {"muster": "muster", "1.13": "torchrun 1.13", "2.14": "torchrun 2.14 (chroot)"}
    results = {name: ([], 0, 0) for name in launchers}
    for run in range(args.runs):
        for name in launchers:
            latencies, early = one_run(name, args.nproc, args.updates, args.interval,
                                       args.torch_chroot, args.torch)
            all_latencies, all_early, total = results[name]
            results[name] = (all_latencies + latencies, all_early + early, total + len(latencies))
    print(f"{args.runs} alternated runs, {args.nproc} workers"
          f"{' (torch, gloo allreduce per update)' if args.torch else ''}, "
          f"{args.updates + 1} updates each, {args.interval * 1000:.0f} ms apart")
    print("| launcher | median | p95 | max | updates shown before the last one was written (at most U of U+1 per worker) |")
    print("|---|---|---|---|---|")
    for name in launchers:
        latencies, early, total = results[name]
        ordered = sorted(latencies)
        p95 = ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]
        print(f"| {labels[name]} | {statistics.median(ordered) * 1000:.1f} ms | "
              f"{p95 * 1000:.1f} ms | {ordered[-1] * 1000:.1f} ms | {early} of {total} |")


if __name__ == "__main__":
    main()
