"""Multi-host elastic rendezvous: musterd and three agents in network namespaces.

scripts/netns/hosts.sh puts each "host" (and the daemon) in its own network
namespace on a Linux bridge; every agent advertises its namespace's address
(--local-addr) and reaches musterd at the daemon namespace's address. Cutting a
host's bridge port (`ip link set DEV down` on the veth end in the root
namespace) makes it vanish silently: no RST, its connections just hang.

Checked: the survivors re-form a generation without the cut host (the
invariants of elastic_harness.check_generations hold over every generation,
strictly: no worker of an earlier generation alive when a later one starts);
the cut host's agent fences itself (SIGKILLs its workers) while its link is
still down; the time from the cut to the survivors' first new worker is
printed; when the link comes back the cut host is admitted again.

Needs root (namespaces, veths, a bridge); otherwise the test is skipped.
Workers of every namespace write to one /tmp directory: namespaces isolate
only the network.
"""
import os
import re
import shutil
import signal
import subprocess
import sys
import time

from elastic_harness import MUSTERD, agent_args, check_generations, dumps, wait_generation
from harness import (SOURCE_DIR, Skip, base_env, check, kill_pids, kill_tree, pid_alive, run_tests,
                     tempdir, test, wait_for)

HOSTS_SH = os.path.join(SOURCE_DIR, "scripts", "netns", "hosts.sh")
SUBNET = "10.213.7"  # a private /24; the bridge has no address, so the root namespace never routes it
DAEMON_ADDR = f"{SUBNET}.1"


def host_addr(i):
    return f"{SUBNET}.{10 + i}"


def kill_namespace_processes(namespaces):
    """SIGKILLs, by PID, every process inside the given network namespaces."""
    for _ in range(3):
        pids = []
        for ns in namespaces:
            res = subprocess.run(["ip", "netns", "pids", ns], capture_output=True, text=True, timeout=10)
            pids += [int(p) for p in res.stdout.split()]
        if not pids:
            return
        kill_pids(pids)
        wait_for(lambda: not any(pid_alive(p) for p in pids), 5)


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

    def spawn(self, ns, args, name):
        """Starts args inside namespace ns (ip netns exec execs them: the PID is theirs)."""
        out = open(os.path.join(self.logs, f"{name}.out"), "w")
        err = open(os.path.join(self.logs, f"{name}.err"), "w")
        proc = subprocess.Popen(["ip", "netns", "exec", ns] + list(args), env=base_env(),
                                stdout=out, stderr=err, start_new_session=True)
        out.close()
        err.close()
        proc.log_name = name
        self.procs.append(proc)
        return proc

    def log(self, proc, stream="err"):
        with open(os.path.join(self.logs, f"{proc.log_name}.{stream}")) as f:
            return f.read()

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


def start_musterd(hosts):
    proc = hosts.spawn(hosts.prefix + "-d", [MUSTERD, "--host", DAEMON_ADDR, "--port", "0"], "musterd")
    found = {}

    def listening():
        m = re.search(r"listening on [^:]+:(\d+)", hosts.log(proc, "out"))
        if m:
            found["port"] = int(m.group(1))
        return m is not None or proc.poll() is not None

    wait_for(listening, 10)
    check("port" in found, f"musterd did not start (exit {proc.poll()})", hosts.log(proc))
    return proc, found["port"]


def start_agent(hosts, i, port, out_dir, nnodes="2:3", nproc=2):
    args = agent_args(f"{DAEMON_ADDR}:{port}", host_addr(i), out_dir, nnodes=nnodes, nproc=nproc,
                      run_id="netjob")
    return hosts.spawn(f"{hosts.prefix}-h{i}", args, f"agent-h{i}")


