"""muster's warm process: a Python interpreter that has imported what the
workers' script imports once per node, and forks each worker from that state
instead of the agent exec'ing a fresh interpreter. What it imports: every
module-level import of the script and of the script's own modules that it
imports (those modules themselves are the script's code and are not), or
only torch's with MUSTER_WARM_IMPORT_SCAN=torch in the environment; and
--warm-import's modules.

The agent starts it as `PYTHON -u -c BOOTSTRAP COMMAND...` in the workers'
environment minus their per-rank variables, with a SOCK_SEQPACKET socket as
fd 3 (opened by the bootstrap as the global `channel`; this program is its
first packet) and MUSTER_WARM_COMMAND (JSON: the interpreter arguments of a worker, such as
["-u", "train.py", "--epochs", "3"]) and MUSTER_WARM_IMPORTS (comma-separated
modules) in its environment. Messages are JSON, one per packet:

  warm -> agent, once:  {"ready": true, "imports": [...], "rss_kib": N,
                         "seconds": S} | {"ready": false, "reason": "..."}
  agent -> warm:        {"argv0": PYTHON, "argv": [...], "env": ["NAME=value", ...],
                         "cwd": "...", "agent_pid": N}
                        with four descriptors (SCM_RIGHTS): the worker's
                        stdout, stderr, progress pipe and control pipe
  warm -> agent:        {"pid": N} | {"error": "..."}

A worker is forked twice (the middle process exits at once), so that the
agent, a child subreaper, becomes its parent: the agent reaps it, reads its
exit status and signals it exactly as a worker it exec'd itself (until the
middle process is gone, the agent waits to adopt it). Before the reply names
it, the worker leads its own session; it then waits to be the
agent's child, sets PR_SET_PDEATHSIG and runs the script as `python -u` would
run it: __main__, __file__, sys.argv, sys.path[0], the environment and the
working directory as a cold start has them.

Before the script runs, a worker installs muster's step hooks
(step_hooks.py, embedded ahead of this program): an unmodified torch script
reports its optimizer steps on the progress pipe.

Never forks from a state a fork would break: a second thread (an OpenMP
pool, the CUDA driver's) or CUDA initialised makes the process unfit, and
the agent starts workers cold.
"""
import ast
import ctypes
import json
import os
import socket
import sys
import time

_PR_SET_PDEATHSIG = 1
_WORKER_FDS = (1, 2, 3, 4)  # stdout, stderr, progress, control
# Interpreter options a worker's command may carry before its target; they
# are the same ones the warm interpreter was started with (-u), or have no
# effect once it runs.
_NEUTRAL_OPTIONS = {"-u"}
_REPARENT_WAIT_S = 5.0
# The file name this program runs under (warm_process.cc compiles it so):
# its frames are left out of a worker's traceback.
_OWN_FILENAME = "<muster warm process>"


def _send(channel, message):
    channel.send(json.dumps(message).encode())


def _target(command):
    """(kind, target, args) of an interpreter command: ("script", PATH,
    [...]), ("module", NAME, [...]) or ("code", CODE, [...]); raises
    ValueError for what this process cannot run as the interpreter would."""
    i = 0
    while i < len(command) and command[i].startswith("-") and command[i] not in ("-m", "-c"):
        if command[i] not in _NEUTRAL_OPTIONS:
            raise ValueError(f"interpreter option {command[i]!r} is not supported warm")
        i += 1
    if i >= len(command):
        raise ValueError("no script in the command")
    if command[i] in ("-m", "-c"):
        if i + 1 >= len(command):
            raise ValueError(f"{command[i]} without its argument")
        kind = "module" if command[i] == "-m" else "code"
        return kind, command[i + 1], command[i + 2:]
    return "script", command[i], command[i + 1:]


def _is_package_path(target):
    """A directory or zip file the interpreter runs by its __main__ module."""
    if os.path.isdir(target):
        return True
    try:
        import zipfile

        return zipfile.is_zipfile(target)
    except OSError:
        return False


def _path0(kind, target):
    """What the interpreter puts first on sys.path for this target."""
    if kind == "script":
        if _is_package_path(target):
            return os.path.realpath(target)
        return os.path.dirname(os.path.realpath(target))
    if kind == "module":
        return os.getcwd()
    return ""


