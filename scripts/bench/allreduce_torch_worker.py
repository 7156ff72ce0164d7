"""One rank of the allreduce benchmark's reference: torch.distributed's gloo
allreduce (float32 sum), timed exactly as allreduce_bench_worker.cc times the
runtime's (same warm-ups, iterations, barrier before each timed call).

Usage: /usr/bin/python3 allreduce_torch_worker.py SIZES_BYTES
Env: RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT (init_method env://; rank 0
hosts the TCPStore). Rank 0 prints "size=BYTES median_s=S min_s=S iters=N".
"""
import sys
import time

import torch
import torch.distributed as dist


def warmups_for(size):
    return 1 if size >= 64 << 20 else 2 if size >= 1 << 20 else 5


def iters_for(size):
    return 3 if size >= 64 << 20 else 5 if size >= 1 << 20 else 20


def main():
    sizes = [int(s) for s in sys.argv[1].split(",")]
    dist.init_process_group("gloo", init_method="env://")
    rank = dist.get_rank()
    for size in sizes:
        data = torch.ones(size // 4, dtype=torch.float32)
        for _ in range(warmups_for(size)):
            dist.all_reduce(data)
        seconds = []
        for _ in range(iters_for(size)):
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
