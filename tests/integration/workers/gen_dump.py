"""Worker for elastic tests: records its generation, rank and environment, then runs.

usage: gen_dump.py OUTDIR [--run SECONDS] [--fail RANK:GEN:CODE] [--net]

Writes OUTDIR/g<gen>_r<rank>.json (gen = TORCHELASTIC_RESTART_COUNT, which muster
counts per generation) with the environment, its pid, its agent's (parent's) pid,
and the pids of workers of EARLIER generations that were still alive when it started ("overlap"). Then
sleeps --run seconds (default: until SIGTERM) and exits 0, or exits CODE if --fail
matches its rank and generation: once every worker of the generation has recorded
itself (at most 10 s), so the generation a test fails is a complete one. With --net the record also holds, under
"net", its hostname, its addresses (`hostname -I`) and the two ends of a TCP
connection to MASTER_ADDR:MASTER_PORT (the store), or why that failed.
"""
import json
import os
import signal
import socket
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..",
                                "scripts", "lib"))
from testlib.procs import alive  # noqa: E402

out_dir = sys.argv[1]
args = sys.argv[2:]
run_seconds = 3600.0
fail = None
if "--run" in args:
    run_seconds = float(args[args.index("--run") + 1])
if "--fail" in args:
    fail = [int(x) for x in args[args.index("--fail") + 1].split(":")]

gen = int(os.environ["TORCHELASTIC_RESTART_COUNT"])
rank = int(os.environ["RANK"])

overlap = []
for name in os.listdir(out_dir):
    if name.startswith("g") and name.endswith(".json"):
        try:
            other_gen = int(name[1:].split("_")[0])
            with open(os.path.join(out_dir, name)) as f:
                other = json.load(f)
        except (ValueError, OSError, json.JSONDecodeError):
            continue
        if other_gen < gen and alive(other["pid"]):
            overlap.append({"gen": other_gen, "rank": other["rank"], "pid": other["pid"]})

record = {"gen": gen, "rank": rank, "pid": os.getpid(), "ppid": os.getppid(),
          "start": time.time(), "overlap": overlap, "env": dict(os.environ)}
if "--net" in args:
    net = record["net"] = {"hostname": socket.gethostname()}
    try:
        net["addrs"] = subprocess.run(["hostname", "-I"], capture_output=True, text=True,
                                      timeout=10).stdout.split()
    except Exception as e:  # noqa: BLE001 - recorded for the test to report
        net["addrs_error"] = repr(e)
    try:
        with socket.create_connection((os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"])),
                                      timeout=5) as s:
            net["store_conn"] = [s.getsockname()[0], s.getpeername()[0]]
    except Exception as e:  # noqa: BLE001
        net["store_error"] = repr(e)
tmp = os.path.join(out_dir, f".g{gen}_r{rank}.tmp")
with open(tmp, "w") as f:
    json.dump(record, f)
os.rename(tmp, os.path.join(out_dir, f"g{gen}_r{rank}.json"))

if fail and fail[0] == rank and fail[1] == gen:
    # Failing at once would let the agents stop the other workers before
    # they record themselves, and the test would see a partial generation.
    world = int(os.environ["WORLD_SIZE"])
    deadline = time.time() + 10
    while time.time() < deadline and sum(
            os.path.exists(os.path.join(out_dir, f"g{gen}_r{r}.json")) for r in range(world)) < world:
        time.sleep(0.01)
    sys.exit(fail[2])
signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
time.sleep(run_seconds)
