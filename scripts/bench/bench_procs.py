"""What the recovery benchmarks (rdzv_recovery.py, recovery_inplace.py,
torch_recovery.py, torch_in_place.py) share: a signal turned into an exception so
that a run's cleanup always happens (and a main() that exits 130 on it), progress
lines and a log's tail; and, from the shared library (scripts/lib/testlib), process
states, SIGKILL of a few pids and a free port."""
import os
import signal
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from testlib import ports, procs  # noqa: E402

proc_state = procs.state
alive = procs.alive
free_port = ports.free_port


class Interrupted(Exception):
    pass


def _raise_interrupted(signum, _frame):
    raise Interrupted(f"signal {signum}")


def interrupt_on_signals(signals=(signal.SIGTERM, signal.SIGINT, signal.SIGHUP)):
    """SIGTERM, SIGINT and SIGHUP raise Interrupted, so `finally` blocks run."""
    for s in signals:
        signal.signal(s, _raise_interrupted)


def exit_with(main):
    """sys.exit(main()); on Interrupted (a signal: the `finally` blocks on the way have killed
    what the runs started) logs it and exits 130."""
    try:
        sys.exit(main())
    except Interrupted as exc:
        log(f"interrupted ({exc}); everything started was killed")
        sys.exit(130)


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def sigkill(pids):
    """SIGKILLs each of `pids` (not their groups); one that is gone already is passed over."""
    procs.kill_pids(pids, group=False)


def tail(path, n=8):
    try:
        with open(path, errors="replace") as f:
            return "".join(f.readlines()[-n:])
    except OSError:
        return ""
