"""What torch_recovery.py's scenarios share: the environment, worker processes and their
memory read from /proc, the trace lines torch_ddp_ckpt.py writes (Traces: which ranks step
in which generation), one run's processes (Run: spawned, stamped, killed at its end), and
the launchers' command lines."""
import os
import re
import shlex
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from bench_procs import alive, log, tail  # noqa: E402
from bench_scenarios import RunError  # noqa: E402
from testlib import procs  # noqa: E402
from testlib.torch_refs import CHROOT_PYTHON, COMPAT, PYTHON  # noqa: E402


HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
SCRIPT = os.path.join(HERE, "torch_ddp_ckpt.py")
# --script hf: a Hugging Face Trainer (transformers, accelerate; sid's), no checkpoint.
HF_SCRIPT = os.path.join(ROOT, "tests", "torch", "hf_trainer.py")
SCENARIOS = ("worker-kill", "agent-kill", "first-step")
LABELS = {"warm": "muster warm", "cold": "muster cold",
          "warm-torch": "muster warm, torch's imports only", "1.13": "torchrun 1.13",
          "2.14": "torchrun 2.14 (chroot)"}
# The columns muster runs (the rest are torchruns).
MUSTER_COLUMNS = ("warm", "cold", "warm-torch")
PHASES = (("start", "start (detect+stop+start)"), ("import", "import (interpreter+import)"),
          ("pg", "init_process_group"), ("step", "first step"))
AGENTS, AGENT_NPROC, SURVIVORS = 3, 2, 4
SHOWN_ENV = ("MUSTER_PYTHON", "MUSTER_LOG_LEVEL", "MUSTER_TORCH_CHROOT",
             "TORCH_DISABLE_SHARE_RDZV_TCP_STORE")  # printed with the command lines

# torch 2.14's workers: TCPStore defaults to use_libuv=False once torch imports
# torch.distributed.rendezvous (the agent-store branch there passes no use_libuv).
# Imports nothing itself, so the script's t_first_line still comes before torch.
NO_LIBUV_HOOK = r'''
import os, runpy, sys
from importlib.machinery import PathFinder
os.environ.setdefault("USE_LIBUV", "0")
class _Hook:
    def find_spec(self, name, path=None, target=None):
        if name != "torch.distributed.rendezvous":
            return None
        sys.meta_path.remove(self)
        spec = PathFinder.find_spec(name, path)
        run = spec.loader.exec_module
        def exec_module(module):
            run(module)
            base = module.TCPStore
            class TCPStore(base):
                def __init__(self, *args, **kwargs):
                    kwargs.setdefault("use_libuv", False)
                    super().__init__(*args, **kwargs)
            module.TCPStore = TCPStore
        spec.loader.exec_module = exec_module
        return spec
sys.meta_path.insert(0, _Hook())
script = sys.argv[1]
sys.argv = sys.argv[1:]
sys.path[0] = os.path.dirname(os.path.abspath(script))
runpy.run_path(script, run_name="__main__")
'''


def base_env(extra=None, drop=()):
    env = dict(os.environ)
    for key in list(env):
        if key.startswith(("PET_", "TORCHELASTIC_")) or key in (
                "CUDA_VISIBLE_DEVICES", "OMP_NUM_THREADS", "MUSTER_INJECT", "RANK", "WORLD_SIZE",
                "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT"):
            del env[key]
    env["MUSTER_PYTHON"] = PYTHON
    env.update(extra or {})
    for key in drop:
        env.pop(key, None)
    return env


# ---------------------------------------------------------------------------
# /proc

def descendants(roots):
    """Every live process below the pids in `roots` (testlib.procs), roots excluded."""
    found = []
    for root in roots:
        found += [pid for pid in procs.descendants(root) if pid not in found and pid not in roots]
    return found


def memory(pid):
    """{"rss", "pss", "private"} in MiB (what is readable), or {}."""
    mem = {}
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    mem["rss"] = int(line.split()[1]) / 1024
    except OSError:
        return {}
    try:
        fields = {}
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                parts = line.split()
                if len(parts) >= 2 and parts[0].endswith(":") and parts[1].isdigit():
                    fields[parts[0][:-1]] = int(parts[1])
        if "Pss" in fields:
            mem["pss"] = fields["Pss"] / 1024
        if "Private_Clean" in fields:
            mem["private"] = (fields["Private_Clean"] + fields.get("Private_Dirty", 0)) / 1024
    except OSError:
        pass
    return mem


