"""A bad client loses only its own connection: garbage, oversized frames,
half-sent requests, ambiguous query bytes and requests torch's server would
die on, while a real torch client keeps working. Also drives, with literal
bytes, what no installed torch sends: torch 2.1's dialect, and the queue,
list and barrier queries of the newest one (tests/unit/
store_torch_wire_tables.txt has the same bytes with their torch sources)."""
import time

from store_harness import (check, closed_by_peer, i64, raw_connect, recv_exact, run_tests, s,
                           torch_client, u8, u32, u64, with_server)
from testlib.procs import status_kib  # after store_harness: it puts scripts/lib on the path

MAGIC = 0x3C85F7CE


def expect_closed(server, payload, log_fragment):
    sock = raw_connect(server.port)
    try:
        sock.sendall(payload)
        check(closed_by_peer(sock), f"server closed the connection after {payload[:16]!r}")
    finally:
        sock.close()
    deadline = time.monotonic() + 5
    while log_fragment not in server.log():
        check(time.monotonic() < deadline, f"log has {log_fragment!r}:\n{server.log()}")
        time.sleep(0.05)


@with_server
def test_bad_requests_close_only_their_connection(server):
    good = torch_client(server.port)
    good.set("a", "1")
    base = server.stats()["connections"]

    # A client that sent half a request and stalls must not hold anyone up.
    stalled = raw_connect(server.port)
    stalled.sendall(u8(0) + u64(10) + b"par")

    cases = [
        (b"\xff\xfegarbage", 'reason="unknown query type query=255 dialect=legacy (no such '
                               'query in torch 1.13 or 2.1)"'),
        (u8(0) + u64(1 << 40), "key too large query=SET length=1099511627776"),
        (u8(0) + s("k") + u64((64 << 20) + 1), "value too large query=SET length=67108865"),
        (u8(5) + u64(1 << 32), "too many keys query=WAIT count=4294967296"),
        (u8(2) + s("/missing"), "GET of a missing key key='/missing'"),
        (u8(3) + s("/a") + i64(1), "not a decimal integer"),  # "/a" is set to "x" below
        (u8(7) + s("w"), 'dialect="undecided (torch 1.13 or 2.1)" reason="query byte 7 is '
                         'ambiguous before the dialect is known (torch 1.13 WATCH_KEY or 2.1 '
                         'DELETE_KEY)"'),
        (u8(5) + u64(1) + s("/never") + u8(7) + s("w"), "unsupported query query=WATCH_KEY"),
        (u8(0) + u32(MAGIC) + u8(0) + u32(0x1234), "bad validation magic"),
        (u8(0) + u32(MAGIC) + u8(19), "unknown query type query=19 dialect=modern"),
        (u8(9) + u64(0) + u8(12), "unknown query type query=12 dialect=torch-2.1"),
    ]
    good.set("a", "x")  # torch prefixes keys with "/"
    check(good.get("a") == b"x", "stored before the raw clients look")
    for payload, log_fragment in cases:
        expect_closed(server, payload, log_fragment)
        check(good.add("n", 1) >= 1, "the good client still works")

    check(good.get("a") == b"x", "the good client's data is intact")
    server.wait_for_stats(connections=base + 1)  # the stalled one is still there
    stalled.close()
    server.wait_for_stats(connections=base)
    closed = [line for line in server.log().splitlines()
              if "store connection closed" in line and "[warning]" in line]
    check(len(closed) >= len(cases), f"one warning per bad client: {closed}")
    for line in closed:
        check("conn=" in line and "peer=127.0.0.1:" in line, f"key=value fields: {line}")


@with_server
def test_modern_dialect_literal_bytes(server):
    sock = raw_connect(server.port)
    try:
        sock.sendall(u8(0) + u32(MAGIC) + u8(13) + u32(0xC0FFEE))  # VALIDATE, PING
        check(recv_exact(sock, 4) == u32(0xC0FFEE), "PING echoes the nonce")
        sock.sendall(u8(1) + s("k") + s("v1"))  # SET
        sock.sendall(u8(3) + s("k"))  # GET
        check(recv_exact(sock, 10) == s("v1"), "GET")
        sock.sendall(u8(4) + s("n") + i64(5))  # ADD
        check(recv_exact(sock, 8) == i64(5), "ADD")
        sock.sendall(u8(2) + s("k") + s("v1") + s("v2"))  # COMPARE_SET
        check(recv_exact(sock, 10) == s("v2"), "COMPARE_SET")
        sock.sendall(u8(5) + u64(2) + s("k") + s("zz"))  # CHECK
        check(recv_exact(sock, 1) == b"\x01", "CHECK not ready")
        sock.sendall(u8(11) + u64(2) + s("x") + s("1") + s("y") + s("2"))  # MULTI_SET
        sock.sendall(u8(9) + s("x") + s("+"))  # APPEND
        sock.sendall(u8(10) + u64(2) + s("y") + s("x"))  # MULTI_GET
        check(recv_exact(sock, 9 + 10) == s("2") + s("1+"), "MULTI_GET")
        sock.sendall(u8(7))  # GETNUMKEYS: k n x y
        check(recv_exact(sock, 8) == i64(4), "GETNUMKEYS")
        sock.sendall(u8(8) + s("x"))  # DELETE_KEY
        check(recv_exact(sock, 8) == i64(1), "DELETE_KEY")

        sock.sendall(u8(6) + u64(1) + s("later"))  # WAIT, pending
        server.wait_for_stats(waits=1)
        sock.sendall(u8(12))  # CANCEL_WAIT
        check(recv_exact(sock, 1) == b"\x01", "CANCEL_WAIT replies WAIT_CANCELED")
        server.wait_for_stats(waits=0)

        sock.sendall(u8(6) + u64(1) + s("later"))  # WAIT, woken by another client
        other = raw_connect(server.port)
        try:
            other.sendall(u8(0) + u32(MAGIC) + u8(1) + s("later") + s("!"))
            check(recv_exact(sock, 1) == b"\x00", "WAIT woken with STOP_WAITING")
        finally:
            other.close()
    finally:
        sock.close()


