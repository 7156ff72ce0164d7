"""Real torch 1.13 gloo workers rendezvous through the worker store exactly
as they do under torchrun's agent store, then run collectives; a second
attempt after Clear() reuses the same server."""
import os
import signal
import subprocess
import sys

from store_harness import check, run_tests, with_server

WORKER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "store_gloo_worker.py")


def run_workers(port, world, attempt):
    procs = []
    try:
        for rank in range(world):
            env = dict(os.environ, MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port),
                       RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE=str(world),
                       TORCHELASTIC_USE_AGENT_STORE="True",
                       TORCHELASTIC_RESTART_COUNT=str(attempt), OMP_NUM_THREADS="1")
            procs.append(subprocess.Popen([sys.executable, WORKER], env=env,
                                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT))
        outputs = []
        for p in procs:
            out, _ = p.communicate(timeout=120)
            outputs.append(out.decode(errors="replace"))
            check(p.returncode == 0, f"worker exited {p.returncode}:\n{outputs[-1]}")
        return outputs
    finally:
        for p in procs:
            if p.poll() is None:
                os.kill(p.pid, signal.SIGKILL)
                p.wait(10)


def check_results(outputs, world, attempt):
    want_sum = world * (world + 1) // 2
    for rank, out in enumerate(outputs):
        want = f"rank={rank} world={world} sum={want_sum} bcast={42 + attempt} attempt={attempt}"
        check(want in out, f"rank {rank}: wanted {want!r} in:\n{out}")


@with_server
def test_three_gloo_workers_then_a_restart_with_two(server):
    outputs = run_workers(server.port, world=3, attempt=0)
    check_results(outputs, world=3, attempt=0)
    stats = server.stats()
    check(stats["keys"] > 3, f"the workers wrote their rendezvous keys: {stats}")
    check(stats["waits"] == 0, f"no waiter outlives the workers: {stats}")

    check(server.command("seal") == "sealed", "the first attempt ends")
    check(server.command("open 2") == "opened", "the restart's store opens")
    check(server.stats()["keys"] == 0, "a fresh namespace for the restart")
    outputs = run_workers(server.port, world=2, attempt=1)
    check_results(outputs, world=2, attempt=1)
    server.wait_for_stats(connections=0, waits=0)


if __name__ == "__main__":
    run_tests([("three gloo workers then a restart with two",
                test_three_gloo_workers_then_a_restart_with_two)])
