"""musterd replicas: how long the rendezvous is without a leader when the
leader dies, and how long its agents take to follow the new one.

usage: failover.py [--runs N] [--replicas R] [--etcd-members M] [--agents A]
                   [--bin-dir DIR]

Starts a real etcd cluster of M members on loopback (Debian's etcd-server,
default 1) and R musterd replicas (default 3) with --etcd.

With --agents 0, per run: waits for a leader, kills it (SIGKILL, then in the
next run SIGTERM, alternated), and measures the time from the signal to a
standby's event=replica_leader line with a higher epoch, read from its log as
it is written. Prints the median (min-max) per signal.

With A agents (default 3), per run a fresh job of A agents x 1 worker
(tests/integration/workers/gen_dump.py, --nnodes 2:A) given every replica in
--rdzv-endpoint; once its first generation runs, the leader gets SIGKILL and:
  - odd runs ("leader kill"): the time until every agent has logged
    event=rdzv_leader for the new leader, and whether any worker was
    restarted (3.5 s after the kill, beyond failover_timeout);
  - even runs ("leader kill + node death"): one agent gets SIGKILL 1 s after
    the leader; the time from the leader's kill until every survivor's worker
    of the next generation has started.
Prints the median (min-max) of each.

In every run the killed replica is started again as a standby. torchrun's
c10d rendezvous has no failover to compare with: its host's death ends the
job (pytorch/pytorch#73656).
"""
import argparse
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from testlib.ports import free_port  # noqa: E402
from testlib.procs import alive  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ETCD = "/usr/bin/etcd"
LEADER_RE = re.compile(r"event=replica_leader epoch=(\d+)")
GEN_DUMP = os.path.join(ROOT, "tests", "integration", "workers", "gen_dump.py")


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

    @property
    def address(self):
        return f"127.0.0.1:{self.port}"

    def epochs(self):
        with open(self.log_path) as f:
            return [int(m.group(1)) for m in LEADER_RE.finditer(f.read())]

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self.log.close()


def current_leader(replicas):
    leading = [(r.epochs()[-1], r) for r in replicas if r.proc.poll() is None and r.epochs()]
    return max(leading, key=lambda x: x[0]) if leading else None


def replica_runs(args, replicas):
    print(f"failover: etcd {args.etcd_members} member(s), {args.replicas} musterd replicas "
          f"(lease TTL 2 s), {args.runs} runs, SIGKILL and SIGTERM alternated", flush=True)
    took = {"SIGKILL": [], "SIGTERM": []}
    for run in range(args.runs):
        epoch, leader = wait(lambda: current_leader(replicas), 10, "no replica led")
        time.sleep(0.7)  # a renewal or two under way, as at any moment
        sig = signal.SIGKILL if run % 2 == 0 else signal.SIGTERM
        others = [r for r in replicas if r is not leader]
        t0 = time.monotonic()
        os.kill(leader.proc.pid, sig)
        wait(lambda: any(e > epoch for r in others for e in r.epochs()), 10, "no standby led")
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


class Agent:
    """One elastic agent of the bench's job, its output in a file."""

    def __init__(self, muster, endpoints, out, run_id, nnodes, work, name):
        self.log_path = os.path.join(work, f"agent-{run_id}-{name}.log")
        self.log = open(self.log_path, "w")
        self.proc = subprocess.Popen(
            [muster, "--nnodes", nnodes, "--nproc-per-node", "1", "--rdzv-backend", "muster",
             "--rdzv-endpoint", endpoints, "--rdzv-id", run_id,
             "--rdzv-conf", "last_call_timeout=0.5", "--local-addr", "127.0.0.1",
             GEN_DUMP, out],
            # event=rdzv_leader is an info line.
            env={**os.environ, "MUSTER_LOG_LEVEL": os.environ.get("MUSTER_LOG_LEVEL", "info")},
            stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True)

    def followed(self, address):
        with open(self.log_path) as f:
            return f"event=rdzv_leader endpoint={address}" in f.read()

    def stop(self):
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
        self.log.close()


def generations(out):
    """{gen: [record...]} of the workers gen_dump.py recorded."""
    gens = {}
    for name in os.listdir(out):
        m = re.fullmatch(r"g(\d+)_r(\d+)\.json", name)
        if m:
            try:
                with open(os.path.join(out, name)) as f:
                    gens.setdefault(int(m.group(1)), []).append(json.load(f))
            except (OSError, ValueError):
                pass  # being written
    return gens


