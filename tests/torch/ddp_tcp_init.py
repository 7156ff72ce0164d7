"""init_process_group with an explicit init_method="tcp://MASTER_ADDR:MASTER_PORT",
rank and world size, as scripts written before env:// do. Under an agent
that hosts the store (TORCHELASTIC_USE_AGENT_STORE=True), torch connects to
that store instead of binding the port itself. Rank 0 prints
"TCP_INIT_RESULT {"world_size": W, "sum": S}" after an all_reduce."""
import json
import os

import torch
import torch.distributed as dist


def main():
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    url = f"tcp://{os.environ['MASTER_ADDR']}:{os.environ['MASTER_PORT']}"
    dist.init_process_group("gloo", init_method=url, rank=rank, world_size=world)
    t = torch.tensor([float(rank + 1)])
    dist.all_reduce(t)
    dist.barrier()
    if rank == 0:
        print("TCP_INIT_RESULT " + json.dumps({"world_size": world, "sum": float(t)}), flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
