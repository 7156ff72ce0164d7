"""Real PyTorch (Debian's python3-torch) under muster, with no change to the script."""
import json
import os

from harness import (MUSTER, TORCH_SCRIPTS, check, free_port, run_muster, run_tests, start, test)

DDP = os.path.join(TORCH_SCRIPTS, "ddp_gloo.py")


def ddp_result(stdout):
    for line in stdout.splitlines():
        if "DDP_RESULT " in line:
            return json.loads(line.split("DDP_RESULT ", 1)[1])
    return None


@test
def ddp_gloo_runs_unchanged_under_standalone_with_three_workers():
    code, out, err = run_muster(["--standalone", "--nproc-per-node", "3", DDP], timeout=180)
    check(code == 0, f"exit {code}", out, err)
    result = ddp_result(out)
    check(result is not None, "no DDP_RESULT line", out, err)
    check(result["world_size"] == 3 and result["shards_disjoint"] and result["weights_equal"], str(result))


@test
def ddp_gloo_runs_under_static_two_nodes():
    port = free_port()
    common = ["--nnodes", "2", "--nproc-per-node", "2", "--master-addr", "127.0.0.1",
              "--master-port", str(port), DDP, "--epochs", "1"]
    node0 = start([MUSTER, "--node-rank", "0"] + common)
    node1 = start([MUSTER, "--node-rank", "1"] + common)
    out0, err0 = node0.communicate(timeout=180)
    out1, err1 = node1.communicate(timeout=180)
    check(node0.returncode == 0 and node1.returncode == 0,
          f"exits {node0.returncode} {node1.returncode}", out0, err0, out1, err1)
    result = ddp_result(out0)
    check(result is not None and result["world_size"] == 4, f"result {result}", out0)
    check(result["weights_equal"] and result["shards_disjoint"], str(result))


@test
def restarted_ddp_job_uses_a_fresh_store_namespace():
    # Attempt 0 fails after init (keys are in the store), attempt 1 must still rendezvous.
    code, out, err = run_muster(["--standalone", "--nproc-per-node", "2", "--max-restarts", "1",
                                 os.path.join(TORCH_SCRIPTS, "fail_first_attempt.py")], timeout=180)
    check(code == 0, f"exit {code}", out, err)
    result = ddp_result(out)
    check(result is not None and result["restart_count"] == 1, f"result {result}", out, err)


if __name__ == "__main__":
    run_tests()
