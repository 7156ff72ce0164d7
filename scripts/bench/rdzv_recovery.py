"""Detection and recovery after a node fault: muster (musterd) vs torchrun's c10d rendezvous.

Three agents x two workers (`--nnodes 2:3 --nproc-per-node 2`), workers are
tests/integration/workers/gen_dump.py (each records its start time). One agent
that is not the master (muster) / not the c10d store host (torchrun) is
faulted:

  kill-9     SIGKILL of the agent (loopback)
  sigstop    SIGSTOP of the agent: a silent node (loopback)
  link-down  each agent in its own network namespace behind a bridge; the
             victim's veth is set down (open connections hang, no RST)

Measured: the time from the fault to the start of the LAST worker of the new
generation that holds the 4 surviving workers (the `start` gen_dump records).
For muster also the time from the fault to musterd announcing the new
generation (its log), i.e. detection + re-forming without worker start-up.
torchrun (through torchrun_compat.py, --monitor_interval 0.1, --max_restarts 3)
is watched for --window seconds after each fault; if it does not re-form, the
table says so with what its agents printed after the fault. --torchrun picks
the versions: 1.13 is this host's Debian torch (/usr/bin/python3); 2.14 is
Debian sid's, run through tests/torch/chroot_python.sh in the chroot
--torch-chroot (needs root) with --local_addr set to the agent's address
(the one muster's agents are given with --local-addr too); its
workers are the same gen_dump.py, run by the chroot's python3. muster's
workers run on /usr/bin/python3 (gen_dump.py does not import torch).

Runs alternate muster and each torchrun per fault. Everything this script starts is
killed by PID (and process group) in `finally`; namespaces, veths and the
bridge it creates are deleted in `finally` and on SIGTERM/SIGINT/SIGHUP.

Exit status: 0, or 1 when a muster run failed or a muster detection target
was MISSED (torchrun's results never fail the script); 130 when interrupted.
"""
import argparse
import datetime
import json
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from bench_procs import Interrupted, alive, free_port, interrupt_on_signals, log, proc_state, tail
from testlib.procs import cmdline, kill_tree  # noqa: E402
from testlib.netns import BridgedHosts  # noqa: E402
from testlib.ports import bound_port  # noqa: E402
from testlib.torch_refs import (CHROOT_PYTHON, COMPAT, PYTHON, add_reference_args,  # noqa: E402
                                chroot_unavailable_reason, selected_versions)

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
GEN_DUMP = os.path.join(ROOT, "tests", "integration", "workers", "gen_dump.py")
NPROC = 2
SURVIVOR_WORKERS = 4
TARGETS = {"kill-9": 0.25, "sigstop": 1.5, "link-down": 1.5}  # muster detection targets (s)

_started = []  # every Popen this script made


def base_env(extra=None):
    env = dict(os.environ)
    for key in list(env):
        if key.startswith("PET_") or key in ("CUDA_VISIBLE_DEVICES", "OMP_NUM_THREADS"):
            del env[key]
    env["MUSTER_PYTHON"] = PYTHON
    env.update(extra or {})
    return env


def spawn(args, log_prefix, env=None):
    """Starts a process in its own session, stdout/stderr to files."""
    out = open(log_prefix + ".out", "w")
    err = open(log_prefix + ".err", "w")
    proc = subprocess.Popen(args, env=env or base_env(), stdout=out, stderr=err,
                            stdin=subprocess.DEVNULL, start_new_session=True)
    out.close()
    err.close()
    proc.log_prefix = log_prefix
    _started.append(proc)
    return proc


def kill_workers_of(out_dir):
    """Kills the workers recorded in out_dir that still run gen_dump.py on out_dir."""
    for rec in read_records(out_dir).values():
        pid = rec["pid"]
        cmd = cmdline(pid).split(b"\0")
        if GEN_DUMP.encode() in cmd and out_dir.encode() in cmd:  # not a reused pid
            kill_tree(pid)


def cleanup_procs(procs, out_dir):
    for p in procs:
        try:
            os.kill(p.pid, signal.SIGCONT)
        except (ProcessLookupError, PermissionError):
            pass
        kill_tree(p.pid)
    for p in procs:
        try:
            p.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass
        if p in _started:
            _started.remove(p)
    if out_dir:
        kill_workers_of(out_dir)


