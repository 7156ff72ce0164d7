"""In-place recovery of a real PyTorch DDP script (examples/torch/ddp_in_place.py,
the muster Python package) under muster, gloo on loopback, on every torch
version (torch_versions.py):

- a worker SIGKILLed: only it starts again, the survivors keep their pids,
  at most one step is redone, and the final weights are the fault-free
  run's;
- a worker hung (SIGSTOP, --hang-timeout): the survivors' collective blocked
  on it is interrupted, the hung one is replaced, the same holds;
- --recovery restart (no control channel): the module stays off, says so,
  and the job restarts from its checkpoint as a tutorial script does, with
  the same final weights; a script without the module under the default
  auto recovery restarts, and muster logs why it was not in place;
- elastic (musterd, 3 agents x 2 workers, --nnodes 2:3): an agent SIGKILLed,
  or SIGSTOPped (silent, its workers still running), leaves the other
  agents' workers running under the same pids into a world of 4; a node joining mid-run finds the running workers rejoining with their
  pids and its own fresh workers taking their state from a peer.

Weights are compared with a tolerance of 1e-5 (absolute): after a recovery
DDP forms its gradient buckets anew, and a different bucket layout (or world
size) sums the same numbers in another order.
"""
import functools
import os
import signal

from elastic_harness import MUSTERD, start_musterd
from harness import (MUSTER, SOURCE_DIR, Skip, check, descendants, run, run_tests,
                     start, tempdir, wait_for, write_file)
from netns_harness import DAEMON_ADDR, Hosts, host_addr, remove_stale_hosts
from step_log import (check_every_step_done, pids_of, read_steps, read_weights, redone_steps,
                      steps_logged, wait_done)
from torch_versions import each_version

EXAMPLE = os.path.join(SOURCE_DIR, "examples", "torch", "ddp_in_place.py")
PACKAGE = os.path.join(SOURCE_DIR, "python")
STEPS = 40
TOLERANCE = 1e-5


def env_for(version, **extra):
    return version.env(PYTHONPATH=PACKAGE, **extra)




@functools.lru_cache(maxsize=None)
def fault_free_weights(version, steps, nproc):
    """The final weights of a fault-free run, once per version and shape."""
    log = os.path.join(tempdir(), "reference.log")
    code, out, err = run([MUSTER, "--nproc-per-node", str(nproc), EXAMPLE, "--steps", str(steps),
                          "--log", log], env=env_for(version), timeout=240)
    check(code == 0, "the fault-free run failed", out, err)
    return read_weights(log + ".weights")


def check_weights(version, log, steps=STEPS, nproc=3):
    reference = fault_free_weights(version, steps, nproc)
    got = read_weights(log + ".weights")
    check(len(got) == len(reference), f"{len(got)} weights, the fault-free run has {len(reference)}")
    worst = max(abs(a - b) for a, b in zip(got, reference))
    check(worst <= TOLERANCE, f"the weights differ from the fault-free run's by {worst:.3g}")
    return worst





def single_node_fault(version, fault, extra=()):
    work = tempdir()
    log = os.path.join(work, "steps.log")
    code, out, err = run([MUSTER, "--nproc-per-node", "3", "--max-restarts", "3", *extra,
                          "--inject", fault, EXAMPLE, "--steps", str(STEPS), "--log", log,
                          "--sleep", "0.02"], env=env_for(version), timeout=240)
    check(code == 0, f"the job did not recover (exit {code})", out, err)
    return log, out, err


def check_replaced_alone(log, out, err, replaced):
    """The recovery did not fall back, every rank of 3 finished, rank `replaced` ran as two
    processes and the survivors each as one, and at most one step was redone."""
    check("event=in_place_fallback" not in err, "the recovery fell back", err)
    steps = read_steps(log)
    check_every_step_done(steps, 3, STEPS)
    for rank in (r for r in range(3) if r != replaced):
        check(len(pids_of(steps, rank)) == 1, f"survivor rank {rank} ran as {pids_of(steps, rank)}")
    check(len(pids_of(steps, replaced)) == 2,
          f"rank {replaced} ran as {pids_of(steps, replaced)}, not two processes")
    check(redone_steps(steps) <= 1, f"{redone_steps(steps)} steps redone", out, err)


