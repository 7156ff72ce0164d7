"""Integration tests of the worker runtime's communicators.

Each test starts a store server (tests/store_server_main) and N
runtime_comm_worker processes with torchrun's variables, as muster's agent
would, and checks their exit codes and output. The worker checks every
collective's values itself (see runtime_comm_worker.cc).
"""
import os
import subprocess
import sys
import time

from harness import Skip, base_env, check, kill_tree, run_tests, start, test

TEST_BIN_DIR = os.environ.get("MUSTER_TEST_BIN_DIR")
if not TEST_BIN_DIR:
    sys.exit("MUSTER_TEST_BIN_DIR is not set (run through ctest)")
STORE_SERVER = os.path.join(TEST_BIN_DIR, "store_server_main")
WORKER = os.path.join(TEST_BIN_DIR, "runtime_comm_worker")
EXIT_COMM_FAILURE = 75  # kExitCommFailure in worker_runtime/comm/communicator.h

from store_harness import LineReader  # noqa: E402 - needs MUSTER_TEST_BIN_DIR checked first


def start_store():
    """Starts a store server; returns its port. Its stdin stays open (EOF stops it)."""
    proc = start([STORE_SERVER], stdin=subprocess.PIPE)
    line = LineReader(proc.stdout).readline(10)
    check(line.startswith("port="), f"expected port=N from the store, got {line!r}")
    return int(line[len("port="):])


def start_ranks(world, args, port, extra_env=None):
    procs = []
    for rank in range(world):
        env = base_env(RANK=rank, WORLD_SIZE=world, LOCAL_RANK=rank, LOCAL_WORLD_SIZE=world,
                       MASTER_ADDR="127.0.0.1", MASTER_PORT=port,
                       **((extra_env or {}).get(rank, {})))
        procs.append(start([WORKER] + [str(a) for a in args], env=env))
    return procs


