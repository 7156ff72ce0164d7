"""Warm workers on an unmodified PyTorch DDP script: muster (warm and cold) vs torchrun 1.13 and 2.14.

usage: torch_recovery.py [worker-kill|agent-kill|first-step|all] [--runs N] [options]
       (--scenario NAME is the same as the positional name; default: all)

The workers run scripts/bench/torch_ddp_ckpt.py, an ordinary DDP script (gloo,
init_process_group from the environment, DistributedSampler, rank 0 saves a
checkpoint every 10 steps, every start resumes from it, --step-sleep per
step). It appends phase lines to a file per rank (--trace): t_first_line
(its first statement, before import torch), t_imported, t_pg (after
init_process_group) and t_step N, with its pid, TORCHELASTIC_RESTART_COUNT
and WORLD_SIZE. Every time below comes from those lines and this script's
time.time() at the kill or the launch (one clock, chroot included).

Columns: "muster warm" is muster with its default settings (warm workers on),
"muster cold" adds --no-warm-workers; muster's workers run /usr/bin/python3
(torch 1.13), MUSTER_LOG_LEVEL=info (its warm_ready / warm_fallback events
are read from its stderr). torchrun 1.13 is this host's Debian torchrun
through torchrun_compat.py; torchrun 2.14 is Debian sid's, through
tests/torch/chroot_python.sh in the chroot --torch-chroot (root only; else
skipped with the reason). Both torchruns get --monitor_interval 0.1. The
workers of torchrun 2.14 start through a small bench wrapper (written into the
run's temp dir) that makes TCPStore default to use_libuv=False when torch
imports it (Debian's torch is built without libuv; see tests/torch/no_libuv.py)
without importing anything itself, so t_first_line keeps its meaning. torchrun
2.14 also gets TORCH_DISABLE_SHARE_RDZV_TCP_STORE=1 (unless
--torchrun-shared-store): by default its workers share the rendezvous's
TCPStore across restarts with no per-attempt prefix, and a restarted attempt
can then hang in init_process_group on the previous attempt's keys
(pytorch/pytorch#135712; seen here). A torchrun that does not restart or
re-form within --window s is reported as such, with where each rank got to.

Scenarios:
  worker-kill  --nproc (3) workers, one node, --standalone --max-restarts 3.
               Once every rank has logged step >= --kill-after-step (12; a
               checkpoint exists), rank 1's worker (its pid from its trace) is
               SIGKILLed. Measured: kill -> every rank logged a step of the new
               attempt. Columns: muster warm, muster cold, torchrun 1.13, 2.14.
               Targets: muster warm p50 <= 0.8 s and >= 5x faster than each
               torchrun.
  agent-kill   elastic: 3 agents x 2 workers on this machine (--nnodes 2:3
               --rdzv-backend c10d --rdzv-endpoint 127.0.0.1:PORT --max-restarts 3
               --rdzv-conf last_call_timeout=1 for every launcher). Agent 0 is
               started first and serves the rendezvous (checked: it owns the
               listening socket); with --musterd a standalone musterd serves it.
               Once every rank steps, an agent that does not serve the
               rendezvous (preferably not the one holding rank 0 either) is
               SIGKILLed; with --kill node its workers are SIGKILLed with it (a
               lost node: torchrun's workers outlive a killed agent, muster's
               die with it). Measured: kill -> each of the 4 surviving ranks
               logged a step of the new generation (WORLD_SIZE 4). Columns:
               muster warm, muster cold, torchrun 2.14 (watched --window s; a
               torchrun that does not re-form is reported as such, with what
               it did instead). Target: muster warm p50 <= 1.2 s.
  first-step   launch -> every rank logged its first step, one node, --nprocs
               (4,8) workers, fresh checkpoint. Columns: muster warm, muster
               cold, torchrun 2.14, 1.13. Target: muster warm >= 2x faster than
               muster cold and than torchrun 2.14. Also: the warm process's RSS
               (muster's event=warm_ready rss_mib, plus its /proc Pss/Private),
               and the memory of the workers at step --rss-step (5): VmRSS from
               /proc/PID/status, Pss and Private_Clean+Private_Dirty from
               /proc/PID/smaps_rollup (medians over ranks and runs).

Phase breakdown (medians over runs): each phase ends when the LAST rank of
the new attempt reaches it, so the phases add up to the total:
  start   kill (launch) -> last t_first_line   detect + stop + start
  import  -> last t_imported                     interpreter + import torch
  pg      -> last t_pg                           init_process_group
  step    -> last first step                     DDP set-up, resume, one step
For muster columns the report also says how many workers were forked from
the warm process (no RANK in their /proc/PID/environ, the environment they
were exec'd with) and which warm_fallback events muster logged.

Runs alternate the columns, the order reversed every other run. Every process
is started in its own session; at the end of each run (and on SIGTERM/SIGINT/
SIGHUP) the launchers' process trees, every worker seen in a trace (pid and
start time checked) and the process groups are SIGKILLed; temp dirs are
removed unless a run failed (then kept and named) or --keep.

Exit status: 0; 1 when a muster run failed or a target was MISSED (torchrun's
results never fail the script); 2 on a usage error (missing binaries);
130 when interrupted.
"""
import os
import re
import shlex
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from bench_procs import alive, exit_with, free_port, interrupt_on_signals, log, sigkill, tail
from bench_scenarios import (RunError, Scenario, add_keep_and_bin_dir_args, add_wait_args, find_binaries,
                             finish, fmt, med, print_block, print_failures, print_header,
                             print_targets, run_alternated, scenario_parser, span, target_line)
