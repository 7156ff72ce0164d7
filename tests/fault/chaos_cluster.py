"""The hosts, processes and logs of a chaos run.

- Registry + reaper: every process, namespace prefix, mount and scratch
  directory (etcd's data) the run creates is appended to a registry file; a
  reaper process (this module run with --reap) waits for the driver to go away
  (EOF on a pipe, so even after a SIGKILL of the driver) and then kills and
  removes everything registered.
  cleanup() is the same code, run by the driver itself at the end.
- Hosts: NetnsHosts puts each host (and musterd) in its own network namespace on
  a bridge (testlib.netns.BridgeHosts: addresses SUBNET.1 for the daemon,
  SUBNET.(10+i) for host i), cuts links, and partitions a host from the daemon
  (or from every replica) with nftables; LoopbackHosts runs everything on
  127.0.0.1.
- Proc: a started process whose stdout/stderr lines are read by threads,
  stamped with the wall-clock time they arrived and kept in a shared Log (and
  written to files in the run's log directory).
"""
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "scripts", "lib"))
from testlib import netns, procs  # noqa: E402
from testlib.torch_refs import PYTHON  # noqa: E402
SOURCE_DIR = os.environ.get("MUSTER_SOURCE_DIR", os.path.abspath(os.path.join(HERE, "..", "..")))
BIN_DIR = os.environ.get("MUSTER_BIN_DIR", os.path.join(SOURCE_DIR, "build", "bin"))
HOSTS_SH = netns.HOSTS_SH
PREFIX_STEM = "cx"  # namespaces cx<driver pid>-d, cx<pid>-h<i>; bridge cx<pid>-br
SUBNET = "10.213.66"  # a private /24 of our own; the bridge has no address, so nothing routes it


# What the rest of the suite calls these by (the shared library's names behind them).
proc_start_ticks = procs.start_ticks
pid_alive = procs.alive
kill_pid = procs.kill
processes_naming = procs.processes_naming
netns_list = netns.netns_list


# ---------------------------------------------------------------- registry and reaper

class Registry:
    """Append-only list of what to clean up: 'proc PID TICKS', 'netns PREFIX', 'mount PATH',
    'records DIR', 'rmtree DIR' (removed once the processes are gone). Each line is
    flushed at once so a reaper can act on it."""

    def __init__(self, path):
        self.path = path
        self._f = open(path, "a")
        self._lock = threading.Lock()

    def add(self, kind, *values):
        with self._lock:
            self._f.write(" ".join([kind] + [str(v) for v in values]) + "\n")
            self._f.flush()


def cleanup(registry_path):
    """Kills every registered process (group), every worker a record names, every
    process left in a registered namespace; removes namespaces, unmounts and
    removes the 'rmtree' directories. Idempotent. Returns a list of problems (what
    could not be removed)."""
    procs, prefixes, mounts, record_dirs, trees = [], [], [], [], []
    try:
        with open(registry_path) as f:
            for line in f:
                parts = line.split()
                if not parts:
                    continue
                if parts[0] == "proc" and len(parts) == 3:
                    procs.append((int(parts[1]), int(parts[2]) if parts[2] != "None" else None))
                elif parts[0] == "netns":
                    prefixes.append(parts[1])
                elif parts[0] == "mount":
                    mounts.append(parts[1])
                elif parts[0] == "records":
                    record_dirs.append(parts[1])
                elif parts[0] == "rmtree":
                    trees.append(parts[1])
    except FileNotFoundError:
        return []
    for pid, ticks in procs:
        # Each was started in a session of its own: its pid is its process group.
        if ticks is None or proc_start_ticks(pid) == ticks:
            kill_pid(pid, group=True)
    workers = []
    for d in record_dirs:
        try:
            names = os.listdir(d)
        except FileNotFoundError:
            continue
        for name in names:
            m = re.fullmatch(r"g\d+_r\d+\.json", name)
            if m:
                try:
                    with open(os.path.join(d, name)) as f:
                        text = f.read()
                    pid = int(re.search(r'"pid": (\d+)', text).group(1))
                    ticks = int(re.search(r'"ticks": (\d+)', text).group(1))
                except (OSError, AttributeError, ValueError):
                    continue
                workers.append((pid, ticks))
                kill_pid(pid, ticks, group=True)
    problems = []
    for prefix in prefixes:
        namespaces = [ns for ns in netns_list() if ns == f"{prefix}-d" or
                      re.fullmatch(rf"{re.escape(prefix)}-h\d+", ns)]
        netns.kill_namespace_processes(namespaces)
        subprocess.run([HOSTS_SH, "down", prefix], capture_output=True, timeout=60)
    for path in mounts:
        if os.path.ismount(path):
            subprocess.run(["umount", "-l", path], capture_output=True, timeout=30)
            if os.path.ismount(path):
                problems.append(f"could not unmount {path}")
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        alive = [(p, t) for p, t in procs + workers if t is not None and pid_alive(p, t)]
        if not alive:
            break
        time.sleep(0.05)
    for path in trees:
        shutil.rmtree(path, ignore_errors=True)
        if os.path.exists(path):
            problems.append(f"could not remove {path}")
    return problems


