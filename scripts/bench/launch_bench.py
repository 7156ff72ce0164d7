"""Launch overhead: muster vs Debian's torchrun 1.13 and 2.14 starting N no-op workers.

Runs the launchers alternately, `--runs` times each, with
`--nproc-per-node N --no-python /bin/true` (torchrun with
`--monitor_interval 0.1`, as modern torchrun defaults to). Reports the median
wall time from exec to exit, and the peak RSS of the largest process in each
launcher's tree (wait4's ru_maxrss), then the ratios, as a Markdown table.

torchrun 1.13 is this host's (/usr/bin/python3 torchrun_compat.py). torchrun
2.14 is Debian sid's, in the chroot --torch-chroot (scripts/torch_chroots.sh):
the benchmark enters a private mount namespace once, makes the bind mounts
tests/torch/chroot_python.sh makes (source tree, /tmp, /dev, /proc), and starts
torchrun each run as `chroot DIR /usr/bin/python3 tests/torch/no_libuv.py
torchrun_compat.py ...`: the same program chroot_python.sh
would run, without paying the wrapper's unshare and mounts every run. That
wrapper's own cost is measured beside it and printed below the table
(`chroot_python.sh -V` vs `chroot DIR /usr/bin/python3 -V`: the interpreter
prints its version and exits, so the difference is the wrapper alone).
torchrun 2.14 gets `--local-addr 127.0.0.1`: this namespace keeps the chroot's
own /etc/hosts, which does not name this host, and its agent would retry
resolving it for minutes.
The 2.14 column needs root (unshare, mount, chroot).

Exit status 1 when a target is missed: muster >= 50x faster than every
torchrun measured, muster peak RSS <= 16 MiB.
"""
import argparse
import ctypes
import os
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from testlib.torch_refs import (CHROOT_PYTHON, COMPAT, NO_LIBUV, ROOT, add_reference_args,
                                chroot_unavailable_reason, selected_versions)


def run(cmd, env=None):
    proc = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
    if proc.returncode != 0:
        sys.exit(f"{cmd} failed with {proc.returncode}: {proc.stderr[-2000:]}")
    return proc.stderr


def measure(cmd, env=None):
    """(wall seconds, peak RSS MiB) of one launch.

    Wall time is taken around a plain run. Peak RSS comes from a second run
    under GNU time (%M: the largest RSS in the launcher's process tree): a
    child forked by this Python script would otherwise be charged the Python
    interpreter's own memory until it execs.
    """
    start = time.perf_counter()
    run(cmd, env)
    elapsed = time.perf_counter() - start
    rss_kib = int(run(["/usr/bin/time", "-f", "%M"] + cmd, env).strip().splitlines()[-1])
    return elapsed, rss_kib / 1024.0


def wall(cmd, env=None):
    start = time.perf_counter()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, check=True)
    return time.perf_counter() - start