@test
def cutting_a_hosts_link_reforms_the_survivors_and_the_cut_host_fences_itself():
    if os.geteuid() != 0:
        raise Skip("needs root to create network namespaces, veths and a bridge "
                   f"(running as uid {os.geteuid()})")
    remove_stale_hosts()
    out = tempdir()
    with Hosts(3) as hosts:
        daemon, port = start_musterd(hosts)
        agents = {i: start_agent(hosts, i, port, out) for i in (1, 2, 3)}

        def logs():
            return "\n".join(f"{p.log_name}:\n{hosts.log(p)}" for p in [daemon, *agents.values()])

        gen = wait_generation(out, 6, timeout=20)
        check_generations(out)
        first = dumps(out)[gen]
        host_of_pid = {a.pid: i for i, a in agents.items()}
        worker_host = {r: host_of_pid.get(rec["ppid"]) for r, rec in first.items()}
        check(None not in worker_host.values(), f"workers not children of the agents: {worker_host}")
        # Every agent advertised its own namespace's address: the master's is MASTER_ADDR.
        master_host = worker_host[0]
        check(first[0]["env"]["MASTER_ADDR"] == host_addr(master_host),
              f"MASTER_ADDR {first[0]['env']['MASTER_ADDR']} is not host {master_host}'s address")

        # Cut the master's host: the survivors must also elect a new master.
        victim = master_host
        victim_pids = [rec["pid"] for r, rec in first.items() if worker_host[r] == victim]
        check(len(victim_pids) == 2 and all(pid_alive(p) for p in victim_pids), "victim's workers run")
        cut_at = time.time()
        hosts.link(victim, "down")

        # Self-fencing: the cut host's agent kills its workers by itself, link still down.
        fenced = wait_for(lambda: not any(pid_alive(p) for p in victim_pids), 5, interval=0.005)
        fenced_after = time.time() - cut_at
        check(fenced, f"the cut host's workers still run {fenced_after:.2f}s after the cut", logs())
        check(agents[victim].poll() is None, "the cut host's agent exited instead of fencing",
              hosts.log(agents[victim]))

        new_gen = wait_generation(out, 4, after=gen, timeout=15)
        reformed = dumps(out)[new_gen]
        reform_after = min(r["start"] for r in reformed.values()) - cut_at
        print(f"cut -> cut host's workers gone: {fenced_after:.3f}s; "
              f"cut -> survivors' generation {new_gen} first worker start: {reform_after:.3f}s",
              flush=True)
        check("event=fence" in hosts.log(agents[victim]), "the cut host's agent logged its fence",
              hosts.log(agents[victim]))
        check(fenced_after < 2.5, f"fenced {fenced_after:.3f}s after the cut (fence_timeout is 1 s)")
        # heartbeat_timeout 1.25 s plus worker start-up; measured 1.2-1.3 s.
        check(reform_after < 2.5, f"re-formed {reform_after:.3f}s after the cut", logs())
        check_generations(out)
        check(sorted(reformed) == [0, 1, 2, 3], f"survivors' ranks {sorted(reformed)}")
        new_hosts = {host_of_pid.get(rec["ppid"]) for rec in reformed.values()}
        check(new_hosts == {1, 2, 3} - {victim}, f"new generation runs on hosts {new_hosts}")
        new_master = reformed[0]["env"]["MASTER_ADDR"]
        check(new_master in [host_addr(i) for i in new_hosts],
              f"new MASTER_ADDR {new_master} is not a survivor's address")

        # The link comes back: the old host learns it was dropped and is admitted again.
        up_at = time.time()
        hosts.link(victim, "up")
        back = wait_generation(out, 6, after=new_gen, timeout=30)
        print(f"link up -> generation {back} with all 3 hosts: "
              f"{min(r['start'] for r in dumps(out)[back].values()) - up_at:.3f}s", flush=True)
        check_generations(out)
        back_hosts = {host_of_pid.get(rec["ppid"]) for rec in dumps(out)[back].values()}
        check(back_hosts == {1, 2, 3}, f"after the link came back: hosts {back_hosts}")
        check(daemon.poll() is None, "musterd died", hosts.log(daemon))
    left = hosts.leftovers()
    check(not left, f"left behind: {left}")
    shutil.rmtree(out, ignore_errors=True)
    shutil.rmtree(hosts.logs, ignore_errors=True)


def remove_stale_hosts():
    """Tears down namespaces of earlier runs that died before their teardown (SIGKILL)."""
    listing = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    links = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True).stdout
    for pid in sorted({int(m) for m in re.findall(r"\bmn(\d+)-(?:d|h\d+|br)\b", listing + links)}):
        if pid != os.getpid() and not pid_alive(pid):
            prefix = f"mn{pid}"
            kill_namespace_processes(re.findall(rf"^({prefix}-(?:d|h\d+))\b", listing, re.M))
            subprocess.run([HOSTS_SH, "down", prefix], capture_output=True, timeout=60)


if __name__ == "__main__":
    # A SIGTERM unwinds like Ctrl-C, so the teardown runs; after a SIGKILL the next run cleans up.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    run_tests()
