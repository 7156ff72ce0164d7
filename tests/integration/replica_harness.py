"""musterd replicas for tests: each is `musterd --etcd ... --advertise
127.0.0.1:PORT` against a real etcd (etcd_cluster.py), with its log in a file
whose event= lines (replica_leader epoch=N, replica_step_down) say who leads.
"""
import os
import re
import shutil
import subprocess

from etcd_cluster import EtcdCluster, TestCerts, require_etcd
from harness import MUSTER, check, free_port, kill_tree, run, start, tempdir, wait_for

MUSTERD = os.path.join(os.path.dirname(MUSTER), "musterd")
LEADER_RE = re.compile(r"event=replica_leader epoch=(\d+) advertise=(\S+)")


class Replica:
    def __init__(self, etcd, log_dir, prefix="/muster-test", extra=()):
        self.port = free_port()
        self.address = f"127.0.0.1:{self.port}"
        self.log_path = os.path.join(log_dir, f"musterd-{self.port}.log")
        self.log = open(self.log_path, "w")
        self.proc = start([MUSTERD, "--host", "127.0.0.1", "--port", str(self.port),
                           "--etcd", etcd, "--advertise", self.address,
                           "--etcd-prefix", prefix, *extra], stdout=self.log, stderr=self.log)

    def text(self):
        with open(self.log_path) as f:
            return f.read()

    def epochs_led(self):
        return [int(m.group(1)) for m in LEADER_RE.finditer(self.text())]

    def status(self):
        return run([MUSTER, "status", "--rdzv-endpoint", self.address], timeout=20)


def leader_among(replicas):
    """The replica that leads now (the last to log replica_leader without a
    step-down after it), or None."""
    best, best_epoch = None, 0
    for r in replicas:
        if r.proc.poll() is not None:
            continue
        text = r.text()
        leads = list(LEADER_RE.finditer(text))
        if not leads:
            continue
        last = leads[-1]
        if "event=replica_step_down" in text[last.end():]:
            continue
        if int(last.group(1)) > best_epoch:
            best, best_epoch = r, int(last.group(1))
    return best


def one_leader(replicas, timeout=10):
    check(wait_for(lambda: leader_among(replicas) is not None, timeout),
          f"no replica led within {timeout} s", *[r.text() for r in replicas])
    return leader_among(replicas)


class Setup:
    """etcd (over TLS with a throwaway CA when `tls`: self.certs) and `replicas`
    replicas on it; add_replica() starts more, with flags of their own."""

    def __init__(self, etcd_members=1, replicas=3, tls=False):
        require_etcd()
        self.dir = tempdir()
        self.certs = TestCerts(self.dir) if tls else None
        self.etcd = EtcdCluster(etcd_members, tls=self.certs)
        self.replicas = [Replica(self.etcd.endpoints(), self.dir) for _ in range(replicas)]

    def add_replica(self, *extra):
        replica = Replica(self.etcd.endpoints(), self.dir, extra=extra)
        self.replicas.append(replica)
        return replica

    def close(self):
        for r in self.replicas:
            if r.proc.poll() is None:
                kill_tree(r.proc.pid)
                r.proc.wait()
            r.log.close()
        self.etcd.close()
        shutil.rmtree(self.dir, ignore_errors=True)


class LoggedAgent:
    """An elastic agent whose output goes to a file (elastic_harness's
    agent_args), so a test can read its event= lines."""

    def __init__(self, args, log_dir, name):
        self.log_path = os.path.join(log_dir, f"agent-{name}.log")
        self.log = open(self.log_path, "w")
        self.proc = start(args, stdout=self.log, stderr=subprocess.STDOUT)
        self.pid = self.proc.pid

    def text(self):
        with open(self.log_path) as f:
            return f.read()

    def close(self):
        if self.proc.poll() is None:
            kill_tree(self.proc.pid)
            self.proc.wait()
        self.log.close()
