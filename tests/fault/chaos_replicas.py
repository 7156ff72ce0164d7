"""The replicated rendezvous of a chaos run (--replicas R, R >= 2).

One etcd member and R musterd replicas that elect a leader through it
(`musterd --etcd ... --advertise H:P`). As root, replica j runs in host
namespace PREFIX-h(N+j) of its own (after the N agent hosts), so that
leader_cut can set its bridge port down, and etcd in the daemon namespace
(SUBNET.1:2379); otherwise etcd and every replica run on 127.0.0.1, each on
a port of its own.

Who leads is read from the replicas' own lines, stamped on arrival (the Log):
a replica serves from `event=replica_role role=leader` until a
`replica_role` line with another role, or until the driver killed it.
`event=replica_view leader=ADDR` says whom a replica believes leads (a
restarted or reconnected replica logs one when it has read etcd). The
invariant checked here: never two replicas serving at once.

Every process goes through cluster.Proc (registered, so the reaper kills it
even after a SIGKILL of the driver) and etcd's data directory is registered
for removal ('rmtree'), so a failed run leaves none of it behind.
"""
import os
import re
import sys
import time

import chaos_cluster as cluster
from chaos_checks import InvariantError

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts", "lib"))
from testlib.ports import free_port  # noqa: E402

ETCD = "/usr/bin/etcd"
MUSTERD = os.path.join(cluster.BIN_DIR, "musterd")
RDZV_PORT = 29400  # as root each replica has a namespace, and so the port, of its own
ETCD_CLIENT_PORT, ETCD_PEER_PORT = 2379, 2380

ROLE_RE = re.compile(r"event=replica_role role=(\S+) epoch=(\d+)")
VIEW_RE = re.compile(r"event=replica_view leader=(\S+) epoch=(\d+)")
REBUILT_RE = re.compile(r"event=rebuilt gen=(\d+) nodes=(\d+)")


class Replica:
    """Replica j (1..R): its address, its current process and what its lines said."""

    def __init__(self, j, host, addr, port):
        self.j = j
        self.host = host  # its namespace host index, or None on loopback
        self.addr = addr
        self.port = port
        self.proc = None  # the current incarnation
        self.procs = []  # every incarnation
        self.killed_at = {}  # proc name -> when the driver killed it

    @property
    def address(self):
        return f"{self.addr}:{self.port}"

    @property
    def name(self):
        return self.proc.name if self.proc else f"musterd-r{self.j}"


