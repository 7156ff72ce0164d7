"""A torch worker as a launcher starts it: env:// init against the agent's
store (TORCHELASTIC_USE_AGENT_STORE=True), gloo, then a few collectives.
Prints one line: rank=R world=W sum=S bcast=B attempt=A."""
import datetime
import os

import torch
import torch.distributed as dist

dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=60))
rank, world = dist.get_rank(), dist.get_world_size()
t = torch.tensor([float(rank + 1)])
dist.all_reduce(t)
b = torch.tensor([42.0 + int(os.environ["TORCHELASTIC_RESTART_COUNT"]) if rank == 0 else -1.0])
dist.broadcast(b, 0)
dist.barrier()
print(f"rank={rank} world={world} sum={t.item():g} bcast={b.item():g} "
      f"attempt={os.environ['TORCHELASTIC_RESTART_COUNT']}", flush=True)
dist.destroy_process_group()
