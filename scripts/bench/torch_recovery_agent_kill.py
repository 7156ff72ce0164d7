"""torch_recovery.py --scenario agent-kill: an elastic job on two agents, one agent
SIGKILLed, until the survivors' workers step again."""
import os
import socket
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from bench_procs import alive, free_port, sigkill, tail  # noqa: E402
from bench_scenarios import RunError  # noqa: E402
from torch_recovery_runs import (MUSTER_COLUMNS, AGENTS, AGENT_NPROC, SURVIVORS, base_env, descendants,
                                listening_inodes, muster_cmd, owns_socket, phases_of, progress,
                                torchrun_cmd, warm_info)  # noqa: E402


def agent_kill(args, column, run):
    port = free_port()
    endpoint = f"127.0.0.1:{port}"
    rid = f"bench{os.getpid()}"
    watch = []
    if column in MUSTER_COLUMNS and args.musterd:
        daemon = run.spawn([args.musterd_bin, "--host", "127.0.0.1", "--port", str(port)],
                           base_env({"MUSTER_LOG_LEVEL": "info"}), "musterd")
        watch.append(daemon)
        wait_port(port, 10, daemon)
    agents = []
    for i in range(AGENTS):
        flags = elastic_flags(column in MUSTER_COLUMNS, endpoint, rid, args.last_call_timeout)
        if column in MUSTER_COLUMNS:
            cmd, env = muster_cmd(args, column, flags, run)
        else:
            cmd, env = torchrun_cmd(args, column, flags, run)
        agents.append(run.spawn(cmd, env, f"agent{i}"))
        if i == 0 and not watch:  # agent 0 first: it binds the endpoint and serves
            wait_port(port, args.timeout, agents[0])
    watch += agents
    world = AGENTS * AGENT_NPROC
    tr = run.traces
    run.wait(f"every rank at step {args.kill_after_step}",
             lambda: tr.all_stepping(world, args.kill_after_step), args.timeout, watch)
    candidates, hosts, workers_of = agents_to_kill(agents, port, tr.current(world).values())
    victim = agents[candidates[0]]
    victim_ranks = sorted(w.rank for w in workers_of[candidates[0]])
    watch = [p for p in watch if p is not victim]
    doomed = [victim.pid] + (descendants([victim.pid]) if args.kill == "node" else [])
    killed_at = time.time()
    sigkill(doomed)
    limit = args.timeout if column in MUSTER_COLUMNS else args.window
    try:
        group = run.wait(f"the {SURVIVORS} surviving ranks stepping in a new generation",
                         lambda: tr.new_group(SURVIVORS, killed_at), limit, watch)
    except RunError as exc:
        exc.args = (f"{exc.args[0]} ({progress(tr, SURVIVORS, killed_at)})",)
        if column in MUSTER_COLUMNS:
            raise
        exited = [(p.name, p.returncode) for p in watch if p.poll() is not None]
        orphans = sum(alive(w.pid) for w in workers_of[candidates[0]])
        old = [w for w in tr.current(world).values() if w.t["t_first_line"] < killed_at]
        still = [w for w in old if w.last_step and w.last_step[1] > killed_at + limit / 2]
        what = f"did not re-form within {limit:.0f} s"
        what += f"; exited {exited}" if exited else "; survivors kept running"
        if args.kill == "agent":
            what += (f"; {orphans} of the killed agent's {len(workers_of[candidates[0]])} workers "
                     f"still running (orphaned)")
        if len(still) == world:
            what += (f"; all {world} ranks of the old generation still stepping (up to step "
                     f"{max(w.last_step[0] for w in still)})")
        return {"none": what + f" (new attempt: {progress(tr, SURVIVORS, killed_at)})"}
    res = phases_of(group, killed_at)
    res["victim"] = f"agent{candidates[0]} (ranks {victim_ranks}; rendezvous host: "
    res["victim"] += ", ".join(f"agent{h}" for h in hosts) if hosts else (
        "musterd" if args.musterd and column in MUSTER_COLUMNS else "not found")
    res["victim"] += ")"
    if column in MUSTER_COLUMNS:
        res.update(warm_info(run, list(tr.workers.values())))
    return res


def elastic_flags(muster, endpoint, rid, last_call_timeout):
    """The launcher flags of one agent of the elastic job (muster's spelling, or torchrun's
    with --monitor_interval 0.1; torchrun_cmd adds torchrun 2.x's --local_addr)."""
    if muster:
        return ["--nnodes", f"2:{AGENTS}", "--nproc-per-node", str(AGENT_NPROC), "--rdzv-backend", "c10d",
                "--rdzv-endpoint", endpoint, "--rdzv-id", rid, "--max-restarts", "3",
                "--local-addr", "127.0.0.1", "--rdzv-conf", f"last_call_timeout={last_call_timeout}"]
    return ["--nnodes", f"2:{AGENTS}", "--nproc_per_node", str(AGENT_NPROC), "--rdzv_backend", "c10d",
            "--rdzv_endpoint", endpoint, "--rdzv_id", rid, "--max_restarts", "3",
            "--monitor_interval", "0.1", "--rdzv_conf", f"last_call_timeout={last_call_timeout}"]


def agents_to_kill(agents, port, workers):
    """The agents (indexes into `agents`) that may be killed, best first: not the one serving
    the rendezvous on `port` (nor agent 0 when none is found to), preferably not the one whose
    workers hold rank 0 (the master). `workers`: the running ones, each with .pid and .rank.
    Returns (candidates, hosts, {index: its workers}); RunError when there is none."""
    inodes = listening_inodes(port)
    hosts = [i for i, a in enumerate(agents) if owns_socket(a.pid, inodes)]
    workers = list(workers)
    below = {i: set(descendants([a.pid])) for i, a in enumerate(agents)}  # forked ones included
    workers_of = {i: [w for w in workers if w.pid in below[i]] for i in range(len(agents))}
    candidates = sorted((i for i in range(len(agents)) if i not in hosts and (hosts or i != 0)),
                        key=lambda i: (any(w.rank == 0 for w in workers_of[i]), i))
    if not candidates:
        raise RunError(f"no agent to kill that does not serve the rendezvous (hosts {hosts})")
    return candidates, hosts, workers_of


def wait_port(port, timeout, proc):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RunError(f"{proc.name} exited with {proc.returncode}: {tail(proc.err_path, 6)}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.02)
    raise RunError(f"nothing listens on 127.0.0.1:{port} after {timeout:.0f} s")