def validated(port):
    """A raw connection past the modern handshake (VALIDATE, PING)."""
    sock = raw_connect(port)
    sock.sendall(u8(0) + u32(MAGIC) + u8(13) + u32(7))
    check(recv_exact(sock, 4) == u32(7), "PING echoes the nonce")
    return sock


@with_server
def test_newest_dialect_queues_list_keys_and_barrier(server):
    a, b = validated(server.port), validated(server.port)
    try:
        a.sendall(u8(14) + s("/q") + s("item"))  # QUEUE_PUSH
        a.sendall(u8(16) + s("/q"))  # QUEUE_LEN
        check(recv_exact(a, 8) == i64(1), "QUEUE_LEN counts the pushed item")
        a.sendall(u8(5) + u64(1) + s("/q"))  # CHECK: a non-empty queue is present
        check(recv_exact(a, 1) == b"\x00", "CHECK sees the queue")
        a.sendall(u8(7))  # GETNUMKEYS: a queue is not a key
        check(recv_exact(a, 8) == i64(0), "GETNUMKEYS ignores queues")
        a.sendall(u8(15) + s("/q"))  # QUEUE_POP
        check(recv_exact(a, 8 + 12) == i64(1) + s("item"), "QUEUE_POP: length, then the item")
        a.sendall(u8(15) + s("/q"))
        check(recv_exact(a, 8) == i64(0), "QUEUE_POP of an empty queue: length 0 only")

        # A blocking pop is WAIT + QUEUE_POP; a push wakes it.
        b.sendall(u8(6) + u64(1) + s("/w"))
        server.wait_for_stats(waits=1)
        a.sendall(u8(14) + s("/w") + s("z"))
        check(recv_exact(b, 1) == b"\x00", "the push wakes the waiting pop")
        b.sendall(u8(15) + s("/w"))
        check(recv_exact(b, 9 + 8) == i64(1) + s("z"), "the woken pop gets the item")

        # BARRIER: the second arrival releases both; the counter is a key.
        a.sendall(u8(18) + s("/b") + i64(2))
        server.wait_for_stats(waits=1)
        b.sendall(u8(18) + s("/b") + i64(2))
        check(recv_exact(b, 1) == b"\x00", "the last arrival is released at once")
        check(recv_exact(a, 1) == b"\x00", "the first arrival is released too")
        a.sendall(u8(17))  # LIST_KEYS
        check(recv_exact(a, 8 + 10) == i64(1) + s("/b"), "LIST_KEYS lists the counter, no queue")

        # A barrier timed out on the client is cancelled by CANCEL_WAIT.
        a.sendall(u8(18) + s("/t") + i64(2))
        server.wait_for_stats(waits=1)
        a.sendall(u8(12))
        check(recv_exact(a, 1) == b"\x01", "CANCEL_WAIT replies WAIT_CANCELED")
        server.wait_for_stats(waits=0)
    finally:
        a.close()
        b.close()


@with_server
def test_pending_pops_and_barriers_end_with_their_connection_and_the_generation(server):
    a, b = validated(server.port), validated(server.port)
    a.sendall(u8(6) + u64(1) + s("/q"))  # a blocking pop on an empty queue
    b.sendall(u8(18) + s("/b") + i64(3))  # a barrier that will not complete
    server.wait_for_stats(waits=2)
    a.close()
    server.wait_for_stats(waits=1)
    c = validated(server.port)
    c.sendall(u8(14) + s("/q") + s("kept"))
    c.sendall(u8(18) + s("/b2") + i64(2))
    server.wait_for_stats(waits=2)
    check(server.command("seal") == "sealed", "seal acknowledged")
    server.wait_for_stats(waits=0, connections=0, keys=0)
    check(closed_by_peer(b) and closed_by_peer(c), "seal closes every connection")
    check(server.command("open 2") == "opened", "open acknowledged")
    d = validated(server.port)
    try:
        d.sendall(u8(16) + s("/q"))
        check(recv_exact(d, 8) == i64(0), "the next generation has no queue of the last one")
    finally:
        d.close()
        b.close()
        c.close()


