"""What torch's init_process_group stores in the agent's worker store, per rank.

usage: store_footprint.py [--world-sizes 2,4,8,16] [--torch 1.13,2.6,2.14]
                          [--torch-chroots DIR] [--two-nodes] [--json FILE]

For each torch version and world size N, a real job under muster: N workers
of scripts/bench/store_footprint_worker.py (gloo, init_process_group from the
environment, as an ordinary script) on one node (--standalone); with
--two-nodes also 2 agents x N/2 workers, static (--nnodes 2 --master-addr
127.0.0.1), for the largest N. Each rank records every key it wrote through
a wrapper under torch's PrefixStores and the value length the server holds;
rank 0 adds the server's key count (GETNUMKEYS) and, on torch 2.10+, its key
list. The union over ranks is the store's content after init.

Counted per key: 1 + len(key) + len(value). torch's client sends "/" + key,
so the server holds that byte; keys it writes on its own connection (the
"init/" worker counter: a 5-byte key, the decimal count as value) are the
difference between GETNUMKEYS and the union, counted as such and checked
against the list where torch has one.

Then per version a fit: keys(N) = a N + b, and bytes(N) = p N (N - 1) +
r N + c (gloo's full mesh has each rank write one address per peer: the
quadratic term), the figures at 100,000 ranks, and the largest world whose
gloo full mesh fits 1 GiB and 4 GiB.

torch 1.13 is Debian's (/usr/bin/python3); 2.6 and 2.14 run in the chroots
of scripts/torch_chroots.sh (DIR/trixie, DIR/sid) through
tests/torch/chroot_python.sh (root).
"""
import argparse
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MUSTER = os.path.join(ROOT, "build", "bin", "muster")
WORKER = os.path.join(ROOT, "scripts", "bench", "store_footprint_worker.py")
CHROOT_PYTHON = os.path.join(ROOT, "tests", "torch", "chroot_python.sh")
CHROOT_OF = {"2.6": "trixie", "2.14": "sid"}
INIT_KEY_BYTES = len("init/")


def launch_env(version, chroots):
    env = dict(os.environ, MUSTER_LOG_LEVEL="warning")
    if version == "1.13":
        env["MUSTER_PYTHON"] = "/usr/bin/python3"
    else:
        env["MUSTER_PYTHON"] = CHROOT_PYTHON
        env["MUSTER_TORCH_CHROOT"] = os.path.join(chroots, CHROOT_OF[version])
    return env


def run_job(version, world, nodes, chroots, out_dir):
    env = launch_env(version, chroots)
    per_node = world // nodes
    if nodes == 1:
        # 16 interpreters importing torch on a loaded 2-core machine can starve
        # the embedded rendezvous past its 1 s fence: this measures the store,
        # so the rendezvous is given time.
        cmds = [[MUSTER, "--standalone", "--rdzv-conf", "heartbeat_timeout=20",
                 "--nproc-per-node", str(per_node), WORKER, out_dir]]
    else:
        port = free_port()
        cmds = [
            [MUSTER, "--nnodes", str(nodes), "--node-rank", str(i), "--master-addr", "127.0.0.1",
             "--master-port", str(port), "--nproc-per-node", str(per_node), WORKER, out_dir]
            for i in range(nodes)
        ]
    procs = [subprocess.Popen(c, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              text=True) for c in cmds]
    outputs = []
    for p in procs:
        try:
            out, _ = p.communicate(timeout=600)
        except subprocess.TimeoutExpired:
            p.kill()
            out, _ = p.communicate()
        outputs.append(out)
    if any(p.returncode != 0 for p in procs):
        tail = "\n".join(o[-3000:] for o in outputs)
        sys.exit(f"store_footprint: torch {version} N={world} nodes={nodes} failed:\n{tail}")
    records = [json.load(open(f)) for f in glob.glob(os.path.join(out_dir, "rank_*.json"))]
    if len(records) != world:
        sys.exit(f"store_footprint: {len(records)} of {world} ranks reported")
    return records


