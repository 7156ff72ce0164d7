"""muster-train end to end, launched by muster on loopback with Gloo:

- gradient averaging: the Linear(1->1) check gives exactly 14.0 on 2 ranks and
  the general formula on 3 and 4;
- DDP equivalence: 1, 2 and 4 workers at the same global batch end with the
  same weights within 1e-5 relative, and reducing after the backward pass
  (--no-overlap) gives the overlapped run's weights;
- resume: a worker SIGKILLed mid-run under --max-restarts 1; the job finishes
  from the newest checkpoint with the fault-free run's weights; a finished
  run started again reports the loss it ended with;
- bad flags (--backend nccl included, where this build has no NCCL or no GPU
  is visible) and a torn checkpoint are refused or skipped with a message.

The GPU path (--backend nccl) is runtime_train_gpu_test.py's.
"""
import glob
import os
import signal

from harness import (BIN_DIR, base_env, check, free_port, run, run_muster, run_tests, start, tempdir,
                     test, wait_for, MUSTER)
import train_harness
from train_harness import TRAIN, final_loss, max_relative_difference, read_floats

TEST_BIN_DIR = os.environ.get("MUSTER_TEST_BIN_DIR", os.path.join(BIN_DIR, "..", "tests"))
GRAD_AVG = os.path.join(TEST_BIN_DIR, "runtime_grad_avg_main")

MODEL = train_harness.MODEL + ["--backend", "gloo"]


def train(nproc, extra, timeout=240):
    code, out, err = run_muster(["--standalone", "--nproc-per-node", str(nproc), "--no-python", TRAIN] + MODEL
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
def one_two_and_four_workers_end_with_the_same_weights():
    work = tempdir()
    weights = {}
    for nproc in (1, 2, 4):
        path = os.path.join(work, f"w{nproc}.bin")
        code, out, err = train(nproc, ["--steps", "40", "--out", path])
        check(code == 0, f"{nproc} workers exited {code}", out, err)
        check(final_loss(out) < 2.3, "the loss did not go down", out)
        weights[nproc] = read_floats(path)
    for nproc in (2, 4):
        diff = max_relative_difference(weights[1], weights[nproc])
        check(diff <= 1e-5, f"{nproc} workers differ from 1 by {diff:.2e} relative")
    # The buckets are the same sums in the same order, only sent later.
    no_overlap = os.path.join(work, "w2-no-overlap.bin")
    code, out, err = train(2, ["--steps", "40", "--out", no_overlap, "--no-overlap"])
    check(code == 0, f"2 workers with --no-overlap exited {code}", out, err)
    check(read_floats(no_overlap) == weights[2],
          "--no-overlap weights differ from the overlapped run's")
    # The check can fail: a different seed gives different weights.
    other = os.path.join(work, "other.bin")
    code, out, err = train(2, ["--steps", "40", "--out", other, "--seed", "2"])
    check(code == 0, "seed 2 run failed", out, err)
    check(max_relative_difference(weights[1], read_floats(other)) > 1e-3,
          "a different seed gave the same weights: the comparison is blind")


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
    proc = start([MUSTER, "--standalone", "--nproc-per-node", "2", "--max-restarts", "1", "--no-python",
                  TRAIN] + MODEL + common
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
    try:
        with open(f"/proc/{pid}/stat") as f:
            ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            argv0 = f.read().split(b"\0")[0]
        return ppid == muster_pid and argv0.endswith(b"muster-train")
    except (FileNotFoundError, ProcessLookupError, IndexError, ValueError):
        return False


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
    code, out, err = run_muster(["--standalone", "--nproc-per-node", "2", "--no-python", TRAIN,
                                 "--global-batch", "63"])
    check(code != 0, "an odd global batch on 2 ranks was accepted")
    check("--global-batch=63" in err, "the error does not quote the value", err)
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
