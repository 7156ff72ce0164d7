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

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "examples", "torch"))
import ddp_in_place as example  # noqa: E402  (its model, loss, step line and command line)


def main():
    args = example.parse_args()
    model, optimizer = example.make_model_and_optimizer()
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=60))
    ddp = torch.nn.parallel.DistributedDataParallel(model)
    log = os.open(args.log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    for step in range(args.steps):
        rank, world_size = dist.get_rank(), dist.get_world_size()  # the example's job.rank, ...
        loss = example.loss_of(ddp, step, rank, world_size)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        example.log_step(log, rank, step + 1)
        if args.sleep > 0:
            time.sleep(args.sleep)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
