"""One rank of the allreduce benchmark's reference: torch.distributed's gloo
allreduce (float32 sum), timed exactly as allreduce_bench_worker.cc times the
runtime's (barrier before each timed call); allreduce_bench.py passes both the
same warm-up and iteration counts.

Usage: /usr/bin/python3 allreduce_torch_worker.py SIZES_BYTES WARMUPS ITERS
  (comma lists, one entry per size)
Env: RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT (init_method env://; with
TORCHELASTIC_USE_AGENT_STORE=True every rank is a client of the store there,
else rank 0 hosts it). Rank 0 prints "size=BYTES median_s=S min_s=S iters=N".
"""
import sys
import time

import torch
import torch.distributed as dist


def main():
    sizes, warmups, iters = ([int(v) for v in arg.split(",")] for arg in sys.argv[1:4])
    if not len(sizes) == len(warmups) == len(iters):
        sys.exit(f"{len(sizes)} sizes but {len(warmups)} warm-up and {len(iters)} iteration counts")
    dist.init_process_group("gloo", init_method="env://")
    rank = dist.get_rank()
    for size, warmup_count, iter_count in zip(sizes, warmups, iters):
        data = torch.ones(size // 4, dtype=torch.float32)
        for _ in range(warmup_count):
            dist.all_reduce(data)
        seconds = []
        for _ in range(iter_count):
            dist.barrier()
            start = time.perf_counter()
            dist.all_reduce(data)
            seconds.append(time.perf_counter() - start)
        seconds.sort()
        if rank == 0:
            print(f"size={size} median_s={seconds[len(seconds) // 2]} min_s={seconds[0]} "
                  f"iters={len(seconds)}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    torch.set_num_threads(1)
    main()