@with_server(settle_ms=1000)
def test_torch21_dialect_is_told_from_torch113_by_its_bytes(server):
    """torch 2.1 has no handshake and numbers DELETE_KEY 7, APPEND 8 (torch
    1.13: WATCH_KEY 7, DELETE_KEY 8); dialect_rule.h tells them apart."""
    init = u8(3) + s("init/") + i64(1)
    # APPEND first, as 2.1's SendBuffer writes it: key and value at once.
    a = raw_connect(server.port)
    try:
        a.sendall(init)
        check(recv_exact(a, 8) == i64(1), "ADD init/")
        a.sendall(u8(8) + s("/a") + s("x"))
        a.sendall(u8(7) + s("/a"))  # now 2.1's DELETE_KEY
        check(recv_exact(a, 8) == i64(1), "2.1 DELETE_KEY after 2.1 APPEND")
    finally:
        a.close()
    # A value that arrives within the settle delay still makes it APPEND.
    b = raw_connect(server.port)
    try:
        b.sendall(u8(8) + s("/b"))
        time.sleep(0.2)
        b.sendall(s("late"))
        b.sendall(u8(10) + u64(0) + u8(9) + u64(1) + s("/b"))  # MULTI_SET, MULTI_GET
        check(recv_exact(b, 12) == s("late"), "the late value was appended, not a DELETE_KEY")
    finally:
        b.close()
    # 1.13's DELETE_KEY: nothing after the key; answered once the client has
    # been quiet for the settle delay.
    c = raw_connect(server.port)
    try:
        c.sendall(u8(0) + s("/c") + s("v"))
        t0 = time.monotonic()
        c.sendall(u8(8) + s("/c"))
        check(recv_exact(c, 8) == i64(1), "1.13 DELETE_KEY")
        waited = time.monotonic() - t0
        check(0.9 <= waited < 5, f"answered after the settle delay, took {waited:.2f}s")
        c.sendall(u8(8) + s("/c"))  # the connection is 1.13 now: at once
        check(recv_exact(c, 8) == i64(0), "second DELETE_KEY")
        check(time.monotonic() - t0 - waited < 0.5, "no settle delay once the dialect is known")
    finally:
        c.close()


@with_server
def test_pipelined_requests_are_answered_in_order(server):
    sock = raw_connect(server.port)
    try:
        burst = b"".join(u8(3) + s(f"c{i % 7}") + i64(1) for i in range(1000))  # legacy ADDs
        sock.sendall(burst)
        replies = recv_exact(sock, 8 * 1000)
        counts = {}
        for i in range(1000):
            key = f"c{i % 7}"
            counts[key] = counts.get(key, 0) + 1
            check(replies[8 * i:8 * i + 8] == i64(counts[key]), f"reply {i} in order")
    finally:
        sock.close()


def rss_mib(pid):
    kib = status_kib(pid)
    if kib is None:
        raise AssertionError(f"no VmRSS for pid {pid}")
    return kib / 1024


@with_server
def test_a_client_that_does_not_read_is_paused_not_buffered(server):
    good = torch_client(server.port)
    value = bytes(range(256)) * 4096  # 1 MiB
    good.set("big", value)
    check(good.get("big") == value, "stored (SET has no reply: a GET makes sure)")
    rss_before = rss_mib(server.proc.pid)
    greedy = raw_connect(server.port)
    try:
        # 200 MiB of replies requested; none read yet.
        greedy.sendall((u8(2) + s("/big")) * 200)
        time.sleep(0.5)
        check(good.add("n", 1) == 1, "others are served while one client does not read")
        grown = rss_mib(server.proc.pid) - rss_before
        check(grown < 64, f"the server buffered {grown:.0f} MiB for a client that does not read")
        reply = s(value)
        for i in range(200):
            check(recv_exact(greedy, len(reply)) == reply, f"reply {i} intact once read")
    finally:
        greedy.close()


if __name__ == "__main__":
    run_tests([
        ("bad requests close only their connection", test_bad_requests_close_only_their_connection),
        ("modern dialect, literal bytes", test_modern_dialect_literal_bytes),
        ("newest dialect: queues, list keys and barrier",
         test_newest_dialect_queues_list_keys_and_barrier),
        ("pending pops and barriers end with their connection and the generation",
         test_pending_pops_and_barriers_end_with_their_connection_and_the_generation),
        ("torch 2.1's dialect is told from torch 1.13's by its bytes",
         test_torch21_dialect_is_told_from_torch113_by_its_bytes),
        ("pipelined requests are answered in order", test_pipelined_requests_are_answered_in_order),
        ("a client that does not read is paused, not buffered",
         test_a_client_that_does_not_read_is_paused_not_buffered),
    ])
