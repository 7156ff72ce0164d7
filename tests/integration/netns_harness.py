"""Hosts in network namespaces for multi-host tests.

tests/fixtures/netns_hosts.sh puts each "host" (and a daemon namespace) in its
own network namespace on a Linux bridge. Cutting a host's bridge port (`ip link
set DEV down` on the veth end in the root namespace) makes it vanish silently:
no RST, its connections just hang. Needs root.
"""
import os
import re
import subprocess

from harness import SOURCE_DIR, base_env, kill_tree, pid_alive, tempdir, wait_for
from testlib import netns

HOSTS_SH = os.path.join(SOURCE_DIR, "tests", "fixtures", "netns_hosts.sh")
SUBNET = "10.213.7"  # a private /24; the bridge has no address, so the root namespace never routes it
DAEMON_ADDR = f"{SUBNET}.1"


def host_addr(i):
    return f"{SUBNET}.{10 + i}"


def kill_namespace_processes(namespaces):
    """SIGKILLs, by PID, every process inside the given network namespaces."""
    netns.kill_namespace_processes(namespaces, rounds=3, wait_s=5)


class Hosts:
    """N namespaces PREFIX-h1..hN plus PREFIX-d on a bridge; torn down on exit.

    Processes started with spawn() run inside a namespace; on exit they are
    killed by PID, then every process still in one of the namespaces, then
    `hosts.sh down` removes veths, namespaces and bridge.
    """

    def __init__(self, n):
        self.n = n
        self.prefix = f"mn{os.getpid()}"  # unique per run; names stay within 15 characters
        self.procs = []
        self.logs = tempdir()

    def __enter__(self):
        try:
            subprocess.run([HOSTS_SH, "up", str(self.n), self.prefix, SUBNET], check=True,
                           capture_output=True, text=True, timeout=60)
        except subprocess.CalledProcessError as e:
            self.__exit__(None, None, None)
            raise AssertionError(f"hosts.sh up failed ({e.returncode}): {e.stderr}") from e
        return self

    def namespaces(self):
        return [f"{self.prefix}-d"] + [f"{self.prefix}-h{i}" for i in range(1, self.n + 1)]

    def spawn(self, ns, args, name, env=None):
        """Starts args inside namespace ns (ip netns exec execs them: the PID is theirs),
        with `env` (default: the harness's base environment)."""
        out = open(os.path.join(self.logs, f"{name}.out"), "w")
        err = open(os.path.join(self.logs, f"{name}.err"), "w")
        proc = subprocess.Popen(["ip", "netns", "exec", ns] + list(args), env=env or base_env(),
                                stdout=out, stderr=err, start_new_session=True)
        out.close()
        err.close()
        proc.log_name = name
        self.procs.append(proc)
        return proc

    def log(self, proc, stream="err"):
        with open(os.path.join(self.logs, f"{proc.log_name}.{stream}")) as f:
            return f.read()

    def interface(self, i):
        """The interface inside host i's namespace that holds its address."""
        return f"{self.prefix}-h{i}i"

    def start_musterd(self, musterd):
        """Starts `musterd` in the daemon namespace on DAEMON_ADDR; returns (process, port)."""
        proc = self.spawn(self.prefix + "-d", [musterd, "--host", DAEMON_ADDR, "--port", "0"],
                          "musterd")
        found = {}

        def listening():
            m = re.search(r"listening on [^:]+:(\d+)", self.log(proc, "out"))
            if m:
                found["port"] = int(m.group(1))
            return m is not None or proc.poll() is not None

        wait_for(listening, 10)
        if "port" not in found:
            raise AssertionError(f"musterd did not start (exit {proc.poll()})\n{self.log(proc)}")
        return proc, found["port"]

    def link(self, i, state):
        """Sets the root-namespace end of host i's veth (its bridge port) up or down."""
        subprocess.run(["ip", "link", "set", f"{self.prefix}-h{i}", state], check=True, timeout=10)

    def __exit__(self, *exc):
        for proc in self.procs:
            if proc.poll() is None:
                kill_tree(proc.pid)
        for proc in self.procs:
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
        # Workers lead their own process groups: kill whatever the namespaces still hold.
        kill_namespace_processes(self.namespaces())
        subprocess.run([HOSTS_SH, "down", self.prefix], capture_output=True, timeout=60)
        return False

    def leftovers(self):
        netns = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
        links = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True).stdout
        return [line for line in (netns + links).splitlines() if f"{self.prefix}-" in line]


def remove_stale_hosts():
    """Tears down namespaces of earlier runs that died before their teardown (SIGKILL)."""
    listing = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    links = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True).stdout
    for pid in sorted({int(m) for m in re.findall(r"\bmn(\d+)-(?:d|h\d+|br)\b", listing + links)}):
        if pid != os.getpid() and not pid_alive(pid):
            prefix = f"mn{pid}"
            kill_namespace_processes(re.findall(rf"^({prefix}-(?:d|h\d+))\b", listing, re.M))
            subprocess.run([HOSTS_SH, "down", prefix], capture_output=True, timeout=60)
