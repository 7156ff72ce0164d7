"""muster-train end to end, launched by muster on loopback with Gloo:

- gradient averaging: the Linear(1->1) check gives exactly 14.0 on 2 ranks and
  the general formula on 3 and 4;
- any world size: 1 to 7 workers at a global batch (64) and a dataset (1000)
  that are multiples of neither end with the same weights within 1e-6
  relative (the batch split unevenly, steps crossing epoch ends), and
  reducing after the backward pass (--no-overlap) gives the overlapped run's
  weights; a global batch smaller than the world leaves ranks without samples
  and still matches one rank; the default flags train at 3 ranks;
- resume: a worker SIGKILLed mid-run under --max-restarts 1; the job finishes
  from the newest checkpoint with the fault-free run's weights; a checkpoint
  written by 4 ranks resumes on 3 with the fault-free weights; a finished run
  started again reports the loss it ended with;
- bad flags (--backend nccl included, where this build has no NCCL or no GPU
  is visible) and a torn checkpoint are refused or skipped with a message.

The GPU path (--backend nccl) is runtime_train_gpu_test.py's; an elastic job
shrinking under musterd is runtime_train_elastic_test.py's.
"""
import glob
import os
import signal

from harness import (BIN_DIR, base_env, check, free_port, run, run_muster, run_tests, start, tempdir,
                     test, wait_for, MUSTER)
import train_harness
from train_harness import TRAIN, final_loss, max_relative_difference, read_floats
from testlib import procs  # on the path through harness

TEST_BIN_DIR = os.environ.get("MUSTER_TEST_BIN_DIR", os.path.join(BIN_DIR, "..", "tests"))
GRAD_AVG = os.path.join(TEST_BIN_DIR, "runtime_grad_avg_main")

MODEL = train_harness.MODEL + ["--backend", "gloo"]


# Neither the global batch (64) nor the dataset is a multiple of 3, 5, 6 or
# 7, and 40 steps of 64 samples cross two epoch ends, inside a step.
ANY_WORLD = train_harness.model(dataset_size=1000) + ["--backend", "gloo"]


def train(nproc, extra, timeout=240, model=MODEL):
    code, out, err = run_muster(["--standalone", "--nproc-per-node", str(nproc), "--no-python", TRAIN] + model
                                + extra, timeout=timeout)
    return code, out, err



@test
def gradient_averaging_gives_fourteen_on_two_ranks_and_the_formula_on_more():
    for world in (2, 3, 4):
        code, out, err = run_muster(["--standalone", "--nproc-per-node", str(world), "--no-python", GRAD_AVG],
                                    timeout=60)
        check(code == 0, f"grad avg with {world} ranks exited {code}", out, err)
        expected = 2.0 / world * sum(4 * r * r + (2 * r + 1) ** 2 for r in range(world))
        grads = [float(line.split("grad=")[1]) for line in out.splitlines() if "grad=" in line]
        check(len(grads) == world, f"expected {world} gradients", out)
        for g in grads:
            check(abs(g - expected) <= 1e-6 * expected, f"gradient {g} != {expected}", out)
        if world == 2:
            check(all(g == 14.0 for g in grads), f"two ranks must give exactly 14.0: {grads}")


