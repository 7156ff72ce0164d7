"""Worker SIGKILL -> restarted workers: muster vs torchrun 1.13 and 2.14, in the same run.

usage: worker_restart.py [--runs N] [--nproc P] [--torchrun 1.13,2.14] [--torch-chroot DIR]

Each launcher runs P workers on one node (--standalone, --max-restarts 1,
torchrun with --monitor_interval 0.1 through torchrun_compat.py). A worker
records its restart count, rank, pid and start time in a file, then sleeps.
Once every worker of attempt 0 has started, the bench SIGKILLs rank 1 and
measures the time until the last worker of attempt 1 has started: detection,
stopping the others and starting them again. Alternated runs; medians and
ranges are printed with the ratio to muster.

torchrun 1.13 is this host's (/usr/bin/python3). torchrun 2.14 is Debian sid's,
run through tests/torch/chroot_python.sh in the chroot --torch-chroot (needs
root) with --local-addr 127.0.0.1 (the agent's address, as muster's standalone
store uses); its workers are the same worker program, run by the
chroot's python3 (the wrapper's start-up is outside the measured interval).
muster's and torchrun 1.13's workers run on /usr/bin/python3. The worker does
not import torch.
"""
import argparse
import glob
import json
import os
import signal
import statistics
import subprocess
import sys
import shutil
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from testlib.torch_refs import (CHROOT_PYTHON, COMPAT, MUSTER, PYTHON, add_reference_args,
                                chroot_unavailable_reason, selected_versions)


WORKER = r"""
import json, os, sys, time
out = sys.argv[1]
record = {"attempt": int(os.environ["TORCHELASTIC_RESTART_COUNT"]),
          "rank": int(os.environ["RANK"]), "pid": os.getpid(), "start": time.time()}
path = os.path.join(out, "a%d_r%d.json" % (record["attempt"], record["rank"]))
with open(path + ".tmp", "w") as f:
    json.dump(record, f)
os.rename(path + ".tmp", path)
time.sleep(600)
"""


def records(out_dir, attempt):
    found = {}
    for path in glob.glob(os.path.join(out_dir, f"a{attempt}_r*.json")):
        with open(path) as f:
            r = json.load(f)
        found[r["rank"]] = r
    return found


def wait_attempt(out_dir, attempt, nproc, timeout=60):
    deadline = time.time() + timeout
    while time.time() < deadline:
        found = records(out_dir, attempt)
        if len(found) == nproc:
            return found
        time.sleep(0.002)
    raise RuntimeError(f"attempt {attempt} did not start {nproc} workers in {timeout}s")


def one_run(launcher, nproc, chroot=None):
    out_dir = tempfile.mkdtemp(prefix="muster-bench-restart-")
    script = os.path.join(out_dir, "worker.py")
    with open(script, "w") as f:
        f.write(WORKER)
    common = ["--standalone", "--nproc_per_node", str(nproc), "--max_restarts", "1"]
    if launcher == "muster":
        args = [MUSTER] + common + [script, out_dir]
        env = dict(os.environ, MUSTER_PYTHON=PYTHON)
    elif launcher == "1.13":
        args = [PYTHON, COMPAT] + common + ["--monitor_interval", "0.1", script, out_dir]
        env = dict(os.environ)
    else:  # 2.14, in the chroot
        args = ([CHROOT_PYTHON, COMPAT] + common
                + ["--monitor_interval", "0.1", "--local_addr", "127.0.0.1", script, out_dir])
        env = dict(os.environ, MUSTER_TORCH_CHROOT=chroot)
    env.pop("MUSTER_INJECT", None)
    proc = subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    try:
        first = wait_attempt(out_dir, 0, nproc)
        time.sleep(0.5)  # let the launcher settle into supervising
        killed_at = time.time()
        os.kill(first[1]["pid"], signal.SIGKILL)
        second = wait_attempt(out_dir, 1, nproc)
        return max(r["start"] for r in second.values()) - killed_at
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait()
        for r in list(records(out_dir, 0).values()) + list(records(out_dir, 1).values()):
            try:
                os.kill(r["pid"], signal.SIGKILL)
            except ProcessLookupError:
                pass
        shutil.rmtree(out_dir, ignore_errors=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog=__doc__.split("\n\n", 2)[2])
    parser.add_argument("--runs", type=int, default=5, help="alternated runs per launcher (default 5)")
    parser.add_argument("--nproc", type=int, default=2, help="workers (default 2)")
    add_reference_args(parser)
    args = parser.parse_args()
    versions = selected_versions(parser, args)
    chroot = args.torch_chroot
    not_measured = {}
    if "2.14" in versions and (reason := chroot_unavailable_reason(chroot)):
        not_measured["2.14"] = reason
    launchers = ["muster"] + [v for v in versions if v not in not_measured]
    labels = {"muster": "muster", "1.13": "torchrun 1.13", "2.14": "torchrun 2.14 (chroot)"}
    times = {launcher: [] for launcher in launchers}
    for i in range(args.runs):
        for launcher in launchers:
            t = one_run(launcher, args.nproc, chroot)
            times[launcher].append(t)
            print(f"run {i + 1} {labels[launcher]}: {t * 1000:.0f} ms", file=sys.stderr)
    print(f"worker SIGKILL -> all {args.nproc} workers restarted, {args.runs} alternated runs")
    print("| launcher | median | min-max |")
    print("|---|---|---|")
    for launcher, values in times.items():
        print(f"| {labels[launcher]} | {statistics.median(values) * 1000:.0f} ms | "
              f"{min(values) * 1000:.0f}-{max(values) * 1000:.0f} ms |")
    for v, reason in not_measured.items():
        print(f"| torchrun {v} | not measured: {reason} | |")
    for v in launchers[1:]:
        ratio = statistics.median(times[v]) / statistics.median(times["muster"])
        print(f"ratio ({labels[v]} / muster, medians): {ratio:.1f}x")


if __name__ == "__main__":
    main()
