"""Multi-host elastic rendezvous: musterd and three agents in network namespaces.

tests/fixtures/netns_hosts.sh puts each "host" (and the daemon) in its own network
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

Hosts whose own name resolves to 127.0.1.1 (Debian's /etc/hosts; each host
gets a private hostname and /etc/hosts in its own UTS and mount namespaces):
the agent that serves the rendezvous, or runs beside musterd, reaches it over
loopback; when its node is the master, workers on the other host must still
be told an address they can reach (PROTOCOL.md, "Loopback master
addresses"), and the c10d rule must make that agent serve with torchrun's
command line unchanged. Workers connect to MASTER_ADDR:MASTER_PORT to prove it.

Needs root (namespaces, veths, a bridge); otherwise the test is skipped.
Workers of every namespace write to one /tmp directory: namespaces isolate
only the network.
"""
import contextlib
import os
import re
import shutil
import signal
import subprocess
import sys
import time

from elastic_harness import GEN_DUMP, MUSTERD, agent_args, check_generations, dumps, wait_generation
from harness import MUSTER, Skip, check, pid_alive, run_tests, tempdir, test, wait_for
from netns_harness import DAEMON_ADDR, Hosts, host_addr, remove_stale_hosts

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
        daemon, port = hosts.start_musterd(MUSTERD)
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


# --- Hosts whose own name resolves to loopback (Debian's 127.0.1.1 line) -----------------------

RDZV_PORT = 29400  # every host has a network namespace of its own: a fixed port is free


def name_of(hosts, i):
    return f"{hosts.prefix}-h{i}"


def loopback_named_hosts(hosts, n):
    """Writes, for each host i, an /etc/hosts as Debian installs it: its own name on 127.0.1.1,
    the other hosts' names on their addresses. Returns {i: path}."""
    files = {}
    for i in range(1, n + 1):
        lines = ["127.0.0.1 localhost", "::1 localhost ip6-localhost ip6-loopback",
                 f"127.0.1.1 {name_of(hosts, i)}"]
        lines += [f"{host_addr(j)} {name_of(hosts, j)}" for j in range(1, n + 1) if j != i]
        files[i] = os.path.join(hosts.logs, f"hosts-h{i}")
        with open(files[i], "w") as f:
            f.write("\n".join(lines) + "\n")
    return files


def spawn_as_host(hosts, i, hosts_files, args, name):
    """Runs args in host i's network namespace with its hostname and /etc/hosts, in private UTS
    and mount namespaces (they vanish with the process: nothing global changes)."""
    script = 'mount --bind "$1" /etc/hosts && hostname "$2" && shift 2 && exec "$@"'
    private = ["unshare", "--uts", "--mount", "--propagation", "private"]
    return hosts.spawn(f"{hosts.prefix}-h{i}", private + ["sh", "-c", script, "sh", hosts_files[i],
                                                          name_of(hosts, i)] + list(args), name)


def job_args(backend, endpoint, out, conf="", extra=()):
    """Two nodes of two workers that record whether they reach MASTER_ADDR:MASTER_PORT."""
    rdzv_conf = "last_call_timeout=0.5" + ("," + conf if conf else "")
    return ([MUSTER, "--nnodes", "2", "--nproc-per-node", "2", "--rdzv-backend", backend,
             "--rdzv-endpoint", endpoint, "--rdzv-id", "loopjob", "--rdzv-conf", rdzv_conf]
            + list(extra) + [GEN_DUMP, out, "--net", "--run", "0.5"])


def wait_logged(hosts, proc, text, stream="err", timeout=10):
    check(wait_for(lambda: text in hosts.log(proc, stream) or proc.poll() is not None, timeout)
          and text in hosts.log(proc, stream), f"{proc.log_name} never logged {text!r}",
          hosts.log(proc, stream), hosts.log(proc))


def check_store_reachable_everywhere(hosts, agents, out, master_host,
                                     master_addr_on_others=None):
    """Every agent exits 0 and every worker connected to MASTER_ADDR:MASTER_PORT; the master
    runs on master_host; workers on other hosts were told a routable MASTER_ADDR (when
    master_addr_on_others is given: exactly that one)."""
    deadline = time.monotonic() + 30
    for agent in agents.values():
        try:
            agent.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            pass
    logs = "\n".join(f"{p.log_name}:\n{hosts.log(p)}" for p in agents.values())
    for i, agent in agents.items():
        check(agent.poll() == 0, f"host {i}'s agent: exit {agent.poll()}", logs)
    records = dumps(out)
    check(sorted(records) == [0] and sorted(records[0]) == [0, 1, 2, 3],
          f"workers recorded: { {g: sorted(r) for g, r in records.items()} }", logs)
    host_of_pid = {a.pid: i for i, a in agents.items()}
    check(host_of_pid.get(records[0][0]["ppid"]) == master_host,
          f"the master is not on host {master_host}: the test would prove nothing", logs)
    for rank, rec in sorted(records[0].items()):
        host = host_of_pid.get(rec["ppid"])
        net, addr = rec["net"], rec["env"]["MASTER_ADDR"]
        check(net["hostname"] == name_of(hosts, host), f"rank {rank}: hostname {net['hostname']}")
        check("store_conn" in net, f"rank {rank} on host {host} cannot reach MASTER_ADDR={addr}:"
              f"{rec['env']['MASTER_PORT']}: {net.get('store_error')}", logs)
        if host != master_host:
            check(not is_loopback(addr), f"rank {rank} on host {host} was told MASTER_ADDR={addr}")
            if master_addr_on_others is not None:
                check(addr == master_addr_on_others, f"rank {rank}: MASTER_ADDR {addr}, "
                      f"expected {master_addr_on_others}")
            check(net["store_conn"][1] == host_addr(master_host),
                  f"rank {rank} reached the store at {net['store_conn'][1]}")
    return records[0]


