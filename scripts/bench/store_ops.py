#!/usr/bin/env python3
"""Request throughput and latency of the worker store, two builds alternated.

    scripts/bench/store_ops.py OLD_STORE_SERVER_MAIN NEW_STORE_SERVER_MAIN [--rounds 5]

Each binary is a tests/store_server_main of one build. A round starts one
server of each, in turn, and drives it with CLIENTS processes, each on its
own connection doing what torch's clients do most: a blocking round trip at
a time (SET of a small value, then GET of it), for SECONDS. Reported per
binary: requests per second (median over rounds, all clients together) and
the median round-trip time. The ratio new/old is what to read: the machine
is noisy, hence alternated rounds on the same machine.

Phases: client process start-up is excluded (clients wait on a barrier
before timing); what remains is the server's accept-free steady state.

Then, once per binary, the memory of idle connections: IDLE connections
that each sent a VALIDATE and a PING and read the answer; reported as the
server's resident (VmRSS) and virtual (VmSize) growth per connection.

With --multi-get, last, once per binary: one client stores a 64 MiB key
and another sends one MULTI_GET naming it 65,536 times (a 4 TiB reply);
reported: whether the server closed that connection, and its peak resident
size (VmHWM) within 15 s, after which it is killed.
"""
import argparse
import multiprocessing
import os
import socket
import statistics
import struct
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests",
                                "integration"))
from store_wire import s  # noqa: E402 - the tests' TCPStore encoders

MAGIC = 0x3C85F7CE
CLIENTS = 16
SECONDS = 3.0
IDLE = 2000


def recv_exact(sock, n):
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            raise ConnectionError("closed")
        data += chunk
    return data


def client(port, index, start, results):
    sock = socket.create_connection(("127.0.0.1", port))
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.sendall(struct.pack("<BI", 0, MAGIC))
    key = f"/bench/{index}".encode()
    set_request = struct.pack("<B", 1) + s(key) + s(b"v" * 64)
    get_request = struct.pack("<B", 3) + s(key)
    start.wait()
    ops = 0
    latencies = []
    deadline = time.monotonic() + SECONDS
    while time.monotonic() < deadline:
        t0 = time.perf_counter()
        sock.sendall(set_request + get_request)
        recv_exact(sock, 8 + 64)
        latencies.append(time.perf_counter() - t0)
        ops += 2
    sock.close()
    results.put((ops, statistics.median(latencies)))


def measure(binary):
    server = subprocess.Popen([binary], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL)
    try:
        port = int(server.stdout.readline().decode().strip().split("=")[1])
        start = multiprocessing.Barrier(CLIENTS + 1)
        results = multiprocessing.Queue()
        procs = [multiprocessing.Process(target=client, args=(port, i, start, results))
                 for i in range(CLIENTS)]
        for p in procs:
            p.start()
        start.wait()
        got = [results.get(timeout=SECONDS + 30) for _ in procs]
        for p in procs:
            p.join()
        ops = sum(g[0] for g in got)
        return ops / SECONDS, statistics.median(g[1] for g in got)
    finally:
        server.kill()
        server.wait()


def status_kib(pid, field):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def idle_memory(binary):
    """(resident KiB, virtual KiB) the server grows by per idle connection."""
    server = subprocess.Popen([binary], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL)
    socks = []
    try:
        port = int(server.stdout.readline().decode().strip().split("=")[1])
        before = {f: status_kib(server.pid, f) for f in ("VmRSS", "VmSize")}
        for i in range(IDLE):
            sock = socket.create_connection(("127.0.0.1", port))
            sock.sendall(struct.pack("<BI", 0, MAGIC) + struct.pack("<BI", 13, i))
            socks.append(sock)
        for sock in socks:
            recv_exact(sock, 4)
        time.sleep(0.3)
        return tuple((status_kib(server.pid, f) - before[f]) / IDLE for f in ("VmRSS", "VmSize"))
    finally:
        for sock in socks:
            sock.close()
        server.kill()
        server.wait()


def multi_get_attack(binary, seconds=15.0):
    """(closed: bool, peak VmHWM MiB) for the 4 TiB MULTI_GET."""
    server = subprocess.Popen([binary], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL)
    try:
        port = int(server.stdout.readline().decode().strip().split("=")[1])
        writer = socket.create_connection(("127.0.0.1", port))
        writer.sendall(struct.pack("<BI", 0, MAGIC) + struct.pack("<B", 1) + s(b"/big") +
                       struct.pack("<Q", 64 << 20))
        for _ in range(64):
            writer.sendall(b"v" * (1 << 20))
        writer.sendall(struct.pack("<BQ", 5, 1) + s(b"/big"))
        recv_exact(writer, 1)
        asker = socket.create_connection(("127.0.0.1", port))
        asker.sendall(struct.pack("<BI", 0, MAGIC) + struct.pack("<BQ", 10, 65536) +
                      s(b"/big") * 65536)
        asker.settimeout(0.05)
        closed = False
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline and server.poll() is None and not closed:
            try:
                closed = asker.recv(1 << 16) == b""
            except socket.timeout:
                pass
            except ConnectionError:
                closed = True
        return closed, status_kib(server.pid, "VmHWM") / 1024 if server.poll() is None else None
    finally:
        server.kill()
        server.wait()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("old")
    parser.add_argument("new")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--multi-get", action="store_true")
    args = parser.parse_args()
    runs = {"old": [], "new": []}
    for r in range(args.rounds):
        order = ["old", "new"] if r % 2 == 0 else ["new", "old"]
        for name in order:
            rate, rtt = measure(getattr(args, name))
            runs[name].append((rate, rtt))
            print(f"round {r + 1} {name}: {rate:,.0f} requests/s, round trip {rtt * 1e6:.0f} us",
                  flush=True)
    summary = {}
    for name, values in runs.items():
        summary[name] = (statistics.median(v[0] for v in values),
                         statistics.median(v[1] for v in values))
        print(f"{name}: median {summary[name][0]:,.0f} requests/s, "
              f"round trip {summary[name][1] * 1e6:.0f} us ({os.path.basename(getattr(args, name))})")
    print(f"new/old: throughput {summary['new'][0] / summary['old'][0]:.3f}, "
          f"round trip {summary['new'][1] / summary['old'][1]:.3f}")
    for name in ("old", "new"):
        resident, virtual = idle_memory(getattr(args, name))
        print(f"{name}: {IDLE} idle connections: +{resident:.1f} KiB resident, "
              f"+{virtual:.1f} KiB virtual per connection")
    if args.multi_get:
        for name in ("old", "new"):
            closed, peak = multi_get_attack(getattr(args, name))
            print(f"{name}: MULTI_GET of 4 TiB: connection {'closed' if closed else 'open'}, "
                  f"peak resident {peak:.0f} MiB" if peak is not None else
                  f"{name}: MULTI_GET of 4 TiB: the server died")


if __name__ == "__main__":
    sys.exit(main())