@each_version
def a_killed_worker_is_replaced_alone_and_the_survivors_keep_their_process(version):
    log, out, err = single_node_fault(version, "kill-worker,rank=1,step=15")
    check(err.count("event=in_place_recovered") == 1, "not one in-place recovery", err)
    check("survivors=2 restarted=1" in err, "the recovery did not restart rank 1 alone", err)
    check_replaced_alone(log, out, err, 1)
    check("recovered in place at step" in err, "no survivor said where it recovered", err)
    check("with rank " in err and "'s state" in err, "the new rank 1 did not take a peer's state",
          err)
    worst = check_weights(version, log)
    print(f"  weights within {worst:.2g} of the fault-free run", flush=True)


@each_version
def a_hung_worker_is_replaced_and_the_survivors_blocked_on_it_recover_in_place(version):
    log, out, err = single_node_fault(version, "hang-worker,rank=2,step=12",
                                      extra=("--hang-timeout", "2"))
    check("event=in_place_recovered" in err, "no in-place recovery", err)
    check_replaced_alone(log, out, err, 2)
    check_weights(version, log)


@each_version
def under_recovery_restart_the_module_is_off_and_the_checkpoint_resumes(version):
    work = tempdir()
    log, ckpt = os.path.join(work, "steps.log"), os.path.join(work, "ckpt.pt")
    code, out, err = run([MUSTER, "--nproc-per-node", "3", "--max-restarts", "1", "--recovery",
                          "restart", "--inject", "kill-worker,rank=1,step=15", EXAMPLE, "--steps",
                          str(STEPS), "--log", log, "--ckpt", ckpt, "--ckpt-every", "10",
                          "--sleep", "0.02"], env=env_for(version), timeout=240)
    check(code == 0, f"the job did not finish (exit {code})", out, err)
    check("in-place recovery off" in err, "the module did not say it is off", err)
    check("event=in_place" not in err, "muster recovered in place under --recovery restart", err)
    check("restarting workers: attempt=1" in err, "the workers were not restarted", err)
    steps = read_steps(log)
    check_every_step_done(steps, 3, STEPS)
    for rank in range(3):
        check(len(pids_of(steps, rank)) == 2, f"rank {rank} ran as {pids_of(steps, rank)}")
    check(min(s for s, _ in steps[0] if s > 0) == 1, "the first start did not begin at step 1")
    check_weights(version, log)


@each_version
def a_script_without_the_module_restarts_and_muster_says_why(version):
    script = write_file(tempdir(), "plain.py",
                        "import os, sys, time\nprogress = int(os.environ['MUSTER_PROGRESS_FD'])\n"
                        "restart = os.environ['TORCHELASTIC_RESTART_COUNT']\n"
                        "for step in range(1, 6):\n    os.write(progress, f'{step}\\n'.encode())\n"
                        "    time.sleep(0.05)\n"
                        "    if restart == '0' and os.environ['RANK'] == '1' and step == 3: sys.exit(3)\n")
    code, out, err = run([MUSTER, "--nproc-per-node", "2", "--max-restarts", "1", script],
                         env=env_for(version), timeout=120)
    check(code == 0, f"the job did not finish (exit {code})", out, err)
    check("event=restart_not_in_place local_ranks=0,1" in err,
          "muster did not say why it restarted instead of recovering in place", err)
    check("restarting workers: attempt=1" in err, "the workers were not restarted", err)


def elastic_agent(port, script_args, nnodes="2:3"):
    return [MUSTER, "--nnodes", nnodes, "--nproc-per-node", "2", "--rdzv-backend", "c10d",
            "--rdzv-endpoint", f"127.0.0.1:{port}", "--rdzv-id", "in-place",
            "--rdzv-conf", "last_call_timeout=0.5", "--local-addr", "127.0.0.1",
            "--max-restarts", "3"] + list(script_args)




