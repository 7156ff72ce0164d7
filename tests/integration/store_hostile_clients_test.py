"""The worker store's admission and memory bounds hold against a hostile client
on loopback (docs/security.md, "What bounds each request").

- Data-then-reset: while the store's process is stopped (SIGSTOP, as when the
  agent is busy forking), 20 clients each connect, send a SET and reset. The
  kernel queues them with their bytes, but their peer address can no longer
  be read: the store refuses them all and writes nothing.
- The connection cap: past --store-max-connections a connection is reset at
  accept and counted; the ones already open go on. When the store stops, it
  logs the total refused.
- Idle connections cost little: 2,000 of them grow the store's resident
  size by less than 4 KiB each (no read buffer of their own).
- Partial requests count against the bound on every connection's buffers
  together: the connection whose read takes them past it is closed, the
  others go on.
- Memory, against a real agent running a job: one 64 MiB key, then a
  590 KB MULTI_GET naming it 65,536 times (a 4 TiB reply), then 32
  connections that GET it and never read. The agent stays alive with a peak
  resident size (VmHWM) under 512 MiB, the MULTI_GET's connection and every
  GET past the bound are closed with a warning naming the client and the
  bound, and the job exits 0.
"""
import json
import os
import resource
import shutil
import signal
import socket
import struct
import time

from harness import MUSTER, base_env, check, start, tempdir, worker
from store_harness import (closed_by_peer, raw_connect, recv_exact, run_tests, s, u8, u32, u64,
                           with_server)
from testlib.procs import status_kib  # after store_harness: it puts scripts/lib on the path

# The idle-connections test holds 2,000 connections at each end: the servers
# started from here inherit the raised soft limit.
resource.setrlimit(resource.RLIMIT_NOFILE, (resource.getrlimit(resource.RLIMIT_NOFILE)[1],) * 2)

MAGIC = 0x3C85F7CE
VALIDATE, SET, GET, CHECK, MULTI_GET = 0, 1, 3, 5, 10
CHECK_READY = 0


def validated(port):
    sock = raw_connect(port)
    sock.sendall(u8(VALIDATE) + u32(MAGIC))
    return sock


