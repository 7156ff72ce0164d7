"""In-place recovery of a real FSDP2 script (examples/torch/fsdp_in_place.py,
muster.ShardedInPlace) under muster, gloo on the CPU, on torch 2.6 and 2.14
(torch 1.13 has no fully_shard). Debian's torch runs unwrapped
(MUSTER_CHROOT_UNWRAPPED=1: no tests/torch/no_libuv.py): the package needs
no change to torch.

- HSDP 2x2: a worker SIGKILLed is replaced alone; the 3 survivors keep
  their processes, at most one step is redone, the replacement takes its
  shards from the rank holding them in the other replica group, and the
  final full weights are the fault-free run's (within 1e-5);
- FSDP 1x4 (no replicas) with the peer copy: the same, the lost shard
  coming from the ring neighbour's host copy;
- HSDP across 2 elastic agents x 2 workers (--nnodes 1:2): an agent
  SIGKILLed leaves the other agent's workers in their processes, stepping
  on as FSDP over the 2 ranks left, with the fault-free weights;
- the DDP example (muster.InPlace) with a killed worker, unwrapped too.
"""
import os
import signal

from elastic_harness import start_musterd
from harness import MUSTER, SOURCE_DIR, Skip, check, run, run_tests, start, tempdir, wait_for
from step_log import (check_every_step_done, pids_of, read_steps, read_weights, redone_steps,
                      steps_logged, wait_done)
from torch_versions import each_version

EXAMPLE = os.path.join(SOURCE_DIR, "examples", "torch", "fsdp_in_place.py")
DDP_EXAMPLE = os.path.join(SOURCE_DIR, "examples", "torch", "ddp_in_place.py")
PACKAGE = os.path.join(SOURCE_DIR, "python")
STEPS = 24
TOLERANCE = 1e-5


def env_for(version):
    return version.env(PYTHONPATH=PACKAGE, MUSTER_CHROOT_UNWRAPPED=1)


def needs_fsdp2(version):
    version.require()
    if not version.at_least_2_6:
        raise Skip(f"torch {version.name} has no FSDP2 (fully_shard)")


_references = {}


def fault_free_weights(version, mesh_args):
    key = (version.name, tuple(mesh_args))
    if key not in _references:
        log = os.path.join(tempdir(), "reference.log")
        code, out, err = run([MUSTER, "--nproc-per-node", "4", EXAMPLE, "--steps", str(STEPS),
                              "--log", log, *mesh_args], env=env_for(version), timeout=240)
        check(code == 0, "the fault-free run failed", out, err)
        _references[key] = read_weights(log + ".weights")
    return _references[key]


def check_weights(version, log, mesh_args):
    reference = fault_free_weights(version, mesh_args)
    got = read_weights(log + ".weights")
    check(len(got) == len(reference), f"{len(got)} weights, the fault-free run has {len(reference)}")
    worst = max(abs(a - b) for a, b in zip(got, reference))
    check(worst <= TOLERANCE, f"the weights differ from the fault-free run's by {worst:.3g}")
    return worst


def killed_worker_run(version, mesh_args, rank=1, step=9):
    log = os.path.join(tempdir(), "steps.log")
    code, out, err = run([MUSTER, "--nproc-per-node", "4", "--max-restarts", "3", "--inject",
                          f"kill-worker,rank={rank},step={step}", EXAMPLE, "--steps", str(STEPS),
                          "--log", log, "--sleep", "0.05", *mesh_args],
                         env=env_for(version), timeout=240)
    check(code == 0, f"the job did not recover (exit {code})", out, err)
    check("event=in_place_fallback" not in err and "event=in_place_impossible" not in err,
          "the recovery fell back", err)
    check(err.count("event=in_place_recovered") == 1, "not one in-place recovery", err)
    steps = read_steps(log)
    check_every_step_done(steps, 4, STEPS)
    for survivor in (r for r in range(4) if r != rank):
        check(len(pids_of(steps, survivor)) == 1,
              f"survivor rank {survivor} ran as {pids_of(steps, survivor)}", err)
    check(len(pids_of(steps, rank)) == 2, f"rank {rank} ran as {pids_of(steps, rank)}", err)
    check(redone_steps(steps) <= 1, f"{redone_steps(steps)} steps redone", err)
    return log, err