def enter_chroot_namespace(chroot):
    """Moves this process into a private mount namespace with chroot_python.sh's bind mounts.

    The mounts vanish with this process and its children; nothing outside sees them.
    """
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.unshare(0x00020000) != 0:  # CLONE_NEWNS
        err = ctypes.get_errno()
        raise OSError(err, f"unshare(CLONE_NEWNS): {os.strerror(err)}")
    subprocess.run(["mount", "--make-rprivate", "/"], check=True)
    for source, how in ((ROOT, "--bind"), ("/tmp", "--bind"), ("/dev", "--rbind")):
        os.makedirs(chroot + source, exist_ok=True)
        subprocess.run(["mount", how, source, chroot + source], check=True)
    os.makedirs(os.path.join(chroot, "proc"), exist_ok=True)
    subprocess.run(["mount", "-t", "proc", "proc", os.path.join(chroot, "proc")], check=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog=__doc__.split("\n\n", 1)[1])
    parser.add_argument("--runs", type=int, default=7, help="alternated runs per launcher (default 7)")
    parser.add_argument("--nproc", type=int, default=4, help="workers per launch (default 4)")
    parser.add_argument("--muster", default=os.path.join(ROOT, "build", "bin", "muster"))
    parser.add_argument("--baseline", default="",
                        help="another muster binary (an earlier commit's) measured alternately "
                             "in the same run, as the reference for muster's own path")
    parser.add_argument("--python", default="/usr/bin/python3", help="the interpreter with torch 1.13")
    add_reference_args(parser)
    args = parser.parse_args()
    versions = selected_versions(parser, args)

    # torch 1.13's torchrun knows only the underscore spellings; muster and 2.14 take both.
    common = ["--nproc_per_node", str(args.nproc), "--no_python", "/bin/true"]
    flags = ["--standalone", "--monitor_interval", "0.1"]
    launchers = {"muster": ([args.muster, "--standalone"] + common, None)}
    labels = {"muster": "muster"}
    if args.baseline:
        launchers["baseline"] = ([args.baseline, "--standalone"] + common, None)
        labels["baseline"] = f"muster baseline ({args.baseline})"
    not_measured = {}
    overhead_cmds = None
    if "1.13" in versions:
        launchers["1.13"] = ([args.python, COMPAT] + flags + common, None)
        labels["1.13"] = "torchrun (torch 1.13, --monitor_interval 0.1)"
    if "2.14" in versions:
        chroot = args.torch_chroot
        reason = chroot_unavailable_reason(chroot)
        if reason is None:
            enter_chroot_namespace(chroot)
            launchers["2.14"] = (["chroot", chroot, "/usr/bin/python3", NO_LIBUV, COMPAT] + flags
                                 + ["--local-addr", "127.0.0.1"] + common, None)
            labels["2.14"] = "torchrun (torch 2.14, --monitor_interval 0.1, plain chroot)"
            overhead_cmds = ([CHROOT_PYTHON, "-V"], ["chroot", chroot, "/usr/bin/python3", "-V"],
                             dict(os.environ, MUSTER_TORCH_CHROOT=chroot))
        else:
            not_measured["2.14"] = reason

    samples = {name: [] for name in launchers}
    overhead = {"wrapper": [], "plain": []}
    for cmd, env in launchers.values():  # warm the page cache for all
        measure(cmd, env)
    for _ in range(args.runs):
        for name, (cmd, env) in launchers.items():  # alternate, so drift hits all equally
            samples[name].append(measure(cmd, env))
        if overhead_cmds:
            wrapper, plain, env = overhead_cmds
            overhead["wrapper"].append(wall(wrapper, env))
            overhead["plain"].append(wall(plain))

    def med(name, i):
        return statistics.median(s[i] for s in samples[name])

    m_time, m_rss = med("muster", 0), med("muster", 1)
    print(f"launch of {args.nproc} x /bin/true, {args.runs} alternated runs each, medians")
    print()
    print("| launcher | wall time | peak RSS |")
    print("|---|---|---|")
    for name in launchers:
        print(f"| {labels[name]} | {med(name, 0) * 1000:.1f} ms | {med(name, 1):.1f} MiB |")
    for v in versions:
        if v in not_measured:
            print(f"| torchrun (torch {v}) | not measured: {not_measured[v]} | |")
    if args.baseline:
        print(f"| ratio baseline / muster | {med('baseline', 0) / m_time:.2f}x "
              f"| {med('baseline', 1) / m_rss:.2f}x |")
    for v in versions:
        if v in launchers:
            print(f"| ratio torchrun {v} / muster | {med(v, 0) / m_time:.0f}x faster "
                  f"| {med(v, 1) / m_rss:.0f}x smaller |")
    if overhead_cmds:
        w, p = statistics.median(overhead["wrapper"]), statistics.median(overhead["plain"])
        print()
        print(f"chroot wrapper overhead (not in the table; medians of {args.runs}): "
              f"tests/torch/chroot_python.sh -V {w * 1000:.1f} ms, chroot DIR /usr/bin/python3 -V "
              f"{p * 1000:.1f} ms: +{(w - p) * 1000:.1f} ms per start through the wrapper")
    ratios = [med(v, 0) / m_time for v in versions if v in launchers]
    met = all(r >= 50 for r in ratios) and m_rss <= 16
    print()
    print(f"targets (>= 50x faster than each torchrun, muster RSS <= 16 MiB): {'met' if met else 'MISSED'}")
    sys.exit(0 if met else 1)


if __name__ == "__main__":
    main()
