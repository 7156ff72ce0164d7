"""A small DistributedDataParallel job that recovers in place under muster.

    ddp_in_place.py --steps N --log FILE [--ckpt FILE --ckpt-every K] [--sleep S] [--model-mb M]

It trains a small MLP on synthetic data. The batch of step s is drawn from a
generator seeded with s, so the data order is a function of the step, not
of the process: a run with faults ends with the weights of a fault-free one.

- After every optimizer step each rank appends `STEP <rank> <step> <pid>
  <unix time>` to FILE, `step` counting the steps done (1 for the first).
- At the end rank 0 writes the final parameters, flattened in
  `parameters()` order, as raw float32 little-endian to FILE.weights.
- With --ckpt, rank 0 saves the model, optimizer and step every K steps
  (written whole, then renamed) and a start resumes from it, as a tutorial
  script does: under torchrun, or when muster restarts the job, that is how
  it recovers. Under muster, muster.InPlace recovers without it.
- --sleep S sleeps S seconds after each step (to leave time for faults).
- --model-mb M adds a hidden layer of about M MiB of parameters (SGD's
  momentum doubles the state a newcomer takes).

Run: muster --nproc-per-node 3 examples/torch/ddp_in_place.py --steps 100 --log /tmp/steps.log
(muster puts its Python package on the workers' path: docs/torch-in-place.md).
"""
import argparse
import math
import os
import time

import torch
import torch.nn.functional as F

import muster

FEATURES, HIDDEN, GLOBAL_BATCH = 16, 32, 24


def batch_of(step):
    """The global batch of `step`: the same on every rank and in every run."""
    generator = torch.Generator().manual_seed(1000 + step)
    x = torch.randn(GLOBAL_BATCH, FEATURES, generator=generator)
    y = x[:, :4].sum(dim=1, keepdim=True) + 0.1 * torch.randn(GLOBAL_BATCH, 1,
                                                              generator=generator)
    return x, y


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, required=True)
    parser.add_argument("--log", required=True)
    parser.add_argument("--ckpt")
    parser.add_argument("--ckpt-every", type=int, default=0)
    parser.add_argument("--sleep", type=float, default=0.0)
    parser.add_argument("--model-mb", type=float, default=0.0)
    args = parser.parse_args()
    if args.model_mb < 0:
        parser.error(f"--model-mb {args.model_mb} is negative")
    if args.steps < 0:
        parser.error(f"--steps {args.steps} is negative")
    if args.ckpt and args.ckpt_every <= 0:
        parser.error("--ckpt needs --ckpt-every K with K >= 1")
    return args


def save_checkpoint(path, model, optimizer, step):
    partial = f"{path}.partial"
    torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "step": step},
               partial)
    os.replace(partial, path)


def hidden_for(model_mb):
    """The hidden width that gives about `model_mb` MiB of float32 parameters
    (the default model's HIDDEN for 0)."""
    if model_mb <= 0:
        return HIDDEN
    return max(HIDDEN, int(math.sqrt(model_mb * (1 << 20) / 4)))


def make_model_and_optimizer(device="cpu", model_mb=0.0):
    torch.manual_seed(0)  # the same initial weights on every rank
    hidden = hidden_for(model_mb)
    layers = [torch.nn.Linear(FEATURES, hidden), torch.nn.Tanh()]
    if hidden > HIDDEN:
        layers += [torch.nn.Linear(hidden, hidden), torch.nn.Tanh()]
    model = torch.nn.Sequential(*layers, torch.nn.Linear(hidden, 1)).to(device)
    return model, torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)


def loss_of(model, step, rank, world_size, device="cpu"):
    """This rank's loss for `step`: the sum over its share of the global batch,
    scaled so that DDP's average over ranks is the global batch's mean,
    whatever the world size."""
    x, y = (t.to(device) for t in batch_of(step))
    mine = slice(rank, None, world_size)  # this rank's share
    loss = F.mse_loss(model(x[mine]), y[mine], reduction="sum")
    return loss * world_size / GLOBAL_BATCH


def log_step(log, rank, steps_done):
    os.write(log, f"STEP {rank} {steps_done} {os.getpid()} {time.time():.6f}\n".encode())


def write_weights(path, model):
    flat = torch.cat([p.detach().reshape(-1) for p in model.parameters()]).float().cpu()
    with open(path, "wb") as out:
        out.write(flat.numpy().astype("<f4").tobytes())


def main():
    args = parse_args()
    model, optimizer = make_model_and_optimizer(model_mb=args.model_mb)
    start = 0
    if args.ckpt and os.path.exists(args.ckpt):
        saved = torch.load(args.ckpt)
        model.load_state_dict(saved["model"])
        optimizer.load_state_dict(saved["optimizer"])
        start = saved["step"]

    job = muster.InPlace(model, optimizer, step=start)
    log = os.open(args.log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    for step in job.steps(args.steps):
        with job.guard():
            loss = loss_of(job.model, step, job.rank, job.world_size)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            log_step(log, job.rank, step + 1)
            if args.ckpt and job.rank == 0 and (step + 1) % args.ckpt_every == 0:
                save_checkpoint(args.ckpt, model, optimizer, step + 1)
            if args.sleep > 0:
                time.sleep(args.sleep)
    if job.rank == 0:
        write_weights(args.log + ".weights", model)
    job.close()


if __name__ == "__main__":
    main()
