"""A bad client loses only its own connection: garbage, oversized frames,
half-sent requests and requests torch's server would die on, while a real
torch client keeps working. Also drives the modern (torch >= 2) dialect with
literal bytes, since no modern torch is installed here."""
import time

from store_harness import (check, closed_by_peer, i64, raw_connect, recv_exact, run_tests, s,
                           torch_client, u8, u32, u64, with_server)

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
        (b"\xff\xfegarbage", 'reason="unknown query type query=255 dialect=legacy"'),
        (u8(0) + u64(1 << 40), "key too large query=SET length=1099511627776"),
        (u8(0) + s("k") + u64((64 << 20) + 1), "value too large query=SET length=67108865"),
        (u8(5) + u64(1 << 32), "too many keys query=WAIT count=4294967296"),
        (u8(2) + s("/missing"), "GET of a missing key key='/missing'"),
        (u8(3) + s("/a") + i64(1), "not a decimal integer"),  # "/a" is set to "x" below
        (u8(7) + s("w"), "unsupported query query=WATCH_KEY"),
        (u8(0) + u32(MAGIC) + u8(0) + u32(0x1234), "bad validation magic"),
        (u8(0) + u32(MAGIC) + u8(14), "unknown query type query=14 dialect=modern"),
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
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


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
        ("pipelined requests are answered in order", test_pipelined_requests_are_answered_in_order),
        ("a client that does not read is paused, not buffered",
         test_a_client_that_does_not_read_is_paused_not_buffered),
    ])
