"""What the recovery benchmarks (rdzv_recovery.py, recovery_inplace.py,
torch_recovery.py, torch_in_place.py) share: a signal turned into an exception so
that a run's cleanup always happens (and a main() that exits 130 on it), progress
lines, process states from /proc, SIGKILL of a few pids, a log's tail and a free
port."""
import os
import signal
import socket
import sys


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


def proc_state(pid):
    """(state letter, ppid) of `pid` from /proc, or (None, None) when gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return fields[0], int(fields[1])
    except (OSError, IndexError, ValueError):
        return None, None


def alive(pid):
    """True if `pid` exists and is neither a zombie nor dead."""
    state, _ = proc_state(pid)
    return state is not None and state not in ("Z", "X")


def sigkill(pids):
    """SIGKILLs each of `pids`; one that is gone already is passed over."""
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def tail(path, n=8):
    try:
        with open(path, errors="replace") as f:
            return "".join(f.readlines()[-n:])
    except OSError:
        return ""


def free_port(host="127.0.0.1"):
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]