def read_records(out_dir):
    """{(file, pid): record} for every worker start recorded in out_dir."""
    result = {}
    try:
        names = os.listdir(out_dir)
    except OSError:
        return result
    for name in names:
        if not re.fullmatch(r"g\d+_r\d+\.json", name):
            continue
        try:
            with open(os.path.join(out_dir, name)) as f:
                rec = json.load(f)
        except (OSError, ValueError):
            continue
        result[(name, rec["pid"])] = rec
    return result


class Watcher:
    """Remembers every record ever seen (torchrun rewrites g0_rN.json in place)."""

    def __init__(self, out_dir):
        self.out_dir = out_dir
        self.seen = {}

    def poll(self):
        self.seen.update(read_records(self.out_dir))

    def complete_group(self, world, after=0.0):
        """Records of one generation with ranks 0..world-1, all started after `after`."""
        groups = {}
        for rec in self.seen.values():
            if rec["start"] < after:
                continue
            env = rec["env"]
            if int(env["WORLD_SIZE"]) != world:
                continue
            key = (env["TORCHELASTIC_RESTART_COUNT"], env["MASTER_ADDR"], env["MASTER_PORT"])
            groups.setdefault(key, {})[rec["rank"]] = rec
        done = [g for g in groups.values() if sorted(g) == list(range(world))]
        if not done:
            return None
        return min(done, key=lambda g: max(r["start"] for r in g.values()))

    def wait_group(self, world, timeout, after=0.0, stop=None):
        deadline = time.monotonic() + timeout
        while True:
            self.poll()
            group = self.complete_group(world, after)
            if group is not None:
                return group
            if time.monotonic() >= deadline or (stop is not None and stop()):
                return None
            time.sleep(0.005)


# ---------------------------------------------------------------------------
# Network namespaces: one bridge in the root namespace, one namespace per host.

def netns_unavailable_reason():
    if os.geteuid() != 0:
        return "needs root"
    for tool in ("ip", "nsenter"):
        if shutil.which(tool) is None:
            return f"`{tool}` not found"
    return None


# ---------------------------------------------------------------------------
# One trial.

def apply_fault(fault, victim, victim_host, netns):
    if fault == "kill-9":
        os.kill(victim.pid, signal.SIGKILL)
    elif fault == "sigstop":
        os.kill(victim.pid, signal.SIGSTOP)
    else:
        netns.link(victim_host, up=False)


def undo_fault(fault, victim, victim_host, netns):
    if fault == "sigstop":
        try:
            os.kill(victim.pid, signal.SIGCONT)
        except ProcessLookupError:
            pass
    elif fault == "link-down" and netns is not None:
        try:
            netns.link(victim_host, up=True)
            netns.wait_reachable()
        except (RuntimeError, subprocess.TimeoutExpired) as exc:
            log(f"warning: {exc}")


def parent_agent(agents, record):
    _, ppid = proc_state(record["pid"])
    for i, agent in enumerate(agents):
        if agent.pid == ppid:
            return i
    raise RuntimeError(f"no agent is the parent of worker pid {record['pid']} (ppid {ppid})")


def musterd_generation_time(err_path, after):
    """Wall time of the first 'event=generation ... world_size=4' musterd logged after `after`."""
    with open(err_path, errors="replace") as f:
        for line in f:
            m = re.match(r"(\S+T\S+) musterd \w+: event=generation .*world_size=(\d+)", line)
            if not m or int(m.group(2)) != SURVIVOR_WORKERS:
                continue
            t = datetime.datetime.strptime(m.group(1), "%Y-%m-%dT%H:%M:%S.%f").timestamp()
            if t >= after - 0.001:  # the log has millisecond resolution
                return t
    return None


def wait_listening(path, timeout=10):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        port = bound_port(open(path).read())
        if port is not None:
            return port
        time.sleep(0.01)
    raise RuntimeError(f"musterd did not start: {tail(path)}")


