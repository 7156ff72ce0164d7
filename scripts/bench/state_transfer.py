"""Bringing a newcomer up: the time to move a model's parameters and its
optimizer's state from a running rank to a new one, against the physical
limit here, one bare gloo operation of the same bytes between the same two
processes. Alternated, in the same processes, per size.

    /usr/bin/python3 scripts/bench/state_transfer.py [--sizes-mb 256,1024,2048] [--repeats 3]

Paths (each timed from both ranks entering it to both leaving it):
- `broadcast`: muster.InPlace's agreement (state_sync.agree_on_state): the
  module's tensors broadcast one by one, the optimizer's state as a JSON
  header and buckets of tensors;
- `p2p`: muster.ShardedInPlace's transfer (shard_image: capture, header,
  segments point to point, install into the newcomer's model and optimizer);
- `bare broadcast` / `bare send`: one dist.broadcast / dist.send of a flat
  tensor of the same bytes, allocated and touched before the clock starts;
- `bare broadcast new`: the same broadcast into a buffer allocated inside
  the timing (its pages first touched by the receive, as a newcomer's new
  optimizer state is).

The model is one square Linear (SGD with momentum: the optimizer's state
is as large as the parameters), SIZE MB in all. The newcomer's peak
resident memory during each path is sampled every millisecond and
reported above what it held before
(its own model, plus the optimizer state once it has one).

Prints one line per path and repetition, then per size the medians and
the ratio to the bare operation.
"""
import argparse
import datetime
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))


def vm_kib(field):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


class PeakSampler:
    """The largest VmRSS seen every millisecond while it runs (VmHWM cannot be
    reset reliably, and a freed buffer's pages leave it high)."""

    def __init__(self):
        import threading
        self.peak = vm_kib("VmRSS")
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self):
        while not self._stop.wait(0.001):
            self.peak = max(self.peak, vm_kib("VmRSS"))

    def stop(self):
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, vm_kib("VmRSS"))
        return self.peak


def model_of(size_mb, torch):
    # parameters = size/2 (the other half is momentum)
    side = int(math.sqrt(size_mb * (1 << 20) / 2 / 4))
    torch.manual_seed(0)
    model = torch.nn.Linear(side, side, bias=False)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    return model, optimizer


def worker(rank, store_path, sizes, repeats):
    import torch
    import torch.distributed as dist

    from muster import shard_image
    from muster.state_sync import agree_on_state

    store = dist.FileStore(store_path, 2)
    dist.init_process_group("gloo", store=store, rank=rank, world_size=2,
                            timeout=datetime.timedelta(seconds=600))
    cpu = torch.device("cpu")
    for size_mb in sizes:
        for repeat in range(repeats):
            order = ["broadcast", "bare broadcast", "p2p", "bare send", "bare broadcast new"]
            if repeat % 2:
                order.reverse()
            for path in order:
                model, optimizer = model_of(size_mb, torch)
                if rank == 0:  # the running rank: one step done, momentum present
                    model(torch.ones(1, model.in_features)).sum().backward()
                    optimizer.step()
                nbytes = sum(p.numel() * 4 for p in model.parameters()) * 2
                flat = torch.zeros(nbytes, dtype=torch.uint8) if path in ("bare broadcast",
                                                                          "bare send") else None
                dist.barrier()
                before = vm_kib("VmRSS")
                sampler = PeakSampler()
                began = time.monotonic()
                params = exchange = out = incoming = None
                if path == "broadcast":
                    agree_on_state(1 if rank == 0 else 0, model, optimizer, {}, cpu)
                elif path == "bare broadcast":
                    dist.broadcast(flat, 0)
                elif path == "bare broadcast new":  # into memory not touched before, as state is
                    flat = torch.empty(nbytes, dtype=torch.uint8)
                    dist.broadcast(flat, 0)
                elif path == "bare send":
                    (dist.send if rank == 0 else dist.recv)(flat, 1 - rank)
                else:
                    params = [p.detach() for p in model.parameters()]
                    exchange = shard_image.Exchange()
                    if rank == 0:
                        out = shard_image.Outgoing(*shard_image.capture(model, optimizer, {}))
                        for phase in ("size", "header", "segments"):
                            getattr(out, f"post_{phase}")(exchange, 1)
                            exchange.wait()
                    else:
                        incoming = shard_image.Incoming(0, params)
                        for phase in ("size", "header", "segments"):
                            getattr(incoming, f"post_{phase}")(exchange)
                            exchange.wait()
                        shard_image.install(incoming.finish(), model, optimizer, {})
                dist.barrier()
                seconds = time.monotonic() - began
                peak = sampler.stop()
                if rank == 1:
                    held = len(optimizer.state)
                    print(f"size_mb={size_mb} repeat={repeat} path=\"{path}\" s={seconds:.3f} "
                          f"gb_per_s={nbytes / seconds / 1e9:.2f} "
                          f"peak_above_before_mb={(peak - before) / 1024:.0f} "
                          f"optimizer_state_received={held > 0}", flush=True)
                # Nothing of this path outlives it (a buffer left would count in the next
                # path's starting memory).
                model = optimizer = flat = params = exchange = out = incoming = None
    dist.destroy_process_group()


