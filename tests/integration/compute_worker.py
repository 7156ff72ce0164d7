"""A worker that reports, as the warm worker's step hooks do, a step and its own
compute time per step on muster's progress pipe (MUSTER_PROGRESS_FD):
"STEP COMPUTE_US" every DELAY seconds for DURATION seconds, then exits 0.

    compute_worker.py DELAY DURATION COMPUTE_US [SLOW_RANK]

The rank whose RANK is SLOW_RANK reports twice COMPUTE_US: a slow rank in
lock-step training, whose step rate is everybody's.
"""
import os
import sys
import time

delay, duration, compute_us = float(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3])
slow_rank = int(sys.argv[4]) if len(sys.argv) > 4 else -1
if int(os.environ["RANK"]) == slow_rank:
    compute_us *= 2
fd = int(os.environ["MUSTER_PROGRESS_FD"])
end = time.monotonic() + duration
step = 0
while time.monotonic() < end:
    time.sleep(delay)
    step += 1
    os.write(fd, f"{step} {compute_us}\n".encode())
