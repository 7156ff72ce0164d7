"""musterd replicas: how long the rendezvous is without a leader when the
leader dies (SIGKILL) or is stopped (SIGTERM).

usage: failover.py [--runs N] [--replicas R] [--etcd-members M] [--bin-dir DIR]

Starts a real etcd cluster of M members on loopback (Debian's etcd-server,
default 1) and R musterd replicas (default 3) with --etcd, then per run:
waits for a leader, kills it (SIGKILL, then in the next run SIGTERM,
alternated), and measures the time from the signal to a standby's
event=replica_leader line with a higher epoch, read from its log as it is
written; the killed replica is started again as a standby. Prints the
median (min-max) per signal.

What it does not measure yet: agents following the new leader (they do not
follow replicas yet; docs/benchmarks.md). torchrun's c10d rendezvous has no
failover at all: its host's death ends the job (pytorch/pytorch#73656).
"""
import argparse
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
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ETCD = "/usr/bin/etcd"
LEADER_RE = re.compile(r"event=replica_leader epoch=(\d+)")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait(predicate, timeout, what):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.005)
    sys.exit(f"failover: {what} within {timeout} s")


def etcd_healthy(port):
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=0.5) as r:
            return json.loads(r.read()).get("health") == "true"
    except (OSError, ValueError):
        return False


class Replica:
    def __init__(self, musterd, etcd, work):
        self.musterd, self.etcd, self.work = musterd, etcd, work
        self.port = free_port()
        self.proc = None
        self.start()

    def start(self):
        self.log_path = os.path.join(self.work, f"musterd-{self.port}-{time.monotonic_ns()}.log")
        self.log = open(self.log_path, "w")
        self.proc = subprocess.Popen(
            [self.musterd, "--host", "127.0.0.1", "--port", str(self.port), "--etcd", self.etcd,
             "--advertise", f"127.0.0.1:{self.port}", "--etcd-prefix", "/muster-bench"],
            stdout=self.log, stderr=self.log, start_new_session=True)

    def epochs(self):
        with open(self.log_path) as f:
            return [int(m.group(1)) for m in LEADER_RE.finditer(f.read())]

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self.log.close()


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--runs", type=int, default=10)
    p.add_argument("--replicas", type=int, default=3)
    p.add_argument("--etcd-members", type=int, default=1)
    p.add_argument("--bin-dir", default=os.path.join(ROOT, "build", "bin"))
    args = p.parse_args()
    if args.runs < 2:
        p.error(f"--runs {args.runs}: must be at least 2 (one per signal)")
    if args.replicas < 2:
        p.error(f"--replicas {args.replicas}: must be at least 2")
    if args.etcd_members < 1:
        p.error(f"--etcd-members {args.etcd_members}: must be at least 1")
    if not os.access(ETCD, os.X_OK):
        sys.exit(f"failover: no etcd at {ETCD} (scripts/install-deps.sh installs etcd-server)")
    musterd = os.path.join(args.bin_dir, "musterd")
    if not os.access(musterd, os.X_OK):
        p.error(f"--bin-dir {args.bin_dir}: no musterd")

    work = tempfile.mkdtemp(prefix="muster-bench-failover-")
    etcd_procs, replicas = [], []
    try:
        clients = [free_port() for _ in range(args.etcd_members)]
        peers = [free_port() for _ in range(args.etcd_members)]
        cluster = ",".join(f"m{i}=http://127.0.0.1:{peers[i]}" for i in range(args.etcd_members))
        for i in range(args.etcd_members):
            log = open(os.path.join(work, f"etcd-m{i}.log"), "w")
            etcd_procs.append(subprocess.Popen(
                [ETCD, "--name", f"m{i}", "--data-dir", os.path.join(work, f"m{i}"),
                 "--listen-client-urls", f"http://127.0.0.1:{clients[i]}",
                 "--advertise-client-urls", f"http://127.0.0.1:{clients[i]}",
                 "--listen-peer-urls", f"http://127.0.0.1:{peers[i]}",
                 "--initial-advertise-peer-urls", f"http://127.0.0.1:{peers[i]}",
                 "--initial-cluster", cluster, "--initial-cluster-state", "new",
                 "--logger", "zap", "--log-outputs", "stderr"],
                stdout=log, stderr=log, start_new_session=True))
        wait(lambda: all(etcd_healthy(c) for c in clients), 20, "etcd was not healthy")
        endpoints = ",".join(f"127.0.0.1:{c}" for c in clients)
        replicas = [Replica(musterd, endpoints, work) for _ in range(args.replicas)]
        print(f"failover: etcd {args.etcd_members} member(s), {args.replicas} musterd replicas "
              f"(lease TTL 2 s), {args.runs} runs, SIGKILL and SIGTERM alternated", flush=True)
        took = {"SIGKILL": [], "SIGTERM": []}
        for run in range(args.runs):
            def current():
                leading = [(r.epochs()[-1], r) for r in replicas
                           if r.proc.poll() is None and r.epochs()]
                return max(leading, key=lambda x: x[0]) if leading else None
            epoch, leader = wait(current, 10, "no replica led")
            time.sleep(0.7)  # a renewal or two under way, as at any moment
            sig = signal.SIGKILL if run % 2 == 0 else signal.SIGTERM
            others = [r for r in replicas if r is not leader]
            t0 = time.monotonic()
            os.kill(leader.proc.pid, sig)
            wait(lambda: any(e > epoch for r in others for e in r.epochs()), 10,
                 "no standby led")
            ms = (time.monotonic() - t0) * 1000
            took[sig.name].append(ms)
            print(f"  run {run + 1}: {sig.name} -> a standby leads after {ms:.0f} ms", flush=True)
            leader.proc.wait()
            leader.log.close()
            leader.start()
        print()
        print("| leader | a standby leads: median (min–max) | runs |")
        print("|---|---|---|")
        for name, values in took.items():
            print(f"| {name} | {statistics.median(values):.0f} ms "
                  f"({min(values):.0f}–{max(values):.0f}) | {len(values)} |")
    finally:
        for r in replicas:
            r.stop()
        for proc in etcd_procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
