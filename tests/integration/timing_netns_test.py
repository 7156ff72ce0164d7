"""One timing for the whole run: an agent started with a longer heartbeat_timeout than
musterd's still stops its workers before the daemon gives its place away.

Three hosts in network namespaces (netns_harness.py) and musterd with its default
timing (heartbeat_timeout 1.25 s); host 3's agent is started with
heartbeat_timeout=10, so by its own --rdzv-conf it would fence only after 8 s. Its
workers run, then its link is cut (silently: no RST). Workers
(workers/generation_ticks.py) write a line every 20 ms with the shared monotonic
clock. Checked: the cut host's last line of the old generation precedes the first
line of the survivors' new generation (two generations never run at once), its agent
logged that it adopted the daemon's timing, naming both values, and it fenced.

Needs root (namespaces, veths, a bridge); otherwise the test is skipped.
"""
import os
import shutil
import signal
import sys
import time

from elastic_harness import MUSTERD, agent_args
from harness import Skip, check, pid_alive, run_tests, tempdir, test, wait_for, worker
from netns_harness import DAEMON_ADDR, Hosts, host_addr, remove_stale_hosts

TICKS = worker("generation_ticks.py")
VICTIM = 3


def ticks(out_dir):
    """Every line the workers wrote: (kind, gen, rank, pid, ppid, t)."""
    lines = []
    for name in os.listdir(out_dir):
        if not name.startswith("ticks-"):
            continue
        with open(os.path.join(out_dir, name)) as f:
            for line in f:
                parts = line.split()
                if len(parts) == 6 and line.endswith("\n"):
                    kind, gen, rank, pid, ppid, t = parts
                    lines.append((kind, int(gen), int(rank), int(pid), int(ppid), float(t)))
    return lines


def generation_workers(out_dir, gen):
    """{pid: ppid} of the workers that started in generation `gen`."""
    return {pid: ppid for kind, g, _, pid, ppid, _ in ticks(out_dir) if kind == "start" and g == gen}


@test
def an_agent_with_a_longer_heartbeat_timeout_fences_before_the_survivors_new_generation():
    if os.geteuid() != 0:
        raise Skip("needs root to create network namespaces, veths and a bridge "
                   f"(running as uid {os.geteuid()})")
    remove_stale_hosts()
    out = tempdir()
    with Hosts(3) as hosts:
        daemon, port = hosts.start_musterd(MUSTERD)
        agents = {}
        for i in (1, 2, 3):
            conf = "heartbeat_timeout=10" if i == VICTIM else ""
            # agent_args() ends with its worker script and OUTDIR: this test's worker instead.
            args = agent_args(f"{DAEMON_ADDR}:{port}", host_addr(i), out, nnodes="2:3", nproc=1,
                              run_id="timingjob", conf=conf)[:-2] + [TICKS, out]
            agents[i] = hosts.spawn(f"{hosts.prefix}-h{i}", args, f"agent-h{i}")

        def logs():
            return "\n".join(f"{p.log_name}:\n{hosts.log(p)}" for p in [daemon, *agents.values()])

        # A generation of all three hosts, every worker ticking.
        found = {}

        def all_three_tick():
            for gen in {g for _, g, *_ in ticks(out)}:
                workers = generation_workers(out, gen)
                if len(workers) == 3 and {ppid for ppid in workers.values()} == {
                        a.pid for a in agents.values()}:
                    found["gen"] = gen
                    return True
            return False

        check(wait_for(all_three_tick, 20), "no generation of three hosts", logs())
        gen = found["gen"]
        victim_pids = [pid for pid, ppid in generation_workers(out, gen).items()
                       if ppid == agents[VICTIM].pid]
        check(len(victim_pids) == 1, f"the cut host's workers: {victim_pids}", logs())
        # The victim's worker has been ticking: the cut comes while it trains.
        time.sleep(0.2)
        cut_at = time.monotonic()
        hosts.link(VICTIM, "down")

        # The survivors' new generation (two workers), and when its first worker started.
        def survivors_started():
            for g in {g for _, g, *_ in ticks(out) if g > gen}:
                if len(generation_workers(out, g)) == 2:
                    found["new"] = g
                    return True
            return False

        check(wait_for(survivors_started, 15), "the survivors formed no new generation", logs())
        new_gen = found["new"]
        first_new = min(t for kind, g, _, _, _, t in ticks(out) if kind == "start" and g == new_gen)
        # Lines come every 20 ms while a worker lives: a late one shows within 0.3 s.
        time.sleep(0.3)
        victim_last = max(t for _, g, _, pid, _, t in ticks(out) if pid in victim_pids)
        print(f"cut -> cut host's last old-generation line: {victim_last - cut_at:.3f}s; "
              f"cut -> survivors' generation {new_gen} first line: {first_new - cut_at:.3f}s",
              flush=True)
        check(victim_last < first_new,
              f"two generations at once: the cut host's worker of generation {gen} still ran "
              f"(at least) {victim_last - first_new:.3f}s into the survivors' generation {new_gen}", logs())
        check(not any(pid_alive(p) for p in victim_pids) or
              wait_for(lambda: not any(pid_alive(p) for p in victim_pids), 2),
              "the cut host's worker still runs", logs())
        victim_log = hosts.log(agents[VICTIM])
        check("event=fence" in victim_log, "the cut host's agent logged no fence", victim_log)
        check("event=rdzv_timing_adopted" in victim_log and
              "heartbeat_timeout=1.25s(own=10s)" in victim_log,
              "the cut host's agent did not say it adopted the daemon's timing, naming both values",
              victim_log)
        check(daemon.poll() is None, "musterd died", hosts.log(daemon))
    left = hosts.leftovers()
    check(not left, f"left behind: {left}")
    shutil.rmtree(out, ignore_errors=True)
    shutil.rmtree(hosts.logs, ignore_errors=True)


if __name__ == "__main__":
    # A SIGTERM unwinds like Ctrl-C, so the teardown runs; after a SIGKILL the next run cleans up.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    run_tests()
