"""A scriptable worker for supervision tests.

usage: behave.py ACTION [ARG] [--pid-dir DIR]
  exit-on-rank R CODE     rank R exits CODE after a moment, others sleep
  segv-on-rank R          rank R dies of SIGSEGV, others sleep
  sleep SECONDS           sleep, print TERM <rank> to stdout when SIGTERM arrives, exit 0 then
  ignore-term SECONDS     sleep and ignore SIGTERM
  fail-until N CODE       exit CODE while TORCHELASTIC_RESTART_COUNT < N, else exit 0
  error-file R            rank R writes a torch-style error file and exits 1
  print N                 print N lines on stdout and on stderr, then exit 0
  hang-on-rank R STEPS    every rank reports STEPS steps of progress (MUSTER_PROGRESS_FD),
                          10 per second; then rank R stops reporting and sleeps, while the
                          others go on reporting; from the second attempt on, all exit 0
"""
import ctypes
import json
import os
import signal
import sys
import time

rank = int(os.environ["RANK"])
args = sys.argv[1:]
if "--pid-dir" in args:
    i = args.index("--pid-dir")
    # Written whole, then renamed: a reader never sees an empty pid file.
    tmp = os.path.join(args[i + 1], f".{rank}.pid.tmp")
    with open(tmp, "w") as f:
        f.write(str(os.getpid()))
    os.rename(tmp, os.path.join(args[i + 1], f"{rank}.pid"))
    del args[i:i + 2]
action = args[0]


def on_term(signum, frame):
    print(f"TERM {rank}", flush=True)
    sys.exit(0)


if action == "exit-on-rank":
    if rank == int(args[1]):
        time.sleep(0.2)
        sys.exit(int(args[2]))
    time.sleep(60)
elif action == "segv-on-rank":
    if rank == int(args[1]):
        time.sleep(0.2)
        ctypes.string_at(0)
    time.sleep(60)
elif action == "sleep":
    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGINT, on_term)
    print(f"READY {rank}", flush=True)
    time.sleep(float(args[1]))
elif action == "ignore-term":
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    print(f"READY {rank}", flush=True)
    time.sleep(float(args[1]))
elif action == "fail-until":
    attempt = int(os.environ["TORCHELASTIC_RESTART_COUNT"])
    print(f"ATTEMPT {attempt} RANK {rank}", flush=True)
    if attempt < int(args[1]):
        time.sleep(0.5)  # let every peer print before the failure stops them
        sys.exit(int(args[2]))
elif action == "error-file":
    if rank == int(args[1]):
        with open(os.environ["TORCHELASTIC_ERROR_FILE"], "w") as f:
            json.dump({"message": {"message": "ValueError: bad batch size 0",
                                   "extraInfo": {"py_callstack": "...", "timestamp": "0"}}}, f)
        sys.exit(1)
    time.sleep(60)
elif action == "print":
    for i in range(int(args[1])):
        print(f"out {rank} {i}", flush=True)
        print(f"err {rank} {i}", file=sys.stderr, flush=True)
elif action == "hang-on-rank":
    progress = int(os.environ["MUSTER_PROGRESS_FD"])
    attempt = int(os.environ["TORCHELASTIC_RESTART_COUNT"])
    print(f"ATTEMPT {attempt} RANK {rank}", flush=True)
    if attempt > 0:
        sys.exit(0)
    step = 0
    while True:
        if step < int(args[2]) or rank != int(args[1]):
            step += 1
            os.write(progress, f"{step}\n".encode())
        time.sleep(0.1)
else:
    sys.exit(f"unknown action {action}")
