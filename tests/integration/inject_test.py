"""Built-in fault injection (muster --inject, musterd --inject) with real
processes: muster-train workers on loopback, Gloo, a real musterd.

- worker faults: kill-worker and hang-worker fire at the step the target rank
  reports, exit-worker exits with its code, and the restarted job ends with
  the fault-free run's weights (checkpoints) without firing them again;
- corrupt-checkpoint damages the checkpoint written at its step: the resumed
  job skips it with a warning, restarts from the one before, and still ends
  with the fault-free weights;
- the same plan and seed pick the same rank and step in two runs;
- agent faults in an elastic job: drop-heartbeats cuts node 1 off (it fences
  itself, the other node goes on alone, node 1 comes back); kill-agent on
  node 1 kills that agent only;
- crash-daemon kills musterd at its time;
- every injection is logged as event=inject; a malformed spec exits 2.
"""
import os
import re

from harness import (base_env, check, run, run_muster, run_tests, start, tempdir, test,
                     wait_for, MUSTER)
import elastic_harness
from elastic_harness import MUSTERD, start_musterd, wait_exit
import train_harness
from train_harness import TRAIN, max_relative_difference, read_floats

MODEL = train_harness.MODEL + ["--backend", "gloo", "--steps", "24", "--log-every", "4"]
_reference = {}


def train(flags, timeout=120):
    """muster-train under muster --standalone with 2 workers; (code, stdout, stderr)."""
    return run_muster(["--standalone", "--nproc-per-node", "2"] + flags + ["--no-python", TRAIN] +
                      MODEL, timeout=timeout)


def inject(*specs):
    return [x for spec in specs for x in ("--inject", spec)]


def reference_weights():
    """The fault-free run's weights (computed once)."""
    if "weights" not in _reference:
        out = os.path.join(tempdir(), "ref.bin")
        code, _, err = run_muster(["--standalone", "--nproc-per-node", "2", "--no-python", TRAIN] +
                                  MODEL + ["--out", out], timeout=120)
        check(code == 0, f"fault-free run exited {code}", err)
        _reference["weights"] = read_floats(out)
    return _reference["weights"]


def fired_at(line, what, rank):
    """The step at which the logged fault `what` fired on `rank`; -1 if not so logged."""
    m = re.search(re.escape(what) + r' trigger="step=(\d+) \(rank ' + str(rank) + r'\)"', line)
    return int(m.group(1)) if m else -1


def injections(err):
    return [line for line in err.splitlines() if "event=inject " in line]


@test
def worker_faults_fire_at_their_step_and_the_restarted_job_ends_with_the_fault_free_weights():
    d = tempdir()
    out = os.path.join(d, "w.bin")
    code, _, err = run_muster(
        ["--standalone", "--nproc-per-node", "2", "--max-restarts", "3", "--hang-timeout", "1.5"] +
        inject("kill-worker,rank=1,step=6", "hang-worker,rank=0,step=11",
               "exit-worker:7,rank=1,step=17") +
        ["--no-python", TRAIN] + MODEL +
        ["--checkpoint-dir", os.path.join(d, "ckpt"), "--checkpoint-every", "4", "--out", out],
        timeout=120)
    check(code == 0, f"muster exited {code}", err)
    lines = injections(err)
    check(len(lines) == 3, f"expected 3 injections, got {len(lines)}", err)
    # A report is read when the agent gets to it: fast steps arrive
    # together, so a fault may fire a step or two after the one it names.
    check(fired_at(lines[0], 'fault="kill-worker,rank=1,step=6" target=rank1', 1) >= 6,
          "kill-worker not logged as expected", lines[0])
    check(fired_at(lines[1], 'fault="hang-worker,rank=0,step=11" target=rank0', 0) >= 11,
          "hang-worker not logged as expected", lines[1])
    check('fault="exit-worker:7,rank=1,step=17" target=rank1 by=worker' in lines[2],
          "exit-worker not logged", lines[2])
    check("signal 9 (SIGKILL)" in err and "hung       : no progress for" in err
          and "exit code 7" in err, "the three failures are not all reported", err)
    diff = max_relative_difference(read_floats(out), reference_weights())
    check(diff <= 1e-5, f"weights differ from the fault-free run by {diff:.3g}")


@test
def a_corrupted_checkpoint_is_skipped_and_the_job_resumes_from_the_one_before():
    d = tempdir()
    ckpt = os.path.join(d, "ckpt")
    out = os.path.join(d, "w.bin")
    code, stdout, err = run_muster(
        ["--standalone", "--nproc-per-node", "2", "--max-restarts", "1", "--recovery", "restart"] +
        inject("corrupt-checkpoint,step=12", "exit-worker:3,rank=0,step=14") +
        ["--no-python", TRAIN] + MODEL +
        ["--checkpoint-dir", ckpt, "--checkpoint-every", "4", "--out", out], timeout=120)
    check(code == 0, f"muster exited {code}", err)
    check(len(injections(err)) == 2, "expected 2 injections", err)
    check("resumed from step 8 of 24" in stdout + err, "did not resume from step 8", stdout, err)
    check(re.search(r"checkpoint skipped file=\S*ckpt-0+12\.mck reason=checksum mismatch",
                    stdout) is not None, "the damaged checkpoint was not reported", stdout)
    diff = max_relative_difference(read_floats(out), reference_weights())
    check(diff <= 1e-5, f"weights differ from the fault-free run by {diff:.3g}")


