"""Where a launch of N x /bin/true spends its time, phase by phase, for one or
more muster binaries alternated in the same run (an earlier commit's build as
the reference), from perf's scheduler and syscall tracepoints (no ptrace, so
the timing is not distorted). Root (perf tracepoints).

    launch_phases.py [--nproc N] [--runs R] MUSTER[,MUSTER...]

Phases: process start (exec to the event loop's epoll), store + embedded
rendezvous (to the attempt directory's mkdir), worker directories and every
spawn (to the last worker's exec), per worker fork->exec and fork->next fork,
the workers' run, reaping and teardown (to the agent's exit_group). Medians.
"""
import argparse
import os
import re
import statistics
import subprocess
import tempfile

EVENTS = ("sched:sched_process_fork,sched:sched_process_exec,sched:sched_process_exit,"
          "syscalls:sys_enter_mkdir,syscalls:sys_enter_epoll_create1,syscalls:sys_enter_exit_group")
LINE = re.compile(r"\s*(\d+)/(\d+)\s+([\d.]+):\s+(\S+):\s*(.*)")


def trace(muster, nproc, data):
    subprocess.run(["perf", "record", "-q", "-o", data, "-e", EVENTS, "--", muster, "--standalone",
                    "--nproc-per-node", str(nproc), "--no-python", "/bin/true"],
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    out = subprocess.run(["perf", "script", "-i", data, "-F", "pid,tid,time,event,trace"],
                         capture_output=True, text=True, check=True).stdout
    return [(int(m[1]), int(m[2]), float(m[3]), m[4], m[5])
            for m in map(LINE.match, out.splitlines()) if m]


def phases(events, nproc):
    agent, t0 = events[0][0], events[0][2]

    def ms(t):
        return (t - t0) * 1000

    own = [e for e in events if e[0] == agent]
    epoll = next(e[2] for e in own if e[3].endswith("epoll_create1") and e[1] == agent)
    mkdirs = [e[2] for e in own if e[3].endswith("sys_enter_mkdir")]
    # The agent thread's last nproc forks are the workers (earlier ones: threads).
    forks = [e[2] for e in own
             if e[3].endswith("sched_process_fork") and "child_pid" in e[4] and e[1] == agent][-nproc:]
    execs = sorted(e[2] for e in events if e[0] != agent and e[3].endswith("sched_process_exec"))
    exits = [e[2] for e in events if e[0] != agent and e[3].endswith("sched_process_exit")]
    end = [e[2] for e in own if e[3].endswith("sys_enter_exit_group")][-1]
    return {
        "process start (exec -> event loop)": ms(epoll),
        "store + embedded rendezvous (-> attempt dir)": ms(mkdirs[1]) - ms(epoll),
        "worker dirs + spawn all (-> last exec)": ms(max(execs)) - ms(mkdirs[1]),
        "  fork -> exec, per worker": statistics.mean(x - f for f, x in zip(forks, execs)) * 1000,
        "  fork -> next fork, per worker":
            statistics.mean(b - a for a, b in zip(forks, forks[1:])) * 1000 if nproc > 1 else 0.0,
        "last exec -> last worker exit": ms(max(exits)) - ms(max(execs)),
        "reap + teardown (-> agent exit)": ms(end) - ms(max(exits)),
        "total": ms(end),
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("muster", help="muster binaries, comma-separated")
    parser.add_argument("--nproc", type=int, default=4)
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    binaries = args.muster.split(",")
    results = {b: [] for b in binaries}
    with tempfile.TemporaryDirectory() as tmp:
        data = os.path.join(tmp, "perf.data")
        for b in binaries:  # warm the page cache
            trace(b, args.nproc, data)
        for _ in range(args.runs):
            for b in binaries:  # alternated, so drift hits all equally
                results[b].append(phases(trace(b, args.nproc, data), args.nproc))
    print(f"{args.nproc} x /bin/true, medians of {args.runs} alternated runs (ms)")
    print()
    print("| phase | " + " | ".join(binaries) + " |")
    print("|---|" + "---|" * len(binaries))
    for key in results[binaries[0]][0]:
        cells = [f"{statistics.median(r[key] for r in results[b]):.2f}" for b in binaries]
        print(f"| {key} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
