"""Network namespaces for tests and benchmarks that cut a host off (needs root and `ip`).

    kill_namespace_processes(names)  SIGKILL, by pid, whatever runs inside them
    BridgeHosts                      N hosts and a daemon's namespace on a bridge with no
                                     address (tests/fixtures/netns_hosts.sh): the
                                     multi-host tests and the chaos suite
    remove_stale_bridges(stem)       what runs of them that died before their teardown left
    NodeLink                         one node in a namespace of its own behind a veth pair
    BridgedHosts                     N hosts on a bridge the root namespace is the gateway of
"""
import os
import re
import shutil
import socket
import subprocess
import time

from testlib import procs

IP = shutil.which("ip") or "/usr/sbin/ip"  # PATH may lack /usr/sbin outside a login shell
NSENTER = shutil.which("nsenter") or "/usr/bin/nsenter"
PYTHON = "/usr/bin/python3"
ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".."))
HOSTS_SH = os.path.join(ROOT, "tests", "fixtures", "netns_hosts.sh")


class NetnsError(RuntimeError):
    """An `ip` command failed; the message quotes it and its stderr."""


def ip(*args):
    """Runs `ip ARGS` and returns its stdout; NetnsError with its stderr when it fails."""
    try:
        res = subprocess.run([IP] + list(args), capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise NetnsError(f"ip {' '.join(args)}: {e}")
    if res.returncode != 0:
        raise NetnsError(f"ip {' '.join(args)}: {res.stderr.strip()}")
    return res.stdout


def netns_list():
    """The names of the network namespaces `ip netns list` shows ([] when it cannot run)."""
    try:
        out = subprocess.run([IP, "netns", "list"], capture_output=True, text=True,
                             timeout=10).stdout
    except (OSError, subprocess.TimeoutExpired):
        return []
    return [line.split()[0] for line in out.splitlines() if line.strip()]


def netns_pids(ns):
    """The pids inside namespace `ns` ([] when it is gone or `ip` cannot run)."""
    try:
        res = subprocess.run([IP, "netns", "pids", ns], capture_output=True, text=True,
                             timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return []
    return [int(p) for p in res.stdout.split() if p.isdigit()]


def kill_namespace_processes(namespaces, rounds=5, wait_s=3.0):
    """SIGKILLs, by pid (and process group), every process inside the given namespaces,
    waiting up to wait_s each round for them to go; up to `rounds` rounds, as a dying
    process may have forked. Returns the pids still alive at the end."""
    pids = []
    for _ in range(rounds):
        pids = [p for ns in namespaces for p in netns_pids(ns)]
        if not pids:
            return []
        procs.kill_pids(pids)
        deadline = time.monotonic() + wait_s
        while time.monotonic() < deadline and any(procs.alive(p) for p in pids):
            time.sleep(0.02)
    return [p for p in pids if procs.alive(p)]


def wait_reachable(addr, inside, timeout=10.0):
    """Until a TCP connect to `addr` (an address of this namespace) succeeds from inside each
    namespace of `inside` ({name: a function that wraps a command to run there}), probed in
    turn; NetnsError naming the first that cannot within `timeout` s."""
    with socket.socket() as listener:
        listener.bind((addr, 0))
        listener.listen(16)
        target = (addr, listener.getsockname()[1])
        probe = ("import socket, sys, time\n"
                 f"end = time.monotonic() + {timeout}\n"
                 "while time.monotonic() < end:\n"
                 "    try:\n"
                 f"        socket.create_connection({target!r}, 0.2).close(); sys.exit(0)\n"
                 "    except OSError: time.sleep(0.02)\n"
                 "sys.exit(1)\n")
        for name, wrap in inside.items():
            try:
                res = subprocess.run(wrap([PYTHON, "-c", probe]), capture_output=True, text=True,
                                     timeout=timeout + 5)
            except (OSError, subprocess.TimeoutExpired) as e:
                raise NetnsError(f"probing {addr} from {name}: {e}")
            if res.returncode != 0:
                raise NetnsError(f"{name} cannot reach {addr}: {res.stderr.strip()}")
            listener.accept()[0].close()


class BridgeHosts:
    """Namespaces PREFIX-h1..hN (the hosts) and PREFIX-d (a daemon's) on bridge PREFIX-br,
    made and removed by tests/fixtures/netns_hosts.sh. PREFIX-d holds SUBNET.1, host i
    SUBNET.(10+i); the bridge has no address, so the root namespace routes nothing there.
    Setting host i's bridge port down (link(i, "down")) makes it vanish silently: no RST,
    its connections just hang. PREFIX names the owner (a stem and its pid), at most 10
    characters. Needs root."""

    def __init__(self, n, prefix, subnet):
        self.n = n
        self.prefix = prefix
        self.subnet = subnet
        self.daemon_addr = f"{subnet}.1"

    def up(self):
        """Creates the bridge and the namespaces; NetnsError with the script's stderr."""
        try:
            res = subprocess.run([HOSTS_SH, "up", str(self.n), self.prefix, self.subnet],
                                 capture_output=True, text=True, timeout=60)
        except (OSError, subprocess.TimeoutExpired) as e:
            raise NetnsError(f"hosts.sh up failed: {e}")
        if res.returncode != 0:
            raise NetnsError(f"hosts.sh up failed ({res.returncode}): {res.stderr.strip()}")

    def down(self):
        """SIGKILLs, by pid, whatever still runs in the namespaces, then removes veths,
        namespaces and bridge. Never fails when they are gone already."""
        kill_namespace_processes(self.namespaces())
        subprocess.run([HOSTS_SH, "down", self.prefix], capture_output=True, timeout=60)

    def ns(self, where):
        """The namespace of "daemon" or of host `where` (1..n)."""
        return f"{self.prefix}-d" if where == "daemon" else f"{self.prefix}-h{where}"

    def namespaces(self):
        return [self.ns("daemon")] + [self.ns(i) for i in range(1, self.n + 1)]

    def host_addr(self, i):
        return f"{self.subnet}.{10 + i}"

    def interface(self, i):
        """The interface inside host i's namespace that holds its address."""
        return f"{self.prefix}-h{i}i"

    def wrap(self, where, args):
        """args run inside the namespace of `where`; `ip netns exec` execs them, so the
        pid is theirs."""
        return [IP, "netns", "exec", self.ns(where)] + list(args)

    def link(self, i, state):
        """Sets the root-namespace end of host i's veth (its bridge port) "up" or "down"."""
        subprocess.run([IP, "link", "set", f"{self.prefix}-h{i}", state], check=True, timeout=10)

    def leftovers(self):
        """The namespaces and interfaces of this prefix still present."""
        links = subprocess.run([IP, "-o", "link"], capture_output=True, text=True).stdout
        return [x for x in netns_list() + links.splitlines() if f"{self.prefix}-" in x]


def remove_stale_bridges(stem):
    """Tears down the BridgeHosts of earlier runs (prefix STEM<pid>) whose process is gone
    (killed before their teardown); returns the prefixes removed."""
    names = netns_list()
    links = subprocess.run([IP, "-o", "link"], capture_output=True, text=True).stdout
    owners = set(re.findall(rf"\b{stem}(\d+)-(?:d|h\d+|br)\b", " ".join(names) + "\n" + links))
    removed = []
    for owner in sorted(owners, key=int):
        if int(owner) == os.getpid() or procs.alive(int(owner)):
            continue
        prefix = f"{stem}{owner}"
        kill_namespace_processes([ns for ns in names if ns.startswith(prefix + "-")])
        subprocess.run([HOSTS_SH, "down", prefix], capture_output=True, timeout=60)
        removed.append(prefix)
    return removed


def unavailable_reason():
    """Why a namespace and a veth pair cannot be made here, or None."""
    if os.geteuid() != 0:
        return "needs root (it creates a network namespace and a veth pair)"
    for tool in (IP, NSENTER):
        if not os.access(tool, os.X_OK):
            return f"needs {os.path.basename(tool)} ({tool} not found)"
    return None


class NodeLink:
    """A node's network: namespace NS joined to the root namespace by one veth pair, NS-a
    (root end, SUBNET.1) and NS-b (inside, SUBNET.2); no bridge, no routing. Processes in
    the root namespace reach SUBNET.1 locally, so cutting the link leaves them their own
    address. Names carry the pid and a counter (no two runs share one); the /24 is one no
    address or route here uses yet, under `subnet_stem` (default 10.98). Every NodeLink
    made is in NodeLink.made, so an exit check can find one left behind."""

    made = []

    def __init__(self, tag="mb", subnet_stem="10.98"):
        NodeLink.made.append(self)
        self.ns = f"{tag}{os.getpid()}x{len(NodeLink.made)}"  # interface names: <= 15 chars
        self.outer, self.inner = f"{self.ns}a", f"{self.ns}b"
        self.created = []  # ("ns"|"link", name), in creation order
        subnet = self._pick_subnet(subnet_stem)
        self.first_addr, self.second_addr = f"{subnet}.1", f"{subnet}.2"

    @staticmethod
    def _pick_subnet(stem):
        used = ip("-4", "-o", "addr") + ip("-4", "route", "show", "table", "all")
        for i in range(250):
            subnet = f"{stem}.{(os.getpid() + len(NodeLink.made) + i) % 250 + 1}"
            if f"{subnet}." not in used:
                return subnet
        raise NetnsError(f"no free {stem}.x.0/24 for a node's link")

    def up(self):
        """Creates the namespace and the veth pair, sets both ends up and waits until the
        namespace reaches the root end's address."""
        ip("netns", "add", self.ns)
        self.created.append(("ns", self.ns))
        ip("link", "add", self.outer, "type", "veth", "peer", "name", self.inner, "netns", self.ns)
        self.created.append(("link", self.outer))
        ip("addr", "add", f"{self.first_addr}/24", "dev", self.outer)
        ip("link", "set", self.outer, "up")
        ip("-n", self.ns, "link", "set", "lo", "up")
        ip("-n", self.ns, "addr", "add", f"{self.second_addr}/24", "dev", self.inner)
        ip("-n", self.ns, "link", "set", self.inner, "up")
        self._wait_reachable()

    def _wait_reachable(self, timeout=10.0):
        """Until a TCP connect from inside the namespace to the root end's address succeeds."""
        wait_reachable(self.first_addr, {self.ns: self.wrap}, timeout)

    def wrap(self, cmd):
        """cmd run inside the namespace; nsenter execs it, so the pid is cmd's own (and,
        unlike `ip netns exec`, the mount namespace stays the caller's)."""
        return [NSENTER, f"--net=/run/netns/{self.ns}", "--"] + list(cmd)

    def cut(self):
        """The fault: the namespace's end set down. Its processes lose every connection
        silently (no RST); the root end only loses its carrier, so the root namespace keeps
        its address (local traffic does not use the link)."""
        ip("-n", self.ns, "link", "set", self.inner, "down")

    def pids(self):
        """Processes inside the namespace."""
        return netns_pids(self.ns)

    def teardown(self):
        """SIGKILLs, by pid, every process left inside the namespace, then deletes the veth
        pair and the namespace. Returns what could not be removed (empty when all is gone)."""
        problems = []
        if any(kind == "ns" for kind, _ in self.created):
            left = kill_namespace_processes([self.ns], rounds=250, wait_s=0.02)
            if left:
                problems.append(f"processes still inside {self.ns}: {left}")
        # the veth first (deleting one end deletes its peer), then the namespace; what
        # could not be deleted shows in leftovers()
        for kind, name in reversed(self.created):
            try:
                subprocess.run([IP, "link", "del", name] if kind == "link" else
                               [IP, "netns", "del", name], capture_output=True, timeout=10)
            except (OSError, subprocess.TimeoutExpired):
                pass
        self.created = []
        return problems + self.leftovers()

    def leftovers(self):
        """This link's namespace or interfaces still present."""
        try:
            names = ip("netns", "list") + ip("-o", "link")
        except NetnsError as e:
            return [str(e)]
        return [x.strip() for x in names.splitlines() if re.search(rf"\b{self.ns}[ab]?\b", x)]


class BridgedHosts:
    """`hosts` namespaces TAG-h1..hN on a bridge TAG-br whose address (SUBNET.1, the
    gateway) the root namespace holds, so processes here serve the hosts; host i is
    SUBNET.(11+i). TAG carries the pid; the /24 is a free 10.97.x. setup() raises
    RuntimeError (NetnsError) when a step fails; teardown() removes what setup made."""

    def __init__(self, hosts=3):
        tag = f"rr{os.getpid() % 100000}"
        self.bridge = f"{tag}-br"
        self.names = [f"{tag}-h{i + 1}" for i in range(hosts)]  # namespace = host veth name
        self.peer = [f"{tag}-n{i + 1}" for i in range(hosts)]  # the end inside the namespace
        self.subnet = self._pick_subnet()
        self.gateway = f"{self.subnet}.1"
        self.addrs = [f"{self.subnet}.{11 + i}" for i in range(hosts)]
        self.created = []  # ("ns"|"link", name), in creation order

    @staticmethod
    def _pick_subnet():
        used = ip("-4", "-o", "addr")
        for third in range(os.getpid() % 200 + 20, 255):
            prefix = f"10.97.{third}"
            if f" {prefix}." not in used:
                return prefix
        raise RuntimeError("no free 10.97.x.0/24 subnet")

    def _ip(self, *args, ns=None):
        ip(*((["-n", ns] if ns else []) + list(args)))

    def setup(self):
        self._ip("link", "add", self.bridge, "type", "bridge")
        self.created.append(("link", self.bridge))
        self._ip("addr", "add", f"{self.gateway}/24", "dev", self.bridge)
        self._ip("link", "set", self.bridge, "up")
        for name, peer, addr in zip(self.names, self.peer, self.addrs):
            self._ip("netns", "add", name)
            self.created.append(("ns", name))
            self._ip("link", "add", name, "type", "veth", "peer", "name", peer, "netns", name)
            self.created.append(("link", name))
            self._ip("link", "set", name, "master", self.bridge)
            self._ip("link", "set", name, "up")
            self._ip("link", "set", "lo", "up", ns=name)
            self._ip("addr", "add", f"{addr}/24", "dev", peer, ns=name)
            self._ip("link", "set", peer, "up", ns=name)
        self.wait_reachable()

    def wait_reachable(self, timeout=10):
        """Until a TCP connect from every namespace to the bridge address succeeds."""
        wait_reachable(self.gateway, {name: (lambda cmd, i=i: self.wrap(i, cmd))
                                      for i, name in enumerate(self.names)}, timeout)

    def link(self, host_index, up):
        self._ip("link", "set", self.names[host_index], "up" if up else "down")

    def wrap(self, host_index, args):
        return [NSENTER, f"--net=/run/netns/{self.names[host_index]}", "--"] + args

    def teardown(self):
        # veths first, then namespaces, then the bridge.
        for kind, name in [c for c in reversed(self.created) if c[1] != self.bridge]:
            cmd = [IP, "link", "del", name] if kind == "link" else [IP, "netns", "del", name]
            subprocess.run(cmd, capture_output=True)
        if ("link", self.bridge) in self.created:
            subprocess.run([IP, "link", "del", self.bridge], capture_output=True)
        self.created = []
