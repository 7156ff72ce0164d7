"""Re-forming a communicator in place: interrupt, shrink, new communicator.

usage: comm_reform.py [--runs N] [--world W] [--backend gloo|nccl] [--torch 1.13|none]
                      [--bin-dir DIR]

Each run starts W ranks of the tests' runtime_comm_worker in its `reform`
scenario (tests/integration/runtime_comm_worker.cc) on a store server
(store_server_main), both from --bin-dir (default build/tests). The last
rank SIGSTOPs itself before an allreduce; 300 ms later each survivor calls
Interrupt() on its communicator, as a pause in place does, and times:

  interrupt  Interrupt() -> the blocked allreduce has thrown
  shrink     Shrink() without the stopped rank (NCCL >= 2.27 only); "refused"
             when a survivor's Shrink() failed cleanly (every survivor then
             drops its child and only creates anew), with NCCL's reason
  create     a new communicator of the W-1 survivors under a new store prefix

and checks every collective on each re-formed communicator. The figure of a
run is the slowest survivor's (the next step waits for it). With --backend
nccl the ranks share the GPUs they see (NCCL_HOSTID per rank, sockets).

Reference (--torch 1.13, the host's torch): W-1 processes that have imported
torch and met at a store time dist.init_process_group("gloo") — what a
restart pays for its process group, before imports and data loading.

Prints a table of medians (min-max) over --runs (default 10).
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from testlib.ports import free_port  # noqa: E402
from testlib.torch_refs import PYTHON  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

TORCH_INIT = r'''
import datetime, os, sys, time
import torch.distributed as dist
rank, world, port = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
store = dist.TCPStore("127.0.0.1", port, world, rank == 0, datetime.timedelta(seconds=60))
store.add("imported", 1)
while int(store.add("imported", 0)) < world:
    time.sleep(0.001)
t = time.monotonic()
dist.init_process_group("gloo", store=dist.PrefixStore("pg", store), rank=rank, world_size=world)
ms = (time.monotonic() - t) * 1000
dist.barrier()
print(f"init_ms={ms:.1f}", flush=True)
dist.destroy_process_group()
'''


def start_store(bin_dir):
    proc = subprocess.Popen([os.path.join(bin_dir, "store_server_main")], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    line = proc.stdout.readline().strip()
    if not line.startswith("port="):
        proc.kill()
        sys.exit(f"comm_reform: the store server printed {line!r}, not port=N")
    return proc, int(line[len("port="):])


def reform_run(args):
    """One run: {"interrupt": ms, "shrink": ms, None or "refused <why>", "create": ms},
    slowest survivor's."""
    store, port = start_store(args.bin_dir)
    victim = args.world - 1
    procs = []
    try:
        for rank in range(args.world):
            env = dict(os.environ, RANK=str(rank), WORLD_SIZE=str(args.world),
                       LOCAL_RANK=str(rank), LOCAL_WORLD_SIZE=str(args.world),
                       MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
            if args.backend == "nccl":
                env.update(NCCL_HOSTID=f"muster-bench-{rank}", NCCL_NET="Socket")
            procs.append(subprocess.Popen(
                [os.path.join(args.bin_dir, "runtime_comm_worker"), args.backend, "reform",
                 "30000", str(victim)], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                text=True))
        times = {"interrupt": [], "shrink": [], "create": []}
        for rank, proc in enumerate(procs[:victim]):
            out, err = proc.communicate(timeout=120)
            if proc.returncode != 0 or "reform rank=" not in out:
                sys.exit(f"comm_reform: rank {rank} exited {proc.returncode}:\n{out}{err}")
            fields = dict(f.split("=") for f in out.split("reform ", 1)[1].split()[1:])
            for key in times:
                value = fields[f"{key}_ms"]
                if value == "refused":
                    why = err.split("shrink refused by ", 1)[-1].splitlines()[0] if err else "?"
                    value = f"refused by {why}"
                times[key].append(None if value == "none" else
                                  value if value.startswith("refused") else float(value))
        refused = [v for v in times["shrink"] if isinstance(v, str)]
        if refused:
            return {"interrupt": max(times["interrupt"]), "shrink": refused[0],
                    "create": max(times["create"])}
        return {k: (None if None in v else max(v)) for k, v in times.items()}
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        store.stdin.close()
        store.kill()
        store.wait()


def torch_run(world):
    """The slowest rank's init_process_group("gloo") time at `world` ranks, in ms."""
    port = free_port()
    procs = [subprocess.Popen([PYTHON, "-c", TORCH_INIT, str(r), str(world), str(port)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              cwd=tempfile.gettempdir())
             for r in range(world)]
    result = []
    try:
        for rank, proc in enumerate(procs):
            out, err = proc.communicate(timeout=120)
            if proc.returncode != 0 or "init_ms=" not in out:
                sys.exit(f"comm_reform: torch rank {rank} exited {proc.returncode}:\n{out}{err}")
            result.append(float(out.split("init_ms=")[1].split()[0]))
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    return max(result)


def summary(values):
    refused = [v for v in values if isinstance(v, str)]
    if refused:
        return f"refused in {len(refused)} of {len(values)} runs ({refused[0]})"
    if not values or None in values:
        return "—"
    return f"{statistics.median(values):.1f} ms ({min(values):.1f}–{max(values):.1f})"


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--runs", type=int, default=10)
    p.add_argument("--world", type=int, default=3)
    p.add_argument("--backend", choices=["gloo", "nccl"], default="gloo")
    p.add_argument("--torch", choices=["1.13", "none"], default="1.13")
    p.add_argument("--bin-dir", default=os.path.join(ROOT, "build", "tests"))
    args = p.parse_args()
    if args.runs < 1:
        p.error(f"--runs {args.runs}: must be at least 1")
    if args.world < 2:
        p.error(f"--world {args.world}: must be at least 2 (one rank is lost)")
    for name in ("store_server_main", "runtime_comm_worker"):
        if not os.access(os.path.join(args.bin_dir, name), os.X_OK):
            p.error(f"--bin-dir {args.bin_dir}: no {name} (build the tests first)")

    print(f"comm_reform: {args.world} ranks, {args.backend}, rank {args.world - 1} stopped, "
          f"{args.runs} runs", flush=True)
    runs = {"interrupt": [], "shrink": [], "create": []}
    reference = []
    for i in range(args.runs):
        got = reform_run(args)
        for key in runs:
            runs[key].append(got[key])
        if args.torch != "none":
            reference.append(torch_run(args.world - 1))
        print(f"  run {i + 1}: " + " ".join(
            f"{k}={'none' if v is None else v if isinstance(v, str) else f'{v:.1f}'}"
            for k, v in got.items()) +
            (f" torch_init={reference[-1]:.1f}" if reference else ""), flush=True)

    print()
    print(f"| step ({args.backend}, {args.world} -> {args.world - 1} ranks) | median (min–max) |")
    print("|---|---|")
    print(f"| interrupt -> the blocked allreduce throws | {summary(runs['interrupt'])} |")
    print(f"| shrink (ncclCommShrink) | {summary(runs['shrink'])} |")
    print(f"| new communicator | {summary(runs['create'])} |")
    if reference:
        ratio = statistics.median(runs["create"]) / statistics.median(reference)
        print(f"| torch 1.13 init_process_group(\"gloo\") | {summary(reference)}; "
              f"new communicator / torch = {ratio:.2f}x |")


if __name__ == "__main__":
    main()
