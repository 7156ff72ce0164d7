"""scripts/gpu_check.sh's weights check: muster-train over NCCL against the CPU
path (Gloo), the same seed, steps and flags, final weights compared.

Nothing is decided here: the runs, the model, the tolerance (1e-4 relative)
and the final-loss check are tests/integration/runtime_train_gpu_test.py's
compare_with_gloo; its require_nccl gives muster-train's own reason when
--backend nccl cannot run. This script only records what the runs printed
(step times, final losses, the difference) for gpu_check.sh's table.

Usage: /usr/bin/python3 scripts/gpu_check/train_compare.py [--steps N]
Env: MUSTER_BIN_DIR, MUSTER_TEST_BIN_DIR (the build's bin/ and tests/), as
under ctest; TMPDIR keeps the runs' weight files (harness.tempdir()).
Prints one "RESULT nproc=N rel_diff=... tolerance=... loss_nccl=...
loss_gloo=... step_ms_nccl=... step_ms_gloo=..." line per comparison: one
rank, and two ranks where two GPUs are visible.
Exit: 0 every comparison within tolerance; 1 one was not, or a run failed;
77 --backend nccl cannot run here (no GPU, or no NCCL in the build), the
reason on the "SKIP:" line.
"""
import argparse
import contextlib
import io
import os
import re
import signal
import sys

SOURCE_DIR = os.environ.get("MUSTER_SOURCE_DIR") or os.path.abspath(
    os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
sys.path.insert(0, os.path.join(SOURCE_DIR, "tests", "integration"))

import harness  # noqa: E402
import runtime_train_gpu_test as gpu_test  # noqa: E402
from train_harness import final_loss  # noqa: E402

STEP_TIME = re.compile(r"step time median ([0-9.]+) ms")
DIFFERENCE = re.compile(r"weights differ by ([0-9.e+-]+) relative")

# Every muster-train run the test's functions make, with what it printed.
_runs = []
_test_train = gpu_test.train


def _recorded_train(nproc, backend, extra, timeout=240):
    code, out, err = _test_train(nproc, backend, extra, timeout)
    _runs.append({"nproc": nproc, "backend": backend, "code": code, "out": out})
    return code, out, err


gpu_test.train = _recorded_train  # compare_with_gloo and require_nccl call it by name


def _figure(pattern, out, default="?"):
    match = pattern.search(out)
    return match.group(1) if match else default


def compare(nproc, steps):
    """compare_with_gloo(nproc, steps); returns (passed, RESULT line)."""
    _runs.clear()
    printed = io.StringIO()
    failure = None
    try:
        with contextlib.redirect_stdout(printed):
            gpu_test.compare_with_gloo(nproc, steps)
    except Exception as e:  # noqa: BLE001 - a failed check, a timeout, an unreadable file
        failure = f"{type(e).__name__}: {e}"
    sys.stdout.write(printed.getvalue())
    by_backend = {run["backend"]: run for run in _runs}
    fields = [f"nproc={nproc}", f"steps={steps}",
              f"rel_diff={_figure(DIFFERENCE, printed.getvalue())}",
              f"tolerance={gpu_test.TOLERANCE:g}"]
    for backend in ("nccl", "gloo"):
        run = by_backend.get(backend)
        loss = "?"
        if run and run["code"] == 0:
            try:
                loss = f"{final_loss(run['out']):.6f}"
            except AssertionError:
                pass
        fields.append(f"loss_{backend}={loss}")
        fields.append(f"step_ms_{backend}={_figure(STEP_TIME, run['out']) if run else '?'}")
    if failure:
        print(f"FAIL: {failure}")
    return failure is None, "RESULT " + " ".join(fields)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=40,
                        help="steps of each run (default 40, the test's: its tolerance is "
                             "set for that length)")
    args = parser.parse_args()
    # gpu_check.sh stops a step with SIGTERM: unwind, so that `finally` kills the runs.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    try:
        try:
            gpu_test.require_nccl()
        except harness.Skip as reason:
            print(f"SKIP: {reason}")
            return harness.SKIP_RETURN_CODE
        except AssertionError as e:
            print(f"FAIL: {e}")
            return 1
        worlds = [1] + ([2] if gpu_test.gpu_count() >= 2 else [])
        results = [compare(nproc, args.steps) for nproc in worlds]
        for _, line in results:
            print(line)
        return 0 if all(passed for passed, _ in results) else 1
    finally:
        for proc in harness._started:  # what harness.run_tests does after each test
            if proc.poll() is None:
                harness.kill_tree(proc.pid)
                proc.wait()


if __name__ == "__main__":
    sys.exit(main())