def listening_inodes(port):
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as f:
                next(f)
                for line in f:
                    parts = line.split()
                    if parts[3] == "0A" and int(parts[1].rsplit(":", 1)[1], 16) == port:
                        inodes.add(parts[9])
        except (OSError, StopIteration):
            pass
    return inodes


def owns_socket(pid, inodes):
    try:
        for fd in os.listdir(f"/proc/{pid}/fd"):
            try:
                link = os.readlink(f"/proc/{pid}/fd/{fd}")
            except OSError:
                continue
            if link.startswith("socket:[") and link[8:-1] in inodes:
                return True
    except OSError:
        pass
    return False


# ---------------------------------------------------------------------------
# Worker traces

class Worker:
    def __init__(self, pid, rank):
        self.pid, self.rank = pid, rank
        self.restart = self.world = None
        self.t = {}  # phase -> time
        self.first_step = self.last_step = None  # (n, t)
        self.starttime = procs.start_ticks(pid)  # to tell it from a reused pid
        # True: forked from muster's warm process. /proc/PID/environ is the environment the
        # process was exec'd with: a worker exec'd by a launcher has its RANK there, a fork of the
        # warm process has the warm process's, which has no per-rank variables.
        self.forked = None
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                self.forked = not any(e.startswith(b"RANK=") for e in f.read().split(b"\0"))
        except OSError:
            pass


class Traces:
    """Reads DIR/rank*.trace incrementally; one Worker per pid."""

    LINE = re.compile(r"(t_\w+)(?: (\d+))? t=([\d.]+) pid=(\d+) restart=(\d+) world=(\d+)$")

    def __init__(self, directory):
        self.dir = directory
        self.offsets = {}
        self.workers = {}

    def poll(self):
        try:
            names = os.listdir(self.dir)
        except OSError:
            return
        for name in names:
            m = re.fullmatch(r"rank(\d+)\.trace", name)
            if not m:
                continue
            path = os.path.join(self.dir, name)
            try:
                with open(path, "rb") as f:
                    f.seek(self.offsets.get(name, 0))
                    data = f.read()
            except OSError:
                continue
            end = data.rfind(b"\n") + 1  # complete lines only
            self.offsets[name] = self.offsets.get(name, 0) + end
            for line in data[:end].decode(errors="replace").splitlines():
                self._add(int(m.group(1)), line.strip())

    def _add(self, rank, line):
        m = self.LINE.match(line)
        if not m:
            return
        phase, n, t, pid = m.group(1), m.group(2), float(m.group(3)), int(m.group(4))
        w = self.workers.get(pid)
        if w is None:
            w = self.workers[pid] = Worker(pid, rank)
        w.restart, w.world = int(m.group(5)), int(m.group(6))
        if phase == "t_step":
            step = (int(n), t)
            if w.first_step is None:
                w.first_step = step
            w.last_step = step
        else:
            w.t[phase] = t

    def current(self, world):
        """{rank: the latest-started worker of that rank}, for ranks < world."""
        latest = {}
        for w in self.workers.values():
            if w.rank < world and "t_first_line" in w.t and (
                    w.rank not in latest or w.t["t_first_line"] > latest[w.rank].t["t_first_line"]):
                latest[w.rank] = w
        return latest

    def all_stepping(self, world, min_step):
        cur = self.current(world)
        return (len(cur) == world and all(w.world == world for w in cur.values())
                and all(w.last_step and w.last_step[0] >= min_step for w in cur.values()))

    def new_group(self, world, after):
        """{rank: worker} of the first attempt started after `after` (same restart count, this
        WORLD_SIZE) in which every rank has stepped; None until there is one."""
        groups = {}
        for w in self.workers.values():
            if w.world != world or w.first_step is None or w.t.get("t_first_line", 0) < after:
                continue
            g = groups.setdefault(w.restart, {})
            if w.rank not in g or w.first_step[1] < g[w.rank].first_step[1]:
                g[w.rank] = w
        done = [g for g in groups.values() if sorted(g) == list(range(world))]
        if not done:
            return None
        return min(done, key=lambda g: max(w.first_step[1] for w in g.values()))


