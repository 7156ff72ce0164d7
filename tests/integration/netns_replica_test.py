"""A replicated rendezvous across hosts in network namespaces (netns_harness):
etcd in the daemon namespace, musterd replicas on hosts 1-3, agents on hosts
4-6, each agent given every replica in --rdzv-endpoint.

Cutting the leader's host link (no RST: its connections hang): the old
leader cannot renew its lease and steps down before it can expire; the
agents leave the silent connection, hear the standbys name the old leader
and then elect a new one, follow the new leader, and keep every worker.

Needs root (namespaces, veths, a bridge) and etcd; skipped otherwise.
"""
import os
import re
import shutil
import signal
import sys
import time

from elastic_harness import MUSTERD, agent_args, check_generations, dumps, wait_generation
from etcd_cluster import ETCD, require_etcd
from harness import Skip, check, pid_alive, run_tests, tempdir, test, wait_for
from netns_harness import DAEMON_ADDR, Hosts, host_addr, remove_stale_hosts

RDZV_PORT = 29400  # each host has a network namespace of its own: the port is free
REPLICA_HOSTS = (1, 2, 3)
AGENT_HOSTS = (4, 5, 6)
LEADER_RE = re.compile(r"event=replica_leader epoch=(\d+)")


def replica_address(i):
    return f"{host_addr(i)}:{RDZV_PORT}"


@test
def cutting_the_leaders_link_moves_the_agents_to_a_new_leader_without_restarting_a_worker():
    if os.geteuid() != 0:
        raise Skip("needs root to create network namespaces, veths and a bridge "
                   f"(running as uid {os.geteuid()})")
    require_etcd()
    remove_stale_hosts()
    out = tempdir()
    with Hosts(6) as hosts:
        data = os.path.join(hosts.logs, "etcd-data")
        client = f"http://{DAEMON_ADDR}:2379"
        peer = f"http://{DAEMON_ADDR}:2380"
        etcd = hosts.spawn(f"{hosts.prefix}-d",
                           [ETCD, "--name", "m0", "--data-dir", data,
                            "--listen-client-urls", client, "--advertise-client-urls", client,
                            "--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
                            "--initial-cluster", f"m0={peer}", "--logger", "zap",
                            "--log-outputs", "stderr"], "etcd")
        replicas = {i: hosts.spawn(f"{hosts.prefix}-h{i}",
                                   [MUSTERD, "--host", host_addr(i), "--port", str(RDZV_PORT),
                                    "--etcd", f"{DAEMON_ADDR}:2379",
                                    "--advertise", replica_address(i)], f"musterd-h{i}")
                    for i in REPLICA_HOSTS}

        def replica_log(i):
            return hosts.log(replicas[i], "out") + hosts.log(replicas[i])

        def leading():
            """The replica host whose latest epoch is highest and not stepped down since."""
            best, best_epoch = None, 0
            for i in REPLICA_HOSTS:
                text = replica_log(i)
                leads = list(LEADER_RE.finditer(text))
                if leads and "event=replica_step_down" not in text[leads[-1].end():] and \
                        int(leads[-1].group(1)) > best_epoch:
                    best, best_epoch = i, int(leads[-1].group(1))
            return best

        def logs():
            procs = [etcd, *replicas.values(), *agents.values()]
            return "\n".join(f"{p.log_name}:\n{hosts.log(p, 'out')}{hosts.log(p)}" for p in procs)

        agents = {}
        check(wait_for(lambda: leading() is not None, 20), "no replica led", logs())
        old = leading()
        endpoints = ",".join(replica_address(i) for i in REPLICA_HOSTS)
        for i in AGENT_HOSTS:
            agents[i] = hosts.spawn(f"{hosts.prefix}-h{i}",
                                    agent_args(endpoints, host_addr(i), out, run_id="replicated"),
                                    f"agent-h{i}")
        gen = wait_generation(out, 6, timeout=20)
        pids = sorted(r["pid"] for r in dumps(out)[gen].values())

        cut_at = time.monotonic()
        hosts.link(old, "down")
        check(wait_for(lambda: leading() not in (None, old), 8),
              "no other replica took the lead after the leader's link was cut", logs())
        new = leading()
        want = f"event=rdzv_leader endpoint={replica_address(new)}"
        check(wait_for(lambda: all(want in hosts.log(a) for a in agents.values()), 6),
              f"not every agent followed the new leader on host {new}", logs())
        print(f"  every agent was on the new leader {time.monotonic() - cut_at:.2f} s after "
              f"the leader's link was cut", flush=True)
        # The old leader, still running but cut off from etcd, stopped leading.
        check(wait_for(lambda: "event=replica_step_down" in replica_log(old) or
                       "the lease ran out before it was renewed" in replica_log(old), 3),
              "the cut-off leader did not step down", replica_log(old))
        time.sleep(max(0.0, cut_at + 4.5 - time.monotonic()))  # past failover_timeout
        check(sorted(dumps(out)) == [gen], f"new generations: {sorted(dumps(out))}", logs())
        check(all(pid_alive(p) for p in pids), "a worker was restarted or killed", logs())
        check_generations(out)
        check(replicas[old].poll() is None, "the cut-off replica exited", replica_log(old))
    left = hosts.leftovers()
    check(not left, f"left behind: {left}")
    shutil.rmtree(out, ignore_errors=True)
    shutil.rmtree(hosts.logs, ignore_errors=True)


if __name__ == "__main__":
    # A SIGTERM unwinds like Ctrl-C, so the teardown runs; after a SIGKILL the next run cleans up.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    run_tests()