def data_then_reset(port, key):
    """Connects, sends VALIDATE and a SET of `key`, and resets (SO_LINGER 0)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.connect(("127.0.0.1", port))
    sock.sendall(u8(VALIDATE) + u32(MAGIC) + u8(SET) + s(key) + s(b"injected"))
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    sock.close()


def present(port, key):
    sock = validated(port)
    try:
        sock.sendall(u8(CHECK) + u64(1) + s(key))
        return recv_exact(sock, 1) == bytes([CHECK_READY])
    finally:
        sock.close()


@with_server
def test_a_peer_that_resets_before_accept_writes_nothing(server):
    os.kill(server.proc.pid, signal.SIGSTOP)
    try:
        for i in range(20):
            data_then_reset(server.port, f"/injected/{i}")
    finally:
        os.kill(server.proc.pid, signal.SIGCONT)
    deadline = time.monotonic() + 5
    while server.stats()["refused"] < 20:
        check(time.monotonic() < deadline, f"20 refused: {server.stats()}", server.log())
        time.sleep(0.05)
    for i in range(20):
        check(not present(server.port, f"/injected/{i}"), f"/injected/{i} was written",
              server.log())
    check(server.stats()["keys"] == 0, f"nothing stored: {server.stats()}")
    check("event=store_refused peer=unnamed refused_total=1 " in server.log() and
          "no address to check" in server.log(), "the first refusal is a warning", server.log())


@with_server(env={"MUSTER_STORE_MAX_CONNECTIONS": "4"})
def test_a_connection_past_the_cap_is_refused_and_the_others_go_on(server):
    held = [validated(server.port) for _ in range(4)]
    try:
        server.wait_for_stats(connections=4)
        # The reset may reach the client while connect() returns, or later.
        try:
            extra = validated(server.port)
            check(closed_by_peer(extra), "the fifth connection is closed")
            extra.close()
        except ConnectionResetError:
            pass
        check(server.stats()["refused"] == 1, f"counted: {server.stats()}")
        check("connection limit reached max_connections=4 (--store-max-connections)"
              in server.log(), "a warning names the cap", server.log())
        held[0].sendall(u8(SET) + s("/k") + s("v") + u8(GET) + s("/k"))
        check(recv_exact(held[0], 9) == u64(1) + b"v", "the open connections go on")
        held.pop().close()
        server.wait_for_stats(connections=3)
        again = validated(server.port)
        again.sendall(u8(GET) + s("/k"))
        check(recv_exact(again, 9) == u64(1) + b"v", "room again once one closed")
        again.close()
    finally:
        for sock in held:
            sock.close()
    server.proc.send_signal(signal.SIGTERM)
    server.proc.wait(timeout=10)
    check("event=store_stopped " in server.log() and " refused_total=1" in server.log(),
          "the store logs the total refused when it stops", server.log())


IDLE = 2000
MAX_IDLE_KIB = 4


@with_server
def test_idle_connections_hold_no_buffer_of_their_own(server):
    before = status_kib(server.proc.pid)
    socks = []
    try:
        for i in range(IDLE):
            sock = validated(server.port)
            sock.sendall(u8(13) + u32(i))  # PING: the session has read
            socks.append(sock)
        for sock in socks:
            recv_exact(sock, 4)
        server.wait_for_stats(connections=IDLE)
        grown = (status_kib(server.proc.pid) - before) / IDLE
        print(f"{IDLE} idle connections: +{grown:.1f} KiB resident each", flush=True)
        check(grown < MAX_IDLE_KIB, f"+{grown:.1f} KiB per idle connection (bound {MAX_IDLE_KIB})")
    finally:
        for sock in socks:
            sock.close()


BUFFERED = 10 << 20


@with_server(env={"MUSTER_STORE_MAX_BUFFERED_BYTES": str(BUFFERED)})
def test_partial_requests_past_the_shared_bound_close_the_connection_that_read_them(server):
    # Each buffer has room for its 4 MiB value: 3 connections hold 12 MiB > 10 MiB.
    partial = 3 << 20
    socks = []
    try:
        reset_while_sending = False
        for i in range(3):
            sock = validated(server.port)
            socks.append(sock)
            try:
                sock.sendall(u8(SET) + s(b"/partial") + u64(4 << 20) + b"p" * partial)
            except (BrokenPipeError, ConnectionResetError):
                check(i == 2, f"connection {i + 1} was closed while it sent", server.log())
                reset_while_sending = True
        check(reset_while_sending or closed_by_peer(socks[2]), "the third connection is closed",
              server.log())
        check("store buffers over their bound" in server.log() and
              f"max_buffered_bytes={BUFFERED} (all connections)" in server.log(),
              "a warning names the bound", server.log())
        # The SET completes, then its value is read back: asked for in the same
        # write, the 4 MiB reply could be queued while the SET's 4 MiB were
        # still in the decoder, and that connection would hold 8 MiB with the
        # second's 4: past the bound, rightly closed.
        socks[0].sendall(b"p" * ((4 << 20) - partial) + u8(CHECK) + u64(1) + s(b"/partial"))
        check(recv_exact(socks[0], 1) == bytes([CHECK_READY]), "the first connection's SET completes")
        socks[0].sendall(u8(GET) + s(b"/partial"))
        check(recv_exact(socks[0], 8) == u64(4 << 20), "its value is read back")
        check(not closed_by_peer(socks[1], timeout=0.2), "the second connection stays")
    finally:
        for sock in socks:
            sock.close()


KEY = b"/big"
VALUE_BYTES = 64 << 20
MAX_HWM_KIB = 512 << 10
READERS = 32


def agent_store_port(out, agent):
    deadline = time.monotonic() + 30
    path = os.path.join(out, "g0_r0.json")
    while not os.path.exists(path):
        check(agent.poll() is None and time.monotonic() < deadline, "the worker started")
        time.sleep(0.05)
    with open(path) as f:
        return int(json.load(f)["env"]["MASTER_PORT"])


def test_a_reply_past_the_bounds_closes_its_connection_and_the_agent_lives():
    out = tempdir()
    agent = start([MUSTER, "--standalone", "--nproc-per-node", "1", worker("store_use.py"), out,
                   "--run", "8"], env=base_env())
    sockets = []
    try:
        port = agent_store_port(out, agent)
        writer = validated(port)
        writer.sendall(u8(SET) + s(KEY) + u64(VALUE_BYTES))
        chunk = b"v" * (1 << 20)
        for _ in range(VALUE_BYTES >> 20):
            writer.sendall(chunk)
        writer.sendall(u8(CHECK) + u64(1) + s(KEY))
        check(recv_exact(writer, 1, timeout=30) == bytes([CHECK_READY]), "the value is stored")

        multi = validated(port)
        multi.sendall(u8(MULTI_GET) + u64(65536) + s(KEY) * 65536)
        check(closed_by_peer(multi, timeout=20), "the MULTI_GET's connection is closed")
        multi.close()

        for _ in range(READERS):
            sock = validated(port)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            sock.sendall(u8(GET) + s(KEY))
            sockets.append(sock)
        time.sleep(1.0)
        hwm = status_kib(agent.pid, "VmHWM") or 0
        check(agent.poll() is None, f"the agent lives (exit {agent.poll()})")
        # Reading now drains the replies the bound let through, so after VmHWM.
        closed = sum(1 for sock in sockets if closed_by_peer(sock, timeout=0.2))
        _, err = agent.communicate(timeout=60)
        check(agent.returncode == 0, f"the job exits 0, got {agent.returncode}", err)
        print(f"agent VmHWM {hwm >> 10} MiB with a {VALUE_BYTES >> 20} MiB key, a MULTI_GET "
              f"of it 65,536 times and {READERS} GETs never read; {closed} GETs closed",
              flush=True)
        check(0 < hwm < MAX_HWM_KIB, f"agent VmHWM {hwm} KiB (bound {MAX_HWM_KIB} KiB)", err)
        check("reply too large bytes=" in err and "peer=127.0.0.1:" in err and
              "query=MULTI_GET" in err, "a warning names the MULTI_GET's client and bound", err)
        # What the bound holds: 256 MiB of replies, 3 copies of the value.
        check(closed >= READERS - 3, f"the GETs past the bound are closed: {closed}", err)
    finally:
        for sock in sockets:
            sock.close()
        if agent.poll() is None:
            agent.kill()
            agent.wait()
        shutil.rmtree(out, ignore_errors=True)


if __name__ == "__main__":
    run_tests([
        ("a peer that resets before accept writes nothing",
         test_a_peer_that_resets_before_accept_writes_nothing),
        ("a connection past the cap is refused and the others go on",
         test_a_connection_past_the_cap_is_refused_and_the_others_go_on),
        ("idle connections hold no buffer of their own",
         test_idle_connections_hold_no_buffer_of_their_own),
        ("partial requests past the shared bound close the connection that read them",
         test_partial_requests_past_the_shared_bound_close_the_connection_that_read_them),
        ("a reply past the bounds closes its connection and the agent lives",
         test_a_reply_past_the_bounds_closes_its_connection_and_the_agent_lives),
    ])
