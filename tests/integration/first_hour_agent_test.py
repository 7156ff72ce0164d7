"""What a torchrun user meets first, at muster's default log level: waits on
the network that end with one line naming the endpoint, a quiet successful
run, failures of other nodes explained, the rendezvous's reconnects said,
counts that agree with the workers', --inject that says when it cannot fire,
and listening only on loopback when the whole job is on this machine.

Real muster and musterd processes on loopback, stdlib-only Python workers.
"""
import os
import re
import signal
import socket
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from elastic_harness import start_musterd  # noqa: E402
from harness import (MUSTER, PYTHON, base_env, check, free_port, run_muster,  # noqa: E402
                     run_tests, start, tempdir, test, wait_for)


def default_env(**extra):
    """The environment of a user who set nothing: muster's default log level."""
    env = base_env()
    env.pop("MUSTER_LOG_LEVEL", None)
    env.update(extra)
    return env


def muster_lines(err):
    return [line for line in err.splitlines() if line.startswith("muster:")]


def marker_script(directory):
    """A worker that leaves a file behind: whether any worker ever started."""
    path = os.path.join(directory, "worker.py")
    with open(path, "w") as f:
        f.write("import os, sys\n"
                "open(os.path.join(os.path.dirname(os.path.abspath(__file__)),\n"
                "                  'started.' + os.environ['RANK']), 'w').close()\n")
    return path


def workers_started(directory):
    return [n for n in os.listdir(directory) if n.startswith("started.")]


def elastic_args(endpoint, conf, script):
    return ["--nnodes", "1:2", "--rdzv-backend", "c10d", "--rdzv-endpoint", endpoint,
            "--rdzv-id", "first-hour", "--rdzv-conf", conf, "--nproc-per-node", "2", script]


def check_gave_up(code, err, elapsed, endpoint, cause, limit_s, work, limit_name="join_timeout",
                  slack_s=4):
    lines = muster_lines(err)
    errors = [line for line in lines if line.startswith("muster: error:")]
    check(code == 1, f"exit {code}, not 1 (2 stays 'bad command line')", err)
    check(limit_s - 0.5 <= elapsed <= limit_s + slack_s, f"ended after {elapsed:.1f} s, {limit_name} "
          f"is {limit_s} s", err)
    check(len(errors) == 1 and (endpoint in errors[0] or "no connection attempt" in cause)
          and cause in errors[0]
          and f"{limit_name} {limit_s} s" in errors[0],
          f"not one error line naming {endpoint}, {cause!r} and {limit_name}", err)
    check(not workers_started(work), "a worker started", err)
    check("self_fence" not in err and "stopping workers" not in err,
          "the agent spoke of stopping workers that never started", err)
    return lines


@test
def a_refused_endpoint_ends_the_agent_within_join_timeout_naming_it():
    work = tempdir()
    port = free_port()  # nobody listens there
    began = time.monotonic()
    code, _, err = run_muster(elastic_args(f"127.0.0.1:{port}", "join_timeout=5,is_host=0",
                                           marker_script(work)), env=default_env(), timeout=30)
    lines = check_gave_up(code, err, time.monotonic() - began, f"127.0.0.1:{port}",
                          "refused the connection", 5, work)
    warnings = [line for line in lines if line.startswith("muster: warning: waiting for the "
                                                          "rendezvous")]
    check(len(warnings) >= 1 and f"127.0.0.1:{port}" in warnings[0],
          "no warning said what the agent waited for", err)


@test
def a_host_that_does_not_resolve_ends_the_agent_naming_it():
    work = tempdir()
    began = time.monotonic()
    code, _, err = run_muster(elastic_args("nosuchhost.invalid:29400", "join_timeout=3",
                                           marker_script(work)), env=default_env(), timeout=60)
    # A resolver that cannot reach its name server answers late or never:
    # then no attempt finished, and the error says so.
    cause = "does not resolve" if "does not resolve" in err else "no connection attempt finished"
    check_gave_up(code, err, time.monotonic() - began, "nosuchhost.invalid:29400", cause, 3,
                  work, slack_s=30)


@test
def an_endpoint_that_accepts_and_never_answers_ends_the_agent_naming_it():
    work = tempdir()
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        port = silent.getsockname()[1]
        began = time.monotonic()
        # torchrun's c10d key for the same wait: read_timeout.
        code, _, err = run_muster(elastic_args(f"127.0.0.1:{port}", "read_timeout=4,is_host=0",
                                               marker_script(work)), env=default_env(), timeout=30)
    check_gave_up(code, err, time.monotonic() - began, f"127.0.0.1:{port}", "did not answer", 4,
                  work, limit_name="read_timeout")


