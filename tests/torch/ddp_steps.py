"""An ordinary PyTorch DDP training loop over gloo, with no muster code: what
muster's step hooks must see into (tests/integration/step_hooks_test.py).

    ddp_steps.py --steps N [--step-seconds S] [--hang-rank R --hang-step K]
                 [--save-step K --save-seconds S]
                 [--slow-input-rank R --slow-input-factor F]

Each step is a forward, backward and SGD step of a small MLP, then a sleep
that brings the step to --step-seconds. --hang-rank R sleeps forever before
its step K's backward (the other ranks then wait in their all-reduce);
--save-step K has every rank spend --save-seconds after step K, as a
checkpoint save that all ranks take together would. A rank restarted after a
fault (TORCHELASTIC_RESTART_COUNT > 0) does not hang again.
--slow-input-rank R waits for its input (a sleep before the forward, as a
slow data loader would) so that its steps take F times as long. Rank 0 prints
`STEPS_DONE N` at the end.
"""
import argparse
import os
import sys
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel


def hang_forever():
    print(f"HANG_BEGIN {time.time():.3f}", file=sys.stderr, flush=True)
    while True:
        time.sleep(3600)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, required=True)
    parser.add_argument("--step-seconds", type=float, default=0.05)
    parser.add_argument("--hang-rank", type=int, default=-1)
    parser.add_argument("--hang-step", type=int, default=-1)
    parser.add_argument("--save-step", type=int, default=-1)
    parser.add_argument("--save-seconds", type=float, default=0)
    parser.add_argument("--slow-input-rank", type=int, default=-1)
    parser.add_argument("--slow-input-factor", type=float, default=1)
    parser.add_argument("--print-first-step", action="store_true")
    args = parser.parse_args()

    dist.init_process_group("gloo")
    rank = dist.get_rank()
    restarted = int(os.environ.get("TORCHELASTIC_RESTART_COUNT", "0")) > 0
    torch.manual_seed(0)
    model = DistributedDataParallel(torch.nn.Sequential(
        torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 1)))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x, y = torch.randn(16, 32), torch.randn(16, 1)
    for step in range(1, args.steps + 1):
        began = time.monotonic()
        if rank == args.slow_input_rank:
            time.sleep(args.step_seconds * (args.slow_input_factor - 1))
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), y)
        if rank == args.hang_rank and step == args.hang_step and not restarted:
            hang_forever()
        loss.backward()
        opt.step()
        if step == 1 and rank == 0 and args.print_first_step:
            print("FIRST_STEP", flush=True)
        if step == args.save_step:
            time.sleep(args.save_seconds)
        rest = args.step_seconds - (time.monotonic() - began)
        if rank == args.slow_input_rank:
            rest += args.step_seconds * (args.slow_input_factor - 1)
        if rest > 0:
            time.sleep(rest)
    dist.barrier()
    if rank == 0:
        print(f"STEPS_DONE {args.steps}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
