"""muster under SLURM: a private 3-node cluster (tests/fixtures/slurm_cluster.sh), 4 fake GPUs per node.

Checked:
  - the sbatch template multi_node.sbatch runs its program on every node and
    `sbatch --wait` exits with the program's exit code (3), or 0;
  - per-task mode: srun starts muster-train directly (6 tasks, no agent); the
    runtime bootstraps from SLURM_PROCID/SLURM_NTASKS/the first host of
    SLURM_JOB_NODELIST and ends with the weights of a 1-process run;
  - agent mode: `srun --ntasks-per-node=1 muster ...` derives nnodes, the
    rendezvous and the run id from the step: 6 workers, ranks 0..5, one
    WORLD_SIZE and master; `--dry-run` under srun exits 0 and names SLURM; with
    --gres=gpu:2 (GPUs 0,1 held by another job) each node runs 2 workers, one
    of the step's GPUs each;
  - elastic: SIGKILL of node n3's agent; the survivors form a new generation
    of 4 workers, and srun ends once they finish (137: the killed task).
  Workers are gen_dump.py, and every generation is held to the elastic tests'
  invariants (elastic_harness.check_generations).
  - multi-host (a second cluster, `cluster.sh up --netns`: every node has its
    own network namespace, address and hostname): the agent-mode and per-task
    tests again, and there every worker sees its own node's address,
    MASTER_ADDR is the address (or the name) of rank 0's node, whose store
    every worker reaches from its own node's address, and per-task rank 0
    alone serves the store while each rank advertises its own node's address.

Needs root and slurm-wlm + munge; otherwise every test is skipped (exit 77).
Set MUSTER_KEEP_SLURM_DIR=1 to keep the cluster's directory (logs).
"""
import os
import re
import signal
import stat
import subprocess
import time

from elastic_harness import GEN_DUMP, check_generations, dumps, wait_generation
from harness import MUSTER, check, pid_alive, tempdir, wait_for
from slurm_harness import SLURM_DIR, run_slurm_tests, slurm_test
from train_harness import TRAIN, max_relative_difference, read_floats

MULTI_NODE = os.path.join(SLURM_DIR, "multi_node.sbatch")

# Divisible by 6 ranks; small enough for 2 shared cores.
TRAIN_FLAGS = ["--backend", "gloo", "--steps", "20", "--global-batch", "24", "--hidden", "64",
               "--depth", "2", "--features", "32", "--dataset-size", "3072", "--bucket-mb", "0.004",
               "--collective-timeout", "20"]


def write_script(directory, name, text):
    path = os.path.join(directory, name)
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return path


def worker_dirs():
    """A fresh work directory and an empty out/ in it for gen_dump.py's records."""
    work = tempdir()
    out_dir = os.path.join(work, "out")
    os.mkdir(out_dir)
    return work, out_dir


def summary(out_dir):
    """{gen: {rank: (node, WORLD_SIZE)}} of the records, for failure messages."""
    return {gen: {rank: (rec["env"].get("SLURMD_NODENAME"), rec["env"].get("WORLD_SIZE"))
                  for rank, rec in sorted(ranks.items())}
            for gen, ranks in sorted(dumps(out_dir).items())}


def only_generation(out_dir, world, context):
    """The one generation recorded in out_dir, holding `world` workers, with the
    elastic invariants (check_generations); returns {rank: record}."""
    gens = check_generations(out_dir)
    check(len(gens) == 1, f"expected one generation: {summary(out_dir)}", context)
    ranks = next(iter(gens.values()))
    check(len(ranks) == world, f"{len(ranks)} workers, expected {world}: {summary(out_dir)}",
          context)
    return ranks