def is_loopback(addr):  # as rdzv::IsLoopbackHost
    return addr == "localhost" or addr.startswith("127.") or addr in ("::1",)


def needs_root():
    if os.geteuid() != 0:
        raise Skip("needs root to create network, mount and UTS namespaces "
                   f"(running as uid {os.geteuid()})")
    remove_stale_hosts()


@contextlib.contextmanager
def loopback_named_cluster():
    """Two hosts whose own names resolve to 127.0.1.1 (Debian's default): yields (hosts,
    their hosts files, an output directory). Namespaces and processes go with the Hosts
    context; the output and log directories are removed too, pass or fail."""
    needs_root()
    out = tempdir()
    try:
        with Hosts(2) as hosts:
            try:
                yield hosts, loopback_named_hosts(hosts, 2), out
            finally:
                shutil.rmtree(hosts.logs, ignore_errors=True)
        check(not hosts.leftovers(), f"left behind: {hosts.leftovers()}")
    finally:
        shutil.rmtree(out, ignore_errors=True)


def loopback_master_job(conf_of, backend="c10d", musterd=False):
    """Two hosts whose own names resolve to 127.0.1.1; the rendezvous is on host 1 (an agent
    there, or a musterd), reached as host 1's NAME; host 1's agent joins first, so its node
    is the master and reaches the rendezvous over loopback."""
    with loopback_named_cluster() as (hosts, files, out):
        endpoint = f"{name_of(hosts, 1)}:{RDZV_PORT}"
        agents = {}
        if musterd:
            daemon = spawn_as_host(hosts, 1, files, [MUSTERD, "--host", "0.0.0.0", "--port",
                                                     str(RDZV_PORT)], "musterd")
            wait_logged(hosts, daemon, "listening on", stream="out")
        agents[1] = spawn_as_host(hosts, 1, files,
                                  job_args(backend, endpoint, out, conf_of(1)), "agent-h1")
        wait_logged(hosts, daemon if musterd else agents[1], "event=join")
        agents[2] = spawn_as_host(hosts, 2, files,
                                  job_args(backend, endpoint, out, conf_of(2)), "agent-h2")
        ranks = check_store_reachable_everywhere(hosts, agents, out, master_host=1,
                                                 master_addr_on_others=host_addr(1))
        # The scenario holds: the master's agent reached the rendezvous over loopback, and
        # workers on its own host keep that address.
        master_addr = ranks[0]["env"]["MASTER_ADDR"]
        check(is_loopback(master_addr), f"host 1's workers got MASTER_ADDR {master_addr}: "
              "the master did not reach the rendezvous over loopback")
        if not conf_of(1) and not musterd:
            # torchrun's c10d rule: host 1's agent serves, host 2's joins it.
            check("event=rdzv_host serve=true" in hosts.log(agents[1]), "host 1 served",
                  hosts.log(agents[1]))
            check("event=rdzv_host serve=false" in hosts.log(agents[2]), "host 2 joined",
                  hosts.log(agents[2]))


@test
def c10d_line_with_hostnames_on_127_0_1_1_gives_remote_workers_a_reachable_master():
    # torchrun's line, unchanged on both hosts: host 1's agent serves the rendezvous.
    loopback_master_job(lambda i: "")


@test
def is_host_agent_on_127_0_1_1_never_advertises_loopback_to_other_hosts():
    loopback_master_job(lambda i: f"is_host={int(i == 1)}")


@test
def musterd_beside_the_master_on_127_0_1_1_never_advertises_loopback_to_other_hosts():
    loopback_master_job(lambda i: "", backend="muster", musterd=True)


@test
def local_addr_names_are_advertised_as_given_and_their_stores_are_reachable():
    # --local-addr wins over every rewrite; a name that resolves to 127.0.1.1 at home must
    # not make the store listen on loopback only.
    with loopback_named_cluster() as (hosts, files, out):
        endpoint = f"{name_of(hosts, 1)}:{RDZV_PORT}"
        agents = {}
        for i in (1, 2):
            args = job_args("c10d", endpoint, out, f"is_host={int(i == 1)}",
                            ["--local-addr", name_of(hosts, i)])
            agents[i] = spawn_as_host(hosts, i, files, args, f"agent-h{i}")
            if i == 1:
                wait_logged(hosts, agents[1], "event=join")
        ranks = check_store_reachable_everywhere(hosts, agents, out, master_host=1,
                                                 master_addr_on_others=name_of(hosts, 1))
        check(ranks[0]["env"]["MASTER_ADDR"] == name_of(hosts, 1), "the master's own workers")


@test
def static_master_addr_names_reach_the_store_from_every_host():
    # The static backend hands --master-addr to workers as written; each host resolves it.
    with loopback_named_cluster() as (hosts, files, out):
        agents = {}
        for i in (1, 2):
            args = [MUSTER, "--nnodes", "2", "--node-rank", str(i - 1), "--nproc-per-node", "2",
                    "--master-addr", name_of(hosts, 1), "--master-port", "29500", GEN_DUMP, out,
                    "--net", "--run", "0.5"]
            agents[i] = spawn_as_host(hosts, i, files, args, f"agent-h{i}")
        check_store_reachable_everywhere(hosts, agents, out, master_host=1,
                                         master_addr_on_others=name_of(hosts, 1))


if __name__ == "__main__":
    # A SIGTERM unwinds like Ctrl-C, so the teardown runs; after a SIGKILL the next run cleans up.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    run_tests()
