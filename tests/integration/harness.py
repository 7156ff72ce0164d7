"""Shared helpers for muster's integration tests.

Tests are plain functions decorated with @test; run_tests() runs them in
order, prints one line per test and a closing "N passed, M failed" line, and
exits 1 on any failure, 77 when tests only skipped (ctest's SKIP_RETURN_CODE:
reported as Skipped, not Passed), 0 otherwise. Every process a test starts through this module
is killed by PID (its whole process group) when the test ends, pass or fail.
"""
import atexit
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "scripts", "lib"))
from testlib import ports, procs, torch_refs  # noqa: E402

PYTHON = torch_refs.PYTHON  # Debian's interpreter, the one with torch
# The shared ports and processes, under the names the tests import them by.
free_port = ports.free_port
pid_alive = procs.alive
descendants = procs.descendants
kill_tree = procs.kill_tree
kill_pids = procs.kill_pids

SOURCE_DIR = os.environ.get("MUSTER_SOURCE_DIR", os.path.abspath(os.path.join(HERE, "..", "..")))
BIN_DIR = os.environ.get("MUSTER_BIN_DIR", os.path.join(SOURCE_DIR, "build", "bin"))
MUSTER = os.path.join(BIN_DIR, "muster")
WORKERS = os.path.join(HERE, "workers")
TORCH_SCRIPTS = os.path.join(SOURCE_DIR, "tests", "torch")

_tests = []
_started = []


def test(fn):
    _tests.append(fn)
    return fn


def base_env(**extra):
    env = dict(os.environ)
    env["MUSTER_PYTHON"] = PYTHON
    for key in list(env):
        if key.startswith("PET_") or key in ("CUDA_VISIBLE_DEVICES", "OMP_NUM_THREADS"):
            del env[key]
    # MUSTER_TEST_WARM=off runs a suite with warm workers off (torch_1.13_cold).
    if os.environ.get("MUSTER_TEST_WARM") == "off":
        env["PET_NO_WARM_WORKERS"] = "1"
    env.update({k: str(v) for k, v in extra.items()})
    return env


def start(args, env=None, stdout=subprocess.PIPE, stderr=subprocess.PIPE, **kwargs):
    """Starts a process in its own session; it is killed when the test ends."""
    proc = subprocess.Popen(args, env=env or base_env(), stdout=stdout, stderr=stderr, text=True,
                            start_new_session=True, **kwargs)
    _started.append(proc)
    return proc


def run(args, env=None, timeout=60, **kwargs):
    """Runs a process to completion; returns (exit code, stdout, stderr)."""
    proc = start(args, env=env, **kwargs)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        kill_tree(proc.pid)
        out, err = proc.communicate()
        raise AssertionError(f"{' '.join(args)} did not finish in {timeout}s\nstdout:\n{out}\n"
                             f"stderr:\n{err}")
    return proc.returncode, out, err


def run_muster(args, env=None, timeout=60):
    """Runs muster to completion; returns (exit code, stdout, stderr)."""
    return run([MUSTER] + list(args), env=env, timeout=timeout)


def wait_for(predicate, timeout, interval=0.02):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(interval)
    return predicate()


def worker(name):
    return os.path.join(WORKERS, name)


def read_dumps(directory):
    """Env dumps written by workers/env_dump.py, keyed by RANK."""
    dumps = {}
    for name in os.listdir(directory):
        if name.endswith(".json"):
            with open(os.path.join(directory, name)) as f:
                env = json.load(f)
            dumps[int(env["RANK"])] = env
    return dumps


def check(condition, message, *context):
    if not condition:
        raise AssertionError(message + "".join(f"\n--- {c}" for c in context))


def tempdir():
    """A fresh directory, removed when the test process exits, passed or not
    (a failing check quotes the logs it needs in its message)."""
    path = tempfile.mkdtemp(prefix="muster-test-")
    atexit.register(shutil.rmtree, path, ignore_errors=True)
    return path


def write_file(directory, name, text):
    """Writes `text` to directory/name (a worker script, a config); returns its path."""
    path = os.path.join(directory, name)
    with open(path, "w") as f:
        f.write(text)
    return path


def run_log_dirs(log_dir, run_id="none"):
    """The run directories muster made under --log-dir for `run_id`
    (<run id>_<random>, one per run), oldest first."""
    found = [os.path.join(log_dir, name) for name in os.listdir(log_dir)
             if name.startswith(run_id + "_") and len(name) == len(run_id) + 7]
    return sorted(found, key=os.path.getmtime)


def run_log_dir(log_dir, run_id="none"):
    """The one run directory under --log-dir for `run_id`."""
    found = run_log_dirs(log_dir, run_id)
    check(len(found) == 1, f"{len(found)} run directories for {run_id} in {log_dir}: {found}")
    return found[0]


class Skip(Exception):
    """Raised by a test that cannot run here; reported as SKIP with its reason."""


SKIP_RETURN_CODE = 77  # muster_integration_test sets ctest's SKIP_RETURN_CODE to it


def run_tests():
    only = sys.argv[1:]
    passed = failed = skipped = 0
    for fn in _tests:
        if only and fn.__name__ not in only:
            continue
        start_time = time.monotonic()
        try:
            fn()
            passed += 1
            print(f"PASS {fn.__name__} ({time.monotonic() - start_time:.2f}s)", flush=True)
        except Skip as reason:
            skipped += 1
            print(f"SKIP {fn.__name__}: {reason}", flush=True)
        except Exception:  # noqa: BLE001 - report every kind of failure
            failed += 1
            print(f"FAIL {fn.__name__}\n{traceback.format_exc()}", flush=True)
        finally:
            for proc in _started:
                if proc.poll() is None:
                    kill_tree(proc.pid)
                    proc.wait()
            _started.clear()
    print(f"{passed} passed, {failed} failed" + (f", {skipped} skipped" if skipped else ""),
          flush=True)
    if failed:
        sys.exit(1)
    if not passed:
        sys.exit(SKIP_RETURN_CODE if skipped else 1)
    sys.exit(0)
