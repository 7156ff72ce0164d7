"""A small FSDP2 (fully_shard) job that recovers in place under muster: FSDP
over every rank, or HSDP with --mesh REPLICATE,SHARD.

    fsdp_in_place.py --steps N --log FILE [--mesh REPLICATE,SHARD] [--model-mb M] [--sleep S]
                     [--peer-copy on|off]

It trains an MLP with Adam on synthetic data. The batch of step s is drawn
from a generator seeded with s, so a run with faults ends with the weights
of a fault-free one.

- After every optimizer step each rank appends `STEP <rank> <step> <pid>
  <unix time>` to FILE, `step` counting the steps done (1 for the first).
- At the end rank 0 writes the full, unsharded parameters, flattened in
  `named_parameters()` order, as raw float32 little-endian to FILE.weights.
- --mesh R,S: R replica groups of S shards (R*S ranks); without it, one
  group sharded over every rank. --model-mb M: about M MiB of parameters
  (a hidden layer of that size; Adam's state is twice that). --sleep S
  sleeps S seconds after each step (to leave time for faults). --peer-copy
  turns the copy of each shard in a peer's memory on or off (default: on
  without replicas).

Run: muster --nproc-per-node 4 examples/torch/fsdp_in_place.py --steps 100 --log /tmp/steps.log
     --mesh 2,2  (muster puts its Python package on the workers' path)
"""
import argparse
import os
import time

import torch

import muster

try:  # torch >= 2.6
    from torch.distributed.fsdp import fully_shard
except ImportError:
    from torch.distributed._composable.fsdp import fully_shard

# The data, loss, step line and model sizing are the DDP example's: the two
# examples train the same function and can be compared.
from ddp_in_place import HIDDEN, FEATURES, hidden_for, log_step, loss_of  # noqa: E402


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, required=True)
    parser.add_argument("--log", required=True)
    parser.add_argument("--mesh", help="REPLICATE,SHARD (default: 1,world size)")
    parser.add_argument("--model-mb", type=float, default=0.0)
    parser.add_argument("--sleep", type=float, default=0.0)
    parser.add_argument("--peer-copy", choices=("on", "off"))
    args = parser.parse_args()
    if args.steps < 0:
        parser.error(f"--steps {args.steps} is negative")
    if args.model_mb < 0:
        parser.error(f"--model-mb {args.model_mb} is negative")
    args.shard = None
    if args.mesh:
        try:
            replicate, shard = (int(n) for n in args.mesh.split(","))
        except ValueError:
            parser.error(f"--mesh {args.mesh!r} is not REPLICATE,SHARD")
        world = int(os.environ.get("WORLD_SIZE", "1"))
        if replicate < 1 or shard < 1 or replicate * shard != world:
            parser.error(f"--mesh {args.mesh}: {replicate} x {shard} is not the world size {world}")
        args.shard = shard
    return args


def make_model(hidden):
    torch.manual_seed(0)  # the same initial weights on every rank
    layers = [torch.nn.Linear(FEATURES, hidden), torch.nn.Tanh()]
    if hidden > HIDDEN:
        layers += [torch.nn.Linear(hidden, hidden), torch.nn.Tanh()]
    layers.append(torch.nn.Linear(hidden, 1))
    return torch.nn.Sequential(*layers)


def builder(hidden):
    def build(mesh):
        model = make_model(hidden)
        # On the CPU, torch 2.6's FSDP2 cannot free a layer's gathered
        # parameters after forward (autograd then sees them changed).
        reshard = mesh.device_type != "cpu"
        for layer in model:
            if isinstance(layer, torch.nn.Linear):
                fully_shard(layer, mesh=mesh, reshard_after_forward=reshard)
        fully_shard(model, mesh=mesh, reshard_after_forward=reshard)
        return model, torch.optim.Adam(model.parameters(), lr=0.01)
    return build


def write_weights(path, model, rank):
    """Every rank gathers (a collective); rank 0 writes."""
    full = [p.full_tensor() if hasattr(p, "full_tensor") else p
            for _, p in model.named_parameters()]
    if rank == 0:
        flat = torch.cat([p.detach().reshape(-1) for p in full]).float().cpu()
        with open(path, "wb") as out:
            out.write(flat.numpy().astype("<f4").tobytes())


def main():
    args = parse_args()
    if torch.cuda.is_available():  # a GPU per local rank, round-robin; NCCL
        torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")) % torch.cuda.device_count())
    peer_copy = None if args.peer_copy is None else args.peer_copy == "on"
    job = muster.ShardedInPlace(builder(hidden_for(args.model_mb)), shard=args.shard,
                                peer_copy=peer_copy)
    log = os.open(args.log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    for step in job.steps(args.steps):
        with job.guard():
            loss = loss_of(job.model, step, job.rank, job.world_size, job.mesh.device_type)
            job.optimizer.zero_grad()
            loss.backward()
            job.optimizer.step()
            log_step(log, job.rank, step + 1)
            if args.sleep > 0:
                time.sleep(args.sleep)
    write_weights(args.log + ".weights", job.model, job.rank)
    job.close()


if __name__ == "__main__":
    main()
