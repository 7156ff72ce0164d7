"""The slow rank in lock-step training, in standalone runs of an unmodified DDP
loop (tests/torch/ddp_steps.py): each rank's own compute time per step comes
from the warm worker's step hooks (launcher/process/warm/step_hooks.py), and
the agent names the rank well above the median (launcher/agent/straggler_watch.h).

- A rank of 4 made 2x slower by `--inject slow,rank=2,factor=2` (SIGSTOP and
  SIGCONT in turn) is named, `event=straggler rank=2`, within 30 s of the
  first step, and no other rank is (torch 1.13, 2.6, 2.14).
- A rank whose input is twice as slow (a sleep before its forward, as a slow
  data loader) is named within 30 s (torch 1.13).
- A fault-free 40 s run names none (torch 1.13; two minutes:
  scripts/bench/straggler_naming.py).

Every process is started through the harness and killed by PID when its test
ends, pass or fail.
"""
import os
import re
import threading
import time

from harness import MUSTER, TORCH_SCRIPTS, Skip, check, run_tests, start, test
from torch_versions import ALL, each_version, selected


def host_torch():
    """torch 1.13, when this entry runs it."""
    if ALL[0] not in selected():
        raise Skip("runs with torch 1.13 (its ctest entry)")
    return ALL[0]

STEPS = os.path.join(TORCH_SCRIPTS, "ddp_steps.py")


class TimedLines:
    """Reads a pipe on a thread, noting when each line came."""

    def __init__(self, pipe):
        self.lines = []  # (monotonic time, line)
        self._thread = threading.Thread(target=self._read, args=(pipe,), daemon=True)
        self._thread.start()

    def _read(self, pipe):
        for line in pipe:
            self.lines.append((time.monotonic(), line.rstrip("\n")))

    def join(self):
        self._thread.join(timeout=30)

    def first(self, needle):
        return next(((t, line) for t, line in self.lines if needle in line), (None, None))

    def text(self):
        return "\n".join(line for _, line in self.lines)


def straggler_run(version, muster_args, script_args, steps):
    """A standalone run of 4 ranks taking `steps` steps of 50 ms (or longer:
    the slow rank's pace); returns (its stderr, the seconds from rank 0's
    first step to the first straggler line, or None)."""
    seconds = steps * 0.1
    proc = start([MUSTER, "--standalone", "--nproc-per-node", "4"] + muster_args +
                 [STEPS, "--steps", str(steps), "--step-seconds", "0.05",
                  "--print-first-step"] + script_args, env=version.env())
    out, err = TimedLines(proc.stdout), TimedLines(proc.stderr)
    code = proc.wait(timeout=seconds * 3 + 120)
    out.join()
    err.join()
    check(code == 0, f"muster exit {code}", err.text())
    check(f"STEPS_DONE {steps}" in out.text(), "the job finished", out.text() + err.text())
    first_step, _ = out.first("FIRST_STEP")
    named, _ = err.first("event=straggler ")
    return err.text(), (named - first_step if named and first_step else None)


def straggler_lines(err):
    return [line for line in err.splitlines() if "event=straggler " in line]


def check_named(err, took, rank):
    lines = straggler_lines(err)
    check(lines, "no straggler named", err)
    check(all(f" rank={rank} " in line for line in lines), f"only rank {rank} is named",
          "\n".join(lines))
    found = re.search(r"compute_ms=(\S+) median_ms=(\S+)", lines[0])
    check(found and float(found.group(1)) > 1.5 * float(found.group(2)),
          "its compute time is well above the median", lines[0])
    check(took is not None and took <= 30, f"named {took}s after the first step (target 30 s)",
          lines[0])
    print(f"named rank {rank} {took:.1f}s after the first step: {lines[0]}", flush=True)


@each_version
def a_rank_slowed_twice_by_the_slow_fault_is_named_within_30_s(version):
    err, took = straggler_run(version, ["--inject", "slow,rank=2,factor=2"], [], 400)
    check_named(err, took, 2)


@test
def a_rank_whose_input_is_twice_as_slow_is_named_within_30_s():
    # The same hooks and detector as above; torch 1.13 only, to keep the
    # suite's time (the 2.x versions: the slow fault above).
    err, took = straggler_run(host_torch(), [], ["--slow-input-rank", "1", "--slow-input-factor", "2"],
                              350)
    check_named(err, took, 1)


@test
def a_fault_free_run_names_no_straggler():
    # 40 s on torch 1.13 (the 2.x versions' fault-free runs are
    # step_hooks_test.py's); two minutes: scripts/bench/straggler_naming.py.
    err, _ = straggler_run(host_torch(), [], [], 800)
    check(not straggler_lines(err), "a straggler in a fault-free run", err)


if __name__ == "__main__":
    run_tests()
