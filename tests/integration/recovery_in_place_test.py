"""In-place recovery (--recovery in-place) of muster-train under muster, one
node, loopback, Gloo:

- a worker SIGKILLed (kill-worker faults at two steps, rank 0 once): only
  that rank's process is started again (the pids the workers ever had are
  the four of the start plus one per fault), the survivors go on from the
  step they reached (no step is lost: the job says where it recovered), and
  the final weights equal the fault-free run's byte for byte;
- a recovery that cannot finish in time (--recovery-timeout far below what a
  pause takes) falls back to restarting every worker, logs why, and still
  ends with the fault-free weights;
- a worker that does not speak the control channel (a shell script around
  muster-train that closes it) is restarted as before;
- elastic (two agents on loopback, --nnodes 1:2, c10d rendezvous): a worker
  SIGKILLed under --standalone is started alone; an agent SIGKILLed leaves
  the other node's workers running under the same pids into the smaller
  world; an agent SIGKILLed just as the other node's workers were told to
  join the two-node generation (a second fault during an in-place recovery)
  leaves them under the same pids too, paused again and joined to the
  smaller world; a node joining mid-run finds the running workers rejoining
  with their pids, its own fresh workers taking their state; each ends with
  the fault-free run's weights byte for byte (the trainer's weights do not
  depend on the world size).
"""
import functools
import os
import signal
import subprocess
import threading
import time

from harness import (MUSTER, check, free_port, kill_tree, run, run_tests, start, tempdir, test,
                     wait_for)
from train_harness import MODEL, TRAIN

STEPS = 60
FLAGS = MODEL + ["--backend", "gloo", "--steps", str(STEPS), "--step-sleep-ms", "10"]


@functools.lru_cache(maxsize=None)
def fault_free_weights(steps):
    """The weights of a fault-free run of `steps` steps, run once per step
    count: muster-train's weights do not depend on the world size or the
    step sleep, so one run serves every test of that length."""
    reference = os.path.join(tempdir(), "reference.bin")
    code, out, err = run([MUSTER, "--nproc-per-node", "2", "--no-python", TRAIN] + MODEL
                         + ["--backend", "gloo", "--steps", str(steps), "--out", reference],
                         timeout=240)
    check(code == 0, "the fault-free run failed", out, err)
    with open(reference, "rb") as f:
        return f.read()


def check_fault_free_weights(path, steps):
    with open(path, "rb") as f:
        check(f.read() == fault_free_weights(steps),
              "the weights differ from the fault-free run's")


def children(pid):
    """muster's children that run muster-train: a process forked but not yet
    exec'd (still a copy of muster), or any helper a sanitizer runtime starts,
    is not a worker."""
    found = set()
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{task}/children") as f:
                found.update(int(p) for p in f.read().split())
        except FileNotFoundError:
            pass
    return {child for child in found if _runs_train(child)}


