"""A script of the `python -m torch.distributed.launch` era, as the classic
DDP_main.py writes it: it REQUIRES a --local_rank argument (torch >= 2.0's
launch passes --local-rank, which argparse also takes here), checks it
against LOCAL_RANK, then all-reduces over gloo. Rank 0 prints
"LOCAL_RANK_ARG_RESULT {"world_size": W, "sum": S}"."""
import argparse
import json
import os

import torch
import torch.distributed as dist


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--local_rank", "--local-rank", type=int, required=True)
    args = parser.parse_args()
    if args.local_rank != int(os.environ["LOCAL_RANK"]):
        raise SystemExit(f"--local_rank={args.local_rank} but LOCAL_RANK={os.environ['LOCAL_RANK']}")
    dist.init_process_group("gloo")
    t = torch.tensor([float(dist.get_rank() + 1)])
    dist.all_reduce(t)
    if dist.get_rank() == 0:
        print("LOCAL_RANK_ARG_RESULT " + json.dumps({"world_size": dist.get_world_size(),
                                                     "sum": float(t)}), flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