class ElasticJob:
    """A musterd and agents (elastic_agent: 2 workers each) running the example with --sleep
    `sleep` into one step log, self.log; the agents started are self.agents."""

    def __init__(self, version, sleep, steps=STEPS):
        self.version = version
        self.log = os.path.join(tempdir(), "steps.log")
        self.daemon, self.port = start_musterd()
        self.script = [EXAMPLE, "--steps", str(steps), "--log", self.log, "--sleep", sleep]
        self.agents = []

    def add_agents(self, count):
        self.agents += [start(elastic_agent(self.port, self.script), env=env_for(self.version))
                        for _ in range(count)]

    def wait_stepping(self, steps_each):
        """Fails the test unless the log holds `steps_each` steps per rank of the agents
        started within 180 s."""
        ranks = 2 * len(self.agents)
        check(wait_for(lambda: steps_logged(self.log, ranks * steps_each), 180),
              f"the job of {ranks} ranks did not step")

    def wait_ok(self, agents, what):
        """Waits for `agents` to exit (240 s each); fails the test unless each exited 0 (`what`:
        the message's start). Returns their stderr, joined."""
        results = wait_done(agents, 240)
        check(all(code == 0 for code, _, _ in results), f"{what} {[r[0] for r in results]}",
              *[o + e for _, o, e in results])
        return "".join(e for _, _, e in results)


def check_survivors_kept_their_process(version, job, err):
    """After a node was lost: the survivors recovered in place, the 4 processes that ended
    the job all stepped in the world of 6, and the weights are the fault-free run's."""
    check("event=in_place_recovered" in err, "the survivors did not recover in place", err)
    steps = read_steps(job.log)
    before = {pid for entries in steps.values() for s, pid in entries if s <= 10}
    after = {pid for entries in steps.values() for s, pid in entries if s == STEPS}
    check(len(after) == 4, f"{len(after)} processes ended the job, not 4")
    check(after <= before, f"processes started after the loss ended the job: {after - before}")
    check_weights(version, job.log, nproc=3)
    check(job.daemon.poll() is None, "musterd died")


@each_version
def an_agent_killed_leaves_the_other_nodes_workers_in_their_process(version):
    job = ElasticJob(version, "0.05")
    job.add_agents(3)
    job.wait_stepping(10)
    os.kill(job.agents[2].pid, signal.SIGKILL)
    check_survivors_kept_their_process(version, job,
                                       job.wait_ok(job.agents[:2], "survivor exits"))


@each_version
def an_agent_stopped_is_left_behind_and_the_others_keep_their_process(version):
    # SIGSTOP: the agent is silent (no heartbeat) while its workers still run;
    # the daemon declares it lost, the others pause and rejoin a world of 4.
    job = ElasticJob(version, "0.05")
    job.add_agents(3)
    job.wait_stepping(10)
    stopped = job.agents[2]
    its_workers = set(descendants(stopped.pid))
    at_stop = max(s for entries in read_steps(job.log).values() for s, _ in entries)
    os.kill(stopped.pid, signal.SIGSTOP)
    try:
        def four_others_moved_on():
            steps = read_steps(job.log)
            moved = {pid for entries in steps.values() for s, pid in entries
                     if s >= at_stop + 10 and pid not in its_workers}
            return len(moved) >= 4
        check(wait_for(four_others_moved_on, 120), "the other nodes did not go on without it")
    finally:
        os.kill(stopped.pid, signal.SIGKILL)  # its workers die with it (parent-death signal)
    check_survivors_kept_their_process(version, job,
                                       job.wait_ok(job.agents[:2], "survivor exits"))