@slurm_test
def sbatch_multi_node_template_returns_the_programs_exit_code(cluster):
    work = tempdir()
    # exit_with.sh CODE DIR NODES: leaves DIR/ran-NODE-RANK-PID, waits (10 s at most) until
    # workers on NODES nodes have, then exits CODE: a worker failing at once would otherwise
    # end the run before a slower node's workers ran at all.
    program = write_script(work, "exit_with.sh", "#!/bin/sh\n"
                           "touch \"$2/ran-$SLURMD_NODENAME-${RANK:-x}-$$\"\n"
                           "i=0\n"
                           "while [ \"$(ls \"$2\" | grep '^ran-' | cut -d- -f2 | sort -u | wc -l)\" "
                           "-lt \"$3\" ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i + 1)); done\n"
                           "exit \"$1\"\n")
    for code in (3, 0):
        out_file = os.path.join(work, f"job{code}.out")
        env = cluster.env(MUSTER=MUSTER, TRAIN=f"--no-python {program} {code} {work} 3")
        rc, out, err = cluster.run(["sbatch", "--wait", "-N3", "-o", out_file, MULTI_NODE],
                                   env=env, timeout=90)
        log = open(out_file).read() if os.path.exists(out_file) else "(no job output)"
        check(rc == code, f"sbatch --wait exited {rc}, the program {code}", out, err, log)
        nodes = {name.split("-")[1] for name in os.listdir(work) if name.startswith("ran-")}
        check(nodes == {"n1", "n2", "n3"}, f"the program ran on {sorted(nodes)}", log)
        for name in os.listdir(work):
            if name.startswith("ran-"):
                os.unlink(os.path.join(work, name))


_one_process_weights = []


def one_process_weights():
    """The final weights of one muster-train process with TRAIN_FLAGS (run once)."""
    if not _one_process_weights:
        reference = os.path.join(tempdir(), "w1.bin")
        res = subprocess.run([TRAIN] + TRAIN_FLAGS + ["--out", reference], capture_output=True,
                             text=True, timeout=60)
        check(res.returncode == 0, f"the 1-process run exited {res.returncode}", res.stdout,
              res.stderr)
        _one_process_weights.append(read_floats(reference))
    return _one_process_weights[0]


def run_per_task_training(cluster, srun_flags=(), wrapper=()):
    """srun of 6 muster-train tasks (3 nodes x 2, no agent) whose final weights must equal
    those of one process; `wrapper` goes between srun and muster-train. Returns srun's
    (stdout, stderr)."""
    result = os.path.join(tempdir(), "w6.bin")
    rc, out, err = cluster.run(["srun", "-N3", "--ntasks-per-node=2", "--gpus-per-task=1"]
                               + list(srun_flags) + list(wrapper) + [TRAIN] + TRAIN_FLAGS
                               + ["--out", result], timeout=90)
    check(rc == 0, f"srun of 6 muster-train tasks exited {rc}", out, err)
    check(os.path.exists(result), "no --out file", out, err)
    diff = max_relative_difference(one_process_weights(), read_floats(result))
    check(diff <= 1e-5, f"6 SLURM tasks differ from 1 process by {diff:.2e} relative", out)
    return out, err


@slurm_test
def per_task_srun_of_muster_train_matches_one_process(cluster):
    run_per_task_training(cluster)