def reaper_main(registry_path):
    """Blocks until stdin closes (the driver exited or was killed), then cleans up."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    try:
        sys.stdin.buffer.read()
    except OSError:
        pass
    cleanup(registry_path)


def start_reaper(registry_path):
    return subprocess.Popen([PYTHON, os.path.abspath(__file__), "--reap", registry_path],
                            stdin=subprocess.PIPE, start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def remove_stale_namespaces():
    """Tears down namespaces of earlier chaos runs whose driver (and reaper) are gone."""
    return netns.remove_stale_bridges(PREFIX_STEM)


# ---------------------------------------------------------------- logs and processes

class Log:
    """Every line every process printed: (time, source, stream, text), in arrival order."""

    def __init__(self, directory):
        self.dir = directory
        self.lines = []
        self.lock = threading.Lock()
        self.cond = threading.Condition(self.lock)

    def add(self, source, stream, text):
        t = time.time()
        with self.cond:
            self.lines.append((t, source, stream, text))
            self.cond.notify_all()

    def since(self, index=0):
        with self.lock:
            return self.lines[index:]

    def tail(self, source, n=40):
        with self.lock:
            picked = [f"{stream}: {text}" for _, s, stream, text in self.lines if s == source]
        return "\n".join(picked[-n:])


class Proc:
    """A process started in its own session; its output lines go to the Log and to files."""

    def __init__(self, args, name, log, registry, env=None):
        self.name = name
        self.args = args
        self.popen = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, env=env, start_new_session=True)
        self.pid = self.popen.pid
        self.ticks = proc_start_ticks(self.pid)
        self.started = time.time()
        registry.add("proc", self.pid, self.ticks)
        self.threads = []
        for stream, pipe in (("out", self.popen.stdout), ("err", self.popen.stderr)):
            path = os.path.join(log.dir, f"{name}.{stream}")
            t = threading.Thread(target=self._read, args=(pipe, stream, path, log), daemon=True)
            t.start()
            self.threads.append(t)

    def _read(self, pipe, stream, path, log):
        with open(path, "ab") as f:
            for raw in iter(pipe.readline, b""):
                f.write(raw)
                f.flush()
                log.add(self.name, stream, raw.decode(errors="replace").rstrip("\n"))
        pipe.close()

    def alive(self):
        return self.popen.poll() is None

    def kill(self, sig=signal.SIGKILL, group=False):
        if self.popen.poll() is None:
            kill_pid(self.pid, group=group, sig=sig)

    def wait(self, timeout):
        try:
            return self.popen.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return None


# ---------------------------------------------------------------- hosts

class LoopbackHosts:
    """Every host is 127.0.0.1 in the root network namespace: no link or partition faults."""

    netns = False

    def __init__(self, n):
        self.n = n
        self.daemon_addr = "127.0.0.1"

    def up(self, registry):
        pass

    def host_addr(self, i):
        return "127.0.0.1"

    def interface(self, i):
        """The interface that holds host i's address (every host: loopback)."""
        return "lo"

    def wrap(self, where, args):
        return list(args)

    def namespaces(self):
        return []


class NetnsHosts(netns.BridgeHosts):
    """Hosts in network namespaces PREFIX-h1..hN, musterd in PREFIX-d, on a bridge. With
    replicas (chaos_replicas.py) N counts the replicas' hosts too, after the agents';
    PREFIX-d then holds etcd."""

    netns = True

    def __init__(self, n):
        super().__init__(n, f"{PREFIX_STEM}{os.getpid()}", SUBNET)

    def up(self, registry):
        """Registers the prefix (the reaper removes it), then makes the hosts."""
        registry.add("netns", self.prefix)
        super().up()

    def partition(self, i, port, on, addrs=None):
        """Drops, inside host i's namespace, all traffic to and from port on the daemon's
        address, or on each of `addrs` (the replicas of a replicated rendezvous)."""
        ns = self.ns(i)
        if not on:
            subprocess.run(["ip", "netns", "exec", ns, nft_path(), "delete", "table", "inet", "chaos"],
                           capture_output=True, timeout=10)
            return
        d = "{ " + ", ".join(addrs or [self.daemon_addr]) + " }"
        ruleset = (f"table inet chaos {{\n"
                   f"  chain out {{ type filter hook output priority 0; "
                   f"ip daddr {d} tcp dport {port} drop; }}\n"
                   f"  chain in {{ type filter hook input priority 0; "
                   f"ip saddr {d} tcp sport {port} drop; }}\n"
                   f"}}\n")
        subprocess.run(["ip", "netns", "exec", ns, nft_path(), "-f", "-"], input=ruleset, text=True,
                       check=True, capture_output=True, timeout=10)


def nft_path():
    """The nft binary, or None (PATH may lack /usr/sbin when not a login shell)."""
    return shutil.which("nft") or next((p for p in ("/usr/sbin/nft", "/sbin/nft")
                                        if os.access(p, os.X_OK)), None)


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--reap":
        reaper_main(sys.argv[2])
    else:
        sys.exit("usage: chaos_cluster.py --reap REGISTRY (started by chaos.py)")
