#!/usr/bin/env python3
"""How fast musterd's status page tells of a lost node when the job is a real
PyTorch script: three agents (--nnodes 2:3, one worker each) run
examples/torch/ddp_in_place.py (DDP over gloo, the muster Python package's
InPlace loop, which reports steps); once /status.json shows every member
with a step rate, one agent is SIGKILLed, and /status.json is polled every
20 ms until it shows that node dead and a newer generation. The page itself
polls /status.json once a second, so a browser shows it up to 1 s later.

Prints, per repeat: the step rates the page showed before the kill, and the
time from the kill to the node dead and to the new generation.

Usage: scripts/bench/status_page_torch.py [--repeat K] [--bin-dir build/bin]
Needs Debian's torch (/usr/bin/python3) and a built muster.
"""
import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "scripts", "lib"))
from testlib.ports import bound_port, free_port  # noqa: E402


def status(port):
    return json.loads(urllib.request.urlopen(f"http://127.0.0.1:{port}/status.json",
                                             timeout=5).read())


def one_run(bin_dir, work):
    http = free_port()
    started = []
    try:
        daemon = subprocess.Popen([os.path.join(bin_dir, "musterd"), "--host", "127.0.0.1",
                                   "--port", "0", "--metrics-port", str(http)],
                                  stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                                  start_new_session=True)
        started.append(daemon)
        port = bound_port(daemon.stdout.readline())
        env = dict(os.environ, MUSTER_PYTHON="/usr/bin/python3",
                   PYTHONPATH=os.path.join(ROOT, "python"))
        for i in range(3):
            started.append(subprocess.Popen(
                [os.path.join(bin_dir, "muster"), "--nnodes", "2:3", "--nproc-per-node", "1",
                 "--rdzv-backend", "c10d", "--rdzv-endpoint", f"127.0.0.1:{port}",
                 "--rdzv-id", "torchjob", "--rdzv-conf", "last_call_timeout=1",
                 "--local-addr", "127.0.0.1",
                 os.path.join(ROOT, "examples", "torch", "ddp_in_place.py"), "--steps", "100000",
                 "--sleep", "0.02", "--log", os.path.join(work, f"steps{i}.log")],
                env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                start_new_session=True))
        deadline = time.monotonic() + 120
        while True:
            if time.monotonic() > deadline:
                raise RuntimeError("the job never showed three members with step rates")
            run = next(iter(status(http)["runs"]), None)
            rows = run["nodes"]["rows"] if run else []
            members = [r for r in rows if r["state"] in ("member", "straggler")]
            if len(members) == 3 and all("steps_per_second" in r for r in members):
                break
            time.sleep(0.2)
        rates = sorted(r["steps_per_second"] for r in members)
        generation = run["generation"]
        victim = started[3]
        victim_node = next(r["node_id"] for r in members
                           if r["node_id"].split(":")[1] == str(victim.pid))
        killed = time.monotonic()
        os.killpg(victim.pid, signal.SIGKILL)
        dead_at = new_gen_at = None
        while time.monotonic() - killed < 30 and (dead_at is None or new_gen_at is None):
            run = status(http)["runs"][0]
            now = time.monotonic()
            if dead_at is None and any(r["node_id"] == victim_node and r["state"] == "dead"
                                       for r in run["nodes"]["rows"]):
                dead_at = now
            if new_gen_at is None and run["generation"] > generation:
                new_gen_at = now
            time.sleep(0.02)
        if dead_at is None or new_gen_at is None:
            raise RuntimeError("the page never showed the node dead and a new generation")
        return rates, dead_at - killed, new_gen_at - killed
    finally:
        for proc in started:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            proc.wait()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--bin-dir", default=os.path.join(ROOT, "build", "bin"))
    args = parser.parse_args()
    dead, gen = [], []
    print("| run | steps/s shown before the kill | kill → node dead | kill → new generation |")
    print("|---:|---|---:|---:|")
    for i in range(args.repeat):
        with tempfile.TemporaryDirectory() as work:
            rates, to_dead, to_gen = one_run(args.bin_dir, work)
        dead.append(to_dead)
        gen.append(to_gen)
        print(f"| {i + 1} | {', '.join(f'{r:.1f}' for r in rates)} | {to_dead * 1000:.0f} ms "
              f"| {to_gen * 1000:.0f} ms |", flush=True)
    print(f"median: node dead after {statistics.median(dead) * 1000:.0f} ms, new generation "
          f"after {statistics.median(gen) * 1000:.0f} ms (the page polls every 1 s on top); "
          f"load average {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