def free_port():
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def footprint(records):
    """The store's content after init, from every rank's writes."""
    value_bytes = {}
    for r in records:
        for key, size in r["value_bytes"].items():
            value_bytes[key] = max(size, value_bytes.get(key, 0))
    rank0 = next(r for r in records if r["rank"] == 0)
    world = rank0["world_size"]
    server_keys = rank0["server_num_keys"]
    extra = server_keys - len(value_bytes)
    if extra < 0:
        sys.exit(f"store_footprint: the server holds {server_keys} keys, fewer than written")
    listed = rank0.get("server_keys")
    if listed is not None and sorted(listed) != sorted(value_bytes):
        sys.exit("store_footprint: the server's key list differs from the keys written: "
                 f"{sorted(set(listed) ^ set(value_bytes))[:10]}")
    key_bytes = sum(1 + len(k) for k in value_bytes)
    val_bytes = sum(value_bytes.values())
    # Each unseen key is the client's "init/" counter (N as decimal).
    extra_bytes = extra * (INIT_KEY_BYTES + len(str(world)))
    largest = max(value_bytes.items(), key=lambda kv: kv[1])
    return {
        "torch": rank0["torch"],
        "world_size": world,
        "keys": server_keys,
        "keys_written": len(value_bytes),
        "keys_unseen": extra,
        "key_bytes": key_bytes,
        "value_bytes": val_bytes,
        "bytes": key_bytes + val_bytes + extra_bytes,
        "largest_value": largest[1],
        "checked_against_list": listed is not None,
        "key_shapes": sorted({re.sub(r"\d+", "N", k) for k in value_bytes}),
    }


def fit(rows):
    """keys = a N + b; bytes = p N (N - 1) + r N + c.

    p is gloo's bytes per peer: each rank writes one value listing its N - 1
    peers, the store's largest value, whose growth with N gives p. What is
    left, once p N (N - 1) is taken away, is fitted as a line: r per rank
    (each rank's keys and the fixed part of its value) and c fixed. The keys
    name ranks in decimal, so r grows by a few bytes where ranks get more
    digits; the worst error of each fit over the measured N is reported.
    """
    n = np.array([r["world_size"] for r in rows], dtype=float)
    keys = np.array([r["keys"] for r in rows], dtype=float)
    size = np.array([r["bytes"] for r in rows], dtype=float)
    largest = np.array([r["largest_value"] for r in rows], dtype=float)
    a, b = np.polyfit(n, keys, 1)
    p, base = np.polyfit(n - 1, largest, 1)
    rest = size - p * n * (n - 1)
    r, c = np.polyfit(n, rest, 1)
    return {
        "keys_per_rank": a, "keys_fixed": b,
        "keys_fit_worst_error": float(max(abs(a * n + b - keys))),
        "bytes_per_peer": p, "largest_value_fixed": base,
        "largest_fit_worst_error": float(max(abs(p * (n - 1) + base - largest))),
        "bytes_per_rank": r, "bytes_fixed": c,
        "bytes_fit_worst_error": float(max(abs(p * n * (n - 1) + r * n + c - size))),
    }


def at(f, world):
    keys = f["keys_per_rank"] * world + f["keys_fixed"]
    mesh = f["bytes_per_peer"] * world * (world - 1)
    linear = f["bytes_per_rank"] * world + f["bytes_fixed"]
    return keys, mesh, linear


def largest_world_within(f, limit):
    world = 1
    while sum(at(f, world * 2)[1:]) <= limit:
        world *= 2
    step = world
    while step > 1:
        step //= 2
        if sum(at(f, world + step)[1:]) <= limit:
            world += step
    return world


