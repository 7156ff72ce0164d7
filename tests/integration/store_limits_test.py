"""The worker store's bounds hold against a client that floods it.

A --standalone job whose one worker (workers/store_use.py --flood) SETs
64 KiB values on one connection, 256 MiB in all, against an agent started
with --store-max-bytes 16M. Checked: the flooding connection is closed once
the limit would be passed, with a warning naming the client's address and the
limit; the agent's resident memory (VmRSS, sampled every 20 ms) stays
bounded; the job's own clients keep working afterwards (a new connection
SETs and GETs a key); the job exits 0.
"""
import json
import os
import shutil
import time

from harness import MUSTER, base_env, check, run_tests, start, tempdir, test, worker
from testlib.procs import status_kib

LIMIT = 16 << 20
FLOOD = 256 << 20
# The agent's own memory (~8 MiB here) plus the stored 16 MiB plus buffers;
# without the bound the flood alone would take 256 MiB.
MAX_RSS_KIB = 48 << 10


@test
def a_flooding_client_loses_its_connection_and_the_agent_stays_bounded():
    out = tempdir()
    try:
        agent = start([MUSTER, "--standalone", "--nproc-per-node", "1", "--store-max-bytes", "16M",
                       worker("store_use.py"), out, "--flood", f"{64 << 10}:{FLOOD}", "--run",
                       "0.5"], env=base_env())
        peak = 0
        deadline = time.monotonic() + 60
        while agent.poll() is None and time.monotonic() < deadline:
            peak = max(peak, status_kib(agent.pid) or 0)
            time.sleep(0.02)
        _, err = agent.communicate(timeout=30)
        check(agent.returncode == 0, f"agent exit {agent.returncode}", err)
        with open(os.path.join(out, "g0_r0.json")) as f:
            record = json.load(f)
        check(record.get("store_ok"), f"the worker reached the store: {record.get('store_error')}",
              err)
        check(record["flood_closed"], "the store closed the flooding connection", err)
        stored = record["flood_sets"] * (64 << 10)
        check(0 < stored <= LIMIT, f"SETs answered before the close: {record['flood_sets']}")
        check(record.get("after_flood", {}).get("get") == "still here",
              f"a new connection works after the flood: {record.get('after_flood_error')}", err)
        refused = [line for line in err.splitlines() if "store size limit reached" in line]
        check(len(refused) == 1, "one warning for the flooding connection", err)
        check("peer=127.0.0.1:" in refused[0] and f"max_bytes={LIMIT}" in refused[0] and
              "--store-max-bytes" in refused[0], f"the warning names client and limit: {refused}")
        print(f"agent peak VmRSS {peak} KiB while a client tried to store {FLOOD >> 20} MiB "
              f"(limit {LIMIT >> 20} MiB)", flush=True)
        check(0 < peak < MAX_RSS_KIB, f"agent peak VmRSS {peak} KiB (bound {MAX_RSS_KIB} KiB)")
    finally:
        shutil.rmtree(out, ignore_errors=True)


if __name__ == "__main__":
    run_tests()
