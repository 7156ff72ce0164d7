"""Abuse of the rendezvous daemon for the chaos suite: garbage, oversized frames, 10k connections.

usage: chaos_flood.py HOST PORT SEED [--connections N] [--hold SECONDS]

Run by chaos.py (inside a host's network namespace when the job runs in
namespaces). In order:
  1. garbage: 16 connections each send 512 seeded random bytes;
  2. oversized: frames announcing 0x7fffffff bytes and 1 MiB + 1 bytes (the limit
     is 1 MiB, rendezvous/PROTOCOL.md), a zero-length frame, and a valid Hello
     followed by an oversized frame;
  3. N (default 10000) connections opened at once and held for --hold seconds
     (RLIMIT_NOFILE is raised to its hard limit first), then closed;
  4. a well-formed Hello, which must be answered with Welcome.
Prints one JSON object: per phase what the daemon did (closed the connection,
answered an Error frame, said nothing), how many connections opened, and
whether the final Hello was welcomed. Exits 0 unless it could not run at all.
"""
import json
import random
import resource
import select
import socket
import struct
import sys
import time


def frame(kind, payload):
    body = bytes([kind]) + payload
    return struct.pack("<I", len(body)) + body


def hello():
    return frame(0x01, json.dumps({"protocol_version": 2, "token": "",
                                   "agent_id": "chaos-flood:0:0"}).encode())


# Closed with an RST (SO_LINGER 0): no TIME_WAIT left behind, which would make the
# next flood's 10k connects search for free ports for many seconds.
LINGER_0 = struct.pack("ii", 1, 0)


def connect(addr):
    s = socket.create_connection(addr, timeout=5)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, LINGER_0)
    s.setblocking(False)
    return s


def watch(socks, timeout):
    """Reads until each socket closes or timeout; returns per socket (closed, first bytes)."""
    result = {s: [False, b""] for s in socks}
    open_ = set(socks)
    deadline = time.monotonic() + timeout
    while open_ and time.monotonic() < deadline:
        ready, _, _ = select.select(list(open_), [], [], max(0.0, deadline - time.monotonic()))
        for s in ready:
            try:
                data = s.recv(65536)
            except (ConnectionResetError, BlockingIOError):
                data = b""
            if not data:
                result[s][0] = True
                open_.discard(s)
            else:
                result[s][1] += data[:200]
    return [tuple(result[s]) for s in socks]


def describe(outcomes):
    closed = sum(1 for c, _ in outcomes if c)
    errors = sum(1 for _, data in outcomes if len(data) > 4 and data[4] == 0x82)
    sample = next((data[5:].decode(errors="replace") for _, data in outcomes
                   if len(data) > 5 and data[4] == 0x82), "")
    return {"connections": len(outcomes), "closed_by_daemon": closed, "error_frames": errors,
            "error_sample": sample[:160]}


def send_all(socks, payloads):
    for s, p in zip(socks, payloads):
        s.setblocking(True)
        try:
            s.sendall(p)
        except OSError:
            pass
        s.setblocking(False)


def main():
    host, port, seed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    args = sys.argv[4:]
    n_conns = int(args[args.index("--connections") + 1]) if "--connections" in args else 10000
    hold = float(args[args.index("--hold") + 1]) if "--hold" in args else 2.0
    addr = (host, port)
    rng = random.Random(seed)
    report = {}
    t0 = time.monotonic()

    socks = [connect(addr) for _ in range(16)]
    send_all(socks, [bytes(rng.getrandbits(8) for _ in range(512)) for _ in socks])
    report["garbage"] = describe(watch(socks, 6.0))
    for s in socks:
        s.close()

    payloads = [struct.pack("<I", 0x7FFFFFFF) + b"\x01" + b"x" * 64,
                struct.pack("<I", 1048577) + b"\x01" + b"{" * 4096,
                struct.pack("<I", 0),
                hello() + struct.pack("<I", 0x40000000) + b"\x03" + b"y" * 64]
    socks = [connect(addr) for _ in payloads]
    send_all(socks, payloads)
    report["oversized"] = describe(watch(socks, 6.0))
    for s in socks:
        s.close()

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = min(hard, n_conns + 256) if hard != resource.RLIM_INFINITY else n_conns + 256
    if soft < want:
        resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
    many, failed, errors = [], 0, set()
    started = time.monotonic()
    for _ in range(n_conns):
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, LINGER_0)
        s.setblocking(False)
        try:
            s.connect_ex(addr)
            many.append(s)
        except OSError as e:
            failed += 1
            errors.add(str(e))
            s.close()
    # Wait for the connects to finish (epoll: select() cannot take fds above 1023).
    ep = select.epoll()
    by_fd = {s.fileno(): s for s in many}
    for fd in by_fd:
        ep.register(fd, select.EPOLLOUT)
    pending = set(by_fd)
    deadline = time.monotonic() + 15
    established = 0
    while pending and time.monotonic() < deadline:
        for fd, _ in ep.poll(0.5):
            if fd not in pending:
                continue
            pending.discard(fd)
            ep.unregister(fd)
            err = by_fd[fd].getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
            if err == 0:
                established += 1
            else:
                failed += 1
                errors.add(f"errno {err}")
    ep.close()
    opened_in = time.monotonic() - started
    time.sleep(hold)
    for s in many:
        s.close()
    report["connections"] = {"asked": n_conns, "established": established, "failed": failed,
                             "pending": len(pending), "errors": sorted(errors)[:5],
                             "open_seconds": round(opened_in, 3), "held_seconds": hold}

    welcome = False
    try:
        s = socket.create_connection(addr, timeout=5)
        s.sendall(hello())
        data = b""
        while len(data) < 5:
            chunk = s.recv(4096)
            if not chunk:
                break
            data += chunk
        welcome = len(data) >= 5 and data[4] == 0x81
        s.close()
    except OSError as e:
        report["hello_error"] = str(e)
    report["welcomed_after"] = welcome
    report["seconds"] = round(time.monotonic() - t0, 3)
    print(json.dumps(report), flush=True)


if __name__ == "__main__":
    main()