@test
def one_to_seven_workers_end_with_the_same_weights():
    work = tempdir()
    weights = {}
    for nproc in range(1, 8):
        path = os.path.join(work, f"w{nproc}.bin")
        code, out, err = train(nproc, ["--steps", "40", "--out", path], model=ANY_WORLD)
        check(code == 0, f"{nproc} workers exited {code}", out, err)
        check(final_loss(out) < 2.3, "the loss did not go down", out)
        check(f"world size {nproc}, global batch 64: " in out, "no line shows the split", out)
        weights[nproc] = read_floats(path)
    diffs = {nproc: max_relative_difference(weights[1], weights[nproc]) for nproc in range(2, 8)}
    print("largest relative difference from 1 worker: "
          + ", ".join(f"{nproc} workers {diff:.2e}" for nproc, diff in diffs.items()))
    for nproc, diff in diffs.items():
        check(diff <= 1e-6, f"{nproc} workers differ from 1 by {diff:.2e} relative")
    # The buckets are the same sums in the same order, only sent later.
    no_overlap = os.path.join(work, "w3-no-overlap.bin")
    code, out, err = train(3, ["--steps", "40", "--out", no_overlap, "--no-overlap"], model=ANY_WORLD)
    check(code == 0, f"3 workers with --no-overlap exited {code}", out, err)
    check(read_floats(no_overlap) == weights[3],
          "--no-overlap weights differ from the overlapped run's")
    # The check can fail: a different seed gives different weights.
    other = os.path.join(work, "other.bin")
    code, out, err = train(3, ["--steps", "40", "--out", other, "--seed", "2"], model=ANY_WORLD)
    check(code == 0, "seed 2 run failed", out, err)
    check(max_relative_difference(weights[1], read_floats(other)) > 1e-3,
          "a different seed gave the same weights: the comparison is blind")


@test
def a_global_batch_smaller_than_the_world_leaves_ranks_idle_and_matches_one_rank():
    work = tempdir()
    model = train_harness.model(global_batch=2) + ["--backend", "gloo"]
    weights = {}
    for nproc in (1, 3):
        path = os.path.join(work, f"w{nproc}.bin")
        code, out, err = train(nproc, ["--steps", "20", "--out", path], model=model)
        check(code == 0, f"{nproc} workers at global batch 2 exited {code}", out, err)
        weights[nproc] = read_floats(path)
    check("world size 3, global batch 2: 1 sample on ranks 0-1, 0 on rank 2" in out,
          "rank 0 does not say rank 2 reads nothing", out)
    diff = max_relative_difference(weights[1], weights[3])
    check(diff <= 1e-6, f"3 workers at global batch 2 differ from 1 by {diff:.2e} relative")


@test
def the_default_flags_train_at_three_ranks():
    # The command: 256 samples and 65,536 are multiples of neither 3.
    code, out, err = run_muster(["--standalone", "--nproc-per-node", "3", "--no-python", TRAIN],
                                timeout=240)
    check(code == 0, f"default flags at 3 ranks exited {code}", out, err)
    check("world size 3, global batch 256: 86 samples on rank 0, 85 on ranks 1-2" in out,
          "rank 0 does not show the split", out)
    final_loss(out)


@test
def a_checkpoint_written_by_four_ranks_resumes_on_three_with_the_fault_free_weights():
    work = tempdir()
    reference = os.path.join(work, "reference.bin")
    code, out, err = train(1, ["--steps", "40", "--out", reference], model=ANY_WORLD)
    check(code == 0, "fault-free run failed", out, err)
    ckpt = os.path.join(work, "ckpt")
    # 20 steps of 64 end inside epoch 1 (sample 280 of 1000).
    code, out, err = train(4, ["--steps", "20", "--checkpoint-every", "5", "--checkpoint-dir", ckpt],
                           model=ANY_WORLD)
    check(code == 0, "the 4-rank part failed", out, err)
    result = os.path.join(work, "resumed.bin")
    code, out, err = train(3, ["--steps", "40", "--checkpoint-every", "5", "--checkpoint-dir", ckpt,
                               "--out", result], model=ANY_WORLD)
    check(code == 0, "the 3-rank part failed", out, err)
    check("resumed from step 20 of 40 (checkpoint written at world size 4)" in out,
          "the 3 ranks did not resume the 4 ranks' checkpoint", out)
    diff = max_relative_difference(read_floats(reference), read_floats(result))
    check(diff <= 1e-6, f"4 then 3 ranks differ from the fault-free run by {diff:.2e} relative")


