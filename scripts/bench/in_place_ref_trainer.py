"""The torchrun reference of recovery_inplace.py: DDP over gloo, muster-train's default
shape (64 features, 2 hidden layers of 256, 10 classes, global batch 256, SGD lr 0.05
momentum 0.9). Rank 0 saves model + optimizer every --checkpoint-every steps (after the
step's allreduce), every rank loads the checkpoint at start. Prints like muster-train:
"step=N loss=... accuracy=..." and "resumed from step S of N ...".

    torchrun --nproc_per_node P in_place_ref_trainer.py --steps N --checkpoint-dir DIR
             --checkpoint-every C [--step-sleep-ms MS]
"""
import argparse, os, time
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, required=True)
p.add_argument("--checkpoint-dir", required=True)
p.add_argument("--checkpoint-every", type=int, required=True)
p.add_argument("--step-sleep-ms", type=int, default=0)
p.add_argument("--features", type=int, default=64)
p.add_argument("--hidden", type=int, default=256)
p.add_argument("--depth", type=int, default=2)
p.add_argument("--classes", type=int, default=10)
p.add_argument("--global-batch", type=int, default=256)
p.add_argument("--seed", type=int, default=1)
a = p.parse_args()

dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()
torch.manual_seed(a.seed)
layers, width = [], a.features
for _ in range(a.depth):
    layers += [torch.nn.Linear(width, a.hidden), torch.nn.ReLU()]
    width = a.hidden
model = torch.nn.Sequential(*layers, torch.nn.Linear(width, a.classes))
opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
path = os.path.join(a.checkpoint_dir, "ckpt.pt")
start = 0
if os.path.exists(path):
    state = torch.load(path)
    model.load_state_dict(state["model"])
    opt.load_state_dict(state["opt"])
    start = state["step"]
    if rank == 0:
        print(f"resumed from step {start} of {a.steps} (checkpoint written at world size {world})",
              flush=True)
ddp = DistributedDataParallel(model)
teacher = torch.randn(a.features, a.classes, generator=torch.Generator().manual_seed(a.seed))
per = a.global_batch // world
for step in range(start + 1, a.steps + 1):
    x = torch.randn(a.global_batch, a.features,
                    generator=torch.Generator().manual_seed(a.seed * 1000003 + step))
    y = (x @ teacher).argmax(dim=1)
    xb, yb = x[rank * per:(rank + 1) * per], y[rank * per:(rank + 1) * per]
    out = ddp(xb)
    loss = torch.nn.functional.cross_entropy(out, yb)
    opt.zero_grad()
    loss.backward()
    opt.step()
    stats = torch.stack([loss.detach() * len(yb), (out.argmax(1) == yb).sum().float(),
                         torch.tensor(float(len(yb)))])
    dist.all_reduce(stats)
    if rank == 0:
        print(f"step={step} loss={float(stats[0] / stats[2]):.6f} "
              f"accuracy={float(stats[1] / stats[2]):.4f}", flush=True)
        if a.checkpoint_every and step % a.checkpoint_every == 0:
            torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "step": step},
                       path + ".tmp")
            os.replace(path + ".tmp", path)
    if a.step_sleep_ms:
        time.sleep(a.step_sleep_ms / 1000)
dist.destroy_process_group()