def progress(traces, world, after):
    """Where each rank of the attempts started after `after` got to, for error messages."""
    latest = {}
    for w in traces.workers.values():
        if w.world == world and w.t.get("t_first_line", 0) >= after and (
                w.rank not in latest or w.t["t_first_line"] > latest[w.rank].t["t_first_line"]):
            latest[w.rank] = w
    if not latest:
        return "no worker of a new attempt logged anything"
    where = []
    for rank in range(world):
        w = latest.get(rank)
        if w is None:
            where.append(f"rank {rank}: not started")
        elif w.first_step:
            where.append(f"rank {rank}: stepping")
        else:
            last = max(w.t, key=w.t.get)
            stuck = {"t_first_line": "importing", "t_imported": "in init_process_group",
                     "t_pg": "before its first step"}[last]
            where.append(f"rank {rank} (restart {w.restart}): {stuck}")
    return "; ".join(where)


def phases_of(group, t0):
    last = {k: max(w.t.get(k, 0) for w in group.values())
            for k in ("t_first_line", "t_imported", "t_pg")}
    end = max(w.first_step[1] for w in group.values())
    return {"total": end - t0, "start": last["t_first_line"] - t0,
            "import": last["t_imported"] - last["t_first_line"],
            "pg": last["t_pg"] - last["t_imported"], "step": end - last["t_pg"]}


# ---------------------------------------------------------------------------
# One run: its processes, its temp dir

def stamp_lines(pipe, path, lines):
    """Copies `pipe` to the file `path` line by line, appending (time.time(), line) to `lines`
    as each arrives; returns at EOF."""
    with pipe, open(path, "w") as f:
        for raw in iter(pipe.readline, b""):
            line = raw.decode(errors="replace").rstrip("\n")
            lines.append((time.time(), line))
            f.write(line + "\n")
            f.flush()


