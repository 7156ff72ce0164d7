"""Worker that writes what a Python process started as `python -u SCRIPT`
(or -m, --run-path, `muster launch`) sees before its first line, to
OUTDIR/rank<RANK>.json, and exits 0. Run as a script or a module:

    interpreter_state.py OUTDIR [ARGS...]  |  -m interpreter_state OUTDIR

A warm start and a cold start of it must write the same fields, except
`preloaded`: whether torch was already imported when its first line ran.
"""
import sys

preloaded = "torch" in sys.modules

import ctypes  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import signal  # noqa: E402

import torch  # noqa: E402,F401 - the warm process imports what the script imports


def _pdeathsig():
    value = ctypes.c_int(0)
    ctypes.CDLL(None).prctl(2, ctypes.byref(value), 0, 0, 0)  # PR_GET_PDEATHSIG
    return value.value


def _handler(sig):
    handler = signal.getsignal(sig)
    return getattr(handler, "__name__", str(handler))


def _own_fds():
    """The open descriptors, but muster's stack-dump memfd, which only a warm
    worker has (docs/usage.md, "Warm workers")."""
    fds = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            if os.readlink(f"/proc/self/fd/{fd}").startswith("/memfd:muster-stacks"):
                continue
        except OSError:
            pass  # listdir's own descriptor, closed by now
        fds.append(int(fd))
    return sorted(fds)


main = sys.modules["__main__"]
state = {
    "argv": sys.argv,
    "file": globals().get("__file__"),
    "name": __name__,
    "main_is_this": main.__dict__ is globals(),
    "spec": getattr(__spec__, "name", None),
    "loader": type(globals().get("__loader__")).__name__,
    "path0": sys.path[0],
    "path": sys.path,
    "cwd": os.getcwd(),
    "env": dict(os.environ),
    "ppid": os.getppid(),
    "group_leader": os.getpgid(0) == os.getpid(),
    "session_leader": os.getsid(0) == os.getpid(),
    "pdeathsig": _pdeathsig(),
    "blocked": sorted(int(s) for s in signal.pthread_sigmask(signal.SIG_BLOCK, [])),
    "sigint": _handler(signal.SIGINT),
    "sigterm": _handler(signal.SIGTERM),
    "sigpipe": _handler(signal.SIGPIPE),
    "fds": _own_fds(),
    "stdout": [type(sys.stdout.buffer).__name__, sys.stdout.write_through, sys.stdout.encoding],
    "stderr": [type(sys.stderr.buffer).__name__, sys.stderr.write_through],
    "omp_num_threads": os.environ.get("OMP_NUM_THREADS"),
    "torch_threads": torch.get_num_threads(),
    "executable": sys.executable,
    "orig_argv": getattr(sys, "orig_argv", None),
    "preloaded": preloaded,
}
out_dir = next(a for a in sys.argv[1:] if not a.startswith("--"))
with open(os.path.join(out_dir, f"rank{os.environ['RANK']}.json"), "w") as f:
    json.dump(state, f)
