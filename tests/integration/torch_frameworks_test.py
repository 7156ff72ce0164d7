"""A framework's trainer under muster and under torchrun: a Hugging Face
`Trainer` script (tests/torch/hf_trainer.py: transformers and accelerate,
Debian sid's, torch 2.14 in the sid chroot) on the CPU over gloo.

- fault-free, muster and torchrun 2.14 end with the same training loss, and
  muster's warm process imported the trainer's names (the framework starts
  warm);
- a worker SIGKILLed mid-run: both restart it and finish, with the
  fault-free loss (the script starts training over).
The time to every rank stepping again, against torchrun, is
scripts/bench/torch_recovery.py --script hf (docs/benchmarks.md).

Debian's torch 2.x is built without libuv: muster's and torchrun's workers
start through tests/torch/no_libuv.py (torch's own env:// initialisation,
which the Trainer calls, asks for libuv).
"""
import os
import re
import signal
import subprocess

from harness import (MUSTER, SOURCE_DIR, Skip, check, kill_tree, run, run_tests, start, tempdir,
                     wait_for)
from torch_versions import each_version

SCRIPT = os.path.join(SOURCE_DIR, "tests", "torch", "hf_trainer.py")
NO_LIBUV = os.path.join(SOURCE_DIR, "tests", "torch", "no_libuv.py")
STEPS = 30


def needs_frameworks(version):
    version.require()
    extras = os.path.join(version.chroot or "", ".muster-extras")
    installed = ""
    if version.chroot and os.path.exists(extras):
        with open(extras) as f:
            installed = f.read()
    if "python3-transformers" not in installed:
        raise Skip(f"torch {version.name}: no transformers/accelerate "
                   "(scripts/torch_chroots.sh installs them into the sid chroot)")


def final_loss(out):
    found = re.findall(r"FINAL_LOSS (\S+)", out)
    check(len(found) == 1, f"{len(found)} FINAL_LOSS lines", out)
    return float(found[0])


def muster_run(version, extra=()):
    work = tempdir()
    code, out, err = run([MUSTER, "--standalone", "--nproc-per-node", "2", *extra, SCRIPT,
                          "--out", work, "--steps", str(STEPS), "--step-sleep", "0.02"],
                         env=version.env(MUSTER_LOG_LEVEL="info"), timeout=300)
    check(code == 0, f"muster exited {code}", out, err)
    return final_loss(out), err


def torchrun(version, trace=None):
    """torchrun 2.14 (the chroot's), its workers through no_libuv.py."""
    work = tempdir()
    args = [version.python, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2",
            "--max-restarts", "1", "--monitor-interval", "0.1", NO_LIBUV, SCRIPT, "--out", work,
            "--steps", str(STEPS), "--step-sleep", "0.02"] + (["--trace", trace] if trace else [])
    # Each restart its own store (pytorch/pytorch#135712: a shared one hangs a restart).
    return start(args, env=version.env(TORCH_DISABLE_SHARE_RDZV_TCP_STORE="1"))


def finish(proc, timeout=300):
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        kill_tree(proc.pid)
        out, err = proc.communicate()
    return proc.returncode, out, err


@each_version(since="2.14")
def a_trainer_ends_with_torchruns_loss_and_starts_warm(version):
    needs_frameworks(version)
    loss, err = muster_run(version)
    ready = next((line for line in err.splitlines() if "event=warm_ready" in line), "")
    check("transformers:Trainer" in ready, "the warm process did not import the Trainer", err)
    check("event=warm_fallback" not in err, "the warm process fell back", err)
    code, out, err = finish(torchrun(version))
    check(code == 0, f"torchrun exited {code}", out, err)
    reference = final_loss(out)
    check(abs(loss - reference) <= 1e-6, f"muster's loss {loss} != torchrun's {reference}")
    print(f"  final loss {loss} under both", flush=True)


@each_version(since="2.14")
def a_killed_trainer_worker_restarts_and_finishes_under_both(version):
    needs_frameworks(version)
    loss, err = muster_run(version, ["--max-restarts", "1", "--inject",
                                     "kill-worker,rank=1,step=10"])
    check("TORCHELASTIC_RESTART_COUNT=1" in err, "muster did not restart the workers", err)
    trace = tempdir()
    proc = torchrun(version, trace)
    rank1 = os.path.join(trace, "rank1.trace")

    def rank1_at_step_10():
        if not os.path.exists(rank1):
            return None
        with open(rank1) as f:
            for line in f:
                if line.startswith("t_step ") and int(line.split()[1]) >= 10:
                    return int(re.search(r"pid=(\d+)", line).group(1))
        return None

    check(wait_for(rank1_at_step_10, 120), "torchrun's rank 1 did not reach step 10")
    os.kill(rank1_at_step_10(), signal.SIGKILL)
    code, out, err = finish(proc)
    check(code == 0, f"torchrun exited {code} after the kill", out, err)
    reference = final_loss(out)
    check(abs(loss - reference) <= 1e-6, f"muster's loss {loss} != torchrun's {reference}")


if __name__ == "__main__":
    run_tests()
