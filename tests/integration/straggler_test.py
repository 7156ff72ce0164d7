"""Stragglers, end to end: a real musterd, three real agents on loopback, workers
that report steps on their progress pipe (MUSTER_PROGRESS_FD) with a sleep
between steps.

- One node's workers sleep twenty times longer: musterd flags that node
  (`event=straggler` in its log, `"straggler": true` in the status document,
  "(straggler)" in `muster status`) within straggler_window of the rates
  being known, and flags no other.
- A fault-free run (the key given through musterd --config this time): no
  node is flagged, and the status shows the run's median steps per second.
- Workers that report nothing: `muster status` says "no step reports".
- muster-train's steps, and a PyTorch script's through the Python module's
  InPlace.steps(), reach musterd's status as step rates.

Every process is started through the harness and killed by PID when its test
ends, pass or fail.
"""
import json
import os
import re
import subprocess
import time
import urllib.request

from elastic_harness import start_musterd
from harness import (MUSTER, PYTHON, SOURCE_DIR, Skip, base_env, check, free_port, run_tests,
                     start, tempdir, test, wait_for, write_file)
from train_harness import TRAIN, model

WINDOW_S = 3  # straggler_window given to musterd
FAST_S = 0.05  # seconds between two steps of a healthy worker
SLOW_S = 1.0  # ... of the slow node's workers

# A worker that reports a step every `delay` seconds for `duration` seconds
# (no step at all with delay 0), then exits 0.
WORKER = """
import os, sys, time
delay, duration = float(sys.argv[1]), float(sys.argv[2])
fd = int(os.environ["MUSTER_PROGRESS_FD"])
end = time.monotonic() + duration
step = 0
while time.monotonic() < end:
    time.sleep(delay or 0.1)
    if delay:
        step += 1
        os.write(fd, f"{step}\\n".encode())
"""


def start_agents(port, out, delays, nnodes, run_id):
    """One agent per entry of `delays` (its workers' seconds between steps)."""
    worker = write_file(out, "stepping_worker.py", WORKER)
    agents = []
    for delay in delays:
        agents.append(start([MUSTER, "--nnodes", nnodes, "--nproc-per-node", "2",
                             "--rdzv-backend", "c10d", "--rdzv-endpoint", f"127.0.0.1:{port}",
                             "--rdzv-id", run_id, "--rdzv-conf", "last_call_timeout=0.5",
                             "--local-addr", "127.0.0.1", worker, str(delay), "120"],
                            env=base_env()))
    return agents


def status(port):
    """The status document's one run (None before an agent joined), and
    `muster status`'s table."""
    proc = start([MUSTER, "status", "--rdzv-endpoint", f"127.0.0.1:{port}", "--json"],
                 env=base_env())
    out, err = proc.communicate(timeout=10)
    check(proc.returncode == 0, f"muster status --json exit {proc.returncode}", err)
    doc = json.loads(out)
    check(len(doc["runs"]) <= 1, f"runs: {doc}")
    proc = start([MUSTER, "status", "--rdzv-endpoint", f"127.0.0.1:{port}"], env=base_env())
    table, err = proc.communicate(timeout=10)
    check(proc.returncode == 0, f"muster status exit {proc.returncode}", err)
    return (doc["runs"][0] if doc["runs"] else None), table


def wait_rates_known(port, nodes, timeout=30):
    """Waits until `nodes` members show a step rate; returns the run then."""
    seen = {}

    def known():
        run, _ = status(port)
        seen["run"] = run
        if run is None:
            return False
        rated = [n for n in run["nodes"] if n["state"] == "member" and "steps_per_second" in n]
        return len(rated) == nodes

    check(wait_for(known, timeout, interval=0.2), f"no step rate for {nodes} nodes",
          json.dumps(seen.get("run")))
    return seen["run"]


def node_of(run, agent):
    """The status entry of `agent`'s node (node ids are HOST:PID:RANDOM)."""
    for node in run["nodes"]:
        if node["node_id"].split(":")[1] == str(agent.pid):
            return node
    raise AssertionError(f"no node of agent {agent.pid} in {run['nodes']}")


def read(path):
    with open(path) as f:
        return f.read()


def logged_musterd(out, extra=()):
    """musterd with a metrics port, logging to OUT/musterd.log: (port, metrics
    port, log path)."""
    log_path = os.path.join(out, "musterd.log")
    with open(log_path, "w") as log:
        metrics_port = free_port()
        _, port = start_musterd(extra=list(extra) + ["--metrics-port", str(metrics_port)],
                                log=log)
    return port, metrics_port, log_path


