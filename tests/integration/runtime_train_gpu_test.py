"""muster-train's GPU path end to end, launched by muster on loopback:

- one rank over NCCL (CUDA kernels, cuBLAS, float32 gradients on the GPU)
  ends with the weights of one rank over Gloo (the CPU path) within 1e-4
  relative, and with its final loss;
- with two GPUs, two ranks over NCCL end with them too;
- a checkpoint written by a GPU run resumes on the CPU path (same format) and
  ends where a CPU run of the same length ends.

Every test skips, printing the reason, where `muster-train --backend nccl`
cannot run: a build without CUDA/NCCL, or no GPU visible. The reason is the
trainer's own refusal (runtime::ResolveBackend's message).
"""
import math
import os
import subprocess

from harness import BIN_DIR, Skip, base_env, check, run_muster, run_tests, tempdir, test
from train_harness import MODEL, TRAIN, final_loss, read_floats

TEST_BIN_DIR = os.environ.get("MUSTER_TEST_BIN_DIR", os.path.join(BIN_DIR, "..", "tests"))
# Prints "gpus=N" (runtime_comm_tests.cmake builds it).
COMM_WORKER = os.path.join(TEST_BIN_DIR, "runtime_comm_worker")

# GPU gradients are float32 sums (the CPU's are double): the weights agree to
# float rounding grown over the run, not bit for bit.
TOLERANCE = 1e-4


def train(nproc, backend, extra, timeout=240):
    return run_muster(["--standalone", "--nproc-per-node", str(nproc), "--no-python", TRAIN]
                      + MODEL + ["--backend", backend] + extra, timeout=timeout)


def relative_difference(a, b):
    """|a - b| / |b| over the whole parameter vector (Euclidean norms)."""
    check(len(a) == len(b), f"parameter counts differ: {len(a)} vs {len(b)}")
    diff = math.sqrt(sum((x - y) ** 2 for x, y in zip(a, b)))
    norm = math.sqrt(sum(y * y for y in b))
    return diff / norm


_refusal = []


def require_nccl():
    """Skips the test, with muster-train's reason, where --backend nccl cannot run."""
    if not _refusal:
        code, out, err = train(1, "nccl", ["--steps", "1"])
        reason = None
        if code != 0:
            lines = [line for line in err.splitlines() if "--backend nccl:" in line]
            check(lines, f"--backend nccl failed (exit {code}), not for want of NCCL or a GPU",
                  out, err)
            reason = lines[0].split("muster-train: ", 1)[-1].strip()
        _refusal.append(reason)
    if _refusal[0] is not None:
        raise Skip(_refusal[0])


def gpu_count():
    """GPUs muster sees when started with the tests' environment (cudaGetDeviceCount)."""
    out = subprocess.run([COMM_WORKER, "nccl", "gpus"], env=base_env(), capture_output=True,
                         text=True, timeout=60).stdout
    return int(out.strip().split("=")[1])


def compare_with_gloo(nproc, steps):
    work = tempdir()
    cpu_path = os.path.join(work, "gloo.bin")
    gpu_path = os.path.join(work, "nccl.bin")
    code, cpu_out, err = train(1, "gloo", ["--steps", str(steps), "--out", cpu_path])
    check(code == 0, f"the Gloo run exited {code}", cpu_out, err)
    code, gpu_out, err = train(nproc, "nccl", ["--steps", str(steps), "--out", gpu_path])
    check(code == 0, f"the NCCL run on {nproc} rank(s) exited {code}", gpu_out, err)
    check(final_loss(gpu_out) < 2.3, "the loss did not go down on the GPU", gpu_out)
    cpu, gpu = read_floats(cpu_path), read_floats(gpu_path)
    diff = relative_difference(gpu, cpu)
    print(f"  {nproc} NCCL rank(s) vs 1 Gloo rank: weights differ by {diff:.2e} relative")
    check(diff <= TOLERANCE, f"NCCL weights differ from Gloo's by {diff:.2e} relative")
    # The loss is printed with six decimals: one unit of the last may differ.
    loss_cpu, loss_gpu = final_loss(cpu_out), final_loss(gpu_out)
    check(abs(loss_gpu - loss_cpu) <= TOLERANCE * abs(loss_cpu) + 1.5e-6,
          f"final loss {loss_gpu} on NCCL, {loss_cpu} on Gloo")
    return cpu


@test
def one_rank_on_the_gpu_ends_with_the_cpu_weights():
    require_nccl()
    cpu = compare_with_gloo(1, 40)
    # The comparison can fail: a different seed is far off.
    other = os.path.join(tempdir(), "seed2.bin")
    code, out, err = train(1, "nccl", ["--steps", "40", "--seed", "2", "--out", other])
    check(code == 0, f"the seed 2 NCCL run exited {code}", out, err)
    check(relative_difference(read_floats(other), cpu) > 1e-2,
          "a different seed gave the same weights: the comparison is blind")


@test
def two_ranks_on_two_gpus_end_with_the_cpu_weights():
    require_nccl()
    if gpu_count() < 2:
        raise Skip(f"{gpu_count()} GPU(s) visible, two needed")
    compare_with_gloo(2, 40)


@test
def a_checkpoint_written_on_the_gpu_resumes_on_the_cpu():
    require_nccl()
    work = tempdir()
    ckpt = os.path.join(work, "ckpt")
    common = ["--checkpoint-every", "10", "--checkpoint-dir", ckpt]
    code, out, err = train(1, "nccl", ["--steps", "20"] + common)
    check(code == 0, f"the NCCL run exited {code}", out, err)
    resumed = os.path.join(work, "resumed.bin")
    code, out, err = train(1, "gloo", ["--steps", "40", "--out", resumed] + common)
    check(code == 0, f"the Gloo run from the GPU's checkpoint exited {code}", out, err)
    check("resumed from step 20 " in out, "the Gloo run did not resume the GPU's checkpoint", out)
    reference = os.path.join(work, "reference.bin")
    code, out, err = train(1, "gloo", ["--steps", "40", "--out", reference])
    check(code == 0, f"the reference Gloo run exited {code}", out, err)
    diff = relative_difference(read_floats(resumed), read_floats(reference))
    check(diff <= TOLERANCE, f"resumed weights differ from the CPU run's by {diff:.2e} relative")


if __name__ == "__main__":
    run_tests()
