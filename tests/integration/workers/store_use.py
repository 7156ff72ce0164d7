"""Worker for the store admission and limit tests: uses the worker store at
MASTER_ADDR:MASTER_PORT through the TCPStore wire protocol (torch >= 2.2's
dialect: VALIDATE, then queries), with nothing but sockets.

usage: store_use.py OUTDIR [--run SECONDS] [--flood VALUE_BYTES:TOTAL_BYTES]

Writes OUTDIR/g<gen>_r<rank>.json (gen = TORCHELASTIC_RESTART_COUNT) with its
pid, its agent's pid, its start time, "store_ok" (a PING answered and an ADD
of "members" done) or "store_error", and its environment.

--flood: then SETs distinct keys of VALUE_BYTES each on one connection, up to
TOTAL_BYTES in all, a PING after every 64 SETs, until the store closes the
connection; records "flood_sets" (SETs answered by a later PING) and
"flood_closed". Then, on a new connection, SETs and GETs one key and counts
the keys ("after_flood": {"get": value, "num_keys": n}). With --flood the
worker then waits --run seconds (default 0) and exits 0; otherwise it runs
--run seconds (default: until SIGTERM).
"""
import json
import os
import signal
import socket
import struct
import sys
import time

MAGIC = 0x3C85F7CE
VALIDATE, SET, GET, ADD, GETNUMKEYS, PING = 0, 1, 3, 4, 7, 13


def s(b):
    if isinstance(b, str):
        b = b.encode()
    return struct.pack("<Q", len(b)) + b


def recv_exact(sock, n):
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            raise ConnectionError("closed by the store")
        data += chunk
    return data


def connect():
    sock = socket.create_connection((os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"])),
                                    timeout=10)
    sock.sendall(struct.pack("<BI", VALIDATE, MAGIC))
    return sock


def ping(sock, nonce):
    sock.sendall(struct.pack("<BI", PING, nonce))
    if recv_exact(sock, 4) != struct.pack("<I", nonce):
        raise ConnectionError("PING answered with another nonce")


def add(sock, key, delta):
    sock.sendall(struct.pack("<B", ADD) + s(key) + struct.pack("<q", delta))
    return struct.unpack("<q", recv_exact(sock, 8))[0]


def flood(value_bytes, total_bytes):
    sock = connect()
    value = b"x" * value_bytes
    sets = answered = 0
    closed = False
    try:
        while sets * value_bytes < total_bytes:
            batch = b"".join(struct.pack("<B", SET) + s(f"flood/{sets + i}") + s(value)
                             for i in range(64))
            sock.sendall(batch)
            ping(sock, sets & 0xFFFFFFFF)
            sets += 64
            answered = sets
    except (ConnectionError, OSError):
        closed = True
    finally:
        sock.close()
    return answered, closed


def main():
    out_dir = sys.argv[1]
    args = sys.argv[2:]
    run_seconds = float(args[args.index("--run") + 1]) if "--run" in args else None
    gen = int(os.environ["TORCHELASTIC_RESTART_COUNT"])
    rank = int(os.environ["RANK"])
    record = {"gen": gen, "rank": rank, "pid": os.getpid(), "ppid": os.getppid(),
              "start": time.time(), "env": dict(os.environ)}
    try:
        with connect() as sock:
            ping(sock, 7)
            add(sock, "members", 1)
            record["store_ok"] = True
            record["store_conn"] = [sock.getsockname()[0], sock.getpeername()[0]]
    except (ConnectionError, OSError) as e:
        record["store_error"] = repr(e)
    if "--flood" in args:
        value_bytes, total_bytes = (int(x) for x in args[args.index("--flood") + 1].split(":"))
        record["flood_sets"], record["flood_closed"] = flood(value_bytes, total_bytes)
        try:
            with connect() as sock:
                sock.sendall(struct.pack("<B", SET) + s("after") + s("still here"))
                sock.sendall(struct.pack("<B", GET) + s("after"))
                length = struct.unpack("<Q", recv_exact(sock, 8))[0]
                got = recv_exact(sock, length).decode()
                sock.sendall(struct.pack("<B", GETNUMKEYS))
                num_keys = struct.unpack("<q", recv_exact(sock, 8))[0]
                record["after_flood"] = {"get": got, "num_keys": num_keys}
        except (ConnectionError, OSError) as e:
            record["after_flood_error"] = repr(e)
    tmp = os.path.join(out_dir, f".g{gen}_r{rank}.tmp")
    with open(tmp, "w") as f:
        json.dump(record, f)
    os.rename(tmp, os.path.join(out_dir, f"g{gen}_r{rank}.json"))
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    if "--flood" in args:
        time.sleep(run_seconds or 0)
    else:
        time.sleep(3600 if run_seconds is None else run_seconds)


main()