def run_metric(metrics_port, family, run_id):
    """The value of family{run="run_id"} in musterd's /metrics; None when absent."""
    text = urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics", timeout=5).read()
    found = re.search(rf'^{family}{{run="{run_id}"}} (\S+)$', text.decode(), re.MULTILINE)
    return float(found.group(1)) if found else None


@test
def a_node_whose_workers_step_slowly_is_flagged_within_the_window_and_no_other():
    out = tempdir()
    port, metrics_port, log_path = logged_musterd(out, ["--rdzv-conf",
                                                        f"straggler_window={WINDOW_S}"])
    agents = start_agents(port, out, [FAST_S, FAST_S, SLOW_S], "3:3", "slowjob")
    slow = agents[2]
    wait_rates_known(port, 3)
    known_at = time.monotonic()

    # Judged once a second; the slow node is below half the median from its
    # first rate on, so it is flagged within the window (and a second).
    def flagged():
        return "event=straggler " in read(log_path)

    check(wait_for(flagged, WINDOW_S + 3, interval=0.1),
          f"no straggler flagged {WINDOW_S + 3}s after the rates were known", read(log_path))
    took = time.monotonic() - known_at
    check(took <= WINDOW_S + 2, f"flagged {took:.1f}s after the rates were known")

    run, table = status(port)
    slow_node = node_of(run, slow)
    lines = [line for line in read(log_path).splitlines() if "event=straggler " in line]
    check(len(lines) == 1, "one straggler line", "\n".join(lines))
    check(f"run=slowjob node={slow_node['node_id']} host={slow_node['host']} rate=" in lines[0],
          "the line names the slow node", lines[0])
    check(" median=" in lines[0], "the line gives the median", lines[0])
    check(slow_node["straggler"] is True, f"slow node not flagged in status: {slow_node}")
    check(run["stragglers"] == 1, f"stragglers: {run}")
    for agent in agents[:2]:
        node = node_of(run, agent)
        check(node["straggler"] is False, f"a healthy node is flagged: {node}")
    median = run["median_steps_per_second"]
    check(slow_node["steps_per_second"] < 0.5 * median,
          f"slow rate {slow_node['steps_per_second']} not below half the median {median}")
    check("(straggler)" in table and "1 straggler" in table, "muster status marks it", table)
    check(table.count("(straggler)") == 1, "one node marked", table)
    check(run_metric(metrics_port, "muster_run_stragglers", "slowjob") == 1, "the metric says 1")
    check(run_metric(metrics_port, "muster_run_steps_per_second", "slowjob") > 0, "no step rate")


@test
def a_fault_free_run_flags_no_straggler():
    out = tempdir()
    config = write_file(out, "musterd.json",
                        json.dumps({"rdzv_conf": {"straggler_window": WINDOW_S}}))
    port, metrics_port, log_path = logged_musterd(out, ["--config", config])
    start_agents(port, out, [FAST_S, FAST_S, FAST_S], "3:3", "evenjob")
    wait_rates_known(port, 3)
    time.sleep(WINDOW_S + 3)
    check("event=straggler" not in read(log_path), "a straggler in a fault-free run",
          read(log_path))
    run, table = status(port)
    check(run["stragglers"] == 0 and not any(n["straggler"] for n in run["nodes"]),
          f"flagged: {run}")
    median = run.get("median_steps_per_second")
    check(median is not None and median > 0, f"no median: {run}")
    check(" 0 stragglers" in table and "steps/s" in table, "muster status", table)
    check(run_metric(metrics_port, "muster_run_stragglers", "evenjob") == 0, "the metric says 0")


@test
def workers_that_report_no_steps_show_no_step_reports():
    out = tempdir()
    _, port = start_musterd(log=subprocess.DEVNULL)
    start_agents(port, out, [0, 0], "2:2", "quietjob")

    def running():
        run, _ = status(port)
        return run is not None and run["state"] == "running"

    check(wait_for(running, 20, interval=0.2), "the run did not start")
    time.sleep(2.0)  # time for reports, were there any
    run, table = status(port)
    check("median_steps_per_second" not in run, f"a median without reports: {run}")
    check(all("steps_per_second" not in n for n in run["nodes"]), f"rates: {run}")
    check("no step reports" in table, "muster status", table)