def agent_runs(args, replicas, work):
    muster = os.path.join(args.bin_dir, "muster")
    endpoints = ",".join(r.address for r in replicas)
    print(f"failover: etcd {args.etcd_members} member(s), {args.replicas} musterd replicas "
          f"(lease TTL 2 s), {args.agents} agents x 1 worker, {args.runs} runs: leader SIGKILL, "
          f"then leader SIGKILL + a node's SIGKILL 1 s later, alternated", flush=True)
    followed, restarted, stepped = [], [], []
    for run in range(args.runs):
        epoch, leader = wait(lambda: current_leader(replicas), 10, "no replica led")
        out = os.path.join(work, f"out-{run}")
        os.makedirs(out)
        agents = [Agent(muster, endpoints, out, f"bench-{run}", f"2:{args.agents}", work, i)
                  for i in range(args.agents)]
        try:
            # A list, so that generation 0 is a found value.
            [first] = wait(lambda: next(([g] for g, w in generations(out).items()
                                         if len(w) == args.agents), None), 20,
                           "the job's first generation did not start")
            pids = {w["pid"] for w in generations(out)[first]}
            time.sleep(0.7)  # heartbeats and renewals under way, as at any moment
            others = [r for r in replicas if r is not leader]
            t0 = time.monotonic()
            wall0 = time.time()
            os.kill(leader.proc.pid, signal.SIGKILL)
            if run % 2 == 0:
                new = wait(lambda: next((r for r in others if any(e > epoch for e in r.epochs())),
                                        None), 10, "no standby led")
                wait(lambda: all(a.followed(new.address) for a in agents), 10,
                     "not every agent followed the new leader")
                ms = (time.monotonic() - t0) * 1000
                followed.append(ms)
                time.sleep(max(0.0, t0 + 3.5 - time.monotonic()))
                gens = generations(out)
                lost = len(pids - {w["pid"] for w in gens[first] if alive(w["pid"])})
                lost += sum(len(w) for g, w in gens.items() if g != first)
                restarted.append(lost)
                print(f"  run {run + 1}: leader SIGKILL -> every agent on the new leader after "
                      f"{ms:.0f} ms, {lost} workers restarted", flush=True)
            else:
                time.sleep(max(0.0, t0 + 1.0 - time.monotonic()))
                os.killpg(agents[-1].proc.pid, signal.SIGKILL)
                nxt = wait(lambda: next((w for g, w in generations(out).items()
                                         if g > first and len(w) == args.agents - 1), None),
                           15, "the survivors did not run a new generation")
                ms = (max(w["start"] for w in nxt) - wall0) * 1000
                stepped.append(ms)
                print(f"  run {run + 1}: leader SIGKILL, a node's 1 s later -> the survivors run "
                      f"the next generation after {ms:.0f} ms", flush=True)
        finally:
            for a in agents:
                a.stop()
        leader.proc.wait()
        leader.log.close()
        leader.start()
    print()
    print("| after the leader's SIGKILL | median (min–max) | runs |")
    print("|---|---|---|")
    print(f"| every agent on the new leader | {statistics.median(followed):.0f} ms "
          f"({min(followed):.0f}–{max(followed):.0f}) | {len(followed)} |")
    print(f"| workers restarted | {sum(restarted)} in all | {len(restarted)} |")
    if stepped:
        print(f"| + a node's SIGKILL 1 s later: survivors run the next generation | "
              f"{statistics.median(stepped):.0f} ms ({min(stepped):.0f}–{max(stepped):.0f}) | "
              f"{len(stepped)} |")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--runs", type=int, default=10)
    p.add_argument("--replicas", type=int, default=3)
    p.add_argument("--etcd-members", type=int, default=1)
    p.add_argument("--agents", type=int, default=3)
    p.add_argument("--bin-dir", default=os.path.join(ROOT, "build", "bin"))
    args = p.parse_args()
    if args.runs < 2:
        p.error(f"--runs {args.runs}: must be at least 2 (one per signal)")
    if args.replicas < 2:
        p.error(f"--replicas {args.replicas}: must be at least 2")
    if args.agents != 0 and args.agents < 3:
        p.error(f"--agents {args.agents}: must be 0 (replicas only) or at least 3")
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
        if args.agents:
            agent_runs(args, replicas, work)
        else:
            replica_runs(args, replicas)
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