@test
def a_successful_standalone_run_prints_nothing_of_musters_own():
    work = tempdir()
    code, out, err = run_muster(["--standalone", "--nproc-per-node", "2", marker_script(work)],
                                env=default_env(), timeout=60)
    check(code == 0, f"exit {code}", err)
    check(muster_lines(err) == [], "muster spoke on a successful run", err)
    check(len(workers_started(work)) == 2, "the workers did not run", out, err)
    # MUSTER_LOG_LEVEL=info tells each step, for whoever wants them.
    code, _, err = run_muster(["--standalone", "--nproc-per-node", "2", marker_script(work)],
                              env=default_env(MUSTER_LOG_LEVEL="info"), timeout=60)
    check(code == 0 and "muster: info: started 2 workers" in err, "info shows no steps", err)


@test
def standalone_ignores_a_taken_master_port_as_torchrun_does():
    work = tempdir()
    with socket.socket() as taken:
        taken.bind(("0.0.0.0", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        code, _, err = run_muster(["--standalone", "--master-port", str(port), "--nproc-per-node",
                                   "1", marker_script(work)], env=default_env(), timeout=60)
    check(code == 0 and len(workers_started(work)) == 1, f"exit {code}", err)


def listening_addresses(pid):
    """The local addresses of the TCP sockets `pid` listens on, as (host, port)."""
    inodes = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    found = []
    for table, width in (("/proc/net/tcp", 8), ("/proc/net/tcp6", 32)):
        with open(table) as f:
            next(f)
            for row in f:
                fields = row.split()
                local, state, inode = fields[1], fields[3], fields[9]
                if state != "0A" or inode not in inodes:
                    continue
                address, port = local.split(":")
                raw = bytes.fromhex(address)
                # /proc prints each 32-bit word in host (little-endian) order.
                words = b"".join(raw[i:i + 4][::-1] for i in range(0, len(raw), 4))
                host = socket.inet_ntop(socket.AF_INET if width == 8 else socket.AF_INET6, words)
                found.append((host, int(port, 16)))
    return found


def check_listens_on_loopback_only(agent, port):
    """`agent` listens on 127.0.0.1:`port` and on loopback alone; then it is stopped."""
    addresses = listening_addresses(agent.pid)
    check(("127.0.0.1", port) in addresses, f"nothing on 127.0.0.1:{port}: {addresses}")
    check(all(host in ("127.0.0.1", "::1") for host, _ in addresses),
          f"the agent listens beyond loopback: {addresses}")
    agent.send_signal(signal.SIGTERM)
    agent.communicate(timeout=30)


@test
def a_job_whose_endpoints_are_all_loopback_listens_on_loopback_only():
    work = tempdir()
    port = free_port()
    agent = start([MUSTER] + elastic_args(f"127.0.0.1:{port}", "join_timeout=30",
                                          sleeping_worker(work, 30)), env=default_env())
    # The agent serves the c10d rendezvous (the endpoint is this machine) and a store.
    check(wait_for(lambda: len(listening_addresses(agent.pid)) >= 2, 10),
          f"the agent listens on {listening_addresses(agent.pid)}")
    check_listens_on_loopback_only(agent, port)


@test
def a_static_job_on_a_loopback_master_addr_listens_on_loopback_only():
    work = tempdir()
    port = free_port()
    # Node 0 of 2 on this machine: its store waits for node 1's workers.
    node0 = start([MUSTER, "--nnodes", "2", "--node-rank", "0", "--master-addr", "127.0.0.1",
                   "--master-port", str(port), "--nproc-per-node", "1",
                   sleeping_worker(work, 30)], env=default_env())
    check(wait_for(lambda: ("127.0.0.1", port) in listening_addresses(node0.pid), 10),
          f"node 0 listens on {listening_addresses(node0.pid)}, not 127.0.0.1:{port}")
    check_listens_on_loopback_only(node0, port)


def sleeping_worker(work, seconds):
    """A worker that leaves started.<rank>.<world size>.<restart count> in
    `work`, sleeps, then prints what it saw."""
    path = os.path.join(work, "sleep_then_report.py")
    with open(path, "w") as f:
        f.write("import os, sys, time\n"
                f"open(os.path.join({work!r}, 'started.%s.%s.%s' % (os.environ['RANK'],\n"
                "     os.environ['WORLD_SIZE'], os.environ['TORCHELASTIC_RESTART_COUNT'])),\n"
                "     'w').close()\n"
                f"time.sleep({seconds})\n"
                "print('worker', os.environ['RANK'], 'of', os.environ['WORLD_SIZE'],\n"
                "      'restart_count', os.environ['TORCHELASTIC_RESTART_COUNT'], flush=True)\n")
    return path


@test
def a_survivor_says_whose_agent_was_lost_and_its_counts_agree_with_its_workers():
    work = tempdir()
    script = sleeping_worker(work, 4)
    port = free_port()
    args = ["--nnodes", "1:2", "--rdzv-backend", "c10d", "--rdzv-endpoint", f"127.0.0.1:{port}",
            "--rdzv-id", "survivor", "--rdzv-conf", "last_call_timeout=10", "--nproc-per-node",
            "1", script]
    # The survivor logs each step (info): its counts are checked against its worker's.
    first = start([MUSTER] + args, env=default_env(MUSTER_LOG_LEVEL="info"))
    # The first agent serves the rendezvous, and joins it first: group rank 0.
    check(wait_for(lambda: ("127.0.0.1", port) in listening_addresses(first.pid), 20),
          "the first agent did not serve the rendezvous")
    second = start([MUSTER] + args, env=default_env())
    # Generation 1 has both nodes (MAX 2 closes the round at once).
    check(wait_for(lambda: all(os.path.exists(os.path.join(work, f"started.{r}.2.0"))
                               for r in (0, 1)), 30),
          f"generation 1 did not start on both nodes: {os.listdir(work)}")
    second.send_signal(signal.SIGKILL)
    second.communicate(timeout=10)
    out, err = first.communicate(timeout=60)
    check(first.returncode == 0, f"the survivor exited {first.returncode}", out, err)
    warnings = [line for line in muster_lines(err)
                if line.startswith("muster: warning:") and "is ending" in line]
    check(len(warnings) == 1 and line_names_lost_agent(warnings[0], second.pid),
          "the survivor did not say whose agent was lost", err)
    # Its worker ran on as generation 2 alone; what it saw is what the log says.
    seen = re.findall(r"worker 0 of 1 restart_count (\d+)", out)
    logged = re.findall(r"started \d+ workers ranks=\S+ attempt=(\d+) "
                        r"\(TORCHELASTIC_RESTART_COUNT=(\d+)\)", err)
    check(seen and logged and logged[-1] == (seen[-1], seen[-1]),
          f"the log says {logged}, the worker saw {seen}", out, err)
    generations = re.findall(r"event=generation gen=\d+ group_rank.*TORCHELASTIC_RESTART_COUNT=(\d+)",
                             err)
    check(generations and generations[-1] == seen[-1],
          f"the generation line says {generations}, the worker saw {seen}", err)


def line_names_lost_agent(line, pid):
    return "the agent on host" in line and f":{pid}:" in line and "ranks 1..1" in line


@test
def an_agent_says_when_it_lost_the_rendezvous_and_when_it_is_back():
    work = tempdir()
    script = sleeping_worker(work, 6)
    daemon, port = start_musterd()
    agent = start([MUSTER, "--nnodes", "1:2", "--rdzv-backend", "muster", "--rdzv-endpoint",
                   f"127.0.0.1:{port}", "--rdzv-id", "lost", "--rdzv-conf",
                   "last_call_timeout=0.3", "--nproc-per-node", "1", script], env=default_env())
    time.sleep(2.0)
    daemon.send_signal(signal.SIGKILL)
    daemon.communicate(timeout=10)
    time.sleep(0.5)
    daemon, _ = start_musterd(port=port)
    out, err = agent.communicate(timeout=60)
    lines = muster_lines(err)
    lost = [i for i, line in enumerate(lines) if "rdzv_connection_lost" in line]
    back = [i for i, line in enumerate(lines) if "rdzv_reconnected" in line]
    check(lost and back and back[-1] > lost[0], "the agent did not say it was back", err)
    check(agent.returncode == 0, f"exit {agent.returncode}", out, err)


def progress_free_script(work):
    path = os.path.join(work, "no_steps.py")
    with open(path, "w") as f:
        f.write("print('trained without reporting steps')\n")
    return path


@test
def a_step_trigger_on_a_python_script_is_said_to_never_fire():
    work = tempdir()
    # Cold workers report no steps unless the script writes them: said at
    # start, and at the end.
    code, out, err = run_muster(["--nproc-per-node", "2", "--no-warm-workers", "--inject",
                                 "kill-worker,rank=1,step=3", progress_free_script(work)],
                                env=default_env(), timeout=60)
    check(code == 0, f"exit {code}", out, err)
    lines = muster_lines(err)
    check(len(lines) == 2, "not a warning at start and a line at the end", err)
    check("may never fire" in lines[0] and "MUSTER_PROGRESS_FD" in lines[0],
          "no start-up warning", err)
    check("never fired" in lines[1] and "step 3" in lines[1], "no line at the end", err)
    # Warm workers report a torch script's optimizer steps (step_hooks.py):
    # no warning at start; a script that steps no optimizer still gets the
    # line at the end.
    code, out, err = run_muster(["--nproc-per-node", "2", "--inject",
                                 "kill-worker,rank=1,step=3", progress_free_script(work)],
                                env=default_env(), timeout=60)
    check(code == 0, f"exit {code}", out, err)
    lines = muster_lines(err)
    check(len(lines) == 1 and "never fired" in lines[0] and "step 3" in lines[0],
          "not the line at the end alone", err)
    # A time trigger can fire on any worker: nothing to warn of.
    code, _, err = run_muster(["--nproc-per-node", "1", "--inject", "kill-worker,rank=0,after=30",
                               progress_free_script(work)], env=default_env(), timeout=60)
    check("may never fire" not in err, "a time trigger was said not to fire", err)


if __name__ == "__main__":
    run_tests()