from testlib.torch_refs import (CHROOT_PYTHON, COMPAT, add_reference_args, chroot_unavailable_reason,
                                selected_versions)

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
SCRIPT = os.path.join(HERE, "torch_ddp_ckpt.py")
PYTHON = "/usr/bin/python3"  # Debian's interpreter, the one with torch 1.13
SCENARIOS = ("worker-kill", "agent-kill", "first-step")
LABELS = {"warm": "muster warm", "cold": "muster cold", "1.13": "torchrun 1.13",
          "2.14": "torchrun 2.14 (chroot)"}
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

def proc_stat(pid):
    """(state, ppid, starttime) or None."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return fields[0], int(fields[1]), int(fields[19])
    except (OSError, IndexError, ValueError):
        return None


def descendants(roots):
    """Every live process below the pids in `roots` (by ppid), roots excluded."""
    children = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            st = proc_stat(int(name))
            if st:
                children.setdefault(st[1], []).append(int(name))
    found, todo = [], list(roots)
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in found and child not in roots:
                found.append(child)
                todo.append(child)
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
        st = proc_stat(pid)
        self.starttime = st[2] if st else None  # to tell it from a reused pid
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
            st = proc_stat(w.pid)
            if st and w.starttime is not None and st[2] == w.starttime and w.pid not in victims:
                victims.append(w.pid)
        for pid in victims:
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        for p in live:
            for fn in (lambda: os.killpg(p.pid, signal.SIGKILL), lambda: os.kill(p.pid, signal.SIGKILL)):
                try:
                    fn()
                except (ProcessLookupError, PermissionError):
                    pass
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
    return cmd + run.script_args(args), base_env({"MUSTER_LOG_LEVEL": "info"})


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


# ---------------------------------------------------------------------------
# Scenarios: each returns a result dict ("total", phases, ...) or raises RunError

def worker_kill(args, column, run):
    n = args.nproc
    if column in ("warm", "cold"):
        cmd, env = muster_cmd(args, column, ["--standalone", "--nproc-per-node", str(n),
                                             "--max-restarts", "3"], run)
    else:
        cmd, env = torchrun_cmd(args, column, ["--standalone", "--nproc_per_node", str(n),
                                               "--max_restarts", "3", "--monitor_interval", "0.1"], run)
    launcher = run.spawn(cmd, env, "launcher")
    tr = run.traces
    run.wait(f"every rank at step {args.kill_after_step}",
             lambda: tr.all_stepping(n, args.kill_after_step), args.timeout, [launcher])
    victim = tr.current(n)[1]
    killed_at = time.time()
    os.kill(victim.pid, signal.SIGKILL)
    muster = column in ("warm", "cold")
    try:
        group = run.wait("every rank stepping in a new attempt", lambda: tr.new_group(n, killed_at),
                         args.timeout if muster else args.window, [launcher])
    except RunError as exc:
        exc.args = (f"{exc.args[0]} ({progress(tr, n, killed_at)})",)
        if muster:
            raise
        return {"none": f"did not restart: {exc.args[0]}"}
    res = phases_of(group, killed_at)
    res["resumed_at"] = min(w.first_step[0] for w in group.values())
    if column in ("warm", "cold"):
        res.update(warm_info(run, list(tr.workers.values())))
    return res


def agent_kill(args, column, run):
    port = free_port()
    endpoint = f"127.0.0.1:{port}"
    rid = f"bench{os.getpid()}"
    watch = []
    if column in ("warm", "cold") and args.musterd:
        daemon = run.spawn([args.musterd_bin, "--host", "127.0.0.1", "--port", str(port)],
                           base_env({"MUSTER_LOG_LEVEL": "info"}), "musterd")
        watch.append(daemon)
        wait_port(port, 10, daemon)
    agents = []
    for i in range(AGENTS):
        flags = elastic_flags(column in ("warm", "cold"), endpoint, rid, args.last_call_timeout)
        if column in ("warm", "cold"):
            cmd, env = muster_cmd(args, column, flags, run)
        else:
            cmd, env = torchrun_cmd(args, column, flags, run)
        agents.append(run.spawn(cmd, env, f"agent{i}"))
        if i == 0 and not watch:  # agent 0 first: it binds the endpoint and serves
            wait_port(port, args.timeout, agents[0])
    watch += agents
    world = AGENTS * AGENT_NPROC
    tr = run.traces
    run.wait(f"every rank at step {args.kill_after_step}",
             lambda: tr.all_stepping(world, args.kill_after_step), args.timeout, watch)
    candidates, hosts, workers_of = agents_to_kill(agents, port, tr.current(world).values())
    victim = agents[candidates[0]]
    victim_ranks = sorted(w.rank for w in workers_of[candidates[0]])
    watch = [p for p in watch if p is not victim]
    doomed = [victim.pid] + (descendants([victim.pid]) if args.kill == "node" else [])
    killed_at = time.time()
    sigkill(doomed)
    limit = args.timeout if column in ("warm", "cold") else args.window
    try:
        group = run.wait(f"the {SURVIVORS} surviving ranks stepping in a new generation",
                         lambda: tr.new_group(SURVIVORS, killed_at), limit, watch)
    except RunError as exc:
        exc.args = (f"{exc.args[0]} ({progress(tr, SURVIVORS, killed_at)})",)
        if column in ("warm", "cold"):
            raise
        exited = [(p.name, p.returncode) for p in watch if p.poll() is not None]
        orphans = sum(alive(w.pid) for w in workers_of[candidates[0]])
        old = [w for w in tr.current(world).values() if w.t["t_first_line"] < killed_at]
        still = [w for w in old if w.last_step and w.last_step[1] > killed_at + limit / 2]
        what = f"did not re-form within {limit:.0f} s"
        what += f"; exited {exited}" if exited else "; survivors kept running"
        if args.kill == "agent":
            what += (f"; {orphans} of the killed agent's {len(workers_of[candidates[0]])} workers "
                     f"still running (orphaned)")
        if len(still) == world:
            what += (f"; all {world} ranks of the old generation still stepping (up to step "
                     f"{max(w.last_step[0] for w in still)})")
        return {"none": what + f" (new attempt: {progress(tr, SURVIVORS, killed_at)})"}
    res = phases_of(group, killed_at)
    res["victim"] = f"agent{candidates[0]} (ranks {victim_ranks}; rendezvous host: "
    res["victim"] += ", ".join(f"agent{h}" for h in hosts) if hosts else (
        "musterd" if args.musterd and column in ("warm", "cold") else "not found")
    res["victim"] += ")"
    if column in ("warm", "cold"):
        res.update(warm_info(run, list(tr.workers.values())))
    return res


def elastic_flags(muster, endpoint, rid, last_call_timeout):
    """The launcher flags of one agent of the elastic job (muster's spelling, or torchrun's
    with --monitor_interval 0.1; torchrun_cmd adds torchrun 2.x's --local_addr)."""
    if muster:
        return ["--nnodes", f"2:{AGENTS}", "--nproc-per-node", str(AGENT_NPROC), "--rdzv-backend", "c10d",
                "--rdzv-endpoint", endpoint, "--rdzv-id", rid, "--max-restarts", "3",
                "--local-addr", "127.0.0.1", "--rdzv-conf", f"last_call_timeout={last_call_timeout}"]
    return ["--nnodes", f"2:{AGENTS}", "--nproc_per_node", str(AGENT_NPROC), "--rdzv_backend", "c10d",
            "--rdzv_endpoint", endpoint, "--rdzv_id", rid, "--max_restarts", "3",
            "--monitor_interval", "0.1", "--rdzv_conf", f"last_call_timeout={last_call_timeout}"]


def agents_to_kill(agents, port, workers):
    """The agents (indexes into `agents`) that may be killed, best first: not the one serving
    the rendezvous on `port` (nor agent 0 when none is found to), preferably not the one whose
    workers hold rank 0 (the master). `workers`: the running ones, each with .pid and .rank.
    Returns (candidates, hosts, {index: its workers}); RunError when there is none."""
    inodes = listening_inodes(port)
    hosts = [i for i, a in enumerate(agents) if owns_socket(a.pid, inodes)]
    workers = list(workers)
    below = {i: set(descendants([a.pid])) for i, a in enumerate(agents)}  # forked ones included
    workers_of = {i: [w for w in workers if w.pid in below[i]] for i in range(len(agents))}
    candidates = sorted((i for i in range(len(agents)) if i not in hosts and (hosts or i != 0)),
                        key=lambda i: (any(w.rank == 0 for w in workers_of[i]), i))
    if not candidates:
        raise RunError(f"no agent to kill that does not serve the rendezvous (hosts {hosts})")
    return candidates, hosts, workers_of


def first_step(args, column, run, nproc):
    if column in ("warm", "cold"):
        cmd, env = muster_cmd(args, column, ["--standalone", "--nproc-per-node", str(nproc)], run)
    else:
        cmd, env = torchrun_cmd(args, column, ["--standalone", "--nproc_per_node", str(nproc),
                                               "--monitor_interval", "0.1"], run)
    launched_at = time.time()
    launcher = run.spawn(cmd, env, "launcher")
    tr = run.traces
    group = run.wait("every rank's first step", lambda: tr.new_group(nproc, 0), args.timeout,
                     [launcher])
    res = phases_of(group, launched_at)
    run.wait(f"every rank at step {args.rss_step}", lambda: tr.all_stepping(nproc, args.rss_step),
             args.timeout, [launcher])
    mems = [memory(w.pid) for w in tr.current(nproc).values()]
    for key in ("rss", "pss", "private"):
        values = [m[key] for m in mems if key in m]
        if values:
            res["worker_" + key] = statistics.median(values)
    if column in ("warm", "cold"):
        res.update(warm_info(run, list(tr.workers.values())))
        if res["ready"]:
            pid, rss_mib, import_s = res["ready"][0]
            if rss_mib == rss_mib:  # not NaN
                res["warm_rss_log"] = rss_mib
            if import_s == import_s:
                res["warm_import_s"] = import_s
            wm = memory(pid)
            for key in ("rss", "pss", "private"):
                if key in wm:
                    res["warm_" + key] = wm[key]
    return res


def wait_port(port, timeout, proc):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RunError(f"{proc.name} exited with {proc.returncode}: {tail(proc.err_path, 6)}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.02)
    raise RunError(f"nothing listens on 127.0.0.1:{port} after {timeout:.0f} s")


# ---------------------------------------------------------------------------
# Report

def report(sc, skipped, runs):
    """Prints the tables of one scenario; returns the list of MISSED targets and failures."""
    problems = []
    print_header(sc, LABELS, runs)
    totals = {c: [r["total"] for r in sc.results[c] if "total" in r] for c in sc.columns}
    warm = med(totals.get("warm", []))
    print("| column | p50 (median) | min–max | runs ok | / muster warm (p50) |")
    print("|---|---|---|---|---|")
    for c in sc.columns:
        t = totals[c]
        others = [r for r in sc.results[c] if "total" not in r]
        ratio = f"{med(t) / warm:.1f}x" if (t and warm) else "—"
        print(f"| {LABELS[c]} | {fmt(med(t))} | {span(t)} | {len(t)}/{len(sc.results[c])} | {ratio} |")
        problems += print_failures(sc, LABELS, c, others, 5, fatal=c in ("warm", "cold"))
    for v, reason in skipped.items():
        print(f"| {LABELS[v]} | not measured: {reason} | | | |")
    print("\nphase breakdown, medians (each phase ends when the last rank reaches it):\n")
    print("| column | " + " | ".join(label for _, label in PHASES) + " | total |")
    print("|---|" + "---|" * (len(PHASES) + 1))
    for c in sc.columns:
        ok = [r for r in sc.results[c] if "total" in r]
        if ok:
            print(f"| {LABELS[c]} | " + " | ".join(fmt(med([r[k] for r in ok])) for k, _ in PHASES)
                  + f" | {fmt(med([r['total'] for r in ok]))} |")
    extra = []
    for c in ("warm", "cold"):
        ok = [r for r in sc.results.get(c, []) if "forked" in r]
        if ok:
            forked = sum(r["forked"][0] for r in ok)
            seen = sum(r["forked"][1] for r in ok)
            fallbacks = sorted({f for r in ok for f in r["fallbacks"]})
            ready = sum(1 for r in ok if r["ready"])
            extra.append(f"{LABELS[c]}: {forked}/{seen} workers forked from a warm process; "
                         f"warm_ready in {ready}/{len(ok)} runs; warm_fallback: "
                         + ("; ".join(f'"{f}"' for f in fallbacks) if fallbacks else "none"))
            if c == "warm" and (forked < seen or fallbacks):
                problems.append(f"{sc.key}: muster warm started {seen - forked} of {seen} workers "
                                f"cold" + (f" (fallback: {fallbacks[0]})" if fallbacks else ""))
    victims = sorted({r["victim"] for c in sc.columns for r in sc.results[c] if "victim" in r})
    if victims:
        extra.append("killed: " + "; ".join(victims))
    resumed = sorted({r["resumed_at"] for c in sc.columns for r in sc.results[c] if "resumed_at" in r})
    if resumed:
        extra.append(f"first step of the new attempt (resumed from the checkpoint): {resumed}")
    print_block(extra)
    return totals, problems


def print_memory(sc):
    print("\nmemory at step ~5, medians over runs (workers: median over ranks; MiB):\n")
    print("| column | worker VmRSS | worker Pss | worker Private | warm process rss_mib (log) | "
          "warm VmRSS | warm Pss | warm Private | warm import s |")
    print("|---|---|---|---|---|---|---|---|---|")
    for c in sc.columns:
        ok = [r for r in sc.results[c] if "total" in r]
        if not ok:
            continue

        def m(key):
            values = [r[key] for r in ok if key in r]
            return f"{med(values):.0f}" if values else "—"

        imp = [r["warm_import_s"] for r in ok if "warm_import_s" in r]
        print(f"| {LABELS[c]} | {m('worker_rss')} | {m('worker_pss')} | {m('worker_private')} | "
              f"{m('warm_rss_log')} | {m('warm_rss')} | {m('warm_pss')} | {m('warm_private')} | "
              f"{(f'{med(imp):.2f}' if imp else '—')} |")


def describe(sc, res):
    """A run's progress line: its total and phases."""
    return f"{res['total']:.3f} s (" + ", ".join(f"{k} {res[k]:.3f}" for k, _ in PHASES) + ")"


# ---------------------------------------------------------------------------

def main():
    parser = scenario_parser(__doc__, SCENARIOS)
    parser.add_argument("--nproc", type=int, default=3, help="worker-kill: workers (default 3)")
    parser.add_argument("--nprocs", default="4,8", help="first-step: worker counts (default 4,8)")
    parser.add_argument("--step-sleep", type=float, default=0.05,
                        help="the script's sleep per step (default 0.05 s)")
    parser.add_argument("--kill-after-step", type=int, default=12,
                        help="kill once every rank logged this step (default 12)")
    parser.add_argument("--rss-step", type=int, default=5,
                        help="first-step: read worker memory at this step (default 5)")
    add_wait_args(parser, "a run")
    parser.add_argument("--last-call-timeout", type=int, default=1,
                        help="agent-kill: --rdzv-conf last_call_timeout for every launcher, whole "
                             "seconds as torchrun requires (default 1)")
    parser.add_argument("--kill", choices=("agent", "node"), default="agent",
                        help="agent-kill: SIGKILL the agent process only (default), or the agent and "
                             "its workers at once (a node lost)")
    parser.add_argument("--musterd", action="store_true",
                        help="agent-kill: muster's rendezvous in a standalone musterd, not agent 0")
    parser.add_argument("--settle", type=float, default=1.0,
                        help="pause between runs, for the machine to quiet down (default 1 s)")
    parser.add_argument("--torchrun-shared-store", action="store_true",
                        help="torchrun 2.14 as it comes: workers share the rendezvous's TCPStore "
                             "across restarts (by default TORCH_DISABLE_SHARE_RDZV_TCP_STORE=1, "
                             "without which its restarted workers can hang in init_process_group "
                             "on the previous attempt's keys: pytorch/pytorch#135712)")
    parser.add_argument("--columns", default="warm,cold,1.13,2.14",
                        help="columns to run, of warm, cold, 1.13, 2.14 (default all; which torchruns "
                             "a scenario compares with by default is said above)")
    add_keep_and_bin_dir_args(parser)
    add_reference_args(parser)
    args = parser.parse_args()
    scenario = args.scenario_opt or args.scenario or "all"
    if args.scenario_opt and args.scenario and args.scenario_opt != args.scenario:
        parser.error("the positional scenario and --scenario differ")
    scenarios = SCENARIOS if scenario == "all" else (scenario,)
    if not find_binaries(args, args.musterd and "agent-kill" in scenarios):
        return 2
    if not os.access(PYTHON, os.X_OK):
        print(f"error: {PYTHON} (Debian's python3 with torch) not found", file=sys.stderr)
        return 2
    try:
        nprocs = [int(x) for x in args.nprocs.split(",") if x.strip()]
    except ValueError:
        parser.error("--nprocs: comma-separated integers")
    if args.runs < 1 or args.nproc < 2 or any(n < 1 for n in nprocs):
        parser.error("--runs >= 1, --nproc >= 2 (rank 1 is killed), --nprocs >= 1")
    explicit = any(a == "--torchrun" or a.startswith("--torchrun=") for a in sys.argv[1:])
    versions = selected_versions(parser, args)
    skipped_all = {}
    if "2.14" in versions and (reason := chroot_unavailable_reason(args.torch_chroot)):
        skipped_all["2.14"] = reason

    def refs(defaults):
        chosen = [v for v in (versions if explicit else [v for v in defaults if v in versions])
                  if v in wanted]
        return ([v for v in chosen if v not in skipped_all],
                {v: skipped_all[v] for v in chosen if v in skipped_all})

    wanted = [c.strip() for c in args.columns.split(",") if c.strip()]
    for c in wanted:
        if c not in LABELS:
            parser.error(f"--columns: unknown column '{c}' (known: {', '.join(LABELS)})")
    if not args.torchrun_shared_store:
        LABELS["2.14"] = "torchrun 2.14 (chroot, unshared store)"

    def cols_of(refs_cols):
        return [c for c in ["warm", "cold"] + refs_cols if c in wanted]

    plan = []  # (Scenario, skipped)
    if "worker-kill" in scenarios:
        cols, skipped = refs(["1.13", "2.14"])
        plan.append((Scenario("worker-kill",
                              f"worker-kill: {args.nproc} workers, one node; SIGKILL of rank 1 at step "
                              f">= {args.kill_after_step} -> every rank stepped in the new attempt",
                              cols_of(cols), worker_kill), skipped))
    if "agent-kill" in scenarios:
        cols, skipped = refs(["2.14"])
        plan.append((Scenario("agent-kill",
                              f"agent-kill: {AGENTS} agents x {AGENT_NPROC} workers (--nnodes 2:{AGENTS}, "
                              f"c10d, rendezvous served by {'musterd (muster) / agent0 (torchrun)' if args.musterd else 'agent0'}); "
                              f"SIGKILL of a non-serving agent{' and its workers' if args.kill == 'node' else ''} "
                              f"at step >= {args.kill_after_step} -> the "
                              f"{SURVIVORS} surviving ranks stepped in the new generation",
                              cols_of(cols), agent_kill), skipped))
    if "first-step" in scenarios:
        cols, skipped = refs(["2.14", "1.13"])
        for n in nprocs:
            plan.append((Scenario(f"first-step-{n}",
                                  f"first-step: {n} workers, one node; launch -> every rank's first step",
                                  cols_of(cols),
                                  lambda a, c, r, n=n: first_step(a, c, r, n)), skipped))

    interrupt_on_signals()
    kept, workroot = run_alternated(args, [sc for sc, _ in plan], Run, LABELS, describe,
                                    "muster-torch-recovery-")

    problems = []
    for sc, skipped in plan:
        totals, found = report(sc, skipped, args.runs)
        problems += found
        warm = med(totals.get("warm", []))
        lines = []
        if sc.key == "worker-kill" and warm is not None:
            lines.append(target_line("muster warm p50 <= 0.8 s", warm <= 0.8, fmt(warm)))
            for v in ("1.13", "2.14"):
                if totals.get(v):
                    r = med(totals[v]) / warm
                    lines.append(target_line(f"muster warm >= 5x faster than {LABELS[v]}", r >= 5, f"{r:.1f}x"))
        elif sc.key == "agent-kill" and warm is not None:
            lines.append(target_line("muster warm p50 <= 1.2 s", warm <= 1.2, fmt(warm)))
        elif sc.key.startswith("first-step") and warm is not None:
            for c in ("cold", "2.14"):
                if totals.get(c):
                    r = med(totals[c]) / warm
                    lines.append(target_line(f"muster warm >= 2x faster than {LABELS[c]}", r >= 2, f"{r:.1f}x"))
            print_memory(sc)
        problems += print_targets(sc, lines)
    return finish(kept, workroot, problems)


if __name__ == "__main__":
    exit_with(main)
