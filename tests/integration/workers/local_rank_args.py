"""A torch.distributed.launch-era script: argparse with a REQUIRED local rank
argument (like the classic DDP_main.py), checked against LOCAL_RANK.

usage: local_rank_args.py --out DIR --expect local_rank|local-rank|none [--local_rank N]
  --expect local_rank   requires --local_rank N (torch < 2.0 spelling)
  --expect local-rank   requires --local-rank N (torch >= 2.0 spelling)
  --expect none         accepts no local rank argument (--use-env)
Exits 1 when the argument and LOCAL_RANK disagree; argparse exits 2 on a
missing or unexpected argument. Writes DIR/rank<RANK>.json with what it saw.
"""
import argparse
import json
import os
import sys

first = argparse.ArgumentParser(add_help=False)
first.add_argument("--expect", required=True, choices=["local_rank", "local-rank", "none"])
expect = first.parse_known_args()[0].expect

parser = argparse.ArgumentParser()
parser.add_argument("--out", required=True)
parser.add_argument("--expect", required=True)
if expect != "none":
    parser.add_argument("--" + expect, dest="local_rank", type=int, required=True)
args = parser.parse_args()

local_rank = getattr(args, "local_rank", None)
with open(os.path.join(args.out, f"rank{os.environ['RANK']}.json"), "w") as f:
    json.dump({"arg": local_rank, "LOCAL_RANK": os.environ["LOCAL_RANK"], "argv": sys.argv}, f)
if local_rank is not None and local_rank != int(os.environ["LOCAL_RANK"]):
    sys.exit(1)
