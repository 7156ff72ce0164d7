"""A DistributedDataParallel job that snapshots every epoch, as torchrun's
elastic tutorial writes it ("Fault-tolerant distributed training with
torchrun"): on start, every worker loads the snapshot if one exists and
continues from its epoch; rank 0 saves model state and the epochs run after
each epoch. Gloo on CPU, env:// init, LOCAL_RANK/RANK/WORLD_SIZE from the
launcher.

    ddp_snapshot.py --snapshot PATH [--epochs N] [--step-sleep S] [--progress DIR]

Each worker appends "gen=<restart count> rank=<r> world=<w> epoch=<e>" lines
to DIR/progress_r<rank> after every epoch (when --progress is given), so a
test can see steps being taken. Rank 0 prints at the end:

    DDP_SNAPSHOT_RESULT {"world_size": W, "epochs_run": E, "resumed_from": R, ...}
"""
import argparse
import json
import os
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

from exit_after_teardown import exit_after_teardown


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--snapshot", required=True)
    parser.add_argument("--epochs", type=int, default=6)
    parser.add_argument("--step-sleep", type=float, default=0.0)
    parser.add_argument("--progress", default="")
    args = parser.parse_args()

    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    restart = int(os.environ.get("TORCHELASTIC_RESTART_COUNT", "0"))

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 2))
    epochs_run = 0
    if os.path.exists(args.snapshot):
        snapshot = torch.load(args.snapshot)
        model.load_state_dict(snapshot["MODEL_STATE"])
        epochs_run = snapshot["EPOCHS_RUN"]
    resumed_from = epochs_run
    ddp = DistributedDataParallel(model)

    gen = torch.Generator().manual_seed(0)
    x = torch.randn(192, 8, generator=gen)
    y = (x.sum(dim=1) > 0).long()
    dataset = TensorDataset(x, y)
    sampler = DistributedSampler(dataset, num_replicas=world, rank=rank, shuffle=True, seed=0)
    loader = DataLoader(dataset, batch_size=16, sampler=sampler)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.05)

    for epoch in range(epochs_run, args.epochs):
        sampler.set_epoch(epoch)
        for xb, yb in loader:
            opt.zero_grad()
            torch.nn.functional.cross_entropy(ddp(xb), yb).backward()
            opt.step()
            if args.step_sleep:
                time.sleep(args.step_sleep)
        if rank == 0:
            tmp = args.snapshot + ".tmp"
            torch.save({"MODEL_STATE": model.state_dict(), "EPOCHS_RUN": epoch + 1}, tmp)
            os.replace(tmp, args.snapshot)
        if args.progress:
            with open(os.path.join(args.progress, f"progress_r{rank}"), "a") as f:
                f.write(f"gen={restart} rank={rank} world={world} epoch={epoch}\n")
        dist.barrier()

    flat = torch.cat([p.detach().reshape(-1) for p in model.parameters()])
    high, low = flat.clone(), flat.clone()
    dist.all_reduce(high, op=dist.ReduceOp.MAX)
    dist.all_reduce(low, op=dist.ReduceOp.MIN)
    if rank == 0:
        print("DDP_SNAPSHOT_RESULT " + json.dumps({
            "world_size": world,
            "epochs_run": args.epochs,
            "resumed_from": resumed_from,
            "restart_count": restart,
            "weights_equal": bool(torch.allclose(high, low)),
        }), flush=True)
    dist.destroy_process_group()
    exit_after_teardown()


if __name__ == "__main__":
    main()