def human(n):
    for unit, scale in (("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n:.0f} B"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--world-sizes", default="2,4,8,16")
    ap.add_argument("--torch", default="1.13,2.6,2.14")
    ap.add_argument("--torch-chroots", default="/var/cache/muster/torch-chroots")
    ap.add_argument("--two-nodes", action="store_true",
                    help="also 2 agents x N/2 workers (static) for the largest N")
    ap.add_argument("--json", help="write every row and fit to FILE")
    args = ap.parse_args()
    sizes = [int(s) for s in args.world_sizes.split(",")]
    versions = args.torch.split(",")
    for v in versions:
        if v not in ("1.13", *CHROOT_OF):
            sys.exit(f"store_footprint: --torch {v}: one of 1.13, 2.6, 2.14")
        if v != "1.13" and not os.path.exists(
                os.path.join(args.torch_chroots, CHROOT_OF[v], "usr/bin/python3")):
            sys.exit(f"store_footprint: no chroot for torch {v} under {args.torch_chroots} "
                     "(scripts/torch_chroots.sh, root)")

    result = {}
    for v in versions:
        rows, layouts = [], []
        for world in sizes:
            layouts.append((world, 1))
        if args.two_nodes:
            layouts.append((max(sizes), 2))
        for world, nodes in layouts:
            out = tempfile.mkdtemp(prefix="store_footprint.", dir="/tmp")
            os.chmod(out, 0o777)
            try:
                row = footprint(run_job(v, world, nodes, args.torch_chroots, out))
            finally:
                shutil.rmtree(out, ignore_errors=True)
            row["nodes"] = nodes
            print(f"torch {row['torch']:>14}  N={world:<3} nodes={nodes}  keys={row['keys']:<4} "
                  f"(unseen {row['keys_unseen']})  bytes={row['bytes']:<6} "
                  f"largest value={row['largest_value']}", flush=True)
            rows.append(row)
        one_node = [r for r in rows if r["nodes"] == 1]
        for r in rows:
            if r["nodes"] == 2:
                same = next(o for o in one_node if o["world_size"] == r["world_size"])
                r["same_as_one_node"] = (r["keys"], r["bytes"]) == (same["keys"], same["bytes"])
        result[v] = {"rows": rows, "fit": fit(one_node), "key_shapes": one_node[-1]["key_shapes"]}

    print()
    print("| torch | N | keys | bytes (keys + values) | largest value |")
    print("|---|---|---|---|---|")
    for v in versions:
        for r in result[v]["rows"]:
            where = "" if r["nodes"] == 1 else " (2 nodes)"
            print(f"| {v} | {r['world_size']}{where} | {r['keys']} | {r['bytes']} | "
                  f"{r['largest_value']} |")
    print()
    print("| torch | keys | bytes: gloo's address lists | bytes: the rest | "
          "at 100,000 ranks: keys | gloo's address lists | the rest |")
    print("|---|---|---|---|---|---|---|")
    for v in versions:
        f = result[v]["fit"]
        keys, mesh, linear = at(f, 100_000)
        print(f"| {v} | {f['keys_per_rank']:.2f} N + {f['keys_fixed']:.2f} | "
              f"{f['bytes_per_peer']:.1f} N (N-1) | {f['bytes_per_rank']:.1f} N + "
              f"{f['bytes_fixed']:.1f} | {keys:,.0f} | {human(mesh)} | {human(linear)} |")
    print()
    for v in versions:
        f = result[v]["fit"]
        print(f"torch {v}: worst fit errors: keys {f['keys_fit_worst_error']:.2f}, largest value "
              f"{f['largest_fit_worst_error']:.2f}, bytes {f['bytes_fit_worst_error']:.1f}; "
              f"gloo's full mesh stays under 1 GiB up to "
              f"{largest_world_within(f, 2**30):,} ranks, 4 GiB up to "
              f"{largest_world_within(f, 2**32):,}")
    print()
    for v in versions:
        print(f"torch {v} key shapes: {', '.join(result[v]['key_shapes'])}")
    for v in versions:
        for r in result[v]["rows"]:
            if "same_as_one_node" in r:
                print(f"torch {v} N={r['world_size']} on 2 nodes equals one node: "
                      f"{r['same_as_one_node']}")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(result, fh, indent=1)


if __name__ == "__main__":
    main()
