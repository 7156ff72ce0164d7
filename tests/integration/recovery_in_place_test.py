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
  muster-train that closes it) is restarted as before.
"""
import os
import threading
import time

from harness import MUSTER, check, run, run_tests, start, tempdir, test
from train_harness import MODEL, TRAIN

FLAGS = MODEL + ["--backend", "gloo", "--steps", "60", "--step-sleep-ms", "10"]


def fault_free(work):
    reference = os.path.join(work, "reference.bin")
    code, out, err = run([MUSTER, "--nproc-per-node", "4", "--no-python", TRAIN] + FLAGS
                         + ["--out", reference], timeout=240)
    check(code == 0, "the fault-free run failed", out, err)
    with open(reference, "rb") as f:
        return f.read()


def children(pid):
    found = set()
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{task}/children") as f:
                found.update(int(p) for p in f.read().split())
        except FileNotFoundError:
            pass
    return found


def run_watching_pids(args, timeout=240):
    """Runs muster; returns (code, out, err, every worker pid seen)."""
    proc = start(args)
    seen = set()
    done = threading.Event()

    def watch():
        while not done.is_set():
            try:
                seen.update(children(proc.pid))
            except (FileNotFoundError, ProcessLookupError):
                pass
            time.sleep(0.002)

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        out, err = proc.communicate(timeout=timeout)
    finally:
        done.set()
        watcher.join()
    return proc.returncode, out, err, seen


@test
def a_killed_worker_is_started_alone_and_the_job_ends_with_the_fault_free_weights():
    work = tempdir()
    reference = fault_free(work)
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
    with open(result, "rb") as f:
        check(f.read() == reference, "the weights differ from the fault-free run's")


@test
def a_recovery_past_its_timeout_falls_back_to_restarting_every_worker():
    work = tempdir()
    reference = fault_free(work)
    result = os.path.join(work, "fallback.bin")
    code, out, err, pids = run_watching_pids(
        [MUSTER, "--nproc-per-node", "4", "--max-restarts", "1", "--recovery", "in-place",
         "--recovery-timeout", "0.0001", "--inject", "kill-worker,rank=2,step=15",
         "--no-python", TRAIN] + FLAGS + ["--out", result])
    check(code == 0, f"the job did not finish after the fallback (exit {code})", out, err)
    check("event=in_place_fallback" in err and "recovery timeout" in err,
          "no fallback event naming the timeout", err)
    check(len(pids) == 8, f"{len(pids)} worker processes ran, not every worker twice", err)
    with open(result, "rb") as f:
        check(f.read() == reference, "the weights differ from the fault-free run's")


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


if __name__ == "__main__":
    run_tests()
