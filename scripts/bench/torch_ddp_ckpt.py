"""An ordinary PyTorch DDP training script, as users write it: gloo on CPU,
init_process_group from the launcher's environment, a small model, a
DistributedSampler, rank 0 checkpoints every --ckpt-every steps with
torch.save, and every start resumes from the checkpoint when there is one.

    torchrun --nproc_per_node 3 torch_ddp_ckpt.py --ckpt /tmp/ckpt.pt [--steps N]
             [--step-sleep S] [--trace DIR]

--trace DIR (used by scripts/bench/torch_recovery.py) appends timestamped
phase lines to DIR/rank<RANK>.trace, one line each:

    t_first_line t=<time> pid=<pid> restart=<TORCHELASTIC_RESTART_COUNT> world=<WORLD_SIZE>
    t_imported   t=...                (after the torch imports)
    t_pg         t=...                (after init_process_group)
    t_step N     t=...                (after optimizer step N, 1-based, global)
"""
import time

T_FIRST_LINE = time.time()  # for --trace: taken before anything else is imported

import argparse
import os

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

T_IMPORTED = time.time()


class Tracer:
    def __init__(self, directory):
        self.path = None
        if directory:
            os.makedirs(directory, exist_ok=True)
            self.path = os.path.join(directory, f"rank{os.environ.get('RANK', '0')}.trace")
        self.tags = (f"pid={os.getpid()} restart={os.environ.get('TORCHELASTIC_RESTART_COUNT', '0')} "
                     f"world={os.environ.get('WORLD_SIZE', '1')}")

    def __call__(self, phase, t=None, n=None):
        if self.path is None:
            return
        t = time.time() if t is None else t
        what = phase if n is None else f"{phase} {n}"
        with open(self.path, "a") as f:
            f.write(f"{what} t={t:.6f} {self.tags}\n")


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(32, 128)
        self.fc2 = torch.nn.Linear(128, 128)
        self.fc3 = torch.nn.Linear(128, 1)

    def forward(self, x):
        return self.fc3(F.relu(self.fc2(F.relu(self.fc1(x)))))


def save_checkpoint(path, model, optimizer, step):
    tmp = path + ".tmp"
    torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "step": step}, tmp)
    os.replace(tmp, path)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--ckpt", default="checkpoint.pt", help="checkpoint path")
    parser.add_argument("--ckpt-every", type=int, default=10, help="checkpoint every N steps")
    parser.add_argument("--steps", type=int, default=200, help="total training steps")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--step-sleep", type=float, default=0.05,
                        help="seconds slept per step (stands in for real work)")
    parser.add_argument("--trace", default="", help="directory for phase timestamps")
    args = parser.parse_args()

    trace = Tracer(args.trace)
    trace("t_first_line", T_FIRST_LINE)
    trace("t_imported", T_IMPORTED)

    dist.init_process_group("gloo")
    trace("t_pg")
    rank = dist.get_rank()

    torch.manual_seed(0)
    dataset = TensorDataset(torch.randn(4096, 32), torch.randn(4096, 1))
    sampler = DistributedSampler(dataset)
    loader = DataLoader(dataset, batch_size=args.batch_size, sampler=sampler)

    model = Net()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    step = 0
    if os.path.exists(args.ckpt):
        checkpoint = torch.load(args.ckpt, map_location="cpu")
        model.load_state_dict(checkpoint["model"])
        optimizer.load_state_dict(checkpoint["optimizer"])
        step = checkpoint["step"]
        if rank == 0:
            print(f"resumed from step {step}", flush=True)
    ddp_model = DistributedDataParallel(model)

    epoch = step // len(loader)
    while step < args.steps:
        sampler.set_epoch(epoch)
        for x, y in loader:
            loss = F.mse_loss(ddp_model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            step += 1
            trace("t_step", n=step)
            if rank == 0 and step % args.ckpt_every == 0:
                save_checkpoint(args.ckpt, model, optimizer, step)
            if rank == 0 and step % 50 == 0:
                print(f"step {step} loss {loss.item():.4f}", flush=True)
            if args.step_sleep:
                time.sleep(args.step_sleep)
            if step >= args.steps:
                break
        epoch += 1

    dist.destroy_process_group()


if __name__ == "__main__":
    main()
