"""What the in-place recovery benchmarks (in_place_worker_kill.py, in_place_elastic.py,
run through recovery_inplace.py) share: paths, the launchers' output lines, a run's
processes (found from /proc, killed by pid and swept from its directory at its end), a line
reader that stamps each line as it arrives, alternated runs and the exit check that nothing
a run started is still running."""
import os
import re
import select
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from bench_procs import alive, log  # noqa: E402
from testlib import netns, procs  # noqa: E402
from testlib.torch_refs import PYTHON  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
BIN = os.environ.get("MUSTER_BIN_DIR", os.path.join(ROOT, "build", "bin"))
MUSTER = os.path.join(BIN, "muster")
TRAIN = os.path.join(BIN, "muster-train")
RUN_DIRS = []  # every run's directory: no process may be left running in one
TARGET_REDONE = 1  # steps redone after an in-place recovery, at most (every fault)

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

children = procs.children
descendants = procs.descendants
kill_pid_and_group = procs.kill_tree


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


def belongs_to(pid, run_dir):
    """pid still runs a command of this run (its command line names run_dir): not a reused pid."""
    return run_dir.encode() in procs.cmdline(pid)


def cleanup(proc, known_pids, run_dir):
    """SIGKILLs the launcher, its descendants, their process groups, and every worker pid
    this run saw that still runs one of its commands."""
    if proc is None:
        return
    # Only a launcher not yet reaped is signalled by pid: a reaped one's pid
    # (and group) may be another process's by now.
    if proc.poll() is None:
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


def base_env():
    env = dict(os.environ)
    for key in list(env):
        if key.startswith("PET_") or key in ("MUSTER_INJECT", "MUSTER_INJECT_SEED",
                                             "CUDA_VISIBLE_DEVICES", "OMP_NUM_THREADS"):
            del env[key]
    env["MUSTER_PYTHON"] = PYTHON
    env.setdefault("MUSTER_LOG_LEVEL", "info")  # the agents' event lines are read
    return env


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


def print_verdict(missed, failures):
    """Prints "in-place: PASS", or FAIL with the targets `missed`, and each failed run;
    returns the exit status: 0 when every target was met and no run failed, else 1."""
    ok = not missed
    print(f"in-place: {'PASS' if ok else 'FAIL (' + '; '.join(missed) + ')'}")
    for f in failures:
        print(f"FAILED RUN: {f}")
    return 0 if ok and not failures else 1


def check_leftovers():
    """0, or 1 (with a line saying which) when a process this bench started still runs, or
    a namespace or veth of --fault link-down is still there (then removed)."""
    left = leftovers(RUN_DIRS)
    links = [(link, x) for link in netns.NodeLink.made for x in link.leftovers()]
    for link, x in links:
        print(f"LEFT BEHIND: {x}")
    for link in {id(l): l for l, _ in links}.values():
        link.created = [("ns", link.ns), ("link", link.outer)]  # whatever is there: removed
        for problem in link.teardown():
            print(f"CANNOT REMOVE: {problem}")
    if not left:
        return 1 if links else 0
    for pid in left:
        cmd = procs.cmdline(pid).replace(b"\0", b" ").decode(errors="replace") or "?"
        print(f"LEFT RUNNING: pid {pid}: {cmd[:200]}")
        kill_pid_and_group(pid)
    return 1