def _module_file(name):
    """The source file `python -m name` would run, found without importing
    its packages; None when not found."""
    parts = name.split(".")
    for base in [os.getcwd()] + sys.path[1:]:
        stem = os.path.join(base or ".", *parts)
        for candidate in (stem + ".py", os.path.join(stem, "__main__.py")):
            if os.path.isfile(candidate):
                return candidate
    return None


def _source_of(kind, target, args):
    """The file whose imports the workers will make: the script, the
    module's file, or for code (--run-path's runpy line) its first argument
    when that is a Python file."""
    if kind == "script":
        return os.path.join(target, "__main__.py") if os.path.isdir(target) else target
    if kind == "module":
        return _module_file(target)
    if args and args[0].endswith(".py") and os.path.isfile(args[0]):
        return args[0]
    return None


# muster's own package is imported warm with what it loads on first use
# (torch.distributed, DDP): a process started into a running generation
# then forms its group without importing them.
_WARM_WITH = {"muster": ["muster", "muster.in_place"]}


# How far the scan follows the script's own modules (files in its
# directory that it imports): their imports are imported warm too, they
# themselves are not (they are the script's code, run in each worker).
_SCAN_MAX_FILES = 32
_NEVER_WARM = frozenset({"__future__", "__main__"})


def _module_level_imports(path):
    """The modules a source file imports at module level (also under if,
    try and with there, not in functions or classes), in order."""
    try:
        with open(path, "rb") as f:
            tree = ast.parse(f.read(), path)
    except (OSError, SyntaxError, ValueError):
        return []
    found = []
    pending = list(tree.body)
    while pending:
        node = pending.pop(0)
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            # `from pkg import Name`: pkg.Name too, which a lazily loading
            # package (transformers) imports only when it is asked for.
            found.append(node.module)
            found += [f"{node.module}:{alias.name}" for alias in node.names if alias.name != "*"]
        elif isinstance(node, (ast.If, ast.Try, ast.With)) or type(node).__name__ == "TryStar":
            inner = list(getattr(node, "body", []))
            for handler in getattr(node, "handlers", []):
                inner += handler.body
            inner += list(getattr(node, "orelse", [])) + list(getattr(node, "finalbody", []))
            pending[:0] = inner
    return found


def _local_module(name, path0):
    """The file of a module of the script's own directory, or None."""
    if not path0:
        return None
    stem = os.path.join(path0, *name.split("."))
    for candidate in (stem + ".py", os.path.join(stem, "__init__.py")):
        if os.path.isfile(candidate):
            return candidate
    return None


def _scanned_imports(path, path0, everything=True):
    """The modules to import warm for a script at `path` whose sys.path[0]
    is `path0`: every module-level import of the script and of the modules
    of its own directory that it imports (not those modules themselves),
    muster's with what it loads on first use; only torch's and muster's
    when not `everything`."""
    found, files, seen = [], [path], {os.path.realpath(path)}
    while files and len(seen) <= _SCAN_MAX_FILES:
        for name in _module_level_imports(files.pop(0)):
            top = name.split(":")[0].split(".")[0]
            if top in _NEVER_WARM:
                continue
            local = _local_module(top, path0) if top not in _WARM_WITH else None
            if local is not None:
                nested = _local_module(name.split(":")[0], path0) or local
                if os.path.realpath(nested) not in seen:
                    seen.add(os.path.realpath(nested))
                    files.append(nested)
                continue
            if top in _WARM_WITH:
                modules = _WARM_WITH[top]
            elif everything or top == "torch":
                modules = [name]
            else:
                modules = []
            for module in modules:
                if module not in found:
                    found.append(module)
    return found


def _unfit_reason():
    """Why forking now would hand a worker a broken process, or None."""
    try:
        threads = len(os.listdir("/proc/self/task"))
    except OSError:
        import threading

        threads = threading.active_count()
    if threads > 1:
        return f"the warm process runs {threads} threads (an import started a thread pool)"
    torch = sys.modules.get("torch")
    cuda = getattr(torch, "cuda", None)
    if cuda is not None and getattr(cuda, "is_initialized", lambda: False)():
        return "an import initialised CUDA in the warm process"
    return None