@each_version
def hsdp_a_killed_worker_takes_its_shards_from_the_other_replica_group(version):
    needs_fsdp2(version)
    log, err = killed_worker_run(version, ["--mesh", "2,2"])
    # rank 1 holds shard 1, as rank 3 does in the other replica group
    check("rank 1: joined at step" in err and "with rank 3's state" in err,
          "the new rank 1 did not take shard 1 from rank 3", err)
    worst = check_weights(version, log, ["--mesh", "2,2"])
    print(f"  weights within {worst:.2g} of the fault-free run", flush=True)


@each_version
def fsdp_without_replicas_recovers_the_lost_shard_from_the_peer_copy(version):
    needs_fsdp2(version)
    log, err = killed_worker_run(version, [])
    # rank 2 holds rank 1's copy (the ring sends rank r's shard to rank r+1)
    check("rank 1: joined at step" in err and "with rank 2's state" in err,
          "the new rank 1 did not take its shard from rank 2's copy", err)
    check("event=peer_copy_off" not in err, "the peer copy was off", err)
    worst = check_weights(version, log, [])
    print(f"  weights within {worst:.2g} of the fault-free run", flush=True)


def elastic_agent(port, script):
    return [MUSTER, "--nnodes", "1:2", "--nproc-per-node", "2", "--rdzv-backend", "c10d",
            "--rdzv-endpoint", f"127.0.0.1:{port}", "--rdzv-id", "sharded",
            "--rdzv-conf", "last_call_timeout=0.5", "--local-addr", "127.0.0.1",
            "--max-restarts", "3"] + script


@each_version
def hsdp_across_agents_an_agent_killed_leaves_the_other_agents_workers_in_place(version):
    needs_fsdp2(version)
    log = os.path.join(tempdir(), "steps.log")
    daemon, port = start_musterd()
    script = [EXAMPLE, "--steps", str(STEPS), "--log", log, "--sleep", "0.1", "--mesh", "2,2"]
    agents = [start(elastic_agent(port, script), env=env_for(version)) for _ in range(2)]
    check(wait_for(lambda: steps_logged(log, 4 * 6), 180), "the job of 4 ranks did not step")
    os.kill(agents[1].pid, signal.SIGKILL)
    code, out, err = wait_done(agents[:1], 240)[0]
    check(code == 0, f"the surviving agent exited {code}", out, err)
    check("event=in_place_recovered" in err, "the survivors did not recover in place", err)
    steps = read_steps(log)
    before = {pid for entries in steps.values() for s, pid in entries if s <= 6}
    after = {pid for entries in steps.values() for s, pid in entries if s == STEPS}
    check(len(after) == 2, f"{len(after)} processes ended the job, not 2", err)
    check(after <= before, f"processes started after the loss ended the job: {after - before}",
          err)
    check_weights(version, log, ["--mesh", "2,2"])
    check(daemon.poll() is None, "musterd died")


@each_version
def the_ddp_example_recovers_in_place_on_debians_torch_without_a_wrapper(version):
    needs_fsdp2(version)
    log = os.path.join(tempdir(), "steps.log")
    code, out, err = run([MUSTER, "--nproc-per-node", "2", "--max-restarts", "3", "--inject",
                          "kill-worker,rank=1,step=6", DDP_EXAMPLE, "--steps", "12", "--log", log,
                          "--sleep", "0.02"], env=env_for(version), timeout=240)
    check(code == 0, f"the job did not recover (exit {code})", out, err)
    check("use_libuv" not in err, "a store client asked for libuv", err)
    check("event=in_place_recovered" in err, "no in-place recovery", err)
    check(len(pids_of(read_steps(log), 0)) == 1, "rank 0 did not keep its process", err)


if __name__ == "__main__":
    run_tests()