def finish(procs, timeout):
    """Waits for every rank; returns [(exit code, stdout, stderr)]; fails on a hang."""
    results = []
    deadline = time.monotonic() + timeout
    for rank, proc in enumerate(procs):
        try:
            out, err = proc.communicate(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            raise AssertionError(f"rank {rank} still running after {timeout}s (hang)")
        results.append((proc.returncode, out, err))
    return results


def run_values(world, backend="gloo", extra_env=None, timeout_ms=30000, expect_log=None):
    port = start_store()
    procs = start_ranks(world, [backend, "values", timeout_ms], port, extra_env)
    for rank, (code, out, err) in enumerate(finish(procs, 120)):
        check(code == 0 and f"ok rank={rank}" in out,
              f"rank {rank} of {world} exited {code}", out, err)
        if expect_log:
            check(expect_log in out + err, f"rank {rank} did not log {expect_log!r}", out, err)


# What the communicator logs when its ranks, all on this host, share memory.
SHARED_MEMORY_LOG = "(shared memory: one host)"


@test
def every_collective_is_right_with_2_ranks():
    run_values(2, expect_log=SHARED_MEMORY_LOG)


@test
def every_collective_is_right_with_4_ranks():
    run_values(4, expect_log=SHARED_MEMORY_LOG)


@test
def every_collective_is_right_with_3_ranks_a_world_that_is_no_power_of_two():
    run_values(3, expect_log=SHARED_MEMORY_LOG)


def forced(algorithm, world):
    return {rank: {"MUSTER_GLOO_ALLREDUCE": algorithm} for rank in range(world)}


@test
def every_forced_allreduce_algorithm_gives_the_same_values_at_4_ranks():
    for algorithm in ("ring", "bcube", "shm"):
        run_values(4, extra_env=forced(algorithm, 4))
    run_values(3, extra_env=forced("ring", 3))


@test
def a_single_rank_runs_every_collective_alone():
    run_values(1)


def lose_a_peer(world, scenario, timeout_ms, algorithm="auto"):
    port = start_store()
    victim = world - 1
    procs = start_ranks(world, ["gloo", scenario, timeout_ms, victim], port,
                        forced(algorithm, world))
    started = time.monotonic()
    survivors = procs[:victim]
    results = finish(survivors, 10)
    elapsed = time.monotonic() - started
    for rank, (code, out, err) in enumerate(results):
        check(code == EXIT_COMM_FAILURE,
              f"survivor {rank} exited {code}, want {EXIT_COMM_FAILURE}", out, err)
        check("comm_error kind=" in err, f"survivor {rank} did not report a CommError", err)
    check(elapsed < 10, f"survivors took {elapsed:.1f}s")
    return [err for _, _, err in results], elapsed


@test
def survivors_of_a_killed_peer_fail_fast_with_the_comm_failure_exit_code():
    # auto: shared memory on this host; ring: Gloo's TCP path.
    for algorithm in ("auto", "ring"):
        for world in (2, 4):
            errors, elapsed = lose_a_peer(world, "die", 3000, algorithm)
            check(any("kind=peer_failed" in err for err in errors),
                  f"{algorithm}: no survivor reported the peer failure", *errors)
            check(elapsed < 3, f"{algorithm}: a killed peer was noticed only after "
                  f"{elapsed:.1f}s", *errors)


@test
def survivors_of_a_stalled_peer_time_out_within_the_deadline():
    for algorithm in ("auto", "ring"):
        errors, elapsed = lose_a_peer(2, "stall", 3000, algorithm)
        check(any("kind=timeout" in err for err in errors),
              f"{algorithm}: no survivor reported a timeout", *errors)
        check(elapsed >= 2.5, f"{algorithm}: the timeout fired after {elapsed:.1f}s, before the "
              "3 s deadline", *errors)


def reform(world, backend, extra_env=None):
    """Runs the reform scenario (runtime_comm_worker.cc) with the last rank as
    the silent victim; returns {new rank: {"interrupt_ms", "shrink_ms", "create_ms",
    and "refused": the reason when shrink_ms is "refused"}}."""
    port = start_store()
    victim = world - 1
    procs = start_ranks(world, [backend, "reform", 30000, victim], port, extra_env)
    try:
        results = finish(procs[:victim], 120)
    finally:
        kill_tree(procs[victim].pid)
        procs[victim].communicate()
    times = {}
    for rank, (code, out, err) in enumerate(results):
        check(code == 0 and f"reform rank={rank} " in out, f"survivor {rank} exited {code}",
              out, err)
        fields = out.split("reform ", 1)[1].split()
        times[rank] = dict(f.split("=") for f in fields[1:])
        if "shrink refused by " in err:
            times[rank]["refused"] = err.split("shrink refused by ", 1)[1].splitlines()[0]
    return times


@test
def survivors_interrupted_in_place_form_a_world_without_the_silent_peer():
    # Gloo cannot shrink: the survivors make a new communicator, and every
    # collective is right on it.
    for world in (2, 3):
        times = reform(world, "gloo")
        for rank, t in times.items():
            check(t["shrink_ms"] == "none", f"gloo rank {rank} shrank: {t}")
            check(float(t["interrupt_ms"]) < 1000,
                  f"rank {rank}: the interrupt took {t['interrupt_ms']} ms to end the allreduce")


def visible_gpus():
    out = subprocess.run([WORKER, "nccl", "gpus"], capture_output=True, text=True,
                         timeout=60).stdout
    return int(out.strip().split("=")[1])


@test
def nccl_collectives_are_right_on_one_gpu():
    if visible_gpus() == 0:
        raise Skip("no GPU visible (or this build has no NCCL)")
    run_values(1, backend="nccl")
    # Ranks sharing one GPU pass NCCL's duplicate-GPU check only as distinct hosts.
    env = {rank: {"NCCL_HOSTID": f"muster-test-{rank}", "NCCL_NET": "Socket"} for rank in range(2)}
    run_values(2, backend="nccl", extra_env=env)


@test
def nccl_survivors_shrink_and_re_create_on_one_gpu():
    gpus = visible_gpus()
    if gpus == 0:
        raise Skip("no GPU visible (or this build has no NCCL)")
    # Ranks beyond the GPUs share them, as distinct hosts over sockets. The
    # 2 -> 1 shrink must work; whether NCCL shrinks 3 ranks sharing one GPU
    # is NCCL's: a refusal must still be clean (every survivor refuses and
    # re-creates), and is a skip only where ranks share GPUs.
    skip = None
    for world in (2, 3):
        env = {rank: {"NCCL_HOSTID": f"muster-test-{rank}", "NCCL_NET": "Socket"}
               for rank in range(world)}
        times = reform(world, "nccl", env)
        for rank, t in times.items():
            print(f"  nccl {world} -> {world - 1}, rank {rank}: interrupt {t['interrupt_ms']} ms, "
                  f"shrink {t['shrink_ms']} ms, new communicator {t['create_ms']} ms")
            check(t["shrink_ms"] != "none", f"rank {rank} did not shrink (NCCL < 2.27?): {t}")
        refused = {t["shrink_ms"] == "refused" for t in times.values()}
        check(len(refused) == 1, f"{world} ranks: some survivors used a child, others not: {times}")
        if refused == {True}:
            reason = times[0].get("refused", "?")
            check(world > 2 and world > gpus,
                  f"the {world} -> {world - 1} shrink on {gpus} GPU(s) was refused: {reason}")
            skip = (f"NCCL refused the {world} -> {world - 1} shrink of ranks sharing "
                    f"{gpus} GPU(s) ({reason}); refused cleanly, re-created")
    if skip:
        raise Skip(skip)


@test
def asking_for_nccl_without_a_gpu_is_a_clear_error():
    if visible_gpus() > 0:
        raise Skip("a GPU is visible")
    port = start_store()
    [(code, out, err)] = finish(start_ranks(1, ["nccl", "values", 5000], port), 30)
    check(code == 1 and "--backend nccl" in err, f"exited {code}", out, err)
    [(code, out, err)] = finish(start_ranks(1, ["auto", "values", 5000], port), 60)
    check(code == 0 and "backend=gloo" in out, f"auto without a GPU exited {code}", out, err)


if __name__ == "__main__":
    run_tests()
