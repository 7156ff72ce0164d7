"""Launch overhead: muster vs Debian's torchrun starting N no-op workers.

Runs both launchers alternately, `--runs` times each, with
`--nproc-per-node N --no-python /bin/true` (torchrun with
`--monitor_interval 0.1`, as modern torchrun defaults to). Reports the median
wall time from exec to exit, and the peak RSS of the largest process in each
launcher's tree (wait4's ru_maxrss), then the ratios, as a Markdown table.
"""
import argparse
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))


def measure(cmd):
    env = dict(os.environ)
    env.pop("PET_NPROC_PER_NODE", None)
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    _, status, usage = os.wait4(proc.pid, 0)
    elapsed = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        sys.exit(f"{cmd[0]} failed with {proc.returncode}: {proc.stderr.read().decode()[-2000:]}")
    proc.stderr.close()
    return elapsed, usage.ru_maxrss / 1024.0  # MiB


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--nproc", type=int, default=4)
    parser.add_argument("--muster", default=os.path.join(ROOT, "build", "bin", "muster"))
    parser.add_argument("--python", default="/usr/bin/python3")
    args = parser.parse_args()

    common = ["--nproc-per-node", str(args.nproc), "--no-python", "/bin/true"]
    launchers = {
        "muster": [args.muster, "--standalone"] + common,
        "torchrun": [args.python, os.path.join(HERE, "torchrun_compat.py"), "--standalone",
                     "--monitor_interval", "0.1"] + common,
    }
    samples = {name: [] for name in launchers}
    measure(launchers["muster"])  # warm the page cache for both
    measure(launchers["torchrun"])
    for _ in range(args.runs):
        for name, cmd in launchers.items():  # alternate, so drift hits both equally
            samples[name].append(measure(cmd))

    def med(name, i):
        return statistics.median(s[i] for s in samples[name])

    m_time, t_time = med("muster", 0), med("torchrun", 0)
    m_rss, t_rss = med("muster", 1), med("torchrun", 1)
    print(f"launch of {args.nproc} x /bin/true, {args.runs} alternated runs each, medians")
    print()
    print("| launcher | wall time | peak RSS |")
    print("|---|---|---|")
    print(f"| muster | {m_time * 1000:.1f} ms | {m_rss:.1f} MiB |")
    print(f"| torchrun (torch 1.13, --monitor_interval 0.1) | {t_time * 1000:.1f} ms | {t_rss:.1f} MiB |")
    print(f"| ratio torchrun/muster | {t_time / m_time:.0f}x faster | {t_rss / m_rss:.0f}x smaller |")


if __name__ == "__main__":
    main()