@test
def without_a_launcher_store_rank_0_serves_it_and_training_matches_one_process():
    # torch's env:// contract (TORCHELASTIC_USE_AGENT_STORE=False, as torchrun's
    # c10d sets it, and srun per task): no launcher serves the store, so rank 0
    # must; without that every rank would wait for a store nobody runs.
    work = tempdir()
    reference = os.path.join(work, "one.bin")
    code, out, err = train(1, ["--steps", "10", "--out", reference])
    check(code == 0, f"1 worker exited {code}", out, err)
    weights = os.path.join(work, "two.bin")
    port = free_port()
    procs = [start([TRAIN, "--steps", "10", "--out", weights, "--collective-timeout", "20"] + MODEL,
                   env=base_env(RANK=rank, WORLD_SIZE=2, LOCAL_RANK=rank, LOCAL_WORLD_SIZE=2,
                                MASTER_ADDR="127.0.0.1", MASTER_PORT=port,
                                TORCHELASTIC_USE_AGENT_STORE="False"))
             for rank in (0, 1)]
    for rank, proc in enumerate(procs):
        out, err = proc.communicate(timeout=60)
        check(proc.returncode == 0, f"rank {rank} exited {proc.returncode}", out, err)
    diff = max_relative_difference(read_floats(reference), read_floats(weights))
    check(diff <= 1e-5, f"2 ranks without a launcher differ from 1 by {diff:.2e} relative")


@test
def a_worker_killed_mid_run_resumes_from_the_checkpoint_with_the_same_result():
    work = tempdir()
    reference = os.path.join(work, "reference.bin")
    common = ["--steps", "60", "--checkpoint-every", "5"]
    code, out, err = train(2, common + ["--checkpoint-dir", os.path.join(work, "ref-ckpt"),
                                        "--out", reference])
    check(code == 0, "fault-free run failed", out, err)

    ckpt = os.path.join(work, "ckpt")
    result = os.path.join(work, "resumed.bin")
    proc = start([MUSTER, "--standalone", "--nproc-per-node", "2", "--max-restarts", "1",
                  "--recovery", "restart", "--no-python", TRAIN] + MODEL + common
                 + ["--checkpoint-dir", ckpt, "--out", result, "--step-sleep-ms", "40"])
    check(wait_for(lambda: len(glob.glob(os.path.join(ckpt, "ckpt-*"))) >= 2, 60),
          "no checkpoints appeared")
    # A worker of the first generation: a child of muster running muster-train.
    victims = [int(p) for p in os.listdir("/proc") if p.isdigit() and _is_train_worker(int(p), proc.pid)]
    check(victims, "no muster-train worker found")
    os.kill(victims[-1], signal.SIGKILL)
    out, err = proc.communicate(timeout=240)
    check(proc.returncode == 0, f"the job did not recover (exit {proc.returncode})", out, err)
    check("resumed from step" in out, "the restarted workers did not resume", out)
    diff = max_relative_difference(read_floats(reference), read_floats(result))
    check(diff <= 1e-6, f"resumed weights differ from the fault-free run by {diff:.2e}")


def _is_train_worker(pid, muster_pid):
    _, ppid = procs.state(pid)
    return ppid == muster_pid and procs.cmdline(pid).split(b"\0")[0].endswith(b"muster-train")


@test
def muster_train_reports_progress_so_a_stalled_rank_is_caught_as_hung():
    # Progress after every step keeps a run with 0.2 s steps alive under a
    # 1 s hang timeout; 2.5 s steps make the same timeout fire after step 1.
    code, out, err = run_muster(["--standalone", "--nproc-per-node", "2", "--hang-timeout", "1",
                                 "--no-python", TRAIN, "--steps", "6", "--step-sleep-ms", "200"]
                                + MODEL, timeout=60)
    check(code == 0 and "hung" not in err, f"a steadily progressing run ended with {code}", err)
    code, out, err = run_muster(["--standalone", "--nproc-per-node", "2", "--hang-timeout", "1",
                                 "--no-python", TRAIN, "--steps", "3", "--step-sleep-ms", "2500"]
                                + MODEL, timeout=60)
    check(code == 137, f"exit {code}, expected 137 (the hung worker's SIGKILL)", err)
    check("hung       : no progress for" in err and "last step 1" in err,
          "the report does not say a rank hung after step 1", err)


