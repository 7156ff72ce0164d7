"""examples/torch/ddp_in_place.py without the muster package: the baseline of
torch_in_place.py's overhead scenario. Bench only.

    ddp_plain.py --steps N --log FILE [--sleep S]

The same command line, model, initial weights, optimizer, batches (the
example's batch_of), loss and STEP line per step as the example; the process
group is init_process_group("gloo") from the launcher's environment (the
example's timeout, 60 s) and the model a plain DistributedDataParallel. What
the example does per step besides, and this does not, is muster.InPlace's:
steps(), guard() and the progress report.
"""
import datetime
import os
import sys
import time

import torch
import torch.distributed as dist
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "examples", "torch"))
import ddp_in_place as example  # noqa: E402  (batch_of, the sizes, the command line)


def main():
    args = example.parse_args()
    torch.manual_seed(0)  # as the example: the same initial weights on every rank
    model = torch.nn.Sequential(torch.nn.Linear(example.FEATURES, example.HIDDEN), torch.nn.Tanh(),
                                torch.nn.Linear(example.HIDDEN, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=60))
    ddp = torch.nn.parallel.DistributedDataParallel(model)
    log = os.open(args.log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    for step in range(args.steps):
        x, y = example.batch_of(step)
        rank, world_size = dist.get_rank(), dist.get_world_size()  # the example's job.rank, ...
        mine = slice(rank, None, world_size)
        loss = F.mse_loss(ddp(x[mine]), y[mine], reduction="sum")
        loss = loss * world_size / example.GLOBAL_BATCH
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        os.write(log, f"STEP {rank} {step + 1} {os.getpid()} {time.time():.6f}\n".encode())
        if args.sleep > 0:
            time.sleep(args.sleep)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