def _rss_kib():
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def _warm_up(channel):
    """Imports what the workers will import; True when fit to fork."""
    started = time.monotonic()
    try:
        kind, target, args = _target(json.loads(os.environ.pop("MUSTER_WARM_COMMAND")))
    except (KeyError, ValueError) as e:
        _send(channel, {"ready": False, "reason": f"cannot run this command warm: {e}"})
        return False
    requested = [m for m in os.environ.pop("MUSTER_WARM_IMPORTS", "").split(",") if m]
    source = _source_of(kind, target, args)
    everything = os.environ.pop("MUSTER_WARM_IMPORT_SCAN", "all") != "torch"
    # Imports resolve as they will in a worker: its sys.path[0] first.
    sys.path[0] = _path0(kind, target)
    scanned = _scanned_imports(source, sys.path[0], everything) if source else []
    imported = []
    for name in dict.fromkeys(scanned + requested):
        if ":" in name:  # an attribute of a module imported before it
            module, _, attribute = name.partition(":")
            if module in sys.modules:
                try:
                    getattr(sys.modules[module], attribute)
                except Exception:  # noqa: BLE001 - the worker meets it itself
                    pass
                else:
                    imported.append(name)
            continue
        try:
            __import__(name)
        except ModuleNotFoundError as e:
            # A script may guard an import it can do without; the worker
            # meets the same error itself when it does not.
            missing = e.name or ""
            if name in requested or not (name == missing or name.startswith(missing + ".")):
                _send(channel, {"ready": False,
                                "reason": f"import {name} failed: {type(e).__name__}: {e}"})
                return False
            continue
        except BaseException as e:  # noqa: BLE001 - any failure means cold starts
            _send(channel, {"ready": False,
                            "reason": f"import {name} failed: {type(e).__name__}: {e}"})
            return False
        imported.append(name)
    # torch 2.x's optimizers import torch._dynamo when the first one is
    # made (about 1 s): a worker forked after that import skips it. Best
    # effort: a torch without it, or whose import fails, is warm as before.
    if any(name.split(".")[0] == "torch" for name in imported):
        try:
            import torch._dynamo  # noqa: F401
            imported.append("torch._dynamo")
        except Exception:  # noqa: BLE001 - optional
            pass
    reason = _unfit_reason()
    if reason:
        _send(channel, {"ready": False, "reason": reason})
        return False
    _send(channel, {"ready": True, "imports": imported, "rss_kib": _rss_kib(),
                    "seconds": round(time.monotonic() - started, 3)})
    return True


class _Worker:
    """What a forked worker runs once it has left the serving loop."""

    def __init__(self, request):
        self.argv = request["argv"]
        self.argv0 = request.get("argv0", sys.executable)
        self.env = request["env"]
        self.cwd = request["cwd"]

    def run(self):
        kind, target, args = _target(self.argv)
        os.chdir(self.cwd)
        os.environ.clear()
        for entry in self.env:
            name, _, value = entry.partition("=")
            os.environ[name] = value
        sys.path[0] = _path0(kind, target)
        # The script's optimizer steps become progress reports
        # (step_hooks.py, which precedes this program in muster's binary).
        install_step_hooks()  # noqa: F821
        install_stack_dumps()  # noqa: F821
        if hasattr(sys, "orig_argv"):
            sys.orig_argv = [self.argv0] + self.argv
        try:
            self._start(kind, target, args)
        except (SystemExit, KeyboardInterrupt):
            raise
        except BaseException as error:  # noqa: BLE001 - printed as the interpreter would
            # A cold interpreter's traceback starts at the script's own first
            # frame (or runpy's, for -m): this process's frames, below it,
            # are left out, and the worker exits 1 as `python SCRIPT` does.
            tb = error.__traceback__
            while tb is not None and tb.tb_frame.f_code.co_filename == _OWN_FILENAME:
                tb = tb.tb_next
            error.__traceback__ = tb
            sys.excepthook(type(error), error, tb)
            sys.exit(1)

    def _start(self, kind, target, args):
        if kind == "module" or (kind == "script" and _is_package_path(target)):
            import runpy

            if kind == "module":
                sys.argv = ["-m"] + args  # as the interpreter's -m: runpy fills argv[0]
                runpy._run_module_as_main(target, alter_argv=True)
            else:
                sys.argv = [target] + args  # a directory or zip: its __main__ module
                runpy._run_module_as_main("__main__", alter_argv=False)
            return
        import types

        main = types.ModuleType("__main__")
        main.__dict__["__builtins__"] = __builtins__
        if kind == "code":
            sys.argv = ["-c"] + args
            code = compile(target, "<string>", "exec")
        else:
            from importlib.machinery import SourceFileLoader

            sys.argv = [target] + args
            path = os.path.abspath(target)
            main.__file__ = path
            main.__cached__ = None
            main.__loader__ = SourceFileLoader("__main__", path)
            with open(path, "rb") as f:
                code = compile(f.read(), path, "exec")
        sys.modules["__main__"] = main
        exec(code, main.__dict__)