class Run:
    def __init__(self, workroot, name):
        self.dir = tempfile.mkdtemp(prefix=name + "-", dir=workroot)
        self.trace_dir = os.path.join(self.dir, "trace")
        self.ckpt = os.path.join(self.dir, "ckpt.pt")
        self.traces = Traces(self.trace_dir)
        self.procs = []
        self.commands = []

    def script_args(self, args):
        if getattr(args, "script", "ddp") == "hf":
            return [HF_SCRIPT, "--out", os.path.join(self.dir, "out"), "--trace", self.trace_dir,
                    "--steps", "1000000", "--step-sleep", str(args.step_sleep)]
        return [SCRIPT, "--ckpt", self.ckpt, "--trace", self.trace_dir, "--steps", "1000000",
                "--step-sleep", str(args.step_sleep)]

    def spawn(self, cmd, env, name, stamped=False):
        """Starts `cmd` in a session of its own, stdout and stderr into DIR/NAME.out/.err.
        stamped: stderr goes through a pipe instead, and each line is also kept, with the
        time.time() it arrived at, in proc.stamped [(t, line)] (for logs without times)."""
        shown = [f"{k}={shlex.quote(env[k])}" for k in SHOWN_ENV if k in env]
        self.commands.append(" ".join(shown + [shlex.join(cmd)]))
        err_path = os.path.join(self.dir, name + ".err")
        out = open(os.path.join(self.dir, name + ".out"), "w")
        err = subprocess.PIPE if stamped else open(err_path, "w")
        try:
            proc = subprocess.Popen(cmd, env=env, stdout=out, stderr=err, stdin=subprocess.DEVNULL,
                                    start_new_session=True)
        finally:
            out.close()
            if not stamped:
                err.close()
        proc.name = name
        proc.err_path = err_path
        proc.stamped = []
        if stamped:
            threading.Thread(target=stamp_lines, args=(proc.stderr, err_path, proc.stamped),
                             daemon=True).start()
        self.procs.append(proc)
        return proc

    def shown_commands(self):
        """The command lines run, each once, "    (xN)" after one run N times (the report's)."""
        counts = {}
        for line in self.commands:
            counts[line] = counts.get(line, 0) + 1
        return [line + (f"    (x{n})" if n > 1 else "") for line, n in counts.items()]

    def wait(self, what, pred, timeout, watch=()):
        """Polls the traces until pred() is true; RunError after `timeout` s or when a
        watched launcher exits."""
        deadline = time.monotonic() + timeout
        while True:
            self.traces.poll()
            result = pred()
            if result:
                return result
            for p in watch:
                if p.poll() is not None:
                    raise RunError(f"{what}: {p.name} exited with {p.returncode}: "
                                   f"{tail(p.err_path, 6).strip()[-600:]}")
            if time.monotonic() >= deadline:
                raise RunError(f"{what}: not within {timeout:.0f} s")
            time.sleep(0.02)

    def muster_events(self):
        """warm_ready (pid, rss_mib, import_seconds) and warm_fallback reasons of every muster."""
        ready, fallbacks = [], []
        for p in self.procs:
            try:
                text = open(p.err_path, errors="replace").read()
            except OSError:
                continue
            for line in re.findall(r"event=warm_ready .*", text):
                kv = dict(re.findall(r"(\w+)=(\S+)", line))
                try:
                    ready.append((int(kv["pid"]), float(kv.get("rss_mib", "nan")),
                                  float(kv.get("import_seconds", kv.get("seconds", "nan")))))
                except (KeyError, ValueError):
                    pass
            fallbacks += re.findall(r"event=warm_fallback reason=\"(.*?)\"", text)
        return ready, fallbacks

    def kill_all(self):
        self.traces.poll()
        # Only a launcher not reaped yet (returncode None) still owns its pid and process group
        # id; one that exited and was reaped may share them with an unrelated process by now.
        live = [p for p in self.procs if p.returncode is None]
        victims = descendants([p.pid for p in live])
        for w in self.traces.workers.values():  # workers orphaned by a killed agent
            if w.starttime is not None and procs.alive(w.pid, w.starttime) and w.pid not in victims:
                victims.append(w.pid)
        procs.kill_pids(victims, group=False)
        procs.kill_pids([p.pid for p in live])  # each launcher's process group, then itself
        for p in self.procs:
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                log(f"warning: {p.name} (pid {p.pid}) did not exit after SIGKILL")
        deadline = time.monotonic() + 5
        while any(alive(pid) for pid in victims) and time.monotonic() < deadline:
            time.sleep(0.02)
        left = [pid for pid in victims if alive(pid)]
        if left:
            log(f"warning: still running after SIGKILL: {left}")
        self.procs = []


# ---------------------------------------------------------------------------
# Commands

def muster_cmd(args, column, flags, run):
    cmd = [args.muster] + flags + (["--no-warm-workers"] if column == "cold" else [])
    extra = {"MUSTER_LOG_LEVEL": "info"}
    if column == "warm-torch":  # the warm process imports torch's modules only, as before
        extra["MUSTER_WARM_IMPORT_SCAN"] = "torch"
    if getattr(args, "muster_torch", "1.13") == "2.14":
        extra.update(MUSTER_PYTHON=CHROOT_PYTHON, MUSTER_TORCH_CHROOT=args.torch_chroot)
    return cmd + run.script_args(args), base_env(extra)


def torchrun_cmd(args, version, flags, run):
    """flags use underscores (torch 1.13's torchrun knows only those)."""
    if version == "1.13":
        return [PYTHON, COMPAT] + flags + run.script_args(args), base_env(drop=("MUSTER_PYTHON",))
    hook = os.path.join(run.dir, "no_libuv_hook.py")
    with open(hook, "w") as f:
        f.write(NO_LIBUV_HOOK)
    cmd = [CHROOT_PYTHON, COMPAT] + flags + ["--local_addr", "127.0.0.1", hook] + run.script_args(args)
    extra = {"MUSTER_TORCH_CHROOT": args.torch_chroot}
    if not args.torchrun_shared_store:
        extra["TORCH_DISABLE_SHARE_RDZV_TCP_STORE"] = "1"
    return cmd, base_env(extra, drop=("MUSTER_PYTHON",))


def warm_info(run, group_workers):
    ready, fallbacks = run.muster_events()
    forked = [w.forked for w in group_workers if w.forked is not None]
    return {"forked": (sum(forked), len(forked)), "fallbacks": fallbacks, "ready": ready}