def run_agents(cluster, worker_args=()):
    """srun of one agent per node, 2 workers each: one generation of ranks 0..5, two per
    node, contiguous per agent, one MASTER_ADDR:MASTER_PORT. Returns ({rank: record},
    context)."""
    _, out_dir = worker_dirs()
    rc, out, err = cluster.run(["srun", "-N3", "--ntasks-per-node=1", MUSTER, "--nproc-per-node",
                                "2", GEN_DUMP, out_dir, "--run", "0"]
                               + list(worker_args), timeout=60)
    context = f"srun exit {rc}\nstdout:\n{out}\nstderr:\n{err}"
    check(rc == 0, f"srun of 3 agents exited {rc}", context)
    ranks = only_generation(out_dir, 6, context)
    per_node = {}
    for rank, rec in ranks.items():
        per_node.setdefault(rec["env"].get("SLURM_NODEID"), []).append(rec)
    check(sorted(per_node) == ["0", "1", "2"], f"workers on SLURM nodes {sorted(per_node)}",
          context)
    for node, recs in per_node.items():
        check(len(recs) == 2, f"node {node} ran {len(recs)} workers", context)
        check(sorted(r["env"].get("LOCAL_RANK") for r in recs) == ["0", "1"],
              f"node {node} LOCAL_RANKs {[r['env'].get('LOCAL_RANK') for r in recs]}", context)
        # Contiguous: a node's workers are ranks r, r+1 in LOCAL_RANK order.
        starts = {int(r["env"]["RANK"]) - int(r["env"]["LOCAL_RANK"]) for r in recs}
        check(len(starts) == 1 and starts.pop() % 2 == 0,
              f"node {node}: ranks {sorted(int(r['env']['RANK']) for r in recs)} with LOCAL_RANKs "
              f"{[r['env']['LOCAL_RANK'] for r in recs]} are not one contiguous block", context)
        check(len({r["ppid"] for r in recs}) == 1, f"node {node}: workers of different agents",
              context)
    check(len({recs[0]["ppid"] for recs in per_node.values()}) == 3, "not one agent per node",
          context)
    return ranks, context


@slurm_test
def agent_per_node_derives_the_job_from_slurm(cluster):
    run_agents(cluster)


@slurm_test
def dry_run_under_srun_prints_the_slurm_plan(cluster):
    _, out_dir = worker_dirs()
    rc, out, err = cluster.run(["srun", "-N3", "--ntasks-per-node=1", MUSTER, "--dry-run",
                                "--nproc-per-node", "2", GEN_DUMP, out_dir],
                               timeout=30)
    check(rc == 0, f"muster --dry-run under srun exited {rc}", out, err)
    check("SLURM" in out + err, "the plan does not mention SLURM", out, err)
    check(not dumps(out_dir), "--dry-run started workers")


@slurm_test
def gpu_step_runs_one_worker_per_gpu_of_the_step(cluster):
    work, out_dir = worker_dirs()
    # Another job holds GPUs 0,1 of every node, so this step gets 2,3: a
    # worker numbering GPUs from 0 would be caught.
    rc, out, err = cluster.run(["sbatch", "--parsable", "-N3", "--gres=gpu:2", "-o", "/dev/null",
                                "--wrap", "sleep 300"], timeout=30)
    check(rc == 0, f"sbatch of the GPU-holding job exited {rc}", out, err)
    blocker = out.strip().split(";")[0]
    cluster.wait_job_state(blocker, {"RUNNING"})
    step_env = os.path.join(work, "step-$SLURM_NODEID.env")
    rc, out, err = cluster.run(
        ["srun", "-N3", "--ntasks-per-node=1", "--gres=gpu:2", "sh", "-c",
         f'env > "{step_env}" && exec "$0" "$@"', MUSTER, GEN_DUMP, out_dir,
         "--run", "0"],
        timeout=60)
    context = f"srun exit {rc}\nstdout:\n{out}\nstderr:\n{err}"
    check(rc == 0, f"srun of 3 agents with --gres=gpu:2 exited {rc}", context)
    ranks = only_generation(out_dir, 6, context)
    for node in ("0", "1", "2"):
        with open(os.path.join(work, f"step-{node}.env")) as f:
            step = dict(line.rstrip("\n").split("=", 1) for line in f if "=" in line)
        step_gpus = step.get("CUDA_VISIBLE_DEVICES", "")
        check(step_gpus == step.get("SLURM_STEP_GPUS"),
              f"node {node}: step CUDA_VISIBLE_DEVICES={step_gpus!r} SLURM_STEP_GPUS="
              f"{step.get('SLURM_STEP_GPUS')!r}")
        check(sorted(step_gpus.split(",")) == ["2", "3"],
              f"node {node}: the step got GPUs {step_gpus!r}, not 2,3 (is the other job running?)")
        envs = [rec["env"] for rec in ranks.values() if rec["env"].get("SLURM_NODEID") == node]
        # Every worker sees the step's list; LOCAL_RANK picks its own GPU from it.
        mine = [env["CUDA_VISIBLE_DEVICES"].split(",")[int(env["LOCAL_RANK"])] for env in envs]
        check(len(mine) == 2 and sorted(mine) == sorted(step_gpus.split(",")) and
              all(env["CUDA_VISIBLE_DEVICES"] == step_gpus for env in envs),
              f"node {node}: workers' own GPUs {mine}, step's {step_gpus!r}", context)