def _runs_train(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().split(b"\0")[0].endswith(b"muster-train")
    except OSError:
        return False


class Watched:
    """A started muster whose worker pids (its children) are sampled every
    2 ms until it ends: `pids` holds every one seen. Its output is read as it
    comes, so a test can wait for a line of its log (wait_for_log)."""

    def __init__(self, args):
        self.proc = start(args)
        self.pids = set()
        self._out = []
        self._err = []
        self._done = threading.Event()
        self._threads = [threading.Thread(target=self._watch),
                         threading.Thread(target=self._read, args=(self.proc.stdout, self._out)),
                         threading.Thread(target=self._read, args=(self.proc.stderr, self._err))]
        for thread in self._threads:
            thread.start()

    def _watch(self):
        while not self._done.is_set():
            try:
                self.pids.update(children(self.proc.pid))
            except (FileNotFoundError, ProcessLookupError):
                pass
            time.sleep(0.002)

    @staticmethod
    def _read(pipe, lines):
        for line in pipe:
            lines.append(line)

    def wait_for_log(self, text, timeout):
        """Waits until a line of its stderr holds `text`; False if none does
        within `timeout` seconds. Polled every 2 ms: the caller acts within
        a few milliseconds of the line."""
        return wait_for(lambda: any(text in line for line in list(self._err)), timeout,
                        interval=0.002)

    def finish(self, timeout=240):
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            kill_tree(self.proc.pid)  # its pipes close, and the readers end
            raise
        finally:
            self._done.set()
            for thread in self._threads:
                thread.join()
        return self.proc.returncode, "".join(self._out), "".join(self._err)


def run_watching_pids(args, timeout=240):
    """Runs muster; returns (code, out, err, every worker pid seen)."""
    watched = Watched(args)
    code, out, err = watched.finish(timeout)
    return code, out, err, watched.pids


@test
def a_killed_worker_is_started_alone_and_the_job_ends_with_the_fault_free_weights():
    work = tempdir()
    result = os.path.join(work, "in-place.bin")
    code, out, err, pids = run_watching_pids(
        [MUSTER, "--nproc-per-node", "4", "--max-restarts", "2", "--recovery", "in-place",
         "--inject", "kill-worker,rank=1,step=20", "--inject", "kill-worker,rank=0,step=41",
         "--no-python", TRAIN] + FLAGS + ["--out", result])
    check(code == 0, f"the job did not recover (exit {code})", out, err)
    check(err.count("event=in_place_recovered") == 2, "not two in-place recoveries", err)
    check(err.count("survivors=3 restarted=1") == 2, "a recovery did not restart one rank alone",
          err)
    check("event=in_place_fallback" not in err, "a recovery fell back", err)
    check(len(pids) == 4 + 2, f"{len(pids)} worker processes ran, not 4 + one per fault", err)
    # No step is lost: each recovery goes on from the step the fault struck
    # at, or the next when the survivors finished it with the victim's part.
    steps = [int(line.split("recovered in place at step ")[1].split()[0])
             for line in out.splitlines() if "recovered in place at step" in line]
    check(len(steps) == 2 and steps[0] in (20, 21) and steps[1] in (41, 42),
          f"the recoveries went on from steps {steps}, not 20 and 41", out)
    check_fault_free_weights(result, STEPS)


@test
def a_recovery_past_its_timeout_falls_back_to_restarting_every_worker():
    work = tempdir()
    result = os.path.join(work, "fallback.bin")
    code, out, err, pids = run_watching_pids(
        [MUSTER, "--nproc-per-node", "4", "--max-restarts", "1", "--recovery", "in-place",
         "--recovery-timeout", "0.0001", "--inject", "kill-worker,rank=2,step=15",
         "--no-python", TRAIN] + FLAGS + ["--out", result])
    check(code == 0, f"the job did not finish after the fallback (exit {code})", out, err)
    check("event=in_place_fallback" in err and "recovery timeout" in err,
          "no fallback event naming the timeout", err)
    # The four of the start and the four of the restart; between them the
    # failed rank started again as the pause began, then stopped with the
    # rest, which the watcher sees only when it lived past a poll (a timeout
    # of 0.1 ms leaves it a few milliseconds).
    check(len(pids) in (8, 9), f"{len(pids)} worker processes ran, not 4 + 4 (+ 1)", err)
    check_fault_free_weights(result, STEPS)


@test
def a_worker_that_does_not_speak_the_channel_is_restarted_as_before():
    work = tempdir()
    wrapper = os.path.join(work, "silent.sh")
    with open(wrapper, "w") as f:
        # No control pipe: the worker never says hello.
        f.write(f"#!/bin/sh\nexec {TRAIN} \"$@\" 4<&-\n")
    os.chmod(wrapper, 0o755)
    code, out, err, pids = run_watching_pids(
        [MUSTER, "--nproc-per-node", "2", "--max-restarts", "1", "--recovery", "in-place",
         "--inject", "kill-worker,rank=1,step=5", "--no-python", wrapper] + FLAGS)
    check(code == 0, f"the job did not finish (exit {code})", out, err)
    check("event=in_place" not in err, "a worker without the channel was paused", err)
    check("restarting workers: attempt=1" in err, "the workers were not restarted", err)
    check(len(pids) == 4, f"{len(pids)} worker processes ran, not both workers twice", err)


@test
def under_standalone_a_killed_worker_is_started_alone():
    work = tempdir()
    result = os.path.join(work, "standalone.bin")
    code, out, err, pids = run_watching_pids(
        [MUSTER, "--standalone", "--nproc-per-node", "4", "--max-restarts", "1", "--recovery",
         "in-place", "--inject", "kill-worker,rank=3,step=12", "--no-python", TRAIN] + FLAGS
        + ["--out", result])
    check(code == 0, f"the job did not recover (exit {code})", out, err)
    check("event=in_place_recovered" in err and "survivors=3 restarted=1" in err,
          "the elastic run did not recover in place", err)
    check(len(pids) == 5, f"{len(pids)} worker processes ran, not 4 + 1", err)
    check_fault_free_weights(result, STEPS)


def two_node_flags(port, run_id, steps=150):
    return ["--nnodes", "1:2", "--nproc-per-node", "2", "--rdzv-backend", "c10d",
            "--rdzv-endpoint", f"127.0.0.1:{port}", "--rdzv-id", run_id, "--max-restarts", "2",
            "--recovery", "in-place", "--no-python", TRAIN] + MODEL + [
            "--backend", "gloo", "--steps", str(steps), "--step-sleep-ms", "20", "--log-every", "10"]


def start_two_nodes(run_id, result):
    """Node 1 (watched, its workers started, writing the weights to result),
    then node 2 joining it; returns (first, second)."""
    port = free_port()
    first = Watched([MUSTER] + two_node_flags(port, run_id) + ["--out", result])
    check(wait_for(lambda: len(first.pids) == 2, 30), "node 1's workers did not start")
    return first, start([MUSTER] + two_node_flags(port, run_id))


def check_node_1_went_on_alone(first, out, err, result):
    """Node 1's two workers, never restarted, finished at world size 2 with
    the fault-free weights."""
    check(len(first.pids) == 2, f"node 1 ran {len(first.pids)} worker processes, not the same 2",
          err)
    check("world size 2)" in out.split("recovered in place", 1)[-1],
          "the survivors did not go on at world size 2", out)
    check_fault_free_weights(result, 150)


@test
def an_agent_killed_leaves_the_other_nodes_workers_running_under_the_same_pids():
    result = os.path.join(tempdir(), "survivor.bin")
    first, second = start_two_nodes("kill-agent", result)
    check(wait_for(lambda: len(children(second.pid)) == 2, 30), "node 2's workers did not start")
    # Into the two-node generation's run: node 1's workers joined it (a fixed
    # sleep could land while they were still joining, on a loaded machine).
    check(first.wait_for_log("event=in_place_recovered", 60),
          "node 1's workers did not join the two-node generation")
    os.kill(second.pid, signal.SIGKILL)
    code, out, err = first.finish()
    check(code == 0, f"node 1 did not finish (exit {code})", out, err)
    check(err.count("event=in_place_recovered") == 2 and "survivors=2 restarted=0" in err,
          "node 1's workers did not rejoin in place", err)
    check("event=in_place_fallback" not in err, "a recovery fell back", err)
    check_node_1_went_on_alone(first, out, err, result)


@test
def an_agent_killed_while_the_other_nodes_workers_join_leaves_them_under_the_same_pids():
    """A second fault during an in-place recovery: node 2 joins (node 1's
    workers pause for it), and its agent is SIGKILLed the moment node 1 tells
    its workers to join the two-node generation. That generation ends before
    they joined it: they are paused again and join the next one, node 1
    alone, without a restart."""
    result = os.path.join(tempdir(), "second-fault.bin")
    first, second = start_two_nodes("kill-joining", result)
    check(first.wait_for_log("event=in_place_join", 60),
          "node 1's workers were not told to join the two-node generation")
    os.kill(second.pid, signal.SIGKILL)
    code, out, err = first.finish()
    check(code == 0, f"node 1 did not finish (exit {code})", out, err)
    check("event=in_place_abandoned" not in err and "event=in_place_fallback" not in err,
          "the recovery under way was given up for a restart", err)
    # One recovery, paused again during its join and joined twice: the
    # two-node generation, then node 1 alone.
    check("during_join=true" in err, "the second fault did not come during the join", err)
    check(err.count("survivors=2 restarted=0") == 2 and err.count("event=in_place_recovered") == 1,
          "node 1's workers did not rejoin in place after the second fault", err)
    check_node_1_went_on_alone(first, out, err, result)


@test
def a_node_joining_mid_run_takes_the_running_workers_state_and_they_keep_their_pids():
    work = tempdir()
    # 300 steps of 20 ms or more: the newcomer is admitted (a last call of
    # 2 s after it joins) long before the end.
    result = os.path.join(work, "joined.bin")
    port = free_port()
    first = Watched([MUSTER] + two_node_flags(port, "join", steps=300) + ["--out", result])
    # Past the first last call: the first node trains alone, then the second comes.
    check(wait_for(lambda: len(first.pids) == 2, 30), "node 1's workers did not start")
    time.sleep(0.5)
    second = start([MUSTER] + two_node_flags(port, "join", steps=300))
    code, out, err = first.finish()
    check(code == 0, f"node 1 did not finish (exit {code})", out, err)
    second_out, second_err = second.communicate(timeout=60)
    check(second.returncode == 0, f"node 2 did not finish (exit {second.returncode})",
          second_out, second_err)
    check("why=\"admitting new nodes\"" in err and "survivors=2 restarted=0" in err,
          "node 1's workers did not rejoin in place for the newcomer", err)
    check(len(first.pids) == 2, f"node 1 ran {len(first.pids)} worker processes, not the same 2",
          err)
    check("world size 4)" in out.split("recovered in place", 1)[-1],
          "the job did not go on at world size 4", out)
    check_fault_free_weights(result, 300)


if __name__ == "__main__":
    run_tests()