class Replicas:
    """etcd plus R musterd replicas; `first_host` is the namespace host index of replica 1."""

    def __init__(self, count, hosts, first_host, work_dir, log, registry, env, rdzv_conf):
        self.hosts = hosts
        self.log = log
        self.registry = registry
        self.env = env
        self.rdzv_conf = rdzv_conf
        self.prefix = f"/muster-chaos-{os.getpid()}"
        self.data_dir = os.path.join(work_dir, "etcd-data")
        if hosts.netns:
            self.etcd_addr = hosts.daemon_addr
            self.etcd_ports = (ETCD_CLIENT_PORT, ETCD_PEER_PORT)
            self.replicas = [Replica(j, first_host + j - 1, hosts.host_addr(first_host + j - 1),
                                     RDZV_PORT) for j in range(1, count + 1)]
        else:
            # etcd's URLs and musterd's --advertise need the port before the process
            # starts, so these are drawn free now (harness.free_port, below the
            # ephemeral range); a clash shows as a replica or etcd that does not start.
            self.etcd_addr = "127.0.0.1"
            self.etcd_ports = (free_port(), free_port())
            self.replicas = [Replica(j, None, "127.0.0.1", free_port())
                             for j in range(1, count + 1)]
        self.etcd = None
        self._parsed = 0
        self.events = []  # (t, proc name, kind, value): kind in role, view, rebuilt
        self.by_name = {}

    # ------------------------------------------------------------ processes

    def endpoints(self):
        """Every replica, for the agents' --rdzv-endpoint."""
        return ",".join(r.address for r in self.replicas)

    def start(self, timeout=30.0):
        """Starts etcd and every replica; returns once one leads and every other one
        names it. Raises InvariantError with the logs' tails otherwise."""
        if not os.access(ETCD, os.X_OK):
            raise InvariantError("the replicated rendezvous starts",
                                 f"no etcd at {ETCD} (scripts/install-deps.sh installs "
                                 "etcd-server)")
        os.makedirs(self.data_dir, exist_ok=True)
        self.registry.add("rmtree", self.data_dir)
        client = f"http://{self.etcd_addr}:{self.etcd_ports[0]}"
        peer = f"http://{self.etcd_addr}:{self.etcd_ports[1]}"
        args = [ETCD, "--name", "m0", "--data-dir", os.path.join(self.data_dir, "m0"),
                "--listen-client-urls", client, "--advertise-client-urls", client,
                "--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
                "--initial-cluster", f"m0={peer}", "--initial-cluster-state", "new",
                "--logger", "zap", "--log-outputs", "stderr"]
        self.etcd = cluster.Proc(self.hosts.wrap("daemon", args), "etcd", self.log,
                                 self.registry, env=self.env())
        for r in self.replicas:
            self.start_replica(r)
        if not self.wait(lambda: self.settled(), timeout):
            raise InvariantError("the replicated rendezvous starts",
                                 f"no replica led, named by every other, within {timeout:.0f}s\n"
                                 + self.tails())

    def start_replica(self, r):
        args = [MUSTERD, "--host", r.addr, "--port", str(r.port), "--rdzv-conf", self.rdzv_conf,
                "--etcd", f"{self.etcd_addr}:{self.etcd_ports[0]}", "--advertise", r.address,
                "--etcd-prefix", self.prefix]
        where = r.host if r.host is not None else "daemon"
        r.proc = cluster.Proc(self.hosts.wrap(where, args), f"musterd-r{r.j}-{len(r.procs)}",
                              self.log, self.registry, env=self.env())
        r.procs.append(r.proc)
        self.by_name[r.proc.name] = r
        return r.proc

    def kill(self, r):
        """SIGKILL of replica r's current process; its lead (if any) ends now."""
        r.killed_at[r.proc.name] = time.time()
        r.proc.kill()

    def procs(self):
        """The processes that must stay up: etcd and every replica's current one."""
        return ([self.etcd] if self.etcd else []) + [r.proc for r in self.replicas if r.proc]

    def all_procs(self):
        return ([self.etcd] if self.etcd else []) + [p for r in self.replicas for p in r.procs]

    def tails(self, n=12):
        return "\n".join(f"--- {p.name}:\n{self.log.tail(p.name, n)}" for p in self.procs())

    def wait(self, predicate, timeout, interval=0.02):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            value = predicate()
            if value:
                return value
            time.sleep(interval)
        return predicate()

    # ------------------------------------------------------------ who leads

    def parse(self):
        lines = self.log.since(self._parsed)
        self._parsed += len(lines)
        for t, source, _, text in lines:
            if source not in self.by_name:
                continue
            m = ROLE_RE.search(text)
            if m:
                self.events.append((t, source, "role", (m.group(1), int(m.group(2)))))
                continue
            m = VIEW_RE.search(text)
            if m:
                self.events.append((t, source, "view", m.group(1)))
                continue
            m = REBUILT_RE.search(text)
            if m:
                self.events.append((t, source, "rebuilt", (int(m.group(1)), int(m.group(2)))))

    def leads(self):
        """[(name, epoch, t_from, t_to or None)]: every time a replica process served."""
        self.parse()
        out, open_ = [], {}
        for t, name, kind, value in self.events:
            if kind != "role":
                continue
            role, epoch = value
            if role == "leader" and name not in open_:
                open_[name] = (epoch, t)
            elif role != "leader" and name in open_:
                epoch0, t0 = open_.pop(name)
                out.append((name, epoch0, t0, t))
        for name, (epoch, t0) in open_.items():
            r = self.by_name[name]
            end = r.killed_at.get(name)
            if end is None and not next(p for p in r.procs if p.name == name).alive():
                end = time.time()  # it died on its own: check_processes says so
            out.append((name, epoch, t0, end))
        return sorted(out, key=lambda x: x[2])

    def leader(self):
        """The replica serving now (its current process, lead not ended), or None."""
        serving = [(epoch, name) for name, epoch, _, end in self.leads() if end is None]
        if not serving:
            return None
        _, name = max(serving)
        r = self.by_name[name]
        return r if r.proc.name == name else None

    def led_since(self, r, t):
        """When replica r's current process took the lead after t, or None."""
        return next((t0 for name, _, t0, _ in self.leads() if name == r.proc.name and t0 > t),
                    None)

    def views(self, r, leader, after):
        """When replica r's current process named `leader` as the leader after `after`."""
        self.parse()
        return next((t for t, name, kind, value in self.events
                     if name == r.proc.name and kind == "view" and value == leader.address
                     and t > after), None)

    def rebuilt(self, r, after):
        """(t, gen, nodes) of replica r's first `event=rebuilt` after `after`, or None."""
        self.parse()
        return next(((t,) + value for t, name, kind, value in self.events
                     if name == r.proc.name and kind == "rebuilt" and t > after), None)

    def settled(self):
        """The leader when one serves and every other live replica names it."""
        lead = self.leader()
        if lead is None:
            return None
        for r in self.replicas:
            if r is lead or not r.proc.alive():
                continue
            if not any(name == r.proc.name and kind == "view" and value == lead.address
                       for _, name, kind, value in self.events):
                return None
        return lead

    def overlaps(self):
        """Pairs of leads of different replicas that overlap in time (never two serving at
        once): [(lead_a, lead_b)]."""
        leads = self.leads()
        bad = []
        for i, a in enumerate(leads):
            for b in leads[i + 1:]:
                if a[0] != b[0] and b[2] < (a[3] if a[3] is not None else float("inf")):
                    bad.append((a, b))
        return bad
