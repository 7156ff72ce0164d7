"""Helpers for elastic-rendezvous tests: a real musterd, real agents, real workers.

Workers are tests/integration/workers/gen_dump.py, which record one JSON file per
(generation, rank). check_generations() asserts the invariants every elastic
test must hold: ranks contiguous 0..W-1, exactly one master node, the same
WORLD_SIZE and MASTER_ADDR/MASTER_PORT for every worker of a generation,
generations increasing, and no worker of an earlier generation alive when a
later generation's worker started.
"""
import json
import os
import re
import subprocess

from harness import BIN_DIR, MUSTER, base_env, check, start, wait_for, worker
from testlib.ports import bound_port

MUSTERD = os.path.join(BIN_DIR, "musterd")
GEN_DUMP = worker("gen_dump.py")


def start_musterd(port=0, extra=(), env=None, log=None):
    """Starts musterd on 127.0.0.1; returns (process, port). log: a file for its
    event log (stderr), else a pipe."""
    proc = start([MUSTERD, "--host", "127.0.0.1", "--port", str(port)] + list(extra), env=env,
                 stderr=log or subprocess.PIPE)
    line = proc.stdout.readline()
    port = bound_port(line)
    check(port is not None, f"musterd did not start: {line!r}")
    return proc, port


def agent_args(endpoint, local_addr, out_dir, nnodes="2:3", nproc=2, run_id="job", conf="",
               worker_args=(), extra=()):
    """The command line of an elastic agent running gen_dump.py workers."""
    rdzv_conf = "last_call_timeout=0.5" + ("," + conf if conf else "")
    return ([MUSTER, "--nnodes", nnodes, "--nproc-per-node", str(nproc), "--rdzv-backend", "c10d",
             "--rdzv-endpoint", endpoint, "--rdzv-id", run_id, "--rdzv-conf", rdzv_conf,
             "--local-addr", local_addr] + list(extra) + [GEN_DUMP, out_dir] + list(worker_args))


def start_agent(port, out_dir, env=None, **kwargs):
    """Starts an agent on loopback; kwargs as for agent_args()."""
    return start(agent_args(f"127.0.0.1:{port}", "127.0.0.1", out_dir, **kwargs),
                 env=env or base_env())


def dumps(out_dir):
    """{gen: {rank: record}} of every worker start recorded so far."""
    result = {}
    for name in os.listdir(out_dir):
        m = re.fullmatch(r"g(\d+)_r(\d+)\.json", name)
        if not m:
            continue
        with open(os.path.join(out_dir, name)) as f:
            record = json.load(f)
        result.setdefault(int(m.group(1)), {})[int(m.group(2))] = record
    return result


def wait_generation(out_dir, world_size, timeout=15, after=-1):
    """Waits until a generation newer than `after` has all `world_size` workers; returns it."""
    found = {}

    def ready():
        for gen, ranks in sorted(dumps(out_dir).items()):
            if gen > after and len(ranks) == world_size:
                found["gen"] = gen
                return True
        return False

    check(wait_for(ready, timeout), f"no generation after {after} with {world_size} workers: "
          f"{ {g: sorted(r) for g, r in dumps(out_dir).items()} }")
    return found["gen"]


def check_generations(out_dir, ignore_overlap_pids=()):
    """The invariants, over every complete generation recorded in out_dir;
    fails when there is none (a run that started no worker proves nothing)."""
    all_gens = dumps(out_dir)
    check(any(len(ranks) == int(next(iter(ranks.values()))["env"]["WORLD_SIZE"])
              for ranks in all_gens.values()),
          f"no complete generation recorded in {out_dir}: {sorted(all_gens)}")
    previous = -1
    for gen, ranks in sorted(all_gens.items()):
        check(gen > previous, f"generations not increasing: {gen} after {previous}")
        previous = gen
        # Checked for every worker that started, complete generation or not:
        # an interrupted one is where stale workers would linger.
        for r in ranks.values():
            bad = [o for o in r["overlap"] if o["pid"] not in ignore_overlap_pids]
            check(not bad, f"gen {gen} rank {r['rank']} started while earlier workers ran: {bad}")
        envs = [r["env"] for r in ranks.values()]
        world = int(envs[0]["WORLD_SIZE"])
        if len(ranks) != world:
            continue  # an incomplete generation (stopped while starting)
        check(sorted(ranks) == list(range(world)), f"gen {gen}: ranks {sorted(ranks)} not 0..{world - 1}")
        for key in ("WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "GROUP_WORLD_SIZE"):
            check(len({e[key] for e in envs}) == 1, f"gen {gen}: {key} differs: {[e[key] for e in envs]}")
        # Each node (agent) holds exactly one group rank, and exactly one node
        # is the master (group rank 0).
        agents_of_group_rank = {}
        for r in ranks.values():
            agents_of_group_rank.setdefault(r["env"]["GROUP_RANK"], set()).add(r["ppid"])
        check(all(len(a) == 1 for a in agents_of_group_rank.values()),
              f"gen {gen}: a group rank spans several agents: {agents_of_group_rank}")
        check(len({next(iter(a)) for a in agents_of_group_rank.values()}) ==
              len(agents_of_group_rank), f"gen {gen}: an agent holds several group ranks")
        check(len(agents_of_group_rank.get("0", ())) == 1, f"gen {gen}: no single master node")
        group_ranks = sorted(int(g) for g in agents_of_group_rank)
        check(group_ranks == list(range(int(envs[0]["GROUP_WORLD_SIZE"]))),
              f"gen {gen}: group ranks {group_ranks}")
    return all_gens


def agent_of_rank(agents, out_dir, gen, rank):
    """The agent process whose worker had `rank` in `gen` (the worker's recorded parent)."""
    ppid = dumps(out_dir)[gen][rank]["ppid"]
    for agent in agents:
        if agent.pid == ppid:
            return agent
    raise AssertionError(f"no agent is the parent of gen {gen} rank {rank} (ppid {ppid})")


def wait_exit(proc, timeout):
    try:
        proc.wait(timeout=timeout)
    except Exception:  # noqa: BLE001
        pass
    return proc.poll()