@slurm_test
def elastic_survivors_continue_without_a_killed_agent(cluster):
    work, out_dir = worker_dirs()
    log = os.path.join(work, "srun.log")
    # gen_dump.py runs until SIGTERM; the survivors' workers get one at the end.
    srun = cluster.start(["srun", "-N3", "--ntasks-per-node=1", "--kill-on-bad-exit=0", "--no-kill",
                          MUSTER, "--nnodes", "2:3", "--nproc-per-node", "2", "--max-restarts",
                          "3", GEN_DUMP, out_dir], log=log)

    def output():
        state = "still running" if srun.poll() is None else f"exit {srun.returncode}"
        with open(log) as f:
            return f"srun {state}; workers: {summary(out_dir)}\noutput:\n{f.read()}"

    gen0 = wait_generation(out_dir, 6, timeout=30)
    check(srun.poll() is None, "srun ended with the first generation", output())
    agents = {rec["ppid"] for rec in dumps(out_dir)[gen0].values()
              if rec["env"].get("SLURMD_NODENAME") == "n3"}
    check(len(agents) == 1, f"n3's workers have agents {agents}", output())
    agent = agents.pop()
    check(pid_alive(agent) and os.path.basename(os.readlink(f"/proc/{agent}/exe")) == "muster",
          f"n3's agent {agent} is not a live muster", output())
    killed_at = time.monotonic()
    os.kill(agent, signal.SIGKILL)

    gen1 = wait_generation(out_dir, 4, timeout=60, after=gen0)
    print(f"  new generation {time.monotonic() - killed_at:.2f}s after the SIGKILL", flush=True)
    ranks = check_generations(out_dir)[gen1]
    nodes = {rec["env"].get("SLURMD_NODENAME") for rec in ranks.values()}
    check(nodes == {"n1", "n2"}, f"generation {gen1} runs on {sorted(nodes)}", output())

    for rec in ranks.values():
        os.kill(rec["pid"], signal.SIGTERM)  # each exits 0: the run succeeds
    check(wait_for(lambda: srun.poll() is not None, 30, 0.1),
          "srun did not end within 30s of stopping the survivors' workers", output())
    context = output()
    # srun reports the worst task: 128+9 for the SIGKILLed agent of n3 (task 2).
    check(srun.returncode == 128 + signal.SIGKILL, f"srun exited {srun.returncode}, expected 137",
          context)
    check("error: n3: task 2: Killed" in context, "srun did not report n3's agent killed", context)
    check(not re.search(r"error: n[12]: task", context), "a survivor's agent failed", context)


def check_distinct_node_addresses(cluster):
    addrs = cluster.node_addrs
    check(len(set(addrs.values())) == len(addrs)
          and not any(a.startswith("127.") for a in addrs.values()),
          f"the multi-host cluster's nodes do not have distinct non-loopback addresses: {addrs}")


