"""The worker store admits only the job's hosts, and follows each generation.

Three hosts in network namespaces (tests/fixtures/netns_hosts.sh) and musterd
in a fourth. A job runs on h1 and h2 (--nnodes 2:3, one worker each,
workers/store_use.py: a PING and an ADD on MASTER_ADDR:MASTER_PORT). While it
runs, a client on h3, outside the job, connects to the store: the store closes
the connection before answering anything, and the master's agent warns,
naming h3's address and counting the refusal; the workers of h1 and h2 go on.
Next, while the master's agent is stopped (SIGSTOP, for less than a heartbeat
timeout), h3 makes 20 data-then-reset connections, each a SET of its own
key: the kernel queues them with their bytes, the store refuses them once the
agent runs again (their peer address can no longer be read), and none of the
keys exists afterwards. Then an agent on h3 joins without --local-addr: the
next generation's member addresses include h3's as musterd saw it, and its
worker's PING and ADD succeed. Last, h3's agent dies: the next generation, on
h1 and h2, no longer admits h3's address, and the job completes there.

Needs root (namespaces, veths, a bridge); otherwise the test is skipped.
"""
import os
import shutil
import signal
import subprocess
import sys
import time

from elastic_harness import MUSTERD, dumps, wait_generation
from harness import MUSTER, Skip, check, run_tests, tempdir, test, wait_for, worker
from netns_harness import DAEMON_ADDR, Hosts, host_addr, remove_stale_hosts

RUN_SECONDS = 8  # each generation's workers: long enough for h3's probe and join

# Run on h3: connect, VALIDATE, PING; print how the store answered and how fast.
# The store resets a refused connection at accept: the reset may reach the
# client while connect() still returns, or at its first send or receive.
PROBE = r"""
import socket, struct, sys, time
start = time.monotonic()
try:
    sock = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=5)
    sock.sendall(struct.pack("<BI", 0, 0x3C85F7CE) + struct.pack("<BI", 13, 7))
    data = sock.recv(4)
    print("answered" if data else "closed", f"{time.monotonic() - start:.3f}")
except ConnectionResetError:
    print("closed", f"{time.monotonic() - start:.3f}")
"""

# Run on h3: once the file argv[3] exists, 20 connections that each send
# VALIDATE and a SET of "/injected/N" and reset (SO_LINGER 0); then prints
# "sent" and creates argv[4].
INJECT = r"""
import os, socket, struct, sys, time
while not os.path.exists(sys.argv[3]):
    time.sleep(0.002)
for i in range(20):
    key = f"/injected/{i}".encode()
    sock = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=5)
    sock.sendall(struct.pack("<BI", 0, 0x3C85F7CE) + struct.pack("<BQ", 1, len(key)) + key +
                 struct.pack("<Q", 8) + b"injected")
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    sock.close()
print("sent", flush=True)
open(sys.argv[4], "w").close()
"""

# Run on a member host: prints how many of "/injected/0..19" the store has.
PRESENT = r"""
import socket, struct, sys
sock = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=5)
sock.sendall(struct.pack("<BI", 0, 0x3C85F7CE))
found = 0
for i in range(20):
    key = f"/injected/{i}".encode()
    sock.sendall(struct.pack("<BQQ", 5, 1, len(key)) + key)
    found += sock.recv(1) == b"\x00"
print("present", found)
"""


def agent_args(port, i, out, advertise=True):
    """An agent of the job on host i; with `advertise`, it names its address (--local-addr)."""
    local_addr = ["--local-addr", host_addr(i)] if advertise else []
    return ([MUSTER, "--nnodes", "2:3", "--nproc-per-node", "1", "--rdzv-backend", "c10d",
             "--rdzv-endpoint", f"{DAEMON_ADDR}:{port}", "--rdzv-id", "admitjob", "--rdzv-conf",
             "last_call_timeout=0.5"] + local_addr +
            [worker("store_use.py"), out, "--run", str(RUN_SECONDS)])


