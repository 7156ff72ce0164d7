"""gpu_check.sh's `in place` step: examples/torch/ddp_in_place.py's job on the
GPU over NCCL, recovering in place with the muster Python package.

    muster --nproc-per-node N [--inject kill-worker,...] nccl_in_place.py --steps S --log FILE

The model, data and loop are the example's (its model, loss, step line and weights), on
cuda:(LOCAL_RANK % device count), with muster.InPlace(backend="nccl"). A
killed peer's NCCL collective is interrupted by the module's abort
(process_group.py) and the group is formed anew. Ranks sharing a GPU get a
distinct NCCL_HOSTID per process (NCCL refuses two ranks of one host on one
GPU; the same trick as integration/runtime_comm's one-GPU re-form), which
makes NCCL treat them as separate hosts over its socket transport.

Each rank appends `STEP <rank> <step> <pid> <unix time>` to FILE after every
step; rank 0 writes the final parameters to FILE.weights (float32 LE), as
the example does.
"""
import argparse
import faulthandler
import os
import signal
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "examples", "torch"))

import torch  # noqa: E402

import muster  # noqa: E402
import ddp_in_place as example  # noqa: E402  (its model, loss, step line and weights file)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, required=True)
    parser.add_argument("--log", required=True)
    parser.add_argument("--sleep", type=float, default=0.0)
    args = parser.parse_args()
    faulthandler.register(signal.SIGUSR1, all_threads=True)  # stacks, when a run is stuck
    if torch.cuda.device_count() < int(os.environ.get("LOCAL_WORLD_SIZE", "1")):
        os.environ.setdefault("NCCL_HOSTID", f"muster-gpu-check-{os.getpid()}")
    device = torch.device("cuda", int(os.environ["LOCAL_RANK"]) % torch.cuda.device_count())
    torch.cuda.set_device(device)
    model, optimizer = example.make_model_and_optimizer(device)
    job = muster.InPlace(model, optimizer, backend="nccl")
    log = os.open(args.log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    for step in job.steps(args.steps):
        with job.guard():
            loss = example.loss_of(job.model, step, job.rank, job.world_size, device)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            torch.cuda.synchronize(device)
            example.log_step(log, job.rank, step + 1)
            if args.sleep > 0:
                time.sleep(args.sleep)
    if job.rank == 0:
        example.write_weights(args.log + ".weights", model)
    job.close()


if __name__ == "__main__":
    main()
