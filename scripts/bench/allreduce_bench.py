"""Allreduce benchmark: the runtime's Gloo allreduce (allreduce_bench_worker)
versus torch.distributed's gloo allreduce (allreduce_torch_worker.py), float32
sum, W ranks on loopback, the same sizes, warm-ups and iterations: this
script decides the counts per size (warmups_for, iters_for) and passes them
to both workers.

Bus bandwidth = size / median time * 2(W-1)/W (the bytes each rank's link
carries in an optimal allreduce), in GB/s (1e9 bytes). Each side runs
ROUNDS times, alternating muster and torch so that load from other processes
on the machine falls on both; per size the best of the rounds' medians counts.

Usage: /usr/bin/python3 allreduce_bench.py --build-dir DIR [--worlds 2,4]
         [--sizes BYTES,...] [--rounds 3] [--out-dir DIR]
Prints one table per world size and writes OUT_DIR/allreduce.csv and
OUT_DIR/allreduce.png (gnuplot when installed, else a built-in PNG writer).
Exit 1 when muster is below 1.0x torch at any size >= 1 MB, 2 on a run error.
"""
import argparse
import datetime
import os
import re
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from testlib.torch_refs import PYTHON  # noqa: E402  (Debian's interpreter, the one with torch)

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_SIZES = [1024 * 4 ** k for k in range(10)]  # 1 KB .. 256 MB
TARGET_FROM_BYTES = 1 << 20
RESULT = re.compile(r"size=(\d+) median_s=([0-9.e+-]+)")


def warmups_for(size):
    # Fewer repetitions for big messages keep the whole run within minutes.
    return 1 if size >= 64 << 20 else 2 if size >= 1 << 20 else 5


def iters_for(size):
    return 3 if size >= 64 << 20 else 5 if size >= 1 << 20 else 20


def schedule(sizes):
    """The workers' SIZES WARMUPS ITERS arguments: comma lists, one entry per size."""
    return [",".join(str(f(size)) for size in sizes) for f in (int, warmups_for, iters_for)]


def store_server(world):
    """A torch TCPStore server in this process (bound to a free port by the
    kernel, kept open) for the workers' rendezvous; returns it (use .port)."""
    import torch.distributed as dist
    return dist.TCPStore("127.0.0.1", 0, world, True, timeout=datetime.timedelta(seconds=60),
                         wait_for_workers=False)


