"""Worker SIGKILL -> restarted workers: muster vs torchrun, in the same run.

usage: worker_restart.py [--runs N] [--nproc P]

Each launcher runs P workers on one node (--standalone, --max-restarts 1,
torchrun with --monitor_interval 0.1 through torchrun_compat.py). A worker
records its restart count, rank, pid and start time in a file, then sleeps.
Once every worker of attempt 0 has started, the bench SIGKILLs rank 1 and
measures the time until the last worker of attempt 1 has started: detection,
stopping the others and starting them again. Alternated runs; medians and
ranges are printed with the ratio.
"""
import argparse
import glob
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
MUSTER = os.path.join(os.environ.get("MUSTER_BIN_DIR", os.path.join(ROOT, "build", "bin")),
                      "muster")
COMPAT = os.path.join(HERE, "torchrun_compat.py")
PYTHON = "/usr/bin/python3"

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


def one_run(launcher, nproc):
    out_dir = tempfile.mkdtemp(prefix="muster-bench-restart-")
    script = os.path.join(out_dir, "worker.py")
    with open(script, "w") as f:
        f.write(WORKER)
    common = ["--standalone", "--nproc_per_node", str(nproc), "--max_restarts", "1"]
    if launcher == "muster":
        args = [MUSTER] + common + [script, out_dir]
        env = dict(os.environ, MUSTER_PYTHON=PYTHON)
    else:
        args = [PYTHON, COMPAT] + common + ["--monitor_interval", "0.1", script, out_dir]
        env = dict(os.environ)
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


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--nproc", type=int, default=2)
    args = parser.parse_args()
    times = {"muster": [], "torchrun": []}
    for i in range(args.runs):
        for launcher in ("muster", "torchrun"):
            t = one_run(launcher, args.nproc)
            times[launcher].append(t)
            print(f"run {i + 1} {launcher}: {t * 1000:.0f} ms", file=sys.stderr)
    print(f"worker SIGKILL -> all {args.nproc} workers restarted, {args.runs} alternated runs")
    print("| launcher | median | min-max |")
    print("|---|---|---|")
    for launcher, values in times.items():
        print(f"| {launcher} | {statistics.median(values) * 1000:.0f} ms | "
              f"{min(values) * 1000:.0f}-{max(values) * 1000:.0f} ms |")
    ratio = statistics.median(times["torchrun"]) / statistics.median(times["muster"])
    print(f"ratio (torchrun / muster, medians): {ratio:.1f}x")


if __name__ == "__main__":
    main()