@test
def a_host_outside_the_job_is_refused_until_a_generation_admits_it():
    if os.geteuid() != 0:
        raise Skip("needs root to create network namespaces, veths and a bridge "
                   f"(running as uid {os.geteuid()})")
    remove_stale_hosts()
    out = tempdir()
    try:
        with Hosts(3) as hosts:
            daemon, port = hosts.start_musterd(MUSTERD)
            agents = {i: hosts.spawn(f"{hosts.prefix}-h{i}", agent_args(port, i, out),
                                     f"agent-h{i}") for i in (1, 2)}

            def logs():
                return "\n".join(f"{p.log_name}:\n{hosts.log(p)}"
                                 for p in [daemon, *agents.values()])

            first = wait_generation(out, 2, timeout=20)
            records = dumps(out)[first]
            for rank, rec in records.items():
                check(rec.get("store_ok"), f"rank {rank} used the store: {rec.get('store_error')}",
                      logs())
            host_of_pid = {a.pid: i for i, a in agents.items()}
            master = host_of_pid.get(records[0]["ppid"])
            check(master in (1, 2), f"rank 0's agent is not h1's or h2's: {records[0]['ppid']}")
            master_addr = records[0]["env"]["MASTER_ADDR"]
            master_port = records[0]["env"]["MASTER_PORT"]
            check(master_addr == host_addr(master), f"MASTER_ADDR {master_addr}")

            # h3, outside the job: closed at once, before any answer, and counted.
            probe = hosts.spawn(f"{hosts.prefix}-h3", [sys.executable, "-c", PROBE, master_addr,
                                                       master_port], "probe-h3")
            try:
                probe.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
            answer = hosts.log(probe, "out").split()
            check(answer[:1] == ["closed"], f"h3's probe: {answer}", hosts.log(probe), logs())
            check(float(answer[1]) < 1.0, f"h3's connection closed after {answer[1]} s")
            warned = f"event=store_refused peer={host_addr(3)} refused_total=1 "
            check(wait_for(lambda: warned in hosts.log(agents[master]), 5),
                  f"the master's agent warned {warned!r}", logs())
            check(all(a.poll() is None for a in agents.values()), "the job's agents run", logs())
            check(all(rec.get("store_ok") for rec in dumps(out)[first].values()),
                  "h1's and h2's workers used the store", logs())

            # h3's data-then-reset connections while the master's agent is stopped.
            go, sent = os.path.join(out, "inject.go"), os.path.join(out, "inject.sent")
            injector = hosts.spawn(f"{hosts.prefix}-h3", [sys.executable, "-c", INJECT,
                                                          master_addr, master_port, go, sent],
                                   "inject-h3")
            time.sleep(0.3)  # the interpreter is up and polling for `go`
            os.kill(agents[master].pid, signal.SIGSTOP)
            try:
                stopped = time.monotonic()
                open(go, "w").close()
                check(wait_for(lambda: os.path.exists(sent), 2), "h3 sent its 20 connections",
                      hosts.log(injector))
            finally:
                os.kill(agents[master].pid, signal.SIGCONT)
            print(f"the master's agent was stopped for {time.monotonic() - stopped:.3f} s",
                  flush=True)
            other = 3 - master
            present = hosts.spawn(f"{hosts.prefix}-h{other}",
                                  [sys.executable, "-c", PRESENT, master_addr, master_port],
                                  "present")
            present.wait(timeout=10)
            check(hosts.log(present, "out").split() == ["present", "0"],
                  f"none of h3's keys was written: {hosts.log(present, 'out')}",
                  hosts.log(present), logs())
            refused = "event=store_refused peer=unnamed "
            check(wait_for(lambda: refused in hosts.log(agents[master]), 5),
                  f"the master's agent warned {refused!r}", logs())
            check(all(a.poll() is None for a in agents.values()), "the job's agents run", logs())

            # h3 joins, advertising no address: the next generation admits it by the
            # address musterd saw it connect from.
            agents[3] = hosts.spawn(f"{hosts.prefix}-h3", agent_args(port, 3, out, advertise=False),
                                    "agent-h3")
            host_of_pid[agents[3].pid] = 3
            second = wait_generation(out, 3, after=first, timeout=20)
            records = dumps(out)[second]
            for rank, rec in sorted(records.items()):
                host = host_of_pid.get(rec["ppid"])
                check(rec.get("store_ok"), f"rank {rank} on h{host} used the store: "
                      f"{rec.get('store_error')}", logs(), hosts.log(agents[3]))
            check({host_of_pid.get(rec["ppid"]) for rec in records.values()} == {1, 2, 3},
                  "the second generation runs on h1, h2 and h3")
            master_log = hosts.log(agents[master])
            check("admitted=members=3 " in master_log and "store_admits_everyone" not in master_log,
                  "the master admitted the 3 members by the rule, not everyone", master_log)
            h3_record = next(r for r in records.values() if host_of_pid.get(r["ppid"]) == 3)
            check(h3_record["store_conn"][0] == host_addr(3),
                  f"h3's worker reached the store from {h3_record['store_conn'][0]}")

            # h3 leaves (its agent dies): from the next generation on, its address is
            # no longer admitted.
            left = agents.pop(3)
            left.kill()
            left.wait(timeout=10)
            third = wait_generation(out, 2, after=second, timeout=20)
            gone_env = dumps(out)[third][0]["env"]
            probe = hosts.spawn(f"{hosts.prefix}-h3", [sys.executable, "-c", PROBE,
                                                       gone_env["MASTER_ADDR"],
                                                       gone_env["MASTER_PORT"]], "probe-h3-left")
            try:
                probe.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
            answer = hosts.log(probe, "out").split()
            check(answer[:1] == ["closed"], f"h3's probe after it left: {answer}",
                  hosts.log(probe), logs())

            deadline = time.monotonic() + RUN_SECONDS + 20
            for agent in agents.values():
                try:
                    agent.wait(timeout=max(0.1, deadline - time.monotonic()))
                except subprocess.TimeoutExpired:
                    pass
            for i, agent in agents.items():
                check(agent.poll() == 0, f"h{i}'s agent: exit {agent.poll()}", logs(),
                      hosts.log(left))
            check(daemon.poll() is None, "musterd runs", hosts.log(daemon))
            shutil.rmtree(hosts.logs, ignore_errors=True)
        left = hosts.leftovers()
        check(not left, f"left behind: {left}")
    finally:
        shutil.rmtree(out, ignore_errors=True)


if __name__ == "__main__":
    run_tests()