def run_ranks(command, world, port, timeout, extra_env=None):
    """Runs W ranks; returns rank 0's {size: median seconds}. Kills all on failure."""
    procs = []
    try:
        for rank in range(world):
            env = dict(os.environ, RANK=str(rank), WORLD_SIZE=str(world), LOCAL_RANK=str(rank),
                       LOCAL_WORLD_SIZE=str(world), MASTER_ADDR="127.0.0.1",
                       MASTER_PORT=str(port), OMP_NUM_THREADS="1", **(extra_env or {}))
            procs.append(subprocess.Popen(command, env=env, stdout=subprocess.PIPE,
                                          stderr=subprocess.PIPE, text=True,
                                          start_new_session=True))
        outputs = [p.communicate(timeout=timeout) for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                os.killpg(p.pid, 9)
                p.wait()
    for rank, (p, (out, err)) in enumerate(zip(procs, outputs)):
        if p.returncode != 0:
            raise RuntimeError(f"{command[0]} rank {rank} exited {p.returncode}:\n{out}\n{err}")
    return {int(m.group(1)): float(m.group(2)) for m in RESULT.finditer(outputs[0][0])}


def run_muster(build_dir, world, sizes):
    store = store_server(world)
    worker = os.path.join(build_dir, "bin", "allreduce_bench_worker")
    return run_ranks([worker, "gloo"] + schedule(sizes), world, store.port, 240)


def run_torch(world, sizes):
    # As under torchrun's agent: every rank is a client of the store this
    # process hosts, so no port is picked, closed and handed on.
    store = store_server(world)
    script = os.path.join(HERE, "allreduce_torch_worker.py")
    agent_env = {"TORCHELASTIC_USE_AGENT_STORE": "True", "TORCHELASTIC_RESTART_COUNT": "0"}
    return run_ranks([PYTHON, script] + schedule(sizes), world, store.port, 240, agent_env)


def bus_gbps(size, seconds, world):
    return size / seconds * 2 * (world - 1) / world / 1e9


def human(size):
    for unit, scale in (("MB", 1 << 20), ("KB", 1 << 10)):
        if size >= scale:
            return f"{size // scale} {unit}"
    return f"{size} B"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--build-dir", required=True)
    parser.add_argument("--worlds", default="2,4")
    parser.add_argument("--sizes", default=",".join(map(str, DEFAULT_SIZES)))
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out-dir", default=".")
    args = parser.parse_args()
    worlds = [int(w) for w in args.worlds.split(",")]
    sizes = [int(s) for s in args.sizes.split(",")]
    os.makedirs(args.out_dir, exist_ok=True)

    rows = []  # (world, size, muster GB/s, torch GB/s)
    missed = []
    for world in worlds:
        started = time.monotonic()
        muster, torch_times = {}, {}
        for _ in range(args.rounds):
            for best, result in ((muster, run_muster(args.build_dir, world, sizes)),
                                 (torch_times, run_torch(world, sizes))):
                for size, seconds in result.items():
                    best[size] = min(best.get(size, seconds), seconds)
        print(f"\nworld={world} float32 sum allreduce, bus bandwidth GB/s, best of "
              f"{args.rounds} round medians ({time.monotonic() - started:.0f}s)")
        print(f"{'size':>8} {'muster':>9} {'torch':>9} {'ratio':>7}")
        for size in sizes:
            m = bus_gbps(size, muster[size], world)
            t = bus_gbps(size, torch_times[size], world)
            ratio = m / t
            flag = ""
            if size >= TARGET_FROM_BYTES and ratio < 1.0:
                missed.append((world, size, ratio))
                flag = "  < 1.0x target"
            print(f"{human(size):>8} {m:9.3f} {t:9.3f} {ratio:6.2f}x{flag}", flush=True)
            rows.append((world, size, m, t))

    csv_path = os.path.join(args.out_dir, "allreduce.csv")
    with open(csv_path, "w") as f:
        f.write("world,size_bytes,muster_busbw_gbps,torch_busbw_gbps,ratio\n")
        for world, size, m, t in rows:
            f.write(f"{world},{size},{m:.6f},{t:.6f},{m / t:.4f}\n")
    png_path = os.path.join(args.out_dir, "allreduce.png")
    how = write_plot(rows, worlds, png_path, args.out_dir)
    print(f"\nwrote {csv_path}\nwrote {png_path} ({how})")
    if missed:
        print("TARGET MISSED (>= 1.0x torch at every size >= 1 MB): " +
              ", ".join(f"W={w} {human(s)} {r:.2f}x" for w, s, r in missed))
        return 1
    print("target met: muster >= 1.0x torch at every size >= 1 MB")
    return 0


def write_plot(rows, worlds, png_path, out_dir):
    if shutil.which("gnuplot"):
        data = os.path.join(out_dir, "allreduce.dat")
        with open(data, "w") as f:
            for world in worlds:
                for w, size, m, t in rows:
                    if w == world:
                        f.write(f"{size} {m} {t}\n")
                f.write("\n\n")
        plots = []
        for i, world in enumerate(worlds):
            plots.append(f"'{data}' index {i} using 1:2 with linespoints title 'muster W={world}'")
            plots.append(f"'{data}' index {i} using 1:3 with linespoints dt 2 "
                         f"title 'torch W={world}'")
        script = (f"set terminal png size 900,600; set output '{png_path}'; set logscale x 2; "
                  "set xlabel 'message size (bytes)'; set ylabel 'bus bandwidth (GB/s)'; "
                  "set title 'allreduce float32 sum, loopback'; set key left top; "
                  "plot " + ", ".join(plots))
        subprocess.run(["gnuplot", "-e", script], check=True)
        return "gnuplot"
    from allreduce_png import plot_lines
    series = []
    for world in worlds:
        points = [(size, m, t) for w, size, m, t in rows if w == world]
        series.append((f"muster W={world}", [(s, m) for s, m, _ in points], True))
        series.append((f"torch W={world}", [(s, t) for s, _, t in points], False))
    plot_lines(png_path, series)
    return "built-in PNG writer: gnuplot is not installed"


if __name__ == "__main__":
    try:
        sys.exit(main())
    except (RuntimeError, subprocess.TimeoutExpired) as error:
        print(f"benchmark run failed: {error}", file=sys.stderr)
        sys.exit(2)