@slurm_test(netns=True)
def multi_host_agents_point_every_worker_at_the_masters_store(cluster):
    check_distinct_node_addresses(cluster)
    addrs = cluster.node_addrs
    ranks, context = run_agents(cluster, ["--net"])
    for rank, rec in sorted(ranks.items()):
        node, net = rec["env"].get("SLURMD_NODENAME"), rec["net"]
        check(net.get("hostname") == node,
              f"rank {rank} on {node}: hostname {net.get('hostname')!r}", context)
        check(net.get("addrs") == [addrs[node]],
              f"rank {rank} on {node}: local addresses {net.get('addrs')} "
              f"({net.get('addrs_error', '')}), expected [{addrs[node]}]", context)
    # Rank 0's agent (group rank 0) hosts the store that MASTER_ADDR:MASTER_PORT names.
    master_addr, master_port = ranks[0]["env"]["MASTER_ADDR"], ranks[0]["env"]["MASTER_PORT"]
    store_node = ranks[0]["env"]["SLURMD_NODENAME"]
    resolved = addrs.get(master_addr, master_addr)  # MASTER_ADDR may be a node name
    check(resolved == addrs[store_node],
          f"MASTER_ADDR={master_addr} ({resolved}) is not the address of {store_node} "
          f"({addrs[store_node]}), rank 0's node, whose agent hosts the store", context)
    for rank, rec in sorted(ranks.items()):
        node, net = rec["env"].get("SLURMD_NODENAME"), rec["net"]
        check("store_conn" in net,
              f"rank {rank} on {node} could not connect to the store at "
              f"{master_addr}:{master_port}: {net.get('store_error')}", context)
        check(net["store_conn"] == [addrs[node], addrs[store_node]],
              f"rank {rank} on {node}: connection to the store from/to {net['store_conn']}, "
              f"expected [{addrs[node]}, {addrs[store_node]}]", context)


# Before exec'ing muster-train, each task leaves its view of the network in
# DIR/task-PROCID: "PROCID NODENAME HOSTNAME ADDRESS...".
TASK_RECORD = ('echo "$SLURM_PROCID $SLURMD_NODENAME $(hostname) $(hostname -I)" '
               '> "{dir}/task-$SLURM_PROCID" && exec "$0" "$@"')


@slurm_test(netns=True)
def multi_host_per_task_training_uses_rank_0s_node_as_master(cluster):
    check_distinct_node_addresses(cluster)
    addrs = cluster.node_addrs
    work = tempdir()
    out, err = run_per_task_training(cluster, srun_flags=["--label"],
                                     wrapper=["sh", "-c", TASK_RECORD.format(dir=work)])
    context = f"srun stdout:\n{out}\nstderr:\n{err}"
    tasks = {}
    for name in os.listdir(work):
        if name.startswith("task-"):
            with open(os.path.join(work, name)) as f:
                procid, node, hostname, *local = f.read().split()
            tasks[int(procid)] = {"node": node, "hostname": hostname, "addrs": local}
    check(sorted(tasks) == list(range(6)), f"task records {sorted(tasks)}", context)
    for procid, task in sorted(tasks.items()):
        node = task["node"]
        check(task["hostname"] == node and task["addrs"] == [addrs[node]],
              f"task {procid} on {node}: hostname {task['hostname']}, addresses {task['addrs']}, "
              f"expected {node} and [{addrs[node]}]", context)
    # Rank 0 serves the store (per-task mode has no agent): exactly once.
    log = (out + err).splitlines()
    stores = [line for line in log if "store listening" in line]
    check(len(stores) == 1 and re.match(r"\s*0: ", stores[0]),
          f"expected one 'store listening' line, from task 0: {stores}", context)
    # What each rank's communicator advertises: its own node's address.
    comms = {}
    for line in log:
        m = re.match(r"\s*(\d+): .*comm backend=\S+ rank=(\d+) .*addr=(\S+)", line)
        if m:
            comms[int(m.group(1))] = (int(m.group(2)), m.group(3))
    check(sorted(comms) == list(range(6)), f"'comm ... addr=' lines from tasks {sorted(comms)}",
          context)
    for procid, (rank, addr) in sorted(comms.items()):
        node = tasks[procid]["node"]
        check(rank == procid and addr == addrs[node],
              f"task {procid} on {node}: rank {rank} advertises {addr}, expected rank {procid} "
              f"at {addrs[node]}", context)


if __name__ == "__main__":
    run_slurm_tests()