def summarize(lines):
    import re
    found = {}
    for line in lines:
        fields = dict(re.findall(r'(\w+)=("[^"]*"|\S+)', line))
        if "path" not in fields:
            continue
        key = (int(fields["size_mb"]), fields["path"].strip('"'))
        found.setdefault(key, []).append((float(fields["s"]),
                                          float(fields["peak_above_before_mb"])))
    for size in sorted({k[0] for k in found}):
        med = {path: statistics.median(s for s, _ in found[(size, path)])
               for _, path in (k for k in found if k[0] == size)}
        peak = {path: max(p for _, p in found[(size, path)])
                for _, path in (k for k in found if k[0] == size)}
        gbs = size * (1 << 20) / 1e9
        print(f"== {size} MB: broadcast {med['broadcast']:.3f} s ({gbs / med['broadcast']:.2f} GB/s)"
              f" vs bare broadcast {med['bare broadcast']:.3f} s: "
              f"{med['broadcast'] / med['bare broadcast']:.2f}x; "
              f"p2p {med['p2p']:.3f} s ({gbs / med['p2p']:.2f} GB/s) vs bare send "
              f"{med['bare send']:.3f} s: {med['p2p'] / med['bare send']:.2f}x, vs bare broadcast "
              f"{med['p2p'] / med['bare broadcast']:.2f}x; bare broadcast into a new buffer "
              f"{med['bare broadcast new']:.3f} s: broadcast {med['broadcast'] / med['bare broadcast new']:.2f}x, "
              f"p2p {med['p2p'] / med['bare broadcast new']:.2f}x; newcomer's peak above its start: "
              f"broadcast {peak['broadcast']:.0f} MB, p2p {peak['p2p']:.0f} MB "
              f"(state {size} MB, its parameters {size // 2} MB of it)", flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes-mb", default="256,1024,2048")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--rank", type=int)
    parser.add_argument("--store")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes_mb.split(",")]
    if args.rank is not None:
        worker(args.rank, args.store, sizes, args.repeats)
        return
    store = os.path.join(tempfile.mkdtemp(prefix="state-transfer-"), "store")
    procs = [subprocess.Popen([sys.executable, __file__, "--sizes-mb", args.sizes_mb,
                               "--repeats", str(args.repeats), "--rank", str(r), "--store", store],
                              stdout=subprocess.PIPE, text=True) for r in (0, 1)]
    lines = []
    for line in procs[1].stdout:
        print(line, end="", flush=True)
        lines.append(line)
    codes = [p.wait() for p in procs]
    if any(codes):
        sys.exit(f"a rank failed: exit codes {codes}")
    summarize(lines)


if __name__ == "__main__":
    main()