@test
def the_same_seed_picks_the_same_rank_and_step():
    picks = []
    for seed in ("17", "17"):
        code, _, err = train(["--inject-seed", seed] +
                             inject("kill-worker:SIGTERM,rank=any,step=3..20"))
        check(code == 143, f"muster exited {code}, expected 143 (SIGTERM)", err)
        lines = injections(err)
        check(len(lines) == 1, "expected one injection", err)
        # The drawn step is in the plan's log; the step seen when it fired can
        # be later, since fast steps' reports arrive together.
        drawn = re.search(r"event=inject_spec index=0 .* step=\d+", err)
        check(drawn is not None, "the plan's drawn step is not logged", err)
        picks.append(drawn.group(0) + " " + re.search(r"target=\S+", lines[0]).group(0))
    check(picks[0] == picks[1], f"two runs with seed 17 differ: {picks}")


@test
def malformed_specs_exit_2_naming_the_spec():
    code, _, err = run_muster(["--inject", "kill-worker,rank=0", "--no-python", "true"])
    check(code == 2, f"exit {code}", err)
    check("--inject: 'kill-worker,rank=0': kill-worker needs one trigger" in err, "message", err)
    code, out, err = run([MUSTERD, "--port", "0", "--inject", "hang-worker,rank=0,step=1"])
    check(code == 2 and "hang-worker is carried out by muster, not musterd" in out + err,
          f"musterd exit {code}", out, err)


# Short timeouts, the same for the daemon and the agents: an agent fences
# itself (fence_timeout) before the daemon calls it dead (heartbeat_timeout).
TIMEOUTS = "keep_alive_interval=0.2,heartbeat_timeout=0.8,fence_timeout=0.6"


def elastic_agent(port, out_dir, faults):
    args = elastic_harness.agent_args(
        f"127.0.0.1:{port}", "127.0.0.1", out_dir, nnodes="1:2", nproc=1, run_id="inject",
        conf=TIMEOUTS,
        worker_args=["--run", "60"],
        extra=["--max-restarts", "20"] + inject(*faults))
    return start(args, env=base_env())


def world_sizes(out_dir):
    """WORLD_SIZE of every complete generation recorded, in order."""
    sizes = []
    for _, ranks in sorted(elastic_harness.dumps(out_dir).items()):
        world = int(next(iter(ranks.values()))["env"]["WORLD_SIZE"])
        if len(ranks) == world:
            sizes.append(world)
    return sizes


def went_through(sizes, pattern):
    """Whether `pattern` occurs in `sizes` as a subsequence."""
    it = iter(sizes)
    return all(any(s == p for s in it) for p in pattern)


@test
def drop_heartbeats_cuts_a_node_off_until_it_fences_then_it_comes_back():
    daemon, port = start_musterd(extra=["--rdzv-conf", TIMEOUTS])
    d = tempdir()
    a = elastic_agent(port, d, [])
    elastic_harness.wait_generation(d, 1, timeout=20)
    b = elastic_agent(port, d, ["drop-heartbeats:3s,after=5s"])
    # Both nodes, then node a alone while b is cut off, then both again.
    check(wait_for(lambda: went_through(world_sizes(d), [2, 1, 2]), 40),
          f"world sizes went {world_sizes(d)}, not through 2, 1, 2")
    for proc in (a, b, daemon):
        proc.kill()
    _, b_err = b.communicate(timeout=10)
    check('event=inject index=0 fault="drop-heartbeats:3s,after=5s" target=agent' in b_err,
          "no injection logged", b_err)
    check("event=fence" in b_err, "node b did not fence itself", b_err)
    elastic_harness.check_generations(d)


@test
def kill_agent_kills_the_named_node_only():
    daemon, port = start_musterd(extra=["--rdzv-conf", TIMEOUTS])
    d = tempdir()
    a = elastic_agent(port, d, ["kill-agent,node=1,after=3s"])
    b = elastic_agent(port, d, ["kill-agent,node=1,after=3s"])
    both = elastic_harness.wait_generation(d, 2, timeout=20)
    check(wait_for(lambda: a.poll() is not None or b.poll() is not None, 15),
          "no agent was killed")
    killed, survivor = (a, b) if a.poll() is not None else (b, a)
    check(killed.returncode == -9, f"the killed agent exited {killed.returncode}")
    elastic_harness.wait_generation(d, 1, timeout=20, after=both)
    check(survivor.poll() is None, "the other agent stopped too")
    _, err = killed.communicate(timeout=10)
    check('event=inject index=0 fault="kill-agent,node=1,after=3s" target=agent' in err,
          "kill-agent not logged", err)
    for proc in (survivor, daemon):
        proc.kill()
    elastic_harness.check_generations(d)


@test
def crash_daemon_kills_musterd_at_its_time():
    daemon, _ = start_musterd(extra=["--inject", "crash-daemon,after=0.5s"])
    check(wait_exit(daemon, 10) == -9, f"musterd exited {daemon.poll()}, expected SIGKILL")
    err = daemon.stderr.read()
    check("event=inject fault=crash-daemon" in err, "crash not logged", err)


if __name__ == "__main__":
    run_tests()
