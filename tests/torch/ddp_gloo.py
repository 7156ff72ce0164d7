"""A real PyTorch data-parallel job over gloo, launched unchanged by muster or torchrun.

It uses the default env:// init (MASTER_ADDR/MASTER_PORT, RANK, WORLD_SIZE from
the launcher), broadcasts rank 0's initial weights, shards a synthetic dataset
with DistributedSampler, trains with DistributedDataParallel, all-reduces the
loss and meets at barriers. At the end it checks what a broken launcher would
break and rank 0 prints one line:

    DDP_RESULT {"world_size": W, "loss": L, "shards_disjoint": true, "weights_equal": true, ...}

Any check that fails raises, so the worker exits non-zero.
"""
import argparse
import json
import os

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

from exit_after_teardown import exit_after_teardown


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--samples", type=int, default=240)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    assert rank == int(os.environ["RANK"]) and world == int(os.environ["WORLD_SIZE"])

    # Each rank starts from different weights on purpose; the broadcast must fix that.
    torch.manual_seed(args.seed + rank)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 2))
    for p in model.parameters():
        dist.broadcast(p.data, src=0)
    ddp = DistributedDataParallel(model)

    gen = torch.Generator().manual_seed(args.seed)
    x = torch.randn(args.samples, 8, generator=gen)
    y = (x.sum(dim=1) > 0).long()
    dataset = TensorDataset(torch.arange(args.samples), x, y)
    sampler = DistributedSampler(dataset, num_replicas=world, rank=rank, shuffle=True, seed=args.seed)
    loader = DataLoader(dataset, batch_size=16, sampler=sampler)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.1)

    seen = []
    loss_avg = torch.zeros(1)
    for epoch in range(args.epochs):
        sampler.set_epoch(epoch)
        for idx, xb, yb in loader:
            if epoch == 0:
                seen.extend(idx.tolist())
            opt.zero_grad()
            loss = torch.nn.functional.cross_entropy(ddp(xb), yb)
            loss.backward()
            opt.step()
            loss_avg = loss.detach().clone().reshape(1)
            dist.all_reduce(loss_avg)
            loss_avg /= world
        dist.barrier()
        if rank == 0:
            print(f"epoch {epoch} mean loss {float(loss_avg):.4f} over {world} ranks", flush=True)

    # Shards of epoch 0 must be disjoint and together cover the dataset.
    counts = torch.zeros(args.samples)
    counts[torch.tensor(seen)] += 1
    dist.all_reduce(counts)
    shards_disjoint = bool((counts == 1).all()) if args.samples % world == 0 else bool((counts >= 1).all())

    # DDP must keep every replica identical.
    flat = torch.cat([p.detach().reshape(-1) for p in model.parameters()])
    spread = flat.clone()
    dist.all_reduce(spread, op=dist.ReduceOp.MAX)
    low = flat.clone()
    dist.all_reduce(low, op=dist.ReduceOp.MIN)
    weights_equal = bool(torch.allclose(spread, low))

    if not (shards_disjoint and weights_equal):
        raise RuntimeError(f"rank {rank}: shards_disjoint={shards_disjoint} weights_equal={weights_equal}")
    dist.barrier()
    if rank == 0:
        print("DDP_RESULT " + json.dumps({
            "world_size": world,
            "loss": round(float(loss_avg), 6),
            "shards_disjoint": shards_disjoint,
            "weights_equal": weights_equal,
            "restart_count": int(os.environ.get("TORCHELASTIC_RESTART_COUNT", "0")),
        }), flush=True)
    dist.destroy_process_group()
    exit_after_teardown()


if __name__ == "__main__":
    main()