def wait_port(host, port, timeout, proc):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"store host exited: {tail(proc.log_prefix + '.err')}")
        try:
            with socket.create_connection((host, port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.02)
    raise RuntimeError(f"store at {host}:{port} not up after {timeout}s")


def run_muster(args, fault, workdir, netns):
    """Returns {"recovery": s, "detect": s} or {"error": text}."""
    out_dir = os.path.join(workdir, "out")
    os.makedirs(out_dir)
    env = base_env({"MUSTER_LOG_LEVEL": args.log_level})
    procs = []
    victim = victim_host = None
    try:
        host = netns.gateway if netns else "127.0.0.1"
        daemon = spawn([args.musterd, "--host", host, "--port", "0"],
                       os.path.join(workdir, "musterd"), env)
        procs.append(daemon)
        port = wait_listening(daemon.log_prefix + ".out")
        agents = []
        for i in range(3):
            local = netns.addrs[i] if netns else "127.0.0.1"
            cmd = [args.muster, "--nnodes", "2:3", "--nproc-per-node", str(NPROC),
                   "--rdzv-backend", "c10d", "--rdzv-endpoint", f"{host}:{port}",
                   "--rdzv-id", "bench", "--rdzv-conf", "last_call_timeout=0.5",
                   "--local-addr", local, GEN_DUMP, out_dir]
            agents.append(spawn(netns.wrap(i, cmd) if netns else cmd,
                                os.path.join(workdir, f"agent{i}"), env))
            procs.append(agents[-1])
        watcher = Watcher(out_dir)
        first = watcher.wait_group(3 * NPROC, 30)
        if first is None:
            return {"error": "first generation did not form: " + tail(agents[0].log_prefix + ".err")}
        time.sleep(args.settle)
        victim_host = parent_agent(agents, first[2])  # group rank 1: not the master
        victim = agents[victim_host]
        fault_at = time.time()
        apply_fault(fault, victim, victim_host, netns)
        group = watcher.wait_group(SURVIVOR_WORKERS, args.muster_timeout, after=fault_at)
        if group is None:
            return {"error": f"no new generation within {args.muster_timeout}s"}
        last = max(r["start"] for r in group.values())
        gen_at = musterd_generation_time(daemon.log_prefix + ".err", fault_at)
        return {"recovery": last - fault_at, "detect": None if gen_at is None else gen_at - fault_at}
    finally:
        if victim is not None:
            undo_fault(fault, victim, victim_host, netns)
        cleanup_procs(procs, out_dir)


def run_torchrun(args, fault, workdir, netns, version):
    """Returns {"recovery": s} if it re-formed, else {"none": what happened} or {"error": text}."""
    out_dir = os.path.join(workdir, "out")
    os.makedirs(out_dir)
    if version == "1.13":
        env = base_env()
        launcher = [PYTHON, COMPAT]
    else:
        env = base_env({"MUSTER_TORCH_CHROOT": args.torch_chroot})
        launcher = [CHROOT_PYTHON, COMPAT]
    procs = []
    victim = victim_host = None
    try:
        store_host = netns.addrs[0] if netns else "127.0.0.1"
        port = free_port()
        agents = []
        for i in range(3):
            cmd = launcher + ["--nnodes", "2:3", "--nproc_per_node", str(NPROC),
                              "--rdzv_backend", "c10d", "--rdzv_endpoint", f"{store_host}:{port}",
                              "--rdzv_id", "bench", "--monitor_interval", "0.1", "--max_restarts", "3"]
            if version != "1.13":
                cmd += ["--local_addr", netns.addrs[i] if netns else "127.0.0.1"]
            if netns:  # the endpoint is not this machine's hostname: say who hosts the store
                cmd += ["--rdzv_conf", f"is_host={1 if i == 0 else 0}"]
            cmd += [GEN_DUMP, out_dir]
            agents.append(spawn(netns.wrap(i, cmd) if netns else cmd,
                                os.path.join(workdir, f"agent{i}"), env))
            procs.append(agents[-1])
            if i == 0:  # the store host first
                wait_port(store_host, port, 60, agents[0])  # from the root ns via the bridge
        watcher = Watcher(out_dir)
        first = watcher.wait_group(3 * NPROC, 90)
        if first is None:
            return {"error": "first round did not form: " + tail(agents[0].log_prefix + ".err")}
        time.sleep(args.settle)
        victim_host = 1  # not the store host
        victim = agents[victim_host]
        victim_workers = [r["pid"] for r in first.values() if parent_agent(agents, r) == victim_host]
        survivors = [a for i, a in enumerate(agents) if i != victim_host]
        sizes = {a.pid: (os.path.getsize(a.log_prefix + ".out"), os.path.getsize(a.log_prefix + ".err"))
                 for a in survivors}
        fault_at = time.time()
        apply_fault(fault, victim, victim_host, netns)
        group = watcher.wait_group(SURVIVOR_WORKERS, args.window, after=fault_at,
                                   stop=lambda: all(a.poll() is not None for a in survivors))
        if group is not None:
            return {"recovery": max(r["start"] for r in group.values()) - fault_at}
        # What did it do instead?
        printed = []
        for a in survivors:
            for path, size in zip((a.log_prefix + ".out", a.log_prefix + ".err"), sizes[a.pid]):
                with open(path, errors="replace") as f:
                    f.seek(size)
                    printed += [ln.strip() for ln in f.read().splitlines() if ln.strip()]
        exited = [a.poll() for a in survivors if a.poll() is not None]
        orphans = sum(alive(p) for p in victim_workers)
        watched = time.time() - fault_at
        what = f"did not re-form within {watched:.0f} s"
        what += f"; survivors exited {exited}" if exited else "; survivors kept running"
        what += f" and printed {len(printed)} lines" + (f" (last: `{printed[-1][:100]}`)" if printed else "")
        if fault == "kill-9":
            what += f"; {orphans} of the dead agent's {len(victim_workers)} workers still running"
        return {"none": what}
    finally:
        if victim is not None:
            undo_fault(fault, victim, victim_host, netns)
        cleanup_procs(procs, out_dir)


# ---------------------------------------------------------------------------

def fmt_s(x):
    return f"{x:.3f} s" if x < 10 else f"{x:.1f} s"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5, help="muster runs per fault (default 5)")
    add_reference_args(parser)
    parser.add_argument("--torchrun-runs", type=int, default=2,
                        help="runs of each torchrun per loopback fault (default 2; each can take "
                             "--window s)")
    parser.add_argument("--torchrun-link-runs", type=int, default=1,
                        help="runs of each torchrun for link-down (default 1)")
    parser.add_argument("--window", type=float, default=60.0,
                        help="how long torchrun is watched after a fault (default 60 s)")
    parser.add_argument("--muster-timeout", type=float, default=20.0,
                        help="how long muster is given to re-form (default 20 s)")
    parser.add_argument("--settle", type=float, default=0.5,
                        help="seconds between the first generation and the fault")
    parser.add_argument("--faults", default="kill-9,sigstop,link-down",
                        help="comma-separated, of kill-9, sigstop, link-down (default all three)")
    parser.add_argument("--no-torchrun", action="store_true", help="muster only (same as --torchrun '')")
    parser.add_argument("--log-level", default=os.environ.get("MUSTER_LOG_LEVEL", "info"),
                        help="MUSTER_LOG_LEVEL for musterd and agents (debug for detail)")
    parser.add_argument("--keep", action="store_true", help="keep the logs of every run")
    parser.add_argument("--bin-dir", default=os.path.join(ROOT, "build", "bin"))
    args = parser.parse_args()
    args.muster = os.path.join(args.bin_dir, "muster")
    args.musterd = os.path.join(args.bin_dir, "musterd")
    faults = [f for f in args.faults.split(",") if f]
    for f in faults:
        if f not in TARGETS:
            parser.error(f"--faults: unknown fault '{f}'")
    versions = [] if args.no_torchrun else selected_versions(parser, args)
    skipped = {}  # torchrun version -> why it is not run
    if "2.14" in versions and (reason := chroot_unavailable_reason(args.torch_chroot)):
        skipped["2.14"] = reason
    runners = [v for v in versions if v not in skipped]

    interrupt_on_signals()
    workroot = tempfile.mkdtemp(prefix="muster-recovery-")
    netns = None
    results = {f: {name: [] for name in ["muster"] + versions} for f in faults}
    not_measured = {}
    began = time.monotonic()
    try:
        if "link-down" in faults:
            reason = netns_unavailable_reason()
            if reason is None:
                netns = BridgedHosts()
                try:
                    netns.setup()
                except (RuntimeError, subprocess.TimeoutExpired) as exc:
                    reason = f"network namespace setup failed: {exc}"
                    netns.teardown()
                    netns = None
            if reason:
                not_measured["link-down"] = reason
        for fault in faults:
            if fault in not_measured:
                continue
            ns = netns if fault == "link-down" else None
            tr_runs = args.torchrun_link_runs if fault == "link-down" else args.torchrun_runs
            for i in range(max(args.runs, tr_runs if runners else 0)):
                for launcher, n in [("muster", args.runs)] + [(v, tr_runs) for v in runners]:
                    if i >= n:
                        continue
                    name = "muster" if launcher == "muster" else f"torchrun-{launcher}"
                    workdir = os.path.join(workroot, f"{fault}-{name}-{i}")
                    os.makedirs(workdir)
                    if launcher == "muster":
                        res = run_muster(args, fault, workdir, ns)
                    else:
                        res = run_torchrun(args, fault, workdir, ns, launcher)
                    results[fault][launcher].append(res)
                    desc = ", ".join(f"{k}={fmt_s(v) if isinstance(v, float) else v}"
                                     for k, v in res.items())
                    log(f"[{time.monotonic() - began:5.0f} s] {fault} {name} #{i + 1}: {desc}")
                    if "error" in res:
                        log(f"  logs kept in {workdir}")
                    elif not args.keep:
                        shutil.rmtree(workdir, ignore_errors=True)
    finally:
        for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(s, signal.SIG_IGN)  # let the cleanup finish
        for p in list(_started):
            cleanup_procs([p], None)
        if netns is not None:
            netns.teardown()
        if not args.keep and not any("error" in r for f in results.values()
                                     for runs in f.values() for r in runs):
            shutil.rmtree(workroot, ignore_errors=True)

    sys.stderr.flush()
    print(f"\nrecovery after a node fault, 3 agents x {NPROC} workers (--nnodes 2:3), "
          f"fault -> last surviving worker of the new generation started")
    print(f"muster: {args.runs} runs per fault; torchrun {', '.join(versions) or '(none)'} "
          f"(c10d, --monitor_interval 0.1): {args.torchrun_runs} runs each per loopback fault, "
          f"{args.torchrun_link_runs} for link-down, each watched {args.window:.0f} s\n")
    print("| fault | muster median / max | muster detection median / max (target) | "
          + "".join(f"torchrun {v} (what happened) | ratio {v} | " for v in versions).rstrip())
    print("|---|---|---|" + "---|---|" * len(versions))
    failed = False  # a muster run errored or missed its detection target: exit 1
    for fault in faults:
        if fault in not_measured:
            print(f"| {fault} | not measured: {not_measured[fault]} | |" + " | |" * len(versions))
            continue
        m = [r["recovery"] for r in results[fault]["muster"] if "recovery" in r]
        d = [r["detect"] for r in results[fault]["muster"] if r.get("detect") is not None]
        m_err = [r["error"] for r in results[fault]["muster"] if "error" in r]
        mcell = f"{fmt_s(statistics.median(m))} / {fmt_s(max(m))} (n={len(m)})" if m else "—"
        if m_err:
            mcell += f"; {len(m_err)} failed: {m_err[0][:80]}"
            failed = True
        missed = bool(d) and max(d) > TARGETS[fault]
        failed = failed or missed
        dcell = (f"{fmt_s(statistics.median(d))} / {fmt_s(max(d))} (≤ {TARGETS[fault]} s: "
                 f"{'MISSED' if missed else 'met'})") if d else "—"
        cells = []
        for v in versions:
            t_runs = results[fault][v]
            t = [r["recovery"] for r in t_runs if "recovery" in r]
            parts = []
            if t:
                parts.append(f"re-formed: median {fmt_s(statistics.median(t))}, max {fmt_s(max(t))} "
                             f"({len(t)} of {len(t_runs)})")
            for what in dict.fromkeys(r.get("none") or r.get("error") for r in t_runs
                                      if "recovery" not in r):
                n = sum(1 for r in t_runs if (r.get("none") or r.get("error")) == what)
                parts.append(f"{n}x: {what}")
            tcell = "; ".join(parts) if parts else (f"not run: {skipped[v]}" if v in skipped else "not run")
            ratio = f"{statistics.median(t) / statistics.median(m):.0f}x" if (t and m) else "—"
            cells.append(f"{tcell} | {ratio} |")
        print(f"| {fault} | {mcell} | {dcell} | " + " ".join(cells))
    return 1 if failed else 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except Interrupted as exc:
        log(f"interrupted ({exc}); everything started was killed and removed")
        sys.exit(130)