@test
def a_finished_run_started_again_reports_the_loss_it_ended_with():
    work = tempdir()
    ckpt = os.path.join(work, "ckpt")
    common = ["--steps", "10", "--checkpoint-every", "5", "--checkpoint-dir", ckpt]
    code, out, err = train(2, common)
    check(code == 0, "first run failed", out, err)
    ended_with = final_loss(out)
    code, out, err = train(2, common)
    check(code == 0, "the run started again failed", out, err)
    check("resumed from step 10 " in out, "it did not resume from the last step", out, err)
    check(final_loss(out) == ended_with,
          f"final loss {final_loss(out)} after resuming, {ended_with} when the run ended", out)


@test
def a_torn_checkpoint_is_never_loaded():
    work = tempdir()
    ckpt = os.path.join(work, "ckpt")
    code, out, err = train(1, ["--steps", "10", "--checkpoint-every", "5", "--checkpoint-dir", ckpt])
    check(code == 0, "first run failed", out, err)
    files = sorted(glob.glob(os.path.join(ckpt, "ckpt-*")))
    check(len(files) >= 2, f"expected two checkpoints, found {files}")
    newest = files[-1]
    with open(newest, "r+b") as f:
        size = f.seek(0, os.SEEK_END)
        f.truncate(size // 2)
    code, out, err = train(1, ["--steps", "12", "--checkpoint-dir", ckpt])
    check(code == 0, "the run after a torn checkpoint failed", out, err)
    check("resumed from step 5 " in out, "it did not fall back to the older checkpoint", out, err)
    check(os.path.basename(newest) in out + err, "no warning named the torn file", out, err)


@test
def bad_flags_are_refused_with_the_value():
    # Any positive global batch and dataset size train at any world size (see
    # the tests above); zero is refused, quoted, at every world size.
    for bad, message in ((["--global-batch", "0"], "--global-batch=0 must be positive"),
                         (["--dataset-size", "0"], "--dataset-size=0 must be positive")):
        for nproc in ("1", "3"):
            code, out, err = run_muster(["--standalone", "--nproc-per-node", nproc, "--no-python",
                                         TRAIN, *bad])
            check(code != 0 and message in err, f"{' '.join(bad)} on {nproc} rank(s): exit {code}",
                  err)
    code, out, err = run_muster(["--standalone", "--nproc-per-node", "1", "--no-python", TRAIN, "--backend", "tpu"])
    check(code != 0 and "tpu" in err, "a bad backend was not refused by name", err)
    # Flags the parser refuses exit 2, as muster's and musterd's do.
    for bad in (["--no-such-flag"], ["--steps", "many"]):
        code, out, err = run([TRAIN, *bad])
        check(code == 2 and "muster-train: error:" in err and bad[-1] in err,
              f"muster-train {' '.join(bad)}: exit {code}", err)
    # Without NCCL in the build or a visible GPU, --backend nccl is refused
    # with the reason at any world size; where it can run, it trains.
    code, out, err = run_muster(["--standalone", "--nproc-per-node", "1", "--no-python", TRAIN,
                                 "--backend", "nccl", "--steps", "1"])
    if code == 0:
        final_loss(out)  # it trained: a GPU is visible (runtime_train_gpu_test.py checks how)
        print("--backend nccl trains here (a GPU is visible): its refusal is not checked")
        return
    for nproc in ("1", "2"):
        if nproc == "2":  # the 1-rank refusal is the run above
            code, out, err = run_muster(["--standalone", "--nproc-per-node", nproc, "--no-python",
                                         TRAIN, "--backend", "nccl", "--steps", "1"])
        check(code != 0 and ("--backend nccl: this build has no NCCL" in err
                             or "--backend nccl: no GPU is visible" in err),
              f"--backend nccl on {nproc} rank(s) was not refused with the reason", out, err)


if __name__ == "__main__":
    run_tests()