def _become_worker(request, fds, report_fd):
    """In the forked worker: its own session, its descriptors, the agent as
    parent (PR_SET_PDEATHSIG), then back to the caller to run the script."""
    os.setsid()
    os.write(report_fd, str(os.getpid()).encode())
    os.close(report_fd)
    # Out of the way first: a received descriptor may sit where another goes.
    high = [os.dup(fd) for fd in fds]
    for fd in fds:
        os.close(fd)
    for fd, target in zip(high, _WORKER_FDS):
        os.dup2(fd, target, inheritable=True)
        os.close(fd)
    agent = request["agent_pid"]
    middle = os.getppid()
    deadline = time.monotonic() + _REPARENT_WAIT_S
    while os.getppid() == middle and middle != agent:
        if time.monotonic() > deadline:
            os._exit(70)
        time.sleep(0.0002)
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, 9, 0, 0, 0)
    if os.getppid() != agent:
        os._exit(128 + 9)  # the agent is gone (or never adopted us): nobody supervises
    import signal

    signal.pthread_sigmask(signal.SIG_SETMASK, [])
    return _Worker(request)


def _fork_worker(channel, request, fds):
    """Forks the worker (through a middle process that exits at once);
    returns its pid in the warm process, a _Worker in the worker."""
    report_r, report_w = os.pipe()
    middle = os.fork()
    if middle == 0:
        code = 0
        try:
            channel.close()
            os.close(report_r)
            if os.fork() == 0:
                try:
                    return _become_worker(request, fds, report_w)
                except BaseException:  # noqa: BLE001 - never back into the serving loop
                    os._exit(70)
        except BaseException:  # noqa: BLE001 - the middle process never returns
            code = 70
        os._exit(code)
    os.close(report_w)
    with os.fdopen(report_r, "rb") as report:
        text = report.read()
    # The middle process is left to exit on its own (tearing down its copy
    # of this process takes longer than forking it): it is reaped before the
    # next request, and the agent adopts the worker once it has exited.
    if not text:
        raise OSError("the forked worker did not report its pid")
    return int(text)


def _reap_middles():
    """Reaps the middle processes that have exited (workers are never this
    process's children)."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def _serve(channel):
    """Answers fork requests until the agent closes the channel; returns
    the _Worker to run in a forked worker, None in the warm process."""
    fd_bytes = socket.CMSG_LEN(len(_WORKER_FDS) * 4)
    while True:
        try:
            data, ancillary, _, _ = channel.recvmsg(1 << 20, fd_bytes)
        except InterruptedError:
            continue
        if not data:
            return None
        _reap_middles()
        fds = []
        for level, kind, payload in ancillary:
            if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                fds.extend(int.from_bytes(payload[i:i + 4], sys.byteorder)
                           for i in range(0, len(payload) - len(payload) % 4, 4))
        try:
            request = json.loads(data)
            if len(fds) != len(_WORKER_FDS):
                raise ValueError(f"{len(fds)} descriptors came with the request, not 4")
            _target(request["argv"])
            reason = _unfit_reason()
            if reason:
                raise OSError(reason)
            result = _fork_worker(channel, request, fds)
        except Exception as e:  # noqa: BLE001 - an error is the agent's to report
            result = {"error": f"{type(e).__name__}: {e}"}
        if isinstance(result, _Worker):
            return result  # in the worker, which closed the received descriptors
        for fd in fds:
            os.close(fd)
        _send(channel, result if isinstance(result, dict) else {"pid": result})


def _main():
    if not _warm_up(channel):  # noqa: F821 - the bootstrap's socket on fd 3
        return None
    return _serve(channel)


_worker = _main()
if _worker is not None:
    del _main
    _worker.run()