@each_version
def a_hosts_link_cut_leaves_the_other_hosts_workers_in_their_process(version):
    # Three hosts in network namespaces (netns_harness); the bridge port of a
    # host that is not the master goes down: it vanishes without a RST, its
    # agent fences itself, and the others pause and rejoin a world of 4.
    if os.geteuid() != 0:
        raise Skip(f"needs root for network namespaces (running as uid {os.geteuid()})")
    version.require()
    remove_stale_hosts()
    log = os.path.join(tempdir(), "steps.log")
    with Hosts(3) as hosts:
        daemon, port = hosts.start_musterd(MUSTERD)
        script = [EXAMPLE, "--steps", str(STEPS), "--log", log, "--sleep", "0.05"]
        agents = {i: hosts.spawn(
            f"{hosts.prefix}-h{i}",
            [MUSTER, "--nnodes", "2:3", "--nproc-per-node", "2", "--rdzv-backend", "muster",
             "--rdzv-endpoint", f"{DAEMON_ADDR}:{port}", "--rdzv-id", "in-place-link",
             "--local-addr", host_addr(i), "--max-restarts", "3"] + script, f"agent-h{i}",
            # Gloo binds where the hostname resolves (loopback in a namespace) unless told.
            env=env_for(version, GLOO_SOCKET_IFNAME=hosts.interface(i)))
            for i in (1, 2, 3)}

        def logs():
            return "\n".join(f"{p.log_name}:\n{hosts.log(p)}" for p in [daemon, *agents.values()])

        check(wait_for(lambda: steps_logged(log, 6 * 10), 180), "the job of 6 ranks did not step",
              logs())
        master_pid = pids_of(read_steps(log), 0)[0]
        victim = next(i for i, a in agents.items() if master_pid not in descendants(a.pid))
        its_workers = set(descendants(agents[victim].pid))
        at_cut = max(s for entries in read_steps(log).values() for s, _ in entries)
        hosts.link(victim, "down")

        def four_others_moved_on():
            moved = {pid for entries in read_steps(log).values() for s, pid in entries
                     if s >= at_cut + 10 and pid not in its_workers}
            return len(moved) >= 4
        check(wait_for(four_others_moved_on, 120), "the other hosts did not go on", logs())
        survivors = [a for i, a in agents.items() if i != victim]
        check(wait_for(lambda: all(a.poll() is not None for a in survivors), 240),
              "the survivors did not finish", logs())
        check(all(a.returncode == 0 for a in survivors),
              f"survivor exits {[a.returncode for a in survivors]}", logs())
        err = "".join(hosts.log(a) for a in survivors)
        check("event=in_place_recovered" in err, "the survivors did not recover in place", err)
        steps = read_steps(log)
        before = {pid for entries in steps.values() for s, pid in entries if s <= 10}
        after = {pid for entries in steps.values() for s, pid in entries if s == STEPS}
        check(len(after) == 4, f"{len(after)} processes ended the job, not 4")
        check(after <= before, f"processes started after the cut ended the job: {after - before}")
        check_weights(version, log, nproc=3)
        check(daemon.poll() is None, "musterd died", hosts.log(daemon))
    check(not hosts.leftovers(), f"left behind: {hosts.leftovers()}")


@each_version
def a_node_joining_mid_run_takes_its_state_from_a_running_peer(version):
    # The newcomer joins once its warm process has imported torch: up to 9 s on
    # a loaded 2-core machine. The job runs 16 s (80 steps of 0.2 s) from its
    # second step, when the newcomer starts, so it joins mid-run.
    steps = 2 * STEPS
    job = ElasticJob(version, "0.2", steps=steps)
    job.add_agents(2)
    job.wait_stepping(2)  # every first worker has logged
    before_join = {pid for entries in read_steps(job.log).values() for _, pid in entries}
    job.add_agents(1)
    err = job.wait_ok(job.agents, "exits")
    check("joined at step" in err, "no new worker took its state from a peer", err)
    steps_by_rank = read_steps(job.log)
    check_every_step_done(steps_by_rank, 6, steps)
    last = {pid for entries in steps_by_rank.values() for s, pid in entries if s == steps}
    # On failure: which processes each rank ran as, and what the agents and workers said.
    context = (f"pids by rank: { {r: pids_of(steps_by_rank, r) for r in sorted(steps_by_rank)} }"
               f", the first workers: {sorted(before_join)}", err)
    check(len(last) == 6, f"{len(last)} processes ended the job, not 6", *context)
    check(len(before_join & last) == 4, "the first 4 workers did not keep their processes",
          *context)
    check(redone_steps(steps_by_rank) <= 1, f"{redone_steps(steps_by_rank)} steps redone",
          *context)
    check_weights(version, job.log, steps=steps, nproc=3)
    check(job.daemon.poll() is None, "musterd died")


if __name__ == "__main__":
    run_tests()