def start_job(port, run_id, command, env=None, nodes=2):
    """`nodes` agents of one worker each running `command` (argv after muster's flags)."""
    return [start([MUSTER, "--nnodes", f"{nodes}:{nodes}", "--nproc-per-node", "1",
                   "--rdzv-backend", "c10d", "--rdzv-endpoint", f"127.0.0.1:{port}", "--rdzv-id",
                   run_id, "--rdzv-conf", "last_call_timeout=0.5", "--local-addr", "127.0.0.1"]
                  + command, env=env or base_env()) for _ in range(nodes)]


@test
def muster_train_steps_reach_the_daemon():
    _, port = start_musterd(log=subprocess.DEVNULL)
    start_job(port, "trainjob", ["--no-python", TRAIN] + model() +
              ["--backend", "gloo", "--steps", "1000000", "--log-every", "100000"])
    run = wait_rates_known(port, 2, timeout=40)
    check(all(n["steps_per_second"] > 0 for n in run["nodes"]), f"rates: {run}")


@test
def python_module_steps_reach_the_daemon():
    code = subprocess.run([PYTHON, "-c", "import torch"], capture_output=True).returncode
    if code != 0:
        raise Skip(f"{PYTHON} cannot import torch")
    out = tempdir()
    _, port = start_musterd(log=subprocess.DEVNULL)
    example = os.path.join(SOURCE_DIR, "examples", "torch", "ddp_in_place.py")
    start_job(port, "torchjob", [example, "--steps", "100000", "--sleep", "0.02", "--log",
                                 os.path.join(out, "steps.log")],
              env=base_env(PYTHONPATH=os.path.join(SOURCE_DIR, "python")))
    run = wait_rates_known(port, 2, timeout=60)
    check(all(n["steps_per_second"] > 0 for n in run["nodes"]), f"rates: {run}")


COMPUTE_WORKER = os.path.join(SOURCE_DIR, "tests", "integration", "compute_worker.py")


@test
def a_rank_computing_twice_as_long_is_named_on_every_surface():
    # Two nodes of two ranks stepping together; rank 3 reports twice the
    # others' compute time per step (as the step hooks would measure it).
    # Neither node can judge alone; musterd, from the heartbeats, can.
    out = tempdir()
    port, metrics_port, log_path = logged_musterd(out)
    agents = [start([MUSTER, "--nnodes", "2", "--nproc-per-node", "2", "--rdzv-backend", "c10d",
                     "--rdzv-endpoint", f"127.0.0.1:{port}", "--rdzv-id", "computejob",
                     "--rdzv-conf", "last_call_timeout=0.5", "--local-addr", "127.0.0.1",
                     COMPUTE_WORKER, str(FAST_S), "60", "20000", "3"], env=base_env())
              for _ in range(2)]
    seen = {}

    def named():
        run, table = status(port)
        seen["run"], seen["table"] = run, table
        return run is not None and [s["rank"] for s in run.get("slow_ranks", [])] == [3]

    check(wait_for(named, 40, interval=0.5), "rank 3 never shown slow",
          json.dumps(seen.get("run")) + "\n" + read(log_path))
    run, table = seen["run"], seen["table"]
    lines = [line for line in read(log_path).splitlines() if "event=straggler " in line]
    check(len(lines) == 1 and " rank=3 " in lines[0] and " compute_ms=40.0 median_ms=20.0 " in lines[0],
          "musterd names rank 3 with its compute time and the median", "\n".join(lines))
    slow = run["slow_ranks"][0]
    check(slow["compute_ms"] == 40.0 and run["median_compute_ms"] == 20.0, "the figures",
          json.dumps(run))
    holder = [n for n in run["nodes"] if n.get("slow_ranks") == [3]]
    check(len(holder) == 1 and holder[0]["compute_ms"] == [20.0, 40.0] and holder[0]["straggler"],
          "the node holding rank 3", json.dumps(run["nodes"]))
    check(slow["node_id"] == holder[0]["node_id"], "the slow rank names its node", json.dumps(slow))
    check(0 < run["goodput"]["ratio"] <= 1, "a live goodput", json.dumps(run))
    check("slow: rank 3 on " in table and "median compute 20 ms/step" in table and "goodput" in table,
          "muster status", table)
    check(run_metric(metrics_port, "muster_run_slow_ranks", "computejob") == 1, "slow ranks metric")
    check(run_metric(metrics_port, "muster_run_compute_ms", "computejob") == 20.0, "compute metric")
    ratio = run_metric(metrics_port, "muster_run_goodput_ratio", "computejob")
    check(ratio is not None and 0 < ratio <= 1, f"goodput metric {ratio}")
    for agent in agents:
        agent.kill()


if __name__ == "__main__":
    run_tests()
