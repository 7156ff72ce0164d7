"""Initialises gloo, all-reduces, then fails on attempt 0; on attempt 1 runs ddp_gloo.py."""
import os
import runpy
import sys

import torch
import torch.distributed as dist

if int(os.environ["TORCHELASTIC_RESTART_COUNT"]) == 0:
    dist.init_process_group("gloo")
    t = torch.ones(1)
    dist.all_reduce(t)
    dist.barrier()
    sys.exit(3)

sys.argv = [os.path.join(os.path.dirname(__file__), "ddp_gloo.py"), "--epochs", "1"]
runpy.run_path(sys.argv[0], run_name="__main__")
