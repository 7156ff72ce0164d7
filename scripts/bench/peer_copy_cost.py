"""The peer copy's cost per step: examples/torch/fsdp_in_place.py, FSDP over
4 ranks under muster (gloo, CPU), with --peer-copy on and off alternated.

    scripts/bench/peer_copy_cost.py [--torch 2.14|2.6] [--model-mb 64] [--steps 30] [--repeats 3]

Needs root and the torch chroots (scripts/torch_chroots.sh) and a built
muster (build/bin/muster). A step's time is rank 0's mean interval between
its step lines after the first 5 (warm-up). With the copy on, the package's
own line says what of each step the copy took on the step's path (copying
the shard into the snapshot, and waiting for the previous exchange); the
exchange itself runs on a thread, beside the next step.
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.abspath(os.path.join(HERE, "..", ".."))
CHROOTS = os.environ.get("MUSTER_TORCH_CHROOTS", "/var/cache/muster/torch-chroots")
SUITES = {"2.6": "trixie", "2.14": "sid"}


def step_seconds(log, skip=5):
    times = []
    with open(log) as f:
        for line in f:
            _, rank, _, _, when = line.split()
            if rank == "0":
                times.append(float(when))
    times = times[skip:]
    return (times[-1] - times[0]) / (len(times) - 1)


def run_once(args, copy):
    work = tempfile.mkdtemp(prefix="peer-copy-")
    log = os.path.join(work, "steps.log")
    env = dict(os.environ, MUSTER_TORCH_CHROOT=os.path.join(CHROOTS, SUITES[args.torch]),
               MUSTER_CHROOT_UNWRAPPED="1", PYTHONPATH=os.path.join(SOURCE, "python"))
    command = [os.path.join(SOURCE, "build", "bin", "muster"), "--nproc-per-node", "4",
               "--python", os.path.join(SOURCE, "tests", "torch", "chroot_python.sh"),
               os.path.join(SOURCE, "examples", "torch", "fsdp_in_place.py"),
               "--steps", str(args.steps), "--log", log, "--model-mb", str(args.model_mb),
               "--peer-copy", copy]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        sys.exit(f"the run failed ({done.returncode}):\n{done.stderr[-3000:]}")
    said = [line.split("muster: ", 1)[1] for line in done.stderr.splitlines()
            if "peer copy:" in line]
    return step_seconds(log), (said[0] if said else "")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--torch", choices=sorted(SUITES), default="2.14")
    parser.add_argument("--model-mb", type=float, default=64)
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    found = {"on": [], "off": []}
    for repeat in range(args.repeats):
        for copy in (("on", "off") if repeat % 2 == 0 else ("off", "on")):
            seconds, said = run_once(args, copy)
            found[copy].append(seconds)
            print(f"repeat={repeat} peer_copy={copy} step_ms={1000 * seconds:.1f} {said}",
                  flush=True)
    on, off = statistics.median(found["on"]), statistics.median(found["off"])
    print(f"== torch {args.torch}, FSDP 1x4, --model-mb {args.model_mb:g} (Adam: the state is 3x "
          f"the parameters): step {1000 * off:.1f} ms without the copy, {1000 * on:.1f} ms with "
          f"it: {on / off:.2f}x ({1000 * (on - off):+.1f} ms per step)", flush=True)


if __name__ == "__main__":
    main()
