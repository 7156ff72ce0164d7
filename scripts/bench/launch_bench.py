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


def run(cmd):
    proc = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if proc.returncode != 0:
        sys.exit(f"{cmd} failed with {proc.returncode}: {proc.stderr[-2000:]}")
    return proc.stderr


def measure(cmd):
    """(wall seconds, peak RSS MiB) of one launch.

    Wall time is taken around a plain run. Peak RSS comes from a second run
    under GNU time (%M: the largest RSS in the launcher's process tree): a
    child forked by this Python script would otherwise be charged the Python
    interpreter's own memory until it execs.
    """
    start = time.perf_counter()
    run(cmd)
    elapsed = time.perf_counter() - start
    rss_kib = int(run(["/usr/bin/time", "-f", "%M"] + cmd).strip().splitlines()[-1])
    return elapsed, rss_kib / 1024.0


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--nproc", type=int, default=4)
    parser.add_argument("--muster", default=os.path.join(ROOT, "build", "bin", "muster"))
    parser.add_argument("--python", default="/usr/bin/python3")
    args = parser.parse_args()

    # torch 1.13's torchrun knows only the underscore spellings; muster takes both.
    common = ["--nproc_per_node", str(args.nproc), "--no_python", "/bin/true"]
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
    met = t_time / m_time >= 50 and m_rss <= 16
    print()
    print(f"targets (>= 50x faster, muster RSS <= 16 MiB): {'met' if met else 'MISSED'}")
    sys.exit(0 if met else 1)


if __name__ == "__main__":
    main()
